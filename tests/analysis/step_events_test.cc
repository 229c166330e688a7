// Log events on step windows: which step each lies in or before, and the
// outlier steps explained by them. Windows and events are built by hand;
// the expected placements are read off the numbers, not computed.
#include "analysis/step_events.h"

#include <gtest/gtest.h>

#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::kMs;

/// Steps 10..17: windows of 100 ms back to back from t = 1000 ms (a 50 ms gap
/// before step 12, at 1200-1250 ms), step 14 400 ms long (1450-1850 ms, an
/// outlier), step 16 with a 60% bubble (the others about 20%); the last ends
/// at 2150 ms.
Metrics eight_steps() {
  Metrics m;
  std::int64_t t = 1000 * kMs;
  for (int k = 0; k < 8; ++k) {
    StepWindow w;
    w.step = 10 + k;
    w.start_ns = t;
    w.end_ns = t + (k == 4 ? 400 : 100) * kMs;
    w.bubble_ratio = k == 6 ? 0.6 : 0.2 + 0.001 * k;
    t = w.end_ns + (k == 1 ? 50 * kMs : 0);  // a 50 ms gap before step 12
    m.steps.push_back(w);
  }
  return m;
}

LogEvent at(std::uint32_t kind, std::int64_t ms, EventTime how = EventTime::stamped) {
  LogEvent e;
  e.kind = kind;
  e.time_ns = ms * kMs;
  e.time_kind = how;
  return e;
}

Run run_with_events() {
  Run run;
  run.event_kinds = {{"checkpoint_save", "checkpoint", "info", ""},
                     {"nccl_warn", "nccl", "warning", ""}};
  run.devices.resize(2);
  run.devices[0].index = 0;
  run.devices[1].index = 5;
  run.devices[0].events = {at(0, 1000),   // the first instant of step 10's window
                           at(0, 1220),   // in the 50 ms gap before step 12
                           at(0, 1650)};  // step 14 (its window: 1450-1850 ms)
  run.devices[1].events = {at(1, 999),    // before step 10
                           at(1, 1749, EventTime::approximate),  // step 14
                           at(1, 1850),                          // step 15's first instant
                           at(1, 0, EventTime::unplaced),
                           at(1, 5000)};  // after the last window (ends 2150)
  return run;
}

TEST(StepEvents, EachEventLiesInOneWindowOrInTheGapBeforeOne) {
  const pipescope::Run run = run_with_events();
  const Metrics m = eight_steps();
  const StepEvents e = place_step_events(run, m);
  EXPECT_EQ(e.total, 8u);
  EXPECT_EQ(e.per_kind, (std::vector<std::uint64_t>{3, 5}));
  EXPECT_EQ(e.before_step[0], (std::vector<EventRef>{{1, 0}}));
  EXPECT_EQ(e.in_step[0], (std::vector<EventRef>{{0, 0}}));
  EXPECT_EQ(e.before_step[2], (std::vector<EventRef>{{0, 1}}));
  EXPECT_TRUE(e.in_step[1].empty());
  EXPECT_EQ(e.in_step[4], (std::vector<EventRef>{{0, 2}, {1, 1}}));
  EXPECT_EQ(e.in_step[5], (std::vector<EventRef>{{1, 2}}));
  EXPECT_EQ(e.after_last, (std::vector<EventRef>{{1, 4}}));
  EXPECT_EQ(e.unplaced, (std::vector<EventRef>{{1, 3}}));
}

TEST(StepEvents, SlowStepsAndLargeBubblesAreOutliersExplainedByTheirEvents) {
  const pipescope::Run run = run_with_events();
  const Metrics m = eight_steps();
  const StepEvents e = place_step_events(run, m);
  EXPECT_EQ(e.median_window_ns, 100 * kMs);
  ASSERT_EQ(e.outliers.size(), 2u);
  EXPECT_EQ(e.outliers[0].step, 4u);
  EXPECT_TRUE(e.outliers[0].slow);
  EXPECT_FALSE(e.outliers[0].bubble);
  EXPECT_EQ(e.outliers[0].extra_ns, 300 * kMs);
  EXPECT_EQ(describe_outlier(run, m, e.outliers[0]),
            "step 14 +0.300 s (bubble 20.4%): device 0 checkpoint_save at +0.200 s (checkpoint), "
            "device 5 nccl_warn at +0.299 s (about) (nccl)");
  EXPECT_EQ(e.outliers[1].step, 6u);
  EXPECT_TRUE(e.outliers[1].bubble);
  EXPECT_FALSE(e.outliers[1].slow);
  EXPECT_EQ(describe_outlier(run, m, e.outliers[1]),
            "step 16 +0.000 s (bubble 60.0%): no log event");
}

TEST(StepEvents, IncompleteStepsAreNeverOutliersAndFewStepsHaveNone) {
  pipescope::Run run = run_with_events();
  Metrics m = eight_steps();
  m.steps[4].complete = false;
  m.steps[6].complete = false;
  EXPECT_TRUE(place_step_events(run, m).outliers.empty());
  m.steps.resize(2);
  m.steps[1].end_ns += 900 * kMs;
  EXPECT_TRUE(place_step_events(run, m).outliers.empty());
}

TEST(StepEvents, AnEventBetweenADevicesStepsExplainsTheNextStep) {
  // 1F1B's last stage ends step 13 first: its checkpoint save starts inside
  // step 13's window (1350-1450 ms) at 1420 ms, after its last job of step
  // 13 (ending 1400 ms) and before its first of step 14 (1500 ms), and it is
  // step 14 that it delays. Its window stays step 13's; it explains step 14
  // too. Device 0's event at 1380 ms, before its own last job of step 13
  // ends, explains nothing more.
  pipescope::Run run = run_with_events();
  const Metrics steps = eight_steps();
  Metrics m = steps;
  m.job_step.resize(2);
  const auto job = [&](std::size_t d, std::int64_t from, std::int64_t to, std::int32_t step) {
    Job j;
    j.start_ns = from * kMs;
    j.end_ns = to * kMs;
    run.devices[d].jobs.push_back(j);
    m.job_step[d].push_back(step);
  };
  job(0, 1360, 1440, 3);
  job(0, 1460, 1500, 4);
  job(1, 1350, 1400, 3);
  job(1, 1500, 1600, 4);
  run.devices[0].events.push_back(at(0, 1380));  // during its job of step 13
  run.devices[1].events.push_back(at(0, 1420));  // the last stage's checkpoint
  const StepEvents e = place_step_events(run, m);
  EXPECT_EQ(e.in_step[3], (std::vector<EventRef>{{0, 3}, {1, 5}}));  // placed by window
  ASSERT_FALSE(e.outliers.empty());
  EXPECT_EQ(e.outliers[0].step, 4u);
  EXPECT_EQ(e.outliers[0].events, (std::vector<EventRef>{{1, 5}, {0, 2}, {1, 1}}));
  // Without the devices' job steps, by window alone, as before.
  const StepEvents by_window = place_step_events(run, steps);
  EXPECT_EQ(by_window.outliers[0].events, (std::vector<EventRef>{{0, 2}, {1, 1}}));
}

}  // namespace
}  // namespace pipescope
