#include "analysis/metrics.h"

#include <gtest/gtest.h>

namespace pipescope {
namespace {

/// Adds a job (times in ns) to device d, creating devices as needed.
void add(Run& run, std::size_t d, std::string_view type, std::int64_t mb, std::int64_t start,
         std::int64_t end) {
  while (run.devices.size() <= d) {
    run.devices.emplace_back();
    run.devices.back().index = static_cast<int>(run.devices.size() - 1);
  }
  auto& jobs = run.devices[d].jobs;
  jobs.push_back({start, end, static_cast<std::int64_t>(jobs.size()), mb, run.types.intern(type),
                  static_cast<std::uint32_t>(jobs.size() + 1)});
}

// The worked example of docs/guide.md ("Metrics"), figures by hand:
// windows [0,66) and [66,90); busy 51/14 (device 0), 44/15 (device 1).
Run worked_example() {
  pipescope::Run run;
  run.first_step = 5;
  add(run, 0, "forward", 0, 0, 10);
  add(run, 0, "forward", 1, 10, 20);
  add(run, 0, "backward", 0, 30, 40);
  add(run, 0, "backward", 1, 40, 50);
  add(run, 0, "optimizer", 0, 50, 55);
  add(run, 0, "forward", 0, 60, 70);
  add(run, 0, "backward", 0, 80, 90);
  add(run, 1, "forward", 0, 10, 20);
  add(run, 1, "forward", 1, 20, 30);
  add(run, 1, "backward", 0, 25, 35);  // overlaps the previous job: counted once
  add(run, 1, "backward", 1, 35, 45);
  add(run, 1, "optimizer", 0, 45, 50);
  add(run, 1, "recv_forward", 0, 62, 66);  // comm: does not begin a step, belongs to step 0
  add(run, 1, "forward", 0, 70, 80);
  add(run, 1, "backward", 0, 80, 85);
  run.finalize();
  return run;
}

TEST(Metrics, WorkedExample) {
  const pipescope::Run run = worked_example();
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].step, 5);
  EXPECT_EQ(m.steps[1].step, 6);
  EXPECT_EQ(m.steps[0].start_ns, 0);
  EXPECT_EQ(m.steps[0].end_ns, 66);
  EXPECT_EQ(m.steps[1].start_ns, 66);  // max(first start 60, E_0 = 66)
  EXPECT_EQ(m.steps[1].end_ns, 90);
  EXPECT_EQ(m.steps[0].devices[0].busy_ns, 51);
  EXPECT_EQ(m.steps[0].devices[0].idle_ns, 15);
  EXPECT_EQ(m.steps[1].devices[0].busy_ns, 14);
  EXPECT_EQ(m.steps[0].devices[1].busy_ns, 44);
  EXPECT_EQ(m.steps[1].devices[1].busy_ns, 15);
  EXPECT_DOUBLE_EQ(m.steps[0].bubble_ratio, 37.0 / 132.0);
  EXPECT_DOUBLE_EQ(m.steps[1].bubble_ratio, 19.0 / 48.0);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 56.0 / 180.0);
  EXPECT_EQ(m.total_window_ns, 90);
  EXPECT_EQ(m.devices[0].busy_ns, 65);
  EXPECT_EQ(m.devices[1].idle_ns, 31);
  EXPECT_DOUBLE_EQ(m.devices[0].utilization, 65.0 / 90.0);
  EXPECT_DOUBLE_EQ(m.devices[1].utilization, 59.0 / 90.0);
  EXPECT_EQ(m.devices[0].steps, 2);
  const std::vector<std::int32_t> device1_steps = {0, 0, 0, 0, 0, 0, 1, 1};
  EXPECT_EQ(m.job_step[1], device1_steps);
}

TEST(Metrics, StepBeginsOnlyAfterANonForwardComputeJob) {
  pipescope::Run run;
  add(run, 0, "recv_forward", 0, 0, 1);  // first job: step 0 begins here
  add(run, 0, "forward", 0, 1, 2);        // no earlier compute job: same step
  add(run, 0, "forward0", 1, 2, 3);
  add(run, 0, "forward1", 0, 3, 4);       // previous compute job is a forward: same step
  add(run, 0, "backward1", 0, 4, 5);
  add(run, 0, "other_job", 0, 5, 6);
  add(run, 0, "send_backward", 0, 6, 7);
  add(run, 0, "forward(chunk0)", 0, 7, 8);  // previous compute job is a backward: new step
  add(run, 0, "forward(chunk0)", 1, 8, 9);
  add(run, 0, "optimizer", 0, 9, 10);
  add(run, 0, "forward", 1, 10, 11);  // micro-batch 1: not a step start
  run.finalize();
  const Metrics m = compute_metrics(run);
  const std::vector<std::int32_t> expected = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  EXPECT_EQ(m.job_step[0], expected);
}

TEST(Metrics, DeviceMissingFromAStepIsIdleForAllOfIt) {
  pipescope::Run run;
  add(run, 0, "forward", 0, 0, 10);
  add(run, 0, "backward", 0, 10, 20);
  add(run, 0, "forward", 0, 20, 30);
  add(run, 1, "forward", 0, 0, 10);
  run.devices.emplace_back();  // a device without any job
  run.devices.back().index = 2;
  run.finalize();
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[1].devices[1].busy_ns, 0);
  EXPECT_EQ(m.steps[1].devices[1].idle_ns, 10);
  EXPECT_EQ(m.steps[0].devices[2].idle_ns, 20);
  EXPECT_DOUBLE_EQ(m.steps[0].bubble_ratio, 30.0 / 60.0);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, (30.0 + 20.0) / 90.0);
  EXPECT_EQ(m.devices[2].steps, 0);
}

TEST(Metrics, WindowsNeverOverlapOrGoNegative) {
  pipescope::Run run;
  // Device 1's step 0 ends after device 0's step 1: windows must stay disjoint.
  add(run, 0, "forward", 0, 0, 10);
  add(run, 0, "backward", 0, 10, 20);
  add(run, 0, "forward", 0, 20, 30);
  add(run, 0, "backward", 0, 30, 35);
  add(run, 1, "forward", 0, 5, 15);
  add(run, 1, "backward", 0, 15, 40);
  add(run, 1, "forward", 0, 40, 41);
  run.finalize();
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].end_ns, 40);
  EXPECT_EQ(m.steps[1].start_ns, 40);
  EXPECT_EQ(m.steps[1].end_ns, 41);
  for (const auto& step : m.steps) {
    for (const auto& d : step.devices) {
      EXPECT_GE(d.idle_ns, 0);
      EXPECT_EQ(d.busy_ns + d.idle_ns, step.window_ns());
    }
  }
}

TEST(Metrics, EmptyRunHasNoSteps) {
  pipescope::Run run;
  run.devices.emplace_back();
  const Metrics m = compute_metrics(run);
  EXPECT_TRUE(m.steps.empty());
  EXPECT_EQ(m.bubble_ratio, 0.0);
  EXPECT_EQ(m.devices[0].utilization, 0.0);
}

}  // namespace
}  // namespace pipescope
