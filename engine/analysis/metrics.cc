#include "analysis/metrics.h"

#include <tbb/parallel_for.h>

#include "analysis/metric_parts.h"

namespace pipescope {

std::string step_label(const Metrics& metrics, std::size_t index) {
  if (index >= metrics.steps.size()) return "-";
  const StepWindow& step = metrics.steps[index];
  if (metrics.segments.size() <= 1) return std::to_string(step.step);
  return std::to_string(step.segment) + ":" + std::to_string(step.step);
}

Metrics compute_metrics(const Run& run) {
  Metrics metrics;
  const std::size_t device_count = run.devices.size();
  const TypeKinds kinds(run.types);
  const StepCounts counts = number_steps(run, kinds, metrics);

  // Each device's edges on its own thread, then combined (min and max: any order).
  std::vector<StepEdges> device_edges(device_count);
  tbb::parallel_for(std::size_t{0}, device_count, [&](std::size_t d) {
    if (run.devices[d].jobs.empty()) return;
    device_edges[d] = device_step_edges(run.devices[d], metrics.job_step[d], counts.steps);
  });
  StepEdges edges(counts.steps);
  for (const StepEdges& e : device_edges) edges.combine(e);
  place_windows(edges, device_count, metrics);

  std::vector<std::int64_t> cut_ns(device_count);
  for (std::size_t d = 0; d < device_count; ++d) cut_ns[d] = run.devices[d].cut_ns;
  mark_complete_steps(
      counts, cut_ns,
      [&](std::size_t d, std::size_t step) {
        return step_kind_counts(run.devices[d], metrics.job_step[d], step, kinds);
      },
      metrics);

  add_window_times(run.devices, kinds, metrics.steps);
  add_totals(metrics);
  return metrics;
}

}  // namespace pipescope
