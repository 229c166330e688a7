// `pipescope analyze PATH...`: discover worker logs, scan them, compute the
// metrics, write summary.json and trace.json, print the table.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analyze/analyze.h"
#include "analyze_options.h"
#include "command.h"
#include "distributed/cluster.h"
#include "ingest/ingest.h"
#include "ingest/input_formats.h"
#include "load/load_run.h"
#include "progress.h"
#include "run_inputs.h"

namespace pipescope::cli {

namespace {

/// The exit status of an analysis, with the message that needs the
/// command's words (no jobs: what was looked for).
int exit_status(AnalyzeStatus status, std::size_t input_count, const LoadOptions& load) {
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
                 input_count, input_count == 1 ? "" : "s",
                 job_lines_looked_for(load.ingest, *load.ingest.words),
                 load.ingest.job_pattern ? " or matching --job-pattern" : "");
      return kExitUsage;
    case AnalyzeStatus::no_job_lines:
      fmt::print(stderr,
                 "pipescope: error: no job lines found in {} input file{} (looked for {}); "
                 "nothing to analyse\n",
                 input_count, input_count == 1 ? "" : "s",
                 job_lines_looked_for(load.ingest, *load.ingest.words));
      return kExitUsage;
  }
  return kExitUsage;
}

int run_analyze_mpi(const AnalyzeOptions& options, const AnalyzeRequest& request,
                    const LoadOptions& load);

int run_analyze(const AnalyzeOptions& options) {
  check_analyze_options(options);
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
      find_inputs(options.paths, options.devices, &load.discovery_notes, load.machine_order,
                  *load.ingest.words);
  check_outputs_are_not_inputs(request.outputs, inputs);
  if (!options.quiet) print_machine_order(inputs);
  ProgressLine progress(stderr, options.progress);
  if (progress.enabled()) {
    load.ingest.on_progress = [&progress](const IngestProgress& p) { progress.update(p); };
  }
  LoadedRun loaded = load_run(inputs, load);
  progress.finish();
  return exit_status(write_outputs(loaded, request, {stdout, stderr}), inputs.size(), load);
}

/// `--mpi`: discovery and scan spread over the MPI ranks (engine/distributed);
/// the analysis by step ranges (write_outputs_on_ranks), or, for an output
/// that needs the whole run on one node (none today: the HTML report is
/// written from the drawn steps' jobs), rank 0 analyses and writes as above;
/// every rank exits with its status.
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
      // Their pipelines are chosen over all files at once while they are
      // read, which the ranks' shares are not (a format that decides over
      // every file only once each is read has a join instead: rank 0 joins).
      const InputFormatSpec& format = input_format_spec(input.format);
      if (format.reads_files_together) {
        throw InputError(fmt::format(
            "{}: --mpi does not read {}: their reader chooses the pipeline over every file at "
            "once, and each MPI rank reads only its share; analyse them without --mpi",
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
    return exit_status(write_gathered_outputs(scan, request, load, {stdout, stderr}),
                       scan.inputs.size(), load);
  };
  if (!request.outputs.needs_whole_run()) {
    callbacks.on_partitioned = [&](distributed::Exchange& exchange,
                                   distributed::PartitionedScan& scan) {
      if (exchange.rank() == 0) progress.finish();
      return exit_status(write_outputs_on_ranks(exchange, scan, request, load, {stdout, stderr}),
                         scan.file_count, load);
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
  add_analyze_options(cmd, *options);
  cmd->callback([options, &status] { status = run_analyze(*options); });
}

}  // namespace pipescope::cli
