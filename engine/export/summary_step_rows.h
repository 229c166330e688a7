// The lists of summary.json that grow with the run's steps, and their rows
// for a range of steps: what the owner of a step range computes in the
// partitioned analysis (analysis/step_partition.h) from what it holds, and
// renders for rank 0, which writes the document (summary_json.h: the writer
// with a StepRowSource). summary_figures() builds these lists with the same
// functions over all steps, so a range's rows are the whole run's rows of
// its steps, and the rows of consecutive ranges, in order, are the lists.
//
//   StepRowInputs in{first, last, &metrics, part.run.devices};  // + what else it holds
//   in.bubbles = part_bubbles.per_step;                          // [k - first]
//   SummaryStepRows rows = step_rows(in);
//   std::string text = render_step_rows(rows, StepList::steps);  // summary_json.h
//
// Steps are indices k into Metrics::steps; a span documented "[k - first]"
// holds the range's steps only, as a part has them. Every other list of
// SummaryFigures is a whole-run figure of bounded size (devices, segments,
// the longest bubbles, ...), except the kernel view's steps and ranks[].steps:
// the kernel view is computed in one process from the traces
// (analysis/kernel_view.h), so its lists stay in the whole-run part.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/critical_path.h"
#include "analysis/metrics.h"
#include "analysis/step_events.h"
#include "export/summary_figures.h"
#include "model/run.h"

namespace pipescope {

/// The step lists, in the order summary.json holds them.
enum class StepList : unsigned char {
  steps,                ///< "steps": one row per step, with its devices
  bubble_steps,         ///< "bubbles"."steps": one row per step
  critical_path_steps,  ///< "critical_path"."steps": steps with a path
  event_steps,          ///< "events"."steps": steps with events only
  event_outliers,       ///< "events"."outliers": the outlier steps
};
inline constexpr std::size_t kStepListCount = 5;

/// The rows of every step list for a range of steps (or the whole run).
struct SummaryStepRows {
  std::vector<StepFigures> steps;
  std::vector<StepBubbleFigures> bubble_steps;
  std::vector<PathStepFigures> critical_path_steps;
  std::vector<EventStepFigures> event_steps;
  std::vector<EventOutlierFigures> event_outliers;

  friend bool operator==(const SummaryStepRows&, const SummaryStepRows&) = default;
};

/// What the owner of steps [first, last) holds to write their rows. A list
/// whose inputs are left empty gets no rows (a run without the pipeline
/// sections or events).
struct StepRowInputs {
  std::size_t first = 0;
  std::size_t last = 0;
  /// Every window (placed once for the run), with its DeviceStepTimes set
  /// for [first, last) at least: no other step's are read.
  const Metrics* metrics = nullptr;
  /// The run's devices, in Run order (a part's run has them all): each row
  /// names a device by Device::index.
  std::span<const Device> devices;

  /// BubbleSummary::per_step of these steps, [k - first][d]
  /// (summarize_bubble_windows of the part).
  std::span<const std::vector<BubbleTime>> bubbles;
  /// BubbleSplit::known of the whole run (every range's split rows
  /// succeeded); then inherent[k - first][d] (SplitRows::inherent).
  bool split_known = false;
  std::span<const std::vector<std::int64_t>> inherent;
  /// The critical paths of these steps, in step order
  /// (summarize_critical_path_range's paths).
  std::span<const CriticalPath> paths;

  /// The run whose devices hold the events below (StepEvents' EventRefs).
  const Run* events_run = nullptr;
  /// StepEvents::before_step and in_step of these steps, [k - first].
  std::span<const std::vector<EventRef>> events_before;
  std::span<const std::vector<EventRef>> events_in;
  /// The outliers among these steps, in step order.
  std::span<const OutlierStep> outliers;
};

/// Every list's rows of the range: the functions below.
SummaryStepRows step_rows(const StepRowInputs& in);
/// List `only`'s rows of the range, the others left empty (a writer that
/// renders one list at a time builds no other).
SummaryStepRows step_rows(const StepRowInputs& in, StepList only);

/// The inputs of steps [first, last), a range within `in`'s: its spans
/// sliced (those indexed [k - in.first], and the paths and outliers by their
/// step), so that the range's rows can be made and rendered a piece at a time.
StepRowInputs step_row_inputs_of(const StepRowInputs& in, std::size_t first, std::size_t last);

/// The same from a whole run's results, for steps [first, last): the inputs
/// each range would hold, sliced from `pipeline` (null: no pipeline rows)
/// and `events` (null: no event rows; place_step_events of `run`).
StepRowInputs whole_run_step_inputs(const Run& run, const Metrics& metrics,
                                    const PipelineAnalysis* pipeline, const StepEvents* events,
                                    std::size_t first, std::size_t last);

/// "steps" rows of steps [first, last) (clipped to the windows).
std::vector<StepFigures> step_figure_rows(const Metrics& metrics, std::span<const Device> devices,
                                          std::size_t first, std::size_t last);

/// "bubbles"."steps" rows of steps first, first + 1, ... (one per entry of
/// `per_step`, [k - first][d], clipped to the windows); `inherent` as in
/// StepRowInputs, read only when `split_known`.
std::vector<StepBubbleFigures> bubble_step_rows(
    const Metrics& metrics, std::span<const Device> devices, std::size_t first,
    std::span<const std::vector<BubbleTime>> per_step, bool split_known,
    std::span<const std::vector<std::int64_t>> inherent);

/// "critical_path"."steps" rows: one per path.
std::vector<PathStepFigures> critical_path_step_rows(const Metrics& metrics,
                                                     std::span<const CriticalPath> paths);

/// "events"."steps" rows of steps first, first + 1, ... that have events
/// (before and in, [k - first]); at most kEventsListedPerStep listed each.
std::vector<EventStepFigures> event_step_rows(const Run& run, const Metrics& metrics,
                                              std::size_t first,
                                              std::span<const std::vector<EventRef>> before,
                                              std::span<const std::vector<EventRef>> in);

/// "events"."outliers" rows: one per outlier.
std::vector<EventOutlierFigures> event_outlier_rows(const Run& run, const Metrics& metrics,
                                                    std::span<const OutlierStep> outliers);

/// Idle by kind as summary.json lists it, with its inherent and excess parts
/// when `inherent` is known (excess: the rest of the idle).
BubbleSplitFigures bubble_split_figures(const BubbleTime& time,
                                        std::optional<std::int64_t> inherent);

/// One event of `run` as summary.json lists it, its offset from `step_start`.
EventFigures event_figures(const Run& run, const EventRef& ref, std::int64_t step_start);

}  // namespace pipescope
