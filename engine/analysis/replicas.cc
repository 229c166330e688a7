#include "analysis/replicas.h"

#include "analysis/metrics.h"

namespace pipescope {

ReplicaRun replica_run(const Run& run, const Layout& layout,
                       const std::vector<std::size_t>& devices) {
  ReplicaRun out;
  Run& sub = out.run;
  sub.types = run.types;
  sub.first_step = run.first_step;
  sub.segments = run.segments;
  sub.time_resolution_ns = run.time_resolution_ns;
  StageMap& stages = out.stages;
  stages.source = layout.stages.source;
  stages.devices.assign(layout.stages.stage_count(), {});
  for (const std::size_t d : devices) {
    const int s = d < layout.stages.stage_of.size() ? layout.stages.stage_of[d] : -1;
    stages.stage_of.push_back(s);
    if (s >= 0) stages.devices[static_cast<std::size_t>(s)].push_back(sub.devices.size());
    sub.devices.push_back(run.devices[d]);
  }
  return out;
}

ReplicaStats replica_stats(int replica, const std::vector<std::size_t>& devices,
                           const Metrics& metrics, BottleneckReport bottleneck) {
  ReplicaStats stats;
  stats.replica = replica;
  stats.devices = devices;
  for (const StepWindow& w : metrics.steps) stats.complete_steps += w.complete;
  stats.total_window_ns = metrics.total_window_ns;
  stats.step_ns = stats.complete_steps > 0
                      ? metrics.total_window_ns / static_cast<std::int64_t>(stats.complete_steps)
                      : 0;
  stats.bubble_ratio = metrics.bubble_ratio;
  stats.bottleneck = std::move(bottleneck);
  return stats;
}

void add_replica(ReplicaSummary& summary, ReplicaStats&& stats) {
  if (summary.slowest < 0 ||
      stats.total_window_ns >
          summary.replicas[static_cast<std::size_t>(summary.slowest)].total_window_ns) {
    summary.slowest = static_cast<int>(summary.replicas.size());
  }
  summary.replicas.push_back(std::move(stats));
}

ReplicaSummary summarize_replicas(const Run& run, const Layout& layout,
                                  const std::vector<JobRole>& roles) {
  ReplicaSummary out;
  std::size_t with_devices = 0;
  for (const auto& replica : layout.replicas) with_devices += !replica.empty();
  if (with_devices < 2) return out;
  for (std::size_t r = 0; r < layout.replicas.size(); ++r) {
    const auto& devices = layout.replicas[r];
    if (devices.empty()) continue;
    // The replica as a run of its own: the contract then gives its windows.
    const ReplicaRun sub = replica_run(run, layout, devices);
    const Metrics metrics = compute_metrics(sub.run);
    add_replica(out, replica_stats(static_cast<int>(r), devices, metrics,
                                   find_bottleneck(sub.run, metrics, sub.stages, roles)));
  }
  return out;
}

}  // namespace pipescope
