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
//   ... every file's results gathered in input order ...
//   join_file_results(all, inputs, options);
#pragma once

#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/ingest_options.h"
#include "model/run.h"

namespace pipescope {

/// Reads every input with its format's reader. One result per input, in
/// input order. A file that cannot be read is described in its result
/// (InputStats::error and a diagnostic); the others are still read. The
/// results of a format with a join (InputFormatSpec::join) are not yet
/// joined: join_file_results does it once every file's result is in hand.
std::vector<FileResult> read_input_files(const std::vector<InputFile>& inputs,
                                         const IngestOptions& options);

/// Runs each format's join (InputFormatSpec::join) over its results among
/// `results` (read_input_files over `inputs`, in input order, whoever read
/// them). Throws what a join throws (InputError).
void join_file_results(std::vector<FileResult>& results, const std::vector<InputFile>& inputs,
                       const IngestOptions& options);
/// Whether any of `inputs` is of a format with a join.
bool joins_files(const std::vector<InputFile>& inputs);

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

/// read_input_files(), join_file_results() and merge_file_results(): the
/// finalized Run, one Device per input, in input order.
Run ingest_inputs(const std::vector<InputFile>& inputs, const IngestOptions& options);

}  // namespace pipescope
