// Per-stage job statistics and the stage that limits the pipeline: the one
// whose compute (F + B + W time per device per step) is largest. In a
// pipeline every stage waits for the slowest one, so its excess over the mean
// is paid by every stage as idle time.
//
// Usage:
//   BottleneckReport b = find_bottleneck(run, metrics, stages, roles);
//   b.stages[b.slowest_stage].compute_per_step_ns, b.imbalance
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

/// Integer statistics of a set of job durations (ns). The median is
/// median_ns (the middle value, or the mean of the two middle values, rounded
/// half up to the ns); p95 is nearest_rank (an actual duration); both in
/// numeric/statistics.h. The mean is rounded toward zero.
struct DurationStats {
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t mean_ns = 0;
  std::int64_t median_ns = 0;
  std::int64_t p95_ns = 0;
  std::int64_t max_ns = 0;
};

/// Summarises `durations` (all zero when empty); reorders them.
DurationStats duration_stats(std::vector<std::int64_t>& durations);
/// The same figures from durations that fit in 32 bits (every job shorter
/// than 4.29 s: the usual case), held in half the memory: find_bottleneck
/// holds a whole stage's durations at once.
DurationStats duration_stats(std::vector<std::uint32_t>& durations);

inline constexpr std::size_t kRoleCount = 6;  // PipelineRole values

struct StageStats {
  /// by_role[r]: durations of the stage's jobs of PipelineRole r, all its
  /// devices; an F+B action timed as one job (JobRole::joined) counts once,
  /// as its forward's job (its backward's counts as `other`).
  std::array<DurationStats, kRoleCount> by_role;
  /// (F + B + W total of the stage) / (devices of the stage · step windows).
  std::int64_t compute_per_step_ns = 0;
};

struct BottleneckReport {
  std::vector<StageStats> stages;
  /// The stage with the largest compute_per_step_ns (-1 without stages).
  int slowest_stage = -1;
  /// Slowest stage's compute_per_step_ns over the mean of all stages (1 when
  /// balanced; 0 without compute jobs).
  double imbalance = 0;
  std::int64_t mean_compute_per_step_ns = 0;
};

BottleneckReport find_bottleneck(const Run& run, const Metrics& metrics, const StageMap& stages,
                                 const std::vector<JobRole>& roles);

/// One part's job durations (the jobs of steps [first, last), a part of the
/// partitioned analysis: analysis/step_partition.h), per stage and
/// PipelineRole, sorted: what the stage statistics are selected from.
using StageDurations = std::vector<std::array<std::vector<std::int64_t>, kRoleCount>>;
StageDurations stage_durations(const Run& run,
                               const std::vector<std::vector<std::int32_t>>& job_step,
                               std::size_t first, std::size_t last, const StageMap& stages,
                               const std::vector<JobRole>& roles);

/// What the stage statistics need of a cell's durations besides the order
/// statistics: they add across parts.
struct DurationMoments {
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t lo = 0;  ///< smallest (when count > 0)
  std::int64_t hi = 0;  ///< largest
};
using StageMoments = std::vector<std::array<DurationMoments, kRoleCount>>;
StageMoments duration_moments(const StageDurations& durations, std::size_t stages);
void add_moments(StageMoments& into, const StageMoments& part);

/// A question to every part: how many durations of (stage, role) are <= x.
struct DurationCell {
  std::size_t stage = 0;
  std::size_t role = 0;
  std::int64_t x = 0;
};
/// One part's answer.
std::uint64_t count_at_most(const StageDurations& durations, std::size_t stage, std::size_t role,
                            std::int64_t x);
/// The answers summed over every part, one per question.
using CellCounts = std::function<std::vector<std::uint64_t>(std::span<const DurationCell>)>;

/// find_bottleneck from the run's moments and counts: the medians and p95
/// selected exactly, every cell in lockstep (numeric/statistics.h
/// select_ranks_by_count): at most 64 rounds of questions.
BottleneckReport bottleneck_from_moments(const StageMoments& moments, const CellCounts& counts,
                                         const StageMap& stages, std::size_t windows);

/// find_bottleneck from every part's durations, in any order (`windows`:
/// Metrics::steps.size()): sums and counts add, the median and p95 are
/// selected exactly across the parts (numeric/statistics.h,
/// select_rank_by_count) without bringing the durations together.
BottleneckReport bottleneck_from_parts(std::span<const StageDurations> parts,
                                       const StageMap& stages, std::size_t windows);

}  // namespace pipescope
