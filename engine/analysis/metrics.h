// Step detection, step windows and busy/idle/bubble metrics: the metric
// contract of docs/guide.md ("Metrics"), implemented to the letter.
//
// Usage:
//   run.finalize();
//   Metrics m = compute_metrics(run);
//   m.bubble_ratio, m.steps[k].window_ns(), m.devices[d].utilization ...
#pragma once

#include <cstdint>
#include <vector>

#include "model/run.h"

namespace pipescope {

struct DeviceStepTime {
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
};

struct StepWindow {
  /// Training step number (first_step + k).
  std::int64_t step = 0;
  /// The window [start_ns, end_ns), epoch nanoseconds.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// One entry per analysed device, by position in Run::devices.
  std::vector<DeviceStepTime> devices;
  /// Σ_d idle(d,k) / (D · (E_k − S_k)); 0 for an empty window.
  double bubble_ratio = 0;

  std::int64_t window_ns() const { return end_ns - start_ns; }
};

struct DeviceTotals {
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  /// busy / Σ_k window length; 0 when there is no window.
  double utilization = 0;
  /// Number of steps detected on this device.
  std::int64_t steps = 0;
};

struct Metrics {
  std::vector<StepWindow> steps;
  /// One entry per analysed device, by position in Run::devices.
  std::vector<DeviceTotals> devices;
  /// Σ_k Σ_d idle(d,k) / (D · Σ_k (E_k − S_k)); 0 when there is no window.
  double bubble_ratio = 0;
  std::int64_t total_window_ns = 0;
  /// job_step[d][i] is the index into `steps` of device d's i-th job
  /// (jobs in Run order, i.e. after Run::finalize()).
  std::vector<std::vector<std::int32_t>> job_step;
};

/// Computes the contract's metrics. Requires run.finalize() to have been
/// called (jobs sorted by start). Never throws on odd input: a run without
/// jobs yields no steps and ratios of 0.
Metrics compute_metrics(const Run& run);

}  // namespace pipescope
