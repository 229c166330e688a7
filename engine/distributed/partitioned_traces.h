// The traces of a partitioned run (partitioned_analysis.h): trace.json and
// trace.pftrace written by the ranks together, byte for byte the single
// process's (write_chrome_trace, write_perfetto_trace with the same
// options), while no rank ever holds more than its part of the jobs.
//
// Every rank calls, after analyze_partitioned and with the same options,
//   write_partitioned_trace(exchange, local, mine, options, TraceFormat::json, path);
// and rank 0 writes `path` (atomically: readers see it whole or not at all).
// The trace is cut as export/trace_parts.h cuts it: a head of whole-run
// facts, one part per step range, a tail. In this order every rank
//   1. computes the lanes of the jobs of the devices it read (each device is
//      read whole by one rank: a lane depends on the device's earlier jobs)
//      and sends each lane where its job went (the jobs' exchange of
//      analyze_partitioned, replayed: one all-to-all of 4 bytes a job);
//   2. gathers every device's lane count, and the earliest selected job and
//      drawn log event of every range (time zero of the trace), on every rank;
//   3. sends rank 0 its steps' bubble ratios and bubble totals (the head's
//      step slices and bubble-ratio counters; the other ranks' figures of
//      those steps are zero);
//   4. writes its part: rank 0 into `path`'s temporary file after the head,
//      the others into a scratch file of their own;
//   5. streams its scratch file to rank 0 in chunks, rank by rank (= step
//      range by step range): one all-to-all per chunk in which only that
//      rank sends, so rank 0 holds one chunk at a time;
//   6. rank 0 writes the tail and commits; the last collective returns once
//      it has, so every rank returns after the file is in place (or throws
//      what the exchange throws when rank 0 failed).
#pragma once

#include <cstddef>
#include <string>

#include "distributed/exchange.h"
#include "distributed/partitioned_analysis.h"
#include "export/chrome_trace.h"
#include "export/trace_size.h"
#include "model/run.h"

namespace pipescope::distributed {

/// How the parts travel to rank 0.
struct TraceStreaming {
  /// The most bytes of a part in one message: rank 0 holds one at a time.
  std::size_t chunk_bytes = std::size_t{4} << 20;
  /// Where the ranks other than 0 write their part before sending it;
  /// empty: the system's temporary folder (the output folder may exist on
  /// rank 0's machine only). The file is removed once sent, or on failure.
  std::string scratch_dir;
};

/// See the header. `local` is the run analyze_partitioned took (after it,
/// with its clock offsets applied) and must hold every device's log events
/// on rank 0, as load_partitioned leaves them (other ranks only need their
/// own devices'). `options` is the single process's, the same on every rank:
/// `steps` is a selection of the run's steps (StepSelection::of or parse on
/// the metrics' windows); `pipeline` only says whether the pipeline analysis
/// is drawn (bubbles, bubble-ratio counters, flows with `flows`): what is
/// drawn is `analysis`'s, the pointee is not read. Throws std::system_error
/// on rank 0 when `path` cannot be written (and on a rank whose scratch file
/// cannot be), WireError for a message that does not decode, and what the
/// exchange throws when another rank failed.
void write_partitioned_trace(Exchange& exchange, const Run& local,
                             const PartitionedAnalysis& analysis, const TraceOptions& options,
                             TraceFormat format, const std::string& path,
                             const TraceStreaming& streaming = {});

/// estimate_trace_bytes(run, metrics, options, format, sample) of the single
/// process, to the byte, on every rank: the same calls and arguments as
/// write_partitioned_trace (every rank, after analyze_partitioned).
std::uint64_t estimate_partitioned_trace_bytes(Exchange& exchange, const Run& local,
                                               const PartitionedAnalysis& analysis,
                                               const TraceOptions& options, TraceFormat format,
                                               TraceSampleSize sample = {});

/// plan_trace(run, metrics, options, steps_given, format, limit) of the
/// single process, on every rank (plan_trace_with on the whole run's
/// estimate_partitioned_trace_bytes; none when `steps_given`).
TracePlan plan_partitioned_trace(Exchange& exchange, const Run& local,
                                 const PartitionedAnalysis& analysis, const TraceOptions& options,
                                 bool steps_given, TraceFormat format, std::uint64_t limit);

}  // namespace pipescope::distributed
