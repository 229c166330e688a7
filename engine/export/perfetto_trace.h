// The run as a native Perfetto trace (trace.pftrace): a protobuf `Trace`
// written packet by packet, the format ui.perfetto.dev and trace_processor
// read natively. Same content as the Chrome trace (chrome_trace.h) in about
// a third of the bytes (~71 bytes per job against ~207), and it loads where a
// JSON trace of millions of jobs no longer does (chrome://tracing stops at
// ~256 MB of JSON, the Perfetto UI at ~1 GB).
//
// Layout (one packet sequence, deterministic for a given Run and Metrics), in
// the order of trace_parts.h: a head (the tracks, steps, counters and log
// events), one unit per step (its jobs, then its bubbles) that begins with a
// packet clearing the interned names and defining the unit's own, a tail
// (the jobs of no step); so the parts of step ranges written apart join by
// concatenation. The processes and thread tracks are trace_layout.h's, as
// in the Chrome trace.
//   thread track "Steps": one slice per step window ("step N"; args
//     bubble_ratio, duration_ns, origin_ns) and, with pipeline analysis,
//     counter tracks "bubble ratio · fill|interior|drain" in process "Steps".
//   every job is a TYPE_SLICE_BEGIN/TYPE_SLICE_END pair named "TYPE mbMB"
//     (interned) on its device lane, category = its kind, args job_id,
//     micro_batch, step, line; with pipeline analysis, each device's
//     "... · bubbles" lane holds one slice per bubble named fill/interior/drain.
//   every log event drawn (trace_content.h, trace_log_events) is a
//     TYPE_INSTANT on its device's first lane, named by its id (interned),
//     categories "event" and its own, args severity, category, line, path,
//     approximate (when true) and "captures.NAME" per capture.
// Timestamps are integer nanoseconds: relative to the first job's start (or
// the first log event drawn, when earlier), or epoch nanoseconds with
// TraceOptions::absolute_time. TraceOptions::steps selects steps (and their
// events) as in the Chrome trace. With TraceOptions::flows, dependencies
// become Perfetto flows (flow_ids on the producer's slice,
// terminating_flow_ids on the consumer's; Perfetto flows have no category, so
// critical-path arrows are not told apart as in the Chrome trace).
#pragma once

#include <cstdint>
#include <string>

#include "analysis/metrics.h"
#include "export/chrome_trace.h"
#include "model/run.h"

namespace pipescope {

/// Writes the trace to `path` atomically (temporary file, then rename),
/// streaming: memory does not grow with the number of jobs. The folder must
/// exist. Throws std::system_error ("cannot write PATH: ...") on I/O failure.
void write_perfetto_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                          const std::string& path);

class TraceFrame;
struct TracePart;

/// The trace in parts (trace_parts.h), appended to `file` (committed by the
/// caller): the head (the tracks, the steps, the bubble-ratio counters and
/// the log events), the units of `part`'s selected steps (each opened by a
/// packet that clears and defines the interned names), and the tail (the
/// jobs of no step of `stepless`; null: none). write_perfetto_trace is the
/// three over the whole run.
void write_perfetto_trace_head(const TraceFrame& frame, AtomicFile& file);
void write_perfetto_trace_part(const TraceFrame& frame, const TracePart& part, AtomicFile& file);
void write_perfetto_trace_tail(const TraceFrame& frame, const TracePart* stepless,
                               AtomicFile& file);

/// The bytes write_perfetto_trace would write, without writing, estimated as
/// estimate_chrome_trace_bytes (chrome_trace.h) estimates the Chrome trace's:
/// estimate_whole_trace (trace_parts.h) over the two below.
std::uint64_t estimate_perfetto_trace_bytes(const Run& run, const Metrics& metrics,
                                            const TraceOptions& options,
                                            TraceSampleSize sample = {});

struct TraceSampling;
struct TraceBulkBytes;

/// The estimate by parts (trace_parts.h, "A trace's size by parts"): the
/// head's bytes, the steps, bubble counters and log events from `sample` of
/// them (the tail writes none of its own) ...
std::uint64_t measure_perfetto_trace_frame(const TraceFrame& frame, TraceSampleSize sample);
/// ... and what the units of `part`'s selected steps (`stepless`: its jobs
/// of no step) add: every unit's opening packet, and the job packets and
/// bubbles `sampling` keeps, the part's first piece with a job at whole-run
/// position `first_piece`.
TraceBulkBytes measure_perfetto_trace_part(const TraceFrame& frame, const TracePart& part,
                                           bool stepless, const TraceSampling& sampling,
                                           std::uint64_t first_piece);

}  // namespace pipescope
