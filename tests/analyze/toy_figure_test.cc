// A figure added by one registration, in this file and no other
// (export/figure_registry.h): the most jobs one device runs in one step. Its
// part is the most over the steps a part owns, and parts combine by max.
// Registered at run time, it is written to summary.json (and read back), listed
// in the text report and the HTML report, limited by `check` ("max_figures"
// in a config, `--max-figure KEY=LIMIT` on the command line), compared by `diff`,
// and computed by the in-process exchange of 3 ranks to the same value and the
// same summary.json bytes as in one process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compare/check.h"
#include "compare/diff.h"
#include "compare/run_figures.h"
#include "compare/run_loader.h"
#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "distributed/partitioned_summary.h"
#include "export/figure_registry.h"
#include "export/html_report.h"
#include "export/summary_json.h"
#include "export/summary_reader.h"
#include "export/text_report.h"
#include "ingest/run_merge.h"
#include "load/load_run.h"
#include "support/partitioned_ranks.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

constexpr std::string_view kKey = "max_jobs_per_device_step";
constexpr std::string_view kLabel = "most jobs of one device in one step";

// ---- the toy figure ------------------------------------------------------------

FigureSpec toy_about() {
  return {.key = std::string(kKey),
          .label = std::string(kLabel),
          .unit = FigureUnit::count,
          .threshold = true,
          .compared = true};
}

/// Each device's jobs of each step the part owns, counted; the most.
FigureRule<std::int64_t> toy_rule() {
  return {.compute =
              [](const FigureInput& in) {
                std::int64_t most = 0;
                for (std::size_t d = 0; d < in.run.devices.size(); ++d) {
                  std::vector<std::int64_t> per_step(in.metrics.steps.size(), 0);
                  for (std::size_t i = 0; i < in.run.devices[d].jobs.size(); ++i) {
                    const std::int32_t k = in.step_of(d, i);
                    if (k < 0 || !in.owns(d, i)) continue;
                    most = std::max(most, ++per_step[static_cast<std::size_t>(k)]);
                  }
                }
                return most;
              },
          .combine = [](std::int64_t& earlier,
                        const std::int64_t& later) { earlier = std::max(earlier, later); },
          .value = [](const std::int64_t& most) { return FigureNumber(most); }};
}

// ---- the runs --------------------------------------------------------------------

/// A simulated 1F1B run of 4 stages and `micro_batches` micro-batches, on
/// `machines` machines (two: the second 3 ms ahead, so the clocks are
/// corrected and the jobs travel twice under the exchange).
Run simulated(int micro_batches, int machines = 1) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, micro_batches);
  config.steps = 5;
  config.machines = machines;
  config.comm_jobs = true;
  if (machines == 2) config.machine_skew_ns = {0, 3'000'000};
  return testing::run_from_simulation(config);
}

/// The figure counted by hand: jobs by (device, step), the most.
std::int64_t counted(const LoadedRun& loaded) {
  std::map<std::pair<std::size_t, std::int32_t>, std::int64_t> jobs;
  for (std::size_t d = 0; d < loaded.metrics.job_step.size(); ++d) {
    for (const std::int32_t k : loaded.metrics.job_step[d]) ++jobs[{d, k}];
  }
  std::int64_t most = 0;
  for (const auto& [at, n] : jobs) most = std::max(most, n);
  return most;
}

LoadedRun loaded(const Run& run) {
  return load_run(merge_file_results(testing::files_of(run)), LoadOptions());
}

/// summary.json as `analyze` writes it in one process.
std::string single_summary(const LoadedRun& run, const std::string& path) {
  write_summary_json(run.run, run.metrics, run.pipeline, run.kernels, path);
  return testing::read_file(path);
}

/// summary.json by 3 ranks over the in-process exchange: the run's files
/// read round robin, loaded, analysed and written by parts.
std::string three_rank_summary(const Run& run, const std::string& path) {
  const std::vector<FileResult> files = testing::files_of(run);
  distributed::run_local_ranks<int>(3, [&](distributed::Exchange& exchange) {
    std::vector<FileResult> mine;
    std::vector<std::size_t> index;
    for (std::size_t f = 0; f < files.size(); ++f) {
      if (static_cast<int>(f % 3) != exchange.rank()) continue;
      mine.push_back(files[f]);
      index.push_back(f);
    }
    const LoadOptions options;
    distributed::LocalLoad load =
        distributed::load_partitioned(exchange, std::move(mine), index, files.size(), options);
    distributed::PartitionedAnalysis analysis =
        distributed::analyze_partitioned(exchange, load.run, options.pipeline);
    const SummaryJobFacts facts =
        distributed::gather_whole_run_facts(exchange, load, analysis, options.pipeline);
    distributed::write_partitioned_summary(exchange, load, analysis, facts, path);
    return 0;
  });
  return testing::read_file(path);
}

std::vector<NamedFigure> toy_value(std::int64_t n) { return {{std::string(kKey), n}}; }

// ---- the tests -------------------------------------------------------------------

TEST(ToyFigure, RegisteredRowIsInTheTableUntilItEnds) {
  const std::size_t built_in = figure_specs().size();
  TempDir dir;
  const LoadedRun run = loaded(simulated(6));
  {
    const FigureRegistration toy(toy_about(), toy_rule());
    EXPECT_EQ(figure_specs().size(), built_in + 1);
    ASSERT_NE(find_figure(kKey), nullptr);
    EXPECT_EQ(find_figure(kKey)->label, kLabel);
    EXPECT_THROW(FigureRegistration(toy_about(), toy_rule()), std::invalid_argument);
    EXPECT_NE(single_summary(run, dir / "with.json").find("\"figures\""), std::string::npos);
  }
  EXPECT_EQ(figure_specs().size(), built_in);
  EXPECT_EQ(find_figure(kKey), nullptr);
  // Without it, summary.json has no "figures" object: the outputs are as before.
  EXPECT_EQ(single_summary(run, dir / "without.json").find("\"figures\""), std::string::npos);
}

TEST(ToyFigure, SummaryJsonHoldsItAndReadsItBack) {
  const FigureRegistration toy(toy_about(), toy_rule());
  TempDir dir;
  const LoadedRun run = loaded(simulated(6));
  const std::int64_t expected = counted(run);
  ASSERT_GT(expected, 12);  // 6 forward and 6 backward jobs of a stage, and more
  const std::string text = single_summary(run, dir / "summary.json");
  EXPECT_NE(text.find("  \"figures\": {\n    \"" + std::string(kKey) +
                      "\": " + std::to_string(expected) + "\n  }\n}\n"),
            std::string::npos)
      << text.substr(text.size() - std::min<std::size_t>(text.size(), 400));
  EXPECT_EQ(read_summary_figures(dir / "summary.json").figures, toy_value(expected));
  // check and diff read a run's figures as summary.json has them.
  EXPECT_EQ(figures_from_run(run.run, run.metrics, run.pipeline, "logs").figures,
            toy_value(expected));
}

TEST(ToyFigure, TextReportListsIt) {
  const FigureRegistration toy(toy_about(), toy_rule());
  const LoadedRun run = loaded(simulated(6));
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ReportOptions report;
  report.pipeline = &run.pipeline;
  write_text_report(run.run, run.metrics, out, report);
  std::rewind(out);
  std::string text;
  for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out)) text.push_back(static_cast<char>(c));
  std::fclose(out);
  EXPECT_NE(text.find("\nFigures\n  " + std::string(kLabel) + ": " + std::to_string(counted(run)) +
                      "\n\n"),
            std::string::npos)
      << text;
}

TEST(ToyFigure, HtmlReportShowsIt) {
  const LoadedRun run = loaded(simulated(6));
  HtmlOptions options;
  options.pipeline = &run.pipeline;
  const std::string without = render_html_report(run.run, run.metrics, options);
  const FigureRegistration toy(toy_about(), toy_rule());
  const std::string html = render_html_report(run.run, run.metrics, options);
  const std::string line = "<div><dt>" + std::string(kLabel) + "</dt><dd id=\"fig-" +
                           std::string(kKey) + "\">" + std::to_string(counted(run)) +
                           "</dd></div>\n";
  const std::size_t at = html.find(line);
  ASSERT_NE(at, std::string::npos) << html.substr(0, 4000);
  // Without it the report is the one before: only its line was added.
  EXPECT_EQ(html.substr(0, at) + html.substr(at + line.size()), without);
}

TEST(ToyFigure, CheckPutsALimitOnIt) {
  const FigureRegistration toy(toy_about(), toy_rule());
  TempDir dir;
  const LoadedRun base_run = loaded(simulated(6));
  const LoadedRun current_run = loaded(simulated(8));
  const std::int64_t base_value = counted(base_run);
  const std::int64_t value = counted(current_run);
  ASSERT_GT(value, base_value);
  const RunFigures base = figures_from_run(base_run.run, base_run.metrics, base_run.pipeline, "a");
  const RunFigures current =
      figures_from_run(current_run.run, current_run.metrics, current_run.pipeline, "b");
  const auto check = [&](double limit) {
    CheckThresholds t;
    t.max_figures = {{std::string(kKey), limit}};
    return evaluate_check(base, current, t, /*allow_incomparable=*/true);
  };
  const CheckReport pass = check(static_cast<double>(value));
  EXPECT_FALSE(pass.regression());
  ASSERT_EQ(pass.thresholds.size(), 1u);
  EXPECT_EQ(pass.thresholds[0].detail,
            fmt::format("figure {}: {} <= limit {} (baseline {})", kKey, value, value, base_value));
  const CheckReport fail = check(static_cast<double>(value - 1));
  EXPECT_TRUE(fail.regression());
  // As --max-figure gives it on the command line.
  EXPECT_EQ(parse_max_figure(std::string(kKey) + "=" + std::to_string(value), "--max-figure"),
            std::make_pair(std::string(kKey), static_cast<double>(value)));

  // From a config file, on the summary read back.
  single_summary(current_run, dir / "summary.json");
  TempDir::write_to(dir / "check.json",
                    fmt::format("{{\"max_figures\": {{\"{}\": {}}}}}", kKey, value - 1));
  const CheckThresholds from_file = read_check_config(dir / "check.json");
  EXPECT_TRUE(
      evaluate_check(base, load_run_figures(dir / "summary.json"), from_file, true).regression());

  // A figure the run does not have is no pass.
  CheckThresholds unknown;
  unknown.max_figures = {{"no_such_figure", 1}};
  EXPECT_THROW(evaluate_check(base, current, unknown, true), InputError);
}

TEST(ToyFigure, DiffComparesIt) {
  const FigureRegistration toy(toy_about(), toy_rule());
  const LoadedRun a_run = loaded(simulated(6));
  const LoadedRun b_run = loaded(simulated(8));
  const RunFigures a = figures_from_run(a_run.run, a_run.metrics, a_run.pipeline, "a");
  const RunFigures b = figures_from_run(b_run.run, b_run.metrics, b_run.pipeline, "b");
  const std::int64_t x = counted(a_run);
  const std::int64_t y = counted(b_run);
  const std::string text = format_diff_text(a, b);
  EXPECT_NE(text.find(std::string(kKey)), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("{:+}", y - x)), std::string::npos) << text;
  const std::string json = format_diff_json(a, b);
  EXPECT_NE(json.find(fmt::format("{{\"metric\": \"{}\", \"a\": {}, \"b\": {}, \"delta\": {}}}",
                                  kKey, x, y, y - x)),
            std::string::npos)
      << json;
}

TEST(ToyFigure, ThreeRanksGiveTheSingleProcessValueAndBytes) {
  const FigureRegistration toy(toy_about(), toy_rule());
  TempDir dir;
  for (const int machines : {1, 2}) {
    const pipescope::Run run = simulated(8, machines);
    const LoadedRun single = loaded(run);
    const std::string expected = single_summary(single, dir / "single.json");
    const std::string parts = three_rank_summary(run, dir / "parts.json");
    EXPECT_TRUE(parts == expected) << machines << " machines\n--- 3 ranks ---\n"
                                   << parts.substr(0, 2000) << "\n--- one process ---\n"
                                   << expected.substr(0, 2000);
    EXPECT_EQ(read_summary_figures(dir / "parts.json").figures, toy_value(counted(single)));
  }
}

}  // namespace
}  // namespace pipescope
