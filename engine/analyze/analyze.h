// `analyze` past the reading: the outputs of a run, written once for one
// process and for the ranks of a partitioned (--mpi) run. The command line
// parses its options into an AnalyzeRequest and calls one of the two entry
// points below; the trace options, the plans of the traces, the list of
// files written and --strict are made here, once, for both.
//
// Usage (one process):
//   LoadedRun loaded = load_run(inputs, load);
//   AnalyzeStatus s = write_outputs(loaded, request, {stdout, stderr});
// Under --mpi every rank calls write_outputs_on_ranks alike (or rank 0
// write_gathered_outputs). All three run the one sequence of analyze.cc
// over a RunOutputs (run_outputs.h): the run in hand, or the ranks' parts.
//
// Guarantees: nothing is written before every check that can refuse the
// request (steps, HTML steps, trace limits) has passed; every file is
// written atomically (a temp file, then renamed); the warnings go to `err`
// as "pipescope: warning: ...", the table and the "wrote ..." line to `out`
// (unless the text output is not wanted).
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analyze/outputs.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "model/option_words.h"

namespace pipescope {

namespace distributed {
class Exchange;
struct ClusterScan;
struct PartitionedScan;
}  // namespace distributed

/// What `analyze` writes and how, in the engine's terms (the command line
/// parses its options into it once).
struct AnalyzeRequest {
  OutputRequest outputs;
  /// Traces: epoch microseconds rather than time from the first job.
  bool absolute_time = false;
  /// Traces: flow arrows between dependent jobs.
  bool flows = false;
  /// Traces: the steps they hold (a StepSelection list; empty: the plan's
  /// choice, the whole run unless it is too big to open).
  std::string steps;
  /// The HTML report: the steps it draws (empty: its default choice), and
  /// its title.
  std::string html_steps;
  std::string title;
  /// The table: every row of every table.
  bool all_rows = false;
  /// Fail (AnalyzeStatus::lines_skipped) when any line was skipped.
  bool strict = false;
  /// Partitioned runs: a node folder that could not be listed is left out
  /// rather than refused.
  bool allow_missing = false;
  /// Threads that format the traces (0: one per core).
  unsigned threads = 0;
  /// How the messages name the caller's options (model/option_words.h): the
  /// step lists, --strict, the trace size advice, the rows left out, the
  /// node folders. Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
};

/// How `analyze` ended, for the exit status.
enum class AnalyzeStatus {
  ok,
  /// --strict, and lines were skipped (exit 1).
  lines_skipped,
  /// --strict under --mpi, and inputs could not be read (exit 2).
  inputs_unreadable,
  /// No job in any input (exit 2); profiler traces among the inputs, or not
  /// (the message names what was looked for: the caller's words).
  no_jobs_in_traces,
  no_job_lines,
  /// No job in any input, under --mpi on a rank other than 0: rank 0 says
  /// so (exit 2).
  no_jobs_said_by_rank0,
};

struct AnalyzeStreams {
  std::FILE* out = stdout;
  std::FILE* err = stderr;
};

/// Throws InputError when an output file is one of the inputs: an input is
/// never overwritten.
void check_outputs_are_not_inputs(const OutputRequest& outputs,
                                  const std::vector<InputFile>& inputs);

/// Writes the outputs of a run loaded in one process (with --mpi's gathered
/// path: rank 0's whole run). May free the run's dependencies when no output
/// draws them. Throws InputError for a bad step list (before writing), and
/// std::system_error when a file cannot be written.
AnalyzeStatus write_outputs(LoadedRun& loaded, const AnalyzeRequest& request,
                            AnalyzeStreams streams);

/// `--mpi` with the jobs gathered on rank 0 (an output that needs the whole
/// run: OutputRequest::needs_whole_run()): rank 0 loads the gathered run and
/// writes as write_outputs does; a node folder that could not be listed is
/// refused unless request.allow_missing, and --strict fails (exit 2) when a
/// rank could not read an input. Throws as write_outputs and load_run do.
AnalyzeStatus write_gathered_outputs(distributed::ClusterScan& scan, const AnalyzeRequest& request,
                                     const LoadOptions& load, AnalyzeStreams streams);

/// The partitioned `--mpi` run (docs/guide.md, "Running on a cluster"):
/// every rank keeps the jobs it read; the load prelude and the analysis run
/// by step ranges over the ranks, each rank writes its steps' part of every
/// output and rank 0 joins them. Every rank calls it alike; the outputs and
/// the report are the single process's (only rank 0 prints), but for the
/// HTML report's interactive timeline, which embeds the drawn steps only
/// (distributed/partitioned_html.h). Needs no output that needs the whole
/// run (OutputRequest::needs_whole_run(): none does today).
AnalyzeStatus write_outputs_on_ranks(distributed::Exchange& exchange,
                                     distributed::PartitionedScan& scan,
                                     const AnalyzeRequest& request, const LoadOptions& load,
                                     AnalyzeStreams streams);

}  // namespace pipescope
