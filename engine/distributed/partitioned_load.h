// The load prelude partitioned across ranks: what load_run does before the
// analysis (load/load_run.h: the input rules, the bad timestamps, the clock
// steps, the launch segments), done by ranks that each hold the files they
// read, so that no rank ever holds another rank's jobs. What it returns is
// what the partitioned analysis (partitioned_analysis.h) takes.
//
// Every rank calls
//   LocalLoad mine = load_partitioned(exchange, std::move(my_files), my_indices, inputs, options);
// with the FileResults of the files it read (read_input_files), where each
// is in the global input list, and that list's length. In this order it then
//   1. gathers every file's header (place, stats, diagnostics, first step,
//      type names, job counts, notes; no job) and builds the run every rank
//      builds: merge_file_results over every file, the others' without jobs,
//      so devices, inputs and type ids are the single process's;
//   2. applies the input rules from the headers (unreadable, unplaced, rank
//      layout, notes, devices left out by their job counts) and from
//      gathered per-device facts: fingerprints (copies), spans (two runs);
//   3. leaves out bad timestamps per device, said from gathered counts;
//   4. looks for clock steps from per-device evidence (clock_steps.h parts)
//      and refuses a run that has one (see load_partitioned);
//   5. splits the launch segments with launch_segments.h's parts (every
//      device's evidence gathered, the busy intervals inside each candidate
//      gathered once, the numbering gathered) and keeps the segment asked for.
// Every decision is taken on every rank from the same gathered facts, so
// every rank throws the same error, or none does: no rank waits in a
// collective another left. The warnings are load_run's, word for word.
#pragma once

#include <cstddef>
#include <vector>

#include "distributed/exchange.h"
#include "ingest/file_result.h"
#include "load/load_run.h"
#include "model/run.h"

namespace pipescope::distributed {

/// LoadedInputs (load_run.h) as load_run gives them before the analysis
/// (LoadLevel::prelude), on every rank, but for the jobs: `run` holds every
/// analysed device of the run in Run order (as load_run leaves
/// Run::devices), with the jobs only of the devices this rank read; types
/// interned as in one process; finalized; segments set (Run::segments on
/// every rank, Device::segment_begin on this rank's devices). What
/// analyze_partitioned takes as `local`.
struct LocalLoad : LoadedInputs {
  /// For each device of `run`, whether this rank read it (holds its jobs).
  std::vector<char> mine;
};

/// See the header. `mine[i]` is the file at `global_index[i]` of `files`
/// inputs; every input is on exactly one rank. `options` must be the same
/// on every rank. Throws, on every rank alike, what load_run throws for the
/// same inputs (InputError for refused inputs, std::invalid_argument for a
/// segment the run does not have), and InputError for what cannot yet be
/// analysed partitioned: PyTorch traces' GPU activities (the kernel view
/// reads every trace together) and a run with a clock step (undoing one
/// moves jobs by evidence from every device of a machine; it is found
/// exactly, with undo_clock_steps' own parts, and refused). The event
/// library (Run::event_kinds) is the caller's, as for any assembled run
/// (ingest.h, adopt_event_library). Throws WireError for a message that does
/// not decode, and what the exchange throws when another rank fails.
LocalLoad load_partitioned(Exchange& exchange, std::vector<FileResult>&& mine,
                           const std::vector<std::size_t>& global_index, std::size_t files,
                           const LoadOptions& options);

}  // namespace pipescope::distributed
