#include "analysis/step_events.h"

#include <fmt/core.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "numeric/statistics.h"
#include "numeric/units.h"

namespace pipescope {

namespace {

/// Signed seconds with three decimals, from integer ns: "+0.200 s", "-1.250 s".
std::string signed_seconds(std::int64_t ns) {
  const char sign = ns < 0 ? '-' : '+';
  const std::int64_t a = ns < 0 ? -ns : ns;
  const std::int64_t ms = (a + 500'000) / 1'000'000;  // rounded half up to the ms
  return fmt::format("{}{}.{:03} s", sign, ms / 1000, ms % 1000);
}

/// Each device's last job end in a step and first job start in it, for the
/// steps asked about only (`slot_of[step]`, -1 for the rest): one pass over
/// the jobs of every device that has events, however many steps are asked
/// about (a pass per outlier step took 40 s of a dense run with 2,441).
struct DeviceJobEdges {
  std::vector<std::int32_t> slot_of;  ///< per Metrics::steps: its slot, or -1
  /// Per device, per slot: {the latest end, the earliest start} of its jobs
  /// in that step; empty for a device without events or job steps.
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> edges;
};

constexpr std::pair<std::int64_t, std::int64_t> kNoEdges{std::numeric_limits<std::int64_t>::min(),
                                                         std::numeric_limits<std::int64_t>::max()};

/// Whether a device's jobs can say which step each is in.
bool has_job_steps(const Run& run, const Metrics& metrics, std::size_t d) {
  const Device& device = run.devices[d];
  return !device.events.empty() && d < metrics.job_step.size() &&
         metrics.job_step[d].size() == device.jobs.size();
}

DeviceJobEdges device_job_edges(const Run& run, const Metrics& metrics,
                                const std::vector<bool>& asked) {
  DeviceJobEdges out;
  out.slot_of.assign(asked.size(), -1);
  std::int32_t slots = 0;
  for (std::size_t s = 0; s < asked.size(); ++s) {
    if (asked[s]) out.slot_of[s] = slots++;
  }
  out.edges.resize(run.devices.size());
  if (slots == 0) return out;
  tbb::parallel_for(std::size_t{0}, run.devices.size(), [&](std::size_t d) {
    if (!has_job_steps(run, metrics, d)) return;
    std::vector<std::pair<std::int64_t, std::int64_t>> edges(static_cast<std::size_t>(slots),
                                                             kNoEdges);
    const JobVector& jobs = run.devices[d].jobs;
    const std::vector<std::int32_t>& job_step = metrics.job_step[d];
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const std::int32_t step = job_step[i];
      if (step < 0 || static_cast<std::size_t>(step) >= out.slot_of.size()) continue;
      const std::int32_t slot = out.slot_of[static_cast<std::size_t>(step)];
      if (slot < 0) continue;
      auto& [last_end, first_start] = edges[static_cast<std::size_t>(slot)];
      last_end = std::max(last_end, jobs[i].end_ns);
      first_start = std::min(first_start, jobs[i].start_ns);
    }
    out.edges[d] = std::move(edges);
  });
  return out;
}

/// Whether step `s` follows the one before without overlapping it, the
/// condition for events between them to explain it.
bool follows_previous(const Metrics& metrics, std::size_t s) {
  return s > 0 && metrics.steps[s - 1].end_ns <= metrics.steps[s].start_ns;
}

/// The events that explain step `s` though their window is the step
/// before: on each device, those between its last job of that step and its
/// first job of `s` (a checkpoint the last stage saves once its part of the
/// step is done starts inside the step's window, but delays the next step;
/// docs/guide.md, "Log events"), in time order. Empty where the devices'
/// job steps are not at hand. `edges` holds steps s - 1 and s.
std::vector<EventRef> events_between_steps(const Run& run, const Metrics& metrics,
                                           const DeviceJobEdges& edges, std::size_t s) {
  if (!follows_previous(metrics, s)) return {};
  const std::size_t previous = s - 1;
  const auto before = static_cast<std::size_t>(edges.slot_of[previous]);
  const auto after = static_cast<std::size_t>(edges.slot_of[s]);
  std::vector<std::pair<std::int64_t, EventRef>> found;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (edges.edges[d].empty()) continue;
    const std::int64_t last_end = edges.edges[d][before].first;
    const std::int64_t first_start = edges.edges[d][after].second;
    if (last_end == kNoEdges.first || first_start == kNoEdges.second) continue;
    // Only those inside the step before's window: the rest are the step's already.
    const std::int64_t to = std::min(first_start, metrics.steps[previous].end_ns);
    const auto& events = run.devices[d].events;
    for (std::size_t e = 0; e < events.size(); ++e) {
      const LogEvent& event = events[e];
      if (event.time_kind == EventTime::unplaced) continue;
      if (event.time_ns >= last_end && event.time_ns < to) found.push_back({event.time_ns, {d, e}});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.device, a.second.event) <
           std::tie(b.first, b.second.device, b.second.event);
  });
  std::vector<EventRef> out;
  for (const auto& [time, ref] : found) out.push_back(ref);
  return out;
}

}  // namespace

StepEvents place_step_events(const Run& run, const Metrics& metrics) {
  StepEvents out;
  const std::size_t n_steps = metrics.steps.size();
  out.in_step.resize(n_steps);
  out.before_step.resize(n_steps);
  out.per_kind.assign(run.event_kinds.size(), 0);

  // Every placed event, in time order.
  struct Placed {
    std::int64_t time;
    EventRef ref;
  };
  std::vector<Placed> placed;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const auto& events = run.devices[d].events;
    for (std::size_t e = 0; e < events.size(); ++e) {
      const LogEvent& event = events[e];
      if (event.kind < out.per_kind.size()) ++out.per_kind[event.kind];
      ++out.total;
      if (event.time_kind == EventTime::unplaced) {
        out.unplaced.push_back({d, e});
      } else {
        placed.push_back({event.time_ns, {d, e}});
      }
    }
  }
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return std::tie(a.time, a.ref.device, a.ref.event) <
           std::tie(b.time, b.ref.device, b.ref.event);
  });

  // Windows in start order (they are, segment after segment; sorted anyway).
  std::vector<std::size_t> order(n_steps);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return metrics.steps[a].start_ns < metrics.steps[b].start_ns;
  });
  for (const Placed& p : placed) {
    // The last window starting at or before the event.
    const auto after = std::upper_bound(
        order.begin(), order.end(), p.time,
        [&](std::int64_t t, std::size_t s) { return t < metrics.steps[s].start_ns; });
    if (after != order.begin()) {
      const std::size_t s = *(after - 1);
      if (p.time < metrics.steps[s].end_ns) {
        out.in_step[s].push_back(p.ref);
        continue;
      }
    }
    if (after == order.end()) {
      out.after_last.push_back(p.ref);
    } else {
      out.before_step[*after].push_back(p.ref);
    }
  }

  // Outliers over the complete steps.
  std::vector<std::int64_t> windows;
  std::vector<double> bubbles;
  for (const StepWindow& w : metrics.steps) {
    if (!w.complete) continue;
    windows.push_back(w.window_ns());
    bubbles.push_back(w.bubble_ratio);
  }
  if (windows.size() < 3) return out;  // no spread to speak of
  out.median_window_ns = median_ns(windows);
  out.median_bubble = median(bubbles);
  std::vector<double> window_deviations, bubble_deviations;
  for (const std::int64_t w : windows) {
    window_deviations.push_back(
        std::abs(static_cast<double>(w) - static_cast<double>(out.median_window_ns)));
  }
  for (const double b : bubbles) bubble_deviations.push_back(std::abs(b - out.median_bubble));
  const double window_spread = std::max(kOutlierMads * median(window_deviations),
                                        0.01 * static_cast<double>(out.median_window_ns));
  const double bubble_spread = std::max(kOutlierMads * median(bubble_deviations), 0.005);
  for (std::size_t s = 0; s < n_steps; ++s) {
    const StepWindow& w = metrics.steps[s];
    if (!w.complete) continue;
    const std::int64_t extra = w.window_ns() - out.median_window_ns;
    const bool slow = static_cast<double>(extra) > window_spread;
    const bool bubble = w.bubble_ratio - out.median_bubble > bubble_spread;
    if (slow || bubble) out.outliers.push_back({s, extra, slow, bubble, {}});
  }
  // The steps whose job edges the outliers ask about, then the edges of
  // every device in one pass over its jobs.
  std::vector<bool> asked(n_steps, false);
  for (const OutlierStep& outlier : out.outliers) {
    if (!follows_previous(metrics, outlier.step)) continue;
    asked[outlier.step - 1] = true;
    asked[outlier.step] = true;
  }
  const DeviceJobEdges edges = device_job_edges(run, metrics, asked);
  for (OutlierStep& outlier : out.outliers) {
    const std::size_t s = outlier.step;
    outlier.events = events_between_steps(run, metrics, edges, s);
    outlier.events.insert(outlier.events.end(), out.before_step[s].begin(),
                          out.before_step[s].end());
    outlier.events.insert(outlier.events.end(), out.in_step[s].begin(), out.in_step[s].end());
  }
  return out;
}

std::string describe_outlier(const Run& run, const Metrics& metrics, const OutlierStep& outlier,
                             std::size_t max_events) {
  const StepWindow& w = metrics.steps[outlier.step];
  std::string text = fmt::format("step {} {} (bubble {})", w.step, signed_seconds(outlier.extra_ns),
                                 percent(w.bubble_ratio));
  if (outlier.events.empty()) return text + ": no log event";
  text += ":";
  const std::size_t shown = std::min(max_events, outlier.events.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const EventRef& ref = outlier.events[i];
    const Device& device = run.devices[ref.device];
    const LogEvent& event = device.events[ref.event];
    const EventKind& kind = run.event_kinds[event.kind];
    text += fmt::format("{} device {} {} at {}{} ({})", i == 0 ? "" : ",", device.index, kind.id,
                        signed_seconds(event.time_ns - w.start_ns),
                        event.time_kind == EventTime::approximate ? " (about)" : "", kind.category);
  }
  if (shown < outlier.events.size()) {
    text += fmt::format(" and {} more", outlier.events.size() - shown);
  }
  return text;
}

}  // namespace pipescope
