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

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "command.h"
#include "distributed/cluster.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "distributed/partitioned_summary.h"
#include "distributed/partitioned_traces.h"
#include "distributed/wire.h"
#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "export/html_report.h"
#include "export/kernel_trace.h"
#include "export/kernel_view_report.h"
#include "export/perfetto_trace.h"
#include "export/summary_json.h"
#include "export/text_report.h"
#include "export/trace_size.h"
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

/// Whether an output draws the dependencies (4 bytes per job of a consumer
/// device): the traces and the HTML report. Without one, they are freed as
/// soon as the analysis is done with them.
bool outputs_draw_dependencies(const AnalyzeOptions& options) {
  return !options.no_trace || options.perfetto || !options.html.empty();
}

/// Refuses an output file that is one of the inputs (`--html logs/workerlog.0`,
/// `-o logs` with a summary.json given as input): an input is never
/// overwritten, whatever --allow-output-in-input says.
void check_outputs_are_not_inputs(const AnalyzeOptions& options,
                                  const std::vector<InputFile>& inputs) {
  std::vector<fs::path> outputs = {fs::path(options.output_dir) / "summary.json"};
  if (!options.no_trace) outputs.push_back(fs::path(options.output_dir) / "trace.json");
  if (options.perfetto) outputs.push_back(fs::path(options.output_dir) / "trace.pftrace");
  if (!options.html.empty()) outputs.push_back(options.html);
  for (const fs::path& output : outputs) {
    const fs::path out = resolved(output);
    for (const InputFile& input : inputs) {
      if (out == resolved(input.path)) {
        throw InputError(fmt::format("output file {} is the input {}; inputs are never overwritten",
                                     output.string(), input.path));
      }
    }
  }
}

/// What each trace to write holds (export/trace_size.h): decided before
/// anything is written, so that summary.json can say so.
std::vector<TracePlan> plan_traces(const Run& run, const Metrics& metrics,
                                   const TraceOptions& trace, const AnalyzeOptions& options) {
  TraceLimits limits;
  try {
    limits = trace_limits_from_environment();
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  const bool steps_given = !options.steps.empty();
  std::vector<TracePlan> plans;
  for (const TraceFormat format : {TraceFormat::json, TraceFormat::perfetto}) {
    if (format == TraceFormat::json ? options.no_trace : !options.perfetto) continue;
    plans.push_back(plan_trace(run, metrics, trace, steps_given, format, limits.of(format)));
  }
  return plans;
}

/// Says so when trace.json came out too big for the viewers, and what to do.
void warn_if_trace_too_big(const fs::path& trace, const AnalyzeOptions& options) {
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(trace, ec);
  if (ec) return;
  const std::string advice = chrome_trace_size_advice(trace.string(), bytes, options.perfetto);
  if (!advice.empty()) fmt::print(stderr, "pipescope: warning: {}\n", advice);
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

int analyze_loaded(LoadedRun& loaded, std::size_t input_count, const AnalyzeOptions& options);

/// PyTorch traces without job labels: no jobs, so no schedule, stages,
/// bubbles or critical path; the kernel view alone (summary.json `no_jobs`
/// says so), exit 0.
int analyze_kernels(LoadedRun& loaded, const AnalyzeOptions& options) {
  const Run& run = loaded.run;
  const std::vector<Warning> warnings = kernel_run_warnings(loaded);
  for (const Warning& w : warnings) fmt::print(stderr, "pipescope: warning: {}\n", w.message);
  ensure_output_dir(options.output_dir);
  const fs::path out(options.output_dir);
  const SummaryFigures figures = kernel_run_figures(run, loaded.metrics, loaded.kernels, warnings);
  write_summary_json(figures, (out / "summary.json").string());
  std::string written = (out / "summary.json").string();
  if (!options.no_trace) {
    write_kernel_trace(run.kernels, loaded.kernels, (out / "trace.json").string());
    written += " and " + (out / "trace.json").string();
  }
  if (!options.quiet) {
    write_kernel_view_text(loaded.kernels, stdout, options.all_rows);
    fmt::print("\nwrote {}\n", written);
  }
  return kExitOk;
}
int run_analyze_mpi(const AnalyzeOptions& options, const LoadOptions& load);

int run_analyze(const AnalyzeOptions& options) {
  check_option_combinations(options);
  if (!options.allow_output_in_input) check_output_location(options);
  LoadOptions load = make_load_options(options);
  load.pipeline.top_bubbles = options.top_bubbles;
  load.pipeline.keep_dependencies = outputs_draw_dependencies(options);
  if (options.mpi && !load.machine_order.empty()) {
    throw InputError("--machine-order is not available with --mpi yet: rename the folders");
  }
  if (options.mpi) return run_analyze_mpi(options, load);
  if (!options.local.empty()) throw InputError("--local needs --mpi");

  const std::vector<InputFile> inputs =
      find_inputs(options.paths, options.devices, &load.discovery_notes, load.machine_order);
  check_outputs_are_not_inputs(options, inputs);
  if (!options.quiet) print_machine_order(inputs);
  ProgressLine progress(stderr, options.progress);
  if (progress.enabled()) {
    load.ingest.on_progress = [&progress](const IngestProgress& p) { progress.update(p); };
  }
  LoadedRun loaded = load_run(inputs, load);
  progress.finish();
  return analyze_loaded(loaded, inputs.size(), options);
}

/// The exports of a loaded run (with --mpi: rank 0's part).
int analyze_loaded(LoadedRun& loaded, std::size_t input_count, const AnalyzeOptions& options) {
  const Run& run = loaded.run;
  if (run.job_count() == 0 && loaded.kernels.available) return analyze_kernels(loaded, options);
  if (run.job_count() == 0) {
    for (const Diagnostic& d : run.diagnostics) {
      fmt::print(stderr, "pipescope: {}: {}\n", d.location(), d.message);
    }
    const bool traces = std::any_of(run.inputs.begin(), run.inputs.end(), [](const InputStats& s) {
      const auto format = format_by_name(fs::path(s.path).filename().string());
      return (format && input_format_spec(*format).takes_job_pattern) ||
             s.path.ends_with(".json") || s.path.ends_with(".json.gz");
    });
    if (traces) {
      fmt::print(stderr,
                 "pipescope: error: no jobs found in {} input file{} (looked for {} and, in "
                 "profiler traces, for user annotations named 'PP:<action>'{}); nothing to "
                 "analyse\n",
                 input_count, input_count == 1 ? "" : "s", job_lines_looked_for(options),
                 options.job_pattern.empty() ? "" : " or matching --job-pattern");
      return kExitUsage;
    }
    fmt::print(stderr,
               "pipescope: error: no job lines found in {} input file{} (looked for {}); "
               "nothing to analyse\n",
               input_count, input_count == 1 ? "" : "s", job_lines_looked_for(options));
    return kExitUsage;
  }
  // Freed before the summary's figures are built when nothing draws them
  // (a run the analysis kept them for: --mpi's rank 0).
  if (!outputs_draw_dependencies(options)) {
    loaded.pipeline.dependencies = Dependencies();
  }
  const Metrics& metrics = loaded.metrics;
  const PipelineAnalysis& analysis = loaded.pipeline;
  for (const Warning& warning : analysis.warnings) {
    fmt::print(stderr, "pipescope: warning: {}\n", warning.message);
  }

  // Checked before anything is written.
  TraceOptions trace;
  trace.absolute_time = options.absolute_time;
  trace.pipeline = &analysis;
  trace.flows = options.flows;
  trace.threads = options.threads;  // -j: the writers format events on this many threads
  try {
    trace.steps = StepSelection::parse(options.steps, metrics, "--steps");
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  // What each trace holds: the whole run, unless --steps says otherwise or
  // it would be too big to open.
  const std::vector<TracePlan> plans = plan_traces(run, metrics, trace, options);
  std::vector<TraceFileFigures> held;  // summary.json "traces"
  for (const TracePlan& plan : plans) {
    if (plan.figures) held.push_back(*plan.figures);
  }
  for (const std::string& note : trace_plan_notes(metrics, plans)) {
    fmt::print(stderr, "pipescope: {}\n", note);
  }

  ensure_output_dir(options.output_dir);
  const fs::path out(options.output_dir);
  std::vector<std::string> written;  // every file written, in order, for the "wrote" line
  write_summary_json(run, metrics, analysis, loaded.kernels, (out / "summary.json").string(), held,
                     options.threads);
  written.push_back((out / "summary.json").string());
  for (const TracePlan& plan : plans) {
    TraceOptions planned = trace;
    planned.steps = plan.steps;
    const fs::path path = out / std::string(trace_file_name(plan.format));
    if (plan.format == TraceFormat::json) {
      write_chrome_trace(run, metrics, planned, path.string());
      // Unless the warning before writing said so already.
      if (!plan.whole_over_limit) warn_if_trace_too_big(path, options);
    } else {
      write_perfetto_trace(run, metrics, planned, path.string());
    }
    written.push_back(path.string());
  }
  if (!options.html.empty()) {
    HtmlOptions html;
    html.title = "pipescope:";
    html.pipeline = &analysis;
    if (loaded.kernels.available) html.kernels = &loaded.kernels;
    for (const std::string& path : options.paths) html.title += " " + path;
    try {
      html.steps = choose_html_steps(metrics, options.html_steps);
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
    const fs::path parent = fs::path(options.html).parent_path();
    if (!parent.empty()) ensure_output_dir(parent.string());
    write_html_report(run, metrics, html, options.html);
    written.push_back(options.html);
  }

  if (!options.quiet) {
    ReportOptions report;
    report.pipeline = &analysis;
    report.all_rows = options.all_rows;
    write_text_report(run, metrics, stdout, report);
    if (loaded.kernels.available) {
      fmt::print("\n");
      write_kernel_view_text(loaded.kernels, stdout, options.all_rows);
    }
    std::string list;
    for (std::size_t i = 0; i < written.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == written.size() ? " and " : ", ") + written[i];
    }
    fmt::print("\nwrote {}\n", list);
  }

  std::uint64_t malformed = 0;
  for (const InputStats& input : run.inputs) malformed += input.malformed + input.oversized;
  if (options.strict && malformed > 0) {
    fmt::print(stderr, "pipescope: --strict: {} line{} skipped\n", malformed,
               malformed == 1 ? " was" : "s were");
    return kExitFailed;
  }
  return kExitOk;
}

/// `--mpi`, partitioned (docs/guide.md, "Running on a cluster"): every rank
/// keeps the jobs it read; the load prelude and the analysis run by step
/// ranges over the ranks (engine/distributed), each rank writes its steps'
/// part of every output and rank 0 joins them. Every rank calls it alike;
/// the outputs and the report are the single process's.
int analyze_on_ranks(distributed::Exchange& exchange, distributed::PartitionedScan& scan,
                     const AnalyzeOptions& options, const LoadOptions& load) {
  using namespace distributed;
  const bool root = exchange.rank() == 0;
  // What only rank 0 knows and every rank decides on: a node folder that
  // could not be listed, and whether events were looked for.
  bool looked_for_events = false;
  {
    ByteWriter w;
    if (root) {
      std::string folders;
      if (!options.allow_missing) {
        for (const ReadFailure& f : scan.failures) {
          if (f.folder) folders += fmt::format("\n  node {}: {}: {}", f.node, f.path, f.error);
        }
      }
      w.str(folders);
      w.put(static_cast<std::uint8_t>(looks_for_log_events(scan.inputs)));
    }
    const std::string verdict = exchange.all_gather(w.take()).front();
    ByteReader r(verdict);
    const std::string folders = r.str();
    if (!folders.empty()) {
      throw InputError(fmt::format(
          "cannot list the --local folder of some nodes:{}\npass --allow-missing to leave their "
          "devices out of the figures",
          folders));
    }
    looked_for_events = r.get<std::uint8_t>() != 0;
  }
  LocalLoad local =
      load_partitioned(exchange, std::move(scan.files), scan.global_index, scan.file_count, load);
  adopt_event_library(local.run, looked_for_events, load.ingest);
  // No job anywhere: the single process's messages, from rank 0.
  {
    ByteWriter w;
    w.put(static_cast<std::uint64_t>(local.run.job_count()));
    std::uint64_t jobs = 0;
    for (const std::string& theirs : exchange.all_gather(w.take())) {
      ByteReader r(theirs);
      jobs += r.get<std::uint64_t>();
    }
    if (jobs == 0) {
      if (!root) return kExitUsage;
      LoadedRun loaded;
      loaded.run = std::move(local.run);
      return analyze_loaded(loaded, scan.file_count, options);
    }
  }
  PartitionedAnalysis analysis = analyze_partitioned(exchange, local.run, load.pipeline);

  TraceOptions trace;
  trace.absolute_time = options.absolute_time;
  // Set, as the single process sets it: the partitioned writers draw the
  // pipeline (bubbles, counters, flows) from `analysis` and read no more.
  const PipelineAnalysis drawn;
  trace.pipeline = &drawn;
  trace.flows = options.flows;
  trace.threads = options.threads;
  try {
    trace.steps = StepSelection::parse(options.steps, analysis.metrics, "--steps");
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  TraceLimits limits;
  try {
    limits = trace_limits_from_environment();
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  std::vector<TracePlan> plans;
  for (const TraceFormat format : {TraceFormat::json, TraceFormat::perfetto}) {
    if (format == TraceFormat::json ? options.no_trace : !options.perfetto) continue;
    plans.push_back(plan_partitioned_trace(exchange, local.run, analysis, trace,
                                           !options.steps.empty(), format, limits.of(format)));
  }
  std::vector<TraceFileFigures> held;  // summary.json "traces"
  for (const TracePlan& plan : plans) {
    if (plan.figures) held.push_back(*plan.figures);
  }

  const fs::path out(options.output_dir);
  if (root) {
    ensure_output_dir(options.output_dir);
    for (const std::string& note : trace_plan_notes(analysis.metrics, plans)) {
      fmt::print(stderr, "pipescope: {}\n", note);
    }
  }
  std::vector<std::string> written;
  const WholeRunFigures whole = write_partitioned_summary(exchange, local, analysis, load.pipeline,
                                                          (out / "summary.json").string(), held);
  written.push_back((out / "summary.json").string());
  if (root) {
    for (const Warning& warning : whole.pipeline.warnings) {
      fmt::print(stderr, "pipescope: warning: {}\n", warning.message);
    }
  }
  for (const TracePlan& plan : plans) {
    TraceOptions planned = trace;
    planned.steps = plan.steps;
    const fs::path path = out / std::string(trace_file_name(plan.format));
    write_partitioned_trace(exchange, local.run, analysis, planned, plan.format, path.string());
    if (root && plan.format == TraceFormat::json && !plan.whole_over_limit) {
      warn_if_trace_too_big(path, options);
    }
    written.push_back(path.string());
  }
  if (root && !options.quiet) {
    ReportOptions report;
    report.pipeline = &whole.pipeline;
    report.facts = &whole.facts;
    report.all_rows = options.all_rows;
    write_text_report(local.run, analysis.metrics, stdout, report);
    std::string list;
    for (std::size_t i = 0; i < written.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == written.size() ? " and " : ", ") + written[i];
    }
    fmt::print("\nwrote {}\n", list);
  }
  // --strict: lines skipped anywhere (every rank has every input's counts),
  // then inputs that could not be read (as with the jobs gathered).
  std::uint64_t malformed = 0, unreadable = 0;
  for (const InputStats& input : local.run.inputs) {
    malformed += input.malformed + input.oversized;
    unreadable += input.error.empty() ? 0 : 1;
  }
  if (options.strict && malformed > 0) {
    if (root) {
      fmt::print(stderr, "pipescope: --strict: {} line{} skipped\n", malformed,
                 malformed == 1 ? " was" : "s were");
    }
    return kExitFailed;
  }
  if (options.strict && unreadable > 0) {
    if (root) {
      fmt::print(stderr, "pipescope: --strict: {} input{} could not be read\n", unreadable,
                 unreadable == 1 ? "" : "s");
    }
    return static_cast<int>(kExitUsage);
  }
  return kExitOk;
}

/// `--mpi`: discovery and scan spread over the MPI ranks (engine/distributed);
/// the analysis by step ranges (analyze_on_ranks), or, for what needs the
/// whole run on one node (the HTML report), rank 0 analyses and writes as
/// above; every rank exits with its status.
int run_analyze_mpi(const AnalyzeOptions& options, const LoadOptions& load) {
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
    check_outputs_are_not_inputs(options, inputs);
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
    const int status = analyze_loaded(loaded, scan.inputs.size(), options);
    if (options.strict && !scan.failures.empty()) {
      fmt::print(stderr, "pipescope: --strict: {} input{} could not be read\n",
                 scan.failures.size(), scan.failures.size() == 1 ? "" : "s");
      return static_cast<int>(kExitUsage);
    }
    return status;
  };
  if (options.html.empty()) {
    callbacks.on_partitioned = [&](distributed::Exchange& exchange,
                                   distributed::PartitionedScan& scan) {
      if (exchange.rank() == 0) progress.finish();
      return analyze_on_ranks(exchange, scan, options, load);
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
