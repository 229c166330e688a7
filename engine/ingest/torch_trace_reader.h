// The reader of PyTorch profiler traces (Chrome-trace JSON written by
// torch.profiler / Kineto, `*.pt.trace.json[.gz]`, one file per rank) of
// torch.distributed.pipelining runs, and, with a job pattern, of any
// Chrome-trace JSON whose user annotations name the jobs (docs/formats.md,
// "PyTorch profiler traces").
//
// The document is never held: trace_event_tokenizer finds its events chunk by
// chunk and each event is read alone (launches and plain kernels by one pass
// over their bytes, the rest by simdjson); only user annotations
// whose names are jobs (`PP:<action>`, or the pattern's), `ProfilerStep#N`
// spans, kernel records and the runtime calls that launched them are kept.
//
//  - Jobs: `PP:<stage><op><mb>` labels (pipeline_action.h), or the names a
//    job pattern matches (job_pattern.h). A rank holding several stages
//    names its compute types with the chunk (the stage's place among the
//    rank's stages: looped s, s+P, ... and the V's r, 2P-1-r alike):
//    forward0, backward_w1.
//  - Interval, in order of preference: the GPU span (`gpu_user_annotation`,
//    matched to the CPU span by External id, else by name and order) when it
//    covers the kernels launched inside the CPU span (their correlation ids);
//    else the span of those kernels; else the CPU span: the job is host-timed
//    and a diagnostic says how many were.
//  - Time: `baseTimeNanoseconds` + `ts` microseconds (absolute microseconds
//    without it), decimals read exactly to the ns, never through double.
//  - Steps: the N of the `ProfilerStep#N` span holding the first job numbers
//    the first step (FileResult::first_step); the contract's rule finds them.
//  - Several traces naming the same stages: trace_pipeline_choice.h.
//
// The reading of one file: torch_trace_file_reader.h.
//
// InputStats for a trace counts events: `lines` = events, `matched` = jobs,
// `malformed` = events or labels that could not be read (a diagnostic gives
// the byte offset of the first few), `oversized` = events over the size
// limit. A document cut short or damaged keeps every event before the damage
// and sets `error` with the byte offset.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/pipeline_choice.h"
#include "ingest/read_options.h"
#include "ingest/reading_loop.h"
#include "ingest/torch_trace_options.h"

namespace pipescope {

/// True for `*.pt.trace.json` and `*.pt.trace.json.gz`.
bool torch_trace_name(std::string_view file_name);
/// True when the first bytes begin a JSON object whose first key is one a
/// Chrome trace starts with (`schemaVersion`, `traceEvents`, ...).
bool trace_json_content(std::string_view first_bytes);
/// What a trace's `distributedInfo` (in its head, before the events) says
/// of its process: each field where written.
struct TraceDistributedInfo {
  std::optional<int> rank;
  std::optional<int> world_size;
};
TraceDistributedInfo torch_trace_distributed_info(const std::string& path);
/// `distributedInfo.rank` from the head of a trace (before its events), if any.
inline std::optional<int> torch_trace_rank(const std::string& path) {
  return torch_trace_distributed_info(path).rank;
}

/// Reads one trace through the reading loop. Never throws for the file's
/// content or I/O; throws InputError when a job pattern without `mb` meets a
/// trace without ProfilerStep spans (the pattern is compiled, and checked, by
/// the caller: TorchTraceOptions::job_pattern).
FileResult read_torch_trace(const InputFile& input, const ReadOptions& read,
                            const TorchTraceOptions& options);

/// The format table's reading of a run's traces (the reading loop reads
/// them side by side): each file by its TorchTraceFileReader, then a rank's
/// profiling windows joined, the pipeline choice (trace_pipeline_choice.h)
/// and one host-timed warning for the run (`host_timed_jobs`, on the first
/// result) in place of the files'. The arguments must outlive the reading.
std::unique_ptr<ChunkedFormat> torch_trace_format(const std::vector<InputFile>& files,
                                                  const ReadOptions& read,
                                                  const PipelineChoice& choice,
                                                  const TorchTraceOptions& options);

}  // namespace pipescope
