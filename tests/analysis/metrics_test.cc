#include "analysis/metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "analysis/job_kind.h"
#include "load/load_run.h"

namespace pipescope {
namespace {

/// Adds a job (times in ns) to device d, creating devices as needed.
void add_metrics_job(Run& run, std::size_t d, std::string_view type, std::int64_t mb,
                     std::int64_t start, std::int64_t end) {
  while (run.devices.size() <= d) {
    run.devices.emplace_back();
    run.devices.back().index = static_cast<int>(run.devices.size() - 1);
  }
  auto& jobs = run.devices[d].jobs;
  jobs.push_back({start, end, static_cast<std::int64_t>(jobs.size()), mb, run.types.intern(type),
                  static_cast<std::uint32_t>(jobs.size() + 1)});
}

// The worked example of docs/guide.md ("Metrics"), figures by hand:
// windows [0,55) and [56,90); busy 45/22 (device 0), 40/15 (device 1: its
// recv_forward [62,66) is comm time, idle).
Run worked_example() {
  pipescope::Run run;
  run.first_step = 5;
  add_metrics_job(run, 0, "forward", 0, 0, 10);
  add_metrics_job(run, 0, "forward", 1, 10, 20);
  add_metrics_job(run, 0, "backward", 0, 30, 40);
  add_metrics_job(run, 0, "backward", 1, 40, 50);
  add_metrics_job(run, 0, "optimizer", 0, 50, 55);
  add_metrics_job(run, 0, "lr", 0, 56, 58);       // follows the optimizer: opens step 1
  add_metrics_job(run, 0, "forward", 0, 60, 70);  // follows an lr: no new step
  add_metrics_job(run, 0, "backward", 0, 80, 90);
  add_metrics_job(run, 1, "forward", 0, 10, 20);
  add_metrics_job(run, 1, "forward", 1, 20, 30);
  add_metrics_job(run, 1, "backward", 0, 25, 35);  // overlaps the previous job: counted once
  add_metrics_job(run, 1, "backward", 1, 35, 45);
  add_metrics_job(run, 1, "optimizer", 0, 45, 50);
  add_metrics_job(run, 1, "recv_forward", 0, 62, 66);  // right before the forward that opens step 1
  add_metrics_job(run, 1, "forward", 0, 70, 80);
  add_metrics_job(run, 1, "backward", 0, 80, 85);
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
  EXPECT_EQ(m.steps[0].end_ns, 55);    // max(55, 50): the recv is no longer in step 0
  EXPECT_EQ(m.steps[1].start_ns, 56);  // max(min(56, 62), E_0 = 55): the lr opens it
  EXPECT_EQ(m.steps[1].end_ns, 90);
  EXPECT_EQ(m.steps[0].devices[0].busy_ns, 45);
  EXPECT_EQ(m.steps[0].devices[0].idle_ns, 10);
  EXPECT_EQ(m.steps[1].devices[0].busy_ns, 22);
  EXPECT_EQ(m.steps[1].devices[0].idle_ns, 12);
  EXPECT_EQ(m.steps[0].devices[1].busy_ns, 40);
  EXPECT_EQ(m.steps[1].devices[1].busy_ns, 15);
  EXPECT_EQ(m.steps[1].devices[1].idle_ns, 19);
  EXPECT_EQ(m.steps[1].devices[1].comm_ns, 4);
  EXPECT_DOUBLE_EQ(m.steps[0].bubble_ratio, 25.0 / 110.0);
  EXPECT_DOUBLE_EQ(m.steps[1].bubble_ratio, 31.0 / 68.0);
  // Step 6 is the last step and device 0 ran one forward in it, two in step
  // 5: it is incomplete, and the totals cover step 5 only.
  EXPECT_TRUE(m.steps[0].complete);
  EXPECT_FALSE(m.steps[1].complete);
  EXPECT_EQ(m.incomplete_steps, 1u);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 25.0 / 110.0);
  EXPECT_EQ(m.total_window_ns, 55);
  EXPECT_EQ(m.devices[0].busy_ns, 45);
  EXPECT_EQ(m.devices[0].idle_ns, 10);
  EXPECT_EQ(m.devices[1].busy_ns, 40);
  EXPECT_EQ(m.devices[1].idle_ns, 15);
  EXPECT_DOUBLE_EQ(m.devices[0].utilization, 45.0 / 55.0);
  EXPECT_DOUBLE_EQ(m.devices[1].utilization, 40.0 / 55.0);
  EXPECT_EQ(m.devices[0].steps, 2);
  EXPECT_EQ(m.devices[1].steps, 2);
  EXPECT_EQ(m.job_step[0], (std::vector<std::int32_t>{0, 0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(m.job_step[1], (std::vector<std::int32_t>{0, 0, 0, 0, 0, 1, 1, 1}));
}

// A log that begins mid-run (docs/guide.md, "Steps"): device 0 runs steps
// 0..4 at [100k, 100k + 30); device 1's log begins with the backward of
// step 2 (a tail: its first compute job is no forward of micro-batch 0),
// then runs steps 3 and 4. Its steps line up by time: the tail is step 2,
// steps 0..2 are incomplete (step 2 began before its input), 3 and 4 count.
TEST(Metrics, ALogThatBeginsMidRunLinesUpByTime) {
  pipescope::Run run;
  for (std::int64_t k = 0; k < 5; ++k) {
    add_metrics_job(run, 0, "forward", 0, 100 * k, 100 * k + 10);
    add_metrics_job(run, 0, "backward", 0, 100 * k + 10, 100 * k + 20);
    add_metrics_job(run, 0, "optimizer", 0, 100 * k + 20, 100 * k + 30);
  }
  add_metrics_job(run, 1, "backward", 0, 212, 222);
  add_metrics_job(run, 1, "optimizer", 0, 222, 226);
  for (std::int64_t k = 3; k < 5; ++k) {
    add_metrics_job(run, 1, "forward", 0, 100 * k + 2, 100 * k + 12);
    add_metrics_job(run, 1, "backward", 0, 100 * k + 12, 100 * k + 22);
    add_metrics_job(run, 1, "optimizer", 0, 100 * k + 22, 100 * k + 26);
  }
  run.finalize();
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 5u);
  EXPECT_EQ(m.job_step[1], (std::vector<std::int32_t>{2, 2, 3, 3, 3, 4, 4, 4}));
  std::vector<bool> complete;
  for (const StepWindow& w : m.steps) complete.push_back(w.complete);
  EXPECT_EQ(complete, (std::vector<bool>{false, false, false, true, true}));
  ASSERT_EQ(m.segments.size(), 1u);
  EXPECT_EQ(m.segments[0].lead, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(m.segments[0].first_whole, (std::vector<std::int64_t>{0, 3}));
  // Windows [300, 330) and [400, 430): device 0 busy 30, device 1 24 each.
  EXPECT_EQ(m.total_window_ns, 60);
  EXPECT_EQ(m.devices[1].busy_ns, 48);
  // Counted by its own steps, device 1's log would be steps 0..2.
}

TEST(Metrics, StepBeginsOnlyAfterANonForwardComputeJob) {
  pipescope::Run run;
  add_metrics_job(run, 0, "recv_forward", 0, 0, 1);  // first job: step 0 begins here
  add_metrics_job(run, 0, "forward", 0, 1, 2);       // no earlier compute job: same step
  add_metrics_job(run, 0, "forward0", 1, 2, 3);
  add_metrics_job(run, 0, "forward1", 0, 3, 4);  // previous compute job is a forward: same step
  add_metrics_job(run, 0, "backward1", 0, 4, 5);
  add_metrics_job(run, 0, "other_job", 0, 5, 6);
  add_metrics_job(run, 0, "send_backward", 0, 6, 7);
  add_metrics_job(run, 0, "forward(chunk0)", 0, 7,
                  8);  // previous compute job is a backward: new step
  add_metrics_job(run, 0, "forward(chunk0)", 1, 8, 9);
  add_metrics_job(run, 0, "optimizer", 0, 9, 10);
  add_metrics_job(run, 0, "forward", 1, 10, 11);  // micro-batch 1: not a step start
  run.finalize();
  const Metrics m = compute_metrics(run);
  const std::vector<std::int32_t> expected = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  EXPECT_EQ(m.job_step[0], expected);
}

// The prologue: lr and receive jobs right before the job that opens a step
// belong to that step; send and other jobs stay with the step they follow.
TEST(Metrics, PrologueJoinsTheStepItOpens) {
  pipescope::Run run;
  add_metrics_job(run, 0, "forward", 0, 0, 1);         // 0: first job, step 0
  add_metrics_job(run, 0, "backward", 0, 1, 2);        // 1
  add_metrics_job(run, 0, "optimizer", 0, 2, 3);       // 2
  add_metrics_job(run, 0, "recv_backward", 0, 3, 4);   // 3: recv, no F/B/O before job 6: step 1
  add_metrics_job(run, 0, "send_backward", 0, 4, 5);   // 4: send: stays in step 0
  add_metrics_job(run, 0, "memcpy", 0, 5, 6);          // 5: other: stays in step 0
  add_metrics_job(run, 0, "recv_forward", 0, 6, 7);    // 6: step 1
  add_metrics_job(run, 0, "forward", 0, 7, 8);         // 7: opens step 1 (previous: optimizer)
  add_metrics_job(run, 0, "backward", 0, 8, 9);        // 8
  add_metrics_job(run, 0, "optimizer", 0, 9, 10);      // 9
  add_metrics_job(run, 0, "recv_forward", 0, 10, 11);  // 10: an optimizer follows: stays in step 1
  add_metrics_job(run, 0, "optimizer_sync", 0, 11, 12);  // 11
  add_metrics_job(run, 0, "recv_forward", 0, 12, 13);    // 12: before the lr that opens step 2
  add_metrics_job(run, 0, "lr_decay", 0, 13, 14);        // 13: opens step 2 (type begins with "lr")
  add_metrics_job(run, 0, "recv_forward", 0, 14, 15);    // 14: after the opener: step 2 anyway
  add_metrics_job(run, 0, "forward", 0, 15, 16);         // 15: previous is an lr: no new step
  add_metrics_job(run, 0, "backward", 0, 16, 17);        // 16
  add_metrics_job(run, 0, "forward", 0, 17, 18);         // 17: opens step 3 (previous: backward)
  run.finalize();
  const Metrics m = compute_metrics(run);
  const std::vector<std::int32_t> expected = {0, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3};
  EXPECT_EQ(m.job_step[0], expected);
  ASSERT_EQ(m.steps.size(), 4u);
  EXPECT_EQ(m.devices[0].steps, 4);
  // Step 0 holds jobs 0-2, 4, 5: [0, 6). Step 1 starts at its first job (3)
  // but not before E_0 = 6, and ends at job 11: [6, 12).
  EXPECT_EQ(m.steps[0].start_ns, 0);
  EXPECT_EQ(m.steps[0].end_ns, 6);
  EXPECT_EQ(m.steps[1].start_ns, 6);
  EXPECT_EQ(m.steps[1].end_ns, 12);
  EXPECT_EQ(m.steps[2].start_ns, 12);
  EXPECT_EQ(m.steps[2].end_ns, 17);
  EXPECT_EQ(m.steps[3].start_ns, 17);
  EXPECT_EQ(m.steps[3].end_ns, 18);
}

TEST(Metrics, LrOpensAStepOnlyAfterAStepSteeringJob) {
  pipescope::Run run;
  add_metrics_job(run, 0, "recv_forward", 0, 0, 1);  // first job: opens step 0
  add_metrics_job(run, 0, "lr", 0, 1, 2);            // nothing but comm before it: step 0
  add_metrics_job(run, 0, "forward", 0, 2, 3);       // previous is an lr: step 0
  add_metrics_job(run, 0, "backward", 0, 3, 4);
  add_metrics_job(run, 0, "lr", 0, 4, 5);  // opens step 1, though no optimizer came
  add_metrics_job(run, 0, "forward", 1, 5, 6);
  add_metrics_job(run, 1, "lr", 0, 0, 1);       // first job
  add_metrics_job(run, 1, "forward", 0, 1, 2);  // previous is an lr: no new step
  run.finalize();
  const Metrics m = compute_metrics(run);
  EXPECT_EQ(m.job_step[0], (std::vector<std::int32_t>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(m.job_step[1], (std::vector<std::int32_t>{0, 0}));
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].end_ns, 4);
  EXPECT_EQ(m.steps[1].start_ns, 4);
}

// Taken to the letter, an lr that follows an lr opens another step, and the
// first lr (right before that opener) joins it: the step the first lr opened
// is left without a job. With no job on any device its window is empty, at
// the end of the window before (at the earliest job for step 0).
TEST(Metrics, ConsecutiveLrJobsLeaveAnEmptyStep) {
  pipescope::Run run;
  add_metrics_job(run, 0, "forward", 0, 0, 10);
  add_metrics_job(run, 0, "optimizer", 0, 10, 12);
  add_metrics_job(run, 0, "lr", 0, 14, 15);  // opens step 1, then joins step 2
  add_metrics_job(run, 0, "lr", 0, 15, 16);  // follows an lr: opens step 2
  add_metrics_job(run, 0, "forward", 0, 16, 20);
  run.finalize();
  Metrics m = compute_metrics(run);
  EXPECT_EQ(m.job_step[0], (std::vector<std::int32_t>{0, 0, 2, 2, 2}));
  ASSERT_EQ(m.steps.size(), 3u);
  EXPECT_EQ(m.devices[0].steps, 3);
  EXPECT_EQ(m.steps[1].start_ns, 12);
  EXPECT_EQ(m.steps[1].end_ns, 12);
  EXPECT_EQ(m.steps[1].bubble_ratio, 0.0);
  EXPECT_EQ(m.steps[2].start_ns, 14);
  EXPECT_EQ(m.steps[2].end_ns, 20);
  EXPECT_EQ(m.total_window_ns, 18);
  EXPECT_EQ(m.devices[0].busy_ns, 18);

  pipescope::Run first;
  add_metrics_job(first, 0, "lr", 0, 5, 6);  // the first job, then joins step 1
  add_metrics_job(first, 0, "lr", 0, 6, 7);
  add_metrics_job(first, 0, "forward", 0, 7, 9);
  first.finalize();
  m = compute_metrics(first);
  EXPECT_EQ(m.job_step[0], (std::vector<std::int32_t>{1, 1, 1}));
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].start_ns, 5);
  EXPECT_EQ(m.steps[0].end_ns, 5);
  EXPECT_EQ(m.steps[1].start_ns, 5);
  EXPECT_EQ(m.steps[1].end_ns, 9);
}

TEST(Metrics, LrKind) {
  EXPECT_EQ(classify_job_type("lr"), JobKind::lr);
  EXPECT_EQ(classify_job_type("lr_scheduler"), JobKind::lr);
  EXPECT_EQ(classify_job_type("l"), JobKind::other);
  EXPECT_EQ(classify_job_type("recv_forward"), JobKind::comm);
  EXPECT_EQ(job_kind_name(JobKind::lr), "lr");
  EXPECT_TRUE(is_receive_type("recv_v2"));
  EXPECT_FALSE(is_receive_type("send_v2"));
}

// The worked example once every device has started a step after step 6:
// step 6 is complete, and the totals cover both windows (the guide's
// "had the run gone on" figures).
TEST(Metrics, WorkedExampleWithALaterStepCountsBothWindows) {
  pipescope::Run run = worked_example();
  add_metrics_job(run, 0, "forward", 0, 95, 100);  // after a backward: opens step 7
  add_metrics_job(run, 1, "forward", 0, 95, 100);
  run.finalize();
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 3u);
  EXPECT_TRUE(m.steps[0].complete);
  EXPECT_TRUE(m.steps[1].complete);
  EXPECT_FALSE(m.steps[2].complete);  // the last, one forward against two
  EXPECT_EQ(m.steps[1].start_ns, 56);
  EXPECT_EQ(m.steps[1].end_ns, 90);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 56.0 / 178.0);
  EXPECT_EQ(m.comm_ns, 4);
  EXPECT_EQ(m.total_window_ns, 89);
  EXPECT_EQ(m.devices[0].busy_ns, 67);
  EXPECT_EQ(m.devices[0].idle_ns, 22);
  EXPECT_EQ(m.devices[1].busy_ns, 55);
  EXPECT_EQ(m.devices[1].idle_ns, 34);
  EXPECT_DOUBLE_EQ(m.devices[0].utilization, 67.0 / 89.0);
  EXPECT_DOUBLE_EQ(m.devices[1].utilization, 55.0 / 89.0);
}

// The complete-step rule, clause by clause.
TEST(Metrics, CompleteSteps) {
  // A first and only step is complete, however few jobs it holds.
  {
    pipescope::Run run;
    add_metrics_job(run, 0, "forward", 0, 0, 10);
    run.finalize();
    const Metrics m = compute_metrics(run);
    ASSERT_EQ(m.steps.size(), 1u);
    EXPECT_TRUE(m.steps[0].complete);
    EXPECT_EQ(m.total_window_ns, 10);
  }
  // The last step holding as many jobs of each kind as the previous complete
  // one is complete; one job fewer of any kind on any device is not.
  for (const bool cut : {false, true}) {
    pipescope::Run run;
    for (std::size_t d = 0; d < 2; ++d) {
      for (std::int64_t base : {0, 100}) {
        add_metrics_job(run, d, "forward", 0, base, base + 10);
        add_metrics_job(run, d, "backward", 0, base + 10, base + 20);
        if (!(cut && d == 1 && base == 100))
          add_metrics_job(run, d, "optimizer", 0, base + 20, base + 25);
      }
    }
    run.finalize();
    const Metrics m = compute_metrics(run);
    ASSERT_EQ(m.steps.size(), 2u);
    EXPECT_TRUE(m.steps[0].complete);
    EXPECT_EQ(m.steps[1].complete, !cut) << cut;
    EXPECT_EQ(m.total_window_ns, cut ? 25 : 50);
    EXPECT_EQ(m.segments.size(), 1u);
    EXPECT_EQ(m.segments[0].complete, cut ? 1u : 2u);
  }
  // A step that a device never got past, while another device went on, is
  // incomplete even though it is not the last.
  {
    pipescope::Run run;
    for (std::int64_t base : {0, 100, 200}) {
      add_metrics_job(run, 0, "forward", 0, base, base + 10);
      add_metrics_job(run, 0, "backward", 0, base + 10, base + 20);
    }
    add_metrics_job(run, 1, "forward", 0, 0, 10);
    add_metrics_job(run, 1, "backward", 0, 10, 20);
    add_metrics_job(run, 1, "forward", 0, 100, 110);
    add_metrics_job(run, 1, "backward", 0, 110, 120);
    run.finalize();
    const Metrics m = compute_metrics(run);
    ASSERT_EQ(m.steps.size(), 3u);
    EXPECT_TRUE(m.steps[0].complete);
    EXPECT_FALSE(m.steps[1].complete);  // device 1 never started step 2
    // The last step: no complete step before it in the segment but step 0,
    // whose jobs it matches on device 0; device 1 holds none of them.
    EXPECT_FALSE(m.steps[2].complete);
    EXPECT_EQ(m.incomplete_steps, 2u);
    EXPECT_EQ(m.total_window_ns, 20);
  }
}

// testdata/prologue, read as `analyze` reads it: the windows of its
// EXPECTED.md (device 0 opens steps with lr, device 1 with a recv_forward).
TEST(Metrics, PrologueSample) {
  const LoadedRun loaded =
      load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/prologue"}), LoadOptions{});
  const Metrics& m = loaded.metrics;
  constexpr std::int64_t kB = 1'697'793'307'000'000'000;
  constexpr std::int64_t kMs = 1'000'000;
  ASSERT_EQ(m.steps.size(), 3u);
  const std::int64_t bounds[3][2] = {{0, 102}, {103, 206}, {206, 229}};
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(m.steps[k].step, 10 + static_cast<std::int64_t>(k));
    EXPECT_EQ(m.steps[k].start_ns, kB + bounds[k][0] * kMs) << k;
    EXPECT_EQ(m.steps[k].end_ns, kB + bounds[k][1] * kMs) << k;
  }
  EXPECT_EQ(m.job_step[0], (std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2}));
  // The send_backward after the optimizer (job 8) stays in step 10; the
  // recv_forward at 103 (job 9) opens step 11 with the forward after it.
  EXPECT_EQ(m.job_step[1], (std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                                      1, 1, 1, 1, 1, 1, 1, 1, 2, 2}));
  // Comm jobs are not busy: 95 ms before the amendment, 31 of them in comm jobs.
  EXPECT_EQ(m.steps[1].devices[1].busy_ns, 64 * kMs);
  EXPECT_EQ(m.steps[1].devices[1].comm_ns, 31 * kMs);
  // Step 12 was cut (device 0 ran one forward in it, two in step 11): it is
  // left out of the totals.
  EXPECT_TRUE(m.steps[0].complete);
  EXPECT_TRUE(m.steps[1].complete);
  EXPECT_FALSE(m.steps[2].complete);
  EXPECT_EQ(m.devices[0].busy_ns, 130 * kMs);
  EXPECT_EQ(m.devices[1].idle_ns, 77 * kMs);
  EXPECT_EQ(m.devices[1].comm_ns, 45 * kMs);
  EXPECT_EQ(m.comm_ns, 45 * kMs);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 152.0 / 410.0);
}

TEST(Metrics, DeviceMissingFromAStepIsIdleForAllOfIt) {
  pipescope::Run run;
  add_metrics_job(run, 0, "forward", 0, 0, 10);
  add_metrics_job(run, 0, "backward", 0, 10, 20);
  add_metrics_job(run, 0, "forward", 0, 20, 30);
  add_metrics_job(run, 1, "forward", 0, 0, 10);
  run.devices.emplace_back();  // a device without any job
  run.devices.back().index = 2;
  run.finalize();
  const Metrics m = compute_metrics(run);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[1].devices[1].busy_ns, 0);
  EXPECT_EQ(m.steps[1].devices[1].idle_ns, 10);
  EXPECT_EQ(m.steps[0].devices[2].idle_ns, 20);
  EXPECT_DOUBLE_EQ(m.steps[0].bubble_ratio, 30.0 / 60.0);
  EXPECT_DOUBLE_EQ(m.steps[1].bubble_ratio, 20.0 / 30.0);
  EXPECT_EQ(m.devices[2].steps, 0);
  // Device 1 never started step 1, and step 1 (the last) has no complete
  // step before it: neither is complete, so the totals cover nothing.
  EXPECT_FALSE(m.steps[0].complete);
  EXPECT_FALSE(m.steps[1].complete);
  EXPECT_EQ(m.total_window_ns, 0);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 0.0);
  // The device without a job is not of the segment: it does not keep a
  // step from being complete, and it is idle for all of every window.
  pipescope::Run full;
  for (std::size_t d = 0; d < 2; ++d) {
    add_metrics_job(full, d, "forward", 0, 0, 10);
    add_metrics_job(full, d, "backward", 0, 10, 20);
    add_metrics_job(full, d, "forward", 0, 20, 30);
    add_metrics_job(full, d, "backward", 0, 30, 40);
  }
  full.devices.emplace_back();
  full.devices.back().index = 2;
  full.finalize();
  const Metrics f = compute_metrics(full);
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_TRUE(f.steps[0].complete);
  EXPECT_TRUE(f.steps[1].complete);
  EXPECT_EQ(f.devices[2].idle_ns, 40);
  EXPECT_DOUBLE_EQ(f.bubble_ratio, 40.0 / 120.0);
}

TEST(Metrics, WindowsNeverOverlapOrGoNegative) {
  pipescope::Run run;
  // Device 1's step 0 ends after device 0's step 1: windows must stay disjoint.
  add_metrics_job(run, 0, "forward", 0, 0, 10);
  add_metrics_job(run, 0, "backward", 0, 10, 20);
  add_metrics_job(run, 0, "forward", 0, 20, 30);
  add_metrics_job(run, 0, "backward", 0, 30, 35);
  add_metrics_job(run, 1, "forward", 0, 5, 15);
  add_metrics_job(run, 1, "backward", 0, 15, 40);
  add_metrics_job(run, 1, "forward", 0, 40, 41);
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
