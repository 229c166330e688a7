#include "export/trace_content.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <tuple>

namespace pipescope {

std::int32_t trace_job_step(const Run& run, const Metrics& metrics, std::size_t d, std::size_t i) {
  if (d >= metrics.job_step.size() || metrics.job_step[d].size() != run.devices[d].jobs.size()) {
    return -1;
  }
  return metrics.job_step[d][i];
}

std::optional<std::int64_t> earliest_selected_start(const Run& run, const Metrics& metrics,
                                                    const StepSelection& selection) {
  std::optional<std::int64_t> earliest;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const JobVector& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!selection.contains(trace_job_step(run, metrics, d, i))) continue;
      earliest = std::min(earliest.value_or(jobs[i].start_ns), jobs[i].start_ns);
    }
  }
  return earliest;
}

std::vector<EventRef> trace_log_events(const Run& run, const Metrics& metrics,
                                       const StepSelection& selection) {
  std::vector<EventRef> drawn;
  bool any = false;
  for (const Device& device : run.devices) any = any || !device.events.empty();
  if (!any) return drawn;
  if (selection.everything()) {
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      const std::vector<LogEvent>& events = run.devices[d].events;
      for (std::size_t e = 0; e < events.size(); ++e) {
        if (events[e].time_kind != EventTime::unplaced) drawn.push_back({d, e});
      }
    }
  } else {
    const StepEvents placed = place_step_events(run, metrics);
    for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
      if (!selection.contains(static_cast<std::int64_t>(k))) continue;
      drawn.insert(drawn.end(), placed.before_step[k].begin(), placed.before_step[k].end());
      drawn.insert(drawn.end(), placed.in_step[k].begin(), placed.in_step[k].end());
    }
  }
  const auto time = [&](const EventRef& ref) {
    return run.devices[ref.device].events[ref.event].time_ns;
  };
  std::sort(drawn.begin(), drawn.end(), [&](const EventRef& a, const EventRef& b) {
    return std::make_tuple(a.device, time(a), a.event) <
           std::make_tuple(b.device, time(b), b.event);
  });
  return drawn;
}

std::optional<std::int64_t> trace_origin(const Run& run, const Metrics& metrics,
                                         const StepSelection& selection,
                                         const std::vector<EventRef>& events) {
  std::optional<std::int64_t> earliest = earliest_selected_start(run, metrics, selection);
  for (const EventRef& ref : events) {
    const std::int64_t t = run.devices[ref.device].events[ref.event].time_ns;
    earliest = std::min(earliest.value_or(t), t);
  }
  return earliest;
}

std::int64_t ns_since(std::int64_t ns, std::int64_t origin_ns) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(ns) -
                                   static_cast<std::uint64_t>(origin_ns));
}

std::string trace_step_name(const Metrics& metrics, std::size_t index) {
  return fmt::format("step {}{}", step_label(metrics, index),
                     metrics.steps[index].complete ? "" : " (incomplete)");
}

void trace_job_name(const Run& run, const Job& job, std::string& out) {
  out.assign(job.type < run.types.size() ? std::string_view(run.types.name(job.type)) : "?");
  out += " mb";
  out += fmt::format_int(job.micro_batch).c_str();
}

std::uint64_t sample_stride(std::uint64_t count, std::uint64_t max) {
  max = std::max<std::uint64_t>(1, max);
  return std::max<std::uint64_t>(1, (count + max - 1) / max);
}

std::uint64_t sample_start(std::uint64_t stride) { return stride / 2; }

std::uint64_t scaled_bytes(std::uint64_t sampled_bytes, std::uint64_t sampled,
                           std::uint64_t count) {
  if (sampled == 0) return 0;
  if (sampled == count) return sampled_bytes;
  // Whole bytes per item, then the remainder's share: no overflow for a
  // sample of megabytes and billions of items.
  return sampled_bytes / sampled * count +
         ((sampled_bytes % sampled) * count + sampled / 2) / sampled;
}

TraceJobKinds::TraceJobKinds(const Run& run) : by_type_(run.types.size()) {
  for (TypeId id = 0; id < run.types.size(); ++id) {
    by_type_[id] = classify_job_type(run.types.name(id));
  }
}

std::vector<BubbleRatioSample> bubble_ratio_samples(const Run& run, const Metrics& metrics,
                                                    const BubbleSummary& bubbles,
                                                    const StepSelection& selection) {
  const auto devices = static_cast<double>(run.devices.size());
  const std::size_t steps = metrics.steps.size();
  const auto selected = [&](std::size_t k) {
    return selection.contains(static_cast<std::int64_t>(k));
  };
  std::vector<BubbleRatioSample> samples;
  for (std::size_t k = 0; k < steps; ++k) {
    if (!selected(k)) continue;
    const StepWindow& step = metrics.steps[k];
    BubbleTime totals;
    if (k < bubbles.per_step.size()) {
      for (const BubbleTime& t : bubbles.per_step[k]) totals.add(t);
    }
    const double denominator = devices * static_cast<double>(step.window_ns());
    BubbleRatioSample sample;
    sample.time_ns = step.start_ns;
    for (std::size_t kind = 0; kind < sample.share.size(); ++kind) {
      sample.share[kind] =
          denominator > 0 ? static_cast<double>(totals.ns[kind]) / denominator : 0.0;
    }
    samples.push_back(sample);
    if (k + 1 == steps || !selected(k + 1)) samples.push_back({step.end_ns, {0, 0, 0}});
  }
  return samples;
}

}  // namespace pipescope
