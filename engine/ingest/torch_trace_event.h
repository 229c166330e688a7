// One event of a PyTorch profiler trace, parsed alone: what the torch trace
// reader keeps of it. An event is found by trace_event_tokenizer and parsed
// here on any thread (simdjson On-Demand, in place); the reader applies the
// results in file order.
//
// Kept: complete events (`ph` "X") that are user annotations naming a job
// (`PP:` labels, or the job pattern's), `ProfilerStep#N` spans, every GPU
// activity (kernels, copies, sets; NCCL kernels with their communication
// args), the runtime or driver calls that launch GPU work, and the host
// calls of NCCL communications (`record_param_comms` CPU ops and `nccl:<op>`
// spans, with their communication args). Everything else (CPU ops, flows,
// other annotations) is dropped unparsed where its category and name
// already say so.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "model/gpu_activity.h"

namespace pipescope {

class JobPattern;

/// The prefix of torch.distributed.pipelining's action labels.
inline constexpr std::string_view kPipelinePrefix = "PP:";
/// The prefix of the profiler's step spans (`ProfilerStep#7`).
inline constexpr std::string_view kStepPrefix = "ProfilerStep#";

/// What an event is to the reader, by its category.
enum class EventClass : std::uint8_t {
  none,
  cpu_annotation,
  gpu_annotation,
  kernel,
  launch,
  comm_call
};

/// The name of the CPU op PyTorch records a communication's args on.
inline constexpr std::string_view kParamCommsOp = "record_param_comms";
/// The prefix of the spans ProcessGroupNCCL names its calls with
/// (`nccl:send`, `nccl:all_reduce`, `nccl:coalesced`).
inline constexpr std::string_view kNcclCallPrefix = "nccl:";

/// What one kept event holds.
struct ParsedEvent {
  EventClass kind = EventClass::none;
  std::int64_t start = 0;  // ns after the base
  std::int64_t end = 0;
  std::int64_t correlation = -1;
  std::int64_t external_id = -1;
  /// The host thread (`tid`) of launches and communication calls.
  std::int64_t thread = -1;
  /// Kernels: the CUDA device (`args.device`); -1: not given.
  int gpu = -1;
  std::optional<std::int64_t> step;  // a ProfilerStep#N span
  std::uint64_t offset = 0;          // byte offset
  std::uint64_t ordinal = 0;         // 1-based event index
  std::size_t index = 0;             // place among its batch's events (set by the caller)
  std::string name;                  // annotations and communication calls only
  /// Kernels (copies, sets): whether it is a communication kernel (a
  /// `kernel` named `nccl...`), and what its args say of the communication.
  bool communication = false;
  /// Launches: a CUDA (HIP) graph launch, whose activities share its id.
  bool graph = false;
  /// Communication kernels and calls: what their args say of the
  /// communication (null: no such arg). A `Src Rank`/`Dst Rank` makes one
  /// PeerOp once `Collective name` says send or recv.
  std::unique_ptr<CommKernel> comm;
  std::string malformed;  // non-empty: counted malformed, with this message
};

/// Which events a pass keeps.
struct EventFilter {
  /// The second pass: kernels, the calls that launched them, and the host
  /// calls of communications (CPU annotations among them).
  bool kernels_only = false;
  const JobPattern* pattern = nullptr;  // null: `PP:` labels name the jobs
};

/// A launch or a plain GPU activity (not NCCL's) as read_plain_event reads
/// it: what the reader applies of one, in 40 bytes. Most events of a kernel
/// trace are these.
struct PlainRecord {
  std::int64_t start = 0;  // ns after the base
  std::int64_t end = 0;
  std::int64_t correlation = -1;
  std::int64_t thread = -1;  // launches: the host thread (`tid`)
  std::int32_t gpu = -1;     // activities: `args.device`; -1: not given
  /// kernel or launch; none in a batch's list: the place of its next
  /// ParsedEvent (EventBatch::records).
  EventClass kind = EventClass::none;
  bool graph = false;  // launches: a CUDA (HIP) graph launch
};
static_assert(sizeof(PlainRecord) <= 40);

/// What read_plain_event made of an event.
enum class PlainRead : std::uint8_t {
  dropped,  // no pass keeps it: parse_event returns nullopt
  plain,    // `record` is what parse_event returns (less offset, ordinal, External id)
  other,    // parse_event must read it (annotations, NCCL, anything odd)
};

/// The fast path of parse_event, for the events most traces hold: CPU ops
/// and flows (dropped by their category or a CPU op's name), plain GPU
/// activities and launches (read by one pass over their bytes, without a
/// JSON parser). Answers `dropped` or `plain` only where parse_event gives
/// that very answer; anything it does not read with certainty (escaped
/// strings, a category after a nested value, a time that is not decimal,
/// damage) is `other`. `event` has TraceEventTokenizer::kPadding readable
/// bytes after it.
PlainRead read_plain_event(std::string_view event, const EventFilter& filter, PlainRecord& record);

/// Parses one event. `event` has TraceEventTokenizer::kPadding readable bytes
/// after it. Returns nullopt for an event no pass keeps; an event that cannot
/// be read (not JSON, a time that is not decimal microseconds) comes back
/// with kind none and `malformed` saying why, so that it is counted. Times
/// are exact (parse_micros_to_ns), never through double.
std::optional<ParsedEvent> parse_event(std::string_view event, std::uint64_t offset,
                                       std::uint64_t ordinal, simdjson::ondemand::parser& parser,
                                       const EventFilter& filter);

/// What a NCCL kernel's name says it does where no arg does: a `SendRecv`
/// (`_Send`, `_Recv`) kernel runs point-to-point operations (with whom, only
/// its host calls say); the others (`AllReduce`, `Broadcast`, ...) a
/// collective. Every reader of NCCL kernels names them by this rule.
CommOp op_of_kernel_name(std::string_view name);

/// A JSON number token that must be an integer (`baseTimeNanoseconds`, a
/// step's N): true and `value` set only for the whole text being one.
bool parse_json_int(std::string_view text, std::int64_t& value);

/// A raw JSON token without the blanks and comma the tokenizer leaves after it.
std::string_view trim_json_token(std::string_view token);

}  // namespace pipescope
