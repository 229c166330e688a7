// `pipescope analyze PATH...`: discover worker logs, scan them, compute the
// metrics, write summary.json and trace.json, print the table.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "command.h"
#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "export/html_report.h"
#include "export/summary_json.h"
#include "export/text_report.h"
#include "progress.h"
#include "scan/log_scanner.h"
#include "source/discovery.h"

namespace pipescope::cli {

namespace {

namespace fs = std::filesystem;

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::string output_dir = "pipescope-out";
  std::string devices;
  unsigned threads = 0;
  std::size_t chunk_mib = 8;
  std::size_t max_line_kib = 1024;
  bool strict = false;
  bool absolute_time = false;
  bool no_trace = false;
  std::string html;        // --html FILE
  std::string html_steps;  // --html-steps LIST
  bool quiet = false;
  bool allow_output_in_input = false;
  // Pipeline analysis (README, "Explaining the bubbles").
  std::string stages;
  bool no_clock_fix = false;
  std::vector<std::string> clock_offsets;
  std::size_t top_bubbles = 10;
  bool flows = false;
};

/// True when `inner` is `outer` or lies below it.
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto o = outer.begin();
  auto i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path result = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path) : result;
}

/// Refuses an output folder inside an input folder: outputs must never mix
/// with (or overwrite) the logs they came from unless the user says so.
void check_output_location(const AnalyzeOptions& options) {
  const fs::path out = resolved(options.output_dir);
  for (const auto& input : options.paths) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) continue;
    if (is_within(out, resolved(input))) {
      throw InputError(fmt::format(
          "output folder {} is inside input folder {}; choose another with -o, or pass "
          "--allow-output-in-input",
          out.string(), input));
    }
  }
}

/// Refuses an output file that is one of the inputs (`--html logs/workerlog.0`,
/// `-o logs` with a summary.json given as input): an input is never
/// overwritten, whatever --allow-output-in-input says.
void check_outputs_are_not_inputs(const AnalyzeOptions& options,
                                  const std::vector<InputFile>& inputs) {
  std::vector<fs::path> outputs = {fs::path(options.output_dir) / "summary.json"};
  if (!options.no_trace) outputs.push_back(fs::path(options.output_dir) / "trace.json");
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

int run_analyze(const AnalyzeOptions& options) {
  if (!options.allow_output_in_input) check_output_location(options);
  PipelineOptions pipeline;
  pipeline.stages = options.stages;
  pipeline.top_bubbles = options.top_bubbles;
  pipeline.clock.fix = !options.no_clock_fix;
  for (const std::string& spec : options.clock_offsets) {
    pipeline.clock.imposed.push_back(parse_clock_offset(spec));  // throws: usage error
  }

  std::vector<InputFile> inputs = discover_inputs(options.paths);
  if (!options.devices.empty()) inputs = select_devices(inputs, parse_device_list(options.devices));
  check_outputs_are_not_inputs(options, inputs);

  ScanOptions scan;
  scan.threads = options.threads;
  scan.limits.chunk_bytes = options.chunk_mib << 20;
  scan.limits.max_line_bytes = options.max_line_kib << 10;
  ProgressLine progress(stderr);
  if (progress.enabled()) {
    scan.on_progress = [&progress](const ScanProgress& p) { progress.update(p); };
  }
  Run run = scan_worker_logs(inputs, scan);
  progress.finish();

  // Clock correction shifts machines' job times, so it runs before the
  // contract's metrics, which are then computed on corrected times.
  ClockReport clock = correct_run_clocks(run, pipeline);
  const Metrics metrics = compute_metrics(run);
  if (run.job_count() == 0) {
    for (const Diagnostic& d : run.diagnostics) {
      fmt::print(stderr, "pipescope: {}: {}\n", d.location(), d.message);
    }
    fmt::print(stderr,
               "pipescope: error: no job lines found in {} input file{} (looked for lines "
               "containing 'Profiler Info: Job'); nothing to analyse\n",
               inputs.size(), inputs.size() == 1 ? "" : "s");
    return kExitUsage;
  }

  const PipelineAnalysis analysis = analyze_pipeline(run, metrics, pipeline, std::move(clock));
  for (const QualityWarning& warning : analysis.warnings) {
    fmt::print(stderr, "pipescope: warning: {}\n", warning.message);
  }

  ensure_output_dir(options.output_dir);
  const fs::path out(options.output_dir);
  write_summary_json(run, metrics, analysis, (out / "summary.json").string());
  if (!options.no_trace) {
    TraceOptions trace;
    trace.absolute_time = options.absolute_time;
    trace.pipeline = &analysis;
    trace.flows = options.flows;
    write_chrome_trace(run, metrics, trace, (out / "trace.json").string());
  }
  if (!options.html.empty()) {
    HtmlOptions html;
    html.title = "pipescope:";
    for (const std::string& path : options.paths) html.title += " " + path;
    try {
      html.steps = choose_html_steps(metrics, options.html_steps);
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
    const fs::path parent = fs::path(options.html).parent_path();
    if (!parent.empty()) ensure_output_dir(parent.string());
    write_html_report(run, metrics, html, options.html);
  }

  if (!options.quiet) {
    ReportOptions report;
    report.pipeline = &analysis;
    write_text_report(run, metrics, stdout, report);
    fmt::print("\nwrote {}{}\n", (out / "summary.json").string(),
               options.no_trace ? "" : fmt::format(" and {}", (out / "trace.json").string()));
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
  cmd->add_option("paths", options->paths,
                  "Log folders (holding workerlog.N files, or machineK/ folders of them) or "
                  "individual log files")
      ->required();
  cmd->add_option("-o,--output", options->output_dir, "Output folder (created if missing)")
      ->capture_default_str();
  cmd->add_option("--devices", options->devices,
                  "Analyse only these global device indices, e.g. 0,2,3 or 0-3");
  cmd->add_option("-j,--threads", options->threads, "Worker threads (0 = one per core)")
      ->capture_default_str();
  cmd->add_flag("--strict", options->strict, "Exit with status 1 if any line was skipped");
  cmd->add_flag("--absolute-time", options->absolute_time,
                "Trace timestamps in epoch microseconds instead of relative to the first job");
  cmd->add_flag("--no-trace", options->no_trace, "Do not write trace.json");
  cmd->add_option("--html", options->html,
                  "Also write a self-contained HTML report (timeline, utilization, bubble chart) "
                  "to FILE");
  cmd->add_option("--html-steps", options->html_steps,
                  "Steps drawn in the HTML timeline, e.g. 5 or 3-4 (default: the median-duration "
                  "and the slowest step; at most 8)");
  cmd->add_flag("-q,--quiet", options->quiet, "Do not print the table");
  cmd->add_flag("--allow-output-in-input", options->allow_output_in_input,
                "Allow the output folder to be inside an input folder");
  cmd->add_option("--stages", options->stages,
                  "Pipeline stage map: tp=N (groups of N consecutive devices), a list such as\n"
                  "0-3,4-7 or 0+4,1+5 (one item per stage, global device indices), auto (guess\n"
                  "tensor-parallel peers), or device (one stage per device, the default)");
  cmd->add_flag("--no-clock-fix", options->no_clock_fix,
                "Do not correct clock skew between machines (violations are still counted)");
  cmd->add_option("--clock-offset", options->clock_offsets,
                  "Impose a machine's clock offset instead of estimating, e.g. machine1=+2.5ms\n"
                  "(units ns, us, ms, s; subtracted from that machine's times); repeatable");
  cmd->add_option("--top-bubbles", options->top_bubbles, "How many of the longest bubbles to list")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_flag("--flows", options->flows,
                "Draw flow arrows between dependent jobs in trace.json (can be many)");
  cmd->add_option("--chunk-mib", options->chunk_mib, "Read chunk size in MiB")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--max-line-kib", options->max_line_kib,
                  "Longest line kept, in KiB; longer lines are skipped and reported")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->callback([options, &status] { status = run_analyze(*options); });
}

}  // namespace pipescope::cli
