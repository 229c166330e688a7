#include "export/summary_step_rows.h"

#include <algorithm>
#include <utility>

namespace pipescope {

namespace {

/// The global device index of device position d, as in "devices" (a
/// --devices selection leaves gaps); d itself past the run's devices.
int device_index(std::span<const Device> devices, std::size_t d) {
  return d < devices.size() ? devices[d].index : static_cast<int>(d);
}

/// The entries of `list` (sorted by `.step`, an index into Metrics::steps)
/// whose step lies in [first, last).
template <typename T>
std::span<const T> in_range(const std::vector<T>& list, std::size_t first, std::size_t last) {
  const auto by_step = [](const T& item, std::size_t k) { return item.step < k; };
  const auto begin = std::lower_bound(list.begin(), list.end(), first, by_step);
  const auto end = std::lower_bound(begin, list.end(), last, by_step);
  return {begin, end};
}

/// Entries [first, last) of a per-step vector, clipped to its size.
template <typename T>
std::span<const T> slice(const std::vector<T>& per_step, std::size_t first, std::size_t last) {
  const std::size_t begin = std::min(first, per_step.size());
  const std::size_t end = std::clamp(last, begin, per_step.size());
  return std::span<const T>(per_step).subspan(begin, end - begin);
}

}  // namespace

BubbleSplitFigures bubble_split_figures(const BubbleTime& t, std::optional<std::int64_t> inherent) {
  BubbleSplitFigures s{
      t.of(BubbleKind::fill), t.of(BubbleKind::interior), t.of(BubbleKind::drain), {}, {}};
  if (inherent) {
    s.inherent_ns = *inherent;
    s.excess_ns = s.fill_ns + s.interior_ns + s.drain_ns - *inherent;
  }
  return s;
}

std::vector<StepFigures> step_figure_rows(const Metrics& metrics, std::span<const Device> devices,
                                          std::size_t first, std::size_t last) {
  std::vector<StepFigures> out;
  for (const StepWindow& step : slice(metrics.steps, first, last)) {
    StepFigures s{step.step,   step.segment,     step.complete,     step.start_ns,
                  step.end_ns, step.window_ns(), step.bubble_ratio, {}};
    s.devices.reserve(step.devices.size());
    for (std::size_t d = 0; d < step.devices.size(); ++d) {
      const DeviceStepTime& t = step.devices[d];
      s.devices.push_back({device_index(devices, d), t.busy_ns, t.idle_ns, t.comm_ns});
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<StepBubbleFigures> bubble_step_rows(
    const Metrics& metrics, std::span<const Device> devices, std::size_t first,
    std::span<const std::vector<BubbleTime>> per_step, bool split_known,
    std::span<const std::vector<std::int64_t>> inherent) {
  std::vector<StepBubbleFigures> out;
  for (std::size_t i = 0; i < per_step.size() && first + i < metrics.steps.size(); ++i) {
    StepBubbleFigures step{metrics.steps[first + i].step, {}};
    for (std::size_t d = 0; d < per_step[i].size() && d < devices.size(); ++d) {
      std::optional<std::int64_t> share;
      if (split_known && i < inherent.size() && d < inherent[i].size()) share = inherent[i][d];
      step.devices.push_back({devices[d].index, bubble_split_figures(per_step[i][d], share)});
    }
    out.push_back(std::move(step));
  }
  return out;
}

std::vector<PathStepFigures> critical_path_step_rows(const Metrics& metrics,
                                                     std::span<const CriticalPath> paths) {
  std::vector<PathStepFigures> out;
  out.reserve(paths.size());
  for (const CriticalPath& path : paths) {
    const std::int64_t window = metrics.steps[path.step].window_ns();
    PathStepFigures step{metrics.steps[path.step].step,
                         window,
                         static_cast<std::int64_t>(path.job_count),
                         path.lead_in_ns,
                         path.wait_ns,
                         {}};
    for (std::size_t s = 0; s < path.stage_ns.size(); ++s) {
      step.stages.push_back(
          {static_cast<std::int64_t>(s), path.stage_ns[s],
           window > 0 ? static_cast<double>(path.stage_ns[s]) / static_cast<double>(window) : 0.0});
    }
    out.push_back(std::move(step));
  }
  return out;
}

EventFigures event_figures(const Run& run, const EventRef& ref, std::int64_t step_start) {
  const Device& device = run.devices[ref.device];
  const LogEvent& event = device.events[ref.event];
  const EventKind& kind = run.event_kinds[event.kind];
  EventFigures f;
  f.device = device.index;
  f.id = kind.id;
  f.category = kind.category;
  f.severity = kind.severity;
  f.time_ns = event.time_ns;
  f.offset_ns = event.time_ns - step_start;
  f.approximate = event.time_kind == EventTime::approximate;
  f.path = device.path;
  f.line = static_cast<std::int64_t>(event.line);
  for (const auto& [name, value] : event.captures) f.captures.push_back({name, value});
  return f;
}

std::vector<EventStepFigures> event_step_rows(const Run& run, const Metrics& metrics,
                                              std::size_t first,
                                              std::span<const std::vector<EventRef>> before_step,
                                              std::span<const std::vector<EventRef>> in_step) {
  std::vector<EventStepFigures> out;
  for (std::size_t i = 0;
       i < before_step.size() && i < in_step.size() && first + i < metrics.steps.size(); ++i) {
    const auto& before = before_step[i];
    const auto& in = in_step[i];
    if (before.empty() && in.empty()) continue;
    const std::int64_t start = metrics.steps[first + i].start_ns;
    EventStepFigures step;
    step.step = metrics.steps[first + i].step;
    std::size_t listed = 0;
    for (const EventRef& ref : before) {
      if (listed++ < kEventsListedPerStep) step.before.push_back(event_figures(run, ref, start));
    }
    for (const EventRef& ref : in) {
      if (listed++ < kEventsListedPerStep) step.events.push_back(event_figures(run, ref, start));
    }
    step.more = static_cast<std::int64_t>(listed - step.before.size() - step.events.size());
    out.push_back(std::move(step));
  }
  return out;
}

std::vector<EventOutlierFigures> event_outlier_rows(const Run& run, const Metrics& metrics,
                                                    std::span<const OutlierStep> outliers) {
  std::vector<EventOutlierFigures> out;
  out.reserve(outliers.size());
  for (const OutlierStep& o : outliers) {
    const StepWindow& w = metrics.steps[o.step];
    out.push_back({w.step, o.extra_ns, w.bubble_ratio, o.slow, o.bubble,
                   static_cast<std::int64_t>(o.events.size()), describe_outlier(run, metrics, o)});
  }
  return out;
}

namespace {

SummaryStepRows rows_of(const StepRowInputs& in, std::optional<StepList> only) {
  SummaryStepRows rows;
  if (in.metrics == nullptr) return rows;
  const Metrics& metrics = *in.metrics;
  const auto wanted = [only](StepList which) { return !only || *only == which; };
  if (wanted(StepList::steps)) {
    rows.steps = step_figure_rows(metrics, in.devices, in.first, in.last);
  }
  if (wanted(StepList::bubble_steps)) {
    rows.bubble_steps =
        bubble_step_rows(metrics, in.devices, in.first, in.bubbles, in.split_known, in.inherent);
  }
  if (wanted(StepList::critical_path_steps)) {
    rows.critical_path_steps = critical_path_step_rows(metrics, in.paths);
  }
  if (in.events_run != nullptr) {
    if (wanted(StepList::event_steps)) {
      rows.event_steps =
          event_step_rows(*in.events_run, metrics, in.first, in.events_before, in.events_in);
    }
    if (wanted(StepList::event_outliers)) {
      rows.event_outliers = event_outlier_rows(*in.events_run, metrics, in.outliers);
    }
  }
  return rows;
}

}  // namespace

SummaryStepRows step_rows(const StepRowInputs& in) { return rows_of(in, std::nullopt); }

SummaryStepRows step_rows(const StepRowInputs& in, StepList only) { return rows_of(in, only); }

namespace {

/// Entries [first, last) of a span indexed [k - from].
template <typename T>
std::span<const T> sub(std::span<const T> per_step, std::size_t from, std::size_t first,
                       std::size_t last) {
  const std::size_t begin = std::min(first - std::min(first, from), per_step.size());
  const std::size_t end = std::clamp(last - std::min(last, from), begin, per_step.size());
  return per_step.subspan(begin, end - begin);
}

/// The entries of a by-step list whose step is in [first, last).
template <typename T>
std::span<const T> of_steps(std::span<const T> list, std::size_t first, std::size_t last) {
  const auto by_step = [](const T& item, std::size_t k) { return item.step < k; };
  const auto begin = std::lower_bound(list.begin(), list.end(), first, by_step);
  const auto end = std::lower_bound(begin, list.end(), last, by_step);
  return list.subspan(static_cast<std::size_t>(begin - list.begin()),
                      static_cast<std::size_t>(end - begin));
}

}  // namespace

StepRowInputs step_row_inputs_of(const StepRowInputs& in, std::size_t first, std::size_t last) {
  StepRowInputs out = in;
  first = std::clamp(first, in.first, in.last);
  last = std::clamp(last, first, in.last);
  out.first = first;
  out.last = last;
  out.bubbles = sub(in.bubbles, in.first, first, last);
  out.inherent = sub(in.inherent, in.first, first, last);
  out.paths = of_steps(in.paths, first, last);
  out.events_before = sub(in.events_before, in.first, first, last);
  out.events_in = sub(in.events_in, in.first, first, last);
  out.outliers = of_steps(in.outliers, first, last);
  return out;
}

StepRowInputs whole_run_step_inputs(const Run& run, const Metrics& metrics,
                                    const PipelineAnalysis* pipeline, const StepEvents* events,
                                    std::size_t first, std::size_t last) {
  StepRowInputs in;
  in.first = first;
  in.last = last;
  in.metrics = &metrics;
  in.devices = run.devices;
  if (pipeline != nullptr) {
    in.bubbles = slice(pipeline->bubbles.per_step, first, last);
    in.split_known = pipeline->split.known;
    in.inherent = slice(pipeline->split.inherent, first, last);
    in.paths = in_range(pipeline->critical_paths, first, last);
  }
  if (events != nullptr) {
    in.events_run = &run;
    in.events_before = slice(events->before_step, first, last);
    in.events_in = slice(events->in_step, first, last);
    in.outliers = in_range(events->outliers, first, last);
  }
  return in;
}

}  // namespace pipescope
