// Log events on step windows: which step each lies in or before, and the
// outlier steps explained by them. Windows and events are built by hand;
// the expected placements are read off the numbers, not computed.
#include "analysis/step_events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <tuple>
#include <utility>

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

/// The events between a device's steps by the rule itself: for one outlier
/// step, a walk over every device's jobs (what the analysis did once per
/// outlier, before it took every device's step edges in one pass).
std::vector<EventRef> between_by_walk(const Run& run, const Metrics& m, std::size_t s) {
  if (s == 0 || m.steps[s - 1].end_ns > m.steps[s].start_ns) return {};
  std::vector<std::tuple<std::int64_t, std::size_t, std::size_t>> found;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    if (device.events.empty() || m.job_step[d].size() != device.jobs.size()) continue;
    std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
    std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
    bool before = false, after = false;
    for (std::size_t i = 0; i < device.jobs.size(); ++i) {
      if (m.job_step[d][i] == static_cast<std::int32_t>(s - 1)) {
        last_end = std::max(last_end, device.jobs[i].end_ns);
        before = true;
      } else if (m.job_step[d][i] == static_cast<std::int32_t>(s)) {
        first_start = std::min(first_start, device.jobs[i].start_ns);
        after = true;
      }
    }
    if (!before || !after) continue;
    const std::int64_t to = std::min(first_start, m.steps[s - 1].end_ns);
    for (std::size_t e = 0; e < device.events.size(); ++e) {
      const LogEvent& event = device.events[e];
      if (event.time_kind != EventTime::unplaced && event.time_ns >= last_end && event.time_ns < to)
        found.emplace_back(event.time_ns, d, e);
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<EventRef> out;
  for (const auto& [time, d, e] : found) out.push_back({d, e});
  return out;
}

TEST(StepEvents, EventsBetweenStepsAreTheRulesOnRandomRuns) {
  // Runs of 40 steps on 6 devices, about one step in five slow, some steps
  // overlapping the one before, jobs without a step (-1), devices without
  // events or without job steps; each outlier's events against a walk of
  // every device's jobs for that step alone.
  std::mt19937_64 random(51);
  std::size_t between = 0;  // events found between steps, over every trial
  for (int trial = 0; trial < 200; ++trial) {
    Metrics m;
    pipescope::Run run;
    run.event_kinds = {{"checkpoint_save", "checkpoint", "info", ""}};
    std::int64_t t = 1000 * kMs;
    for (int k = 0; k < 40; ++k) {
      StepWindow w;
      w.step = k;
      w.start_ns = t - (random() % 7 == 0 ? 5 * kMs : 0);  // now and then over the one before
      w.end_ns = t + (random() % 5 == 0 ? 400 : 100) * kMs;
      w.bubble_ratio = 0.2;
      t = w.end_ns + static_cast<std::int64_t>(random() % 3) * 10 * kMs;
      m.steps.push_back(w);
    }
    run.devices.resize(6);
    m.job_step.resize(6);
    for (std::size_t d = 0; d < 6; ++d) {
      run.devices[d].index = static_cast<int>(d);
      for (std::size_t k = 0; k < m.steps.size(); ++k) {
        const StepWindow& w = m.steps[k];
        for (std::uint64_t n = random() % 4; n > 0; --n) {
          Job job;
          job.start_ns = w.start_ns + static_cast<std::int64_t>(random() % 100) * kMs;
          job.end_ns = job.start_ns + static_cast<std::int64_t>(random() % 60) * kMs;
          run.devices[d].jobs.push_back(job);
          m.job_step[d].push_back(random() % 10 == 0 ? -1 : static_cast<std::int32_t>(k));
        }
      }
      if (d == 4) m.job_step[d].pop_back();  // job steps not at hand
      if (d == 5) continue;                  // no events
      for (std::uint64_t n = random() % 60; n > 0; --n) {
        run.devices[d].events.push_back(
            at(0, 900 + static_cast<std::int64_t>(random() % 7000),
               random() % 20 == 0 ? EventTime::unplaced : EventTime::stamped));
      }
    }
    const StepEvents placed = place_step_events(run, m);
    ASSERT_FALSE(placed.outliers.empty());
    for (const OutlierStep& outlier : placed.outliers) {
      std::vector<EventRef> expected = between_by_walk(run, m, outlier.step);
      between += expected.size();
      const auto& before = placed.before_step[outlier.step];
      const auto& in = placed.in_step[outlier.step];
      expected.insert(expected.end(), before.begin(), before.end());
      expected.insert(expected.end(), in.begin(), in.end());
      EXPECT_EQ(outlier.events, expected) << "trial " << trial << ", step " << outlier.step;
    }
  }
  EXPECT_GT(between, 200u);  // the rule was put to the test, not passed vacuously
}

}  // namespace
}  // namespace pipescope
