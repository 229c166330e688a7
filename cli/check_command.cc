// `pipescope check RUN --baseline BASE`: the CI regression gate. Loads both
// runs (logs, records or summary.json), compares per-step medians, evaluates
// the thresholds, prints a verdict and writes the markdown/JUnit reports.
// Exit status: 0 pass, 1 regression, 2 usage or input error, or runs that are
// not comparable (compare/check.h).
#include <fmt/core.h>

#include <memory>
#include <set>
#include <string>

#include "command.h"
#include "compare/check.h"
#include "compare/check_report.h"
#include "compare/run_loader.h"
#include "export/atomic_file.h"
#include "run_inputs.h"

namespace pipescope::cli {

namespace {

// The input options are analyze's (run_inputs.h), applied to both runs
// where they are inputs; a summary.json is taken as written.
struct CheckOptions : RunInputOptions {
  std::string current;
  std::string baseline;
  std::string max_bubble_ratio;
  std::string max_bubble_increase;
  std::string max_step_time_increase;
  std::string max_utilization_drop;
  std::vector<std::string> max_events;   // --max-events ID=N, repeatable
  std::vector<std::string> max_figures;  // --max-figure KEY=LIMIT, repeatable
  std::int64_t skip_steps = -1;
  std::string config;
  std::string markdown;
  std::string junit;
  bool quiet = false;
  bool allow_input_warnings = false;
};

int compare_runs(const CheckOptions& o);

/// On exit status 2 the reports asked for are still written, with the reason.
int run_check(const CheckOptions& o) {
  const auto write_error_reports = [&](const std::string& error) {
    try {
      if (!o.markdown.empty()) {
        write_file_atomically(o.markdown,
                              format_check_error_markdown(error, o.baseline, o.current));
      }
      if (!o.junit.empty()) {
        write_file_atomically(o.junit, format_check_error_junit(error, o.baseline, o.current));
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "pipescope: error: cannot write the report: {}\n", e.what());
    }
  };
  try {
    return compare_runs(o);
  } catch (const std::exception& e) {
    write_error_reports(e.what());
    throw;
  }
}

int compare_runs(const CheckOptions& o) {
  CheckThresholds t;
  if (!o.max_bubble_ratio.empty()) {
    t.max_bubble_ratio =
        parse_threshold(o.max_bubble_ratio, ThresholdScale::ratio, "--max-bubble-ratio");
  }
  if (!o.max_bubble_increase.empty()) {
    t.max_bubble_increase =
        parse_threshold(o.max_bubble_increase, ThresholdScale::points, "--max-bubble-increase");
  }
  if (!o.max_step_time_increase.empty()) {
    t.max_step_time_increase = parse_threshold(o.max_step_time_increase, ThresholdScale::relative,
                                               "--max-step-time-increase");
  }
  if (!o.max_utilization_drop.empty()) {
    t.max_utilization_drop =
        parse_threshold(o.max_utilization_drop, ThresholdScale::points, "--max-utilization-drop");
  }
  for (const std::string& spec : o.max_events) {
    t.max_events.push_back(parse_max_events(spec, "--max-events"));
  }
  for (const std::string& spec : o.max_figures) {
    t.max_figures.push_back(parse_max_figure(spec, "--max-figure"));
  }
  if (o.skip_steps >= 0) t.skip_steps = o.skip_steps;
  // Flags win over the config file, threshold by threshold.
  if (!o.config.empty()) t.fill_from(read_check_config(o.config));
  if (!t.any()) {
    throw InputError(
        "no threshold given: use --max-bubble-ratio, --max-bubble-increase, "
        "--max-step-time-increase, --max-utilization-drop, --max-events, --max-figure or --config "
        "(see pipescope check --help)");
  }

  const LoadOptions load = make_load_options(o);  // throws: usage error
  if (load.events.matcher) {
    // An ID the library does not know would pass silently: a usage error.
    std::set<std::string> ids, categories;
    for (const EventKind& kind : load.events.matcher->kinds()) {
      ids.insert(kind.id);
      categories.insert(kind.category);
    }
    for (const auto& [id, limit] : t.max_events) {
      if (ids.count(id) || categories.count(id)) continue;
      std::string known;
      for (const std::string& c : categories) known += (known.empty() ? "" : ", ") + c;
      throw InputError(fmt::format(
          "--max-events: '{}' is no event id or category of the library (categories: {}; ids: "
          "data/log_events.patterns, or your --patterns)",
          id, known));
    }
  }
  const RunFigures baseline = load_run_figures(o.baseline, load, o.devices);
  const RunFigures current = load_run_figures(o.current, load, o.devices);
  const OptionWords& words = *load.ingest.words;
  const CheckReport report = evaluate_check(baseline, current, t, o.allow_input_warnings, words);

  if (!o.markdown.empty()) write_file_atomically(o.markdown, format_check_markdown(report, words));
  if (!o.junit.empty()) write_file_atomically(o.junit, format_check_junit(report, words));
  const bool bad = report.refused() || report.regression();
  if (!o.quiet || bad) {
    std::fputs(format_check_verdict(report, words).c_str(), bad ? stderr : stdout);
  }
  if (report.refused()) return kExitUsage;
  return report.regression() ? kExitFailed : kExitOk;
}

}  // namespace

void register_check_command(CLI::App& app, int& status) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "CI regression gate: compare a run with a baseline on per-step medians and fail when a\n"
      "threshold is crossed. RUN and BASE are log folders, record files/folders or summary.json\n"
      "files. Thresholds are written 5% or 0.05 (2pp for points); a bare number above 1 is an\n"
      "error (it would mean over 100%).\n"
      "Runs whose inputs had a missing, unreadable or empty rank, or whose device, stage,\n"
      "micro-batch or chunk counts differ, are refused unless --allow-input-warnings.\n"
      "Exit status: 0 pass, 1 regression, 2 usage or input error, or runs refused.\n"
      "The input options (--devices, --stages, --job-pattern, ...) are analyze's and apply\n"
      "to both runs where they are logs, records or traces; a summary.json is read as written.\n\n"
      "Example:\n  pipescope check logs/ --baseline baseline/summary.json --max-bubble-increase 2% "
      "\\\n"
      "      --max-step-time-increase 5% --markdown summary.md --junit junit.xml");
  cmd->add_option("run", o->current, "The current run: log folder, record input or summary.json")
      ->required();
  cmd->add_option("-b,--baseline", o->baseline,
                  "The baseline run: log folder, record input or summary.json")
      ->required();
  cmd->add_option("--max-bubble-ratio", o->max_bubble_ratio,
                  "Ratio: fail when the current median bubble ratio exceeds this (25% or 0.25)");
  cmd->add_option("--max-bubble-increase", o->max_bubble_increase,
                  "Points: fail when the median bubble ratio grows by more than this many\n"
                  "percentage points over the baseline (2pp, 2% or 0.02)");
  cmd->add_option("--max-step-time-increase", o->max_step_time_increase,
                  "Relative: fail when the median step time grows by more than this share of\n"
                  "the baseline's (5% or 0.05; 150% for 1.5x)");
  cmd->add_option("--max-utilization-drop", o->max_utilization_drop,
                  "Points: fail when any device's median utilization drops by more than this\n"
                  "many percentage points (3pp, 3% or 0.03)");
  cmd->add_option("--max-events", o->max_events,
                  "ID=N: fail when the current run holds more than N log events of ID, an event\n"
                  "id of the library or a category (nccl=0, torch_cuda_oom=0; repeatable; see\n"
                  "the guide's \"Log events\")");
  cmd->add_option("--max-figure", o->max_figures,
                  "KEY=LIMIT: fail when a registered figure of the current run (summary.json's\n"
                  "\"figures\") is above LIMIT (repeatable)");
  cmd->add_option("--skip-steps", o->skip_steps,
                  "Warm-up steps left out of both runs: the first N complete steps of each\n"
                  "launch segment (default: 1 when both have more than 2 complete steps, else 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--config", o->config,
                  "JSON file with thresholds (max_bubble_ratio, max_bubble_increase, "
                  "max_step_time_increase, max_utilization_drop, max_events, skip_steps); flags\n"
                  "override it");
  cmd->add_option("--markdown", o->markdown, "Write a GitHub-flavoured markdown report to FILE");
  cmd->add_option("--junit", o->junit,
                  "Write a JUnit XML report (one testcase per threshold) to FILE");
  cmd->add_flag("-q,--quiet", o->quiet, "Print nothing when the check passes");
  cmd->add_flag("--allow-input-warnings", o->allow_input_warnings,
                "Compare runs even when their inputs had input warnings (unreadable_input,\n"
                "empty_input, rank_gap, uneven_ranks, short_device) or their device, stage,\n"
                "micro-batch or chunk counts differ (the reasons are still reported)");
  add_run_input_options(cmd, *o);
  cmd->callback([o, &status] { status = run_check(*o); });
}

}  // namespace pipescope::cli
