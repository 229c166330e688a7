// load_run_figures at LoadLevel::schedule: the contract's figures and the
// schedule of the summary.json `analyze` writes, under the stage map and the
// clock correction `analyze` used, with no detection of its own.
#include "compare/run_loader.h"

#include <gtest/gtest.h>

#include <string>

#include "simulate/log_writer.h"
#include "support/command_runner.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::shell_quote;
using testing::TempDir;

TEST(RunLoader, ScheduleLevelMatchesTheSummaryOfAnalyze) {
  // Two devices per stage, on two machines whose clocks are 2 ms apart: the
  // schedule is found only with the stage map tp=2, and the figures are the
  // corrected times'.
  TempDir dir;
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 6);
  config.steps = 3;
  config.machines = 2;
  config.devices_per_stage = 2;
  config.comm_jobs = true;
  config.machine_skew_ns = {0, 2'000'000};
  sim::LogWriterOptions logs;
  logs.dir = dir.path() / "logs";
  sim::write_simulated_logs(config, logs);
  const testing::CommandResult r =
      testing::run_cli("analyze -q --no-trace --stages tp=2 " + shell_quote(logs.dir.string()) +
                       " -o " + shell_quote(dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  const RunFigures summary = load_run_figures(dir / "out/summary.json");

  LoadOptions options;
  options.level = LoadLevel::schedule;
  options.pipeline.stages = parse_stage_spec("tp=2", "--stages");
  const RunFigures from_logs = load_run_figures(logs.dir.string(), options);
  ASSERT_TRUE(from_logs.schedule.has_value());
  ASSERT_TRUE(summary.schedule.has_value());
  EXPECT_EQ(from_logs.schedule->name, "1F1B");
  EXPECT_EQ(from_logs.schedule->stages, 4);
  EXPECT_TRUE(*from_logs.schedule == *summary.schedule);
  ASSERT_TRUE(summary.clock.has_value());
  EXPECT_TRUE(summary.clock->applied);

  // The contract's figures too; the level computes no other section.
  SummaryFigures want = summary;
  const auto drop = [](SummaryFigures& f, auto... section) { ((f.*section).reset(), ...); };
  want.replicas.clear();
  drop(want, &SummaryFigures::layout, &SummaryFigures::stages, &SummaryFigures::bubbles,
       &SummaryFigures::bottleneck, &SummaryFigures::critical_path, &SummaryFigures::clock,
       &SummaryFigures::warnings, &SummaryFigures::events);  // no event library given here
  const SummaryFigures got = from_logs;
  EXPECT_TRUE(got == want);
  EXPECT_EQ(got.steps.size(), want.steps.size());
  EXPECT_EQ(got.bubble_ratio, want.bubble_ratio);

  // What the level is for: another stage map detects another schedule, and
  // the times as logged give other step figures.
  LoadOptions by_device = options;
  by_device.pipeline.stages = parse_stage_spec("device", "--stages");
  const RunFigures one_stage_per_device = load_run_figures(logs.dir.string(), by_device);
  ASSERT_TRUE(one_stage_per_device.schedule.has_value());
  EXPECT_FALSE(*one_stage_per_device.schedule == *from_logs.schedule);
  LoadOptions as_logged = options;
  as_logged.level = LoadLevel::metrics;
  const RunFigures uncorrected = load_run_figures(logs.dir.string(), as_logged);
  EXPECT_FALSE(uncorrected.schedule.has_value());
  EXPECT_FALSE(uncorrected.steps == want.steps);
}

}  // namespace
}  // namespace pipescope
