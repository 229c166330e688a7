#include "analyze_options.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "model/errors.h"
#include "option_words.h"

namespace pipescope::cli {

namespace fs = std::filesystem;

namespace {

/// Refuses an output folder inside an input folder: outputs must never mix
/// with (or overwrite) the logs they came from unless the user says so.
void check_output_location(const AnalyzeOptions& options) {
  refuse_output_inside_inputs(options.output_dir, options.paths,
                              ", or pass --allow-output-in-input");
  for (const auto& input : options.paths) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) continue;
    if (!options.html.empty() && is_within(resolved(options.html), resolved(input))) {
      throw InputError(
          fmt::format("--html {} is inside input folder {}; write the report elsewhere, or pass "
                      "--allow-output-in-input",
                      options.html, input));
    }
  }
}

/// Options that would have no effect in this combination are usage errors
/// that say why, rather than silently doing nothing.
void check_option_combinations(const AnalyzeOptions& options) {
  if (!options.html_steps.empty() && options.html.empty()) {
    throw InputError(
        "--html-steps chooses the steps drawn in the HTML report: give --html FILE too");
  }
  if (!options.steps.empty() && options.no_trace && !options.perfetto) {
    throw InputError(
        "--steps chooses the steps in trace.json and trace.pftrace, and --no-trace without "
        "--perfetto writes neither: drop --steps, or add --perfetto");
  }
}

}  // namespace

void add_analyze_options(CLI::App* cmd, AnalyzeOptions& o) {
  cmd->add_option("paths", o.paths,
                  "Log folders (holding workerlog.N files, or machineK/ folders of them) or "
                  "individual log files (none with --local)");
  cmd->add_option("-o,--output", o.output_dir, "Output folder (created if missing)")
      ->capture_default_str();
  cmd->add_flag("--strict", o.strict, "Exit with status 1 if any line was skipped");
  cmd->add_flag("--absolute-time", o.absolute_time,
                "Trace timestamps in epoch microseconds instead of relative to the first job");
  cmd->add_flag("--no-trace", o.no_trace, "Do not write trace.json");
  cmd->add_flag("--perfetto", o.perfetto,
                "Also write trace.pftrace (native Perfetto protobuf, ~1/3 the size of\n"
                "trace.json); written even with --no-trace");
  cmd->add_option("--html", o.html,
                  "Also write a self-contained HTML report (timeline, utilization, bubble chart) "
                  "to FILE");
  cmd->add_option("--html-steps", o.html_steps,
                  "Steps drawn in the HTML timeline, e.g. 5, 3-4 or 1:12 (default: the\n"
                  "median-duration and the slowest complete step; at most 8)");
  cmd->add_flag("-q,--quiet", o.quiet, "Do not print the table");
  cmd->add_flag("--all-rows", o.all_rows,
                "Print every row of every table (by default a table of more than 64 rows shows\n"
                "its first 16, its last 8 and the rows beyond 3 MADs of their column)");
  cmd->add_flag("--allow-output-in-input", o.allow_output_in_input,
                "Allow the output folder to be inside an input folder");
  cmd->add_option("--top-bubbles", o.top_bubbles, "How many of the longest bubbles to list")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option(
      "--steps", o.steps,
      "Only these steps in trace.json / trace.pftrace, e.g. 10-20 or 3,5,7-9, or all;\n"
      "SEG:STEP (1:12, 0:10-12) names a step of one launch segment, a plain number the\n"
      "last segment that has it (the summary and the table always cover the whole run).\n"
      "Without it, where the whole run's trace would be too big to open (over 256 MiB\n"
      "of JSON, 512 MiB of protobuf), it holds the median and the slowest complete step\n"
      "with a step on each side");
  cmd->add_flag("--flows", o.flows,
                "Draw flow arrows between dependent jobs in trace.json (can be many)");
  cmd->add_flag("--mpi", o.mpi,
                "Spread the scan and the analysis over the MPI ranks (run under mpirun or srun):\n"
                "each rank analyses a range of steps; rank 0 writes the outputs");
  cmd->add_option("--local", o.local,
                  "With --mpi: logs on node-local disks; each node reads TEMPLATE with {node}\n"
                  "replaced by its node index, e.g. /local/logs/machine{node}");
  cmd->add_option("--mpi-timeout", o.mpi_timeout,
                  "With --mpi: seconds a rank may stay silent before the run is aborted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--progress", o.progress,
                "Draw the progress line even when stderr is not a terminal (mpirun never gives\n"
                "ranks one)");
  add_run_input_options(cmd, o);
}

void check_analyze_options(const AnalyzeOptions& options) {
  check_option_combinations(options);
  if (!options.allow_output_in_input) check_output_location(options);
}

AnalyzeRequest make_request(const AnalyzeOptions& options) {
  AnalyzeRequest request;
  request.outputs.dir = options.output_dir;
  request.outputs.set(Output::trace_json, !options.no_trace);
  request.outputs.set(Output::trace_perfetto, options.perfetto);
  request.outputs.set(Output::html, !options.html.empty());
  request.outputs.html_file = options.html;
  request.outputs.set(Output::text, !options.quiet);
  request.absolute_time = options.absolute_time;
  request.flows = options.flows;
  request.steps = options.steps;
  request.html_steps = options.html_steps;
  request.title = "pipescope:";
  for (const std::string& path : options.paths) request.title += " " + path;
  request.all_rows = options.all_rows;
  request.strict = options.strict;
  request.allow_missing = options.allow_missing;
  request.threads = options.threads;
  request.words = command_line_words(options.max_line_kib);
  return request;
}

/// Prints the machines in the order used (their number in every output), one
/// line each with its folder, when there are several: the order comes from
/// the folders' names, not from the order of the arguments.
void print_machine_order(const std::vector<InputFile>& inputs) {
  std::vector<std::size_t> first_of;  // index of each machine's first input
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i == 0 || inputs[i].machine != inputs[i - 1].machine) first_of.push_back(i);
  }
  if (first_of.size() < 2) return;
  for (std::size_t m = 0; m < first_of.size(); ++m) {
    const std::size_t begin = first_of[m];
    const std::size_t end = m + 1 < first_of.size() ? first_of[m + 1] : inputs.size();
    std::vector<std::string> folders;
    for (std::size_t i = begin; i < end; ++i) {
      std::string folder = fs::path(inputs[i].path).parent_path().string();
      if (folder.empty()) folder = ".";
      if (std::find(folders.begin(), folders.end(), folder) == folders.end()) {
        folders.push_back(std::move(folder));
      }
    }
    std::string where;
    for (const std::string& folder : folders) where += (where.empty() ? "" : ", ") + folder;
    const int first = inputs[begin].device, last = inputs[end - 1].device;
    fmt::print(stderr, "pipescope: machine {}: {} ({} file{}, device{} {})\n",
               inputs[begin].machine, where, end - begin, end - begin == 1 ? "" : "s",
               first == last ? "" : "s",
               first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last));
  }
}

}  // namespace pipescope::cli
