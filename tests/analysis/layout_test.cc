// Layout detection (layout.h) on hybrid runs put together here from
// simulated pipelines: each data-parallel replica is a pipeline simulated
// with its own seed (independent jitter) or the same one (replicas timed
// alike), tensor-parallel peers are copies of a device with a few
// microseconds of launch jitter, and the devices take their global ranks
// from a mesh order and their machines from blocks of ranks. The truth is
// known by construction; the analysis is told nothing.
#include "analysis/layout.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/clock_skew.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

using testing::run_from_simulation;
using testing::sim_config;

struct Hybrid {
  LayoutShape shape;
  sim::ScheduleKind kind = sim::ScheduleKind::one_f_one_b;
  int micro_batches = 8;
  int gpus_per_machine = 8;
  bool independent = true;         ///< each replica its own jitter
  std::vector<std::int64_t> skew;  ///< per machine, added to its times
};

/// The hybrid run, devices in global rank order.
Run hybrid_run(const Hybrid& h) {
  std::vector<Run> replicas;
  for (int r = 0; r < h.shape.dp; ++r) {
    sim::SimConfig config = sim_config(h.kind, h.shape.pp, h.micro_batches);
    config.steps = 3;
    config.seed = h.independent ? 11 + static_cast<std::uint64_t>(r) : 11;
    replicas.push_back(run_from_simulation(config));
  }
  Run run;
  run.types = replicas[0].types;  // every replica interns the same names in the same order
  const std::int64_t ranks = h.shape.ranks();
  run.devices.resize(static_cast<std::size_t>(ranks));
  for (std::int64_t rank = 0; rank < ranks; ++rank) {
    const MeshPlace at = mesh_place(h.shape, rank);
    Device device =
        replicas[static_cast<std::size_t>(at.replica)].devices[static_cast<std::size_t>(at.stage)];
    device.index = static_cast<int>(rank);
    device.machine = static_cast<int>(rank / h.gpus_per_machine);
    device.rank = static_cast<int>(rank % h.gpus_per_machine);
    device.machine_name = "machine" + std::to_string(device.machine);
    const std::int64_t skew = static_cast<std::size_t>(device.machine) < h.skew.size()
                                  ? h.skew[static_cast<std::size_t>(device.machine)]
                                  : 0;
    // A peer launches up to 9 us later; all peers end together (their all-reduce).
    const std::int64_t launch = at.peer * 3'000;
    for (Job& job : device.jobs) {
      job.start_ns += launch + skew;
      job.end_ns += skew;
    }
    run.devices[static_cast<std::size_t>(rank)] = std::move(device);
  }
  run.finalize();
  return run;
}

Layout detect(const Run& run) {
  const Metrics metrics = compute_metrics(run);
  return detect_layout(run, metrics.job_step, classify_job_roles(run.types));
}

/// Each stage's global device indices under `shape`.
std::vector<std::set<int>> stages_of(const LayoutShape& shape) {
  std::vector<std::set<int>> out(static_cast<std::size_t>(shape.pp));
  for (std::int64_t rank = 0; rank < shape.ranks(); ++rank) {
    out[static_cast<std::size_t>(mesh_place(shape, rank).stage)].insert(static_cast<int>(rank));
  }
  return out;
}

std::vector<std::set<int>> stages_found(const Run& run, const Layout& layout) {
  std::vector<std::set<int>> out;
  for (const auto& group : layout.stages.devices) {
    std::set<int> s;
    for (const std::size_t d : group) s.insert(run.devices[d].index);
    out.push_back(s);
  }
  return out;
}

constexpr std::array<LayoutAxis, 3> kPaddle{LayoutAxis::dp, LayoutAxis::pp, LayoutAxis::tp};
constexpr std::array<LayoutAxis, 3> kMegatron{LayoutAxis::pp, LayoutAxis::dp, LayoutAxis::tp};

TEST(Layout, MeshPlacesFollowTheOrderWithTheLastAxisFastest) {
  const LayoutShape paddle{4, 2, 2, kPaddle};
  EXPECT_EQ(mesh_place(paddle, 0).stage, 0);
  EXPECT_EQ(mesh_place(paddle, 1).peer, 1);
  EXPECT_EQ(mesh_place(paddle, 2).stage, 1);
  EXPECT_EQ(mesh_place(paddle, 8).replica, 1);
  EXPECT_EQ(mesh_place(paddle, 8).stage, 0);
  const LayoutShape megatron{4, 2, 2, kMegatron};
  EXPECT_EQ(mesh_place(megatron, 2).replica, 1);
  EXPECT_EQ(mesh_place(megatron, 2).stage, 0);
  EXPECT_EQ(mesh_place(megatron, 4).stage, 1);
}

TEST(Layout, SpecsParseAndBadOnesSayWhy) {
  const LayoutShape s = parse_layout_spec("pp=4,dp=8,tp=8", "--layout");
  EXPECT_EQ(s, (LayoutShape{4, 8, 8, kPaddle}));
  EXPECT_EQ(parse_layout_spec("dp=2,pp=4,order=pp,dp,tp", "--layout"),
            (LayoutShape{4, 2, 1, kMegatron}));
  EXPECT_EQ(parse_layout_spec("pp=8", "--layout").ranks(), 8);
  for (const char* bad :
       {"pp=0", "pp=4,pp=2", "xp=2", "pp", "pp=4,order=dp,pp", "pp=2,order=dp,dp,tp", "pp=x"}) {
    SCOPED_TRACE(bad);
    try {
      parse_layout_spec(bad, "--layout");
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--layout"), std::string::npos) << e.what();
    }
  }
}

TEST(Layout, HybridMeshesAreFoundInEitherOrderWithReplicasOnOtherMachines) {
  struct Case {
    LayoutShape shape;
    sim::ScheduleKind kind;
    int gpus;
  };
  const std::vector<Case> cases = {
      {{4, 2, 1, kPaddle}, sim::ScheduleKind::one_f_one_b, 4},    // one replica per machine
      {{4, 2, 1, kMegatron}, sim::ScheduleKind::one_f_one_b, 4},  // pipeline across machines
      {{2, 4, 1, kPaddle}, sim::ScheduleKind::fthenb, 4},  // a stage's replicas on 2 machines
      {{4, 2, 1, kPaddle}, sim::ScheduleKind::fthenb, 8},  // every stage runs one job list
      {{2, 2, 2, kPaddle}, sim::ScheduleKind::one_f_one_b, 2},
      {{4, 2, 2, kMegatron}, sim::ScheduleKind::one_f_one_b, 4},
      {{4, 8, 8, kPaddle}, sim::ScheduleKind::one_f_one_b, 8},  // 256 ranks, 32 machines
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(describe_layout_shape(c.shape) + " order " + layout_order_name(c.shape.order));
    Hybrid h;
    h.shape = c.shape;
    h.kind = c.kind;
    h.gpus_per_machine = c.gpus;
    const pipescope::Run run = hybrid_run(h);
    const Layout layout = detect(run);
    ASSERT_EQ(layout.method, LayoutMethod::detected) << layout.reason;
    EXPECT_EQ(layout.shape.pp, c.shape.pp);
    EXPECT_EQ(layout.shape.dp, c.shape.dp);
    EXPECT_EQ(layout.shape.tp, c.shape.tp);
    EXPECT_EQ(stages_found(run, layout), stages_of(c.shape));
    EXPECT_EQ(layout.replicas.size(), static_cast<std::size_t>(c.shape.dp));
  }
}

TEST(Layout, APipelineAloneIsOneStagePerDevice) {
  Hybrid h;
  h.shape = {8, 1, 1, kPaddle};
  h.gpus_per_machine = 2;
  h.skew = {0, 3'000'000, -2'000'000, 0};  // clocks do not decide the layout
  const pipescope::Run run = hybrid_run(h);
  const Layout layout = detect(run);
  ASSERT_EQ(layout.method, LayoutMethod::detected) << layout.reason;
  EXPECT_EQ(layout.shape, (LayoutShape{8, 1, 1, kPaddle}));
  EXPECT_EQ(layout.stages.stage_count(), 8u);
}

TEST(Layout, ReplicasTimedAlikeReadAsPeersWhenTheirRanksAreConsecutive) {
  // pp,dp,tp: the two replicas of a stage are consecutive ranks of one
  // machine, and with the same jitter they run every job at the same time.
  Hybrid h;
  h.shape = {4, 2, 1, kMegatron};
  h.independent = false;
  const pipescope::Run run = hybrid_run(h);
  const Layout layout = detect(run);
  ASSERT_EQ(layout.method, LayoutMethod::detected) << layout.reason;
  EXPECT_EQ(layout.shape.pp, 4);
  EXPECT_EQ(layout.shape.dp * layout.shape.tp, 2);
  EXPECT_EQ(stages_found(run, layout), stages_of(h.shape));
}

TEST(Layout, MachinesInTheWrongOrderFitNoLayoutAndSayWhy) {
  Hybrid h;
  h.shape = {4, 1, 1, kPaddle};
  h.gpus_per_machine = 2;
  pipescope::Run run = hybrid_run(h);
  // The second machine's ranks listed first: stage 2 now has index 0.
  for (Device& d : run.devices) {
    d.index = (d.index + 2) % 4;
    d.machine = 1 - d.machine;
  }
  std::sort(run.devices.begin(), run.devices.end(),
            [](const Device& a, const Device& b) { return a.index < b.index; });
  const Layout layout = detect(run);
  EXPECT_EQ(layout.method, LayoutMethod::none);
  EXPECT_EQ(layout.stages.stage_count(), 4u);
  EXPECT_NE(layout.reason.find("does not follow"), std::string::npos) << layout.reason;
}

// A missing rank: discovery closes the global indices up (the next device
// takes its index), but its machine and rank still say where it belongs,
// and the mesh is found with a hole there. A selection of devices
// (--devices 0,2,4,6: one peer of each stage) is a pipeline of its own.
TEST(Layout, AMissingRankLeavesAHoleAndASelectionIsAPipelineOfItsOwn) {
  Hybrid h;
  h.shape = {4, 2, 2, kPaddle};
  h.gpus_per_machine = 8;
  pipescope::Run run = hybrid_run(h);
  pipescope::Run selected = run;
  run.devices.erase(run.devices.begin() + 5);
  for (std::size_t d = 0; d < run.devices.size(); ++d) run.devices[d].index = static_cast<int>(d);
  const Layout holed = detect(run);
  ASSERT_EQ(holed.method, LayoutMethod::detected) << holed.reason;
  EXPECT_EQ(holed.shape, h.shape);
  EXPECT_EQ(holed.stages.devices[2].size(), 3u);  // stage 2 lost one peer of replica 0

  std::vector<Device> kept;
  for (const int i : {0, 2, 4, 6}) kept.push_back(selected.devices[static_cast<std::size_t>(i)]);
  selected.devices = std::move(kept);
  const Layout pipeline = detect(selected);
  ASSERT_EQ(pipeline.method, LayoutMethod::detected) << pipeline.reason;
  EXPECT_EQ(pipeline.shape.pp, 4);
  EXPECT_EQ(pipeline.shape.dp * pipeline.shape.tp, 1);
}

TEST(Layout, AGivenMeshIsTakenAndOneTooSmallIsRefused) {
  Hybrid h;
  h.shape = {4, 2, 1, kMegatron};
  h.gpus_per_machine = 4;
  const pipescope::Run run = hybrid_run(h);
  const Layout given = layout_from_shape(run, h.shape, "--layout");
  EXPECT_EQ(given.method, LayoutMethod::given);
  EXPECT_EQ(stages_found(run, given), stages_of(h.shape));
  EXPECT_THROW(layout_from_shape(run, LayoutShape{2, 2, 1, kPaddle}, "--layout"),
               std::invalid_argument);
}

// The clock fix on hybrid layouts: no skew is never corrected (the figures
// equal those of the clocks left alone), a real skew is found exactly.
TEST(Layout, NoSkewIsNeverCorrectedAndARealSkewIsFoundExactly) {
  for (const bool independent : {true, false}) {
    for (const auto& order : {kPaddle, kMegatron}) {
      SCOPED_TRACE(layout_order_name(order) + (independent ? " independent" : " alike"));
      Hybrid h;
      h.shape = {4, 2, 1, order};
      h.gpus_per_machine = 4;
      h.independent = independent;
      pipescope::Run run = hybrid_run(h);
      pipescope::Run untouched = run;
      PipelineOptions options;
      const AnalyzedRun a = analyze_run(run, options);
      EXPECT_FALSE(a.pipeline.clock.applied) << clock_method_name(a.pipeline.clock.method);
      PipelineOptions off;
      off.clock.fix = false;
      const AnalyzedRun b = analyze_run(untouched, off);
      EXPECT_EQ(a.metrics.bubble_ratio, b.metrics.bubble_ratio);
      EXPECT_EQ(a.metrics.total_window_ns, b.metrics.total_window_ns);

      h.skew = {0, 5'000'000};
      pipescope::Run skewed = hybrid_run(h);
      const AnalyzedRun c = analyze_run(skewed, options);
      if (order == kMegatron) {
        // The pipeline crosses the machines: the skew shows and is removed.
        EXPECT_EQ(c.pipeline.clock.method, ClockMethod::estimated);
        ASSERT_EQ(c.pipeline.clock.machines.size(), 2u);
        EXPECT_EQ(c.pipeline.clock.machines[1].offset_ns, 5'000'000);
        EXPECT_EQ(c.metrics.bubble_ratio, b.metrics.bubble_ratio);
        EXPECT_EQ(c.metrics.total_window_ns, b.metrics.total_window_ns);
      } else {
        // Each replica on its own machine: no dependency crosses, nothing to see.
        EXPECT_FALSE(c.pipeline.clock.applied);
      }
    }
  }
}

TEST(Layout, ReplicasGetTheirOwnFiguresAndTheSlowestBoundsTheRun) {
  Hybrid h;
  h.shape = {4, 2, 1, kPaddle};
  h.gpus_per_machine = 4;
  pipescope::Run run = hybrid_run(h);
  // Replica 1 (ranks 4-7) 20% slower in every job.
  for (std::size_t d = 4; d < 8; ++d) {
    for (Job& job : run.devices[d].jobs) {
      const std::int64_t from = run.devices[d].jobs.front().start_ns;
      job.start_ns = from + (job.start_ns - from) * 6 / 5;
      job.end_ns = from + (job.end_ns - from) * 6 / 5;
    }
  }
  const AnalyzedRun a = analyze_run(run, PipelineOptions{});
  const ReplicaSummary& r = a.pipeline.replicas;
  ASSERT_EQ(r.replicas.size(), 2u);
  EXPECT_EQ(r.slowest, 1);
  EXPECT_GT(r.replicas[1].step_ns, r.replicas[0].step_ns);
  EXPECT_EQ(r.replicas[0].devices, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(a.pipeline.bottleneck.slowest_stage, r.replicas[1].bottleneck.slowest_stage);
}

}  // namespace
}  // namespace pipescope
