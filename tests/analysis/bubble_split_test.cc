// Inherent versus excess idle time (analysis/bubble_split.h), the comm time
// of the contract (communication is not compute) and the explanation built
// from them (analysis/explanation.h).
#include "analysis/bubble_split.h"

#include <gtest/gtest.h>

#include <string>

#include "analysis/explanation.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "support/hand_run.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

using testing::add_job;

AnalyzedRun analyzed(pipescope::Run& run) { return analyze_run(run, PipelineOptions{}); }

// inherent + excess = idle per device and step, overall; never negative.
void expect_consistent(const AnalyzedRun& a) {
  const BubbleSplit& split = a.pipeline.split;
  ASSERT_TRUE(split.known);
  std::int64_t idle = 0;
  for (std::size_t k = 0; k < a.metrics.steps.size(); ++k) {
    if (!a.metrics.steps[k].complete) continue;
    for (std::size_t d = 0; d < a.metrics.steps[k].devices.size(); ++d) {
      const std::int64_t measured = a.metrics.steps[k].devices[d].idle_ns;
      EXPECT_GE(split.inherent[k][d], 0);
      EXPECT_LE(split.inherent[k][d], measured);
      idle += measured;
    }
  }
  EXPECT_EQ(split.inherent_ns + split.excess_ns, idle);
  EXPECT_GE(split.excess_ns, 0);
}

// The case: a perfectly balanced 1F1B run without communication
// latency. Its idle time is all the schedule's own: no excess, no imbalance
// sentence, no bottleneck.
TEST(BubbleSplit, BalancedOneFOneBHasNoExcess) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 8, 16);
  config.jitter = 0;
  config.p2p_latency_ns = 0;
  config.steps = 3;
  pipescope::Run run = testing::run_from_simulation(config);
  const AnalyzedRun a = analyzed(run);
  expect_consistent(a);
  std::int64_t idle = 0;
  for (const DeviceTotals& d : a.metrics.devices) idle += d.idle_ns;
  ASSERT_GT(idle, 0);
  EXPECT_LE(a.pipeline.split.excess_ns, idle / 100) << "excess at most 1% of the idle time";
  const std::string& why = a.pipeline.explanation;
  EXPECT_NE(why.find("points inherent to 1F1B with P=8, M=16"), std::string::npos) << why;
  EXPECT_NE(why.find("within noise"), std::string::npos) << why;
  EXPECT_EQ(why.find("waiting on"), std::string::npos) << why;
  EXPECT_EQ(why.find("balanced (slowest"), std::string::npos) << why;
  EXPECT_FALSE(has_bottleneck(a.pipeline.bottleneck));
}

// One stage 1.5x slower: the excess is beyond noise and named after it.
TEST(BubbleSplit, SlowStageExcessNamesThatStage) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.stage_slowdown = {1, 1, 1.5, 1};
  config.steps = 3;
  pipescope::Run run = testing::run_from_simulation(config);
  const AnalyzedRun a = analyzed(run);
  expect_consistent(a);
  EXPECT_TRUE(has_bottleneck(a.pipeline.bottleneck));
  EXPECT_EQ(a.pipeline.bottleneck.slowest_stage, 2);
  EXPECT_TRUE(excess_beyond_noise(a.pipeline.split, a.metrics, run.devices.size()));
  const std::string& why = a.pipeline.explanation;
  EXPECT_NE(why.find("points excess, mostly waiting on stage 2, which computes"), std::string::npos)
      << why;
}

// An order that no framework's list matches: said so, no inherent figure.
TEST(BubbleSplit, UnknownScheduleSaysSoAndHasNoSplit) {
  pipescope::Run run;
  // Two devices, one step each: a backward before a forward on device 0 (no
  // framework's list, and not all forwards first).
  add_job(run, 0, "backward", 0, 0, 20);
  add_job(run, 0, "forward", 1, 20, 30);
  add_job(run, 0, "optimizer", 0, 30, 35);
  add_job(run, 1, "forward", 1, 0, 10);
  add_job(run, 1, "backward", 0, 10, 30);
  add_job(run, 1, "optimizer", 0, 30, 35);
  run.finalize();
  const AnalyzedRun a = analyzed(run);
  EXPECT_FALSE(a.pipeline.split.known);
  const std::string& why = a.pipeline.explanation;
  EXPECT_NE(why.find("cannot be told"), std::string::npos) << why;
  EXPECT_EQ(why.find("inherent"), std::string::npos) << why;
}

// Comm jobs are idle time: busy is every other job; comm(d,k) is the time
// inside comm jobs that no other job overlaps. Times in ns:
//   device 0: F [0,10), send_forward [10,14), recv_backward [14,30), B [30,50),
//             optimizer [50,55)
//   device 1: recv_forward [0,14) (waits for device 0's F), F [14,24),
//             B [24,40) with send_backward [38,42) overlapping its end by 2,
//             optimizer [42,47)
// Window [0,55). Device 0: busy 10 + 20 + 5 = 35, idle 20, comm 4 + 16 = 20.
// Device 1: busy 10 + 16 + 5 = 31, idle 24, comm 14 + (42 − 40) = 16.
TEST(CommTime, CommJobsAreIdleTimeNotBusy) {
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "send_forward", 0, 10, 14);
  add_job(run, 0, "recv_backward", 0, 14, 30);
  add_job(run, 0, "backward", 0, 30, 50);
  add_job(run, 0, "optimizer", 0, 50, 55);
  add_job(run, 1, "recv_forward", 0, 0, 14);
  add_job(run, 1, "forward", 0, 14, 24);
  add_job(run, 1, "backward", 0, 24, 40);
  add_job(run, 1, "send_backward", 0, 38, 42);
  add_job(run, 1, "optimizer", 0, 42, 47);
  run.finalize();
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 1u);
  EXPECT_EQ(m.steps[0].start_ns, 0);
  EXPECT_EQ(m.steps[0].end_ns, 55);
  EXPECT_EQ(m.steps[0].devices[0].busy_ns, 35);
  EXPECT_EQ(m.steps[0].devices[0].idle_ns, 20);
  EXPECT_EQ(m.steps[0].devices[0].comm_ns, 20);
  EXPECT_EQ(m.steps[0].devices[1].busy_ns, 31);
  EXPECT_EQ(m.steps[0].devices[1].idle_ns, 24);
  EXPECT_EQ(m.steps[0].devices[1].comm_ns, 16);
  EXPECT_EQ(m.devices[1].comm_ns, 16);
  EXPECT_EQ(m.comm_ns, 36);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 44.0 / 110.0);

  // By the stage waited for: device 0's send_forward (4) and recv_backward
  // (16) wait for stage 1; device 1's recv_forward (14) and the 2 ns of its
  // send_backward that no compute overlaps wait for stage 0.
  const AnalyzedRun a = analyzed(run);
  ASSERT_EQ(a.pipeline.split.receive_wait_ns.size(), 2u);
  EXPECT_EQ(a.pipeline.split.receive_wait_ns[1], 16);
  EXPECT_EQ(a.pipeline.split.send_wait_ns[1], 4);
  EXPECT_EQ(a.pipeline.split.receive_wait_ns[0], 14);
  EXPECT_EQ(a.pipeline.split.send_wait_ns[0], 2);
  // 36 of 110: 32.7 points; the largest part, 16 ns, receives waiting for stage 1.
  EXPECT_NE(a.pipeline.explanation.find("32.7 points inside communication jobs that no compute "
                                        "overlaps, the largest part receives waiting for stage 1 "
                                        "(14.5 points)"),
            std::string::npos)
      << a.pipeline.explanation;
}

// A log without comm jobs keeps its figures: comm time 0.
TEST(CommTime, NoCommJobsNoCommTime) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  pipescope::Run run = testing::run_from_simulation(config);
  const Metrics m = compute_metrics(run);
  EXPECT_EQ(m.comm_ns, 0);
  for (const DeviceTotals& d : m.devices) EXPECT_EQ(d.comm_ns, 0);
}

// The parts of a listed bubble: its device-step's inherent time shared in
// proportion to the bubbles' lengths.
TEST(BubbleSplit, BubblePartsShareTheDeviceStepInherentTimeByLength) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.stage_slowdown = {1, 1.3, 1, 1};
  pipescope::Run run = testing::run_from_simulation(config);
  const AnalyzedRun a = analyzed(run);
  ASSERT_TRUE(a.pipeline.split.known);
  for (const Bubble& b : a.pipeline.bubbles.longest) {
    const auto inherent = bubble_inherent_ns(a.pipeline.split, a.metrics, b);
    ASSERT_TRUE(inherent.has_value());
    const std::int64_t idle = a.metrics.steps[b.step].devices[b.device].idle_ns;
    const std::int64_t step_inherent = a.pipeline.split.inherent[b.step][b.device];
    EXPECT_EQ(*inherent, static_cast<std::int64_t>(static_cast<__int128>(step_inherent) *
                                                   b.length_ns() / idle));
    EXPECT_LE(*inherent, b.length_ns());
  }
}

}  // namespace
}  // namespace pipescope
