#include "analyze/analyze.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "analyze/run_outputs.h"
#include "distributed/cluster.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "distributed/partitioned_summary.h"
#include "distributed/wire.h"
#include "export/atomic_file.h"
#include "export/html_report.h"
#include "export/kernel_trace.h"
#include "export/kernel_view_report.h"
#include "export/summary_json.h"
#include "export/trace_size.h"
#include "model/errors.h"

namespace pipescope {

namespace {

namespace fs = std::filesystem;

fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path result = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path) : result;
}

/// A step list parsed for the traces; a bad one is the user's error.
StepSelection parse_trace_steps(const std::string& steps, const Metrics& metrics,
                                const OptionWords& words) {
  try {
    return StepSelection::parse(steps, metrics, words.name(CallerOption::steps));
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

TraceLimits trace_limits() {
  try {
    return trace_limits_from_environment();
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

/// The trace formats wanted, in table order.
std::vector<TraceFormat> trace_formats(const OutputRequest& outputs) {
  std::vector<TraceFormat> formats;
  if (outputs.wants(Output::trace_json)) formats.push_back(TraceFormat::json);
  if (outputs.wants(Output::trace_perfetto)) formats.push_back(TraceFormat::perfetto);
  return formats;
}

Output output_of(TraceFormat format) {
  return format == TraceFormat::json ? Output::trace_json : Output::trace_perfetto;
}

/// The trace options both paths share (the pipeline to draw set by each).
TraceOptions trace_options(const AnalyzeRequest& request, const Metrics& metrics) {
  TraceOptions trace;
  trace.absolute_time = request.absolute_time;
  trace.flows = request.flows;
  trace.threads = request.threads;  // the writers format events on this many threads
  trace.steps = parse_trace_steps(request.steps, metrics, *request.words);
  return trace;
}

/// summary.json's "traces": what each planned trace holds.
std::vector<TraceFileFigures> planned_figures(const std::vector<TracePlan>& plans) {
  std::vector<TraceFileFigures> figures;
  for (const TracePlan& plan : plans) {
    if (plan.figures) figures.push_back(*plan.figures);
  }
  return figures;
}

/// Says so when trace.json came out too big for the viewers, and what to do.
void warn_if_trace_too_big(const fs::path& trace, const AnalyzeRequest& request, std::FILE* err) {
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(trace, ec);
  if (ec) return;
  const std::string advice = chrome_trace_size_advice(
      trace.string(), bytes, request.outputs.wants(Output::trace_perfetto), *request.words);
  if (!advice.empty()) fmt::print(err, "pipescope: warning: {}\n", advice);
}

/// "wrote A, B and C", after the table.
void print_written(const std::vector<std::string>& written, std::FILE* out) {
  std::string list;
  for (std::size_t i = 0; i < written.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == written.size() ? " and " : ", ") + written[i];
  }
  fmt::print(out, "\nwrote {}\n", list);
}

/// --strict's verdict (every rank has every input's counts): lines skipped
/// (exit 1), inputs that could not be read (--mpi: exit 2, the graver),
/// printed where `print`.
AnalyzeStatus strict_status(const Run& run, std::uint64_t unreadable, const AnalyzeRequest& request,
                            bool print, std::FILE* err) {
  if (!request.strict) return AnalyzeStatus::ok;
  const std::string& strict = request.words->name(CallerOption::strict);
  std::uint64_t malformed = 0;
  for (const InputStats& input : run.inputs) malformed += input.malformed + input.oversized;
  if (malformed > 0 && print) {
    fmt::print(err, "pipescope: {}: {} line{} skipped\n", strict, malformed,
               malformed == 1 ? " was" : "s were");
  }
  if (unreadable > 0 && print) {
    fmt::print(err, "pipescope: {}: {} input{} could not be read\n", strict, unreadable,
               unreadable == 1 ? "" : "s");
  }
  if (unreadable > 0) return AnalyzeStatus::inputs_unreadable;
  return malformed > 0 ? AnalyzeStatus::lines_skipped : AnalyzeStatus::ok;
}

/// The one sequence of `analyze`'s outputs, for one process and for every
/// rank of a partitioned run alike (run_outputs.h): the warnings, then every
/// check that can refuse the request, then each output in table order, then
/// --strict. `unreadable`: the inputs --mpi could not read.
AnalyzeStatus write_run_outputs(RunOutputs& run, const AnalyzeRequest& request,
                                AnalyzeStreams streams, std::uint64_t unreadable) {
  const bool root = run.root();
  const OutputRequest& outputs = request.outputs;
  const Metrics& metrics = run.metrics();
  if (root) {
    for (const Warning& warning : run.pipeline().warnings) {
      fmt::print(streams.err, "pipescope: warning: {}\n", warning.message);
    }
  }

  // Checked before anything is written.
  TraceOptions trace = trace_options(request, metrics);
  trace.pipeline = &run.pipeline();
  // What each trace holds: the whole run, unless --steps says otherwise or
  // it would be too big to open.
  const TraceLimits limits = trace_limits();
  std::vector<TracePlan> plans;
  for (const TraceFormat format : trace_formats(outputs)) {
    plans.push_back(run.plan_trace(trace, !request.steps.empty(), format, limits.of(format)));
  }
  if (root) {
    for (const std::string& note : trace_plan_notes(metrics, plans, *request.words)) {
      fmt::print(streams.err, "pipescope: {}\n", note);
    }
  }
  std::optional<HtmlOptions> html;
  if (outputs.wants(Output::html)) {
    html.emplace();
    html->title = request.title;
    html->pipeline = &run.pipeline();
    html->kernels = run.kernels();
    html->words = request.words;
    try {
      html->steps = choose_html_steps(metrics, request.html_steps, *request.words);
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
  }

  if (root) ensure_output_dir(outputs.dir.string());
  std::vector<std::string> written;  // every file written, in order, for the "wrote" line
  const std::string summary = outputs.file_of(Output::summary).string();
  run.write_summary(summary, planned_figures(plans), request.threads);
  written.push_back(summary);
  for (const TracePlan& plan : plans) {
    TraceOptions planned = trace;
    planned.steps = plan.steps;
    const fs::path path = outputs.file_of(output_of(plan.format));
    run.write_trace(planned, plan.format, path.string());
    // Unless the warning before writing said so already.
    if (root && plan.format == TraceFormat::json && !plan.whole_over_limit) {
      warn_if_trace_too_big(path, request, streams.err);
    }
    written.push_back(path.string());
  }
  if (html) {
    const fs::path parent = outputs.html_file.parent_path();
    if (!parent.empty()) ensure_output_dir(parent.string());
    run.write_html(*html, outputs.html_file.string());
    written.push_back(outputs.html_file.string());
  }
  if (root && outputs.wants(Output::text)) {
    run.write_text(streams.out, request.all_rows, request.words);
    print_written(written, streams.out);
  }
  return strict_status(run.run(), unreadable, request, root, streams.err);
}

/// PyTorch traces without job labels: no jobs, so no schedule, stages,
/// bubbles or critical path; the kernel view alone (summary.json `no_jobs`
/// says so).
AnalyzeStatus write_kernel_outputs(LoadedRun& loaded, const AnalyzeRequest& request,
                                   AnalyzeStreams streams) {
  const Run& run = loaded.run;
  const std::vector<Warning> warnings = kernel_run_warnings(loaded);
  for (const Warning& w : warnings) fmt::print(streams.err, "pipescope: warning: {}\n", w.message);
  const OutputRequest& outputs = request.outputs;
  ensure_output_dir(outputs.dir.string());
  const SummaryFigures figures = kernel_run_figures(run, loaded.metrics, loaded.kernels, warnings);
  const std::string summary = outputs.file_of(Output::summary).string();
  write_summary_json(figures, summary);
  std::string written = summary;
  if (outputs.wants(Output::trace_json)) {
    const std::string trace = outputs.file_of(Output::trace_json).string();
    write_kernel_trace(run.kernels, loaded.kernels, trace);
    written += " and " + trace;
  }
  if (outputs.wants(Output::text)) {
    write_kernel_view_text(loaded.kernels, streams.out, {request.all_rows, request.words.get()});
    fmt::print(streams.out, "\nwrote {}\n", written);
  }
  return AnalyzeStatus::ok;
}

/// No job anywhere: the run's diagnostics, and which message the caller
/// gives (profiler traces among the inputs, or only logs).
AnalyzeStatus no_jobs(const Run& run, std::FILE* err) {
  for (const Diagnostic& d : run.diagnostics) {
    fmt::print(err, "pipescope: {}: {}\n", d.location(), d.message);
  }
  const bool traces = std::any_of(run.inputs.begin(), run.inputs.end(),
                                  [](const InputStats& s) { return s.job_annotations; });
  return traces ? AnalyzeStatus::no_jobs_in_traces : AnalyzeStatus::no_job_lines;
}

/// The node folders that could not be listed, as the refusal lists them
/// (empty: none, or --allow-missing).
std::string unlisted_folders(const std::vector<distributed::ReadFailure>& failures,
                             const AnalyzeRequest& request) {
  std::string folders;
  if (request.allow_missing) return folders;
  for (const distributed::ReadFailure& f : failures) {
    if (f.folder) folders += fmt::format("\n  node {}: {}: {}", f.node, f.path, f.error);
  }
  return folders;
}

/// A node folder that could not be listed: its ranks are missing, an input
/// error as for a path that does not exist (the files a rank could not read
/// are refused by the load, as in a single process).
void refuse_unlisted_folders(const std::string& folders, const OptionWords& words) {
  if (folders.empty()) return;
  throw InputError(fmt::format("cannot list the {} folder of some nodes:{}\n{}",
                               words.name(CallerOption::local), folders,
                               words.advice(CallerOption::allow_missing_nodes)));
}

/// write_outputs, with the inputs --mpi could not read.
AnalyzeStatus write_loaded_outputs(LoadedRun& loaded, const AnalyzeRequest& request,
                                   AnalyzeStreams streams, std::uint64_t unreadable) {
  const Run& run = loaded.run;
  if (run.job_count() == 0 && loaded.kernels.available) {
    return write_kernel_outputs(loaded, request, streams);
  }
  if (run.job_count() == 0) return no_jobs(run, streams.err);
  const std::unique_ptr<RunOutputs> outputs =
      whole_run_outputs(loaded, request.outputs.draws_dependencies());
  return write_run_outputs(*outputs, request, streams, unreadable);
}

}  // namespace

void check_outputs_are_not_inputs(const OutputRequest& outputs,
                                  const std::vector<InputFile>& inputs) {
  for (const fs::path& output : outputs.files()) {
    const fs::path out = resolved(output);
    for (const InputFile& input : inputs) {
      if (out == resolved(input.path)) {
        throw InputError(fmt::format("output file {} is the input {}; inputs are never overwritten",
                                     output.string(), input.path));
      }
    }
  }
}

AnalyzeStatus write_outputs(LoadedRun& loaded, const AnalyzeRequest& request,
                            AnalyzeStreams streams) {
  return write_loaded_outputs(loaded, request, streams, 0);
}

AnalyzeStatus write_gathered_outputs(distributed::ClusterScan& scan, const AnalyzeRequest& request,
                                     const LoadOptions& load, AnalyzeStreams streams) {
  refuse_unlisted_folders(unlisted_folders(scan.failures, request), *request.words);
  adopt_event_library(scan.run, scan.inputs, load.ingest);
  LoadedRun loaded = load_run(std::move(scan.run), load);
  return write_loaded_outputs(loaded, request, streams, scan.failures.size());
}

AnalyzeStatus write_outputs_on_ranks(distributed::Exchange& exchange,
                                     distributed::PartitionedScan& scan,
                                     const AnalyzeRequest& request, const LoadOptions& load,
                                     AnalyzeStreams streams) {
  using namespace distributed;
  const bool root = exchange.rank() == 0;
  // What only rank 0 knows and every rank decides on: a node folder that
  // could not be listed, and whether events were looked for.
  bool looked_for_events = false;
  {
    ByteWriter w;
    if (root) {
      w.str(unlisted_folders(scan.failures, request));
      w.put(static_cast<std::uint8_t>(looks_for_log_events(scan.inputs)));
    }
    const std::string rank0_says = exchange.all_gather(w.take()).front();
    ByteReader r(rank0_says);
    refuse_unlisted_folders(r.str(), *request.words);
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
      if (!root) return AnalyzeStatus::no_jobs_said_by_rank0;
      LoadedRun loaded;
      loaded.run = std::move(local.run);
      return write_loaded_outputs(loaded, request, streams, 0);
    }
  }
  PartitionedAnalysis analysis = analyze_partitioned(exchange, local.run, load.pipeline);
  const SummaryJobFacts facts = gather_whole_run_facts(exchange, local, analysis, load.pipeline);
  std::uint64_t unreadable = 0;
  for (const InputStats& input : local.run.inputs) unreadable += input.error.empty() ? 0 : 1;
  const std::unique_ptr<RunOutputs> outputs =
      partitioned_run_outputs(exchange, local, analysis, facts);
  return write_run_outputs(*outputs, request, streams, unreadable);
}

}  // namespace pipescope
