// The what-if replay against a model it did not write (support/pipeline_model.h:
// its own event queue, placement, latency and launch rules, host gaps). Runs
// of every schedule of the table, P from 2 to 8 and M up to 16, link latencies
// of 0 to 5 ms, launch overheads of 0 to 50 us, one and two machines, balanced
// and one slow stage; from each run's measured costs the replay must give back
//   - the measured schedule: step time within 1%, bubble within 0.5 points,
//     and a model error the command trusts;
//   - every schedule, M in {M, 2M}, V in {1, 2, 4} it runs: within 3% of step
//     time and 2 points of bubble ratio of the model run with that scenario;
//   - the latencies and the launch overhead within 10% or 0.05 ms;
// and the model's own figures, computed from the contract's definitions, are
// compute_metrics'.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/job_role.h"
#include "analysis/pipeline.h"
#include "support/pipeline_model.h"
#include "whatif/model_error.h"
#include "whatif/replay.h"

namespace pipescope {
namespace {

using testing::ModelConfig;
using testing::ModelRun;
using testing::run_model;

struct Measured {
  ModelRun model;
  AnalyzedRun analysed;
  WhatifInputs inputs;
};

Measured measure(const ModelConfig& c) {
  Measured m;
  m.model = run_model(c);
  pipescope::Run run = m.model.run;
  m.analysed = analyze_run(run, PipelineOptions{});
  m.inputs = measure_whatif_inputs(run, m.analysed.metrics, m.analysed.pipeline);
  return m;
}

/// The run of the issue: 2 machines, 1F1B, P=4, M=8, no jitter, forwards of
/// 7.6-8.4 ms by stage, backwards twice that, optimizer 3 ms, a 0-3 ms host
/// gap, 0.2 ms between stages of a machine and 0.5 ms across, and a 20 us
/// launch overhead.
ModelConfig issue_run() {
  ModelConfig c;
  c.schedule = ScheduleId::paddle_1f1b;
  c.stages = 4;
  c.micro_batches = 8;
  c.forward_ns = {7'600'000, 7'900'000, 8'100'000, 8'400'000};
  for (std::int64_t f : c.forward_ns) c.backward_ns.push_back(2 * f);
  c.optimizer_ns.assign(4, 3'000'000);
  c.machines = 2;
  c.latency_same_ns = 200'000;
  c.latency_cross_ns = 500'000;
  c.host_gap_ns = {0, 1'500'000, 3'000'000};
  c.launch_overhead_ns = 20'000;
  return c;
}

ModelConfig with_scenario(ModelConfig c, const Scenario& s) {
  c.schedule = s.schedule;
  c.micro_batches = s.micro_batches;
  c.chunks = s.chunks;
  return c;
}

/// Within 10% or 0.05 ms, the issue's bound for an estimated cost.
bool close_cost(double estimate, double truth) {
  return std::abs(estimate - truth) <= std::max(0.1 * truth, 50'000.0);
}

TEST(WhatifFidelity, TheIssuesRunIsReproducedAndPredicted) {
  const Measured m = measure(issue_run());
  // The model's figures are the contract's.
  EXPECT_DOUBLE_EQ(m.inputs.measured.step_ns, m.model.step_ns);
  EXPECT_NEAR(m.inputs.measured.bubble_ratio, m.model.bubble_ratio, 1e-12);
  // The costs between jobs: measured, not queueing.
  EXPECT_DOUBLE_EQ(m.inputs.links.same_machine.ns, 200'000);
  EXPECT_DOUBLE_EQ(m.inputs.links.cross_machine.ns, 500'000);
  EXPECT_DOUBLE_EQ(m.inputs.links.launch_overhead_ns, 20'000);
  EXPECT_LT(m.inputs.links.same_machine.samples.size(), m.inputs.links.same_machine.pairs);

  const ModelError error = measure_model_error(m.inputs, ReplayOptions{});
  ASSERT_TRUE(error.available) << error.reason;
  EXPECT_TRUE(error.trusted());
  EXPECT_NEAR(error.step_error, 0, 0.01);
  EXPECT_NEAR(error.bubble_error, 0, 0.005);
  for (std::size_t s = 0; s < 4; ++s) {
    EXPECT_NEAR(error.replayed_busy_ns[s], error.measured_busy_ns[s], 1e3);
  }

  // More micro-batches lower the bubble, as running them does.
  for (const int m_count : {8, 16}) {
    const Scenario scenario{ScheduleId::paddle_1f1b, m_count, 1};
    const ModelRun truth = run_model(with_scenario(issue_run(), scenario));
    const Prediction p = replay_scenario(m.inputs, scenario, ReplayOptions{}).prediction;
    EXPECT_NEAR(p.step_ns / truth.step_ns, 1, 0.01) << "M=" << m_count;
    EXPECT_NEAR(p.bubble_ratio, truth.bubble_ratio, 0.005) << "M=" << m_count;
    // No jitter: no spread.
    EXPECT_EQ(p.step_p10_ns, p.step_p90_ns);
  }
}

/// A shape (P, M, V) the schedule runs, P ≤ 8 and M ≤ 16, rotated by variant.
std::optional<Scenario> shape_for(ScheduleId id, int variant, int& stages) {
  const std::array<int, 5> ps = {4, 8, 2, 6, 3};
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const int p = ps[(i + static_cast<std::size_t>(variant)) % ps.size()];
    for (const int m : {2 * p, 8, 16, p, 12, 4, 6}) {
      if (m > 16) continue;
      for (const int v : variant % 2 ? std::array<int, 3>{4, 2, 1} : std::array<int, 3>{2, 1, 4}) {
        const Scenario s{id, m, v};
        if (scenario_problem(s, p).empty()) {
          stages = p;
          return s;
        }
      }
    }
  }
  return std::nullopt;
}

ModelConfig matrix_run(ScheduleId id, int variant, bool& found) {
  ModelConfig c;
  int p = 0;
  const std::optional<Scenario> shape = shape_for(id, variant, p);
  found = shape.has_value();
  if (!found) return c;
  c = with_scenario(c, *shape);
  c.stages = p;
  const std::array<std::int64_t, 4> same = {0, 200'000, 1'000'000, 5'000'000};
  const std::array<std::int64_t, 4> cross = {500'000, 0, 5'000'000, 2'000'000};
  const std::array<std::int64_t, 3> overhead = {0, 20'000, 50'000};
  c.latency_same_ns = same[variant % 4];
  c.latency_cross_ns = cross[(variant / 2) % 4];
  c.launch_overhead_ns = overhead[variant % 3];
  c.machines = p >= 2 ? 1 + variant % 2 : 1;
  c.host_gap_ns = variant % 3 == 0 ? std::vector<std::int64_t>{0, 1'500'000, 3'000'000}
                                   : std::vector<std::int64_t>{1'000'000};
  const int slow = variant % 2 ? (variant / 2) % p : -1;  // odd variants: one slow stage
  for (int s = 0; s < p; ++s) {
    const std::int64_t f = 6'000'000 + 300'000 * s;
    c.forward_ns.push_back(s == slow ? f * 8 / 5 : f);
    c.backward_ns.push_back(2 * c.forward_ns.back());
    c.optimizer_ns.push_back(3'000'000);
  }
  return c;
}

struct Worst {
  double value = 0;
  std::string where;
  void see(double v, const std::string& w) {
    if (std::abs(v) > std::abs(value)) value = v, where = w;
  }
};

TEST(WhatifFidelity, EverySchedulesRunPredictsEveryScenario) {
  constexpr int kVariants = 6;
  Worst self_step, self_bubble, other_step, other_bubble, latency, launch;
  std::size_t runs = 0, scenarios = 0, hidden = 0;
  for (const ScheduleId id : whatif_schedules()) {
    for (int variant = 0; variant < kVariants; ++variant) {
      bool found = false;
      const ModelConfig c = matrix_run(id, variant, found);
      ASSERT_TRUE(found) << whatif_schedule_name(id);
      const std::string name =
          fmt::format("{} P={} M={} V={} latency {}/{} us overhead {} us, {} machine(s){}",
                      whatif_schedule_name(id), c.stages, c.micro_batches, c.chunks,
                      c.latency_same_ns / 1000, c.latency_cross_ns / 1000,
                      c.launch_overhead_ns / 1000, c.machines, variant % 2 ? ", a slow stage" : "");
      SCOPED_TRACE(name);
      const Measured m = measure(c);
      ++runs;
      // The model's figures are the contract's.
      EXPECT_DOUBLE_EQ(m.inputs.measured.step_ns, m.model.step_ns);
      EXPECT_NEAR(m.inputs.measured.bubble_ratio, m.model.bubble_ratio, 1e-9);
      ASSERT_TRUE(m.inputs.measured.id.has_value()) << m.inputs.measured.schedule;
      EXPECT_EQ(schedule_job_list(*m.inputs.measured.id, c.stages, c.micro_batches, c.chunks, 0),
                schedule_job_list(id, c.stages, c.micro_batches, c.chunks, 0));

      // The costs between jobs.
      const LinkCosts& links = m.inputs.links;
      EXPECT_TRUE(close_cost(links.launch_overhead_ns, static_cast<double>(c.launch_overhead_ns)));
      launch.see((links.launch_overhead_ns - static_cast<double>(c.launch_overhead_ns)) / 1e6,
                 name);
      for (const auto& [kind, truth] : {std::pair{&links.same_machine, c.latency_same_ns},
                                        std::pair{&links.cross_machine, c.latency_cross_ns}}) {
        if (kind->pairs == 0) continue;
        if (kind->samples.empty()) {
          ++hidden;  // every consumer was busy when its data came: 0, with a note
          EXPECT_EQ(kind->ns, 0);
          EXPECT_FALSE(m.inputs.notes.empty());
          continue;
        }
        EXPECT_TRUE(close_cost(kind->ns, static_cast<double>(truth)))
            << kind->ns << " against " << truth;
        latency.see((kind->ns - static_cast<double>(truth)) / 1e6, name);
      }

      // The measured schedule replayed.
      const ModelError error = measure_model_error(m.inputs, ReplayOptions{});
      ASSERT_TRUE(error.available) << error.reason;
      EXPECT_NEAR(error.step_error, 0, 0.01);
      EXPECT_NEAR(error.bubble_error, 0, 0.005);
      EXPECT_TRUE(error.trusted());
      self_step.see(error.step_error, name);
      self_bubble.see(error.bubble_error, name);

      // Every scenario against the model run with it.
      for (const ScheduleId to : whatif_schedules()) {
        for (const int factor : {1, 2}) {
          for (const int v : {1, 2, 4}) {
            const Scenario s{to, c.micro_batches * factor, v};
            if (!scenario_problem(s, c.stages).empty()) continue;
            ++scenarios;
            const std::string what = fmt::format("{} M={} V={} from {}", whatif_schedule_name(to),
                                                 s.micro_batches, v, name);
            const ModelRun truth = run_model(with_scenario(c, s));
            const Prediction p = replay_scenario(m.inputs, s, ReplayOptions{}).prediction;
            EXPECT_NEAR(p.step_ns / truth.step_ns, 1, 0.03) << what;
            EXPECT_NEAR(p.bubble_ratio, truth.bubble_ratio, 0.02) << what;
            EXPECT_EQ(p.step_p10_ns, p.step_p90_ns) << what;  // no jitter, no spread
            other_step.see(p.step_ns / truth.step_ns - 1, what);
            other_bubble.see(p.bubble_ratio - truth.bubble_ratio, what);
          }
        }
      }
    }
  }
  // The figures the guide and the README quote.
  fmt::print(
      "{} runs, {} scenarios, {} latency kinds hidden by the schedule\n"
      "measured schedule replayed: step {:+.3f}% ({}), bubble {:+.3f} points ({})\n"
      "other scenarios: step {:+.3f}% ({}), bubble {:+.3f} points ({})\n"
      "latency {:+.4f} ms ({}), launch overhead {:+.4f} ms ({})\n",
      runs, scenarios, hidden, self_step.value * 100, self_step.where, self_bubble.value * 100,
      self_bubble.where, other_step.value * 100, other_step.where, other_bubble.value * 100,
      other_bubble.where, latency.value, latency.where, launch.value, launch.where);
}

/// DualPipeV, P=4, M=8, 1 ms between ranks: the overlapped actions' outputs
/// leave when the action ends, which a replay must know.
ModelConfig dualpipev_run() {
  ModelConfig c = issue_run();
  c.schedule = ScheduleId::torch_dualpipev;
  c.chunks = 2;
  c.machines = 1;
  c.latency_same_ns = 1'000'000;
  c.host_gap_ns = {1'000'000};
  return c;
}

/// The run with its types renamed by `rename` (every job of a type).
pipescope::Run renamed(const pipescope::Run& run, std::string (*rename)(std::string_view)) {
  pipescope::Run out = run;
  out.types = TypeTable();
  for (Device& d : out.devices) {
    for (Job& job : d.jobs) job.type = out.types.intern(rename(run.types.name(job.type)));
  }
  return out;
}

TEST(WhatifFidelity, DualPipeVsOverlappedActionsSendAfterTheAction) {
  const Measured m = measure(dualpipev_run());
  ASSERT_EQ(m.inputs.measured.id, ScheduleId::torch_dualpipev);
  EXPECT_TRUE(m.inputs.overlap_actions);
  EXPECT_FALSE(m.inputs.joined);
  EXPECT_DOUBLE_EQ(m.inputs.links.same_machine.ns, 1'000'000);
  const ModelError error = measure_model_error(m.inputs, ReplayOptions{});
  ASSERT_TRUE(error.available) << error.reason;
  EXPECT_NEAR(error.step_error, 0, 0.005);
  EXPECT_NEAR(error.bubble_error, 0, 0.005);

  // The same jobs without the mark read as jobs of their own, each output
  // sent at its op's end: that replay misses this run, which sent them after
  // the action.
  pipescope::Run plain = renamed(m.model.run, [](std::string_view t) {
    return std::string(t.ends_with(kOverlapMark) ? t.substr(0, t.size() - kOverlapMark.size()) : t);
  });
  const AnalyzedRun a = analyze_run(plain, PipelineOptions{});
  const WhatifInputs in = measure_whatif_inputs(plain, a.metrics, a.pipeline);
  EXPECT_FALSE(in.overlap_actions);
  const ModelError apart = measure_model_error(in, ReplayOptions{});
  ASSERT_TRUE(apart.available) << apart.reason;
  EXPECT_LT(apart.step_error, -0.02);
}

TEST(WhatifFidelity, AnOverlappedActionTimedWholeIsReplayedWhole) {
  // The model's run with each overlapped action one F+B job: both ops over
  // the action (the forward's start to the backward's end), as read from a
  // trace that shows no boundary inside.
  const ModelRun model = run_model(dualpipev_run());
  pipescope::Run run = renamed(model.run, [](std::string_view t) {
    return std::string(t.ends_with(kOverlapMark)
                           ? std::string(t.substr(0, t.size() - kOverlapMark.size())) +
                                 std::string(kJoinedMark)
                           : std::string(t));
  });
  std::size_t actions = 0;
  for (Device& d : run.devices) {
    for (std::size_t i = 0; i + 1 < d.jobs.size(); ++i) {
      Job& f = d.jobs[i];
      Job& b = d.jobs[i + 1];
      if (!run.types.name(f.type).starts_with("forward") ||
          !run.types.name(f.type).ends_with(kJoinedMark)) {
        continue;
      }
      f.end_ns = b.end_ns;
      b.start_ns = f.start_ns;
      ++actions;
    }
  }
  ASSERT_GT(actions, 0u);
  run.finalize();
  const AnalyzedRun a = analyze_run(run, PipelineOptions{});
  EXPECT_EQ(a.pipeline.schedule.detection.id, ScheduleId::torch_dualpipev);
  EXPECT_TRUE(a.pipeline.schedule.detection.exact);
  // The pairs share their interval by design: no overlap warning.
  for (const Warning& w : a.pipeline.warnings) EXPECT_NE(w.code, WarningCode::overlap) << w.message;
  // No input edge into a backward that starts with its action.
  for (const Dependency& dep : a.pipeline.dependencies) {
    const Job& consumer = run.devices[dep.consumer.device].jobs[dep.consumer.job];
    const JobRole& role = a.pipeline.roles[consumer.type];
    EXPECT_FALSE(role.joined && role.role == PipelineRole::backward);
  }
  // The op means count no F+B job: the model's forwards outside the actions
  // (every step alike: no jitter).
  double plain_ns = 0;
  std::size_t plain = 0;
  for (const Device& d : model.run.devices) {
    for (const Job& job : d.jobs) {
      const std::string& t = model.run.types.name(job.type);
      if (t.starts_with("forward") && !t.ends_with(kOverlapMark)) {
        plain_ns += static_cast<double>(job.duration_ns());
        ++plain;
      }
    }
  }
  EXPECT_NEAR(a.pipeline.schedule.means.forward_ns, plain_ns / static_cast<double>(plain), 1.0);
  // The stage load counts each action once, as its forward's job.
  for (std::size_t s = 0; s < a.pipeline.stages.stage_count(); ++s) {
    std::int64_t compute = 0;
    std::uint64_t backwards = 0;
    for (const std::size_t d : a.pipeline.stages.devices[s]) {
      for (const Job& job : run.devices[d].jobs) {
        const JobRole& role = a.pipeline.roles[job.type];
        if (!role.compute() || (role.joined && role.role != PipelineRole::forward)) continue;
        compute += job.duration_ns();
        backwards += role.role == PipelineRole::backward;
      }
    }
    const StageStats& stats = a.pipeline.bottleneck.stages[s];
    EXPECT_EQ(stats.by_role[static_cast<std::size_t>(PipelineRole::backward)].count, backwards);
    EXPECT_EQ(stats.compute_per_step_ns,
              compute / static_cast<std::int64_t>(a.pipeline.stages.devices[s].size() *
                                                  a.metrics.steps.size()));
  }

  const WhatifInputs in = measure_whatif_inputs(run, a.metrics, a.pipeline);
  EXPECT_TRUE(in.joined);
  std::size_t samples = 0;
  for (const StageSamples& st : in.stages) {
    for (const auto& chunk : st.joined) samples += chunk.size();
  }
  EXPECT_GT(samples, 0u);  // one an action of the complete steps
  EXPECT_LE(samples, actions);
  EXPECT_TRUE(std::any_of(in.notes.begin(), in.notes.end(), [](const std::string& n) {
    return n.find("one F+B job each") != std::string::npos;
  }));
  const ModelError error = measure_model_error(in, ReplayOptions{});
  ASSERT_TRUE(error.available) << error.reason;
  EXPECT_NEAR(error.step_error, 0, 0.01);
  EXPECT_NEAR(error.bubble_error, 0, 0.005);
  const Replay r = replay_scenario(in, {ScheduleId::torch_dualpipev, 16, 2}, ReplayOptions{});
  bool whole = false;
  for (TypeId t = 0; t < r.run.types.size(); ++t) {
    whole = whole || r.run.types.name(t).ends_with(kJoinedMark);
  }
  EXPECT_TRUE(whole);
  // Another schedule takes the stages' plain ops.
  const Replay other = replay_scenario(in, {ScheduleId::torch_zbv_zero_bubble, 8, 2}, {});
  for (TypeId t = 0; t < other.run.types.size(); ++t) {
    EXPECT_FALSE(other.run.types.name(t).ends_with(kJoinedMark));
  }
}

TEST(WhatifFidelity, AHostStallTheReplayCannotSeeIsAModelError) {
  ModelConfig c = issue_run();
  c.stall_ns = 6'000'000;
  c.stall_rank = 2;
  c.stall_every = 4;
  const Measured m = measure(c);
  const ModelError error = measure_model_error(m.inputs, ReplayOptions{});
  ASSERT_TRUE(error.available) << error.reason;
  EXPECT_FALSE(error.trusted());
  EXPECT_LT(error.step_error, -kModelStepTolerance);
  // The stalls stretch every step: the step time is the figure missed most.
  EXPECT_EQ(error.worst.what, ModelFigure::What::step_time);
  EXPECT_EQ(model_figure_name(error.worst), "step time");
  const std::string message = model_error_message(error);
  EXPECT_NE(message.find("predictions are not to be trusted"), std::string::npos) << message;
  EXPECT_NE(message.find("the step time is the figure it reproduces worst"), std::string::npos)
      << message;
}

TEST(WhatifFidelity, ModelFiguresAreNamedAsWhatifJsonWritesThem) {
  EXPECT_EQ(model_figure_name({ModelFigure::What::step_time}), "step time");
  EXPECT_EQ(model_figure_name({ModelFigure::What::stage_busy, 2}), "stage 2 busy time");
  EXPECT_EQ(model_figure_name({ModelFigure::What::stage_idle, 0}), "stage 0 idle time");
  // A stage's figure missed most is named in the message with its values.
  ModelError error;
  error.available = true;
  error.worst = {ModelFigure::What::stage_idle, 1};
  error.worst_replayed_ns = 2'500'000;
  error.worst_measured_ns = 1'000'000;
  const std::string message = model_error_message(error);
  EXPECT_NE(message.find("worst: stage 1 idle time, 2.500 ms replayed against 1.000 ms measured "
                         "per step: predictions are not to be trusted"),
            std::string::npos)
      << message;
}

TEST(WhatifFidelity, NoModelErrorWithoutATableSchedule) {
  Measured m = measure(issue_run());
  m.inputs.measured.id.reset();
  m.inputs.measured.schedule = "unknown";
  const ModelError error = measure_model_error(m.inputs, ReplayOptions{});
  EXPECT_FALSE(error.available);
  EXPECT_TRUE(error.trusted());
  EXPECT_NE(error.reason.find("unknown"), std::string::npos) << error.reason;
}

}  // namespace
}  // namespace pipescope
