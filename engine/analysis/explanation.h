// The one plain sentence that leads the text and HTML reports: how much of
// the step time is bubble, how much of it the detected schedule makes
// unavoidable, what the excess waits on, and how much is spent inside
// communication jobs. Built from the figures only (bubble_split.h,
// bottleneck.h, the contract's comm time); it never guesses:
//   - an excess within noise (below kExcessNoise of the step time, i.e. 1
//     point of the bubble ratio) gets no sentence about imbalance;
//   - no stage is named a bottleneck unless its compute is more than
//     kImbalanceNoise above the stages' mean ("balanced" otherwise);
//   - an unknown schedule (or one without a job list) says so and explains
//     only what can be known.
//
// Partitionable as is (CONTRIBUTING.md, "Make a figure partitionable"): it
// reads no job, only whole-run figures that are themselves combined from the
// step ranges (the number of devices; Metrics' bubble_ratio, total_window_ns
// and comm_ns; the schedule, the bubble split and the bottleneck), so it runs
// once, where those figures are put together.
//
// Usage:
//   std::string why = explain_bubbles(run, metrics, schedule, split, bottleneck);
#pragma once

#include <string>

#include "analysis/bottleneck.h"
#include "analysis/bubble_split.h"
#include "analysis/metrics.h"
#include "analysis/schedule_detect.h"
#include "model/run.h"

namespace pipescope {

/// Excess below this share of D · Σ windows (1 point) is noise.
inline constexpr double kExcessNoise = 0.01;
/// A stage whose compute per step is at most this much above the stages'
/// mean (3%) is not slower than the others beyond noise.
inline constexpr double kImbalanceNoise = 0.03;

/// Whether the slowest stage computes more than kImbalanceNoise above the mean.
bool has_bottleneck(const BottleneckReport& bottleneck);

/// Whether the excess is more than kExcessNoise of the step time.
bool excess_beyond_noise(const BubbleSplit& split, const Metrics& metrics, std::size_t devices);

/// The explanation (one sentence, no trailing newline). `schedule`,
/// `split` and `bottleneck` are the pipeline analysis's. Of `run` only the
/// number of devices is read.
std::string explain_bubbles(const Run& run, const Metrics& metrics, const ScheduleReport& schedule,
                            const BubbleSplit& split, const BottleneckReport& bottleneck);

}  // namespace pipescope
