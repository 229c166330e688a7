#include "analysis/replicas.h"

#include <cstddef>
#include <utility>

#include "analysis/metrics.h"

namespace pipescope {

namespace {

/// A replica's run without its devices: the run's types, segments, first
/// step and resolution, and its stage map (devices in `devices` order).
ReplicaRun replica_shape(const Run& run, const Layout& layout,
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
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const std::size_t d = devices[i];
    const int s = d < layout.stages.stage_of.size() ? layout.stages.stage_of[d] : -1;
    stages.stage_of.push_back(s);
    if (s >= 0) stages.devices[static_cast<std::size_t>(s)].push_back(i);
  }
  return out;
}

/// One replica's figures, from its run.
ReplicaStats measure(int replica, const std::vector<std::size_t>& devices, const ReplicaRun& sub,
                     const std::vector<JobRole>& roles) {
  const Metrics metrics = compute_metrics(sub.run);
  return replica_stats(replica, devices, metrics,
                       find_bottleneck(sub.run, metrics, sub.stages, roles));
}

std::size_t replicas_with_devices(const Layout& layout) {
  std::size_t n = 0;
  for (const auto& replica : layout.replicas) n += !replica.empty();
  return n;
}

}  // namespace

bool measures_replicas(const Layout& layout) { return replicas_with_devices(layout) >= 2; }

ReplicaRun replica_run(const Run& run, const Layout& layout,
                       const std::vector<std::size_t>& devices) {
  ReplicaRun out = replica_shape(run, layout, devices);
  for (const std::size_t d : devices) out.run.devices.push_back(run.devices[d]);
  return out;
}

LentReplicaRun::LentReplicaRun(Run& run, const Layout& layout,
                               const std::vector<std::size_t>& devices)
    : run_(run), devices_(devices), sub_(replica_shape(run, layout, devices)) {
  sub_.run.devices.reserve(devices_.size());
  for (const std::size_t d : devices_) sub_.run.devices.push_back(std::move(run_.devices[d]));
}

LentReplicaRun::~LentReplicaRun() {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    run_.devices[devices_[i]] = std::move(sub_.run.devices[i]);
  }
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

namespace {

/// measure_one(replica, its devices) for each replica with devices, in
/// replica order, when the layout's replicas are measured.
template <typename Measure>
ReplicaSummary each_replica(const Layout& layout, Measure&& measure_one) {
  ReplicaSummary out;
  if (!measures_replicas(layout)) return out;
  for (std::size_t r = 0; r < layout.replicas.size(); ++r) {
    const auto& devices = layout.replicas[r];
    if (!devices.empty()) add_replica(out, measure_one(static_cast<int>(r), devices));
  }
  return out;
}

}  // namespace

ReplicaSummary summarize_replicas(const Run& run, const Layout& layout,
                                  const std::vector<JobRole>& roles) {
  return each_replica(layout, [&](int r, const std::vector<std::size_t>& devices) {
    // The replica as a run of its own: the contract then gives its windows.
    const ReplicaRun sub = replica_run(run, layout, devices);
    return measure(r, devices, sub, roles);
  });
}

ReplicaSummary summarize_replicas_in_place(Run& run, const Layout& layout,
                                           const std::vector<JobRole>& roles) {
  return each_replica(layout, [&](int r, const std::vector<std::size_t>& devices) {
    const LentReplicaRun sub(run, layout, devices);
    return measure(r, devices, sub.get(), roles);
  });
}

}  // namespace pipescope
