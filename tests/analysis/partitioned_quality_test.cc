// The data quality warnings computed by parts, each holding only the jobs of
// its step range plus the jobs that overlap its windows and their neighbours
// (analysis/step_partition.h), must be check_data_quality's on the whole run:
// the same warnings in the same order, word for word, with the same device,
// stage and count. On every golden folder, on simulated runs of each
// schedule (as run and damaged), and on hand-made runs that raise each code,
// at 1, 2, 3 and 4 parts and more parts than steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/data_quality.h"
#include "analysis/job_role.h"
#include "analysis/layout.h"
#include "analysis/metric_parts.h"
#include "analysis/step_partition.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "support/hand_run.h"
#include "support/pipeline_sim_run.h"
#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::add_job;

using testing::kSecond;

/// A part's jobs less what it holds for its overlap and neighbours only: a
/// wrong exchange, which the checks must notice.
PartRun owned_only(const PartRun& part, const StepPartition& plan, std::size_t p) {
  PartRun out = part;
  for (std::size_t d = 0; d < out.run.devices.size(); ++d) {
    auto& jobs = out.run.devices[d].jobs;
    auto& steps = out.job_step[d];
    auto& index = out.job_index[d];
    std::size_t kept = 0;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (plan.owner(static_cast<std::size_t>(steps[i])) != p) continue;
      jobs[kept] = jobs[i];
      steps[kept] = steps[i];
      index[kept] = index[i];
      ++kept;
    }
    jobs.resize(kept);
    steps.resize(kept);
    index.resize(kept);
  }
  return out;
}

/// What the partitioned analysis does, in one process: the whole run's
/// figures (windows, segments, each device's steps: metric_parts.h, proved
/// equal by parts in partitioned_analysis_test.cc) without any job's step,
/// each part's evidence from its own jobs, the fences once, each part's
/// findings, and the warnings from all of them, handed over in reverse order
/// (any order combines the same).
std::vector<Warning> quality_by_parts(const Run& run, const StageMap& stages, std::size_t parts,
                                      bool halo = true) {
  const Metrics whole = compute_metrics(run);
  const TypeKinds kinds(run.types);
  std::vector<std::uint64_t> jobs_per_step(whole.steps.size(), 0);
  for (const auto& steps : whole.job_step) {
    for (const std::int32_t k : steps) ++jobs_per_step[static_cast<std::size_t>(k)];
  }
  const StepPartition plan = partition_steps(jobs_per_step, whole.steps, parts);
  Metrics facts = whole;
  facts.job_step.clear();  // a part knows its own jobs' steps only
  std::vector<std::uint64_t> device_jobs;
  for (const Device& device : run.devices) device_jobs.push_back(device.jobs.size());

  std::vector<PartRun> held;
  for (std::size_t p = 0; p < parts; ++p) {
    held.push_back(cut_part(run, kinds, whole.job_step, plan, p));
    if (!halo) held.back() = owned_only(held.back(), plan, p);
  }
  const auto view = [&](std::size_t p) {
    return QualityPart{held[p].run, held[p].job_step, &held[p].job_index, plan.bounds[p],
                       plan.bounds[p + 1]};
  };
  std::vector<QualityEvidence> evidence;
  for (std::size_t p = 0; p < parts; ++p) {
    evidence.push_back(quality_evidence(view(p), facts, stages, device_jobs));
  }
  const QualityFences fences = quality_fences(evidence, facts, stages);
  std::vector<QualityFindings> findings;
  for (std::size_t p = 0; p < parts; ++p) {
    findings.push_back(quality_findings(view(p), facts, stages, fences, p));
  }
  std::reverse(evidence.begin(), evidence.end());
  std::reverse(findings.begin(), findings.end());
  return quality_warnings(held.front().run, facts, stages, evidence, findings);
}

void expect_same(const std::vector<Warning>& got, const std::vector<Warning>& want,
                 const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    EXPECT_EQ(warning_name(got[i].code), warning_name(want[i].code)) << i;
    EXPECT_EQ(got[i].message, want[i].message) << i;
    EXPECT_EQ(got[i].device, want[i].device) << i;
    EXPECT_EQ(got[i].stage, want[i].stage) << i;
    EXPECT_EQ(got[i].count, want[i].count) << i;
  }
}

/// Every split of 1 to 4 parts, and more parts than steps (empty parts);
/// returns the whole run's warnings.
std::vector<Warning> check_quality_splits(const Run& run, const StageMap& stages,
                                          const std::string& what) {
  const Metrics whole = compute_metrics(run);
  const std::vector<Warning> expected = check_data_quality(run, whole, stages);
  for (std::size_t parts : {1u, 2u, 3u, 4u, 7u}) {
    if (parts == 7 && whole.steps.size() >= 7) parts = whole.steps.size() + 2;
    expect_same(quality_by_parts(run, stages, parts), expected,
                what + ", " + std::to_string(parts) + " parts");
  }
  return expected;
}

/// With the stage map the pipeline analysis finds, and with one stage per
/// device (each device against its own steps).
void check_quality_splits(const Run& run, const std::string& what) {
  const Metrics whole = compute_metrics(run);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  check_quality_splits(run, detect_layout(run, whole.job_step, roles).stages, what + ", layout");
  check_quality_splits(run, one_stage_per_device(run.devices.size()), what + ", one per device");
}

bool has(const std::vector<Warning>& warnings, WarningCode code) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const Warning& w) { return w.code == code; });
}

TEST(PartitionedQuality, GoldenFoldersAsAnalyzeReadsThem) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const LoadedRun loaded =
        load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder}), options);
    ASSERT_GT(loaded.run.job_count(), 0u) << folder;
    check_quality_splits(loaded.run, folder);
  }
}

/// Damage to a simulated run: device 1 loses its first forward job of
/// micro-batch 1 in steps 2 to 5, device 0 gets a job of no length in step
/// 3, device 2 one overlapping its neighbour, and the last device a job a
/// day after the run.
Run damaged(Run run) {
  const Metrics m = compute_metrics(run);
  const TypeKinds kinds(run.types);
  for (std::int32_t k = 2; k <= 5 && run.devices.size() > 1; ++k) {
    auto& jobs = run.devices[1].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (m.job_step[1][i] == k && kinds.kind[jobs[i].type] == JobKind::forward &&
          jobs[i].micro_batch == 1) {
        jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  const auto middle = [&](std::size_t d) -> Job& {
    return run.devices[d].jobs[run.devices[d].jobs.size() / 2];
  };
  Job zero = middle(0);
  zero.end_ns = zero.start_ns;
  zero.line = 100'000;
  run.devices[0].jobs.push_back(zero);
  if (run.devices.size() > 2) {
    Job late = middle(2);
    late.start_ns += 1;
    late.end_ns += 1;
    late.line = 100'001;
    run.devices[2].jobs.push_back(late);
  }
  Job far = run.devices.back().jobs.back();
  far.start_ns += 86'400 * kSecond;
  far.end_ns = far.start_ns + 10;
  far.type = run.types.intern("memcpy");
  far.line = 100'002;
  run.devices.back().jobs.push_back(far);
  run.finalize();
  return run;
}

TEST(PartitionedQuality, SimulatedSchedulesAsRunAndDamaged) {
  using sim::ScheduleKind;
  struct Case {
    ScheduleKind kind;
    int stages, micro_batches, chunks;
    bool comm, lr;
    int per_stage;
  };
  for (const Case& c : {Case{ScheduleKind::fthenb, 4, 8, 1, false, false, 1},
                        Case{ScheduleKind::one_f_one_b, 4, 8, 1, true, true, 1},
                        Case{ScheduleKind::interleaved, 4, 8, 2, true, false, 1},
                        Case{ScheduleKind::eager_one_f_one_b, 3, 6, 1, false, true, 1},
                        Case{ScheduleKind::zbh1, 4, 8, 1, true, false, 1},
                        Case{ScheduleKind::one_f_one_b, 4, 8, 1, true, false, 2}}) {
    sim::SimConfig config = testing::sim_config(c.kind, c.stages, c.micro_batches, c.chunks);
    config.steps = 8;
    config.comm_jobs = c.comm;
    config.lr_jobs = c.lr;
    config.devices_per_stage = c.per_stage;
    config.step_gap_ns = 0;  // steps meet: devices overlap at the edges
    const pipescope::Run run = testing::run_from_simulation(config);
    const std::string what = "simulated " + std::to_string(static_cast<int>(c.kind)) + " x" +
                             std::to_string(c.per_stage);
    check_quality_splits(run, what);
    const pipescope::Run bad = damaged(run);
    check_quality_splits(bad, what + ", damaged");
    const std::vector<Warning> found =
        check_data_quality(bad, compute_metrics(bad), one_stage_per_device(bad.devices.size()));
    EXPECT_TRUE(has(found, WarningCode::nonpositive_length)) << what;
    EXPECT_TRUE(has(found, WarningCode::time_outlier)) << what;
    EXPECT_TRUE(has(found, WarningCode::short_step)) << what;
  }
}

/// `devices` devices, `steps` steps of F0 F1 B0 B1 optimizer, each device 5
/// ns behind the one before; `skip(d, k, what)` drops a job.
template <typename Skip>
pipescope::Run grid(std::size_t devices, std::int64_t steps, Skip skip) {
  pipescope::Run run;
  for (std::size_t d = 0; d < devices; ++d) {
    testing::device_at(run, d);
    for (std::int64_t k = 0; k < steps; ++k) {
      const std::int64_t t = k * 100 + static_cast<std::int64_t>(d) * 5;
      if (!skip(d, k, "F0")) add_job(run, d, "forward", 0, t, t + 10);
      if (!skip(d, k, "F1")) add_job(run, d, "forward", 1, t + 10, t + 20);
      if (!skip(d, k, "B0")) add_job(run, d, "backward", 0, t + 30, t + 40);
      if (!skip(d, k, "B1")) add_job(run, d, "backward", 1, t + 40, t + 50);
      if (!skip(d, k, "O")) add_job(run, d, "optimizer", 0, t + 50, t + 55);
    }
  }
  return run;
}

pipescope::Run grid(std::size_t devices, std::int64_t steps) {
  return grid(devices, steps, [](std::size_t, std::int64_t, std::string_view) { return false; });
}

// Copies that run on into later steps, whose jobs overlap them. On device 0
// a copy of step 0 ends before the window of step 2 starts: a range that
// owns step 2 does not hold it. On device 1 step 4's prologue (a receive)
// comes ahead of step 3's last job, a copy that runs into step 4: the range
// of step 4 holds that copy only because it lies between its own jobs.
// Overlaps inside one step too.
TEST(PartitionedQuality, OverlapsWithJobsOfEarlierRanges) {
  pipescope::Run run = grid(3, 8);
  // Copies, not sends: communication jobs overlap nothing.
  add_job(run, 0, "memcpy", 0, 56, 250);         // step 0 on into step 2
  add_job(run, 1, "recv_forward", 0, 356, 358);  // step 4's prologue
  add_job(run, 1, "memcpy", 0, 358, 430);        // step 3 on into step 4
  add_job(run, 2, "memcpy", 0, 640, 645);        // step 6, inside its B0
  run.finalize();
  const std::vector<Warning> found =
      check_quality_splits(run, one_stage_per_device(3), "long comm jobs");
  ASSERT_TRUE(has(found, WarningCode::overlap));
  // A part that held only its own jobs would miss the send between them.
  EXPECT_NE(quality_by_parts(run, one_stage_per_device(3), 4, false), found);
  check_quality_splits(run, "long comm jobs");
}

TEST(PartitionedQuality, JobsOfNoLengthInManySteps) {
  pipescope::Run run = grid(3, 6);
  for (const std::int64_t k : {4, 1, 5}) add_job(run, 1, "memcpy", 0, k * 100 + 22, k * 100 + 22);
  add_job(run, 2, "memcpy", 3, 330, 320);  // negative
  run.finalize();
  const std::vector<Warning> found =
      check_quality_splits(run, one_stage_per_device(3), "no length");
  EXPECT_TRUE(has(found, WarningCode::nonpositive_length));
}

TEST(PartitionedQuality, MissingStepsAndIncompleteSteps) {
  // Device 2's log ends after step 3 of 9; device 3 has no job at all.
  pipescope::Run run =
      grid(3, 9, [](std::size_t d, std::int64_t k, std::string_view) { return d == 2 && k > 3; });
  testing::device_at(run, 3);
  run.finalize();
  const std::vector<Warning> found = check_quality_splits(run, one_stage_per_device(4), "log ends");
  EXPECT_TRUE(has(found, WarningCode::missing_steps));
  EXPECT_TRUE(has(found, WarningCode::incomplete_steps));

  // A cut input: the steps from the cut on are incomplete (more than five).
  pipescope::Run cut = grid(3, 12);
  cut.finalize();
  cut.devices[1].cut_ns = 450;
  check_quality_splits(cut, one_stage_per_device(3), "cut");
  check_quality_splits(cut, "cut");

  // The last step short of an optimizer: judged by the kind counts of the
  // step before.
  pipescope::Run short_last = grid(3, 6, [](std::size_t d, std::int64_t k, std::string_view w) {
    return d == 2 && k == 5 && w == "O";
  });
  short_last.finalize();
  const std::vector<Warning> last =
      check_quality_splits(short_last, one_stage_per_device(3), "last step short");
  EXPECT_TRUE(has(last, WarningCode::incomplete_steps));

  // Every step incomplete: no complete step.
  pipescope::Run none =
      grid(2, 5, [](std::size_t d, std::int64_t k, std::string_view) { return d == 1 && k > 0; });
  none.finalize();
  EXPECT_TRUE(has(check_quality_splits(none, one_stage_per_device(2), "none complete"),
                  WarningCode::no_complete_step));
}

TEST(PartitionedQuality, JobCountMismatchFirstInALaterRange) {
  // Stages {0, 1} and {2, 3}: device 1 runs an extra send in steps 5 and 7,
  // device 3 in step 2.
  pipescope::Run run = grid(4, 9);
  for (const std::int64_t k : {7, 5})
    add_job(run, 1, "send_forward", 0, k * 100 + 62, k * 100 + 64);
  add_job(run, 3, "send_forward", 0, 283, 284);
  run.finalize();
  const StageMap stages = resolve_stage_map(run, "0-1,2-3");
  const std::vector<Warning> found = check_quality_splits(run, stages, "mismatch");
  EXPECT_TRUE(has(found, WarningCode::job_count_mismatch));
}

TEST(PartitionedQuality, ShortStepsAgainstOwnMedianAndPeers) {
  // Device 1 loses a job in five of ten steps (more than the three named),
  // device 2 two in step 8; device 3 (a peer of device 2) loses one in step 1.
  pipescope::Run run = grid(4, 10, [](std::size_t d, std::int64_t k, std::string_view w) {
    return (d == 1 && (k == 2 || k == 4 || k == 5 || k == 7 || k == 8) && w == "F1") ||
           (d == 2 && k == 8 && (w == "B0" || w == "B1")) || (d == 3 && k == 1 && w == "F0");
  });
  run.finalize();
  const std::vector<Warning> alone =
      check_quality_splits(run, one_stage_per_device(4), "short, alone");
  EXPECT_TRUE(has(alone, WarningCode::short_step));
  const std::vector<Warning> peers =
      check_quality_splits(run, resolve_stage_map(run, "0-1,2-3"), "short, peers");
  EXPECT_TRUE(has(peers, WarningCode::short_step));

  // Most steps short: the median itself is a short count, found across ranges.
  pipescope::Run most = grid(2, 9, [](std::size_t d, std::int64_t k, std::string_view w) {
    return d == 1 && ((k % 3 == 0 && w == "F1") || (k % 3 == 1 && w == "B1"));
  });
  most.finalize();
  check_quality_splits(most, one_stage_per_device(2), "short, most steps");
}

TEST(PartitionedQuality, TimeOutliers) {
  pipescope::Run run = grid(3, 8);
  add_job(run, 1, "memcpy", 0, 390 + 200 * kSecond, 391 + 200 * kSecond);  // a step-3 job, late
  add_job(run, 2, "memcpy", 0, 120 - 300 * kSecond, 121 - 300 * kSecond);  // before everything
  run.finalize();
  const std::vector<Warning> found = check_quality_splits(run, one_stage_per_device(3), "far");
  EXPECT_TRUE(has(found, WarningCode::time_outlier));
}

// Over 2^20 jobs the quartiles come from every 2nd job by whole-run position
// (devices in a row: device 0's one job is position 0). Device 1's starts
// jump by a day where the upper quartile of that sample falls: the sampled
// job is just above the jump. A sample by position inside a range would take
// its neighbour below the jump for ranges that begin at an odd position, and
// find the jobs after the jump far.
TEST(PartitionedQuality, TheQuartileSampleIsTheWholeRunsWhateverTheSplit) {
  constexpr std::int64_t kDay = 86'400 * kSecond;
  constexpr std::int64_t kJobs = std::int64_t{1} << 20;
  constexpr std::int64_t kJump = 786'431;  // sample rank n - 1 - n/4 of n = 2^19 + 1
  constexpr std::int64_t kBlock = 65'537;  // jobs per step (odd: ranges begin at odd positions)
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 1);
  for (std::int64_t j = 0; j < kJobs; ++j) {
    const std::int64_t start = 10 * (j < kJump ? j : kDay + j);
    const bool opens = j % kBlock == 0, closes = j % kBlock == kBlock - 1 || j == kJobs - 1;
    add_job(run, 1, opens ? "forward" : closes ? "backward" : "memcpy", 0, start, start + 5);
  }
  run.finalize();
  const std::vector<Warning> found = check_quality_splits(run, one_stage_per_device(2), "stride 2");
  EXPECT_FALSE(has(found, WarningCode::time_outlier));
  for (const std::size_t parts : {5u, 6u}) {
    expect_same(quality_by_parts(run, one_stage_per_device(2), parts), found,
                "stride 2, " + std::to_string(parts) + " parts");
  }
}

}  // namespace
}  // namespace pipescope
