#include "export/perfetto_trace.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
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
#include "export/trace_lanes.h"

namespace pipescope {

namespace {

namespace pb = perfetto::protos;

// Everything goes on one packet sequence: interned names are only valid
// within the sequence that defined them.
constexpr std::uint32_t kSequenceId = 1;
// pid 0 is avoided: viewers treat it as the kernel's swapper. Same numbering
// as the Chrome trace, so the two exports line up.
constexpr std::int32_t kStepsPid = 1;
constexpr std::int32_t kStepsTid = 1;
constexpr std::int64_t kMinLaneStride = 16;

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
// JobKind + 1), then the step and bubble categories.
constexpr std::array<JobKind, 5> kKinds = {JobKind::forward, JobKind::backward, JobKind::optimizer,
                                           JobKind::comm, JobKind::other};
std::uint64_t kind_category(JobKind kind) { return static_cast<std::uint64_t>(kind) + 1; }
constexpr std::uint64_t kCategoryStep = kKinds.size() + 1;
constexpr std::uint64_t kCategoryBubble = kKinds.size() + 2;

constexpr std::array<BubbleKind, 3> kBubbleKinds = {BubbleKind::fill, BubbleKind::interior,
                                                    BubbleKind::drain};
// Bubble slice names take the first event-name iids.
std::uint64_t bubble_name_iid(BubbleKind kind) { return static_cast<std::uint64_t>(kind) + 1; }

// a - b without signed overflow for any pair whose true difference fits.
std::int64_t ns_diff(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

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
      : run_(run), metrics_(metrics), options_(options), out_(file) {}

  void write() {
    compute_origin();
    layout_tracks();
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
    return static_cast<std::uint64_t>(ns_diff(ns, origin_ns_));
  }

  void compute_origin() {
    // With a --steps selection, time zero is the earliest selected job.
    const std::int64_t earliest =
        earliest_selected_start(run_, metrics_, options_.steps).value_or(0);
    // Packet timestamps are unsigned: an epoch time before 1970 (only
    // possible after a large clock correction) falls back to relative times.
    origin_ns_ = options_.absolute_time ? std::min<std::int64_t>(0, earliest) : earliest;
  }

  void layout_tracks() {
    lanes_.resize(run_.devices.size());
    lane_counts_.assign(run_.devices.size(), 1);
    stride_ = kMinLaneStride;
    for (std::size_t d = 0; d < run_.devices.size(); ++d) {
      lanes_[d] = assign_trace_lanes(run_.devices[d].jobs, lane_counts_[d]);
      stride_ = std::max<std::int64_t>(stride_, lane_counts_[d] + (options_.pipeline ? 1 : 0));
    }
    // Per type: its kind's category, looked up once.
    type_category_.resize(run_.types.size());
    for (TypeId id = 0; id < run_.types.size(); ++id) {
      type_category_[id] = kind_category(classify_job_type(run_.types.name(id)));
    }
    job_names_.resize(run_.types.size() + 1);  // the last one: unknown types
  }

  // The tid of a device lane, as in the Chrome trace: unique in the trace.
  std::int32_t tid_of(std::size_t d, int lane) const {
    return static_cast<std::int32_t>(kStepsTid + 1 + static_cast<std::int64_t>(d) * stride_ + lane);
  }
  static std::int32_t machine_pid(int machine) { return machine + 2; }

  pb::TrackDescriptor& begin_descriptor(std::uint64_t uuid, const std::string& name) {
    pb::TrackDescriptor* track = out_.begin().mutable_track_descriptor();
    if (first_packet_) {
      first_packet_ = false;
      intern_fixed_names(*out_.packet().mutable_interned_data());
    }
    track->set_uuid(uuid);
    track->set_name(name);
    return *track;
  }

  void thread_track(std::uint64_t uuid, std::int32_t pid, std::int32_t tid,
                    const std::string& name) {
    pb::ThreadDescriptor* thread = begin_descriptor(uuid, name).mutable_thread();
    thread->set_pid(pid);
    thread->set_tid(tid);
    thread->set_thread_name(name);
    out_.finish();
  }

  void process_track(std::uint64_t uuid, std::int32_t pid, const std::string& name) {
    pb::ProcessDescriptor* process = begin_descriptor(uuid, name).mutable_process();
    process->set_pid(pid);
    process->set_process_name(name);
    out_.finish();
  }

  static void intern_fixed_names(pb::InternedData& interned) {
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
    for (const BubbleKind kind : kBubbleKinds) {
      pb::EventName* name = interned.add_event_names();
      name->set_iid(bubble_name_iid(kind));
      name->set_name(std::string(bubble_kind_name(kind)));
    }
  }

  void write_descriptors() {
    steps_process_ = next_uuid_++;
    process_track(steps_process_, kStepsPid, "Steps");
    steps_thread_ = next_uuid_++;
    thread_track(steps_thread_, kStepsPid, kStepsTid, "Steps");
    if (options_.pipeline != nullptr) {
      for (const BubbleKind kind : kBubbleKinds) {
        const std::uint64_t uuid = next_uuid_++;
        counter_tracks_[static_cast<std::size_t>(kind)] = uuid;
        // U+00B7 MIDDLE DOT, in UTF-8.
        pb::TrackDescriptor& track =
            begin_descriptor(uuid, fmt::format("bubble ratio \xC2\xB7 {}", bubble_kind_name(kind)));
        track.set_parent_uuid(steps_process_);
        track.mutable_counter();  // present and empty: a counter track of plain numbers
        out_.finish();
      }
    }

    // One process per machine, named after its first device's machine folder.
    std::map<int, std::size_t> first_device_of_machine;
    for (std::size_t d = 0; d < run_.devices.size(); ++d) {
      first_device_of_machine.emplace(run_.devices[d].machine, d);
    }
    for (const auto& [machine, d] : first_device_of_machine) {
      process_track(next_uuid_++, machine_pid(machine), trace_machine_label(run_.devices[d]));
    }
    lane_uuids_.resize(run_.devices.size());
    bubble_uuids_.assign(run_.devices.size(), 0);
    for (std::size_t d = 0; d < run_.devices.size(); ++d) {
      const Device& device = run_.devices[d];
      for (int lane = 0; lane < lane_counts_[d]; ++lane) {
        lane_uuids_[d].push_back(next_uuid_++);
        thread_track(lane_uuids_[d].back(), machine_pid(device.machine), tid_of(d, lane),
                     trace_lane_name(device, lane));
      }
      if (options_.pipeline != nullptr) {
        bubble_uuids_[d] = next_uuid_++;
        thread_track(bubble_uuids_[d], machine_pid(device.machine), tid_of(d, lane_counts_[d]),
                     trace_bubble_lane_name(device));
      }
    }
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
      event.set_name_iid(define_name(fmt::format("step {}", step.step)));
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
        pb::TrackEvent& event =
            begin_event(sample.time_ns, pb::TrackEvent::TYPE_COUNTER,
                        counter_tracks_[static_cast<std::size_t>(kind)]);
        event.set_double_counter_value(sample.share[static_cast<std::size_t>(kind)]);
        out_.finish();
      }
    }
  }

  void collect_flows() {
    if (options_.pipeline == nullptr || !options_.flows) return;
    std::uint64_t id = 0;
    for (const Dependency& dep : options_.pipeline->dependencies) {
      if (!selected(job_step(dep.producer.device, dep.producer.job)) ||
          !selected(job_step(dep.consumer.device, dep.consumer.job))) {
        continue;
      }
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
    std::string name(known ? std::string_view(run_.types.name(job.type)) : "?");
    name += " mb";
    name += fmt::format_int(job.micro_batch).c_str();
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
        const std::uint64_t track = lane_uuids_[d][static_cast<std::size_t>(lanes_[d][i])];
        pb::TrackEvent& event = begin_event(job.start_ns, pb::TrackEvent::TYPE_SLICE_BEGIN, track);
        event.set_name_iid(job_name_iid(job));
        event.add_category_iids(job.type < run_.types.size() ? type_category_[job.type]
                                                             : kind_category(JobKind::other));
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
      const std::uint64_t track = bubble_uuids_[bubble.device];
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
  PacketWriter out_;
  bool first_packet_ = true;
  std::int64_t origin_ns_ = 0;

  std::vector<std::vector<int>> lanes_;
  std::vector<int> lane_counts_;
  std::int64_t stride_ = kMinLaneStride;
  std::vector<std::uint64_t> type_category_;

  std::uint64_t next_uuid_ = 1;
  std::uint64_t steps_process_ = 0;
  std::uint64_t steps_thread_ = 0;
  std::array<std::uint64_t, 3> counter_tracks_{};
  std::vector<std::vector<std::uint64_t>> lane_uuids_;
  std::vector<std::uint64_t> bubble_uuids_;

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
