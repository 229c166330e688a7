#include "analysis/launch_segments.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <string>

#include "analysis/metrics.h"
#include "analysis/step_selection.h"
#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::kMs;
constexpr std::int64_t kS = 1'000 * kMs;

/// Adds a job (times in ms) to device d on the next line of its log.
void add(Run& run, std::size_t d, std::string_view type, std::int64_t mb, std::int64_t start_ms,
         std::int64_t end_ms) {
  while (run.devices.size() <= d) {
    run.devices.emplace_back();
    run.devices.back().index = static_cast<int>(run.devices.size() - 1);
    run.devices.back().path = "workerlog." + std::to_string(run.devices.size() - 1);
  }
  Device& device = run.devices[d];
  const auto line = static_cast<std::uint32_t>(device.jobs.size() + device.step_starts.size() + 1);
  device.jobs.push_back({start_ms * kMs, end_ms * kMs, 0, mb, run.types.intern(type), line});
}

/// A `Schedule Profiler start at step N` line next in device d's log.
void mark(Run& run, std::size_t d, std::int64_t step) {
  Device& device = run.devices[d];
  device.step_starts.push_back({device.jobs.size() + device.step_starts.size() + 1, step});
}

/// One 2-stage step of two micro-batches from `base` ms (100 ms apart).
void full_step(Run& run, std::int64_t base) {
  add(run, 0, "forward", 0, base + 0, base + 10);
  add(run, 0, "forward", 1, base + 10, base + 20);
  add(run, 0, "backward", 0, base + 40, base + 60);
  add(run, 0, "backward", 1, base + 70, base + 90);
  add(run, 0, "optimizer", 0, base + 90, base + 95);
  add(run, 1, "forward", 0, base + 10, base + 20);
  add(run, 1, "backward", 0, base + 20, base + 40);
  add(run, 1, "forward", 1, base + 40, base + 50);
  add(run, 1, "backward", 1, base + 50, base + 70);
  add(run, 1, "optimizer", 0, base + 70, base + 75);
}

/// Two steps, the start of a third cut by a crash, and (`relaunch_at` ms
/// later) two more steps of a relaunch resuming at step 12; with `marks`,
/// every launch prints its step-start line.
Run crashed_and_relaunched(bool marks, std::int64_t relaunch_at = 180'000) {
  pipescope::Run run;
  for (int d = 0; d < 2; ++d) {
    run.devices.emplace_back();
    run.devices.back().index = d;
    run.devices.back().path = "workerlog." + std::to_string(d);
  }
  if (marks) {
    mark(run, 0, 10);
    mark(run, 1, 10);
  }
  full_step(run, 0);
  full_step(run, 100);
  add(run, 0, "forward", 0, 200, 210);
  add(run, 0, "forward", 1, 210, 220);
  add(run, 1, "forward", 0, 210, 220);
  add(run, 1, "backward", 0, 220, 240);
  if (marks) {
    mark(run, 0, 12);
    mark(run, 1, 12);
  }
  full_step(run, relaunch_at);
  full_step(run, relaunch_at + 100);
  if (marks) run.first_step = 10;
  run.finalize();
  return run;
}

TEST(LaunchSegments, StepStartLinesSplitTheRunAndNumberEachLaunch) {
  pipescope::Run run = crashed_and_relaunched(/*marks=*/true);
  EXPECT_TRUE(split_launch_segments(run).empty());
  ASSERT_EQ(run.segments.size(), 2u);
  EXPECT_EQ(run.segments[0].first_step, 10);
  EXPECT_EQ(run.segments[1].first_step, 12);
  EXPECT_TRUE(run.segments[1].numbered_by_line);
  EXPECT_EQ(run.segments[1].found_by, LaunchSignal::step_start_line);
  EXPECT_EQ(run.segments[1].evidence,
            (std::vector<std::string>{"workerlog.0:14", "workerlog.1:14"}));
  EXPECT_EQ(run.devices[0].segment_begin, (std::vector<std::size_t>{0, 12}));
  EXPECT_EQ(run.devices[1].segment_begin, (std::vector<std::size_t>{0, 12}));

  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 5u);
  const std::int64_t numbers[] = {10, 11, 12, 12, 13};
  const int segments[] = {0, 0, 0, 1, 1};
  const bool complete[] = {true, true, false, true, true};
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(m.steps[k].step, numbers[k]) << k;
    EXPECT_EQ(m.steps[k].segment, segments[k]) << k;
    EXPECT_EQ(m.steps[k].complete, complete[k]) << k;
  }
  // The cut step ends where its last job ends, not at the relaunch.
  EXPECT_EQ(m.steps[2].start_ns, 200 * kMs);
  EXPECT_EQ(m.steps[2].end_ns, 240 * kMs);
  EXPECT_EQ(m.steps[3].start_ns, 180'000 * kMs);
  EXPECT_EQ(m.total_window_ns, 4 * 95 * kMs);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 240.0 / 760.0);
  ASSERT_EQ(m.segments.size(), 2u);
  EXPECT_EQ(m.segments[0].count, 3u);
  EXPECT_EQ(m.segments[0].complete, 2u);
  EXPECT_EQ(m.segments[1].first, 3u);
  EXPECT_EQ(step_label(m, 3), "1:12");
}

TEST(LaunchSegments, WithoutLinesARestartMidStepAfterAGapSplitsAndNumbersOn) {
  pipescope::Run run = crashed_and_relaunched(/*marks=*/false, /*relaunch_at=*/60'000);
  EXPECT_TRUE(split_launch_segments(run).empty());
  ASSERT_EQ(run.segments.size(), 2u);
  EXPECT_EQ(run.segments[1].found_by, LaunchSignal::restart_after_gap);
  EXPECT_FALSE(run.segments[1].numbered_by_line);
  EXPECT_EQ(run.segments[0].first_step, 0);
  EXPECT_EQ(run.segments[1].first_step, 3);  // on from segment 0's three steps
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 5u);
  EXPECT_FALSE(m.steps[2].complete);
  EXPECT_EQ(m.steps[2].end_ns, 240 * kMs);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 240.0 / 760.0);
}

TEST(LaunchSegments, WithoutSplittingTheCutStepWouldSpanTheGap) {
  // What the segments prevent: the relaunch's forward mb0 follows a forward
  // on device 0, so by the step rule alone it continues the cut step.
  pipescope::Run run = crashed_and_relaunched(/*marks=*/false);
  const Metrics m = compute_metrics(run);  // no split: one segment
  ASSERT_GE(m.steps.size(), 3u);
  EXPECT_GT(m.steps[2].window_ns(), 179 * kS);
}

TEST(LaunchSegments, AGapBetweenWholeStepsIsNotALaunch) {
  // A checkpoint or evaluation pause between steps: long, but the schedule
  // does not start over mid-step.
  pipescope::Run run;
  full_step(run, 0);
  full_step(run, 100);
  full_step(run, 300'000);
  run.finalize();
  EXPECT_TRUE(split_launch_segments(run).empty());
  EXPECT_EQ(run.segments.size(), 1u);
  EXPECT_TRUE(compute_metrics(run).steps[1].complete);
}

TEST(LaunchSegments, AStepStartLineWhileOthersKeepRunningIsIgnoredAndSaidSo) {
  pipescope::Run run;
  full_step(run, 0);
  mark(run, 0, 7);  // printed again by the same process, mid-run
  full_step(run, 100);
  full_step(run, 200);
  run.finalize();
  const auto ignored = split_launch_segments(run);
  ASSERT_EQ(ignored.size(), 1u);
  EXPECT_EQ(ignored[0].found_by, LaunchSignal::step_start_line);
  EXPECT_EQ(ignored[0].where, "workerlog.0:6");
  EXPECT_EQ(run.segments.size(), 1u);
}

// Devices' candidates are found in parallel and taken in device order: the
// signals ignored are listed device by device, then line by line, whatever
// the thread count.
TEST(LaunchSegments, IgnoredSignalsComeInDeviceOrderOnOneThreadAndOnEight) {
  pipescope::Run run;
  full_step(run, 0);
  mark(run, 1, 7);  // device 1's line 6
  full_step(run, 100);
  mark(run, 0, 8);  // device 0's line 11
  full_step(run, 200);
  mark(run, 0, 9);  // device 0's line 17
  full_step(run, 300);
  run.finalize();
  for (const int threads : {1, 8}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                              static_cast<std::size_t>(threads));
    tbb::task_arena arena(threads);
    pipescope::Run copy = run;
    std::vector<IgnoredLaunchSignal> ignored;
    arena.execute([&] { ignored = split_launch_segments(copy); });
    ASSERT_EQ(ignored.size(), 3u) << threads;
    EXPECT_EQ(ignored[0].where, "workerlog.0:11") << threads;
    EXPECT_EQ(ignored[1].where, "workerlog.0:17") << threads;
    EXPECT_EQ(ignored[2].where, "workerlog.1:6") << threads;
    EXPECT_EQ(copy.segments.size(), 1u) << threads;
  }
}

TEST(LaunchSegments, ADeviceWithoutASignalIsCutAtTheSameTime) {
  pipescope::Run run = crashed_and_relaunched(/*marks=*/true);
  // Device 1's relaunch line is lost (say, its log was rotated).
  run.devices[1].step_starts.pop_back();
  split_launch_segments(run);
  ASSERT_EQ(run.segments.size(), 2u);
  EXPECT_EQ(run.devices[1].segment_begin, (std::vector<std::size_t>{0, 12}));
}

TEST(LaunchSegments, SelectingOneKeepsItsJobsIndexAndNumbers) {
  pipescope::Run run = crashed_and_relaunched(/*marks=*/true);
  split_launch_segments(run);
  pipescope::Run last = run;
  select_launch_segment(last, 1);
  ASSERT_EQ(last.segments.size(), 1u);
  EXPECT_EQ(last.segments[0].index, 1);
  EXPECT_EQ(last.devices[0].jobs.size(), 10u);
  EXPECT_EQ(last.devices[0].jobs.front().start_ns, 180'000 * kMs);
  const Metrics m = compute_metrics(last);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].step, 12);
  EXPECT_EQ(m.steps[0].segment, 1);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 120.0 / 380.0);

  pipescope::Run first = run;
  select_launch_segment(first, 0);
  const Metrics f = compute_metrics(first);
  ASSERT_EQ(f.steps.size(), 3u);
  EXPECT_FALSE(f.steps[2].complete);
  EXPECT_THROW(select_launch_segment(run, 2), std::out_of_range);
}

TEST(LaunchSegments, StepListsTakeSegmentForms) {
  pipescope::Run run = crashed_and_relaunched(/*marks=*/true);
  split_launch_segments(run);
  const Metrics m = compute_metrics(run);
  // A plain number means the last segment that has it.
  EXPECT_EQ(parse_step_list("12", m, "--steps"), (std::vector<std::size_t>{3}));
  EXPECT_EQ(parse_step_list("0:12", m, "--steps"), (std::vector<std::size_t>{2}));
  EXPECT_EQ(parse_step_list("10-13", m, "--steps"), (std::vector<std::size_t>{0, 1, 3, 4}));
  EXPECT_EQ(parse_step_list("0:10-12, 1:13", m, "--steps"), (std::vector<std::size_t>{0, 1, 2, 4}));
  try {
    parse_step_list("1:10", m, "--steps");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "--steps: segment 1 has no step 10 (steps 10-12 in segment 0, 12-13 in segment 1)");
  }
  EXPECT_THROW(parse_step_list("2:12", m, "--steps"), std::invalid_argument);
  EXPECT_THROW(parse_step_list("14", m, "--steps"), std::invalid_argument);
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

/// split_launch_segments as the partitioned analysis runs it: each device's
/// evidence, busy intervals and numbering from a run holding that device
/// alone (as the rank that read it holds it), the decisions from those only.
std::vector<IgnoredLaunchSignal> split_by_devices(Run& run, const SegmentOptions& options = {}) {
  const TypeKinds kinds(run.types);
  std::vector<Run> alone(run.devices.size());
  std::vector<DeviceLaunchEvidence> evidence;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    alone[d].types = run.types;
    alone[d].devices.push_back(run.devices[d]);
    evidence.push_back(device_launch_evidence(alone[d].devices[0], kinds, options));
  }
  LaunchCuts cuts = decide_launch_cuts(
      evidence,
      [&](std::int64_t from, std::int64_t to) {
        std::vector<std::pair<std::int64_t, std::int64_t>> inside;
        for (const Run& one : alone) {
          for (const auto& iv : busy_between(one.devices[0], from, to)) inside.push_back(iv);
        }
        return inside;
      },
      options);
  std::vector<IgnoredLaunchSignal> ignored = cuts.ignored;
  std::vector<SegmentNumbering> numbering;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    cut_device(run.devices[d], cuts.cuts);
    add_segment_numbering(numbering,
                          device_segment_numbering(run.devices[d], kinds, cuts.cuts.size() + 1));
  }
  number_launch_segments(std::move(cuts), numbering, options, run);
  return ignored;
}

void expect_same_segments(const Run& a, const Run& b) {
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (std::size_t s = 0; s < a.segments.size(); ++s) {
    EXPECT_EQ(a.segments[s].index, b.segments[s].index);
    EXPECT_EQ(a.segments[s].first_step, b.segments[s].first_step);
    EXPECT_EQ(a.segments[s].numbered_by_line, b.segments[s].numbered_by_line);
    EXPECT_EQ(a.segments[s].found_by, b.segments[s].found_by);
    EXPECT_EQ(a.segments[s].evidence, b.segments[s].evidence);
  }
  EXPECT_EQ(a.first_step, b.first_step);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (std::size_t d = 0; d < a.devices.size(); ++d) {
    EXPECT_EQ(a.devices[d].segment_begin, b.devices[d].segment_begin) << d;
  }
}

// Each device's part of the decision needs its own jobs only: the segments
// found that way are the whole run's, with and without step-start lines, and
// when a signal is ignored.
TEST(LaunchSegments, DecidedFromEachDevicesOwnEvidence) {
  for (const bool marks : {true, false}) {
    pipescope::Run whole = crashed_and_relaunched(marks);
    pipescope::Run parts = whole;
    const auto ignored_whole = split_launch_segments(whole);
    const auto ignored_parts = split_by_devices(parts);
    ASSERT_EQ(whole.segments.size(), 2u) << marks;
    expect_same_segments(parts, whole);
    ASSERT_EQ(ignored_parts.size(), ignored_whole.size());
    for (std::size_t i = 0; i < ignored_whole.size(); ++i) {
      EXPECT_EQ(ignored_parts[i].found_by, ignored_whole[i].found_by);
      EXPECT_EQ(ignored_parts[i].where, ignored_whole[i].where);
    }
  }
  // A step-start line printed while the other device kept running: ignored.
  pipescope::Run whole;
  full_step(whole, 0);
  mark(whole, 0, 5);
  full_step(whole, 100);
  whole.finalize();
  pipescope::Run parts = whole;
  const auto ignored_whole = split_launch_segments(whole);
  const auto ignored_parts = split_by_devices(parts);
  expect_same_segments(parts, whole);
  EXPECT_FALSE(ignored_whole.empty());
  EXPECT_EQ(ignored_parts.size(), ignored_whole.size());
}

}  // namespace
}  // namespace pipescope
