// The replay's own error on a run: the measured schedule, M and V replayed
// from the run's costs and held against what was measured (docs/guide.md,
// "What if"). Where the replay does not reproduce the run it was measured on,
// none of its predictions is to be trusted, and the command says so.
//
// Usage:
//   ModelError e = measure_model_error(inputs, options);
//   if (e.available && !e.trusted()) warn(model_error_message(e));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "whatif/replay.h"

namespace pipescope {

/// Beyond either, the replay's predictions are not to be trusted: |replayed
/// step / measured step − 1| and |replayed bubble − measured bubble| (a ratio
/// difference: 0.01 is one point).
inline constexpr double kModelStepTolerance = 0.03;
inline constexpr double kModelBubbleTolerance = 0.01;

/// A figure the replay of the measured schedule is held to.
struct ModelFigure {
  enum class What : std::uint8_t {
    step_time,   ///< the median complete step
    stage_busy,  ///< a stage's mean busy time per complete step
    stage_idle,  ///< a stage's mean idle time per complete step
  };
  What what = What::step_time;
  /// The stage, for stage_busy and stage_idle.
  int stage = -1;

  friend bool operator==(const ModelFigure&, const ModelFigure&) = default;
};

/// "step time", "stage S busy time" or "stage S idle time" (whatif.json's
/// `model_error.worst`).
std::string model_figure_name(const ModelFigure& figure);

struct ModelError {
  /// False when the measured schedule is none of the table's job lists (or
  /// the table does not run its P, M, V): `reason` says why.
  bool available = false;
  std::string reason;
  Scenario scenario;
  double measured_step_ns = 0;
  double replayed_step_ns = 0;
  /// replayed / measured − 1.
  double step_error = 0;
  /// The measured run's bubble ratio (the replayed replica's with several),
  /// the replay's, and replayed − measured.
  double measured_bubble_ratio = 0;
  double replayed_bubble_ratio = 0;
  double bubble_error = 0;
  /// Per stage: mean busy and idle time per complete step, measured (the
  /// stage's replayed devices) and replayed.
  std::vector<double> measured_busy_ns;
  std::vector<double> replayed_busy_ns;
  std::vector<double> measured_idle_ns;
  std::vector<double> replayed_idle_ns;
  /// The figure reproduced worst, as a share of the measured step time (the
  /// first such, in the order step time, then each stage's busy and idle
  /// time), with its measured and replayed values (ns).
  ModelFigure worst;
  double worst_measured_ns = 0;
  double worst_replayed_ns = 0;
  double worst_error = 0;

  /// Within both tolerances (true when not available: nothing to judge).
  bool trusted() const;
};

/// Replays the measured scenario with `options` and compares. Never throws.
ModelError measure_model_error(const WhatifInputs& inputs, const ReplayOptions& options);

/// The stderr warning of an untrusted replay: by how much it misses, the
/// worst figure, and that its predictions are not to be trusted.
std::string model_error_message(const ModelError& error);

}  // namespace pipescope
