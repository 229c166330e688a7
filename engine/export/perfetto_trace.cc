#include "export/perfetto_trace.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/job_kind.h"
#include "analysis/pipeline.h"
#include "export/atomic_file.h"
#include "export/perfetto/perfetto_trace.pb.h"
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
  explicit PacketWriter(AtomicFile& file) : file_(file) {}

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
    fmt::memory_buffer& buffer = file_.buffer();
    const std::size_t old = buffer.size();
    buffer.resize(old + n + size);
    auto* out = reinterpret_cast<std::uint8_t*>(buffer.data() + old);
    std::memcpy(out, head.data(), n);
    packet_->SerializeWithCachedSizesToArray(out + n);
    file_.flush_if_full();
    ++packets_;
  }

 private:
  static constexpr std::uint32_t kPacketsPerArena = 4096;

  AtomicFile& file_;
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

class PerfettoWriter {
 public:
  PerfettoWriter(const Run& run, const Metrics& metrics, const TraceOptions& options,
                 AtomicFile& file)
      : run_(run),
        metrics_(metrics),
        options_(options),
        layout_(run, options.pipeline != nullptr),
        kinds_(run),
        out_(file) {
    job_names_.resize(run_.types.size() + 1);  // the last one: unknown types
  }

  void write() {
    compute_origin();
    write_descriptors();
    write_steps();
    if (options_.pipeline != nullptr) write_bubble_counters();
    collect_flows();
    write_jobs();
    if (options_.pipeline != nullptr) write_bubbles();
  }

 private:
  // The step index of device d's i-th job, -1 when it has none.
  std::int32_t job_step(std::size_t d, std::size_t i) const {
    return trace_job_step(run_, metrics_, d, i);
  }
  bool selected(std::int64_t step_index) const { return options_.steps.contains(step_index); }

  std::uint64_t ts(std::int64_t ns) const {
    return static_cast<std::uint64_t>(ns_since(ns, origin_ns_));
  }

  void compute_origin() {
    // With a --steps selection, time zero is the earliest selected job.
    const std::int64_t earliest =
        earliest_selected_start(run_, metrics_, options_.steps).value_or(0);
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
      if (!selected(static_cast<std::int64_t>(k))) continue;
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
  }

  // Each step's idle share by bubble kind, one counter track per kind; the
  // counters drop to 0 where a run of selected windows ends (as in the
  // Chrome trace).
  void write_bubble_counters() {
    for (const BubbleRatioSample& sample :
         bubble_ratio_samples(run_, metrics_, options_.pipeline->bubbles, options_.steps)) {
      for (const BubbleKind kind : kBubbleKinds) {
        pb::TrackEvent& event = begin_event(sample.time_ns, pb::TrackEvent::TYPE_COUNTER,
                                            counter_tracks_[static_cast<std::size_t>(kind)]);
        event.set_double_counter_value(sample.share[static_cast<std::size_t>(kind)]);
        out_.finish();
      }
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

  // The interned name "TYPE mbMB" of a job, defined on first use.
  std::uint64_t job_name_iid(const Job& job) {
    const bool known = job.type < run_.types.size();
    auto& names = job_names_[known ? job.type : run_.types.size()];
    const auto found = names.find(job.micro_batch);
    if (found != names.end()) return found->second;
    std::string name;
    trace_job_name(run_, job, name);
    const std::uint64_t iid = define_name(std::move(name));
    names.emplace(job.micro_batch, iid);
    return iid;
  }

  void write_jobs() {
    std::size_t flow = 0;
    for (std::size_t d = 0; d < run_.devices.size(); ++d) {
      const Device& device = run_.devices[d];
      for (std::size_t i = 0; i < device.jobs.size(); ++i) {
        const std::int32_t k = job_step(d, i);
        if (!selected(k)) continue;
        const Job& job = device.jobs[i];
        const std::uint64_t track = lane_uuid(layout_.job_lane(d, i));
        pb::TrackEvent& event = begin_event(job.start_ns, pb::TrackEvent::TYPE_SLICE_BEGIN, track);
        event.set_name_iid(job_name_iid(job));
        event.add_category_iids(kind_category(kinds_.of(job)));
        add_int_arg(event, kArgJobId, job.job_id);
        add_int_arg(event, kArgMicroBatch, job.micro_batch);
        // No "step" arg for a job outside every window (the Chrome trace's null).
        if (k >= 0 && static_cast<std::size_t>(k) < metrics_.steps.size()) {
          add_int_arg(event, kArgStep, metrics_.steps[static_cast<std::size_t>(k)].step);
        }
        add_int_arg(event, kArgLine, job.line);
        while (flow < flows_.size() &&
               (flows_[flow].device < d || (flows_[flow].device == d && flows_[flow].job < i))) {
          ++flow;
        }
        for (; flow < flows_.size() && flows_[flow].device == d && flows_[flow].job == i; ++flow) {
          if (flows_[flow].terminating) {
            event.add_terminating_flow_ids(flows_[flow].id);
          } else {
            event.add_flow_ids(flows_[flow].id);
          }
        }
        out_.finish();
        slice_end(job.end_ns, track);
      }
    }
  }

  void write_bubbles() {
    for_each_bubble(run_, metrics_, [&](const Bubble& bubble) {
      if (!selected(static_cast<std::int64_t>(bubble.step))) return;
      const std::uint64_t track = lane_uuid(layout_.bubble_lane(bubble.device));
      pb::TrackEvent& event = begin_event(bubble.start_ns, pb::TrackEvent::TYPE_SLICE_BEGIN, track);
      event.set_name_iid(bubble_name_iid(bubble.kind));
      event.add_category_iids(kCategoryBubble);
      add_int_arg(event, kArgStep, metrics_.steps[bubble.step].step);
      out_.finish();
      slice_end(bubble.end_ns, track);
    });
  }

  const Run& run_;
  const Metrics& metrics_;
  const TraceOptions& options_;
  const TraceLayout layout_;
  const TraceJobKinds kinds_;
  PacketWriter out_;
  bool first_packet_ = true;
  std::int64_t origin_ns_ = 0;

  std::uint64_t next_uuid_ = 1;
  std::uint64_t steps_process_ = 0;
  std::uint64_t steps_thread_ = 0;
  std::array<std::uint64_t, 3> counter_tracks_{};
  std::uint64_t first_lane_uuid_ = 0;

  // Event names after the bubble kinds'.
  std::uint64_t next_name_iid_ = kBubbleKinds.size() + 1;
  // Per type id (plus one slot for unknown types): micro-batch -> name iid.
  std::vector<std::unordered_map<std::int64_t, std::uint64_t>> job_names_;
  std::vector<FlowMark> flows_;
};

}  // namespace

void write_perfetto_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                          const std::string& path) {
  AtomicFile file(path);
  PerfettoWriter(run, metrics, options, file).write();
  file.commit();
}

}  // namespace pipescope
