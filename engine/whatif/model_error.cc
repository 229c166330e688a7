#include "whatif/model_error.h"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>

namespace pipescope {

bool ModelError::trusted() const {
  return !available || (std::abs(step_error) <= kModelStepTolerance &&
                        std::abs(bubble_error) <= kModelBubbleTolerance);
}

ModelError measure_model_error(const WhatifInputs& inputs, const ReplayOptions& options) {
  ModelError out;
  const MeasuredRun& measured = inputs.measured;
  if (!measured.id) {
    out.reason = fmt::format("the measured schedule ({}) is none of the table's job lists",
                             measured.schedule);
    return out;
  }
  out.scenario = {*measured.id, measured.micro_batches, measured.chunks};
  if (std::string problem = scenario_problem(out.scenario, measured.stages); !problem.empty()) {
    out.reason = std::move(problem);
    return out;
  }
  Replay replay;
  try {
    // As many steps as measured, whatever the predictions replay.
    ReplayOptions as_measured = options;
    as_measured.steps = 0;
    replay = replay_scenario(inputs, out.scenario, as_measured);
  } catch (const std::exception& e) {
    out.reason = e.what();
    return out;
  }
  out.available = true;
  out.measured_step_ns = measured.step_ns;
  out.replayed_step_ns = replay.prediction.step_ns;
  out.step_error = measured.step_ns > 0 ? out.replayed_step_ns / measured.step_ns - 1 : 0;
  out.measured_bubble_ratio = measured.replayed_bubble_ratio;
  out.replayed_bubble_ratio = replay.prediction.bubble_ratio;
  out.bubble_error = out.replayed_bubble_ratio - out.measured_bubble_ratio;

  const std::size_t p = static_cast<std::size_t>(measured.stages);
  out.measured_busy_ns = measured.stage_busy_ns;
  out.measured_idle_ns = measured.stage_idle_ns;
  out.measured_busy_ns.resize(p, 0);
  out.measured_idle_ns.resize(p, 0);
  out.replayed_busy_ns.assign(p, 0);
  out.replayed_idle_ns.assign(p, 0);
  std::size_t steps = 0;
  for (const StepWindow& step : replay.metrics.steps) {
    if (!step.complete) continue;
    ++steps;
    for (std::size_t s = 0; s < p && s < step.devices.size(); ++s) {
      out.replayed_busy_ns[s] += static_cast<double>(step.devices[s].busy_ns);
      out.replayed_idle_ns[s] += static_cast<double>(step.devices[s].idle_ns);
    }
  }
  for (std::size_t s = 0; s < p && steps > 0; ++s) {
    out.replayed_busy_ns[s] /= static_cast<double>(steps);
    out.replayed_idle_ns[s] /= static_cast<double>(steps);
  }

  // The worst figure, each as a share of the measured step (a stage's idle
  // time off by 5 ms weighs the same as the step off by 5 ms).
  const double scale = measured.step_ns > 0 ? measured.step_ns : 1;
  bool first = true;
  const auto consider = [&](ModelFigure figure, double m, double r) {
    const double e = std::abs(r - m) / scale;
    if (first || e > out.worst_error) {
      first = false;
      out.worst = figure;
      out.worst_measured_ns = m;
      out.worst_replayed_ns = r;
      out.worst_error = e;
    }
  };
  consider({ModelFigure::What::step_time}, out.measured_step_ns, out.replayed_step_ns);
  for (std::size_t s = 0; s < p; ++s) {
    const int stage = static_cast<int>(s);
    consider({ModelFigure::What::stage_busy, stage}, out.measured_busy_ns[s],
             out.replayed_busy_ns[s]);
    consider({ModelFigure::What::stage_idle, stage}, out.measured_idle_ns[s],
             out.replayed_idle_ns[s]);
  }
  return out;
}

std::string model_figure_name(const ModelFigure& figure) {
  switch (figure.what) {
    case ModelFigure::What::step_time:
      return "step time";
    case ModelFigure::What::stage_busy:
      return fmt::format("stage {} busy time", figure.stage);
    case ModelFigure::What::stage_idle:
      return fmt::format("stage {} idle time", figure.stage);
  }
  return "step time";
}

std::string model_error_message(const ModelError& e) {
  const std::string worst =
      e.worst.what == ModelFigure::What::step_time
          ? std::string("the step time is the figure it reproduces worst")
          : fmt::format("worst: {}, {:.3f} ms replayed against {:.3f} ms measured per step",
                        model_figure_name(e.worst), e.worst_replayed_ns / 1e6,
                        e.worst_measured_ns / 1e6);
  return fmt::format(
      "the replay of the measured schedule misses this run by {:+.1f}% of step time ({:.3f} ms "
      "against {:.3f} ms) and {:+.1f} points of bubble ratio (limits {:.0f}% and {:.0f} point); "
      "{}: predictions are not to be trusted",
      e.step_error * 100, e.replayed_step_ns / 1e6, e.measured_step_ns / 1e6, e.bubble_error * 100,
      kModelStepTolerance * 100, kModelBubbleTolerance * 100, worst);
}

}  // namespace pipescope
