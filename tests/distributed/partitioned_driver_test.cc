// The partitioned analysis run on 1 to N ranks (threads exchanging bytes, as
// the MPI ranks do) must give the figures of the single process: every
// window, segment, total and ratio on every rank, and each rank's own steps'
// device figures; the jobs each rank ends up holding are the part cut_part
// gives in one process. Devices are handed to the ranks two ways (round
// robin, and all on the last rank) so that who read a device never matters.
#include <gtest/gtest.h>

#include <string>

#include "analysis/metric_parts.h"
#include "analysis/metrics.h"
#include "analysis/step_partition.h"
#include "analysis/step_rule.h"
#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "support/hand_run.h"
#include "support/pipeline_sim_run.h"

namespace pipescope::distributed {
namespace {

/// The run as rank `rank` of `ranks` read it: every device, the jobs only of
/// those it read.
Run local_view(const Run& run, int rank, int ranks, bool round_robin) {
  Run local = run;
  for (std::size_t d = 0; d < local.devices.size(); ++d) {
    const int reader =
        round_robin ? static_cast<int>(d % static_cast<std::size_t>(ranks)) : ranks - 1;
    if (reader == rank) continue;
    Device& device = local.devices[d];
    device.jobs.clear();
    device.segment_begin.clear();
    device.step_starts.clear();
    device.events.clear();
  }
  return local;
}

void expect_same_window(const StepWindow& x, const StepWindow& y, bool figures,
                        const std::string& at) {
  EXPECT_EQ(x.step, y.step) << at;
  EXPECT_EQ(x.segment, y.segment) << at;
  EXPECT_EQ(x.complete, y.complete) << at;
  EXPECT_EQ(x.start_ns, y.start_ns) << at;
  EXPECT_EQ(x.end_ns, y.end_ns) << at;
  ASSERT_EQ(x.devices.size(), y.devices.size()) << at;
  if (!figures) return;
  EXPECT_EQ(x.bubble_ratio, y.bubble_ratio) << at;  // bit for bit
  for (std::size_t d = 0; d < x.devices.size(); ++d) {
    EXPECT_EQ(x.devices[d].busy_ns, y.devices[d].busy_ns) << at << " device " << d;
    EXPECT_EQ(x.devices[d].idle_ns, y.devices[d].idle_ns) << at << " device " << d;
    EXPECT_EQ(x.devices[d].comm_ns, y.devices[d].comm_ns) << at << " device " << d;
  }
}

void check_ranks(const Run& run, int ranks, bool round_robin, const std::string& what) {
  const std::string label = what + ", " + std::to_string(ranks) + " ranks" +
                            (round_robin ? "" : ", devices on the last rank");
  SCOPED_TRACE(label);
  const Metrics whole = compute_metrics(run);
  const std::vector<PartitionedAnalysis> results =
      run_local_ranks<PartitionedAnalysis>(ranks, [&](Exchange& exchange) {
        const Run local = local_view(run, exchange.rank(), exchange.size(), round_robin);
        return analyze_partitioned(exchange, local);
      });
  ASSERT_EQ(results.size(), static_cast<std::size_t>(ranks));
  const TypeKinds kinds(run.types);
  for (int r = 0; r < ranks; ++r) {
    const PartitionedAnalysis& mine = results[static_cast<std::size_t>(r)];
    const Metrics& m = mine.metrics;
    const std::string at = "rank " + std::to_string(r);
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
    const PartJobs cut =
        cut_part(run, kinds, whole.job_step, mine.plan, static_cast<std::size_t>(r));
    EXPECT_EQ(mine.part.owned_jobs, cut.owned_jobs) << at;
    EXPECT_EQ(mine.part.job_step, cut.job_step) << at;
    EXPECT_EQ(mine.part.job_index, cut.job_index) << at;
    ASSERT_EQ(mine.part.run.devices.size(), cut.run.devices.size()) << at;
    for (std::size_t d = 0; d < cut.run.devices.size(); ++d) {
      ASSERT_EQ(mine.part.run.devices[d].jobs.size(), cut.run.devices[d].jobs.size()) << at;
      for (std::size_t i = 0; i < cut.run.devices[d].jobs.size(); ++i) {
        const Job &a = mine.part.run.devices[d].jobs[i], &b = cut.run.devices[d].jobs[i];
        EXPECT_TRUE(a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.type == b.type &&
                    a.line == b.line)
            << at << " device " << d << " job " << i;
      }
    }
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
  config.machine_skew_ns = {0, 3'000'000};
  check_every_rank_count(testing::run_from_simulation(config), "two machines, skew");
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
