// Step detection, step windows and busy/idle/bubble metrics: the metric
// contract of docs/guide.md ("Metrics"), implemented to the letter.
//
// Usage:
//   run.finalize();
//   Metrics m = compute_metrics(run);
//   m.bubble_ratio, m.steps[k].window_ns(), m.devices[d].utilization ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/run.h"

namespace pipescope {

struct DeviceStepTime {
  /// |union of the device's non-comm jobs ∩ window|.
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  /// The part of idle inside comm jobs (send*/recv*) that no other job of
  /// the device overlaps: |union of comm jobs − union of the others ∩ window|.
  std::int64_t comm_ns = 0;
};

struct StepWindow {
  /// Training step number: its segment's first step + k.
  std::int64_t step = 0;
  /// LaunchSegment::index of the launch it belongs to (0 without relaunches).
  int segment = 0;
  /// A complete step (see the contract): every device of its segment started
  /// a later step, or it is its segment's last step and holds as many jobs
  /// of each kind on every device as the segment's previous complete step
  /// (a first and only step is complete). An incomplete step keeps its
  /// window and figures but is left out of every total and ratio.
  bool complete = true;
  /// The window [start_ns, end_ns), epoch nanoseconds.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// One entry per analysed device, by position in Run::devices.
  std::vector<DeviceStepTime> devices;
  /// Σ_d idle(d,k) / (D · (E_k − S_k)); 0 for an empty window.
  double bubble_ratio = 0;

  std::int64_t window_ns() const { return end_ns - start_ns; }
};

/// The steps of one launch segment (model/run.h LaunchSegment).
struct SegmentSteps {
  /// LaunchSegment::index.
  int index = 0;
  /// Number of its first step.
  std::int64_t first_step = 0;
  /// Its steps are Metrics::steps[first, first + count).
  std::size_t first = 0;
  std::size_t count = 0;
  /// How many of them are complete.
  std::size_t complete = 0;
  /// From its first window's start to its last window's end (0, 0 without a step).
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// Positions in Run::devices of the devices with a job in it, ascending.
  std::vector<std::size_t> devices;
  /// For devices[i]: the steps of the segment before its first one (its
  /// input begins later: a rotated log, a rank whose log lost its head).
  std::vector<std::int64_t> lead;
  /// For devices[i]: its first step (segment-relative) whose start is in its
  /// input: lead[i], or lead[i] + 1 when its input begins inside a step.
  /// The steps before it are not complete (docs/guide.md, "Metrics").
  std::vector<std::int64_t> first_whole;
};

struct DeviceTotals {
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  /// busy / Σ_k window length; 0 when there is no window.
  double utilization = 0;
  /// Number of steps detected on this device (all segments).
  std::int64_t steps = 0;
  /// Σ_k comm(d,k) over the complete steps: idle time inside comm jobs only.
  std::int64_t comm_ns = 0;
};

struct Metrics {
  /// Every step of every segment, in time order (incomplete ones included).
  std::vector<StepWindow> steps;
  /// One entry per launch segment, in time order (one without relaunches).
  std::vector<SegmentSteps> segments;
  /// One entry per analysed device, by position in Run::devices; the totals
  /// cover the complete steps.
  std::vector<DeviceTotals> devices;
  /// Σ_k Σ_d idle(d,k) / (D · Σ_k (E_k − S_k)) over the complete steps k; 0
  /// when there is no such window.
  double bubble_ratio = 0;
  /// Σ_k (E_k − S_k) over the complete steps.
  std::int64_t total_window_ns = 0;
  /// Σ_k Σ_d comm(d,k) over the complete steps (part of the idle time).
  std::int64_t comm_ns = 0;
  /// Steps that are not complete.
  std::size_t incomplete_steps = 0;
  /// job_step[d][i] is the index into `steps` of device d's i-th job
  /// (jobs in Run order, i.e. after Run::finalize()).
  std::vector<std::vector<std::int32_t>> job_step;
};

/// How a person names step `index` of metrics.steps: "12", or "1:12" (its
/// segment's index, then its number) when the run has several segments.
std::string step_label(const Metrics& metrics, std::size_t index);

/// Computes the contract's metrics. Requires run.finalize() to have been
/// called (jobs sorted by start); uses Run::segments when set (split by
/// analysis/launch_segments.h), else one segment numbered from
/// Run::first_step. Never throws on odd input: a run without jobs yields no
/// steps and ratios of 0.
Metrics compute_metrics(const Run& run);

}  // namespace pipescope
