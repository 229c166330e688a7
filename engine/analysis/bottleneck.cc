#include "analysis/bottleneck.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "numeric/statistics.h"

namespace pipescope {

namespace {

template <typename T>
DurationStats stats_of(std::vector<T>& durations) {
  DurationStats s;
  if (durations.empty()) return s;
  const std::size_t n = durations.size();
  s.count = n;
  for (const T d : durations) s.total_ns += static_cast<std::int64_t>(d);
  s.mean_ns = s.total_ns / static_cast<std::int64_t>(s.count);
  // One selection at the lower middle partitions the values around it; the
  // upper middle, the p95 and the maximum all lie at or above it, so each is
  // then looked for in the upper part only (median_ns's figures, half the
  // work: these lists hold every job of a stage).
  const std::span<T> all(durations);
  const std::size_t lower = lower_middle_rank(n);
  const auto low = static_cast<std::int64_t>(select_rank(all, lower));
  const std::span<T> above = all.subspan(lower + 1);
  const std::int64_t high =
      n % 2 == 1 ? low : static_cast<std::int64_t>(*std::min_element(above.begin(), above.end()));
  s.median_ns = median_from_middles(low, high);
  const std::size_t p95 = nearest_rank(n, 95);
  s.p95_ns = p95 <= lower ? low : static_cast<std::int64_t>(select_rank(above, p95 - lower - 1));
  // Nothing after the p95 rank is smaller, so the maximum is found there.
  s.max_ns = static_cast<std::int64_t>(*std::max_element(
      durations.begin() + static_cast<std::ptrdiff_t>(std::max(p95, lower)), durations.end()));
  return s;
}

}  // namespace

DurationStats duration_stats(std::vector<std::int64_t>& durations) { return stats_of(durations); }
DurationStats duration_stats(std::vector<std::uint32_t>& durations) { return stats_of(durations); }

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

/// The role a job counts in: its PipelineRole, but `other` for the backward
/// of an F+B action timed as one job (JobRole::joined): its time is the
/// action's, which its forward's job counts once.
PipelineRole counted_role(const JobRole& role) {
  return role.joined && role.role != PipelineRole::forward ? PipelineRole::other : role.role;
}

std::size_t role_index(const Job& job, const std::vector<JobRole>& roles) {
  return static_cast<std::size_t>(job.type < roles.size() ? counted_role(roles[job.type])
                                                          : PipelineRole::other);
}

}  // namespace

StageDurations stage_durations(const Run& run,
                               const std::vector<std::vector<std::int32_t>>& job_step,
                               std::size_t first, std::size_t last, const StageMap& stages,
                               const std::vector<JobRole>& roles) {
  StageDurations out(stages.stage_count());
  // Counted first, so that each list is allocated once at its size (grown by
  // doubling, a list of millions held up to twice its bytes on the way).
  const auto for_each_job = [&](std::size_t s, auto&& f) {
    for (const std::size_t d : stages.devices[s]) {
      if (d >= run.devices.size()) continue;
      const auto& jobs = run.devices[d].jobs;
      for (std::size_t i = 0; i < jobs.size() && i < job_step[d].size(); ++i) {
        const auto k = static_cast<std::size_t>(job_step[d][i]);
        if (k >= first && k < last) f(jobs[i]);
      }
    }
  };
  for (std::size_t s = 0; s < stages.stage_count(); ++s) {
    std::array<std::size_t, kRoleCount> count{};
    for_each_job(s, [&](const Job& job) { ++count[role_index(job, roles)]; });
    for (std::size_t r = 0; r < kRoleCount; ++r) out[s][r].reserve(count[r]);
    for_each_job(
        s, [&](const Job& job) { out[s][role_index(job, roles)].push_back(job.duration_ns()); });
    for (auto& durations : out[s]) std::sort(durations.begin(), durations.end());
  }
  return out;
}

StageMoments duration_moments(const StageDurations& durations, std::size_t stages) {
  StageMoments moments(stages);
  for (std::size_t s = 0; s < stages && s < durations.size(); ++s) {
    for (std::size_t r = 0; r < kRoleCount; ++r) {
      const auto& mine = durations[s][r];
      if (mine.empty()) continue;
      DurationMoments& m = moments[s][r];
      m.count = mine.size();
      m.lo = mine.front();
      m.hi = mine.back();
      for (const std::int64_t d : mine) m.total_ns += d;
    }
  }
  return moments;
}

void add_moments(StageMoments& into, const StageMoments& part) {
  if (into.size() < part.size()) into.resize(part.size());
  for (std::size_t s = 0; s < part.size(); ++s) {
    for (std::size_t r = 0; r < kRoleCount; ++r) {
      DurationMoments& m = into[s][r];
      const DurationMoments& p = part[s][r];
      if (p.count == 0) continue;
      m.lo = m.count == 0 ? p.lo : std::min(m.lo, p.lo);
      m.hi = m.count == 0 ? p.hi : std::max(m.hi, p.hi);
      m.count += p.count;
      m.total_ns += p.total_ns;
    }
  }
}

std::uint64_t count_at_most(const StageDurations& durations, std::size_t stage, std::size_t role,
                            std::int64_t x) {
  if (stage >= durations.size()) return 0;
  const auto& mine = durations[stage][role];
  return static_cast<std::uint64_t>(std::upper_bound(mine.begin(), mine.end(), x) - mine.begin());
}

BottleneckReport bottleneck_from_moments(const StageMoments& moments, const CellCounts& counts,
                                         const StageMap& stages, std::size_t windows) {
  BottleneckReport report;
  const std::size_t p = stages.stage_count();
  report.stages.resize(p);
  // Three selections per cell with durations (the two middles and the
  // 95th percentile's rank), all in lockstep.
  std::vector<RankQuery> queries;
  std::vector<DurationCell> cells;  // of each query
  for (std::size_t s = 0; s < p; ++s) {
    for (std::size_t r = 0; r < kRoleCount; ++r) {
      const DurationMoments m = s < moments.size() ? moments[s][r] : DurationMoments{};
      DurationStats& stats = report.stages[s].by_role[r];
      stats.count = m.count;
      stats.total_ns = m.total_ns;
      if (m.count == 0) continue;
      stats.mean_ns = stats.total_ns / static_cast<std::int64_t>(stats.count);
      stats.max_ns = m.hi;
      for (const std::uint64_t rank : {static_cast<std::uint64_t>(lower_middle_rank(m.count)),
                                       static_cast<std::uint64_t>(upper_middle_rank(m.count)),
                                       static_cast<std::uint64_t>(nearest_rank(m.count, 95))}) {
        queries.push_back({rank, m.lo, m.hi});
        cells.push_back({s, r, 0});
      }
    }
  }
  const std::vector<std::int64_t> values = select_ranks_by_count(
      std::move(queries), [&](std::span<const std::pair<std::size_t, std::int64_t>> asked) {
        std::vector<DurationCell> ask;
        ask.reserve(asked.size());
        for (const auto& [q, x] : asked) ask.push_back({cells[q].stage, cells[q].role, x});
        return counts(ask);
      });
  for (std::size_t q = 0; q < values.size(); q += 3) {
    DurationStats& stats = report.stages[cells[q].stage].by_role[cells[q].role];
    stats.median_ns = median_from_middles(values[q], values[q + 1]);
    stats.p95_ns = values[q + 2];
  }
  rank_stages(stages, windows, report);
  return report;
}

BottleneckReport bottleneck_from_parts(std::span<const StageDurations> parts,
                                       const StageMap& stages, std::size_t windows) {
  StageMoments moments(stages.stage_count());
  for (const StageDurations& part : parts) {
    add_moments(moments, duration_moments(part, stages.stage_count()));
  }
  // What each part answers: how many of its durations are <= x.
  return bottleneck_from_moments(
      moments,
      [&](std::span<const DurationCell> asked) {
        std::vector<std::uint64_t> n(asked.size(), 0);
        for (std::size_t i = 0; i < asked.size(); ++i) {
          for (const StageDurations& part : parts) {
            n[i] += count_at_most(part, asked[i].stage, asked[i].role, asked[i].x);
          }
        }
        return n;
      },
      stages, windows);
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
  for (std::size_t t = 0; t < roles.size(); ++t) role_of[t] = counted_role(roles[t]);
  tbb::parallel_for(std::size_t{0}, p, [&](std::size_t s) {
    const auto role = [&](const Job& job) {
      return static_cast<std::size_t>(job.type < role_of.size() ? role_of[job.type]
                                                                : PipelineRole::other);
    };
    std::array<std::size_t, kRoleCount> count{};
    bool narrow = true;  // every duration in [0, 2^32): held in 32 bits
    for (const std::size_t d : stages.devices[s]) {
      if (d >= run.devices.size()) continue;
      for (const Job& job : run.devices[d].jobs) {
        ++count[role(job)];
        narrow &= static_cast<std::uint64_t>(job.duration_ns()) <= UINT32_MAX;
      }
    }
    const auto summarize = [&]<typename T>(T) {
      std::array<std::vector<T>, kRoleCount> durations;
      for (std::size_t r = 0; r < kRoleCount; ++r) durations[r].reserve(count[r]);
      for (const std::size_t d : stages.devices[s]) {
        if (d >= run.devices.size()) continue;
        for (const Job& job : run.devices[d].jobs) {
          durations[role(job)].push_back(static_cast<T>(job.duration_ns()));
        }
      }
      StageStats& stats = report.stages[s];
      for (std::size_t r = 0; r < kRoleCount; ++r) {
        stats.by_role[r] = duration_stats(durations[r]);
        std::vector<T>().swap(durations[r]);
      }
    };
    if (narrow) {
      summarize(std::uint32_t{});
    } else {
      summarize(std::int64_t{});
    }
  });
  rank_stages(stages, static_cast<std::size_t>(windows), report);
  return report;
}

}  // namespace pipescope
