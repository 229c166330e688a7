// The partitioned analysis run on 1 to N ranks (threads exchanging bytes, as
// the MPI ranks do) must give the figures of the single process: every
// window, segment, total and ratio on every rank, and each rank's own steps'
// device figures; the jobs each rank ends up holding are the part cut_part
// gives in one process. Devices are handed to the ranks two ways (round
// robin, and all on the last rank) so that who read a device never matters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "analysis/bottleneck.h"
#include "analysis/critical_path.h"
#include "analysis/data_quality.h"
#include "analysis/layout.h"
#include "analysis/metric_parts.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/replicas.h"
#include "analysis/step_partition.h"
#include "analysis/step_rule.h"
#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "support/hand_run.h"
#include "support/partitioned_ranks.h"
#include "support/pipeline_sim_run.h"

namespace pipescope::distributed {
namespace {

void expect_same_window(const StepWindow& x, const StepWindow& y, bool figures,
                        const std::string& at) {
  EXPECT_EQ(x.step, y.step) << at;
  EXPECT_EQ(x.segment, y.segment) << at;
  EXPECT_EQ(x.complete, y.complete) << at;
  EXPECT_EQ(x.start_ns, y.start_ns) << at;
  EXPECT_EQ(x.end_ns, y.end_ns) << at;
  EXPECT_EQ(x.bubble_ratio, y.bubble_ratio) << at;  // bit for bit, on every rank
  if (!figures) {
    EXPECT_TRUE(x.devices.empty()) << at;  // another rank's: not held here
    return;
  }
  ASSERT_EQ(x.devices.size(), y.devices.size()) << at;
  for (std::size_t d = 0; d < x.devices.size(); ++d) {
    EXPECT_EQ(x.devices[d].busy_ns, y.devices[d].busy_ns) << at << " device " << d;
    EXPECT_EQ(x.devices[d].idle_ns, y.devices[d].idle_ns) << at << " device " << d;
    EXPECT_EQ(x.devices[d].comm_ns, y.devices[d].comm_ns) << at << " device " << d;
  }
}

void expect_same_bubble(const Bubble& x, const Bubble& y, const std::string& at) {
  EXPECT_EQ(x.device, y.device) << at;
  EXPECT_EQ(x.step, y.step) << at;
  EXPECT_EQ(x.start_ns, y.start_ns) << at;
  EXPECT_EQ(x.end_ns, y.end_ns) << at;
  EXPECT_EQ(x.kind, y.kind) << at;
  EXPECT_EQ(x.job_before, y.job_before) << at;
  EXPECT_EQ(x.job_after, y.job_after) << at;
}

void expect_same_bottleneck(const BottleneckReport& x, const BottleneckReport& y,
                            const std::string& at) {
  EXPECT_EQ(x.slowest_stage, y.slowest_stage) << at;
  EXPECT_EQ(x.imbalance, y.imbalance) << at;
  EXPECT_EQ(x.mean_compute_per_step_ns, y.mean_compute_per_step_ns) << at;
  ASSERT_EQ(x.stages.size(), y.stages.size()) << at;
  for (std::size_t s = 0; s < y.stages.size(); ++s) {
    EXPECT_EQ(x.stages[s].compute_per_step_ns, y.stages[s].compute_per_step_ns) << at;
    for (std::size_t r = 0; r < kRoleCount; ++r) {
      const DurationStats &a = x.stages[s].by_role[r], &b = y.stages[s].by_role[r];
      const std::string where = at + " stage " + std::to_string(s) + " role " + std::to_string(r);
      EXPECT_EQ(a.count, b.count) << where;
      EXPECT_EQ(a.total_ns, b.total_ns) << where;
      EXPECT_EQ(a.mean_ns, b.mean_ns) << where;
      EXPECT_EQ(a.median_ns, b.median_ns) << where;
      EXPECT_EQ(a.p95_ns, b.p95_ns) << where;
      EXPECT_EQ(a.max_ns, b.max_ns) << where;
    }
  }
}

/// The pipeline figures of one rank against the single process's.
void expect_same_pipeline(const PartitionedAnalysis& mine, const Run& run,
                          const PipelineAnalysis& a, const Metrics& whole, const std::string& at) {
  EXPECT_EQ(mine.pipeline.layout.method, a.layout.method) << at;
  EXPECT_EQ(mine.pipeline.layout.replicas, a.layout.replicas) << at;
  EXPECT_EQ(mine.pipeline.layout.reason, a.layout.reason) << at;
  EXPECT_EQ(mine.pipeline.stages.stage_of, a.stages.stage_of) << at;
  EXPECT_TRUE(mine.pipeline.schedule.detection == a.schedule.detection) << at;
  EXPECT_EQ(mine.pipeline.schedule.steps_agreeing, a.schedule.steps_agreeing) << at;
  EXPECT_EQ(mine.pipeline.schedule.steps_examined, a.schedule.steps_examined) << at;
  EXPECT_EQ(mine.pipeline.schedule.means.forward_ns, a.schedule.means.forward_ns) << at;
  EXPECT_EQ(mine.pipeline.schedule.means.backward_ns, a.schedule.means.backward_ns) << at;
  EXPECT_EQ(mine.pipeline.schedule.means.weight_ns, a.schedule.means.weight_ns) << at;
  EXPECT_EQ(mine.pipeline.schedule.ideal_bubble_ratio, a.schedule.ideal_bubble_ratio) << at;
  EXPECT_EQ(mine.pipeline.schedule.measured_bubble_ratio, a.schedule.measured_bubble_ratio) << at;
  EXPECT_EQ(mine.pipeline.schedule.excess, a.schedule.excess) << at;
  // The clocks.
  const ClockReport &c = mine.pipeline.clock, &w = a.clock;
  EXPECT_EQ(c.method, w.method) << at;
  EXPECT_EQ(c.applied, w.applied) << at;
  EXPECT_EQ(c.reason, w.reason) << at;
  EXPECT_EQ(c.dependencies, w.dependencies) << at;
  EXPECT_EQ(c.violations_before, w.violations_before) << at;
  EXPECT_EQ(c.violations_after, w.violations_after) << at;
  EXPECT_EQ(c.beyond_noise_before, w.beyond_noise_before) << at;
  EXPECT_EQ(c.beyond_noise_after, w.beyond_noise_after) << at;
  EXPECT_EQ(c.violations_if_estimated, w.violations_if_estimated) << at;
  ASSERT_EQ(c.machines.size(), w.machines.size()) << at;
  for (std::size_t i = 0; i < c.machines.size(); ++i) {
    EXPECT_EQ(c.machines[i].name, w.machines[i].name) << at;
    EXPECT_EQ(c.machines[i].estimate_ns, w.machines[i].estimate_ns) << at;
    EXPECT_EQ(c.machines[i].offset_ns, w.machines[i].offset_ns) << at;
    EXPECT_EQ(c.machines[i].pieces.size(), w.machines[i].pieces.size()) << at;
  }
  ASSERT_EQ(c.pairs.size(), w.pairs.size()) << at;
  for (std::size_t i = 0; i < c.pairs.size(); ++i) {
    EXPECT_EQ(c.pairs[i].violations_after, w.pairs[i].violations_after) << at;
    EXPECT_EQ(c.pairs[i].beyond_noise_after, w.pairs[i].beyond_noise_after) << at;
    EXPECT_EQ(c.pairs[i].lower_ns, w.pairs[i].lower_ns) << at;
    EXPECT_EQ(c.pairs[i].upper_ns, w.pairs[i].upper_ns) << at;
  }
  // Its steps' dependencies, as whole-run job references.
  std::vector<std::pair<JobRef, JobRef>> own, expected;
  for (const Dependency& dep : mine.pipeline.dependencies) {
    const auto global = [&](JobRef ref) {
      return JobRef{ref.device,
                    static_cast<std::uint32_t>(mine.part.job_index[ref.device][ref.job])};
    };
    own.emplace_back(global(dep.consumer), global(dep.producer));
  }
  for (const Dependency& dep : a.dependencies) {
    const auto step =
        static_cast<std::size_t>(whole.job_step[dep.consumer.device][dep.consumer.job]);
    if (step >= mine.first && step < mine.last) expected.emplace_back(dep.consumer, dep.producer);
  }
  std::sort(own.begin(), own.end(), [](const auto& x, const auto& y) {
    return std::pair(x.first.device, x.first.job) < std::pair(y.first.device, y.first.job);
  });
  std::sort(expected.begin(), expected.end(), [](const auto& x, const auto& y) {
    return std::pair(x.first.device, x.first.job) < std::pair(y.first.device, y.first.job);
  });
  ASSERT_EQ(own.size(), expected.size()) << at;
  for (std::size_t i = 0; i < own.size(); ++i) {
    EXPECT_EQ(own[i].first, expected[i].first) << at;
    EXPECT_EQ(own[i].second, expected[i].second) << at;
  }
  // The stage statistics (the slowest replica's when there are replicas),
  // each replica's figures, and the sentence.
  expect_same_bottleneck(mine.pipeline.bottleneck, a.bottleneck, at);
  EXPECT_EQ(mine.pipeline.replicas.slowest, a.replicas.slowest) << at;
  ASSERT_EQ(mine.pipeline.replicas.replicas.size(), a.replicas.replicas.size()) << at;
  for (std::size_t r = 0; r < a.replicas.replicas.size(); ++r) {
    const ReplicaStats &x = mine.pipeline.replicas.replicas[r], &y = a.replicas.replicas[r];
    const std::string there = at + " replica " + std::to_string(r);
    EXPECT_EQ(x.replica, y.replica) << there;
    EXPECT_EQ(x.devices, y.devices) << there;
    EXPECT_EQ(x.complete_steps, y.complete_steps) << there;
    EXPECT_EQ(x.total_window_ns, y.total_window_ns) << there;
    EXPECT_EQ(x.step_ns, y.step_ns) << there;
    EXPECT_EQ(x.bubble_ratio, y.bubble_ratio) << there;
    expect_same_bottleneck(x.bottleneck, y.bottleneck, there);
  }
  EXPECT_EQ(mine.pipeline.explanation, a.explanation) << at;
  // The split, and this range's rows of it.
  EXPECT_EQ(mine.pipeline.split.known, a.split.known) << at;
  EXPECT_EQ(mine.pipeline.split.device_inherent, a.split.device_inherent) << at;
  EXPECT_EQ(mine.pipeline.split.inherent_ns, a.split.inherent_ns) << at;
  EXPECT_EQ(mine.pipeline.split.excess_ns, a.split.excess_ns) << at;
  EXPECT_EQ(mine.pipeline.split.receive_wait_ns, a.split.receive_wait_ns) << at;
  EXPECT_EQ(mine.pipeline.split.send_wait_ns, a.split.send_wait_ns) << at;
  if (a.split.known) {
    ASSERT_EQ(mine.split_inherent.size(), mine.last - mine.first) << at;
    for (std::size_t k = mine.first; k < mine.last; ++k) {
      EXPECT_EQ(mine.split_inherent[k - mine.first], a.split.inherent[k]) << at << " step " << k;
    }
  }
  // Critical paths: this range's, and the longest one's jobs.
  std::size_t index = mine.paths_before;
  for (const CriticalPath& path : mine.paths.paths) {
    ASSERT_LT(index, a.critical_paths.size()) << at;
    const CriticalPath& want = a.critical_paths[index++];
    EXPECT_EQ(path.step, want.step) << at;
    EXPECT_EQ(path.job_count, want.job_count) << at;
    EXPECT_EQ(path.lead_in_ns, want.lead_in_ns) << at;
    EXPECT_EQ(path.wait_ns, want.wait_ns) << at;
    EXPECT_EQ(path.stage_ns, want.stage_ns) << at;
  }
  std::optional<std::size_t> longest;
  for (std::size_t i = 0; i < a.critical_paths.size(); ++i) {
    if (!a.critical_paths[i].jobs.empty()) longest = i;
  }
  ASSERT_EQ((mine.longest_path() != nullptr), longest.has_value()) << at;
  if (longest) {
    const CriticalPath& want = a.critical_paths[*longest];
    EXPECT_EQ(mine.longest_path()->step, want.step) << at;
    ASSERT_EQ(mine.longest_path()->jobs.size(), want.jobs.size()) << at;
    for (std::size_t i = 0; i < want.jobs.size(); ++i) {
      EXPECT_EQ(mine.longest_path()->jobs[i].job, want.jobs[i].job) << at;
      EXPECT_EQ(mine.longest_path()->jobs[i].wait_ns, want.jobs[i].wait_ns) << at;
      EXPECT_EQ(mine.longest_path()->jobs[i].stage, want.jobs[i].stage) << at;
      EXPECT_EQ(mine.longest_path()->jobs[i].via_dependency, want.jobs[i].via_dependency) << at;
    }
  }
  // The data-quality warnings.
  const std::vector<Warning> quality = check_data_quality(run, whole, a.stages);
  ASSERT_EQ(mine.pipeline.warnings.size(), quality.size()) << at;
  for (std::size_t i = 0; i < quality.size(); ++i) {
    EXPECT_EQ(mine.pipeline.warnings[i].code, quality[i].code) << at;
    EXPECT_EQ(mine.pipeline.warnings[i].message, quality[i].message) << at;
    EXPECT_EQ(mine.pipeline.warnings[i].device, quality[i].device) << at;
    EXPECT_EQ(mine.pipeline.warnings[i].count, quality[i].count) << at;
  }
  // Bubbles: the run's sums and longest, its own steps' totals.
  const BubbleSummary &b = mine.pipeline.bubbles, &v = a.bubbles;
  EXPECT_EQ(b.total.ns, v.total.ns) << at;
  EXPECT_EQ(b.total.count, v.total.count) << at;
  ASSERT_EQ(b.per_device.size(), v.per_device.size()) << at;
  for (std::size_t d = 0; d < b.per_device.size(); ++d) {
    EXPECT_EQ(b.per_device[d].ns, v.per_device[d].ns) << at;
    EXPECT_EQ(b.per_device[d].count, v.per_device[d].count) << at;
  }
  ASSERT_EQ(b.longest.size(), v.longest.size()) << at;
  for (std::size_t i = 0; i < b.longest.size(); ++i) {
    expect_same_bubble(b.longest[i], v.longest[i], at + " longest " + std::to_string(i));
  }
  ASSERT_EQ(b.per_step.size(), mine.last - mine.first) << at;
  for (std::size_t k = mine.first; k < mine.last; ++k) {
    for (std::size_t d = 0; d < b.per_step[k - mine.first].size(); ++d) {
      EXPECT_EQ(b.per_step[k - mine.first][d].ns, v.per_step[k][d].ns) << at << " step " << k;
    }
  }
}

void check_ranks(const Run& run, int ranks, bool round_robin, const std::string& what) {
  const std::string label = what + ", " + std::to_string(ranks) + " ranks" +
                            (round_robin ? "" : ", devices on the last rank");
  SCOPED_TRACE(label);
  PipelineOptions options;
  options.top_bubbles = std::size_t{1} << 20;  // every bubble, each where it lies
  Run corrected = run;
  const AnalyzedRun single = analyze_run(corrected, options);
  const Metrics& whole = single.metrics;
  const PipelineAnalysis& a = single.pipeline;
  const std::vector<PartitionedAnalysis> results =
      run_local_ranks<PartitionedAnalysis>(ranks, [&](Exchange& exchange) {
        Run local = testing::local_view(run, exchange.rank(), exchange.size(), round_robin,
                                        testing::RankEvents::own);
        PartitionedAnalysis mine = analyze_partitioned(exchange, local, options);
        // Every job went to the parts: the reader keeps none (the bound on
        // a rank's memory counts each job once).
        for (const Device& device : local.devices) EXPECT_TRUE(device.jobs.empty());
        return mine;
      });
  ASSERT_EQ(results.size(), static_cast<std::size_t>(ranks));
  const TypeKinds kinds(run.types);
  for (int r = 0; r < ranks; ++r) {
    const PartitionedAnalysis& mine = results[static_cast<std::size_t>(r)];
    const Metrics& m = mine.metrics;
    const std::string at = "rank " + std::to_string(r);
    ASSERT_EQ(mine.read.device_jobs.size(), run.devices.size()) << at;
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      EXPECT_EQ(mine.read.device_jobs[d], run.devices[d].jobs.size()) << at << " device " << d;
    }
    ASSERT_EQ(m.steps.size(), whole.steps.size()) << at;
    for (std::size_t k = 0; k < m.steps.size(); ++k) {
      const bool own = k >= mine.first && k < mine.last;
      expect_same_window(m.steps[k], whole.steps[k], own, at + " step " + std::to_string(k));
    }
    ASSERT_EQ(m.segments.size(), whole.segments.size()) << at;
    for (std::size_t s = 0; s < m.segments.size(); ++s) {
      EXPECT_EQ(m.segments[s].index, whole.segments[s].index) << at;
      EXPECT_EQ(m.segments[s].first_step, whole.segments[s].first_step) << at;
      EXPECT_EQ(m.segments[s].first, whole.segments[s].first) << at;
      EXPECT_EQ(m.segments[s].count, whole.segments[s].count) << at;
      EXPECT_EQ(m.segments[s].complete, whole.segments[s].complete) << at;
      EXPECT_EQ(m.segments[s].start_ns, whole.segments[s].start_ns) << at;
      EXPECT_EQ(m.segments[s].end_ns, whole.segments[s].end_ns) << at;
      EXPECT_EQ(m.segments[s].devices, whole.segments[s].devices) << at;
    }
    ASSERT_EQ(m.devices.size(), whole.devices.size()) << at;
    for (std::size_t d = 0; d < m.devices.size(); ++d) {
      EXPECT_EQ(m.devices[d].busy_ns, whole.devices[d].busy_ns) << at << " device " << d;
      EXPECT_EQ(m.devices[d].idle_ns, whole.devices[d].idle_ns) << at << " device " << d;
      EXPECT_EQ(m.devices[d].comm_ns, whole.devices[d].comm_ns) << at << " device " << d;
      EXPECT_EQ(m.devices[d].steps, whole.devices[d].steps) << at << " device " << d;
      EXPECT_EQ(m.devices[d].utilization, whole.devices[d].utilization) << at << " device " << d;
    }
    EXPECT_EQ(m.bubble_ratio, whole.bubble_ratio) << at;
    EXPECT_EQ(m.total_window_ns, whole.total_window_ns) << at;
    EXPECT_EQ(m.comm_ns, whole.comm_ns) << at;
    EXPECT_EQ(m.incomplete_steps, whole.incomplete_steps) << at;
    // The jobs it holds are the part the one-process cut gives.
    const PartRun cut =
        cut_part(corrected, kinds, whole.job_step, mine.plan, static_cast<std::size_t>(r));
    EXPECT_EQ(mine.part.owned_jobs, cut.owned_jobs) << at;
    EXPECT_EQ(mine.part.job_step, cut.job_step) << at;
    EXPECT_EQ(mine.part.job_index, cut.job_index) << at;
    ASSERT_EQ(mine.part.run.devices.size(), cut.run.devices.size()) << at;
    for (std::size_t d = 0; d < cut.run.devices.size(); ++d) {
      ASSERT_EQ(mine.part.run.devices[d].jobs.size(), cut.run.devices[d].jobs.size()) << at;
      for (std::size_t i = 0; i < cut.run.devices[d].jobs.size(); ++i) {
        const Job &x = mine.part.run.devices[d].jobs[i], &y = cut.run.devices[d].jobs[i];
        EXPECT_TRUE(x.start_ns == y.start_ns && x.end_ns == y.end_ns && x.type == y.type &&
                    x.line == y.line)
            << at << " device " << d << " job " << i;
      }
    }
    expect_same_pipeline(mine, corrected, a, whole, at);
  }
}

void check_every_rank_count(const Run& run, const std::string& what) {
  const std::size_t steps = compute_metrics(run).steps.size();
  for (const int ranks : {1, 2, 3, 4, static_cast<int>(steps) + 2}) {
    check_ranks(run, ranks, true, what);
    if (ranks > 1) check_ranks(run, ranks, false, what);
  }
}

TEST(PartitionedDriver, GoldenFoldersAsAnalyzeReadsThem) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const LoadedRun loaded =
        load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder}), options);
    ASSERT_GT(loaded.run.job_count(), 0u) << folder;
    check_every_rank_count(loaded.run, folder);
  }
}

// The jobs travel in rounds of bounded bytes: rounds of one job each give
// the same figures.
TEST(PartitionedDriver, JobsInTinyRounds) {
  ::setenv("PIPESCOPE_MPI_MESSAGE_BYTES", "100", 1);
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 5;
  config.comm_jobs = true;
  config.step_gap_ns = 0;
  check_every_rank_count(testing::run_from_simulation(config), "tiny rounds");
  ::unsetenv("PIPESCOPE_MPI_MESSAGE_BYTES");
}

TEST(PartitionedDriver, SimulatedSchedules) {
  using sim::ScheduleKind;
  struct Case {
    ScheduleKind kind;
    int stages, micro_batches, chunks;
    bool comm, lr;
  };
  for (const Case& c : {Case{ScheduleKind::fthenb, 4, 8, 1, false, false},
                        Case{ScheduleKind::one_f_one_b, 4, 8, 1, true, true},
                        Case{ScheduleKind::interleaved, 4, 8, 2, true, false},
                        Case{ScheduleKind::eager_one_f_one_b, 3, 6, 1, false, true},
                        Case{ScheduleKind::zbh1, 4, 8, 1, true, false}}) {
    sim::SimConfig config = testing::sim_config(c.kind, c.stages, c.micro_batches, c.chunks);
    config.steps = 6;
    config.comm_jobs = c.comm;
    config.lr_jobs = c.lr;
    config.step_gap_ns = 0;  // steps meet: devices overlap at the edges
    check_every_rank_count(testing::run_from_simulation(config),
                           "simulated " + std::to_string(static_cast<int>(c.kind)));
  }
}

TEST(PartitionedDriver, TwoMachinesWithSkewAndReplicas) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 7;
  config.machines = 2;
  config.devices_per_stage = 2;
  // Machine 1 reads ahead, and steps meet: its jobs cross the windows'
  // edges until corrected.
  config.machine_skew_ns = {0, 3'000'000};
  config.step_gap_ns = 0;
  pipescope::Run run = testing::run_from_simulation(config);
  // Machine 1's optimizers run longest, so its clock sets where each window
  // ends: the correction moves the windows.
  const TypeKinds kinds(run.types);
  for (Device& device : run.devices) {
    if (device.machine != 1) continue;
    for (Job& job : device.jobs) {
      if (kinds.kind[job.type] == JobKind::optimizer) job.end_ns += 150'000'000;
    }
  }
  // The clocks are corrected: the windows move and the jobs travel again.
  pipescope::Run copy = run;
  const AnalyzedRun corrected = analyze_run(copy, PipelineOptions());
  ASSERT_TRUE(corrected.pipeline.clock.applied);
  EXPECT_NE(corrected.metrics.steps[1].end_ns, compute_metrics(run).steps[1].end_ns);
  check_every_rank_count(run, "two machines, skew");
  // More steps than the layout reads (its head).
  config.steps = static_cast<int>(kLayoutSteps) + 6;
  check_every_rank_count(testing::run_from_simulation(config), "two machines, skew, 22 steps");
}

// Two data-parallel replicas of a 4-stage pipeline, each simulated with its
// own jitter, one per machine, the second machine's clock 1 ms ahead: each
// replica's figures, and the run's bottleneck is the slowest replica's.
TEST(PartitionedDriver, ReplicasOnTwoMachines) {
  for (const int steps : {9, static_cast<int>(kLayoutSteps) + 4}) {
    pipescope::Run run;
    for (int r = 0; r < 2; ++r) {
      sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
      config.steps = steps;
      config.step_gap_ns = 0;
      config.seed = 21 + static_cast<std::uint64_t>(r);
      pipescope::Run replica = testing::run_from_simulation(config);
      if (r == 0) run.types = replica.types;  // the same names in the same order
      for (Device& device : replica.devices) {
        device.index = static_cast<int>(run.devices.size());
        device.machine = r;
        device.machine_name = "machine" + std::to_string(r);
        for (Job& job : device.jobs) {
          job.start_ns += r * 1'000'000;
          job.end_ns += r * 1'000'000;
        }
        run.devices.push_back(std::move(device));
      }
    }
    run.finalize();
    pipescope::Run copy = run;
    ASSERT_EQ(analyze_run(copy, PipelineOptions()).pipeline.replicas.replicas.size(), 2u);
    check_every_rank_count(run, "replicas, " + std::to_string(steps) + " steps");
  }
}

// Device 1 starts each step while device 0 still runs the previous one: the
// owner of a window needs jobs of the next range (the halo).
TEST(PartitionedDriver, JobsOverlappingAnotherRanksWindow) {
  pipescope::Run run;
  for (std::int64_t k = 0; k < 5; ++k) {
    const std::int64_t t = k * 100;
    testing::add_job(run, 0, "forward", 0, t, t + 40);
    testing::add_job(run, 0, "backward", 0, t + 40, t + 90);
    testing::add_job(run, 0, "optimizer", 0, t + 90, t + 120);
    testing::add_job(run, 1, "recv_forward", 0, t + 5, t + 30);
    testing::add_job(run, 1, "forward", 0, t + 30, t + 60);
    testing::add_job(run, 1, "send_backward", 0, t + 60, t + 160);
    testing::add_job(run, 1, "backward", 0, t + 65, t + 80);
    testing::add_job(run, 1, "optimizer", 0, t + 80, t + 95);
  }
  run.finalize();
  check_every_rank_count(run, "overlapping steps");
}

// A cut input: the last step is judged by job counts only its owner has.
TEST(PartitionedDriver, CutInputAndLastStepJudgedByCounts) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 3, 4);
  config.steps = 5;
  pipescope::Run run = testing::run_from_simulation(config);
  check_every_rank_count(run, "last step by counts");
  run.devices[1].cut_ns = run.devices[1].jobs[run.devices[1].jobs.size() / 2].start_ns;
  check_every_rank_count(run, "cut input");
}

// A rank that fails makes every rank's exchange fail instead of waiting.
TEST(LocalExchange, AFailingRankStopsTheOthers) {
  EXPECT_THROW(run_local_ranks<int>(3,
                                    [](Exchange& exchange) {
                                      if (exchange.rank() == 1) throw std::runtime_error("no");
                                      exchange.all_gather("x");
                                      exchange.all_gather("y");
                                      return 0;
                                    }),
               std::runtime_error);
  const std::vector<int> sums = run_local_ranks<int>(4, [](Exchange& exchange) {
    int sum = 0;
    for (int round = 0; round < 3; ++round) {
      std::vector<std::string> out(4);
      for (int r = 0; r < 4; ++r)
        out[static_cast<std::size_t>(r)] = std::to_string(exchange.rank() * 10 + r);
      for (const std::string& s : exchange.all_to_all(out)) sum += std::stoi(s);
    }
    return sum;
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(sums[static_cast<std::size_t>(r)], 3 * (60 + 4 * r));
}

}  // namespace
}  // namespace pipescope::distributed
