#include "export/perfetto_trace.h"

#include <google/protobuf/arena.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
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
#include "export/trace_parts.h"

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
  /// Into `buffer` alone (a piece, an estimate's scratch).
  explicit PacketWriter(fmt::memory_buffer& buffer) : buffer_(buffer) {}
  /// Into `file` when given, else into `buffer`.
  PacketWriter(AtomicFile* file, fmt::memory_buffer& buffer)
      : file_(file), buffer_(file != nullptr ? file->buffer() : buffer) {}

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

// Every name of a unit's jobs (trace_parts.h: a step's, or the jobs of no
// step), defined in the packet that starts the unit: "TYPE mbMB" by (type,
// micro-batch) order, iids from kFirstJobNameIid. Found in one pass before
// the jobs are written, so that pieces can be written in parallel.
constexpr std::uint64_t kFirstJobNameIid = kBubbleKinds.size() + 1;

class UnitNames {
 public:
  /// Units are independent: blocks of them are read side by side, each
  /// with its own tables, and their names put together in unit order.
  explicit UnitNames(const TraceBody& body) : unknown_(body.part().run.types.size()) {
    const std::size_t units = body.units();
    const std::size_t blocks = (units + kUnitsPerBlock - 1) / kUnitsPerBlock;
    std::vector<Block> found(blocks);
    tbb::parallel_for(std::size_t{0}, blocks, [&](std::size_t b) {
      const std::size_t first = b * kUnitsPerBlock;
      read_units(body, first, std::min(units, first + kUnitsPerBlock), found[b]);
    });
    std::size_t total = 0;
    for (const Block& block : found) total += block.keys.size();
    keys_.reserve(total);
    first_.reserve(units + 1);
    for (const Block& block : found) {
      for (const std::size_t at : block.first) first_.push_back(keys_.size() + at);
      keys_.insert(keys_.end(), block.keys.begin(), block.keys.end());
    }
    first_.push_back(keys_.size());
  }

  /// The iid of the name of `job`, one of unit u's jobs.
  std::uint64_t iid(std::size_t unit, const Job& job) const {
    const auto begin = keys_.begin() + static_cast<std::ptrdiff_t>(first_[unit]);
    const auto end = keys_.begin() + static_cast<std::ptrdiff_t>(first_[unit + 1]);
    return kFirstJobNameIid +
           static_cast<std::uint64_t>(std::lower_bound(begin, end, key_of(job)) - begin);
  }

  /// Calls f(iid, name) for each name of unit u, in iid order.
  template <typename F>
  void for_each(const Run& run, std::size_t unit, F&& f) const {
    std::string name;
    for (std::size_t n = first_[unit]; n < first_[unit + 1]; ++n) {
      Job job;
      job.type = static_cast<TypeId>(keys_[n].first);
      job.micro_batch = keys_[n].second;
      trace_job_name(run, job, name);
      f(kFirstJobNameIid + (n - first_[unit]), name);
    }
  }

 private:
  // Micro-batches below this are looked up in a table, others in a set.
  static constexpr std::int64_t kDense = std::int64_t{1} << 16;
  using Key = std::pair<std::size_t, std::int64_t>;  // type (unknown_ for any unknown), micro-batch
  struct KeyHash {
    std::size_t operator()(const Key& key) const {
      return std::hash<std::int64_t>()(key.second) * 31 + key.first;
    }
  };

  Key key_of(const Job& job) const {
    return {job.type < unknown_ ? job.type : unknown_, job.micro_batch};
  }

  static constexpr std::size_t kUnitsPerBlock = 256;
  /// The names of a block of units: first[u - block's first] into keys.
  struct Block {
    std::vector<std::size_t> first;
    std::vector<Key> keys;
  };

  /// Units [begin, end) of `body` into `out`, each unit's names sorted.
  void read_units(const TraceBody& body, std::size_t begin, std::size_t end, Block& out) const {
    const Run& run = body.part().run;
    std::vector<std::vector<std::uint32_t>> seen(unknown_ + 1);  // by type, then micro-batch
    std::unordered_set<Key, KeyHash> sparse;
    for (std::size_t u = begin; u < end; ++u) {
      const std::int64_t k = body.step(u);
      out.first.push_back(out.keys.size());
      sparse.clear();
      for (std::size_t d = 0; d < run.devices.size(); ++d) {
        const JobVector& jobs = run.devices[d].jobs;
        for (std::size_t i = body.begin(u, d), stop = body.end(u, d); i < stop; ++i) {
          if (body.job_step(d, i) != k) continue;
          const Key key = key_of(jobs[i]);
          // Micro-batches below kDense are marked in a table (the unit's
          // number plus one), others in a set.
          if (key.second >= 0 && key.second < kDense) {
            std::vector<std::uint32_t>& marks = seen[key.first];
            const auto mb = static_cast<std::size_t>(key.second);
            if (mb >= marks.size()) marks.resize(mb + 1, 0);
            if (marks[mb] == u + 1) continue;
            marks[mb] = static_cast<std::uint32_t>(u + 1);
          } else if (!sparse.insert(key).second) {
            continue;
          }
          out.keys.push_back(key);
        }
      }
      std::sort(out.keys.begin() + static_cast<std::ptrdiff_t>(out.first.back()), out.keys.end());
    }
  }

  std::size_t unknown_;
  std::vector<std::size_t> first_;  // by unit, into keys_
  std::vector<Key> keys_;
};

void intern_fixed_names(pb::InternedData& interned, bool with_lr) {
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

// The packets of a part's body: a unit's first packet, and a BEGIN and an
// END packet per job, by hand. const: pieces are formatted on several
// threads at once.
class JobPackets {
 public:
  struct Context {
    const TraceBody& body;
    const Metrics& metrics;
    const TraceLayout& layout;
    const TraceJobKinds& kinds;
    std::int64_t origin_ns;
    std::uint64_t first_lane_uuid;
    const UnitNames& names;
    const std::vector<FlowMark>& flows;  // by device and job
  };

  explicit JobPackets(const Context& c) : c_(c) {
    // The fixed names' InternedData fields, serialized once: libprotobuf
    // writes the categories (field 1), the event names (2), then the
    // argument names (3); the unit's job names go after the bubbles'.
    pb::InternedData fixed;
    intern_fixed_names(fixed, c_.kinds.has(JobKind::lr));
    pb::InternedData part;
    *part.mutable_event_categories() = fixed.event_categories();
    categories_ = part.SerializeAsString();
    part.Clear();
    *part.mutable_event_names() = fixed.event_names();
    bubble_names_ = part.SerializeAsString();
    part.Clear();
    *part.mutable_debug_annotation_names() = fixed.debug_annotation_names();
    arg_names_ = part.SerializeAsString();
  }

  // The packet that starts unit u: it clears the sequence's interned names
  // (the previous unit's, or the head's) and defines the fixed ones and the
  // unit's job names, so that a unit reads without what came before it. By
  // hand, in libprotobuf's bytes (fields in number order): one per step.
  void format_unit_start(std::size_t unit, fmt::memory_buffer& out) const {
    fmt::memory_buffer names;
    c_.names.for_each(c_.body.part().run, unit, [&](std::uint64_t iid, const std::string& name) {
      const std::size_t entry =
          1 + wire::varint_size(iid) + 1 + wire::varint_size(name.size()) + name.size();
      const std::size_t old = names.size();
      names.resize(old + 1 + wire::kMaxVarintBytes + entry);
      char* p = names.data() + old;
      p = wire::put_tag(p, pb::InternedData::kEventNamesFieldNumber, wire::kLengthDelimited);
      p = wire::put_varint(p, entry);
      p = put_varint_field(p, pb::EventName::kIidFieldNumber, iid);
      p = wire::put_tag(p, pb::EventName::kNameFieldNumber, wire::kLengthDelimited);
      p = wire::put_varint(p, name.size());
      p = wire::put_bytes(p, name.data(), name.size());
      names.resize(static_cast<std::size_t>(p - names.data()));
    });
    const std::size_t interned =
        categories_.size() + bubble_names_.size() + names.size() + arg_names_.size();
    const std::size_t packet = 2 + 1 + wire::varint_size(interned) + interned + 2;
    const std::size_t old = out.size();
    out.resize(old + 1 + wire::kMaxVarintBytes + packet);
    char* p = out.data() + old;
    p = wire::put_tag(p, pb::Trace::kPacketFieldNumber, wire::kLengthDelimited);
    p = wire::put_varint(p, packet);
    p = put_varint_field(p, pb::TracePacket::kTrustedPacketSequenceIdFieldNumber, kSequenceId);
    p = wire::put_tag(p, pb::TracePacket::kInternedDataFieldNumber, wire::kLengthDelimited);
    p = wire::put_varint(p, interned);
    p = wire::put_bytes(p, categories_.data(), categories_.size());
    p = wire::put_bytes(p, bubble_names_.data(), bubble_names_.size());
    p = wire::put_bytes(p, names.data(), names.size());
    p = wire::put_bytes(p, arg_names_.data(), arg_names_.size());
    p = put_varint_field(p, pb::TracePacket::kSequenceFlagsFieldNumber,
                         pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    out.resize(static_cast<std::size_t>(p - out.data()));
  }

  // Appends the unit's start (when `piece` is its first and `with_start`)
  // and the packets of the unit's jobs in `piece`.
  void format(const TraceBody::Piece& piece, fmt::memory_buffer& out,
              bool with_start = true) const {
    if (piece.first_of_unit && with_start) format_unit_start(piece.unit, out);
    const TracePart& part = c_.body.part();
    const std::int64_t k = c_.body.step(piece.unit);
    fmt::memory_buffer event;
    for (std::size_t d = piece.device_begin; d < piece.device_end; ++d) {
      const JobVector& jobs = part.run.devices[d].jobs;
      const std::size_t first = c_.body.begin(piece, d);
      auto flow =
          std::lower_bound(c_.flows.begin(), c_.flows.end(), std::make_pair(d, first),
                           [](const FlowMark& a, const std::pair<std::size_t, std::size_t>& b) {
                             return std::make_pair(std::size_t{a.device}, std::size_t{a.job}) < b;
                           });
      for (std::size_t i = first, end = c_.body.end(piece, d); i < end; ++i) {
        if (c_.body.job_step(d, i) != k) continue;
        const Job& job = jobs[i];
        const std::uint64_t track = c_.first_lane_uuid + c_.layout.device_lane(d) +
                                    static_cast<std::uint64_t>(part.lanes[d][i]);
        while (flow != c_.flows.end() && flow->device == d && flow->job < i) ++flow;
        const auto flows_begin = flow;
        while (flow != c_.flows.end() && flow->device == d && flow->job == i) ++flow;
        format_job(job, k, piece.unit, track, flows_begin, flow, event, out);
      }
    }
  }

 private:
  using FlowIt = std::vector<FlowMark>::const_iterator;

  void format_job(const Job& job, std::int64_t k, std::size_t unit, std::uint64_t track,
                  FlowIt flows_begin, FlowIt flows_end, fmt::memory_buffer& event,
                  fmt::memory_buffer& out) const {
    // The BEGIN event's fields.
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
    e = put_varint_field(e, pb::TrackEvent::kNameIidFieldNumber, c_.names.iid(unit, job));
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
    const std::uint64_t start = ts(job.start_ns);
    const std::size_t old = out.size();
    // Trace.packet's tag and length, timestamp, sequence id, track event
    // tag and length, flags: under 48 bytes besides the event's.
    out.resize(old + 48 + event_size + kMaxEndPacketBytes);
    char* p = out.data() + old;
    p = put_slice_begin(p, start, std::string_view(event.data(), event_size));
    p = put_slice_end(p, ts(job.end_ns), track);
    out.resize(static_cast<std::size_t>(p - out.data()));
  }

  std::uint64_t ts(std::int64_t ns) const {
    return static_cast<std::uint64_t>(ns_since(ns, c_.origin_ns));
  }

  Context c_;
  std::string categories_;    // InternedData.event_categories of the fixed names
  std::string bubble_names_;  // InternedData.event_names of the bubble kinds
  std::string arg_names_;     // InternedData.debug_annotation_names
};

// The trace in its parts (trace_parts.h): the head (the tracks, with the
// fixed names interned in the first packet; the steps, bubble-ratio
// counters and log events), the units of a part's steps (a packet that
// starts each, the jobs, the bubbles), the tail (the jobs of no step).
class PerfettoWriter {
 public:
  PerfettoWriter(const TraceFrame& frame, AtomicFile& file)
      : PerfettoWriter(frame, &file, file.buffer(), {}) {}
  // Writes nothing: measure_frame() and measure_part() format into
  // `scratch`, `sample` of the head's items.
  PerfettoWriter(const TraceFrame& frame, fmt::memory_buffer& scratch, TraceSampleSize sample)
      : PerfettoWriter(frame, nullptr, scratch, sample) {}

  void head() {
    write_descriptors();
    write_steps();
    if (frame_.bubbles()) write_bubble_counters();
    write_log_events();
  }

  // The units of `part`'s selected steps, or (`stepless`) of its jobs of no step.
  void body(const TracePart& part, bool stepless) {
    const TraceBody body(part, options_.steps, stepless, kTraceJobsPerPiece);
    const UnitNames names(body);
    const std::vector<FlowMark> flows = flow_marks(body);
    const TraceJobKinds kinds(part.run);
    const JobPackets packets(
        {body, metrics_, layout_, kinds, origin_ns_, first_lane_uuid_, names, flows});
    const TypeKinds type_kinds(part.run.types);
    std::vector<WindowBubbles> walks;
    if (frame_.bubbles()) {
      for (std::size_t d = 0; d < part.run.devices.size(); ++d) {
        walks.emplace_back(part.run.devices[d], d,
                           part.job_index != nullptr ? &(*part.job_index)[d] : nullptr, type_kinds);
      }
    }
    const std::vector<TraceBody::Piece>& pieces = body.pieces();
    write_in_order(
        *file_, pieces.size(), options_.threads,
        [&](std::size_t k, fmt::memory_buffer& out) { packets.format(pieces[k], out); },
        [&](std::size_t k) {
          // The unit's bubbles, in sequence after its jobs.
          const std::int64_t step = body.step(pieces[k].unit);
          if (!pieces[k].last_of_unit || step < 0 || walks.empty()) return;
          const auto index = static_cast<std::size_t>(step);
          for (WindowBubbles& walk : walks) {
            walk.window(metrics_.steps[index], index, [&](const Bubble& bubble) {
              format_bubble(bubble, file_->buffer());
              file_->flush_if_full();
            });
          }
        });
  }

  void tail(const TracePart* stepless) {
    if (stepless != nullptr) body(*stepless, /*stepless=*/true);
  }

  // The bytes the head writes (trace_parts.h, "A trace's size by parts"):
  // the tracks whole, the steps, bubble counters and log events from a
  // sample of their packets. The tail writes nothing of its own.
  std::uint64_t measure_frame() {
    write_descriptors();
    // A sample is formatted at the end of the scratch buffer, measured and
    // cut off.
    std::uint64_t bulk = measure_steps();
    if (frame_.bubbles()) bulk += measure_bubble_counters();
    bulk += measure_log_events();
    return scratch_.size() + bulk;
  }

  // What the units of `part`'s selected steps (or, `stepless`, of its jobs
  // of no step) add: every unit's start packet (they differ by their
  // names), the job packets of the sampled pieces (`first_piece`: the
  // whole-run position of the part's first) and the sampled bubbles.
  TraceBulkBytes measure_part(const TracePart& part, bool stepless, const TraceSampling& sampling,
                              std::uint64_t first_piece) {
    const TraceBody body(part, options_.steps, stepless, kTraceJobsPerPiece);
    // The names, and beside them the flows and the bubbles' sample: each
    // reads the whole part.
    std::optional<UnitNames> names;
    std::vector<FlowMark> flows;
    // The jobs of no step have no window, hence no bubble.
    const bool bubbles = frame_.bubbles() && !stepless;
    TraceBubbleSample sample;
    tbb::parallel_invoke([&] { names.emplace(body); },
                         [&] {
                           flows = flow_marks(body);
                           if (bubbles) {
                             sample = sample_part_bubbles(part, metrics_, options_.steps,
                                                          sampling.bubble_stride);
                           }
                         });
    const TraceJobKinds kinds(part.run);
    const JobPackets packets(
        {body, metrics_, layout_, kinds, origin_ns_, first_lane_uuid_, *names, flows});
    TraceBulkBytes bytes;
    // Every unit's first packet (its names), measured on several threads.
    bytes.exact = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, body.units()), std::uint64_t{0},
        [&](const tbb::blocked_range<std::size_t>& units, std::uint64_t sum) {
          fmt::memory_buffer start;
          for (std::size_t u = units.begin(); u < units.end(); ++u) {
            start.clear();
            packets.format_unit_start(u, start);
            sum += start.size();
          }
          return sum;
        },
        std::plus<>());
    fmt::memory_buffer out;
    for (const TraceBody::Piece& piece : body.pieces()) bytes.jobs.count += piece.jobs;
    for_each_sampled_piece(body, first_piece, sampling.piece_stride,
                           [&](const TraceBody::Piece& piece) {
                             out.clear();
                             packets.format(piece, out, /*with_start=*/false);
                             bytes.jobs.bytes += out.size();
                             bytes.jobs.sampled += piece.jobs;
                           });
    if (bubbles) {
      out.clear();
      for (const Bubble& bubble : sample.bubbles) format_bubble(bubble, out);
      bytes.bubbles = {out.size(), sample.bubbles.size(), sample.count};
    }
    return bytes;
  }

 private:
  PerfettoWriter(const TraceFrame& frame, AtomicFile* file, fmt::memory_buffer& scratch,
                 TraceSampleSize sample)
      : frame_(frame),
        run_(frame.run()),
        metrics_(frame.metrics()),
        options_(frame.options()),
        layout_(frame.layout()),
        kinds_(frame.run()),
        file_(file),
        scratch_(scratch),
        sample_(sample),
        out_(file, scratch),
        // Packet timestamps are unsigned: an epoch time before 1970 (only
        // possible after a large clock correction) falls back to relative times.
        origin_ns_(options_.absolute_time ? std::min<std::int64_t>(0, frame.first_ns())
                                          : frame.first_ns()),
        // The tracks' uuids in the order write_descriptors declares them.
        first_lane_uuid_(3 + (frame.bubbles() ? kBubbleKinds.size() : 0) +
                         layout_.machines().size()) {}

  bool selected(std::int64_t step_index) const { return options_.steps.contains(step_index); }

  std::uint64_t ts(std::int64_t ns) const {
    return static_cast<std::uint64_t>(ns_since(ns, origin_ns_));
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

  void write_descriptors() {
    std::uint64_t next_uuid = 1;
    steps_process_ = next_uuid++;
    process_track(steps_process_, TraceLayout::steps_process());
    steps_thread_ = next_uuid++;
    thread_track(steps_thread_, TraceLayout::steps_thread());
    if (frame_.bubbles()) {
      for (const BubbleKind kind : kBubbleKinds) {
        const std::uint64_t uuid = next_uuid++;
        counter_tracks_[static_cast<std::size_t>(kind)] = uuid;
        pb::TrackDescriptor& track =
            begin_descriptor(uuid, TraceLayout::bubble_ratio_track_name(kind));
        track.set_parent_uuid(steps_process_);
        track.mutable_counter();  // present and empty: a counter track of plain numbers
        out_.finish();
      }
    }
    for (const TraceProcess& machine : layout_.machines()) process_track(next_uuid++, machine);
    for (const TraceThread& thread : layout_.threads()) thread_track(next_uuid++, thread);
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

  // The ends of the arrows drawn in the body's units (trace_flow_id), by
  // device and job; a job's own in the order of their consumers.
  std::vector<FlowMark> flow_marks(const TraceBody& body) const {
    std::vector<FlowMark> flows;
    if (!frame_.flows()) return flows;
    for (std::size_t u = 0; u < body.units(); ++u) {
      body.for_each_flow(u, options_.steps, [&](const Dependency& dep) {
        const std::uint64_t id = trace_flow_id(body.part(), dep.consumer);
        flows.push_back({dep.producer.device, dep.producer.job, id, false});
        flows.push_back({dep.consumer.device, dep.consumer.job, id, true});
      });
    }
    std::stable_sort(flows.begin(), flows.end(), [](const FlowMark& a, const FlowMark& b) {
      return a.device != b.device ? a.device < b.device : a.job < b.job;
    });
    return flows;
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
    for (const EventRef& ref : frame_.events()) write_log_event(ref);
  }

  // A sample of the events: the names they intern are counted with them
  // (an overestimate of a few bytes per name and stride).
  std::uint64_t measure_log_events() {
    const std::vector<EventRef>& events = frame_.events();
    return measure_items(events.size(), [&](std::size_t k) { write_log_event(events[k]); });
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

  const TraceFrame& frame_;
  const Run& run_;
  const Metrics& metrics_;
  const TraceOptions& options_;
  const TraceLayout& layout_;
  const TraceJobKinds kinds_;
  AtomicFile* file_ = nullptr;   // null when measuring
  fmt::memory_buffer& scratch_;  // the file's buffer, or measure()'s
  TraceSampleSize sample_;       // what measure_frame() formats of the head
  PacketWriter out_;
  bool first_packet_ = true;
  const std::int64_t origin_ns_;
  const std::uint64_t first_lane_uuid_;

  std::uint64_t steps_process_ = 0;
  std::uint64_t steps_thread_ = 0;
  std::array<std::uint64_t, 3> counter_tracks_{};

  // Event names of the head after the bubble kinds': the steps', then the
  // log events'.
  std::uint64_t next_name_iid_ = kBubbleKinds.size() + 1;

  // The names interned for the log events (TraceFrame::events): categories
  // after lr's iid, argument names after kArgNames'.
  std::map<std::string, std::uint64_t> event_names_;
  std::map<std::string, std::uint64_t> categories_;
  std::map<std::string, std::uint64_t> arg_names_;
  std::uint64_t next_category_iid_ = kCategoryLr + 1;
  std::uint64_t next_arg_iid_ = kArgNames.size();
};

}  // namespace

std::uint64_t measure_perfetto_trace_frame(const TraceFrame& frame, TraceSampleSize sample) {
  fmt::memory_buffer scratch;
  return PerfettoWriter(frame, scratch, sample).measure_frame();
}

TraceBulkBytes measure_perfetto_trace_part(const TraceFrame& frame, const TracePart& part,
                                           bool stepless, const TraceSampling& sampling,
                                           std::uint64_t first_piece) {
  fmt::memory_buffer scratch;
  return PerfettoWriter(frame, scratch, {}).measure_part(part, stepless, sampling, first_piece);
}

std::uint64_t estimate_perfetto_trace_bytes(const Run& run, const Metrics& metrics,
                                            const TraceOptions& options, TraceSampleSize sample) {
  return estimate_whole_trace(run, metrics, options, sample,
                              {measure_perfetto_trace_frame, measure_perfetto_trace_part});
}

void write_perfetto_trace_head(const TraceFrame& frame, AtomicFile& file) {
  PerfettoWriter(frame, file).head();
}

void write_perfetto_trace_part(const TraceFrame& frame, const TracePart& part, AtomicFile& file) {
  PerfettoWriter(frame, file).body(part, /*stepless=*/false);
}

void write_perfetto_trace_tail(const TraceFrame& frame, const TracePart* stepless,
                               AtomicFile& file) {
  PerfettoWriter(frame, file).tail(stepless);
}

void write_perfetto_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                          const std::string& path) {
  const TraceLanes lanes = trace_lanes(run);
  const TraceFrame frame(run, metrics, options, lanes.count,
                         earliest_selected_start(run, metrics, options.steps));
  const TracePart whole = whole_trace_part(run, metrics, options, lanes);
  AtomicFile file(path);
  write_perfetto_trace_head(frame, file);
  write_perfetto_trace_part(frame, whole, file);
  write_perfetto_trace_tail(frame, &whole, file);
  file.commit();
}

}  // namespace pipescope
