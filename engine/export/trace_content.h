// What the trace exporters (chrome_trace, perfetto_trace) draw from a run and
// a step selection, computed once here so both traces show the same thing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/metrics.h"
#include "analysis/step_selection.h"
#include "model/run.h"

namespace pipescope {

/// The step index of device d's i-th job (Metrics::job_step), -1 when the
/// metrics do not cover that device's jobs.
std::int32_t trace_job_step(const Run& run, const Metrics& metrics, std::size_t d, std::size_t i);

/// The earliest start among the selected jobs; nullopt when none is selected.
std::optional<std::int64_t> earliest_selected_start(const Run& run, const Metrics& metrics,
                                                    const StepSelection& selection);

/// One value of the "bubble ratio" counters: each kind's idle share of the
/// step window (indexed by BubbleKind), at the window's start; a run of
/// selected windows ends with a sample of zeros at its last window's end.
struct BubbleRatioSample {
  std::int64_t time_ns = 0;
  std::array<double, 3> share{0, 0, 0};
};

std::vector<BubbleRatioSample> bubble_ratio_samples(const Run& run, const Metrics& metrics,
                                                    const BubbleSummary& bubbles,
                                                    const StepSelection& selection);

}  // namespace pipescope
