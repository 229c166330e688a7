// `analyze`'s options: declared on the command, checked, and turned into
// the engine's AnalyzeRequest once (the inputs' options into LoadOptions by
// run_inputs.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "analyze/analyze.h"
#include "run_inputs.h"

namespace pipescope::cli {

/// Every option of `analyze`, as given.
struct AnalyzeOptions : RunInputOptions {
  std::vector<std::string> paths;
  std::string output_dir = "pipescope-out";
  bool strict = false;
  bool absolute_time = false;
  bool no_trace = false;
  bool perfetto = false;   // --perfetto: trace.pftrace, also with --no-trace
  std::string html;        // --html FILE
  std::string html_steps;  // --html-steps LIST
  bool quiet = false;
  bool all_rows = false;  // --all-rows: every row of every table
  bool allow_output_in_input = false;
  std::size_t top_bubbles = 10;
  bool flows = false;
  std::string steps;  // --steps LIST: what goes into the traces
  // Distributed over MPI ranks (docs/guide.md, "Running on a cluster").
  bool mpi = false;
  std::string local;  // --local TEMPLATE: node-local folder, {node} = node index
  double mpi_timeout = 300;
  bool progress = false;  // --progress: draw the progress line even without a terminal
};

/// Declares the options on `cmd`, storing into `options` (which must outlive it).
void add_analyze_options(CLI::App* cmd, AnalyzeOptions& options);

/// Throws InputError for options that would have no effect together, and
/// (unless --allow-output-in-input) for outputs inside an input folder.
void check_analyze_options(const AnalyzeOptions& options);

/// The request the options describe, in the engine's terms.
AnalyzeRequest make_request(const AnalyzeOptions& options);

/// Prints the machines in the order used (their number in every output),
/// one line each with its folder, when there are several.
void print_machine_order(const std::vector<InputFile>& inputs);

}  // namespace pipescope::cli
