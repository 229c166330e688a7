// The what-if replay against the simulator, its independent oracle: a run
// replayed under its own schedule gives back its step time, and a run A
// replayed under scenario B gives what simulating B directly gives.
#include "whatif/replay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/bubble_split.h"
#include "analysis/pipeline.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

using sim::ScheduleKind;

struct Analysed {
  Run run;
  AnalyzedRun analysed;
};

Analysed analyse(const sim::SimConfig& config) {
  Analysed a;
  a.run = testing::run_from_simulation(config);
  a.analysed = analyze_run(a.run, PipelineOptions{});
  return a;
}

/// A jitter-free run; chunk costs are the stage's costs divided by V (the
/// simulator's costs are per op), one stage 30% slower, two machines.
sim::SimConfig config(ScheduleKind kind, int p, int m, int v = 1) {
  sim::SimConfig c = testing::sim_config(kind, p, m, v);
  c.jitter = 0;
  c.steps = 4;
  c.machines = 2;
  c.costs = {12'000'000 / v, 12'000'000 / v, 10'000'000 / v};
  c.stage_slowdown.assign(p, 1.0);
  c.stage_slowdown[1] = 1.3;
  return c;
}

WhatifInputs inputs_of(const Analysed& a) {
  return measure_whatif_inputs(a.run, a.analysed.metrics, a.analysed.pipeline);
}

/// The contract's median step and bubble ratio of a run.
struct Figures {
  double step_ns = 0;
  double bubble_ratio = 0;
};

Figures measured(const Analysed& a) {
  const WhatifInputs in = inputs_of(a);
  return {in.measured.step_ns, in.measured.bubble_ratio};
}

TEST(WhatifReplay, MeasuresTheSimulatorsCosts) {
  const WhatifInputs in = inputs_of(analyse(config(ScheduleKind::one_f_one_b, 4, 8)));
  EXPECT_EQ(in.measured.schedule, "1f1b");
  EXPECT_EQ(in.measured.stages, 4);
  EXPECT_EQ(in.measured.micro_batches, 8);
  EXPECT_EQ(in.measured.chunks, 1);
  EXPECT_FALSE(in.split_backward);
  ASSERT_EQ(in.stages.size(), 4u);
  EXPECT_DOUBLE_EQ(in.stages[0].forward.front(), 12e6);
  EXPECT_DOUBLE_EQ(in.stages[0].backward.front(), 22e6);
  EXPECT_DOUBLE_EQ(in.stages[1].forward.front(), 15.6e6);
  EXPECT_DOUBLE_EQ(in.stages[0].optimizer.front(), 8e6);
  // Stages 0-1 on machine 0, 2-3 on machine 1; the simulator's latency is 150 us.
  // It starts a job as soon as its device is free and its input is there:
  // no launch overhead.
  EXPECT_FALSE(in.links.launch_overhead_samples.empty());
  EXPECT_EQ(in.links.launch_overhead_ns, 0);
  ASSERT_FALSE(in.links.same_machine.samples.empty());
  ASSERT_FALSE(in.links.cross_machine.samples.empty());
  EXPECT_LE(in.links.same_machine.samples.size(), in.links.same_machine.pairs);
  for (double l : in.links.same_machine.samples) EXPECT_DOUBLE_EQ(l, 150'000);
  for (double l : in.links.cross_machine.samples) EXPECT_DOUBLE_EQ(l, 150'000);
  EXPECT_DOUBLE_EQ(in.links.same_machine.ns, 150'000);
  EXPECT_TRUE(in.notes.empty());
  ASSERT_FALSE(in.step_overhead.empty());
  for (double g : in.step_overhead) EXPECT_DOUBLE_EQ(g, 2'000'000);
}

// What one run cannot measure is marked on each scenario that predicts it:
// another V, and a split backward replayed from whole ones.
TEST(WhatifReplay, MarksWhatAScenarioExtrapolates) {
  const WhatifInputs in = inputs_of(analyse(config(ScheduleKind::one_f_one_b, 4, 8)));
  using Tags = std::vector<std::string>;
  EXPECT_EQ(scenario_extrapolations(in, {ScheduleId::paddle_1f1b, 16, 1}), Tags{});
  EXPECT_EQ(scenario_extrapolations(in, {ScheduleId::paddle_fthenb, 8, 1}), Tags{});
  EXPECT_EQ(scenario_extrapolations(in, {ScheduleId::paddle_vpp, 8, 2}), Tags{"V"});
  EXPECT_EQ(scenario_extrapolations(in, {ScheduleId::paddle_zbh1, 8, 1}), Tags{"split backward"});
  EXPECT_EQ(scenario_extrapolations(in, {ScheduleId::torch_interleaved_zero_bubble, 8, 2}),
            (Tags{"V", "split backward"}));
  EXPECT_EQ(
      replay_scenario(in, {ScheduleId::paddle_vpp, 8, 2}, ReplayOptions{}).prediction.extrapolates,
      Tags{"V"});
  // A run that logged split backwards replays a split one as measured.
  const WhatifInputs zb = inputs_of(analyse(config(ScheduleKind::zbh1, 4, 8)));
  EXPECT_EQ(scenario_extrapolations(zb, {ScheduleId::paddle_zbh1, 16, 1}), Tags{});
  // Costs alike on every micro-batch (no jitter): no pattern to keep.
  EXPECT_TRUE(std::isnan(in.micro_batch_correlation));
  EXPECT_FALSE(in.shared_pattern);
}

TEST(WhatifReplay, ItsOwnScheduleGivesBackTheMeasuredStepTime) {
  struct Case {
    ScheduleKind kind;
    ScheduleId id;
    int m, v;
  };
  for (const Case& c :
       {Case{ScheduleKind::one_f_one_b, ScheduleId::paddle_1f1b, 8, 1},
        Case{ScheduleKind::fthenb, ScheduleId::paddle_fthenb, 8, 1},
        Case{ScheduleKind::interleaved, ScheduleId::paddle_vpp, 8, 2},
        Case{ScheduleKind::zbh1, ScheduleId::paddle_zbh1, 8, 1},
        Case{ScheduleKind::eager_one_f_one_b, ScheduleId::paddle_eager_1f1b, 8, 1},
        // A V: chunk 1 of rank s is global stage 2P-1-s.
        Case{ScheduleKind::torch_zbv_zero_bubble, ScheduleId::torch_zbv_zero_bubble, 8, 2},
        Case{ScheduleKind::torch_dualpipev, ScheduleId::torch_dualpipev, 8, 2}}) {
    const Analysed a = analyse(config(c.kind, 4, c.m, c.v));
    const WhatifInputs in = inputs_of(a);
    ASSERT_EQ(in.measured.id, c.id);
    const Prediction p = replay_scenario(in, {c.id, c.m, c.v}, ReplayOptions{}).prediction;
    SCOPED_TRACE(in.measured.schedule);
    EXPECT_NEAR(p.step_ns / in.measured.step_ns, 1.0, 0.01);
    EXPECT_NEAR(p.bubble_ratio, in.measured.bubble_ratio, 0.005);
    // Without cost spread every replayed step is the same.
    EXPECT_DOUBLE_EQ(p.step_p10_ns, p.step_p90_ns);
  }
}

struct CrossCase {
  ScheduleKind from;
  int from_m, from_v;
  ScheduleKind to;
  ScheduleId to_id;
  int to_m, to_v;
};

TEST(WhatifReplay, ScenarioBFromRunAMatchesSimulatingB) {
  const CrossCase cases[] = {
      {ScheduleKind::one_f_one_b, 8, 1, ScheduleKind::fthenb, ScheduleId::paddle_fthenb, 8, 1},
      {ScheduleKind::one_f_one_b, 8, 1, ScheduleKind::interleaved, ScheduleId::paddle_vpp, 8, 2},
      {ScheduleKind::one_f_one_b, 8, 1, ScheduleKind::zbh1, ScheduleId::paddle_zbh1, 8, 1},
      {ScheduleKind::one_f_one_b, 8, 1, ScheduleKind::one_f_one_b, ScheduleId::paddle_1f1b, 16, 1},
      {ScheduleKind::interleaved, 8, 2, ScheduleKind::one_f_one_b, ScheduleId::paddle_1f1b, 8, 1},
  };
  // The simulator splits a whole backward of 22 ms into 12 + 10.
  ReplayOptions options;
  options.weight_share = 10.0 / 22.0;
  for (const CrossCase& c : cases) {
    const WhatifInputs in = inputs_of(analyse(config(c.from, 4, c.from_m, c.from_v)));
    const Figures direct = measured(analyse(config(c.to, 4, c.to_m, c.to_v)));
    const Prediction p = replay_scenario(in, {c.to_id, c.to_m, c.to_v}, options).prediction;
    SCOPED_TRACE(std::string(whatif_schedule_name(c.to_id)) + " from " + in.measured.schedule);
    EXPECT_NEAR(p.step_ns / direct.step_ns, 1.0, 0.03);
    EXPECT_NEAR(p.bubble_ratio, direct.bubble_ratio, 0.02);
  }
}

TEST(WhatifReplay, LrJobsAreReplayedAndSendRecvJobsFoldIntoTheLatency) {
  for (const bool lr : {true, false}) {
    sim::SimConfig c = config(ScheduleKind::one_f_one_b, 4, 8);
    c.lr_jobs = lr;
    c.comm_jobs = !lr;
    const WhatifInputs in = inputs_of(analyse(c));
    SCOPED_TRACE(lr ? "lr jobs" : "send/recv jobs");
    EXPECT_EQ(in.stages[0].lr.empty(), !lr);
    const Prediction p =
        replay_scenario(in, {ScheduleId::paddle_1f1b, 8, 1}, ReplayOptions{}).prediction;
    EXPECT_NEAR(p.step_ns / in.measured.step_ns, 1.0, 0.01);
    EXPECT_NEAR(p.bubble_ratio, in.measured.bubble_ratio, 0.01);
  }
}

TEST(WhatifReplay, CountsTheMicroBatchesInFlight) {
  const WhatifInputs in = inputs_of(analyse(config(ScheduleKind::one_f_one_b, 4, 8)));
  const auto in_flight = [&](Scenario s) {
    return replay_scenario(in, s, ReplayOptions{}).prediction.in_flight_max;
  };
  // 1F1B: P - s warm-up forwards; FThenB: all M; ZBH1 frees after each W.
  EXPECT_EQ(in_flight({ScheduleId::paddle_1f1b, 8, 1}), (std::vector<double>{4, 3, 2, 1}));
  EXPECT_EQ(in_flight({ScheduleId::paddle_fthenb, 8, 1}), (std::vector<double>{8, 8, 8, 8}));
  EXPECT_EQ(in_flight({ScheduleId::paddle_1f1b, 16, 1}), (std::vector<double>{4, 3, 2, 1}));
}

TEST(WhatifReplay, PaddlesOverlapPiecesAreReplayedInterleavedIn1F1BOnly) {
  // The simulator's 1F1B run with each steady-phase (backward, forward) pair
  // cut as Paddle's enable_backward_forward_overlap cuts it: backward(chunk0)
  // (40% of the backward), forward(chunk0) (30% of the forward),
  // backward(chunk1), forward(chunk1), run one after the other.
  Analysed a = analyse(config(ScheduleKind::one_f_one_b, 4, 8));
  pipescope::Run cut;
  cut.devices = a.run.devices;
  for (Device& d : cut.devices) {
    JobVector jobs;
    const JobVector& from = d.jobs;
    for (std::size_t i = 0; i < from.size(); ++i) {
      const std::string& type = a.run.types.name(from[i].type);
      if (type == "backward" && i + 1 < from.size() &&
          a.run.types.name(from[i + 1].type) == "forward") {
        const Job& b = from[i];
        const Job& f = from[i + 1];
        const std::int64_t bd = b.duration_ns(), fd = f.duration_ns();
        std::int64_t t = b.start_ns;
        for (const auto& [job, share, name] : {std::tuple{&b, 0.4, "backward(chunk0)"},
                                               {&f, 0.3, "forward(chunk0)"},
                                               {&b, 0.6, "backward(chunk1)"},
                                               {&f, 0.7, "forward(chunk1)"}}) {
          Job piece = *job;
          piece.start_ns = t;
          piece.end_ns = t + std::llround((job == &b ? bd : fd) * share);
          piece.type = cut.types.intern(name);
          t = piece.end_ns;
          jobs.push_back(piece);
        }
        ++i;
        continue;
      }
      Job job = from[i];
      job.type = cut.types.intern(type);
      jobs.push_back(job);
    }
    d.jobs = std::move(jobs);
  }
  cut.finalize();
  const AnalyzedRun analysed = analyze_run(cut, PipelineOptions{});
  const WhatifInputs in = measure_whatif_inputs(cut, analysed.metrics, analysed.pipeline);
  ASSERT_EQ(in.measured.id, ScheduleId::paddle_1f1b);
  EXPECT_EQ(in.pieces, 2);
  // Stage 1: forwards 15.6 ms, backwards 28.6 ms (1.3x), whole or summed.
  ASSERT_EQ(in.stages[1].backward_piece_share.size(), 2u);
  EXPECT_NEAR(in.stages[1].backward_piece_share[0], 0.4, 1e-6);
  EXPECT_NEAR(in.stages[1].forward_piece_share[1], 0.7, 1e-6);
  EXPECT_DOUBLE_EQ(in.stages[1].forward.back(), 15.6e6);
  // The inherent-bubble split's op costs count an op's pieces once: the same
  // mean forward and backward as the run without pieces.
  const auto op_means = [](const pipescope::Run& r, const AnalyzedRun& x) {
    const SplitEvidence e = split_evidence(r, x.metrics, x.pipeline.stages, x.pipeline.roles, 0,
                                           x.metrics.steps.size());
    return std::pair{static_cast<double>(e.run_sums.ns[0]) / e.run_sums.count[0],
                     static_cast<double>(e.run_sums.ns[1]) / e.run_sums.count[1]};
  };
  const auto whole = op_means(a.run, a.analysed);
  const auto pieces = op_means(cut, analysed);
  EXPECT_NEAR(pieces.first, whole.first, 1.0);
  EXPECT_NEAR(pieces.second, whole.second, 1.0);

  // 1F1B: the steady phase's pairs run as their pieces, interleaved.
  const auto types_of = [](const Replay& r, int stage) {
    std::vector<std::string> out;
    for (const Job& j : r.run.devices[static_cast<std::size_t>(stage)].jobs) {
      out.push_back(r.run.types.name(j.type));
    }
    return out;
  };
  const Replay one = replay_scenario(in, {ScheduleId::paddle_1f1b, 8, 1}, ReplayOptions{});
  const std::vector<std::string> stage3 = types_of(one, 3);
  const std::vector<std::string> head(stage3.begin(), stage3.begin() + 6);
  EXPECT_EQ(head,
            (std::vector<std::string>{"forward", "backward(chunk0)", "forward(chunk0)",
                                      "backward(chunk1)", "forward(chunk1)", "backward(chunk0)"}));
  // A backward piece's share of its op.
  const Job& b0 = one.run.devices[3].jobs[1];
  const Job& b1 = one.run.devices[3].jobs[3];
  EXPECT_NEAR(static_cast<double>(b0.duration_ns()) / (b0.duration_ns() + b1.duration_ns()), 0.4,
              1e-6);
  // Other schedules run every op whole.
  for (const std::string& t :
       types_of(replay_scenario(in, {ScheduleId::paddle_eager_1f1b, 8, 1}, ReplayOptions{}), 3)) {
    EXPECT_EQ(t.find("chunk"), std::string::npos) << t;
  }
}

TEST(WhatifReplay, CostSpreadShowsInTheReplayedSteps) {
  sim::SimConfig c = config(ScheduleKind::one_f_one_b, 4, 8);
  c.jitter = 0.2;
  c.steps = 6;
  const WhatifInputs in = inputs_of(analyse(c));
  const Prediction p =
      replay_scenario(in, {ScheduleId::paddle_1f1b, 8, 1}, ReplayOptions{}).prediction;
  EXPECT_LT(p.step_p10_ns, p.step_p90_ns);
  EXPECT_LE(p.step_p10_ns, p.step_ns);
  EXPECT_GE(p.step_p90_ns, p.step_ns);
  EXPECT_NEAR(p.step_ns / in.measured.step_ns, 1.0, 0.05);
}

TEST(WhatifScenario, SaysWhichCombinationsWork) {
  EXPECT_EQ(scenario_problem({ScheduleId::paddle_vpp, 8, 2}, 4), "");
  EXPECT_EQ(scenario_problem({ScheduleId::paddle_vpp, 6, 2}, 4),
            "vpp (PaddlePaddle static VPP) does not run P=4, M=6, V=2: it needs M a multiple of "
            "P (asserted); M == P: every forward is warm-up; with P=4, V=2 it runs M = 4, 8, 12, "
            "16, 20, 24");
  EXPECT_EQ(scenario_problem({ScheduleId::paddle_1f1b, 8, 2}, 4),
            "1f1b runs one model chunk per stage, so V must be 1 (got V=2); the schedules that "
            "take V > 1 are vpp, vpp-split-backward, dygraph-interleave, torch-interleaved1f1b, "
            "torch-interleavedzerobubble (any V that divides the model), and "
            "torch-zbvzerobubble, torch-dualpipev (V = 2)");
  EXPECT_EQ(scenario_problem({ScheduleId::torch_zbv_zero_bubble, 8, 4}, 4),
            "torch-zbvzerobubble runs exactly 2 model chunks per stage (got V=4)");
  const WhatifInputs in = inputs_of(analyse(config(ScheduleKind::one_f_one_b, 4, 8)));
  EXPECT_THROW(replay_scenario(in, {ScheduleId::paddle_vpp, 6, 2}, ReplayOptions{}),
               std::invalid_argument);
}

TEST(WhatifScenario, SweepsEveryScheduleOnceperShape) {
  const std::vector<Scenario> sweep = sweep_scenarios(4, 8);
  const auto has = [&](ScheduleId id, int m, int v) {
    for (const Scenario& s : sweep) {
      if (s.schedule == id && s.micro_batches == m && s.chunks == v) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(ScheduleId::paddle_1f1b, 8, 1));
  EXPECT_TRUE(has(ScheduleId::paddle_1f1b, 32, 1));
  EXPECT_TRUE(has(ScheduleId::paddle_vpp, 16, 4));
  EXPECT_TRUE(has(ScheduleId::paddle_zbh1, 16, 1));
  EXPECT_TRUE(has(ScheduleId::torch_zbv_zero_bubble, 8, 2));
  EXPECT_FALSE(has(ScheduleId::paddle_1f1b, 8, 2));
  // Same lists as Paddle's static 1F1B: named once.
  EXPECT_FALSE(has(ScheduleId::dygraph_1f1b, 8, 1));
  EXPECT_FALSE(has(ScheduleId::torch_gpipe, 8, 1));
  for (const Scenario& s : sweep) EXPECT_EQ(scenario_problem(s, 4), "");
}

}  // namespace
}  // namespace pipescope
