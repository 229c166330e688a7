// Reads a run's input files into the model. The layer between the readers of
// each format and everything above: it picks each file's reader from the
// format table (input_formats.h), runs the formats side by side on the oneTBB
// scheduler (each through the reading loop, reading_loop.h, or the text logs'
// own), and hands their per-file results to the one merge (run_merge.h) that
// builds the Run. What it is told: ingest_options.h.
//
// Usage:
//   std::vector<InputFile> inputs = discover_inputs({"logs/"});  // discovery.h
//   Run run = ingest_inputs(inputs, {});
// or, where the results travel before they are merged (analyze --mpi):
//   std::vector<FileResult> mine = read_input_files(my_inputs, options);
#pragma once

#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/ingest_options.h"
#include "model/run.h"

namespace pipescope {

/// Reads every input with its format's reader. One result per input, in
/// input order. A file that cannot be read is described in its result
/// (InputStats::error and a diagnostic); the others are still read.
std::vector<FileResult> read_input_files(const std::vector<InputFile>& inputs,
                                         const IngestOptions& options);

/// Makes the event library the run's (Run::event_kinds) when a reader looked
/// for events in one of `inputs` (InputFormatSpec::log_events) with
/// `options.events`; ingest_inputs does it, a run assembled elsewhere
/// (`analyze --mpi`) calls it.
void adopt_event_library(Run& run, const std::vector<InputFile>& inputs,
                         const IngestOptions& options);
/// Whether any of `inputs` is of a format log events are looked for in.
bool looks_for_log_events(const std::vector<InputFile>& inputs);
/// The same, told whether the run's inputs were looked at for events (a rank
/// of a partitioned run, which holds only its own files' list).
void adopt_event_library(Run& run, bool looked, const IngestOptions& options);

/// read_input_files() and merge_file_results(): the finalized Run, one
/// Device per input, in input order.
Run ingest_inputs(const std::vector<InputFile>& inputs, const IngestOptions& options);

}  // namespace pipescope
