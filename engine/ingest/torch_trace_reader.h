// The reader of PyTorch profiler traces (Chrome-trace JSON written by
// torch.profiler / Kineto, `*.pt.trace.json[.gz]`, one file per rank) of
// torch.distributed.pipelining runs, and, with a job pattern, of any
// Chrome-trace JSON whose user annotations name the jobs (docs/formats.md,
// "PyTorch profiler traces").
//
// The document is never held: trace_event_tokenizer finds its events chunk by
// chunk and each event is parsed alone (simdjson); only user annotations
// whose names are jobs (`PP:<action>`, or the pattern's), `ProfilerStep#N`
// spans, kernel records and the runtime calls that launched them are kept.
//
//  - Jobs: `PP:<stage><op><mb>` with op F forward, B backward, I backward_b,
//    W backward_w, SEND_F/RECV_F/SEND_B/RECV_B send_forward ... recv_backward,
//    UNSHARD/RESHARD/REDUCE_GRAD (no micro-batch) unshard, reshard,
//    reduce_grad; `(0F1;1B0)OVERLAP_F_B` is both jobs over one interval. A
//    rank holding several stages names its compute types with the chunk (the
//    stage's place among the rank's stages: looped s, s+P, ... and the V's r,
//    2P-1-r alike): forward0, backward_w1.
//  - Interval, in order of preference: the GPU span (`gpu_user_annotation`,
//    matched to the CPU span by External id, else by name and order) when it
//    covers the kernels launched inside the CPU span (their correlation ids);
//    else the span of those kernels; else the CPU span: the job is host-timed
//    and a diagnostic says how many were.
//  - Time: `baseTimeNanoseconds` + `ts` microseconds (absolute microseconds
//    without it), decimals read exactly to the ns, never through double.
//  - Steps: the N of the `ProfilerStep#N` span holding the first job numbers
//    the first step (FileResult::first_step); the contract's rule finds them.
//
// InputStats for a trace counts events: `lines` = events, `matched` = jobs,
// `malformed` = events or labels that could not be read (a diagnostic gives
// the byte offset of the first few), `oversized` = events over the size
// limit. A document cut short or damaged keeps every event before the damage
// and sets `error` with the byte offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"

namespace pipescope {

struct IngestOptions;
class ProgressMeter;

/// One job named by a trace annotation.
struct TraceAction {
  /// The stored type without its chunk: forward, backward, backward_b,
  /// backward_w, send_forward, recv_forward, send_backward, recv_backward,
  /// unshard, reshard, reduce_grad (or a pattern's kind).
  std::string type;
  /// Pipeline stage (global), or -1 when the label has none.
  std::int64_t stage = -1;
  /// Chunk given directly (a pattern's `chunk` group), or -1.
  std::int64_t chunk = -1;
  /// Micro-batch, or -1 when the label has none.
  std::int64_t micro_batch = -1;
};

/// Parses the action of a `PP:` label (without the prefix): one action, or
/// the two of an OVERLAP_F_B pair. Empty for text that is not an action.
std::vector<TraceAction> parse_pipeline_action(std::string_view label);

/// `--job-pattern` and `--job-kinds` compiled: a regular expression (ECMAScript,
/// plus Python's `(?P<name>...)` groups) with a named group `op` and optional
/// `mb`, `stage`, `chunk`, searched for anywhere in an annotation's name; and
/// op text -> stored type ("F=forward,B=backward"; an op that is already a
/// type name, such as `forward`, maps to itself).
class JobPattern {
 public:
  /// Throws std::invalid_argument naming what is wrong (no `op` group, a bad
  /// expression, a kind that is no job type).
  JobPattern(const std::string& pattern, const std::string& kinds);
  ~JobPattern();
  JobPattern(JobPattern&&) noexcept;

  bool has_micro_batch() const { return mb_group_ > 0; }
  /// The action a name stands for, if the pattern matches and its op maps.
  std::optional<TraceAction> match(std::string_view name) const;

 private:
  struct Impl;
  Impl* impl_;
  int mb_group_ = 0;
};

/// True for `*.pt.trace.json` and `*.pt.trace.json.gz`.
bool torch_trace_name(std::string_view file_name);
/// True when the first bytes begin a JSON object whose first key is one a
/// Chrome trace starts with (`schemaVersion`, `traceEvents`, ...).
bool trace_json_content(std::string_view first_bytes);
/// `distributedInfo.rank` from the head of a trace (before its events), if any.
std::optional<int> torch_trace_rank(const std::string& path);

/// Reads one trace. Never throws for the file's content or I/O; throws
/// InputError when a job pattern without `mb` meets a trace without
/// ProfilerStep spans, and std::invalid_argument for a bad pattern.
FileResult read_torch_trace(const InputFile& input, const IngestOptions& options);

/// The format table's reader: one task per file, in parallel.
std::vector<FileResult> read_torch_traces(const std::vector<InputFile>& files,
                                          const IngestOptions& options, ProgressMeter& progress);

}  // namespace pipescope
