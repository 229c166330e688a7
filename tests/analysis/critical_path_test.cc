// critical_paths on runs of a few jobs, each path walked by hand from the
// rule of critical_path.h (docs/guide.md, "Explaining the bubbles"): from the job
// that ends the step, go back to whichever input arrived last (the previous
// job of the device, or the job of another stage it depends on; on a tie the
// dependency), a blocking recv waiting for the same input as the job after it.
// Times in ns; dN.jI is job I (start order) of the device at position N.
#include "analysis/critical_path.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "support/hand_run.h"

namespace pipescope {
namespace {

using testing::add_job;

struct Analysed {
  Metrics metrics;
  std::vector<CriticalPath> paths;
};

Analysed analyse(const pipescope::Run& run, const StageMap& stages) {
  Analysed a;
  a.metrics = compute_metrics(run);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const Dependencies deps = find_dependencies(run, a.metrics.job_step, stages, roles);
  a.paths = critical_paths(run, a.metrics, stages, deps, roles);
  return a;
}

Analysed analyse(const pipescope::Run& run) {
  return analyse(run, one_stage_per_device(run.devices.size()));
}

std::vector<std::string> jobs_of(const CriticalPath& path) {
  std::vector<std::string> out;
  for (const CriticalPathJob& j : path.jobs) {
    out.push_back(fmt::format("d{}.j{}", j.job.device, j.job.job));
  }
  return out;
}

std::vector<std::int64_t> waits_of(const CriticalPath& path) {
  std::vector<std::int64_t> out;
  for (const CriticalPathJob& j : path.jobs) out.push_back(j.wait_ns);
  return out;
}

std::vector<bool> via_of(const CriticalPath& path) {
  std::vector<bool> out;
  for (const CriticalPathJob& j : path.jobs) out.push_back(j.via_dependency);
  return out;
}

std::vector<int> stages_of(const CriticalPath& path) {
  std::vector<int> out;
  for (const CriticalPathJob& j : path.jobs) out.push_back(j.stage);
  return out;
}

/// lead-in + Σ stage time + Σ waits: the step's window when its last job ends it.
std::int64_t accounted(const CriticalPath& path) {
  std::int64_t sum = path.lead_in_ns + path.wait_ns;
  for (const std::int64_t ns : path.stage_ns) sum += ns;
  return sum;
}

// 1F1B, P = 2, M = 2, one step:
//   device 0 (stage 0): F0 [0,10)  F1 [10,20) B0 [34,44) B1 [54,64)    jobs 0 1 2 3
//   device 1 (stage 1): F0 [12,22) B0 [22,32) F1 [32,42) B1 [42,52)    jobs 0 1 2 3
// Window [0,64). Walking back from d0.j3 (B1, ends 64, the step's last):
//   d0.j3: previous d0.j2 ends 44, input d1.j3 (B1) ends 52 -> d1.j3 (dependency)
//   d1.j3: no input (last stage, V = 1)                       -> d1.j2
//   d1.j2: previous d1.j1 ends 32, input d0.j1 (F1) ends 20   -> d1.j1
//   d1.j1: no input                                           -> d1.j0
//   d1.j0: no previous, input d0.j0 (F0)                      -> d0.j0 (dependency)
//   d0.j0: neither: the path starts here.
// Path d0.j0 d1.j0 d1.j1 d1.j2 d1.j3 d0.j3; waits 0, 12-10, 22-22, 32-32,
// 42-42, 54-52 = 4 in all; stage 0 runs F0 and B1 (20), stage 1 all four of
// its jobs (40); lead-in 0; 0 + 20 + 40 + 4 = 64.
pipescope::Run two_stage_one_f_one_b() {
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "forward", 1, 10, 20);
  add_job(run, 0, "backward", 0, 34, 44);
  add_job(run, 0, "backward", 1, 54, 64);
  add_job(run, 1, "forward", 0, 12, 22);
  add_job(run, 1, "backward", 0, 22, 32);
  add_job(run, 1, "forward", 1, 32, 42);
  add_job(run, 1, "backward", 1, 42, 52);
  run.finalize();
  return run;
}

TEST(CriticalPath, TwoStageOneFOneB) {
  const pipescope::Run run = two_stage_one_f_one_b();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  const CriticalPath& path = a.paths[0];
  EXPECT_EQ(path.step, 0u);
  EXPECT_EQ(jobs_of(path),
            (std::vector<std::string>{"d0.j0", "d1.j0", "d1.j1", "d1.j2", "d1.j3", "d0.j3"}));
  EXPECT_EQ(stages_of(path), (std::vector<int>{0, 1, 1, 1, 1, 0}));
  EXPECT_EQ(waits_of(path), (std::vector<std::int64_t>{0, 2, 0, 0, 0, 2}));
  EXPECT_EQ(via_of(path), (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(path.wait_ns, 4);
  EXPECT_EQ(path.lead_in_ns, 0);
  EXPECT_EQ(path.stage_ns, (std::vector<std::int64_t>{20, 40}));
  EXPECT_EQ(accounted(path), 64);
  EXPECT_EQ(a.metrics.steps[0].window_ns(), 64);
}

/// Two stages, two steps of F0 B0 each: windows [0,34) and [40,74).
pipescope::Run two_steps_of_two_stages() {
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "backward", 0, 24, 34);
  add_job(run, 0, "forward", 0, 40, 50);
  add_job(run, 0, "backward", 0, 64, 74);
  add_job(run, 1, "forward", 0, 12, 22);
  add_job(run, 1, "backward", 0, 22, 24);
  add_job(run, 1, "forward", 0, 52, 62);
  add_job(run, 1, "backward", 0, 62, 64);
  run.finalize();
  return run;
}

TEST(CriticalPath, OneDeviceIsItsJobsInOrder) {
  // One stage: no dependency, so the path is every job of the step, each
  // waiting for the one before it. F0 [0,10) F1 [12,22) B0 [25,35) B1 [35,45):
  // waits 0, 2, 3, 0; stage time 40; 40 + 5 = 45, the window.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "forward", 1, 12, 22);
  add_job(run, 0, "backward", 0, 25, 35);
  add_job(run, 0, "backward", 1, 35, 45);
  run.finalize();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  const CriticalPath& path = a.paths[0];
  EXPECT_EQ(jobs_of(path), (std::vector<std::string>{"d0.j0", "d0.j1", "d0.j2", "d0.j3"}));
  EXPECT_EQ(waits_of(path), (std::vector<std::int64_t>{0, 2, 3, 0}));
  EXPECT_EQ(via_of(path), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(path.wait_ns, 5);
  EXPECT_EQ(path.stage_ns, (std::vector<std::int64_t>{40}));
  EXPECT_EQ(accounted(path), 45);
}

TEST(CriticalPath, OneJob) {
  // The step is the job: path of one job, no wait, its length the window.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 100, 130);
  run.finalize();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  EXPECT_EQ(jobs_of(a.paths[0]), (std::vector<std::string>{"d0.j0"}));
  EXPECT_EQ(a.paths[0].lead_in_ns, 0);
  EXPECT_EQ(a.paths[0].wait_ns, 0);
  EXPECT_EQ(a.paths[0].stage_ns, (std::vector<std::int64_t>{30}));
}

TEST(CriticalPath, OnATieTheDependencyWins) {
  //   device 0 (stage 0): F0 [0,10)  F1 [10,20) B0 [40,50) B1 [60,70)   jobs 0 1 2 3
  //   device 1 (stage 1): F0 [10,15) B0 [15,20) F1 [22,32) B1 [32,42)   jobs 0 1 2 3
  // From d0.j3 (ends 70): previous d0.j2 ends 50, input d1.j3 ends 42 -> d0.j2.
  // d0.j2 (B0): previous d0.j1 and input d1.j1 both end at 20 -> the input.
  // d1.j1: -> d1.j0 (no input); d1.j0: -> d0.j0 (input, no previous).
  // Waits 0, 0, 40-20, 60-50 = 30; stage 0: 10+10+10, stage 1: 5+5.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "forward", 1, 10, 20);
  add_job(run, 0, "backward", 0, 40, 50);
  add_job(run, 0, "backward", 1, 60, 70);
  add_job(run, 1, "forward", 0, 10, 15);
  add_job(run, 1, "backward", 0, 15, 20);
  add_job(run, 1, "forward", 1, 22, 32);
  add_job(run, 1, "backward", 1, 32, 42);
  run.finalize();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  const CriticalPath& path = a.paths[0];
  EXPECT_EQ(jobs_of(path), (std::vector<std::string>{"d0.j0", "d1.j0", "d1.j1", "d0.j2", "d0.j3"}));
  EXPECT_EQ(via_of(path), (std::vector<bool>{false, true, false, true, false}));
  EXPECT_EQ(waits_of(path), (std::vector<std::int64_t>{0, 0, 0, 20, 10}));
  EXPECT_EQ(path.stage_ns, (std::vector<std::int64_t>{30, 10}));
  EXPECT_EQ(accounted(path), 70);
}

TEST(CriticalPath, ABlockingRecvWaitsForTheProducerOfTheJobAfterIt) {
  //   device 0 (stage 0): F0 [0,10) send [10,11) B0 [40,50)                     jobs 0 1 2
  //   device 1 (stage 1): recv [10,12) recv [12,14) F0 [14,24) B0 [24,34)      jobs 0 1 2 3
  // From d0.j2 (B0): previous d0.j1 ends 11, input d1.j3 ends 34 -> d1.j3.
  // d1.j3 -> d1.j2 (no input). d1.j2 (F0): previous d1.j1 ends 14, input
  // d0.j0 ends 10 -> d1.j1. d1.j1, a recv: its input is that of the next
  // non-comm job, F0's d0.j0 (ends 10); previous d1.j0 ends 12 -> d1.j0.
  // d1.j0, a recv too: input d0.j0 (through d1.j1 to d1.j2), no previous -> d0.j0.
  // Waits 0, 10-10, 0, 0, 0, 40-34 = 6; stage 0: 10+10, stage 1: 2+2+10+10.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "send_forward", 0, 10, 11);
  add_job(run, 0, "backward", 0, 40, 50);
  add_job(run, 1, "recv_forward", 0, 10, 12);
  add_job(run, 1, "recv_forward", 0, 12, 14);
  add_job(run, 1, "forward", 0, 14, 24);
  add_job(run, 1, "backward", 0, 24, 34);
  run.finalize();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  const CriticalPath& path = a.paths[0];
  EXPECT_EQ(jobs_of(path),
            (std::vector<std::string>{"d0.j0", "d1.j0", "d1.j1", "d1.j2", "d1.j3", "d0.j2"}));
  EXPECT_EQ(via_of(path), (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(path.wait_ns, 6);
  EXPECT_EQ(path.stage_ns, (std::vector<std::int64_t>{20, 24}));
  EXPECT_EQ(path.lead_in_ns, 0);
  EXPECT_EQ(accounted(path), 50);
}

TEST(CriticalPath, ARecvPostedBeforeItsInputEndedIsOnThePathFromThatEndOnly) {
  //   device 0 (stage 0): F0 [0,10) B0 [30,40)                  jobs 0 1
  //   device 1 (stage 1): recv [2,12) F0 [12,20) B0 [20,28)     jobs 0 1 2
  // The recv was posted at 2 and waited inside itself until F0's data
  // (sent at 10) arrived at 12. The path d0.j0 -> d1.j0 -> d1.j1 -> d1.j2
  // -> d0.j1 holds the recv from 10 to 12 only: waits 0, 0, 0, 0, 30-28 = 2
  // (not 2-10 = -8 for the recv); stage 0: 10+10, stage 1: 2+8+8.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "backward", 0, 30, 40);
  add_job(run, 1, "recv_forward", 0, 2, 12);
  add_job(run, 1, "forward", 0, 12, 20);
  add_job(run, 1, "backward", 0, 20, 28);
  run.finalize();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  const CriticalPath& path = a.paths[0];
  EXPECT_EQ(jobs_of(path), (std::vector<std::string>{"d0.j0", "d1.j0", "d1.j1", "d1.j2", "d0.j1"}));
  EXPECT_EQ(waits_of(path), (std::vector<std::int64_t>{0, 0, 0, 0, 2}));
  EXPECT_EQ(path.stage_ns, (std::vector<std::int64_t>{20, 18}));
  EXPECT_EQ(path.lead_in_ns, 0);
  EXPECT_EQ(accounted(path), 40);
}

TEST(CriticalPath, ARecvBeforeAJobWithoutInputStartsThePathWithALeadIn) {
  //   device 0 (stage 0): F0 [5,15) B0 [40,50)                         jobs 0 1
  //   device 1 (stage 1): recv [10,12) memcpy [12,14) F0 [17,27) B0 [27,38)   jobs 0 1 2 3
  // Window [5,50). From d0.j1: input d1.j3 (ends 38) beats previous d0.j0
  // (15). d1.j3 -> d1.j2. d1.j2: previous d1.j1 ends 14, input d0.j0 ends 15
  // -> d0.j0 (dependency); d0.j0 starts the path. Lead-in 5 - 5 = 0.
  // The recv is followed by memcpy (not comm, no input): it waits for
  // nothing, so had the walk reached it the path would have begun there.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 5, 15);
  add_job(run, 0, "backward", 0, 40, 50);
  add_job(run, 1, "recv_forward", 0, 10, 12);
  add_job(run, 1, "memcpy", 0, 12, 14);
  add_job(run, 1, "forward", 0, 17, 27);
  add_job(run, 1, "backward", 0, 27, 38);
  run.finalize();
  Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  EXPECT_EQ(jobs_of(a.paths[0]), (std::vector<std::string>{"d0.j0", "d1.j2", "d1.j3", "d0.j1"}));
  EXPECT_EQ(a.paths[0].lead_in_ns, 0);
  EXPECT_EQ(accounted(a.paths[0]), 45);

  // Make F0 on device 0 end early (F0 [5,8)): now d1.j2's previous d1.j1
  // (ends 14) arrived last -> d1.j1 -> d1.j0, a recv whose next job is
  // memcpy: no input, no previous, the path starts at 10. Window [5,50):
  // lead-in 10 - 5 = 5; waits 0, 17-14, 0, 40-38 = 5; stage 0: B0 10;
  // stage 1: 2+2+10+11 = 25; 5 + 5 + 10 + 25 = 45.
  run.devices[0].jobs[0].end_ns = 8;
  a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  const CriticalPath& path = a.paths[0];
  EXPECT_EQ(jobs_of(path), (std::vector<std::string>{"d1.j0", "d1.j1", "d1.j2", "d1.j3", "d0.j1"}));
  EXPECT_EQ(path.lead_in_ns, 5);
  EXPECT_EQ(path.wait_ns, 5);
  EXPECT_EQ(path.stage_ns, (std::vector<std::int64_t>{10, 25}));
  EXPECT_EQ(via_of(path), (std::vector<bool>{false, false, false, false, true}));
  EXPECT_EQ(accounted(path), 45);
}

TEST(CriticalPath, OnePathPerStepWithinItsStep) {
  // Two steps of P = 2, M = 1:
  //   device 0: F0 [0,10)  B0 [24,34) | F0 [40,50) B0 [64,74)    jobs 0 1 | 2 3
  //   device 1: F0 [12,22) B0 [22,24) | F0 [52,62) B0 [62,64)    jobs 0 1 | 2 3
  // Windows [0,34) and [max(40,34), 74) = [40,74). Step 0: d0.j0 d1.j0
  // d1.j1 d0.j1 (waits 2, 0, 0). Step 1 likewise with jobs 2, 3: d1.j2's
  // previous job (d1.j1) is step 0's, so the walk takes its input d0.j2,
  // whose previous is step 0's too: the path starts there.
  pipescope::Run run = two_steps_of_two_stages();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 2u);
  EXPECT_EQ(a.paths[0].step, 0u);
  EXPECT_EQ(a.paths[1].step, 1u);
  EXPECT_EQ(jobs_of(a.paths[0]), (std::vector<std::string>{"d0.j0", "d1.j0", "d1.j1", "d0.j1"}));
  EXPECT_EQ(jobs_of(a.paths[1]), (std::vector<std::string>{"d0.j2", "d1.j2", "d1.j3", "d0.j3"}));
  for (const CriticalPath& path : a.paths) {
    EXPECT_EQ(path.lead_in_ns, 0);
    EXPECT_EQ(path.wait_ns, 2);
    EXPECT_EQ(path.stage_ns, (std::vector<std::int64_t>{20, 12}));
    EXPECT_EQ(accounted(path), 34);
  }
}

// The paths of chosen steps only (what the HTML report embeds) are the
// same paths, jobs and figures as the walk of every step gives them.
TEST(CriticalPath, PathsOfChosenStepsAreThoseOfTheFullWalk) {
  const pipescope::Run run = two_steps_of_two_stages();
  const Metrics metrics = compute_metrics(run);
  const StageMap stages = one_stage_per_device(run.devices.size());
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const Dependencies deps = find_dependencies(run, metrics.job_step, stages, roles);
  const std::vector<CriticalPath> all = critical_paths(run, metrics, stages, deps, roles);
  ASSERT_EQ(all.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    const std::vector<CriticalPath> one =
        critical_paths_of_steps(run, metrics, stages, deps, roles, {k});
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].step, k);
    EXPECT_EQ(jobs_of(one[0]), jobs_of(all[k]));
    EXPECT_EQ(waits_of(one[0]), waits_of(all[k]));
    EXPECT_EQ(one[0].stage_ns, all[k].stage_ns);
  }
  EXPECT_EQ(critical_paths_of_steps(run, metrics, stages, deps, roles, {0, 1}).size(), 2u);
  EXPECT_TRUE(critical_paths_of_steps(run, metrics, stages, deps, roles, {}).empty());
  EXPECT_TRUE(critical_paths_of_steps(run, metrics, stages, deps, roles, {7}).empty());
}

TEST(CriticalPath, EmptyWindowHasNoPath) {
  // Device 0's step 0 runs until 100; device 1's step 1 [20,30) lies inside
  // it, so window 1 is [max(20,100), max(30,100)) = [100,100): empty, no path.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "backward", 0, 10, 100);
  add_job(run, 1, "forward", 0, 0, 5);
  add_job(run, 1, "backward", 0, 5, 10);
  add_job(run, 1, "forward", 0, 20, 25);
  add_job(run, 1, "backward", 0, 25, 30);
  run.finalize();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.metrics.steps.size(), 2u);
  ASSERT_EQ(a.metrics.steps[1].window_ns(), 0);
  ASSERT_EQ(a.paths.size(), 1u);
  EXPECT_EQ(a.paths[0].step, 0u);

  // A step of zero-length jobs only: window [5,5), no path.
  pipescope::Run flat;
  add_job(flat, 0, "forward", 0, 5, 5);
  flat.finalize();
  EXPECT_TRUE(analyse(flat).paths.empty());
}

TEST(CriticalPath, EmptyRun) {
  EXPECT_TRUE(analyse(pipescope::Run{}).paths.empty());
  pipescope::Run idle;
  testing::device_at(idle, 2);
  EXPECT_TRUE(analyse(idle).paths.empty());
}

TEST(CriticalPath, LastJobTiesGoToTheLowerDeviceAndEarlierJob) {
  // Device 0: F0 [0,10) F1 [10,20); device 1: F0 [10,20). d0.j1 and d1.j0
  // both end the step at 20: the path ends at d0.j1 (lower device), then
  // d0.j0 (its previous; a stage-0 forward has no input).
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "forward", 1, 10, 20);
  add_job(run, 1, "forward", 0, 10, 20);
  run.finalize();
  Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  EXPECT_EQ(jobs_of(a.paths[0]), (std::vector<std::string>{"d0.j0", "d0.j1"}));
  EXPECT_EQ(a.paths[0].stage_ns, (std::vector<std::int64_t>{20, 0}));

  // One device, F0 [0,10) and F1 [5,10) end together: the earlier job (j0)
  // ends the step; the path is that job alone.
  pipescope::Run same;
  add_job(same, 0, "forward", 0, 0, 10);
  add_job(same, 0, "forward", 1, 5, 10);
  same.finalize();
  a = analyse(same);
  ASSERT_EQ(a.paths.size(), 1u);
  EXPECT_EQ(jobs_of(a.paths[0]), (std::vector<std::string>{"d0.j0"}));
  EXPECT_EQ(accounted(a.paths[0]), 10);
}

TEST(CriticalPath, JobsAddedOutOfOrderGiveTheSamePath) {
  // two_stage_one_f_one_b() with each device's jobs added last to first.
  pipescope::Run run;
  add_job(run, 1, "backward", 1, 42, 52);
  add_job(run, 1, "forward", 1, 32, 42);
  add_job(run, 1, "backward", 0, 22, 32);
  add_job(run, 1, "forward", 0, 12, 22);
  add_job(run, 0, "backward", 1, 54, 64);
  add_job(run, 0, "backward", 0, 34, 44);
  add_job(run, 0, "forward", 1, 10, 20);
  add_job(run, 0, "forward", 0, 0, 10);
  run.finalize();
  const Analysed a = analyse(run);
  ASSERT_EQ(a.paths.size(), 1u);
  EXPECT_EQ(jobs_of(a.paths[0]),
            (std::vector<std::string>{"d0.j0", "d1.j0", "d1.j1", "d1.j2", "d1.j3", "d0.j3"}));
  EXPECT_EQ(a.paths[0].stage_ns, (std::vector<std::int64_t>{20, 40}));
}

TEST(CriticalPath, StagesOfTensorParallelGroups) {
  // Stages "0-1,2": the path's stage is the device's stage, and stage time
  // adds up per stage. Devices 0 and 1 (stage 0) run F0 [0,10) B0 [30,40);
  // device 2 (stage 1) F0 [10,20) B0 [20,30). Ends: d0.j1 and d1.j1 both at
  // 40 -> d0.j1. Its input d2.j1 (ends 30) beats previous d0.j0 (10) ->
  // d2.j1 -> d2.j0 -> input d0.j0 (rank 0 of stage 0) -> start.
  pipescope::Run run;
  for (std::size_t d = 0; d < 2; ++d) {
    add_job(run, d, "forward", 0, 0, 10);
    add_job(run, d, "backward", 0, 30, 40);
  }
  add_job(run, 2, "forward", 0, 10, 20);
  add_job(run, 2, "backward", 0, 20, 30);
  run.finalize();
  const Analysed a = analyse(run, resolve_stage_map(run, "0-1,2"));
  ASSERT_EQ(a.paths.size(), 1u);
  EXPECT_EQ(jobs_of(a.paths[0]), (std::vector<std::string>{"d0.j0", "d2.j0", "d2.j1", "d0.j1"}));
  EXPECT_EQ(stages_of(a.paths[0]), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(a.paths[0].stage_ns, (std::vector<std::int64_t>{20, 20}));
  EXPECT_EQ(a.paths[0].wait_ns, 0);
}

// With a stage map in the wrong order (here "1,0" on a 1F1B run, so each
// device is told the other is upstream) the implied dependencies and the
// devices' job orders form a cycle; the walk must not go round it (it once
// did, up to one hop per job of the whole run): a path is a chain of
// distinct jobs.
//   device 0 (real stage 0): F0 [0,10)  F1 [10,20) B0 [34,44) B1 [54,64)
//   device 1 (real stage 1): F0 [12,22) B0 [22,32) F1 [32,42) B1 [42,52)
// Under "1,0", device 1 is stage 0: its B0 (j1) waits for device 0's B0
// (j2), whose previous F1 (j1) waits for device 1's F1 (j2), whose previous
// is device 1's B0 again.
TEST(CriticalPath, NoJobTwiceOnAPathEvenWithAWrongStageMap) {
  const pipescope::Run run = two_stage_one_f_one_b();
  const Analysed a = analyse(run, resolve_stage_map(run, "1,0"));
  ASSERT_EQ(a.paths.size(), 1u);
  const CriticalPath& path = a.paths[0];
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
  for (const CriticalPathJob& j : path.jobs) {
    EXPECT_TRUE(seen.emplace(j.job.device, j.job.job).second)
        << "d" << j.job.device << ".j" << j.job.job << " twice";
  }
  EXPECT_LE(path.jobs.size(), run.job_count());
}

// The analysis's form: the same paths and figures, the jobs of the longest
// complete step only (two equal windows of 34: the first), and every job a
// path entered through a dependency: step 0's d1.j0 (F0 from d0.j0) and
// d0.j1 (B0 from d1.j1), step 1's d1.j2 and d0.j3.
TEST(CriticalPath, SummaryKeepsTheLongestStepsJobsAndTheDependencyHops) {
  pipescope::Run run = two_steps_of_two_stages();
  const Metrics metrics = compute_metrics(run);
  const StageMap stages = one_stage_per_device(2);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const Dependencies deps = find_dependencies(run, metrics.job_step, stages, roles);
  const CriticalPathSummary s = summarize_critical_paths(run, metrics, stages, deps, roles);
  ASSERT_EQ(s.paths.size(), 2u);
  ASSERT_TRUE(s.longest.has_value());
  EXPECT_EQ(*s.longest, 0u);
  EXPECT_EQ(jobs_of(s.paths[0]), (std::vector<std::string>{"d0.j0", "d1.j0", "d1.j1", "d0.j1"}));
  EXPECT_EQ(s.paths[0].job_count, 4u);
  EXPECT_TRUE(s.paths[1].jobs.empty());
  EXPECT_EQ(s.paths[1].job_count, 4u);
  EXPECT_EQ(s.paths[1].wait_ns, 2);
  EXPECT_EQ(s.paths[1].stage_ns, (std::vector<std::int64_t>{20, 12}));
  EXPECT_EQ(s.via_dependency, (std::vector<JobRef>{{0, 1}, {0, 3}, {1, 0}, {1, 2}}));
}

}  // namespace
}  // namespace pipescope
