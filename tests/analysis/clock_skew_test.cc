// Clock-skew estimation and correction (clock_skew.h; docs/guide.md, "Several
// machines: clock skew") on runs of a few jobs whose true times are known:
// each machine's clock reads offset(m) ahead of machine 0's, a dependency
// P -> C bounds offset(b) - offset(a) by start(C) - end(P), the pair estimate
// is the middle of the interval the bounds leave (one side only: the
// smallest correction that removes the violations), and the pair estimates
// are joined by least squares. Times in ns; us = 1000 ns.
#include "analysis/clock_skew.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "support/hand_run.h"
#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::add_job;

constexpr std::int64_t us = 1'000;
using testing::kMs;

/// Every job time of a device, for comparing runs.
std::vector<std::int64_t> times_of(const pipescope::Run& run, std::size_t d) {
  std::vector<std::int64_t> out;
  for (const Job& job : run.devices[d].jobs) {
    out.push_back(job.start_ns);
    out.push_back(job.end_ns);
  }
  return out;
}

/// The estimation's mechanics on hand-made microseconds: no noise threshold
/// (the rule that needs one has its own tests below).
ClockOptions noiseless() {
  ClockOptions options;
  options.noise_ns = 0;
  return options;
}

ClockReport correct(pipescope::Run& run, const ClockOptions& options = noiseless()) {
  return correct_clocks(run, one_stage_per_device(run.devices.size()), options);
}

// Stage 0 on machine 0, stage 1 on machine 1, one micro-batch, true times:
//   device 0: F [0,10us)   B [30us,40us)
//   device 1: F [12us,22us) B [22us,28us)
// Both dependencies leave 2 us: device 1's F starts 2 us after device 0's F
// ends, device 0's B 2 us after device 1's B. Machine 1's clock reads `skew`
// ahead, so its times are written true + skew.
pipescope::Run two_machines(std::int64_t skew, std::string name0 = "", std::string name1 = "") {
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10 * us);
  add_job(run, 0, "backward", 0, 30 * us, 40 * us);
  add_job(run, 1, "forward", 0, 12 * us + skew, 22 * us + skew);
  add_job(run, 1, "backward", 0, 22 * us + skew, 28 * us + skew);
  run.devices[0].machine_name = std::move(name0);
  run.devices[1].machine = 1;
  run.devices[1].machine_name = std::move(name1);
  run.finalize();
  return run;
}

TEST(ClockSkew, AShiftedMachineIsFoundAndCorrectedByExactlyItsShift) {
  // Forward (consumer on machine 1 = b): o1 - o0 <= (12us + skew) - 10us.
  // Backward (consumer on machine 0 = a): o1 - o0 >= -(30us - (28us + skew)).
  // The interval [skew - 2us, skew + 2us] has its middle at the skew. With
  // skew > 0 the backward is violated (B starts 30us, its input ends at
  // 28us + skew), with skew < 0 the forward: one violation either way.
  for (const std::int64_t skew : {3 * kMs, -3 * kMs}) {
    SCOPED_TRACE(skew);
    pipescope::Run run = two_machines(skew);
    const pipescope::Run truth = two_machines(0);
    const ClockReport clock = correct(run);
    EXPECT_EQ(clock.method, ClockMethod::estimated);
    EXPECT_TRUE(clock.applied);
    EXPECT_EQ(clock.dependencies, 2u);
    EXPECT_EQ(clock.violations_before, 1u);
    EXPECT_EQ(clock.violations_after, 0u);
    ASSERT_EQ(clock.machines.size(), 2u);
    EXPECT_EQ(clock.machines[0].name, "machine0");
    EXPECT_EQ(clock.machines[0].estimate_ns, 0);
    EXPECT_EQ(clock.machines[0].offset_ns, 0);
    EXPECT_EQ(clock.machines[1].name, "machine1");
    EXPECT_EQ(clock.machines[1].estimate_ns, skew);
    EXPECT_EQ(clock.machines[1].offset_ns, skew);
    ASSERT_EQ(clock.pairs.size(), 1u);
    const MachinePairClock& pair = clock.pairs[0];
    EXPECT_EQ(pair.machine_a, 0);
    EXPECT_EQ(pair.machine_b, 1);
    EXPECT_EQ(pair.dependencies, 2u);
    EXPECT_EQ(pair.violations_before, 1u);
    EXPECT_EQ(pair.violations_after, 0u);
    EXPECT_EQ(pair.lower_ns, skew - 2 * us);
    EXPECT_EQ(pair.upper_ns, skew + 2 * us);
    // Corrected: the true times, to the nanosecond.
    EXPECT_EQ(times_of(run, 0), times_of(truth, 0));
    EXPECT_EQ(times_of(run, 1), times_of(truth, 1));
  }
}

TEST(ClockSkew, JobsAddedOutOfOrderGiveTheSameCorrection) {
  // two_machines(3 ms) with each device's jobs added last to first.
  pipescope::Run run;
  add_job(run, 1, "backward", 0, 22 * us + 3 * kMs, 28 * us + 3 * kMs);
  add_job(run, 1, "forward", 0, 12 * us + 3 * kMs, 22 * us + 3 * kMs);
  add_job(run, 0, "backward", 0, 30 * us, 40 * us);
  add_job(run, 0, "forward", 0, 0, 10 * us);
  run.devices[1].machine = 1;
  run.finalize();
  const ClockReport clock = correct(run);
  EXPECT_EQ(clock.method, ClockMethod::estimated);
  EXPECT_EQ(clock.machines[1].offset_ns, 3 * kMs);
  EXPECT_EQ(times_of(run, 1), times_of(two_machines(0), 1));
}

TEST(ClockSkew, EstimateIsTheMiddleOfTheInterval) {
  // Uneven slack: true forward slack 2us, backward 6us (device 1's B ends at
  // 24us); machine 1 reads 10us ahead. Bounds: upper (12+10) - 10 = 12us,
  // lower -(30 - (24+10)) = 4us; the estimate is their middle, 8us (not the
  // true 10us: the data cannot tell), leaving 4us of margin on both sides.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10 * us);
  add_job(run, 0, "backward", 0, 30 * us, 40 * us);
  add_job(run, 1, "forward", 0, 22 * us, 32 * us);
  add_job(run, 1, "backward", 0, 32 * us, 34 * us);
  run.devices[1].machine = 1;
  run.finalize();
  const ClockReport clock = correct(run);
  EXPECT_EQ(clock.method, ClockMethod::estimated);
  EXPECT_EQ(clock.pairs[0].lower_ns, 4 * us);
  EXPECT_EQ(clock.pairs[0].upper_ns, 12 * us);
  EXPECT_EQ(clock.machines[1].offset_ns, 8 * us);
  EXPECT_EQ(clock.violations_before, 1u);
  EXPECT_EQ(clock.violations_after, 0u);
  EXPECT_EQ(times_of(run, 1), (std::vector<std::int64_t>{14 * us, 24 * us, 24 * us, 26 * us}));
}

TEST(ClockSkew, ForwardBoundOnlyTakesTheSmallestCorrection) {
  // Forwards only: device 0 F0 [0,10) F1 [10,20); device 1 truly F0 [12,22)
  // F1 [22,32) (slack 2us each), its clock 5us behind: written [7,17) and
  // [17,27). Only an upper bound: min(-3, -3) = -3us. The smallest
  // correction that removes both violations is -3us (not the true -5us).
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10 * us);
  add_job(run, 0, "forward", 1, 10 * us, 20 * us);
  add_job(run, 1, "forward", 0, 7 * us, 17 * us);
  add_job(run, 1, "forward", 1, 17 * us, 27 * us);
  run.devices[1].machine = 1;
  run.finalize();
  const ClockReport clock = correct(run);
  EXPECT_EQ(clock.method, ClockMethod::estimated);
  EXPECT_FALSE(clock.pairs[0].lower_ns.has_value());
  EXPECT_EQ(clock.pairs[0].upper_ns, -3 * us);
  EXPECT_EQ(clock.machines[1].offset_ns, -3 * us);
  EXPECT_EQ(clock.violations_before, 2u);
  EXPECT_EQ(clock.violations_after, 0u);  // starts now equal their inputs' ends
  EXPECT_EQ(times_of(run, 1), (std::vector<std::int64_t>{10 * us, 20 * us, 20 * us, 30 * us}));

  // An upper bound above 0 (written [15,25)): nothing violated, estimate
  // min(0, 5us) = 0.
  pipescope::Run fine;
  add_job(fine, 0, "forward", 0, 0, 10 * us);
  add_job(fine, 1, "forward", 0, 15 * us, 25 * us);
  fine.devices[1].machine = 1;
  fine.finalize();
  const ClockReport ok = correct(fine);
  EXPECT_EQ(ok.method, ClockMethod::consistent);
  EXPECT_EQ(ok.pairs[0].upper_ns, 5 * us);
  EXPECT_EQ(ok.machines[1].estimate_ns, 0);
}

TEST(ClockSkew, BackwardBoundOnlyTakesTheSmallestCorrection) {
  // Backwards only: device 0 B [20,30), device 1 truly B [5,15) (slack 5us),
  // written 10us ahead [15,25): slack -5us, lower bound 5us, estimate
  // max(0, 5us) = 5us.
  pipescope::Run run;
  add_job(run, 0, "backward", 0, 20 * us, 30 * us);
  add_job(run, 1, "backward", 0, 15 * us, 25 * us);
  run.devices[1].machine = 1;
  run.finalize();
  const ClockReport clock = correct(run);
  EXPECT_EQ(clock.method, ClockMethod::estimated);
  EXPECT_EQ(clock.pairs[0].lower_ns, 5 * us);
  EXPECT_FALSE(clock.pairs[0].upper_ns.has_value());
  EXPECT_EQ(clock.machines[1].offset_ns, 5 * us);
  EXPECT_EQ(clock.violations_after, 0u);
  EXPECT_EQ(times_of(run, 1), (std::vector<std::int64_t>{10 * us, 20 * us}));
}

TEST(ClockSkew, ConsistentClocksAreLeftAloneAndNoOffsetIsInvented) {
  // Slack of 20us both ways, machine 1 5us ahead: device 0 F [0,10) B
  // [60,70); device 1 truly F [30,35) B [35,40), written +5us. Bounds
  // upper 25us, lower -15us; but nothing is violated, so skew cannot be
  // told from slack: the pair's clocks are taken to agree (estimate 0, not
  // the bounds' middle of 5us) and nothing is applied.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10 * us);
  add_job(run, 0, "backward", 0, 60 * us, 70 * us);
  add_job(run, 1, "forward", 0, 35 * us, 40 * us);
  add_job(run, 1, "backward", 0, 40 * us, 45 * us);
  run.devices[1].machine = 1;
  run.finalize();
  const std::vector<std::int64_t> before = times_of(run, 1);
  const ClockReport clock = correct(run);
  EXPECT_EQ(clock.method, ClockMethod::consistent);
  EXPECT_FALSE(clock.applied);
  EXPECT_EQ(clock.violations_before, 0u);
  EXPECT_EQ(clock.violations_after, 0u);
  EXPECT_EQ(clock.pairs[0].lower_ns, -15 * us);
  EXPECT_EQ(clock.pairs[0].upper_ns, 25 * us);
  EXPECT_EQ(clock.machines[1].estimate_ns, 0);
  EXPECT_EQ(clock.machines[1].offset_ns, 0);
  EXPECT_EQ(times_of(run, 1), before);
  EXPECT_TRUE(clock.reason.empty());
}

// Machines whose only jobs are the ends of hand-made dependencies.
pipescope::Run one_device_per_machine(const std::vector<int>& machines) {
  pipescope::Run run;
  for (std::size_t d = 0; d < machines.size(); ++d) {
    add_job(run, d, "forward", 0, 0, 100);
    add_job(run, d, "forward", 1, 200, 300);
    run.devices[d].machine = machines[d];
  }
  run.finalize();
  return run;
}

/// A dependency whose slack start(C) - end(P) is `slack`, by moving C's job.
Dependency dependency(pipescope::Run& run, JobRef producer, JobRef consumer, std::int64_t slack) {
  Job& c = run.devices[consumer.device].jobs[consumer.job];
  const std::int64_t length = c.duration_ns();
  c.start_ns = run.devices[producer.device].jobs[producer.job].end_ns + slack;
  c.end_ns = c.start_ns + length;
  return {producer, consumer};
}

TEST(ClockSkew, LeastSquaresOverACycleOfMachines) {
  // Pair estimates (one-sided bounds): e01 = 3 (consumer on machine 0, slack
  // -3: lower 3), e12 = 3 (consumer on 1, slack -3), e02 = 0 (consumer on 2,
  // slack +5: upper 5, estimate min(0, 5)). They disagree (3 + 3 != 0);
  // minimising (o1 - 3)^2 + (o2 - o1 - 3)^2 + o2^2 gives 2 o1 - o2 = 0 and
  // 2 o2 - o1 = 3: o1 = 1, o2 = 2.
  pipescope::Run run = one_device_per_machine({0, 1, 2});
  std::vector<Dependency> deps;
  deps.push_back(dependency(run, {1, 0}, {0, 1}, -3));
  deps.push_back(dependency(run, {2, 0}, {1, 1}, -3));
  deps.push_back(dependency(run, {0, 0}, {2, 1}, 5));
  const ClockReport estimate = estimate_clock_offsets(run, deps);
  EXPECT_EQ(estimate.method, ClockMethod::consistent);  // estimating alone applies nothing
  EXPECT_EQ(estimate.dependencies, 3u);
  EXPECT_EQ(estimate.violations_before, 2u);
  ASSERT_EQ(estimate.pairs.size(), 3u);  // (0,1), (0,2), (1,2)
  EXPECT_EQ(estimate.pairs[0].lower_ns, 3);
  EXPECT_EQ(estimate.pairs[1].upper_ns, 5);
  EXPECT_EQ(estimate.pairs[2].lower_ns, 3);
  ASSERT_EQ(estimate.machines.size(), 3u);
  EXPECT_EQ(estimate.machines[0].estimate_ns, 0);
  EXPECT_EQ(estimate.machines[1].estimate_ns, 1);
  EXPECT_EQ(estimate.machines[2].estimate_ns, 2);

  // Applied, the compromise would leave both violations (each needed 3): it
  // explains nothing, so it is reported and the times stay as read.
  const std::vector<std::int64_t> before = {times_of(run, 1)[0], times_of(run, 2)[0]};
  const ClockReport clock = correct_clocks(run, deps, noiseless());
  EXPECT_EQ(clock.method, ClockMethod::rejected);
  EXPECT_FALSE(clock.applied);
  EXPECT_EQ(clock.violations_before, 2u);
  EXPECT_EQ(clock.violations_after, 2u);
  EXPECT_EQ(clock.violations_if_estimated, 2u);
  EXPECT_EQ(clock.machines[1].estimate_ns, 1);
  EXPECT_EQ(clock.machines[1].offset_ns, 0);
  EXPECT_EQ(clock.machines[2].estimate_ns, 2);
  EXPECT_EQ(clock.machines[2].offset_ns, 0);
  EXPECT_EQ(times_of(run, 1)[0], before[0]);
  EXPECT_EQ(times_of(run, 2)[0], before[1]);
}

TEST(ClockSkew, EachConnectedGroupOfMachinesIsAnchoredAtItsLowest) {
  // Machines 0, 1, 3, 4 have a device; machine 2 none. Dependencies join 0
  // with 1 (estimate 3) and 3 with 4 (estimate 4): machines 0, 2 and 3
  // anchor their groups at 0.
  pipescope::Run run = one_device_per_machine({0, 1, 3, 4});
  std::vector<Dependency> deps;
  deps.push_back(dependency(run, {1, 0}, {0, 1}, -3));
  deps.push_back(dependency(run, {3, 0}, {2, 1}, -4));
  const ClockReport clock = correct_clocks(run, deps, noiseless());
  EXPECT_EQ(clock.method, ClockMethod::estimated);
  ASSERT_EQ(clock.machines.size(), 5u);
  EXPECT_EQ(clock.machines[2].name, "machine2");
  const std::vector<std::int64_t> offsets = {0, 3, 0, 0, 4};
  for (std::size_t m = 0; m < offsets.size(); ++m) {
    EXPECT_EQ(clock.machines[m].offset_ns, offsets[m]) << "machine " << m;
  }
  EXPECT_EQ(clock.violations_after, 0u);
}

TEST(ClockSkew, BoundsThatCannotAllHoldGiveTheirMiddle) {
  // Forward slack -1 and backward slack -1 between machines 0 and 1: upper
  // -1, lower 1, an empty interval (clocks drifting, or a wrong match). Its
  // middle is 0: nothing moves and both violations remain.
  pipescope::Run run = one_device_per_machine({0, 1});
  std::vector<Dependency> deps;
  deps.push_back(dependency(run, {0, 0}, {1, 1}, -1));
  deps.push_back(dependency(run, {1, 0}, {0, 1}, -1));
  const ClockReport clock = correct_clocks(run, deps, noiseless());
  EXPECT_EQ(clock.pairs[0].lower_ns, 1);
  EXPECT_EQ(clock.pairs[0].upper_ns, -1);
  EXPECT_EQ(clock.machines[1].estimate_ns, 0);
  EXPECT_EQ(clock.method, ClockMethod::rejected);  // violations, and no offset to remove them
  EXPECT_FALSE(clock.applied);
  EXPECT_EQ(clock.violations_before, 2u);
  EXPECT_EQ(clock.violations_after, 2u);
  EXPECT_EQ(clock.violations_if_estimated, 2u);
}

TEST(ClockSkew, AnEstimateThatRemovesNoViolationIsNotApplied) {
  // Forward slack -1 (upper -1), backward slack -5 (lower 5): an empty
  // interval whose middle is 2. Subtracting 2 from machine 1 makes the
  // forward slack -3 and the backward slack -3: both violations remain, so
  // the times are left as read and the estimate is only reported.
  pipescope::Run run = one_device_per_machine({0, 1});
  std::vector<Dependency> deps;
  deps.push_back(dependency(run, {0, 0}, {1, 1}, -1));
  deps.push_back(dependency(run, {1, 0}, {0, 1}, -5));
  const std::vector<std::int64_t> before0 = times_of(run, 0), before1 = times_of(run, 1);
  const ClockReport clock = correct_clocks(run, deps, noiseless());
  EXPECT_EQ(clock.pairs[0].lower_ns, 5);
  EXPECT_EQ(clock.pairs[0].upper_ns, -1);
  EXPECT_EQ(clock.method, ClockMethod::rejected);
  EXPECT_FALSE(clock.applied);
  EXPECT_EQ(clock.machines[1].estimate_ns, 2);
  EXPECT_EQ(clock.machines[1].offset_ns, 0);
  EXPECT_EQ(clock.violations_before, 2u);
  EXPECT_EQ(clock.violations_after, 2u);
  EXPECT_EQ(clock.violations_if_estimated, 2u);
  EXPECT_EQ(clock.pairs[0].violations_after, 2u);
  EXPECT_EQ(times_of(run, 0), before0);
  EXPECT_EQ(times_of(run, 1), before1);

  // Imposing that same offset still applies it, violations or not.
  ClockOptions imposed;
  imposed.imposed = {{"machine1", 2}};
  const ClockReport forced = correct_clocks(run, deps, imposed);
  EXPECT_EQ(forced.method, ClockMethod::imposed);
  EXPECT_TRUE(forced.applied);
  EXPECT_EQ(forced.machines[1].offset_ns, 2);
  EXPECT_EQ(forced.violations_after, 2u);
  EXPECT_EQ(run.devices[1].jobs[0].start_ns, before1[0] - 2);
}

TEST(ClockSkew, AnEstimateThatRemovesTooFewViolationsIsNotApplied) {
  // Forward slacks -10 and -2 (upper -10), backward slack -1 (lower 1): the
  // middle -4.5 rounds to -5. Machine 1 moved 5 later would make the
  // forward slacks -5 and +3, the backward -6: two of the three violations
  // left, where an offset must remove at least 90% of them.
  pipescope::Run run;
  for (int d = 0; d < 2; ++d) {
    for (int mb = 0; mb < 3; ++mb) add_job(run, d, "forward", mb, mb * 1000, mb * 1000 + 100);
    run.devices[d].machine = d;
  }
  run.finalize();
  std::vector<Dependency> deps;
  deps.push_back(dependency(run, {0, 0}, {1, 0}, -10));
  deps.push_back(dependency(run, {0, 1}, {1, 1}, -2));
  deps.push_back(dependency(run, {1, 2}, {0, 2}, -1));
  const std::vector<std::int64_t> before = times_of(run, 1);
  const ClockReport clock = correct_clocks(run, deps, noiseless());
  EXPECT_EQ(clock.pairs[0].lower_ns, 1);
  EXPECT_EQ(clock.pairs[0].upper_ns, -10);
  EXPECT_EQ(clock.method, ClockMethod::rejected);
  EXPECT_FALSE(clock.applied);
  EXPECT_EQ(clock.machines[1].estimate_ns, -5);
  EXPECT_EQ(clock.machines[1].offset_ns, 0);
  EXPECT_EQ(clock.violations_before, 3u);
  EXPECT_EQ(clock.violations_after, 3u);
  EXPECT_EQ(clock.violations_if_estimated, 2u);
  EXPECT_EQ(times_of(run, 1), before);
  EXPECT_NE(clock.reason.find("leave 2 of the 3 violations beyond noise"), std::string::npos)
      << clock.reason;
}

TEST(ClockSkew, EmptyRun) {
  pipescope::Run run;
  const ClockReport clock = correct(run);
  EXPECT_EQ(clock.method, ClockMethod::single_machine);
  EXPECT_FALSE(clock.applied);
  EXPECT_TRUE(clock.machines.empty());
  EXPECT_TRUE(clock.pairs.empty());
  EXPECT_EQ(clock.dependencies, 0u);
  ClockOptions options;
  options.imposed = {{"machine0", 1}};
  EXPECT_THROW(correct(run, options), std::invalid_argument);
}

TEST(ClockSkew, ApplySubtractsEachMachinesOffset) {
  // Offsets {0, 5}: machine 1 moves 5 earlier; machine 0 (offset 0) and
  // machine 2 (no entry) stay.
  pipescope::Run run = one_device_per_machine({0, 1, 2});
  apply_clock_offsets(run, {0, 5});
  EXPECT_EQ(times_of(run, 0), (std::vector<std::int64_t>{0, 100, 200, 300}));
  EXPECT_EQ(times_of(run, 1), (std::vector<std::int64_t>{-5, 95, 195, 295}));
  EXPECT_EQ(times_of(run, 2), (std::vector<std::int64_t>{0, 100, 200, 300}));
}

TEST(ClockSkew, ParsesDurations) {
  // Whitespace around the number and unit, a sign, a leading or trailing dot.
  EXPECT_EQ(parse_duration_ns("-0.5 ms"), -500'000);
  EXPECT_EQ(parse_duration_ns(" 1 s "), 1'000'000'000);
  EXPECT_EQ(parse_duration_ns(".5us"), 500);
  EXPECT_EQ(parse_duration_ns("2.us"), 2'000);
  EXPECT_EQ(parse_duration_ns("0.000000001s"), 1);
  // The largest: 9223372036.854775807 s is INT64_MAX ns.
  EXPECT_EQ(parse_duration_ns("9223372036.854775807s"), std::numeric_limits<std::int64_t>::max());
  // Malformed or out of range.
  for (const char* bad : {"", "ms", ".ms", "1h", "1", "1.2.3ms", "1,5ms", "+-1ms", "1e3ms",
                          "0.0000000001s", "1.5ns", "9223372037s", "1234567890123ns"}) {
    EXPECT_FALSE(parse_duration_ns(bad).has_value()) << bad;
  }
  EXPECT_EQ(parse_clock_offset("nodeA=-1us", "offset"), std::make_pair(std::string("nodeA"), -us));
  EXPECT_THROW(parse_clock_offset("=1ms", "offset"), std::invalid_argument);
  // The message starts with the caller's name for the spec, never a flag of ours.
  try {
    parse_clock_offset("machine1=fast", "imposed offset");
    ADD_FAILURE() << "machine1=fast was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "imposed offset machine1=fast: 'fast' is not a duration with a unit (ns, us, ms, s)");
  }
}

// One nanosecond past INT64_MAX is out of range, as clock_skew.h promises:
// the whole part alone fits (9223372036 s), whole + fraction does not. (The
// check once covered the whole part only, and the sum overflowed.)
TEST(ClockSkew, ParseRejectsADurationJustPastTheLargest) {
  EXPECT_FALSE(parse_duration_ns("9223372036.854775808s").has_value());
  EXPECT_FALSE(parse_duration_ns("9223372036.9s").has_value());
}

// The rule that cannot invent an offset (clock_skew.h): a pair counts as
// evidence of skew only with more than 1% of its dependencies violated by
// more than the noise (100 us by default).
pipescope::Run two_machines_of_forwards(int jobs) {
  pipescope::Run run;
  for (int d = 0; d < 2; ++d) {
    for (int mb = 0; mb < jobs; ++mb) {
      add_job(run, d, "forward", mb, mb * 10 * kMs, mb * 10 * kMs + kMs);
    }
    run.devices[d].machine = d;
  }
  run.finalize();
  return run;
}

/// 200 forward dependencies machine 0 -> machine 1 of slack +1 ms, of which
/// the first `violated` have `slack` instead.
ClockReport two_hundred(int violated, std::int64_t slack) {
  pipescope::Run run = two_machines_of_forwards(200);
  std::vector<Dependency> deps;
  for (std::uint32_t j = 0; j < 200; ++j) {
    deps.push_back(
        dependency(run, {0, j}, {1, j}, j < static_cast<std::uint32_t>(violated) ? slack : kMs));
  }
  return correct_clocks(run, deps, ClockOptions{});
}

TEST(ClockSkew, ViolationsWithinTheNoiseAreNoEvidence) {
  const ClockReport clock = two_hundred(50, -50 * us);  // a quarter violated, by 50 us
  EXPECT_EQ(clock.method, ClockMethod::consistent);
  EXPECT_FALSE(clock.applied);
  EXPECT_EQ(clock.noise_ns, 100 * us);
  EXPECT_EQ(clock.violations_before, 50u);
  EXPECT_EQ(clock.beyond_noise_before, 0u);
  EXPECT_EQ(clock.machines[1].estimate_ns, 0);
  EXPECT_NE(clock.reason.find("timing noise"), std::string::npos) << clock.reason;
}

TEST(ClockSkew, OnePercentOfAPairViolatedIsNoEvidence) {
  const ClockReport two = two_hundred(2, -2 * kMs);  // 1%: not more than 1%
  EXPECT_EQ(two.method, ClockMethod::consistent);
  EXPECT_EQ(two.beyond_noise_before, 2u);
  EXPECT_FALSE(two.applied);
  const ClockReport three = two_hundred(3, -2 * kMs);  // 1.5%: the skew shows
  EXPECT_EQ(three.method, ClockMethod::estimated);
  EXPECT_TRUE(three.applied);
  EXPECT_EQ(three.machines[1].offset_ns, -2 * kMs);
  EXPECT_EQ(three.beyond_noise_after, 0u);
  EXPECT_EQ(three.violations_after, 0u);
}

TEST(ClockSkew, NoLayoutNoEstimateButImposedOffsetsApply) {
  pipescope::Run run = two_machines(3 * kMs);
  ClockOptions options;
  options.layout_known = false;
  const ClockReport clock = correct(run, options);
  EXPECT_EQ(clock.method, ClockMethod::no_layout);
  EXPECT_FALSE(clock.applied);
  EXPECT_EQ(clock.violations_before, 1u);
  options.imposed = {{"machine1", 3 * kMs}};
  const ClockReport imposed = correct(run, options);
  EXPECT_EQ(imposed.method, ClockMethod::imposed);
  EXPECT_EQ(imposed.violations_after, 0u);
}

}  // namespace
}  // namespace pipescope
