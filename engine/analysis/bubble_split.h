// Idle time split into the part the detected schedule makes unavoidable
// (inherent) and the rest (excess), and the idle time spent inside
// communication jobs by the stage it waits for.
//
// Inherent idle of device d in step k: the idle time of d's stage when the
// detected schedule's own job lists (schedule_table.h) are simulated with
// step k's mean cost of each op kind over all stages (forward, whole
// backward, input-gradient half, weight half; the optimizer, one per stage
// at the end of its list, adds the same busy time to every stage and so no
// idle time) and zero-latency communication, capped at the measured
// idle(d,k). Excess = idle − inherent, never negative. Only complete steps
// count (as in every total of the contract); a schedule without a job list
// (unknown, or an inexact match) has no split (`known` false).
//
// A bubble's share: a device-step's inherent time is shared among its
// bubbles in proportion to their lengths (bubble_inherent_ns).
//
// Usage:
//   BubbleSplit split = split_bubbles(run, metrics, stages, roles, schedule);
//   if (split.known) split.inherent_ns, split.excess_ns ...
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/schedule_detect.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

struct BubbleSplit {
  /// True when the detected schedule has job lists for its P, M and V, so
  /// that the inherent idle could be simulated. Nothing below the comm
  /// figures is set otherwise.
  bool known = false;
  /// inherent[k][d]: inherent idle of device d (position in Run::devices) in
  /// step k (index into Metrics::steps); 0 for an incomplete step.
  std::vector<std::vector<std::int64_t>> inherent;
  /// Σ over the complete steps, per device, and over everything.
  std::vector<std::int64_t> device_inherent;
  std::int64_t inherent_ns = 0;
  /// Σ_k Σ_d idle(d,k) − inherent_ns over the complete steps.
  std::int64_t excess_ns = 0;

  /// Comm time (the contract's comm(d,k), complete steps) by the stage the
  /// job waits for: a receive of forward data waits for the stage before, a
  /// receive of backward data for the stage after; a send for the stage it
  /// sends to. receive_wait_ns[s] / send_wait_ns[s]: waiting for stage s.
  std::vector<std::int64_t> receive_wait_ns;
  std::vector<std::int64_t> send_wait_ns;
};

BubbleSplit split_bubbles(const Run& run, const Metrics& metrics, const StageMap& stages,
                          const std::vector<JobRole>& roles, const ScheduleReport& schedule);

// The same in parts, for the partitioned analysis (analysis/step_partition.h):
// each step range gathers its evidence (split_evidence), the op sums of every
// range add up to the run's, each range then simulates its steps
// (split_rows), and assemble_split puts the ranges together in step order.
// split_bubbles is these three over one range.

/// Op durations summed exactly (forward, whole backward, input-gradient
/// half, weight half), and the ops counted: the pieces of one op once, an F+B
/// action timed as one job (JobRole::joined) not at all.
struct OpCostSums {
  std::array<__int128, 4> ns{};
  std::array<std::uint64_t, 4> count{};
  void add(const OpCostSums& other);
};

/// What steps [first, last) of metrics.steps give: comm waits by stage in
/// their windows, and the op sums of each complete step and of them all.
/// `run` may hold other steps' jobs too (a part's), which count nowhere.
struct SplitEvidence {
  std::vector<std::int64_t> receive_wait_ns, send_wait_ns;
  std::size_t first = 0;
  std::vector<OpCostSums> step_sums;  ///< [k - first]
  OpCostSums run_sums;
};
SplitEvidence split_evidence(const Run& run, const Metrics& metrics, const StageMap& stages,
                             const std::vector<JobRole>& roles, std::size_t first,
                             std::size_t last);

/// The inherent idle of a range's steps (`windows`: every step window),
/// given the whole run's op sums.
struct SplitRows {
  bool failed = false;                              ///< no job lists, or a simulation failed
  std::vector<std::vector<std::int64_t>> inherent;  ///< [k - first][d]
  std::vector<std::int64_t> device_inherent;
  std::int64_t inherent_ns = 0;
  std::int64_t idle_ns = 0;  ///< Σ idle of its complete steps
};
SplitRows split_rows(const SplitEvidence& part, const OpCostSums& run_sums,
                     std::span<const StepWindow> windows, const StageMap& stages,
                     const ScheduleReport& schedule);

/// The split from every range's evidence and rows, in step order.
BubbleSplit assemble_split(std::span<const SplitEvidence> parts, std::vector<SplitRows>&& rows,
                           const StageMap& stages, std::size_t devices);

/// The inherent part of one bubble: inherent(d,k) · length / idle(d,k),
/// rounded down; nullopt when the split is not known or the step incomplete.
std::optional<std::int64_t> bubble_inherent_ns(const BubbleSplit& split, const Metrics& metrics,
                                               const Bubble& bubble);

/// The same from the bubble's window and its device-step's inherent time
/// (inherent(d,k), read only when `known`): for the owner of the step's
/// rows in the partitioned analysis.
std::optional<std::int64_t> bubble_inherent_ns(bool known, const StepWindow& window,
                                               std::int64_t inherent, const Bubble& bubble);

}  // namespace pipescope
