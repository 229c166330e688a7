// The log events of a run on its step windows (docs/guide.md, "Log
// events"): each placed event lies in the window of one step, in the gap
// before a step ("before step k", after the previous window), or after the
// last window; and each step whose time or bubble is an outlier is explained
// by the events that coincide with it.
//
// Outliers follow `watch`'s rule: over the complete steps, a step whose
// window (or bubble ratio) lies more than kOutlierMads median absolute
// deviations above the median is an outlier, the deviation being at least 1%
// of the median window (0.5 points of bubble) so that a run of identical
// steps has none. Only slow steps (a longer window or a larger bubble) are
// outliers: a fast one needs no explanation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "model/run.h"

namespace pipescope {

inline constexpr double kOutlierMads = 3.0;

/// One event of Run::devices[device].events.
struct EventRef {
  std::size_t device = 0;  ///< position in Run::devices
  std::size_t event = 0;   ///< index into the device's events

  friend bool operator==(const EventRef&, const EventRef&) = default;
};

struct OutlierStep {
  std::size_t step = 0;       ///< index into Metrics::steps
  std::int64_t extra_ns = 0;  ///< window − the median window (may be < 0 for a bubble outlier)
  bool slow = false;          ///< the window is an outlier
  bool bubble = false;        ///< the bubble ratio is an outlier
  /// The events in its window and in the gap before it, in time order.
  std::vector<EventRef> events;
};

struct StepEvents {
  /// One entry per Metrics::steps: the events in its window [start, end),
  /// in time order (then device order).
  std::vector<std::vector<EventRef>> in_step;
  /// One entry per Metrics::steps: the events after the previous window's
  /// end (the first: any time before it) and before this window's start.
  std::vector<std::vector<EventRef>> before_step;
  /// After the last window.
  std::vector<EventRef> after_last;
  /// Events whose time could not be placed (EventTime::unplaced).
  std::vector<EventRef> unplaced;
  /// Events per kind (Run::event_kinds) and in all.
  std::vector<std::uint64_t> per_kind;
  std::uint64_t total = 0;
  /// The outlier steps, in step order.
  std::vector<OutlierStep> outliers;
  /// The median window and bubble ratio of the complete steps.
  std::int64_t median_window_ns = 0;
  double median_bubble = 0;
};

/// Places the run's events on `metrics`' step windows.
StepEvents place_step_events(const Run& run, const Metrics& metrics);

/// "step 412 +3.104 s (bubble 61.0%): device 0 checkpoint_save at +0.200 s
/// (checkpoint), device 5 nccl_warn at +1.900 s (nccl)", at most
/// `max_events` events named (then "and N more"); "no log event" when none.
std::string describe_outlier(const Run& run, const Metrics& metrics, const OutlierStep& outlier,
                             std::size_t max_events = 6);

}  // namespace pipescope
