// check_data_quality on runs of a few jobs: each warning of data_quality.h
// (docs/guide.md, "Explaining the bubbles", "Data quality") fires when its
// condition holds, with the count worked out by hand, and not otherwise.
#include "analysis/data_quality.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "support/hand_run.h"
#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::add_job;

using testing::kSecond;

std::vector<Warning> check(const pipescope::Run& run, const StageMap& stages) {
  return check_data_quality(run, compute_metrics(run), stages);
}

std::vector<Warning> check(const pipescope::Run& run) {
  return check(run, one_stage_per_device(run.devices.size()));
}

std::vector<std::string> codes(const std::vector<Warning>& warnings) {
  std::vector<std::string> out;
  for (const Warning& w : warnings) out.emplace_back(warning_name(w.code));
  return out;
}

/// The one warning with this code (a test failure if there is not exactly one).
Warning only(const std::vector<Warning>& warnings, std::string_view code) {
  const Warning* found = nullptr;
  int n = 0;
  for (const Warning& w : warnings) {
    if (warning_name(w.code) == code) {
      found = &w;
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << code;
  return found ? *found : Warning{};
}

// Two stages, two steps of F0 B0 each, nothing odd.
pipescope::Run clean_run() {
  pipescope::Run run;
  for (std::size_t d = 0; d < 2; ++d) {
    const std::int64_t t = static_cast<std::int64_t>(d) * 10;
    add_job(run, d, "forward", 0, t, t + 10);
    add_job(run, d, "backward", 0, 40 - t, 50 - t);
    add_job(run, d, "forward", 0, 100 + t, 110 + t);
    add_job(run, d, "backward", 0, 140 - t, 150 - t);
  }
  run.finalize();
  return run;
}

TEST(DataQuality, CleanRunHasNoWarning) {
  EXPECT_TRUE(check(clean_run()).empty());
  EXPECT_TRUE(check(clean_run(), resolve_stage_map(clean_run(), "0-1")).empty());
}

TEST(DataQuality, EmptyRunsHaveNoWarning) {
  EXPECT_TRUE(check(pipescope::Run{}).empty());
  // Devices without a job, and so no step window: no device has fewer steps
  // than there are windows (0 of 0).
  pipescope::Run idle;
  testing::device_at(idle, 2);
  EXPECT_TRUE(check(idle).empty());
  // One job: nothing to overlap, one step of one, no second start to be far from.
  pipescope::Run one;
  add_job(one, 0, "forward", 0, 0, 10);
  one.finalize();
  EXPECT_TRUE(check(one).empty());
}

TEST(DataQuality, Overlap) {
  // Device at position 1 has global index 7 (a --devices selection):
  //   F0 [0,10)  F1 [5,15) (starts before F0 ended: 1)  B0 [15,20) (touches
  //   F1's end: no)  B1 [16,18) (inside B0: 2)  optimizer [20,25) (no).
  // Device 0: F0 [0,10) and a zero-length memcpy [5,5) inside it, which is
  // a nonpositive_length finding, not an overlap.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "memcpy", 0, 5, 5);
  add_job(run, 1, "forward", 0, 0, 10);
  add_job(run, 1, "forward", 1, 5, 15);
  add_job(run, 1, "backward", 0, 15, 20);
  add_job(run, 1, "backward", 1, 16, 18);
  add_job(run, 1, "optimizer", 0, 20, 25);
  run.devices[1].index = 7;
  run.finalize();
  const std::vector<Warning> warnings = check(run);
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"nonpositive_length", "overlap"}));
  const Warning w = only(warnings, "overlap");
  EXPECT_EQ(w.device, 7);
  EXPECT_EQ(w.stage, 1);
  EXPECT_EQ(w.count, 2u);
  // The first overlapping job is F1: type, micro-batch and input line.
  EXPECT_TRUE(w.message.starts_with("device 7: 2 jobs overlap")) << w.message;
  EXPECT_NE(w.message.find("forward mb1 (line 2)"), std::string::npos) << w.message;
  EXPECT_EQ(only(warnings, "nonpositive_length").device, 0);
}

TEST(DataQuality, CommunicationJobsOverlapNothing) {
  // torch.distributed.pipelining's sends and receives run on streams of
  // their own beside compute: a recv under a forward, a send under the next
  // backward and two sends at once raise no overlap. A forward that starts
  // inside a backward still does, a send between them notwithstanding.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "recv_forward", 1, 2, 12);
  add_job(run, 0, "send_forward", 0, 10, 30);
  add_job(run, 0, "send_backward", 0, 11, 20);
  add_job(run, 0, "backward", 0, 12, 22);
  add_job(run, 0, "send_forward", 1, 21, 40);
  add_job(run, 0, "forward", 1, 21, 31);
  run.finalize();
  const std::vector<Warning> warnings = check(run);
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"overlap"}));
  EXPECT_EQ(only(warnings, "overlap").count, 1u);
  EXPECT_NE(only(warnings, "overlap").message.find("forward mb1"), std::string::npos)
      << only(warnings, "overlap").message;
}

TEST(DataQuality, OverlapOfJobsAddedOutOfOrder) {
  // Added as [5,15) (line 1) then [0,10) (line 2). In start order [5,15)
  // comes second and starts before [0,10) ends: it is the one overlap, named
  // by its input line.
  pipescope::Run run;
  add_job(run, 0, "forward", 1, 5, 15);
  add_job(run, 0, "forward", 0, 0, 10);
  run.finalize();
  const std::vector<Warning> warnings = check(run);
  const Warning w = only(warnings, "overlap");
  EXPECT_EQ(w.count, 1u);
  EXPECT_NE(w.message.find("forward mb1 (line 1)"), std::string::npos) << w.message;
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(DataQuality, NonpositiveLength) {
  // F0 [0,10), a zero-length memcpy [3,3) and a negative one (start 6, end 1)
  // inside it, then B0 [10,20): two nonpositive jobs; neither is an overlap
  // although both start inside F0. The first in start order is the memcpy
  // at 3 (line 2).
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "memcpy", 0, 3, 3);
  add_job(run, 0, "memcpy", 0, 6, 1);
  add_job(run, 0, "backward", 0, 10, 20);
  run.finalize();
  const std::vector<Warning> warnings = check(run);
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"nonpositive_length"}));
  const Warning w = only(warnings, "nonpositive_length");
  EXPECT_EQ(w.device, 0);
  EXPECT_EQ(w.stage, 0);
  EXPECT_EQ(w.count, 2u);
  EXPECT_TRUE(w.message.starts_with("device 0: 2 jobs with zero or negative length")) << w.message;
  EXPECT_NE(w.message.find("memcpy mb0 (line 2)"), std::string::npos) << w.message;
}

TEST(DataQuality, MissingSteps) {
  // Device 0 runs two steps (F0 B0 F0 B0), device 1 one (its log ends
  // early), device 2 none: 2 windows, so device 1 misses 1 step, device 2 both.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "backward", 0, 10, 20);
  add_job(run, 0, "forward", 0, 20, 30);
  add_job(run, 0, "backward", 0, 30, 40);
  add_job(run, 1, "forward", 0, 0, 10);
  add_job(run, 1, "backward", 0, 10, 20);
  testing::device_at(run, 2);
  run.finalize();
  const std::vector<Warning> warnings = check(run);
  // Device 1 never started step 1, and step 1 has no complete step before
  // it: no step is complete (the device without a job is of no segment).
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"missing_steps", "missing_steps",
                                                       "incomplete_steps", "no_complete_step"}));
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_EQ(warnings[2].count, 2u);
  EXPECT_EQ(warnings[2].message,
            "2 incomplete steps (0, 1; step 0: device 1 never started a later step (its log "
            "ends in it)), left out of the totals, the ratios and the gate (a launch cut "
            "short, a log that ends early or begins late)");
  EXPECT_EQ(warnings[0].device, 1);
  EXPECT_EQ(warnings[0].stage, 1);
  EXPECT_EQ(warnings[0].count, 1u);
  EXPECT_EQ(warnings[0].message, "device 1: 1 of 2 steps (its log ends early?)");
  EXPECT_EQ(warnings[1].device, 2);
  EXPECT_EQ(warnings[1].stage, 2);
  EXPECT_EQ(warnings[1].count, 2u);
  EXPECT_TRUE(warnings[1].message.starts_with("device 2: 0 of 2 steps")) << warnings[1].message;
}

// Stage 1 = devices 1 and 2 ("0,1-2"); every device runs two steps
// (F0 B0 | F0 B0) and device 2 also a send at the end of step 0 (a send stays
// in the step it follows), so in step 0 device 1 ran 2 jobs and device 2 ran 3.
pipescope::Run mismatched_run(bool also_step_1) {
  pipescope::Run run;
  run.first_step = 100;
  for (std::size_t d = 0; d < 3; ++d) {
    add_job(run, d, "forward", 0, 0, 10);
    add_job(run, d, "backward", 0, 10, 20);
    if (d == 2) add_job(run, d, "send_forward", 0, 20, 22);
    add_job(run, d, "forward", 0, 30, 40);
    add_job(run, d, "backward", 0, 40, 50);
    if (d == 1 && also_step_1) add_job(run, d, "send_backward", 0, 50, 52);
  }
  run.finalize();
  return run;
}

TEST(DataQuality, JobCountMismatch) {
  const pipescope::Run run = mismatched_run(false);
  const std::vector<Warning> warnings = check(run, resolve_stage_map(run, "0,1-2"));
  // Step 101, the last, holds no send on device 2 where step 100 held one:
  // incomplete by the kind counts.
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"job_count_mismatch", "incomplete_steps"}));
  EXPECT_NE(only(warnings, "incomplete_steps")
                .message.find("step 101: device 2 ran 0 comm jobs in it, 1 in step 100"),
            std::string::npos);
  const Warning w = only(warnings, "job_count_mismatch");
  EXPECT_EQ(w.device, -1);
  EXPECT_EQ(w.stage, 1);
  EXPECT_EQ(w.count, 1u);
  // Step numbers are training steps (first_step 100 + window 0).
  EXPECT_NE(w.message.find("first: step 100, device 1: 2, device 2: 3"), std::string::npos)
      << w.message;

  // Device 1 also runs an extra send in step 1 (3 jobs against 2): two steps differ.
  const pipescope::Run both = mismatched_run(true);
  const Warning w2 = only(check(both, resolve_stage_map(both, "0,1-2")), "job_count_mismatch");
  EXPECT_EQ(w2.count, 2u);
  EXPECT_NE(w2.message.find("first: step 100"), std::string::npos) << w2.message;

  // One device per stage: no stage to compare within.
  EXPECT_EQ(codes(check(run)), (std::vector<std::string>{"incomplete_steps"}));
}

// Device 0 runs seven 1-ns memcpys starting at `starts`; device 1 one
// memcpy at `far`. "other" jobs start no step: one window, no missing step.
pipescope::Run with_far_job(const std::vector<std::int64_t>& starts, std::int64_t far) {
  pipescope::Run run;
  for (const std::int64_t s : starts) add_job(run, 0, "memcpy", 0, s, s + 1);
  add_job(run, 1, "memcpy", 0, far, far + 1);
  run.finalize();
  return run;
}

TEST(DataQuality, TimeOutlierBoundaryAfterTheMiddleHalf) {
  // Starts 0..6 and X (8 starts): quartile ranks 8/4 = 2 and 8-1-2 = 5, so
  // the middle half is [2, 5]: span 3 ns, floored at 10 s; a job is far
  // when it starts more than 10 x 10 s after 5 ns.
  const std::vector<std::int64_t> starts = {0, 1, 2, 3, 4, 5, 6};
  const std::int64_t high = 5 + 100 * kSecond;
  EXPECT_TRUE(check(with_far_job(starts, high)).empty());
  const std::vector<Warning> warnings = check(with_far_job(starts, high + 1));
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"time_outlier"}));
  const Warning w = only(warnings, "time_outlier");
  EXPECT_EQ(w.device, 1);
  EXPECT_EQ(w.stage, -1);
  EXPECT_EQ(w.count, 1u);
  EXPECT_TRUE(w.message.starts_with("device 1: 1 job start far from all others")) << w.message;
}

TEST(DataQuality, TimeOutlierBoundaryBeforeTheMiddleHalf) {
  // Starts X < 0..6: sorted X 0 1 2 3 4 5 6, quartiles at ranks 2 and 5 are
  // 1 and 4; far means more than 100 s before 1 ns.
  const std::vector<std::int64_t> starts = {0, 1, 2, 3, 4, 5, 6};
  const std::int64_t low = 1 - 100 * kSecond;
  EXPECT_TRUE(check(with_far_job(starts, low)).empty());
  EXPECT_EQ(only(check(with_far_job(starts, low - 1)), "time_outlier").count, 1u);
}

TEST(DataQuality, TimeOutlierReachIsTenMiddleHalves) {
  // Starts 0, 5, ..., 30 s and X: quartiles 10 s and 25 s, span 15 s (over
  // the 10 s floor), so far means more than 150 s after 25 s.
  std::vector<std::int64_t> starts;
  for (int i = 0; i <= 6; ++i) starts.push_back(i * 5 * kSecond);
  const std::int64_t high = 175 * kSecond;
  EXPECT_TRUE(check(with_far_job(starts, high)).empty());
  EXPECT_EQ(only(check(with_far_job(starts, high + 1)), "time_outlier").count, 1u);
}

TEST(DataQuality, TimeOutlierCountsEveryFarJobOfTheDevice) {
  // Starts 0..6 on device 0, 200 s and 300 s on device 1 (9 starts): the
  // quartiles (ranks 2 and 6) are 2 and 6 ns, so both are far; the first
  // named is the one at 200 s (line 1).
  pipescope::Run run;
  for (int s = 0; s <= 6; ++s) add_job(run, 0, "memcpy", 0, s, s + 1);
  add_job(run, 1, "memcpy", 7, 200 * kSecond, 200 * kSecond + 1);
  add_job(run, 1, "memcpy", 8, 300 * kSecond, 300 * kSecond + 1);
  run.finalize();
  const Warning w = only(check(run), "time_outlier");
  EXPECT_EQ(w.count, 2u);
  EXPECT_TRUE(w.message.starts_with("device 1: 2 jobs start far")) << w.message;
  EXPECT_NE(w.message.find("memcpy mb7 (line 1)"), std::string::npos) << w.message;
}

TEST(DataQuality, TwoJobsAreNeverOutliersOfEachOther) {
  // Two starts are both quartiles: the middle half spans them.
  pipescope::Run run;
  add_job(run, 0, "memcpy", 0, 0, 1);
  add_job(run, 1, "memcpy", 0, 1000 * kSecond, 1000 * kSecond + 1);
  run.finalize();
  EXPECT_TRUE(check(run).empty());
}

TEST(DataQuality, TimeOutlierBoundsSaturateAtTheEndsOfTime) {
  // Starts near the largest time: hi + 100 s would overflow; the bound
  // saturates and nothing is far.
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  pipescope::Run late;
  for (const std::int64_t s : {kMax - 100, kMax - 80, kMax - 60, kMax - 40}) {
    add_job(late, 0, "memcpy", 0, s, s + 10);
  }
  late.finalize();
  EXPECT_TRUE(check(late).empty());

  // Three starts near the smallest time and one near the largest: lo - 100 s
  // saturates (nothing is before it); the late one is far. The window would
  // span all of int64, so the metrics are given by hand: one window, one
  // step per device, every job in it.
  pipescope::Run both;
  for (const std::int64_t s : {kMin + 10, kMin + 20, kMin + 30}) {
    add_job(both, 0, "memcpy", 0, s, s + 5);
  }
  add_job(both, 1, "memcpy", 0, kMax - 10, kMax - 5);
  both.finalize();
  Metrics metrics;
  metrics.steps.resize(1);
  metrics.devices.resize(2);
  metrics.devices[0].steps = 1;
  metrics.devices[1].steps = 1;
  metrics.job_step = {{0, 0, 0}, {0}};
  const std::vector<Warning> warnings = check_data_quality(both, metrics, one_stage_per_device(2));
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"time_outlier"}));
  EXPECT_EQ(only(warnings, "time_outlier").device, 1);
}

TEST(DataQuality, TimeOutlierOfAJobLeftOutOfTheQuartileSample) {
  // Over 2^20 jobs the quartiles come from every 2nd start (stride
  // ceil((2^20 + 1) / 2^20) = 2); every job is still checked. Job 1 (device
  // 0's second, a day after everything else) is not in the sample.
  pipescope::Run run;
  add_job(run, 0, "memcpy", 0, 0, 1);
  add_job(run, 0, "memcpy", 0, 86'400 * kSecond, 86'400 * kSecond + 1);
  const std::int64_t rest = (std::int64_t{1} << 20) - 1;
  for (std::int64_t i = 0; i < rest; ++i) add_job(run, 1, "memcpy", 0, i, i + 1);
  run.finalize();
  ASSERT_EQ(run.job_count(), (std::uint64_t{1} << 20) + 1);
  const std::vector<Warning> warnings = check(run);
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"time_outlier"}));
  const Warning w = only(warnings, "time_outlier");
  EXPECT_EQ(w.device, 0);
  EXPECT_EQ(w.count, 1u);
}

TEST(DataQuality, TheQuartileSampleStridesOnAcrossDevices) {
  // Stride 2 over the devices' jobs in a row: device 0's one job is job 0,
  // so device 1's sampled jobs are its 2nd, 4th, ... (global 2, 4, ...).
  // Device 1's starts jump by a day between its jobs 2^18 - 2 and 2^18 - 1,
  // where the lower quartile of that sample falls: it lands above the jump
  // (a sample restarted at each device's first job would land below it and
  // find no outlier). So the quartiles are a day out, and every job below
  // the jump is far from them.
  constexpr std::int64_t kDay = 86'400 * kSecond;
  constexpr std::int64_t kJump = (std::int64_t{1} << 18) - 1;
  pipescope::Run run;
  add_job(run, 0, "memcpy", 0, 0, 1);
  for (std::int64_t j = 0; j < (std::int64_t{1} << 20); ++j) {
    const std::int64_t start = j < kJump ? j : kDay + j;
    add_job(run, 1, "memcpy", 0, start, start + 1);
  }
  run.finalize();
  const std::vector<Warning> warnings = check(run);
  ASSERT_EQ(codes(warnings), (std::vector<std::string>{"time_outlier", "time_outlier"}));
  EXPECT_EQ(warnings[0].device, 0);
  EXPECT_EQ(warnings[0].count, 1u);
  EXPECT_EQ(warnings[1].device, 1);
  EXPECT_EQ(warnings[1].count, static_cast<std::uint64_t>(kJump));
}

TEST(DataQuality, DeviceWarningsComeInDeviceOrderOnOneThreadAndOnEight) {
  // Each device's jobs are checked on its own thread; the warnings follow
  // the devices' order whatever the thread count.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "forward", 1, 5, 15);   // overlaps
  add_job(run, 1, "forward", 0, 20, 20);  // zero length
  add_job(run, 2, "forward", 0, 0, 10);
  add_job(run, 2, "forward", 1, 2, 4);   // overlaps
  add_job(run, 2, "forward", 2, 3, 12);  // overlaps
  run.finalize();
  for (const int threads : {1, 8}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                              static_cast<std::size_t>(threads));
    tbb::task_arena arena(threads);
    std::vector<Warning> warnings;
    arena.execute([&] { warnings = check(run); });
    ASSERT_EQ(codes(warnings),
              (std::vector<std::string>{"overlap", "nonpositive_length", "overlap"}))
        << threads;
    EXPECT_EQ(warnings[0].device, 0) << threads;
    EXPECT_EQ(warnings[0].count, 1u) << threads;
    EXPECT_EQ(warnings[1].device, 1) << threads;
    EXPECT_EQ(warnings[2].device, 2) << threads;
    EXPECT_EQ(warnings[2].count, 2u) << threads;
  }
}

TEST(DataQuality, DeviceOutsideTheStageMapHasStageMinusOne) {
  // A map that does not cover the device (shorter than the run).
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "forward", 1, 5, 15);
  run.finalize();
  const Warning w = only(check(run, StageMap{}), "overlap");
  EXPECT_EQ(w.device, 0);
  EXPECT_EQ(w.stage, -1);
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

// Four steps of F0 F1 B0 B1 optimizer on two devices; device 1 lost jobs
// (a job line cut by another thread) in some steps.
pipescope::Run with_lost_jobs(const std::vector<std::pair<std::int64_t, std::string>>& lost) {
  pipescope::Run run;
  for (std::size_t d = 0; d < 2; ++d) {
    for (std::int64_t step = 0; step < 4; ++step) {
      const std::int64_t t = step * 100;
      const auto keep = [&](const std::string& what) {
        if (d != 1) return true;
        for (const auto& [s, w] : lost) {
          if (s == step && w == what) return false;
        }
        return true;
      };
      if (keep("F0")) add_job(run, d, "forward", 0, t, t + 10);
      if (keep("F1")) add_job(run, d, "forward", 1, t + 10, t + 20);
      if (keep("B0")) add_job(run, d, "backward", 0, t + 30, t + 40);
      if (keep("B1")) add_job(run, d, "backward", 1, t + 40, t + 50);
      add_job(run, d, "optimizer", 0, t + 50, t + 55);
    }
  }
  run.finalize();
  return run;
}

TEST(DataQuality, ShortStepAgainstItsOwnStepsWhenAloneInItsStage) {
  const pipescope::Run run = with_lost_jobs({{1, "B1"}, {2, "F1"}, {2, "B0"}});
  const Warning w = only(check(run), "short_step");
  EXPECT_EQ(w.device, 1);
  EXPECT_EQ(w.stage, 1);
  EXPECT_EQ(w.count, 2u);
  EXPECT_EQ(w.message,
            "device 1: fewer forward, backward and optimizer jobs than its own other steps (the "
            "median) in 2 steps (step 1: 4 of 5, 1 missing; step 2: 3 of 5, 2 missing): a job "
            "line lost or cut, or jobs the rank did not log");
  EXPECT_EQ(codes(check(with_lost_jobs({}))), std::vector<std::string>{});
}

TEST(DataQuality, ShortStepAgainstItsStagePeers) {
  // Devices 0 and 1 form one stage: device 1 is compared with device 0.
  const pipescope::Run run = with_lost_jobs({{0, "B1"}});
  const Warning w = only(check(run, resolve_stage_map(run, "0-1")), "short_step");
  EXPECT_EQ(w.device, 1);
  EXPECT_EQ(w.stage, 0);
  EXPECT_NE(w.message.find("than its stage peers in 1 step (step 0: 4 of 5, 1 missing)"),
            std::string::npos)
      << w.message;
}

}  // namespace
}  // namespace pipescope
