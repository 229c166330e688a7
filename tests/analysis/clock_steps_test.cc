// Clock steps (clock_steps.h): a machine's clock stepped back mid-run is found
// on every device of the machine at once and undone; an overlap on one device
// only, or a machine of one device among others that show nothing, is not a
// clock's doing. Times in ns; ms = 10^6 ns.
#include "analysis/clock_steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "support/hand_run.h"
#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::add_job;
using testing::device_at;

using testing::kMs;

/// Device d: `steps` steps of F0 F1 B0 B1 back to back, 10 ms each job, the
/// step k starting at k * 50 ms; every time from `step_at` on read `jump`
/// later (a clock step), the job the step cuts dropped as the reader drops
/// a job that ends before it starts.
void add_device(Run& run, std::size_t d, int machine, int steps, std::int64_t step_at,
                std::int64_t jump) {
  device_at(run, d).machine = machine;
  const auto clock = [&](std::int64_t t) { return t >= step_at ? t + jump : t; };
  const char* types[] = {"forward", "forward", "backward", "backward"};
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < 4; ++i) {
      const std::int64_t start = k * 50 * kMs + i * 10 * kMs + static_cast<std::int64_t>(d) * kMs;
      const std::int64_t end = start + 10 * kMs;
      const std::int64_t s = clock(start), e = clock(end);
      if (e < s) continue;  // cut by the step: malformed, never read
      add_job(run, d, types[i], i % 2, s, e);
    }
  }
}

TEST(ClockSteps, AStepBackOnEveryDeviceOfAMachineIsFoundAndUndone) {
  pipescope::Run run;
  add_device(run, 0, 0, 6, 0, 0);
  add_device(run, 1, 0, 6, 0, 0);
  // Machine 1 stepped back 150 ms at 125 ms (in the middle of step 2).
  add_device(run, 2, 1, 6, 125 * kMs, -150 * kMs);
  add_device(run, 3, 1, 6, 125 * kMs, -150 * kMs);
  run.finalize();
  const auto steps = undo_clock_steps(run, {});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].machine, 1);
  // Device 3's usual gap at the step (the cut job, 10 ms) places it exactly.
  EXPECT_EQ(steps[0].size_ns, -150 * kMs);
  EXPECT_GT(steps[0].jobs, 0u);
  // Every job of machine 1 is back on the true clock: in start order, no
  // compute job overlaps the one before.
  for (std::size_t d = 2; d < 4; ++d) {
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 1; i < jobs.size(); ++i) {
      EXPECT_GE(jobs[i].start_ns, jobs[i - 1].end_ns) << "device " << d << " job " << i;
    }
    EXPECT_EQ(jobs.back().end_ns, 5 * 50 * kMs + 40 * kMs + static_cast<std::int64_t>(d) * kMs);
  }
}

TEST(ClockSteps, AStepForwardThatMovesTheMachinesStepsForGoodIsUndone) {
  pipescope::Run run;
  add_device(run, 0, 0, 8, 0, 0);
  add_device(run, 1, 0, 8, 0, 0);
  // Machine 1 stepped forward 200 ms at 125 ms: the job running then lasts
  // 200 ms longer, and every later step begins 200 ms after machine 0's.
  add_device(run, 2, 1, 8, 125 * kMs, 200 * kMs);
  add_device(run, 3, 1, 8, 125 * kMs, 200 * kMs);
  run.finalize();
  const auto steps = undo_clock_steps(run, {});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].machine, 1);
  EXPECT_EQ(steps[0].size_ns, 200 * kMs);
  for (std::size_t d = 2; d < 4; ++d) {
    const auto& jobs = run.devices[d].jobs;
    for (const Job& job : jobs) EXPECT_EQ(job.end_ns - job.start_ns, 10 * kMs) << "device " << d;
    EXPECT_EQ(jobs.back().end_ns, 7 * 50 * kMs + 40 * kMs + static_cast<std::int64_t>(d) * kMs);
  }
}

TEST(ClockSteps, APauseOfTheWholeRunIsNoStepForward) {
  pipescope::Run run;
  for (std::size_t d = 0; d < 4; ++d) add_device(run, d, d < 2 ? 0 : 1, 8, 0, 0);
  // Every device idles 200 ms from 150 ms on (a checkpoint): every machine
  // shows the gap, and machine 1's steps stay in step with machine 0's.
  for (std::size_t d = 0; d < 4; ++d) {
    for (Job& job : run.devices[d].jobs) {
      if (job.start_ns >= 150 * kMs) {
        job.start_ns += 200 * kMs;
        job.end_ns += 200 * kMs;
      }
    }
  }
  run.finalize();
  EXPECT_TRUE(undo_clock_steps(run, {}).empty());
}

TEST(ClockSteps, AnOverlapOnOneDeviceOnlyIsNoClockStep) {
  pipescope::Run run;
  add_device(run, 0, 0, 4, 0, 0);
  add_device(run, 1, 1, 4, 0, 0);
  add_device(run, 2, 1, 4, 60 * kMs, -30 * kMs);  // its own stray times, not its machine's
  run.finalize();
  const pipescope::Run before = run;
  EXPECT_TRUE(undo_clock_steps(run, {}).empty());
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    ASSERT_EQ(run.devices[d].jobs.size(), before.devices[d].jobs.size());
    for (std::size_t i = 0; i < run.devices[d].jobs.size(); ++i) {
      EXPECT_EQ(run.devices[d].jobs[i].start_ns, before.devices[d].jobs[i].start_ns);
    }
  }
}

TEST(ClockSteps, AJumpBackShorterThanTheJobItOverlapsIsAnOverlap) {
  // Paddle's design notes: Job (3) forward [213.760986, 254.006104] ms and
  // Job (4) [214.742920, 219.168945] ms, as the old host timer wrote them, on
  // a machine of one device. Job 4 starts 39.263 ms before job 3 ended, but
  // after it started: an overlap one device's timer gives, no clock step.
  pipescope::Run run;
  device_at(run, 0).machine = 0;
  const std::int64_t base = 1'697'793'307'000 * kMs;
  add_job(run, 0, "forward", 2, base + 213'760'986, base + 254'006'104);
  add_job(run, 0, "backward", 0, base + 214'742'920, base + 219'168'945);
  for (int k = 0; k < 3; ++k) {
    const std::int64_t at = base + 260 * kMs + k * 40 * kMs;
    add_job(run, 0, "forward", 0, at, at + 10 * kMs);
    add_job(run, 0, "backward", 0, at + 12 * kMs, at + 30 * kMs);
  }
  run.finalize();
  EXPECT_TRUE(undo_clock_steps(run, {}).empty());
  // The same jump back past where the job before started: a step.
  pipescope::Run stepped;
  device_at(stepped, 0).machine = 0;
  add_job(stepped, 0, "forward", 2, base + 213 * kMs, base + 254 * kMs);
  add_job(stepped, 0, "backward", 0, base + 200 * kMs, base + 205 * kMs);
  for (int k = 0; k < 3; ++k) {
    const std::int64_t at = base + 210 * kMs + k * 40 * kMs;
    add_job(stepped, 0, "forward", 0, at, at + 10 * kMs);
    add_job(stepped, 0, "backward", 0, at + 12 * kMs, at + 30 * kMs);
  }
  stepped.finalize();
  EXPECT_EQ(undo_clock_steps(stepped, {}).size(), 1u);
}

TEST(ClockSteps, OverlapsBelowTheThresholdAreNoise) {
  pipescope::Run run;
  add_device(run, 0, 0, 4, 0, 0);
  add_device(run, 1, 1, 4, 75 * kMs, -kMs / 2);  // half a millisecond: noise
  run.finalize();
  EXPECT_TRUE(undo_clock_steps(run, {}).empty());
}

/// The back jumps by the rule (clock_steps.h): the compute jobs sorted by
/// line (none when a job has no line), each jumping back when it starts
/// min_step or more before the latest end so far, and before the job above
/// it started (or after one that ends before it starts).
std::uint64_t back_jumps_by_rule(const Device& device, const TypeKinds& kinds,
                                 std::int64_t min_step) {
  std::vector<const Job*> order;
  for (const Job& job : device.jobs) {
    if (job.line == 0) return 0;
    if (kinds.kind[job.type] != JobKind::comm) order.push_back(&job);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Job* a, const Job* b) { return a->line < b->line; });
  std::uint64_t n = 0;
  std::int64_t latest = std::numeric_limits<std::int64_t>::min();
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Job& job = *order[k];
    if (k > 0) {
      const Job& above = *order[k - 1];
      if (job.start_ns < latest - min_step &&
          (job.start_ns < above.start_ns || above.end_ns < above.start_ns)) {
        ++n;
        latest = job.start_ns;
      }
    }
    latest = std::max({latest, job.end_ns, job.start_ns});
  }
  return n;
}

TEST(ClockSteps, BackJumpsAreTheRulesWhateverTheJobOrder) {
  // Devices of compute and send jobs whose clock now and then steps back by
  // 0.5-20 ms: as written (lines in job order, counted in place), in start
  // order (lines out of order wherever the clock stepped), with a job
  // without a line, and with lines shuffled.
  std::mt19937_64 random(51);
  const char* types[] = {"forward", "backward", "send_v2"};
  std::uint64_t jumps = 0;
  for (int trial = 0; trial < 400; ++trial) {
    pipescope::Run run;
    std::int64_t t = 1000 * kMs;
    for (int i = 0; i < 80; ++i) {
      if (random() % 12 == 0) t -= static_cast<std::int64_t>(random() % 40 + 1) * kMs / 2;
      const std::int64_t start = t + static_cast<std::int64_t>(random() % 3) * kMs;
      const std::int64_t end = start + static_cast<std::int64_t>(random() % 4) * kMs;
      add_job(run, 0, types[random() % 3], i % 4, start, end);
      t = end;
    }
    Device& device = run.devices[0];
    switch (trial % 4) {
      case 1:
        run.finalize();
        break;
      case 2:
        device.jobs[random() % device.jobs.size()].line = 0;
        break;
      case 3:
        for (std::size_t i = device.jobs.size(); i > 1; --i) {
          std::swap(device.jobs[i - 1].line, device.jobs[random() % i].line);
        }
        break;
      default:
        break;
    }
    const TypeKinds kinds(run.types);
    ClockStepOptions options;
    const std::uint64_t expected = back_jumps_by_rule(device, kinds, options.min_step_ns);
    EXPECT_EQ(device_back_jumps(device, kinds, options), expected) << "trial " << trial;
    jumps += expected;
  }
  EXPECT_GT(jumps, 500u);  // the rule was put to the test, not passed vacuously
}

}  // namespace
}  // namespace pipescope
