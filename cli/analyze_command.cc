// `pipescope analyze PATH...`: discover worker logs, scan them, compute the
// metrics, write summary.json and trace.json, print the table.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyze/analyze.h"
#include "command.h"
#include "distributed/cluster.h"
#include "ingest/ingest.h"
#include "ingest/input_formats.h"
#include "load/load_run.h"
#include "progress.h"
#include "run_inputs.h"

namespace pipescope::cli {

namespace {

namespace fs = std::filesystem;

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

/// The request the options describe, in the engine's terms.
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
  return request;
}

/// The exit status of an analysis, with the message that needs the
/// command's words (no jobs: what was looked for).
int exit_status(AnalyzeStatus status, std::size_t input_count, const AnalyzeOptions& options) {
  switch (status) {
    case AnalyzeStatus::ok:
      return kExitOk;
    case AnalyzeStatus::lines_skipped:
      return kExitFailed;
    case AnalyzeStatus::inputs_unreadable:
    case AnalyzeStatus::no_jobs_said_by_rank0:
      return kExitUsage;
    case AnalyzeStatus::no_jobs_in_traces:
      fmt::print(stderr,
                 "pipescope: error: no jobs found in {} input file{} (looked for {} and, in "
                 "profiler traces, for user annotations named 'PP:<action>'{}); nothing to "
                 "analyse\n",
                 input_count, input_count == 1 ? "" : "s", job_lines_looked_for(options),
                 options.job_pattern.empty() ? "" : " or matching --job-pattern");
      return kExitUsage;
    case AnalyzeStatus::no_job_lines:
      fmt::print(stderr,
                 "pipescope: error: no job lines found in {} input file{} (looked for {}); "
                 "nothing to analyse\n",
                 input_count, input_count == 1 ? "" : "s", job_lines_looked_for(options));
      return kExitUsage;
  }
  return kExitUsage;
}

int run_analyze_mpi(const AnalyzeOptions& options, const AnalyzeRequest& request,
                    const LoadOptions& load);

int run_analyze(const AnalyzeOptions& options) {
  check_option_combinations(options);
  if (!options.allow_output_in_input) check_output_location(options);
  const AnalyzeRequest request = make_request(options);
  LoadOptions load = make_load_options(options);
  load.pipeline.top_bubbles = options.top_bubbles;
  load.pipeline.keep_dependencies = request.outputs.draws_dependencies();
  if (options.mpi && !load.machine_order.empty()) {
    throw InputError("--machine-order is not available with --mpi yet: rename the folders");
  }
  if (options.mpi) return run_analyze_mpi(options, request, load);
  if (!options.local.empty()) throw InputError("--local needs --mpi");

  const std::vector<InputFile> inputs =
      find_inputs(options.paths, options.devices, &load.discovery_notes, load.machine_order);
  check_outputs_are_not_inputs(request.outputs, inputs);
  if (!options.quiet) print_machine_order(inputs);
  ProgressLine progress(stderr, options.progress);
  if (progress.enabled()) {
    load.ingest.on_progress = [&progress](const IngestProgress& p) { progress.update(p); };
  }
  LoadedRun loaded = load_run(inputs, load);
  progress.finish();
  return exit_status(write_outputs(loaded, request, {stdout, stderr}), inputs.size(), options);
}

/// `--mpi`: discovery and scan spread over the MPI ranks (engine/distributed);
/// the analysis by step ranges (write_outputs_on_ranks), or, for what needs the
/// whole run on one node (the HTML report), rank 0 analyses and writes as
/// above; every rank exits with its status.
int run_analyze_mpi(const AnalyzeOptions& options, const AnalyzeRequest& request,
                    const LoadOptions& load) {
  if (options.local.empty() == options.paths.empty()) {
    throw InputError("--mpi needs input paths or --local TEMPLATE (one of the two)");
  }
  distributed::ClusterOptions cluster;
  cluster.paths = options.paths;
  cluster.local_template = options.local;
  cluster.devices = options.devices;
  cluster.scan = load.ingest;
  cluster.timeout_s = options.mpi_timeout;
  ProgressLine progress(stderr, options.progress);
  distributed::ClusterCallbacks callbacks;
  callbacks.on_plan = [&](const std::vector<InputFile>& inputs) {
    for (const InputFile& input : inputs) {
      // Their pipelines are chosen over all files at once, which the ranks' shares are not.
      const InputFormatSpec& format = input_format_spec(input.format);
      if (format.reads_files_together) {
        throw InputError(fmt::format("{}: --mpi does not read {}; analyse them without --mpi",
                                     input.path, format.name));
      }
    }
    check_outputs_are_not_inputs(request.outputs, inputs);
    if (!options.quiet) print_machine_order(inputs);
  };
  if (progress.enabled()) {
    callbacks.on_progress = [&](const IngestProgress& p) { progress.update(p); };
  }
  callbacks.on_result = [&](distributed::ClusterScan& scan) {
    progress.finish();
    // A node folder that could not be listed: its ranks are missing, an
    // input error as for a path that does not exist (the files a rank could
    // not read are refused by load_run, as in a single process).
    if (!options.allow_missing) {
      std::string folders;
      for (const distributed::ReadFailure& f : scan.failures) {
        if (f.folder) folders += fmt::format("\n  node {}: {}: {}", f.node, f.path, f.error);
      }
      if (!folders.empty()) {
        throw InputError(fmt::format(
            "cannot list the --local folder of some nodes:{}\npass --allow-missing to leave their "
            "devices out of the figures",
            folders));
      }
    }
    adopt_event_library(scan.run, scan.inputs, load.ingest);
    LoadedRun loaded = load_run(std::move(scan.run), load);
    const int status =
        exit_status(write_outputs(loaded, request, {stdout, stderr}), scan.inputs.size(), options);
    if (options.strict && !scan.failures.empty()) {
      fmt::print(stderr, "pipescope: --strict: {} input{} could not be read\n",
                 scan.failures.size(), scan.failures.size() == 1 ? "" : "s");
      return static_cast<int>(kExitUsage);
    }
    return status;
  };
  if (!request.outputs.needs_whole_run()) {
    callbacks.on_partitioned = [&](distributed::Exchange& exchange,
                                   distributed::PartitionedScan& scan) {
      if (exchange.rank() == 0) progress.finish();
      return exit_status(write_outputs_on_ranks(exchange, scan, request, load, {stdout, stderr}),
                         scan.file_count, options);
    };
    // As main() reports an error, before the ranks exit together.
    callbacks.on_error = [](const std::exception& e) {
      std::fflush(stdout);
      fmt::print(stderr, "pipescope: error: {}\n", e.what());
      std::fflush(stderr);
    };
  }
  return distributed::run_on_cluster(cluster, callbacks, kExitUsage);
}

}  // namespace

void register_analyze_command(CLI::App& app, int& status) {
  auto options = std::make_shared<AnalyzeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "analyze",
      "Analyse worker logs: per-device busy/idle time, step windows, bubble ratio.\n"
      "Writes summary.json and trace.json (Chrome/Perfetto) to the output folder and\n"
      "prints a table.\n\n"
      "Example:\n  pipescope analyze logs/ -o out/\n  pipescope analyze logs/machine0 "
      "logs/machine1 --devices 0-3 --no-trace");
  cmd->alias("analyse");
  cmd->add_option("paths", options->paths,
                  "Log folders (holding workerlog.N files, or machineK/ folders of them) or "
                  "individual log files (none with --local)");
  cmd->add_option("-o,--output", options->output_dir, "Output folder (created if missing)")
      ->capture_default_str();
  cmd->add_flag("--strict", options->strict, "Exit with status 1 if any line was skipped");
  cmd->add_flag("--absolute-time", options->absolute_time,
                "Trace timestamps in epoch microseconds instead of relative to the first job");
  cmd->add_flag("--no-trace", options->no_trace, "Do not write trace.json");
  cmd->add_flag("--perfetto", options->perfetto,
                "Also write trace.pftrace (native Perfetto protobuf, ~1/3 the size of\n"
                "trace.json); written even with --no-trace");
  cmd->add_option("--html", options->html,
                  "Also write a self-contained HTML report (timeline, utilization, bubble chart) "
                  "to FILE");
  cmd->add_option("--html-steps", options->html_steps,
                  "Steps drawn in the HTML timeline, e.g. 5, 3-4 or 1:12 (default: the\n"
                  "median-duration and the slowest complete step; at most 8)");
  cmd->add_flag("-q,--quiet", options->quiet, "Do not print the table");
  cmd->add_flag("--all-rows", options->all_rows,
                "Print every row of every table (by default a table of more than 64 rows shows\n"
                "its first 16, its last 8 and the rows beyond 3 MADs of their column)");
  cmd->add_flag("--allow-output-in-input", options->allow_output_in_input,
                "Allow the output folder to be inside an input folder");
  cmd->add_option("--top-bubbles", options->top_bubbles, "How many of the longest bubbles to list")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option(
      "--steps", options->steps,
      "Only these steps in trace.json / trace.pftrace, e.g. 10-20 or 3,5,7-9, or all;\n"
      "SEG:STEP (1:12, 0:10-12) names a step of one launch segment, a plain number the\n"
      "last segment that has it (the summary and the table always cover the whole run).\n"
      "Without it, where the whole run's trace would be too big to open (over 256 MiB\n"
      "of JSON, 512 MiB of protobuf), it holds the median and the slowest complete step\n"
      "with a step on each side");
  cmd->add_flag("--flows", options->flows,
                "Draw flow arrows between dependent jobs in trace.json (can be many)");
  cmd->add_flag("--mpi", options->mpi,
                "Spread the scan and the analysis over the MPI ranks (run under mpirun or srun):\n"
                "each rank analyses a range of steps; rank 0 writes the outputs");
  cmd->add_option("--local", options->local,
                  "With --mpi: logs on node-local disks; each node reads TEMPLATE with {node}\n"
                  "replaced by its node index, e.g. /local/logs/machine{node}");
  cmd->add_option("--mpi-timeout", options->mpi_timeout,
                  "With --mpi: seconds a rank may stay silent before the run is aborted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--progress", options->progress,
                "Draw the progress line even when stderr is not a terminal (mpirun never gives\n"
                "ranks one)");
  add_run_input_options(cmd, *options);
  cmd->callback([options, &status] { status = run_analyze(*options); });
}

}  // namespace pipescope::cli
