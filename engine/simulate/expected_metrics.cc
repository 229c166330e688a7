#include "simulate/expected_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace pipescope::sim {

namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

std::vector<Interval> union_of(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const auto& iv : intervals) {
    if (!merged.empty() && iv.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, iv.second);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}

// Length of (disjoint, sorted intervals) ∩ [begin, end).
std::int64_t covered(const std::vector<Interval>& merged, std::int64_t begin, std::int64_t end) {
  std::int64_t total = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), begin,
                             [](const Interval& iv, std::int64_t t) { return iv.second <= t; });
  for (; it != merged.end() && it->first < end; ++it) {
    total += std::min(it->second, end) - std::max(it->first, begin);
  }
  return total;
}

double ratio(std::int64_t numerator, std::int64_t denominator) {
  return denominator == 0 ? 0.0 : static_cast<double>(numerator) / static_cast<double>(denominator);
}

}  // namespace

ExpectedMetricsBuilder::ExpectedMetricsBuilder(const std::vector<SimDeviceInfo>& devices,
                                               std::int64_t first_step)
    : devices_(devices),
      first_step_(first_step),
      intervals_(devices.size()),
      comm_intervals_(devices.size()) {}

void ExpectedMetricsBuilder::add_job(int device, int step, std::int64_t start_ns,
                                     std::int64_t end_ns, bool comm) {
  (comm ? comm_intervals_ : intervals_)[device].emplace_back(start_ns, end_ns);
  if (static_cast<std::size_t>(step) >= spans_.size()) {
    spans_.resize(step + 1, std::vector<StepSpan>(devices_.size()));
  }
  StepSpan& span = spans_[step][device];
  if (!span.any) {
    span = {true, start_ns, end_ns};
  } else {
    span.first_start = std::min(span.first_start, start_ns);
    span.last_end = std::max(span.last_end, end_ns);
  }
}

ExpectedMetrics ExpectedMetricsBuilder::finish() const {
  const std::size_t device_count = devices_.size();
  const auto d_count = static_cast<std::int64_t>(device_count);
  ExpectedMetrics metrics;
  metrics.first_step = first_step_;
  metrics.devices.resize(device_count);
  for (std::size_t d = 0; d < device_count; ++d) {
    auto& out = metrics.devices[d];
    out.device = devices_[d].index;
    out.machine = devices_[d].machine;
    out.rank = devices_[d].rank;
    out.jobs = static_cast<std::int64_t>(intervals_[d].size() + comm_intervals_[d].size());
    metrics.jobs += out.jobs;
    for (const auto& step : spans_) out.steps += step[d].any ? 1 : 0;
  }

  // Windows straight from the contract's definition.
  std::int64_t previous_end = 0;
  for (std::size_t k = 0; k < spans_.size(); ++k) {
    bool any = false;
    std::int64_t first_start = 0;
    std::int64_t last_end = 0;
    for (const auto& span : spans_[k]) {
      if (!span.any) continue;
      first_start = any ? std::min(first_start, span.first_start) : span.first_start;
      last_end = any ? std::max(last_end, span.last_end) : span.last_end;
      any = true;
    }
    ExpectedStep step;
    step.step = first_step_ + static_cast<std::int64_t>(k);
    step.start_ns = k == 0 ? first_start : std::max(first_start, previous_end);
    step.end_ns = std::max(last_end, step.start_ns);
    previous_end = step.end_ns;
    metrics.steps.push_back(std::move(step));
  }

  std::int64_t total_idle = 0;
  for (auto& step : metrics.steps) {
    metrics.total_window_ns += step.end_ns - step.start_ns;
    step.devices.resize(device_count);
  }
  for (std::size_t d = 0; d < device_count; ++d) {
    // Busy: every job but comm jobs. Comm time: what the comm jobs add to
    // the union of all jobs (|A ∪ C| − |A| = |C − A|).
    const auto merged = union_of(intervals_[d]);
    std::vector<Interval> all = intervals_[d];
    all.insert(all.end(), comm_intervals_[d].begin(), comm_intervals_[d].end());
    const auto merged_all = union_of(std::move(all));
    for (auto& step : metrics.steps) {
      const std::int64_t busy = covered(merged, step.start_ns, step.end_ns);
      const std::int64_t idle = (step.end_ns - step.start_ns) - busy;
      const std::int64_t comm = covered(merged_all, step.start_ns, step.end_ns) - busy;
      step.devices[d] = {busy, idle, comm};
      metrics.devices[d].busy_ns += busy;
      metrics.devices[d].idle_ns += idle;
      metrics.devices[d].comm_ns += comm;
      metrics.comm_ns += comm;
    }
    metrics.devices[d].utilization = ratio(metrics.devices[d].busy_ns, metrics.total_window_ns);
    total_idle += metrics.devices[d].idle_ns;
  }
  for (auto& step : metrics.steps) {
    std::int64_t idle = 0;
    for (const auto& dev : step.devices) idle += dev.idle_ns;
    step.bubble_ratio = ratio(idle, d_count * (step.end_ns - step.start_ns));
  }
  metrics.bubble_ratio = ratio(total_idle, d_count * metrics.total_window_ns);
  return metrics;
}

std::string expected_metrics_json(const ExpectedMetrics& metrics) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "{{\n  \"jobs\": {},\n  \"first_step\": {},\n  \"bubble_ratio\": {},\n"
                 "  \"total_window_ns\": {},\n  \"comm_ns\": {},\n  \"devices\": [",
                 metrics.jobs, metrics.first_step, metrics.bubble_ratio, metrics.total_window_ns,
                 metrics.comm_ns);
  for (std::size_t d = 0; d < metrics.devices.size(); ++d) {
    const auto& dev = metrics.devices[d];
    fmt::format_to(it,
                   "{}\n    {{\"device\": {}, \"machine\": {}, \"rank\": {}, \"jobs\": {}, "
                   "\"steps\": {}, \"busy_ns\": {}, \"idle_ns\": {}, \"comm_ns\": {}, "
                   "\"utilization\": {}}}",
                   d == 0 ? "" : ",", dev.device, dev.machine, dev.rank, dev.jobs, dev.steps,
                   dev.busy_ns, dev.idle_ns, dev.comm_ns, dev.utilization);
  }
  fmt::format_to(it, "\n  ],\n  \"steps\": [");
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    const auto& step = metrics.steps[k];
    fmt::format_to(it,
                   "{}\n    {{\"step\": {}, \"start_ns\": {}, \"end_ns\": {}, \"duration_ns\": {}, "
                   "\"bubble_ratio\": {}, \"devices\": [",
                   k == 0 ? "" : ",", step.step, step.start_ns, step.end_ns,
                   step.end_ns - step.start_ns, step.bubble_ratio);
    for (std::size_t d = 0; d < step.devices.size(); ++d) {
      fmt::format_to(it, "{}{{\"device\": {}, \"busy_ns\": {}, \"idle_ns\": {}, \"comm_ns\": {}}}",
                     d == 0 ? "" : ", ", d, step.devices[d].busy_ns, step.devices[d].idle_ns,
                     step.devices[d].comm_ns);
    }
    fmt::format_to(it, "]}}");
  }
  fmt::format_to(it, "\n  ]");
  if (!metrics.events_json.empty()) fmt::format_to(it, ",\n  \"events\": {}", metrics.events_json);
  fmt::format_to(it, "\n}}\n");
  return fmt::to_string(out);
}

}  // namespace pipescope::sim
