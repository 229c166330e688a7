// The run as a Chrome trace (JSON object form), for the Perfetto UI and
// chrome://tracing: one process per machine, one thread per device lane, one
// complete ("X") slice per job, one instant ("i") per log event on its
// device's first lane, plus a "Steps" process with one slice per step
// window. Processes, threads and lanes are those of trace_layout.h, shared
// with the Perfetto trace. Times are microseconds with exactly three
// decimals, formatted from the integer nanoseconds so no precision is lost
// on the way. Deterministic: the same Run and Metrics give the same bytes.
//
// The events are in the order of trace_parts.h: the head (metadata, steps,
// bubble-ratio counters, log events), then step by step each step's jobs,
// bubbles and dependency arrows, then the jobs of no step and the trailer;
// every event after the first starts with ",\n", so the head, the parts of
// the step ranges (written by their owners) and the tail join by
// concatenation into the trace write_chrome_trace writes.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "export/atomic_file.h"
#include "model/run.h"

namespace pipescope {

struct TraceOptions {
  /// false: time zero is the earliest job start, or the earliest log event
  /// drawn when one lies before it (otherData.origin_ns says which epoch time
  /// that is); true: timestamps are epoch microseconds.
  bool absolute_time = false;
  /// When set: a "· bubbles" lane per device with one slice per bubble (named
  /// by kind), and a "bubble ratio" counter track (fill/interior/drain) in Steps.
  const PipelineAnalysis* pipeline = nullptr;
  /// With `pipeline`: flow arrows from each job to the jobs of other stages
  /// that depend on it (category "dependency", or "critical_path" on a step's
  /// critical path).
  bool flows = false;
  /// Only these steps' windows, jobs, bubbles and flows (`--steps`), and the
  /// log events in their windows and in the gaps before them; jobs and events
  /// outside any step are left out of a selection. Time zero is then the
  /// earliest selected job or event.
  StepSelection steps{};
  /// Worker threads that format the events (0: one per core). The bytes
  /// written do not depend on it.
  unsigned threads = 0;
};

/// How much of a trace's bulk its size estimate formats: pieces of up to
/// 4096 jobs (trace_parts.h, TraceBody), and items of each other kind
/// (steps, bubble counters, bubbles, log events, dependencies). A run within
/// both is measured to the byte; past them, 64 pieces (262,144 jobs) and
/// 16,384 items kept the estimate within 0.1% on the benchmark folders and
/// within 0.02% on simulated runs of up to 792,000 jobs with bubbles and flows
/// (docs/guide.md, "Traces of big runs"). Tests make them small to exercise
/// the scaling on a small run. Bubbles and dependencies are sampled by a
/// hash of their identity, pieces and the head's items by position
/// (trace_parts.h, "A trace's size by parts").
struct TraceSampleSize {
  std::size_t job_pieces = 64;
  std::size_t items = 16384;
};

/// Writes the trace to `path` atomically. The folder must exist. Throws
/// std::system_error ("cannot write PATH: ...") on I/O failure. It is
/// write_chrome_trace_head, write_chrome_trace_part over the whole run
/// (whole_trace_part) and write_chrome_trace_tail.
void write_chrome_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                        const std::string& path);

class TraceFrame;
struct TracePart;

/// The trace in parts (trace_parts.h), appended to `file` (committed by the
/// caller): the head, from the frame alone ...
void write_chrome_trace_head(const TraceFrame& frame, AtomicFile& file);
/// ... the units of `part`'s selected steps (jobs formatted on
/// TraceOptions::threads workers) ...
void write_chrome_trace_part(const TraceFrame& frame, const TracePart& part, AtomicFile& file);
/// ... and the tail: the jobs of no step of `stepless` (null: none, as in
/// a partitioned run, whose every job has a step), the array's end and the
/// trailer.
void write_chrome_trace_tail(const TraceFrame& frame, const TracePart* stepless, AtomicFile& file);

/// The bytes write_chrome_trace would write, without writing: the small
/// sections formatted whole, the jobs, steps, bubble counters, bubbles, log
/// events and flows from `sample` of them (trace_content.h) scaled by their
/// count, so exact for a run whose bulk fits the sample. About 0.1 s for
/// 5 million jobs (every bubble is visited to be counted). It is
/// estimate_whole_trace (trace_parts.h) over the two below.
std::uint64_t estimate_chrome_trace_bytes(const Run& run, const Metrics& metrics,
                                          const TraceOptions& options, TraceSampleSize sample = {});

struct TraceSampling;
struct TraceBulkBytes;

/// The estimate by parts (trace_parts.h, "A trace's size by parts"): the
/// bytes of the head and tail, the steps, bubble counters and log events
/// from `sample` of them ...
std::uint64_t measure_chrome_trace_frame(const TraceFrame& frame, TraceSampleSize sample);
/// ... and what the units of `part`'s selected steps (`stepless`: its jobs
/// of no step) add, sampled as `sampling` says, the part's first piece with
/// a job at whole-run position `first_piece`.
TraceBulkBytes measure_chrome_trace_part(const TraceFrame& frame, const TracePart& part,
                                         bool stepless, const TraceSampling& sampling,
                                         std::uint64_t first_piece);

/// Appends `ns` as microseconds with exactly three decimals, e.g. 1234567 ->
/// "1234.567", -1 -> "-0.001". Exact for every int64.
void append_ns_as_us(fmt::memory_buffer& out, std::int64_t ns);

}  // namespace pipescope
