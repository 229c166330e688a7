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

namespace {

/// Each stage's compute per step, the slowest stage and the imbalance, from
/// the stages' statistics.
void rank_stages(const StageMap& stages, std::size_t windows, BottleneckReport& report) {
  const std::size_t p = report.stages.size();
  for (std::size_t s = 0; s < p; ++s) {
    StageStats& stats = report.stages[s];
    const std::int64_t compute =
        stats.by_role[0].total_ns + stats.by_role[1].total_ns + stats.by_role[2].total_ns;
    const auto divisor =
        static_cast<std::int64_t>(stages.devices[s].size()) * static_cast<std::int64_t>(windows);
    stats.compute_per_step_ns = divisor > 0 ? compute / divisor : 0;
  }
  if (p == 0) return;
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
}

std::size_t role_index(const Job& job, const std::vector<JobRole>& roles) {
  return static_cast<std::size_t>(job.type < roles.size() ? roles[job.type].role
                                                          : PipelineRole::other);
}

}  // namespace

StageDurations stage_durations(const Run& run,
                               const std::vector<std::vector<std::int32_t>>& job_step,
                               std::size_t first, std::size_t last, const StageMap& stages,
                               const std::vector<JobRole>& roles) {
  StageDurations out(stages.stage_count());
  for (std::size_t s = 0; s < stages.stage_count(); ++s) {
    for (const std::size_t d : stages.devices[s]) {
      if (d >= run.devices.size()) continue;
      const auto& jobs = run.devices[d].jobs;
      for (std::size_t i = 0; i < jobs.size() && i < job_step[d].size(); ++i) {
        const auto k = static_cast<std::size_t>(job_step[d][i]);
        if (k < first || k >= last) continue;
        out[s][role_index(jobs[i], roles)].push_back(jobs[i].duration_ns());
      }
    }
    for (auto& durations : out[s]) std::sort(durations.begin(), durations.end());
  }
  return out;
}

BottleneckReport bottleneck_from_parts(std::span<const StageDurations> parts,
                                       const StageMap& stages, std::size_t windows) {
  BottleneckReport report;
  const std::size_t p = stages.stage_count();
  report.stages.resize(p);
  for (std::size_t s = 0; s < p; ++s) {
    for (std::size_t r = 0; r < kRoleCount; ++r) {
      DurationStats& stats = report.stages[s].by_role[r];
      std::int64_t lo = 0, hi = 0;
      for (const StageDurations& part : parts) {
        if (s >= part.size() || part[s][r].empty()) continue;
        const auto& mine = part[s][r];
        if (stats.count == 0 || mine.front() < lo) lo = mine.front();
        if (stats.count == 0 || mine.back() > hi) hi = mine.back();
        stats.count += mine.size();
        for (const std::int64_t d : mine) stats.total_ns += d;
      }
      if (stats.count == 0) continue;
      stats.mean_ns = stats.total_ns / static_cast<std::int64_t>(stats.count);
      stats.max_ns = hi;
      // What each part would answer: how many of its durations are <= x.
      const auto count_at_most = [&](std::int64_t x) {
        std::uint64_t n = 0;
        for (const StageDurations& part : parts) {
          if (s >= part.size()) continue;
          const auto& mine = part[s][r];
          n += static_cast<std::uint64_t>(std::upper_bound(mine.begin(), mine.end(), x) -
                                          mine.begin());
        }
        return n;
      };
      stats.median_ns = median_ns_by_count(stats.count, lo, hi, count_at_most);
      stats.p95_ns = select_rank_by_count(nearest_rank(stats.count, 95), lo, hi, count_at_most);
    }
  }
  rank_stages(stages, windows, report);
  return report;
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
  });
  rank_stages(stages, static_cast<std::size_t>(windows), report);
  return report;
}

}  // namespace pipescope
