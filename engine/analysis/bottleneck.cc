#include "analysis/bottleneck.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>

#include "numeric/statistics.h"

namespace pipescope {

DurationStats duration_stats(std::vector<std::int64_t>& durations) {
  DurationStats s;
  if (durations.empty()) return s;
  s.count = durations.size();
  for (const std::int64_t d : durations) s.total_ns += d;
  s.mean_ns = s.total_ns / static_cast<std::int64_t>(s.count);
  s.median_ns = median_ns(durations);
  const std::size_t p95 = nearest_rank(durations.size(), 95);
  s.p95_ns = select_rank(durations, p95);
  // Nothing after the p95 rank is smaller, so the maximum is found there.
  s.max_ns =
      *std::max_element(durations.begin() + static_cast<std::ptrdiff_t>(p95), durations.end());
  return s;
}

BottleneckReport find_bottleneck(const Run& run, const Metrics& metrics, const StageMap& stages,
                                 const std::vector<JobRole>& roles) {
  BottleneckReport report;
  const std::size_t p = stages.stage_count();
  report.stages.resize(p);
  const auto windows = static_cast<std::int64_t>(metrics.steps.size());
  // Stages are independent: each one's durations gathered and summarised in
  // parallel (a transient copy of one stage's durations per thread).
  std::vector<PipelineRole> role_of(roles.size());
  for (std::size_t t = 0; t < roles.size(); ++t) role_of[t] = roles[t].role;
  tbb::parallel_for(std::size_t{0}, p, [&](std::size_t s) {
    const auto role = [&](const Job& job) {
      return static_cast<std::size_t>(job.type < role_of.size() ? role_of[job.type]
                                                                : PipelineRole::other);
    };
    std::array<std::size_t, kRoleCount> count{};
    for (const std::size_t d : stages.devices[s]) {
      if (d >= run.devices.size()) continue;
      for (const Job& job : run.devices[d].jobs) ++count[role(job)];
    }
    std::array<std::vector<std::int64_t>, kRoleCount> durations;
    for (std::size_t r = 0; r < kRoleCount; ++r) durations[r].reserve(count[r]);
    for (const std::size_t d : stages.devices[s]) {
      if (d >= run.devices.size()) continue;
      for (const Job& job : run.devices[d].jobs) durations[role(job)].push_back(job.duration_ns());
    }
    StageStats& stats = report.stages[s];
    for (std::size_t r = 0; r < kRoleCount; ++r) {
      stats.by_role[r] = duration_stats(durations[r]);
      std::vector<std::int64_t>().swap(durations[r]);
    }
    const std::int64_t compute =
        stats.by_role[0].total_ns + stats.by_role[1].total_ns + stats.by_role[2].total_ns;
    const auto divisor = static_cast<std::int64_t>(stages.devices[s].size()) * windows;
    stats.compute_per_step_ns = divisor > 0 ? compute / divisor : 0;
  });
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
