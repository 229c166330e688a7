#include "export/perfetto_trace.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/job_kind.h"
#include "analysis/pipeline.h"
#include "export/atomic_file.h"
#include "export/ordered_writer.h"
#include "export/perfetto/perfetto_trace.pb.h"
#include "export/perfetto_wire.h"
#include "export/trace_content.h"
#include "export/trace_layout.h"

namespace pipescope {

namespace {

namespace pb = perfetto::protos;

// Everything goes on one packet sequence: interned names are only valid
// within the sequence that defined them.
constexpr std::uint32_t kSequenceId = 1;

// Debug annotation names, interned once in the first packet (iid = enum value).
enum ArgName : std::uint64_t {
  kArgJobId = 1,
  kArgMicroBatch,
  kArgStep,
  kArgLine,
  kArgBubbleRatio,
  kArgDurationNs,
  kArgOriginNs,
};
constexpr std::array<std::string_view, 8> kArgNames = {
    "", "job_id", "micro_batch", "step", "line", "bubble_ratio", "duration_ns", "origin_ns"};

// Event categories, interned once in the first packet: the job kinds (iid =
// JobKind + 1), then the step and bubble categories, then `lr` (only in a
// trace of a run that has lr jobs, so other traces keep their bytes).
constexpr std::array<JobKind, 5> kKinds = {JobKind::forward, JobKind::backward, JobKind::optimizer,
                                           JobKind::comm, JobKind::other};
constexpr std::uint64_t kCategoryStep = kKinds.size() + 1;
constexpr std::uint64_t kCategoryBubble = kKinds.size() + 2;
constexpr std::uint64_t kCategoryLr = kKinds.size() + 3;
std::uint64_t kind_category(JobKind kind) {
  return kind == JobKind::lr ? kCategoryLr : static_cast<std::uint64_t>(kind) + 1;
}

constexpr std::array<BubbleKind, 3> kBubbleKinds = {BubbleKind::fill, BubbleKind::interior,
                                                    BubbleKind::drain};
// Bubble slice names take the first event-name iids.
std::uint64_t bubble_name_iid(BubbleKind kind) { return static_cast<std::uint64_t>(kind) + 1; }

// Serializes TracePackets straight into the output file's buffer as the
// repeated field 1 of a `Trace` message (tag 0x0A, varint length, bytes), so
// the whole Trace is never built in memory. Packets live on an arena that is
// reset every kPacketsPerArena packets: clearing a oneof message (the track
// event) frees it, and malloc/free per packet cost more than the
// serialization itself.
class PacketWriter {
 public:
  explicit PacketWriter(AtomicFile& file) : file_(&file), buffer_(file.buffer()) {}
  /// Into `buffer` alone (an estimate's scratch).
  explicit PacketWriter(fmt::memory_buffer& buffer) : buffer_(buffer) {}

  /// A cleared packet stamped with the sequence id and flags: the first
  /// packet of the sequence resets incremental state (interned names), every
  /// later one depends on it.
  pb::TracePacket& begin() {
    if (packet_ == nullptr || since_reset_ == kPacketsPerArena) {
      packet_ = nullptr;
      arena_.Reset();
      packet_ = google::protobuf::Arena::CreateMessage<pb::TracePacket>(&arena_);
      since_reset_ = 0;
    } else {
      packet_->Clear();
    }
    ++since_reset_;
    packet_->set_trusted_packet_sequence_id(kSequenceId);
    packet_->set_sequence_flags(packets_ == 0 ? pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED
                                              : pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    return *packet_;
  }

  pb::TracePacket& packet() { return *packet_; }

  void finish() {
    const std::size_t size = packet_->ByteSizeLong();
    std::array<std::uint8_t, 11> head{};
    std::size_t n = 0;
    head[n++] = 0x0A;  // Trace.packet: field 1, wire type 2 (length-delimited)
    for (std::uint64_t v = size;; v >>= 7) {
      if (v < 0x80) {
        head[n++] = static_cast<std::uint8_t>(v);
        break;
      }
      head[n++] = static_cast<std::uint8_t>((v & 0x7F) | 0x80);
    }
    const std::size_t old = buffer_.size();
    buffer_.resize(old + n + size);
    auto* out = reinterpret_cast<std::uint8_t*>(buffer_.data() + old);
    std::memcpy(out, head.data(), n);
    packet_->SerializeWithCachedSizesToArray(out + n);
    if (file_ != nullptr) file_->flush_if_full();
    ++packets_;
  }

 private:
  static constexpr std::uint32_t kPacketsPerArena = 4096;

  AtomicFile* file_ = nullptr;
  fmt::memory_buffer& buffer_;  // the file's, or an estimate's scratch
  google::protobuf::Arena arena_;
  pb::TracePacket* packet_ = nullptr;  // on arena_
  std::uint32_t since_reset_ = 0;
  std::uint64_t packets_ = 0;
};

void add_int_arg(pb::TrackEvent& event, ArgName name, std::int64_t value) {
  pb::DebugAnnotation* arg = event.add_debug_annotations();
  arg->set_name_iid(name);
  arg->set_int_value(value);
}

void add_double_arg(pb::TrackEvent& event, ArgName name, double value) {
  pb::DebugAnnotation* arg = event.add_debug_annotations();
  arg->set_name_iid(name);
  arg->set_double_value(value);
}

// One end of a dependency arrow, attached to a job's BEGIN event.
struct FlowMark {
  std::uint32_t device = 0;
  std::uint32_t job = 0;
  std::uint64_t id = 0;
  bool terminating = false;
};

// ---- Packets written by hand (perfetto_wire.h), in the bytes libprotobuf
// writes for the same messages: fields in number order, as TracePacket,
// TrackEvent, DebugAnnotation and InternedData of perfetto_trace.proto number
// them. The tests re-serialize written files with libprotobuf to check.

// An END packet: Trace.packet tag and length, timestamp, sequence id, a
// track event of type and track, sequence flags.
constexpr std::size_t kMaxEndPacketBytes =
    2 + (1 + wire::kMaxVarintBytes) + 2 + 2 + 2 + (1 + wire::kMaxVarintBytes) + 2;

char* put_varint_field(char* out, std::uint32_t field, std::uint64_t value) {
  out = wire::put_tag(out, field, wire::kVarint);
  return wire::put_varint(out, value);
}

char* put_fixed64_field(char* out, std::uint32_t field, std::uint64_t value) {
  out = wire::put_tag(out, field, wire::kFixed64);
  return wire::put_fixed64(out, value);
}

// A DebugAnnotation {name_iid, int_value} (add_int_arg).
char* put_int_arg(char* out, ArgName name, std::int64_t value) {
  const auto v = static_cast<std::uint64_t>(value);
  out = wire::put_tag(out, pb::TrackEvent::kDebugAnnotationsFieldNumber, wire::kLengthDelimited);
  out = wire::put_varint(out, 1 + wire::varint_size(name) + 1 + wire::varint_size(v));
  out = put_varint_field(out, pb::DebugAnnotation::kNameIidFieldNumber, name);
  return put_varint_field(out, pb::DebugAnnotation::kIntValueFieldNumber, v);
}

// Trace.packet's tag and length, then the packet's timestamp and sequence
// id (fields 8 and 10, before the track event's 11).
char* put_packet_head(char* out, std::size_t packet_size, std::uint64_t timestamp) {
  out = wire::put_tag(out, pb::Trace::kPacketFieldNumber, wire::kLengthDelimited);
  out = wire::put_varint(out, packet_size);
  out = put_varint_field(out, pb::TracePacket::kTimestampFieldNumber, timestamp);
  return put_varint_field(out, pb::TracePacket::kTrustedPacketSequenceIdFieldNumber, kSequenceId);
}

// Field 13, last: every packet after the first needs the interned names.
char* put_sequence_flags(char* out) {
  return put_varint_field(out, pb::TracePacket::kSequenceFlagsFieldNumber,
                          pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
}

char* put_slice_end(char* out, std::uint64_t timestamp, std::uint64_t track) {
  const std::size_t event_size = 2 + 1 + wire::varint_size(track);
  const std::size_t packet_size =
      1 + wire::varint_size(timestamp) + 2 + 1 + wire::varint_size(event_size) + event_size + 2;
  out = put_packet_head(out, packet_size, timestamp);
  out = wire::put_tag(out, pb::TracePacket::kTrackEventFieldNumber, wire::kLengthDelimited);
  out = wire::put_varint(out, event_size);
  out = put_varint_field(out, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_END);
  out = put_varint_field(out, pb::TrackEvent::kTrackUuidFieldNumber, track);
  return put_sequence_flags(out);
}

// A BEGIN packet around the TrackEvent fields `event` (written by the
// caller, up to the track uuid), with no interned data.
char* put_slice_begin(char* out, std::uint64_t timestamp, std::string_view event) {
  const std::size_t packet_size =
      1 + wire::varint_size(timestamp) + 2 + 1 + wire::varint_size(event.size()) + event.size() + 2;
  out = put_packet_head(out, packet_size, timestamp);
  out = wire::put_tag(out, pb::TracePacket::kTrackEventFieldNumber, wire::kLengthDelimited);
  out = wire::put_varint(out, event.size());
  out = wire::put_bytes(out, event.data(), event.size());
  return put_sequence_flags(out);
}

// Jobs per piece of the parallel writer (ordered_writer.h): about 150 bytes
// of packets a job.
constexpr std::size_t kJobsPerPiece = 4096;

// Every job's interned name "TYPE mbMB": the next event-name iid where the
// name first appears in the trace (jobs in device order), defined in the
// interned data of that job's BEGIN packet. Found in one pass before the
// jobs are written, so that pieces can be written in parallel.
class JobNameIids {
 public:
  struct Definition {
    std::size_t device = 0;
    std::size_t job = 0;
    std::uint64_t iid = 0;
    std::string name;
  };

  JobNameIids(const Run& run, const Metrics& metrics, const StepSelection& steps,
              std::uint64_t first_iid)
      : unknown_(run.types.size()), dense_(unknown_ + 1), sparse_(unknown_ + 1) {
    std::uint64_t next = first_iid;
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      const JobVector& jobs = run.devices[d].jobs;
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (!steps.contains(trace_job_step(run, metrics, d, i))) continue;
        const Job& job = jobs[i];
        std::uint64_t& iid = slot(job);
        if (iid != 0) continue;
        iid = next++;
        Definition definition{d, i, iid, {}};
        trace_job_name(run, job, definition.name);
        definitions_.push_back(std::move(definition));
      }
    }
  }

  /// The iid of a selected job's name.
  std::uint64_t iid(const Job& job) const {
    const std::size_t type = job.type < unknown_ ? job.type : unknown_;
    if (job.micro_batch >= 0 && job.micro_batch < kDense) {
      const std::vector<std::uint64_t>& dense = dense_[type];
      const auto mb = static_cast<std::size_t>(job.micro_batch);
      return mb < dense.size() ? dense[mb] : 0;
    }
    const auto found = sparse_[type].find(job.micro_batch);
    return found != sparse_[type].end() ? found->second : 0;
  }

  /// In trace order.
  const std::vector<Definition>& definitions() const { return definitions_; }

 private:
  // Micro-batches below this are looked up in a table, others in a map.
  static constexpr std::int64_t kDense = std::int64_t{1} << 16;

  std::uint64_t& slot(const Job& job) {
    const std::size_t type = job.type < unknown_ ? job.type : unknown_;
    if (job.micro_batch >= 0 && job.micro_batch < kDense) {
      std::vector<std::uint64_t>& dense = dense_[type];
      const auto mb = static_cast<std::size_t>(job.micro_batch);
      if (mb >= dense.size()) dense.resize(mb + 1, 0);
      return dense[mb];
    }
    return sparse_[type][job.micro_batch];
  }

  std::size_t unknown_;  // the slot of type ids the run does not have
  std::vector<std::vector<std::uint64_t>> dense_;
  std::vector<std::unordered_map<std::int64_t, std::uint64_t>> sparse_;
  std::vector<Definition> definitions_;
};

// The packets of the jobs, the bulk of a trace: a BEGIN and an END packet per
// job, by hand. const: pieces are formatted on several threads at once.
class JobPackets {
 public:
  struct Context {
    const Run& run;
    const Metrics& metrics;
    const StepSelection& steps;
    const TraceLayout& layout;
    const TraceJobKinds& kinds;
    std::int64_t origin_ns;
    std::uint64_t first_lane_uuid;
    const JobNameIids& names;
    const std::vector<FlowMark>& flows;  // by device and job
  };

  explicit JobPackets(const Context& c) : c_(c) {}

  // Appends the packets of the selected jobs of `range`.
  void format(const TraceJobRange& range, fmt::memory_buffer& out) const {
    const std::size_t d = range.device;
    const JobVector& jobs = c_.run.devices[d].jobs;
    const bool covered =
        d < c_.metrics.job_step.size() && c_.metrics.job_step[d].size() == jobs.size();
    const std::vector<JobNameIids::Definition>& definitions = c_.names.definitions();
    auto definition = std::lower_bound(
        definitions.begin(), definitions.end(), std::make_pair(d, range.begin),
        [](const JobNameIids::Definition& a, const std::pair<std::size_t, std::size_t>& b) {
          return std::make_pair(a.device, a.job) < b;
        });
    auto flow =
        std::lower_bound(c_.flows.begin(), c_.flows.end(), std::make_pair(d, range.begin),
                         [](const FlowMark& a, const std::pair<std::size_t, std::size_t>& b) {
                           return std::make_pair(std::size_t{a.device}, std::size_t{a.job}) < b;
                         });
    fmt::memory_buffer event;
    for (std::size_t i = range.begin; i < range.end; ++i) {
      const std::int32_t k = covered ? c_.metrics.job_step[d][i] : -1;
      if (!c_.steps.contains(k)) continue;
      const Job& job = jobs[i];
      const std::uint64_t track = c_.first_lane_uuid + c_.layout.job_lane(d, i);

      // The BEGIN event's fields.
      const auto flows_begin = flow;
      while (flow != c_.flows.end() && flow->device == d && flow->job == i) ++flow;
      const auto flows_end = flow;
      event.resize(5 * (2 + wire::kMaxVarintBytes) + 4 * (4 + wire::kMaxVarintBytes) +
                   10 * static_cast<std::size_t>(flows_end - flows_begin));
      char* e = event.data();
      e = put_varint_field(e, pb::TrackEvent::kCategoryIidsFieldNumber,
                           kind_category(c_.kinds.of(job)));
      e = put_int_arg(e, kArgJobId, job.job_id);
      e = put_int_arg(e, kArgMicroBatch, job.micro_batch);
      if (k >= 0 && static_cast<std::size_t>(k) < c_.metrics.steps.size()) {
        e = put_int_arg(e, kArgStep, c_.metrics.steps[static_cast<std::size_t>(k)].step);
      }
      e = put_int_arg(e, kArgLine, job.line);
      e = put_varint_field(e, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_BEGIN);
      e = put_varint_field(e, pb::TrackEvent::kNameIidFieldNumber, c_.names.iid(job));
      e = put_varint_field(e, pb::TrackEvent::kTrackUuidFieldNumber, track);
      // Repeated fields in field order: every flow_ids, then every terminating_flow_ids.
      for (auto f = flows_begin; f != flows_end; ++f) {
        if (!f->terminating) e = put_fixed64_field(e, pb::TrackEvent::kFlowIdsFieldNumber, f->id);
      }
      for (auto f = flows_begin; f != flows_end; ++f) {
        if (f->terminating) {
          e = put_fixed64_field(e, pb::TrackEvent::kTerminatingFlowIdsFieldNumber, f->id);
        }
      }
      const auto event_size = static_cast<std::size_t>(e - event.data());

      // The name's definition, in the packet of its first job.
      const JobNameIids::Definition* defined = nullptr;
      if (definition != definitions.end() && definition->device == d && definition->job == i) {
        defined = &*definition++;
      }
      std::size_t name_size = 0;
      std::size_t interned_size = 0;
      if (defined != nullptr) {
        name_size = 1 + wire::varint_size(defined->iid) + 1 +
                    wire::varint_size(defined->name.size()) + defined->name.size();
        interned_size = 1 + wire::varint_size(name_size) + name_size;
      }

      const std::uint64_t start = ts(job.start_ns);
      const std::size_t packet_size =
          1 + wire::varint_size(start) + 2 + 1 + wire::varint_size(event_size) + event_size +
          (defined != nullptr ? 1 + wire::varint_size(interned_size) + interned_size : 0) + 2;
      const std::size_t old = out.size();
      out.resize(old + 1 + wire::kMaxVarintBytes + packet_size + kMaxEndPacketBytes);
      char* p = out.data() + old;
      p = put_packet_head(p, packet_size, start);
      p = wire::put_tag(p, pb::TracePacket::kTrackEventFieldNumber, wire::kLengthDelimited);
      p = wire::put_varint(p, event_size);
      p = wire::put_bytes(p, event.data(), event_size);
      if (defined != nullptr) {
        p = wire::put_tag(p, pb::TracePacket::kInternedDataFieldNumber, wire::kLengthDelimited);
        p = wire::put_varint(p, interned_size);
        p = wire::put_tag(p, pb::InternedData::kEventNamesFieldNumber, wire::kLengthDelimited);
        p = wire::put_varint(p, name_size);
        p = put_varint_field(p, pb::EventName::kIidFieldNumber, defined->iid);
        p = wire::put_tag(p, pb::EventName::kNameFieldNumber, wire::kLengthDelimited);
        p = wire::put_varint(p, defined->name.size());
        p = wire::put_bytes(p, defined->name.data(), defined->name.size());
      }
      p = put_sequence_flags(p);
      p = put_slice_end(p, ts(job.end_ns), track);
      out.resize(static_cast<std::size_t>(p - out.data()));
    }
  }

 private:
  std::uint64_t ts(std::int64_t ns) const {
    return static_cast<std::uint64_t>(ns_since(ns, c_.origin_ns));
  }

  Context c_;
};

class PerfettoWriter {
 public:
  PerfettoWriter(const Run& run, const Metrics& metrics, const TraceOptions& options,
                 AtomicFile& file)
      : run_(run),
        metrics_(metrics),
        options_(options),
        layout_(run, options.pipeline != nullptr),
        kinds_(run),
        file_(&file),
        scratch_(file.buffer()),
        out_(file) {}
  // Writes nothing: measure() formats into `scratch`, `sample` of the bulk.
  PerfettoWriter(const Run& run, const Metrics& metrics, const TraceOptions& options,
                 fmt::memory_buffer& scratch, TraceSampleSize sample)
      : run_(run),
        metrics_(metrics),
        options_(options),
        layout_(run, options.pipeline != nullptr),
        kinds_(run),
        scratch_(scratch),
        sample_(sample),
        out_(scratch) {}

  void write() {
    compute_origin();
    write_descriptors();
    write_steps();
    if (options_.pipeline != nullptr) write_bubble_counters();
    collect_flows();
    write_jobs();
    write_log_events();
    if (options_.pipeline != nullptr) write_bubbles();
  }

  // The bytes write() would write, estimated as trace_content.h says: the
  // bulk sections from a sample of their packets.
  std::uint64_t measure() {
    compute_origin();
    write_descriptors();
    // A sample is formatted at the end of the scratch buffer, measured and
    // cut off.
    std::uint64_t bulk = measure_steps();
    if (options_.pipeline != nullptr) bulk += measure_bubble_counters();
    collect_flows();
    bulk += measure_jobs();
    bulk += measure_log_events();
    if (options_.pipeline != nullptr) bulk += measure_bubbles();
    return scratch_.size() + bulk;
  }

 private:
  bool selected(std::int64_t step_index) const { return options_.steps.contains(step_index); }

  std::uint64_t ts(std::int64_t ns) const {
    return static_cast<std::uint64_t>(ns_since(ns, origin_ns_));
  }

  void compute_origin() {
    // With a --steps selection, time zero is the earliest selected job; a
    // log event drawn before it moves it back to that event.
    events_ = trace_log_events(run_, metrics_, options_.steps);
    const std::int64_t earliest = trace_origin(run_, metrics_, options_.steps, events_).value_or(0);
    // Packet timestamps are unsigned: an epoch time before 1970 (only
    // possible after a large clock correction) falls back to relative times.
    origin_ns_ = options_.absolute_time ? std::min<std::int64_t>(0, earliest) : earliest;
  }

  // The uuid of the track of layout_.thread(index): they are declared in that order.
  std::uint64_t lane_uuid(std::size_t index) const { return first_lane_uuid_ + index; }

  pb::TrackDescriptor& begin_descriptor(std::uint64_t uuid, const std::string& name) {
    pb::TrackDescriptor* track = out_.begin().mutable_track_descriptor();
    if (first_packet_) {
      first_packet_ = false;
      intern_fixed_names(*out_.packet().mutable_interned_data(), kinds_.has(JobKind::lr));
    }
    track->set_uuid(uuid);
    track->set_name(name);
    return *track;
  }

  void thread_track(std::uint64_t uuid, const TraceThread& thread) {
    pb::ThreadDescriptor* descriptor = begin_descriptor(uuid, thread.name).mutable_thread();
    descriptor->set_pid(static_cast<std::int32_t>(thread.pid));
    descriptor->set_tid(static_cast<std::int32_t>(thread.tid));
    descriptor->set_thread_name(thread.name);
    out_.finish();
  }

  void process_track(std::uint64_t uuid, const TraceProcess& process) {
    pb::ProcessDescriptor* descriptor = begin_descriptor(uuid, process.name).mutable_process();
    descriptor->set_pid(static_cast<std::int32_t>(process.pid));
    descriptor->set_process_name(process.name);
    out_.finish();
  }

  static void intern_fixed_names(pb::InternedData& interned, bool with_lr) {
    for (std::uint64_t iid = 1; iid < kArgNames.size(); ++iid) {
      pb::DebugAnnotationName* name = interned.add_debug_annotation_names();
      name->set_iid(iid);
      name->set_name(std::string(kArgNames[iid]));
    }
    for (const JobKind kind : kKinds) {
      pb::EventCategory* category = interned.add_event_categories();
      category->set_iid(kind_category(kind));
      category->set_name(std::string(job_kind_name(kind)));
    }
    pb::EventCategory* step = interned.add_event_categories();
    step->set_iid(kCategoryStep);
    step->set_name("step");
    pb::EventCategory* bubble = interned.add_event_categories();
    bubble->set_iid(kCategoryBubble);
    bubble->set_name("bubble");
    if (with_lr) {
      pb::EventCategory* lr = interned.add_event_categories();
      lr->set_iid(kCategoryLr);
      lr->set_name(std::string(job_kind_name(JobKind::lr)));
    }
    for (const BubbleKind kind : kBubbleKinds) {
      pb::EventName* name = interned.add_event_names();
      name->set_iid(bubble_name_iid(kind));
      name->set_name(std::string(bubble_kind_name(kind)));
    }
  }

  void write_descriptors() {
    steps_process_ = next_uuid_++;
    process_track(steps_process_, TraceLayout::steps_process());
    steps_thread_ = next_uuid_++;
    thread_track(steps_thread_, TraceLayout::steps_thread());
    if (options_.pipeline != nullptr) {
      for (const BubbleKind kind : kBubbleKinds) {
        const std::uint64_t uuid = next_uuid_++;
        counter_tracks_[static_cast<std::size_t>(kind)] = uuid;
        pb::TrackDescriptor& track =
            begin_descriptor(uuid, TraceLayout::bubble_ratio_track_name(kind));
        track.set_parent_uuid(steps_process_);
        track.mutable_counter();  // present and empty: a counter track of plain numbers
        out_.finish();
      }
    }
    for (const TraceProcess& machine : layout_.machines()) process_track(next_uuid_++, machine);
    first_lane_uuid_ = next_uuid_;
    for (const TraceThread& thread : layout_.threads()) thread_track(next_uuid_++, thread);
  }

  pb::TrackEvent& begin_event(std::int64_t ns, pb::TrackEvent::Type type, std::uint64_t track) {
    pb::TracePacket& packet = out_.begin();
    packet.set_timestamp(ts(ns));
    pb::TrackEvent* event = packet.mutable_track_event();
    event->set_type(type);
    event->set_track_uuid(track);
    return *event;
  }

  void slice_end(std::int64_t ns, std::uint64_t track) {
    begin_event(ns, pb::TrackEvent::TYPE_SLICE_END, track);
    out_.finish();
  }

  // A fresh event-name iid for `name`, defined in the current packet.
  std::uint64_t define_name(std::string name) {
    const std::uint64_t iid = next_name_iid_++;
    pb::EventName* entry = out_.packet().mutable_interned_data()->add_event_names();
    entry->set_iid(iid);
    entry->set_name(std::move(name));
    return iid;
  }

  void write_steps() {
    for (std::size_t k = 0; k < metrics_.steps.size(); ++k) {
      if (selected(static_cast<std::int64_t>(k))) write_step(k);
    }
  }

  // The steps' names take iids in step order: each sampled step gets the
  // iid it would have, so that the sample's varints are the trace's.
  std::uint64_t measure_steps() {
    std::vector<std::size_t> steps;
    for (std::size_t k = 0; k < metrics_.steps.size(); ++k) {
      if (selected(static_cast<std::int64_t>(k))) steps.push_back(k);
    }
    const std::uint64_t first_iid = next_name_iid_;
    const std::uint64_t bytes = measure_items(steps.size(), [&](std::size_t i) {
      next_name_iid_ = first_iid + i;
      write_step(steps[i]);
    });
    next_name_iid_ = first_iid + steps.size();
    return bytes;
  }

  void write_step(std::size_t k) {
    const StepWindow& step = metrics_.steps[k];
    pb::TrackEvent& event =
        begin_event(step.start_ns, pb::TrackEvent::TYPE_SLICE_BEGIN, steps_thread_);
    // Step numbers are unique, so every step name is new.
    event.set_name_iid(define_name(trace_step_name(metrics_, k)));
    event.add_category_iids(kCategoryStep);
    add_double_arg(event, kArgBubbleRatio, step.bubble_ratio);
    add_int_arg(event, kArgDurationNs, step.window_ns());
    add_int_arg(event, kArgOriginNs, origin_ns_);
    out_.finish();
    slice_end(step.end_ns, steps_thread_);
  }

  // Each step's idle share by bubble kind, one counter track per kind; the
  // counters drop to 0 where a run of selected windows ends (as in the
  // Chrome trace).
  void write_bubble_counters() {
    for (const BubbleRatioSample& sample :
         bubble_ratio_samples(run_, metrics_, options_.pipeline->bubbles, options_.steps)) {
      write_bubble_counter(sample);
    }
  }

  std::uint64_t measure_bubble_counters() {
    const std::vector<BubbleRatioSample> samples =
        bubble_ratio_samples(run_, metrics_, options_.pipeline->bubbles, options_.steps);
    return measure_items(samples.size(), [&](std::size_t i) { write_bubble_counter(samples[i]); });
  }

  void write_bubble_counter(const BubbleRatioSample& sample) {
    for (const BubbleKind kind : kBubbleKinds) {
      pb::TrackEvent& event = begin_event(sample.time_ns, pb::TrackEvent::TYPE_COUNTER,
                                          counter_tracks_[static_cast<std::size_t>(kind)]);
      event.set_double_counter_value(sample.share[static_cast<std::size_t>(kind)]);
      out_.finish();
    }
  }

  void collect_flows() {
    if (options_.pipeline == nullptr || !options_.flows) return;
    std::uint64_t id = 0;
    for (const Dependency& dep :
         selected_dependencies(run_, metrics_, options_.pipeline->dependencies, options_.steps)) {
      ++id;
      flows_.push_back({dep.producer.device, dep.producer.job, id, false});
      flows_.push_back({dep.consumer.device, dep.consumer.job, id, true});
    }
    std::stable_sort(flows_.begin(), flows_.end(), [](const FlowMark& a, const FlowMark& b) {
      return a.device != b.device ? a.device < b.device : a.job < b.job;
    });
  }

  // In parallel, pieces of devices' jobs written in order (ordered_writer.h).
  void write_jobs() {
    const JobNameIids names(run_, metrics_, options_.steps, next_name_iid_);
    const JobPackets packets({run_, metrics_, options_.steps, layout_, kinds_, origin_ns_,
                              first_lane_uuid_, names, flows_});
    const std::vector<TraceJobRange> pieces = trace_job_pieces(run_, kJobsPerPiece);
    write_in_order(*file_, pieces.size(), options_.threads,
                   [&](std::size_t k, fmt::memory_buffer& out) { packets.format(pieces[k], out); });
    next_name_iid_ += names.definitions().size();
  }

  // The names are interned as in write_jobs (their iids set the size of
  // every later name's), the packets of a sample of pieces formatted.
  std::uint64_t measure_jobs() {
    const JobNameIids names(run_, metrics_, options_.steps, next_name_iid_);
    const JobPackets packets({run_, metrics_, options_.steps, layout_, kinds_, origin_ns_,
                              first_lane_uuid_, names, flows_});
    const TraceJobSample sample = sample_job_pieces(
        run_, metrics_, options_.steps, trace_job_pieces(run_, kJobsPerPiece), sample_.job_pieces);
    fmt::memory_buffer out;
    std::uint64_t bytes = 0;
    for (const TraceJobRange& piece : sample.pieces) {
      out.clear();
      packets.format(piece, out);
      bytes += out.size();
    }
    next_name_iid_ += names.definitions().size();
    return scaled_bytes(bytes, sample.sampled_jobs, sample.selected_jobs);
  }

  // The iid of `name` in `table`: a fresh one (the next of `next`), defined
  // in the current packet's interned data by `define`, on its first use.
  template <typename Define>
  static std::uint64_t intern(std::map<std::string, std::uint64_t>& table, std::uint64_t& next,
                              const std::string& name, Define define) {
    const auto [it, fresh] = table.try_emplace(name, next);
    if (fresh) {
      ++next;
      define(it->second, name);
    }
    return it->second;
  }

  std::uint64_t event_name(const std::string& name) {
    return intern(event_names_, next_name_iid_, name, [&](std::uint64_t iid, const std::string& n) {
      pb::EventName* entry = out_.packet().mutable_interned_data()->add_event_names();
      entry->set_iid(iid);
      entry->set_name(n);
    });
  }

  std::uint64_t category(const std::string& name) {
    return intern(
        categories_, next_category_iid_, name, [&](std::uint64_t iid, const std::string& n) {
          pb::EventCategory* entry = out_.packet().mutable_interned_data()->add_event_categories();
          entry->set_iid(iid);
          entry->set_name(n);
        });
  }

  // A debug annotation of the current event, its name interned.
  pb::DebugAnnotation& event_arg(pb::TrackEvent& event, const std::string& name) {
    const std::uint64_t iid =
        intern(arg_names_, next_arg_iid_, name, [&](std::uint64_t id, const std::string& n) {
          pb::DebugAnnotationName* entry =
              out_.packet().mutable_interned_data()->add_debug_annotation_names();
          entry->set_iid(id);
          entry->set_name(n);
        });
    pb::DebugAnnotation* arg = event.add_debug_annotations();
    arg->set_name_iid(iid);
    return *arg;
  }

  // Each drawn log event as an instant on its device's first lane, named by
  // its id, in categories "event" and its own; its names (id, categories,
  // argument names) are interned where first used, after every fixed and job
  // name, so a trace without events keeps its bytes. Captures are arguments
  // "captures.NAME" (patterns capture names such as "path" and "line").
  void write_log_events() {
    for (const EventRef& ref : events_) write_log_event(ref);
  }

  // A sample of the events: the names they intern are counted with them
  // (an overestimate of a few bytes per name and stride).
  std::uint64_t measure_log_events() {
    return measure_items(events_.size(), [&](std::size_t k) { write_log_event(events_[k]); });
  }

  // The bytes `write_one(k)` adds to the scratch buffer over a sample of
  // `count` items, scaled to all of them; the buffer is left as it was.
  template <typename WriteOne>
  std::uint64_t measure_items(std::uint64_t count, WriteOne write_one) {
    return measure_sampled(scratch_, count, sample_.items, write_one);
  }

  void write_log_event(const EventRef& ref) {
    static const EventKind kUnknown{"?", "?", "?", ""};
    const Device& device = run_.devices[ref.device];
    const LogEvent& log = device.events[ref.event];
    const EventKind& kind =
        log.kind < run_.event_kinds.size() ? run_.event_kinds[log.kind] : kUnknown;
    pb::TrackEvent& event = begin_event(log.time_ns, pb::TrackEvent::TYPE_INSTANT,
                                        lane_uuid(layout_.device_lane(ref.device)));
    event.set_name_iid(event_name(kind.id));
    event.add_category_iids(category("event"));
    event.add_category_iids(category(kind.category));
    event_arg(event, "severity").set_string_value(kind.severity);
    event_arg(event, "category").set_string_value(kind.category);
    event_arg(event, "line").set_int_value(static_cast<std::int64_t>(log.line));
    event_arg(event, "path").set_string_value(device.path);
    if (log.time_kind == EventTime::approximate)
      event_arg(event, "approximate").set_bool_value(true);
    for (const auto& [name, value] : log.captures) {
      event_arg(event, "captures." + name).set_string_value(value);
    }
    out_.finish();
  }

  // Bubble slices by hand, straight into the file's buffer.
  void write_bubbles() {
    for_each_bubble(run_, metrics_, [&](const Bubble& bubble) {
      if (!selected(static_cast<std::int64_t>(bubble.step))) return;
      format_bubble(bubble, file_->buffer());
      file_->flush_if_full();
    });
  }

  std::uint64_t measure_bubbles() const {
    const TraceBubbleSample sample = sample_bubbles(run_, metrics_, options_.steps, sample_.items);
    fmt::memory_buffer out;
    for (const Bubble& bubble : sample.bubbles) format_bubble(bubble, out);
    return scaled_bytes(out.size(), sample.bubbles.size(), sample.count);
  }

  void format_bubble(const Bubble& bubble, fmt::memory_buffer& out) const {
    // Category, one annotation, type, name and track: under 40 bytes.
    constexpr std::size_t kMaxEventBytes = 64;
    constexpr std::size_t kMaxBeginBytes =
        2 + 2 * (1 + wire::kMaxVarintBytes) + 2 + 3 + kMaxEventBytes + 2;
    const std::uint64_t track = lane_uuid(layout_.bubble_lane(bubble.device));
    char event[kMaxEventBytes];
    char* e = put_varint_field(event, pb::TrackEvent::kCategoryIidsFieldNumber, kCategoryBubble);
    e = put_int_arg(e, kArgStep, metrics_.steps[bubble.step].step);
    e = put_varint_field(e, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_BEGIN);
    e = put_varint_field(e, pb::TrackEvent::kNameIidFieldNumber, bubble_name_iid(bubble.kind));
    e = put_varint_field(e, pb::TrackEvent::kTrackUuidFieldNumber, track);
    const std::size_t old = out.size();
    out.resize(old + kMaxBeginBytes + kMaxEndPacketBytes);
    char* p = out.data() + old;
    p = put_slice_begin(p, ts(bubble.start_ns),
                        std::string_view(event, static_cast<std::size_t>(e - event)));
    p = put_slice_end(p, ts(bubble.end_ns), track);
    out.resize(static_cast<std::size_t>(p - out.data()));
  }

  const Run& run_;
  const Metrics& metrics_;
  const TraceOptions& options_;
  const TraceLayout layout_;
  const TraceJobKinds kinds_;
  AtomicFile* file_ = nullptr;   // null when measuring
  fmt::memory_buffer& scratch_;  // the file's buffer, or measure()'s
  TraceSampleSize sample_;       // what measure() formats of the bulk
  PacketWriter out_;
  bool first_packet_ = true;
  std::int64_t origin_ns_ = 0;

  std::uint64_t next_uuid_ = 1;
  std::uint64_t steps_process_ = 0;
  std::uint64_t steps_thread_ = 0;
  std::array<std::uint64_t, 3> counter_tracks_{};
  std::uint64_t first_lane_uuid_ = 0;

  // Event names after the bubble kinds': the steps', then the jobs'
  // (JobNameIids), then the log events'.
  std::uint64_t next_name_iid_ = kBubbleKinds.size() + 1;
  std::vector<FlowMark> flows_;

  // The log events drawn (trace_log_events) and the names interned for them:
  // categories after lr's iid, argument names after kArgNames'.
  std::vector<EventRef> events_;
  std::map<std::string, std::uint64_t> event_names_;
  std::map<std::string, std::uint64_t> categories_;
  std::map<std::string, std::uint64_t> arg_names_;
  std::uint64_t next_category_iid_ = kCategoryLr + 1;
  std::uint64_t next_arg_iid_ = kArgNames.size();
};

}  // namespace

std::uint64_t estimate_perfetto_trace_bytes(const Run& run, const Metrics& metrics,
                                            const TraceOptions& options, TraceSampleSize sample) {
  fmt::memory_buffer scratch;
  return PerfettoWriter(run, metrics, options, scratch, sample).measure();
}

void write_perfetto_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                          const std::string& path) {
  AtomicFile file(path);
  PerfettoWriter(run, metrics, options, file).write();
  file.commit();
}

}  // namespace pipescope
