// `pipescope whatif` end to end: a jitter-free simulated 1F1B run through the
// CLI, the sweep and one scenario, whatif.json and whatif-trace.json, and the
// usage errors of scenarios a schedule does not run; and the model error on
// logs of the test's own pipeline model (support/pipeline_model.h).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "analysis/schedule_table.h"
#include "support/command_runner.h"
#include "support/pipeline_model.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::run_cli;
using testing::shell_quote;

std::string simulated_1f1b(const testing::TempDir& dir) {
  const std::string run = dir / "run";
  const CommandResult r = run_cli("simulate -o " + shell_quote(run) +
                                  " --schedule 1f1b --stages 4 --micro-batches 8 --steps 3 "
                                  "--jitter 0");
  EXPECT_EQ(r.status, 0) << r.output;
  return run;
}

TEST(WhatifCli, SweepRanksTheScenariosAndWritesWhatifJson) {
  testing::TempDir dir;
  const std::string run = simulated_1f1b(dir);
  const CommandResult r = run_cli("whatif " + shell_quote(run) + " -o " + shell_quote(dir / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("measured: 1f1b, P=4 M=8 V=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("in flight"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "o/whatif-trace.json"));

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(dir / "o/whatif.json").get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["schema"]), "pipescope.whatif/1");
  EXPECT_EQ(std::string_view(doc["measured"]["schedule"]), "1f1b");
  EXPECT_EQ(int64_t(doc["measured"]["stages"]), 4);
  EXPECT_EQ(int64_t(doc["measured"]["micro_batches"]), 8);
  EXPECT_EQ(int64_t(doc["measured"]["chunks"]), 1);
  const double measured_step = double(doc["measured"]["step_ns"]);
  // The simulator's own figure for its (identical) steps.
  simdjson::dom::parser expected_parser;
  simdjson::dom::element expected;
  ASSERT_EQ(expected_parser.load(run + "/expected.json").get(expected), simdjson::SUCCESS);
  EXPECT_DOUBLE_EQ(measured_step,
                   double(int64_t(simdjson::dom::array(expected["steps"]).at(1)["duration_ns"])));
  double previous = 0;
  bool found_self = false;
  std::size_t count = 0;
  for (simdjson::dom::element s : simdjson::dom::array(doc["scenarios"])) {
    ++count;
    const double step = double(s["step_ns"]);
    EXPECT_GE(step, previous);  // ranked by predicted step time
    previous = step;
    EXPECT_EQ(int64_t(s["stages"]), 4);
    EXPECT_EQ(simdjson::dom::array(s["in_flight_max"]).size(), 4u);
    EXPECT_EQ(simdjson::dom::array(s["costs"]["forward_ns"]).size(), 4u);
    EXPECT_DOUBLE_EQ(double(s["step_ns_per_micro_batch"]),
                     step / double(int64_t(s["micro_batches"])));
    if (std::string_view(s["schedule"]) == "1f1b" && int64_t(s["micro_batches"]) == 8) {
      found_self = true;
      EXPECT_NEAR(step / measured_step, 1.0, 0.01);
      EXPECT_NEAR(double(s["step_change"]), 0.0, 0.01);
    }
  }
  EXPECT_TRUE(found_self);
  EXPECT_GT(count, 20u);
}

TEST(WhatifCli, OneScenarioWritesItsPredictedTimeline) {
  testing::TempDir dir;
  const std::string run = simulated_1f1b(dir);
  const CommandResult r =
      run_cli("whatif " + shell_quote(run) + " --schedule zbh1 --micro-batches 16 -o " +
              shell_quote(dir / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("costs used:"), std::string::npos) << r.output;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(dir / "o/whatif.json").get(doc), simdjson::SUCCESS);
  simdjson::dom::array scenarios = doc["scenarios"];
  ASSERT_EQ(scenarios.size(), 1u);
  simdjson::dom::element s = scenarios.at(0);
  EXPECT_EQ(std::string_view(s["schedule"]), "zbh1");
  EXPECT_EQ(int64_t(s["micro_batches"]), 16);
  EXPECT_EQ(int64_t(s["chunks"]), 1);
  // The default weight share splits the measured 22 ms backward in halves.
  EXPECT_DOUBLE_EQ(double(simdjson::dom::array(s["costs"]["backward_ns"]).at(0)), 11e6);
  EXPECT_DOUBLE_EQ(double(simdjson::dom::array(s["costs"]["weight_ns"]).at(0)), 11e6);

  simdjson::dom::parser trace_parser;
  simdjson::dom::element trace;
  ASSERT_EQ(trace_parser.load(dir / "o/whatif-trace.json").get(trace), simdjson::SUCCESS);
  std::size_t weight_jobs = 0;
  for (simdjson::dom::element event : simdjson::dom::array(trace["traceEvents"])) {
    if (std::string_view(event["ph"]) == "X" &&
        std::string_view(event["name"]).starts_with("backward_w")) {
      ++weight_jobs;
    }
  }
  // Paddle's ZBH1 splits some backwards: every W of its lists, in as many
  // replayed steps as the run has complete steps (3).
  std::size_t weight_ops = 0;
  for (int stage = 0; stage < 4; ++stage) {
    const auto list = schedule_job_list(ScheduleId::paddle_zbh1, 4, 16, 1, stage);
    ASSERT_TRUE(list);
    for (const ScheduleStep& op : *list) weight_ops += op.role == PipelineRole::weight ? 1 : 0;
  }
  EXPECT_GT(weight_ops, 0u);
  EXPECT_EQ(weight_jobs, weight_ops * 3);
}

// The run of the whatif fidelity issue, written as Paddle logs by the test's own
// pipeline model (not the simulator): the command measures 0.2 and 0.5 ms of
// latency, a 20 us launch overhead, and a model error it trusts.
TEST(WhatifCli, ReportsTheModelErrorOnARunItDidNotWrite) {
  testing::ModelConfig c;
  c.schedule = ScheduleId::paddle_1f1b;
  c.stages = 4;
  c.micro_batches = 8;
  c.forward_ns = {7'600'000, 7'900'000, 8'100'000, 8'400'000};
  for (std::int64_t f : c.forward_ns) c.backward_ns.push_back(2 * f);
  c.optimizer_ns.assign(4, 3'000'000);
  c.machines = 2;
  c.latency_same_ns = 200'000;
  c.latency_cross_ns = 500'000;
  c.host_gap_ns = {0, 1'500'000, 3'000'000};
  c.launch_overhead_ns = 20'000;
  for (const bool stalled : {false, true}) {
    SCOPED_TRACE(stalled ? "a host stall on stage 2" : "the model's run");
    testing::TempDir dir;
    testing::ModelConfig run_config = c;
    if (stalled) run_config.stall_ns = 6'000'000, run_config.stall_rank = 2;
    const testing::ModelRun model = testing::run_model(run_config);
    testing::write_model_logs(model, dir / "logs");
    const CommandResult r =
        run_cli("whatif " + shell_quote(dir / "logs") + " -o " + shell_quote(dir / "o"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("latency: same machine 0.200 ms"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("predictions are not to be trusted") != std::string::npos, stalled)
        << r.output;

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.load(dir / "o/whatif.json").get(doc), simdjson::SUCCESS);
    simdjson::dom::element e = doc["model_error"];
    EXPECT_TRUE(bool(e["available"]));
    EXPECT_EQ(bool(e["trusted"]), !stalled);
    EXPECT_DOUBLE_EQ(double(e["measured_step_ns"]), model.step_ns);
    EXPECT_DOUBLE_EQ(double(doc["measured"]["step_ns"]), model.step_ns);
    EXPECT_NEAR(double(e["measured_bubble_ratio"]), model.bubble_ratio, 1e-9);
    EXPECT_EQ(simdjson::dom::array(e["replayed_idle_ns"]).size(), 4u);
    if (!stalled) {
      EXPECT_NEAR(double(e["step_error"]), 0, 0.01);
      EXPECT_NEAR(double(e["bubble_error"]), 0, 0.005);
      EXPECT_DOUBLE_EQ(double(doc["model"]["latency_same_machine_ns"]), 200'000);
      EXPECT_DOUBLE_EQ(double(doc["model"]["latency_cross_machine_ns"]), 500'000);
      EXPECT_DOUBLE_EQ(double(doc["model"]["launch_overhead_ns"]), 20'000);
      EXPECT_EQ(simdjson::dom::array(doc["warnings"]).size(), 0u);
    } else {
      EXPECT_LT(double(e["step_error"]), -0.03);
      simdjson::dom::array warnings = doc["warnings"];
      ASSERT_EQ(warnings.size(), 1u);
      EXPECT_EQ(std::string_view(warnings.at(0)["code"]), "whatif_model_error");
    }
    // Jitter-free: no spread on any scenario.
    for (simdjson::dom::element s : simdjson::dom::array(doc["scenarios"])) {
      EXPECT_EQ(double(s["step_p10_ns"]), double(s["step_p90_ns"]));
    }
  }
}

TEST(WhatifCli, ScenariosASchedulerDoesNotRunAreUsageErrors) {
  testing::TempDir dir;
  const std::string run = simulated_1f1b(dir);
  CommandResult r = run_cli("whatif " + shell_quote(run) + " --schedule vpp --micro-batches 6");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--schedule vpp --micro-batches 6 --chunks 2: vpp (PaddlePaddle static "
                          "VPP) does not run P=4, M=6, V=2: it needs M a multiple of P"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("with P=4, V=2 it runs M = 4, 8, 12"), std::string::npos) << r.output;

  r = run_cli("whatif " + shell_quote(run) + " --schedule 1f1b --chunks 2");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("1f1b runs one model chunk per stage, so V must be 1 (got V=2); the "
                          "schedules that take V > 1 are vpp"),
            std::string::npos)
      << r.output;

  r = run_cli("whatif " + shell_quote(run) + " --schedule nosuch");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--schedule nosuch: unknown schedule; known: fthenb, 1f1b"),
            std::string::npos)
      << r.output;

  r = run_cli("whatif " + shell_quote(run) + " --weight-share 1.5");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--weight-share must be between 0 and 1 (exclusive), got 1.5"),
            std::string::npos)
      << r.output;
}

TEST(WhatifCli, RefusesAnOutputFolderInsideTheLogs) {
  testing::TempDir dir;
  const std::string run = simulated_1f1b(dir);
  const CommandResult r = run_cli("whatif " + shell_quote(run) + " -o " + shell_quote(run + "/o"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("is inside input folder"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(run + "/o"));
}

}  // namespace
}  // namespace pipescope
