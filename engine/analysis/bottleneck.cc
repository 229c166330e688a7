#include "analysis/bottleneck.h"

#include <algorithm>

namespace pipescope {

DurationStats duration_stats(std::vector<std::int64_t>& durations) {
  DurationStats s;
  if (durations.empty()) return s;
  std::sort(durations.begin(), durations.end());
  s.count = durations.size();
  for (const std::int64_t d : durations) s.total_ns += d;
  s.mean_ns = s.total_ns / static_cast<std::int64_t>(s.count);
  // Nearest rank: the smallest value with at least q·n values at or below it.
  auto rank = [&](std::uint64_t percent) {
    const std::uint64_t r = (percent * s.count + 99) / 100;
    return durations[std::max<std::uint64_t>(r, 1) - 1];
  };
  s.median_ns = rank(50);
  s.p95_ns = rank(95);
  s.max_ns = durations.back();
  return s;
}

BottleneckReport find_bottleneck(const Run& run, const Metrics& metrics, const StageMap& stages,
                                 const std::vector<JobRole>& roles) {
  BottleneckReport report;
  const std::size_t p = stages.stage_count();
  report.stages.resize(p);
  const auto windows = static_cast<std::int64_t>(metrics.steps.size());
  for (std::size_t s = 0; s < p; ++s) {
    std::array<std::vector<std::int64_t>, kRoleCount> durations;
    for (const std::size_t d : stages.devices[s]) {
      if (d >= run.devices.size()) continue;
      for (const Job& job : run.devices[d].jobs) {
        const PipelineRole role =
            job.type < roles.size() ? roles[job.type].role : PipelineRole::other;
        durations[static_cast<std::size_t>(role)].push_back(job.duration_ns());
      }
    }
    StageStats& stats = report.stages[s];
    for (std::size_t r = 0; r < kRoleCount; ++r) stats.by_role[r] = duration_stats(durations[r]);
    const std::int64_t compute =
        stats.by_role[0].total_ns + stats.by_role[1].total_ns + stats.by_role[2].total_ns;
    const auto divisor = static_cast<std::int64_t>(stages.devices[s].size()) * windows;
    stats.compute_per_step_ns = divisor > 0 ? compute / divisor : 0;
  }
  if (p == 0) return report;
  long double sum = 0;
  for (std::size_t s = 0; s < p; ++s) {
    sum += report.stages[s].compute_per_step_ns;
    if (report.slowest_stage < 0 || report.stages[s].compute_per_step_ns >
                                        report.stages[report.slowest_stage].compute_per_step_ns) {
      report.slowest_stage = static_cast<int>(s);
    }
  }
  const long double mean = sum / static_cast<long double>(p);
  report.mean_compute_per_step_ns = static_cast<std::int64_t>(mean);
  report.imbalance =
      mean > 0 ? static_cast<double>(report.stages[report.slowest_stage].compute_per_step_ns / mean)
               : 0.0;
  return report;
}

}  // namespace pipescope
