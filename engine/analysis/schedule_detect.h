// Which pipeline schedule produced a run, read from the order of the ops each
// stage ran in one step, and the bubble ratio that schedule would have under
// a uniform-cost model.
//
// The schedules are those of the table (schedule_table.h): PaddlePaddle's
// static passes and dygraph orders, and PyTorch's torch.distributed.pipelining
// schedules, each compared job by job with the run's order (op kinds, whole or
// split backward, chunks, and micro-batches counted from the smallest the
// stage ran). Every entry whose list equals the run's is named (several
// frameworks build the same 1F1B list); the first in table order gives the
// name. A run matching none is still classed by its types with exact = false:
// chunked types with a B/W split are Paddle's ZBVPP (its list comes from a
// memory-aware search, so it has no canonical order and no ideal), chunked
// types the interleaved family, a B/W split the zero-bubble family, all
// forwards first the FThenB family; otherwise `unknown`.
//
// The ideal bubble ratio of an exact match is the uniform-cost simulation of
// the schedule's own list (schedule_table.h, uniform_bubble_ratio), not a
// closed form; an inexact match has none.
//
// Usage:
//   ScheduleDetection s = detect_schedule(orders);   // orders[stage] = ops of one step
//   std::optional<double> ideal = ideal_bubble_ratio(s);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/schedule_table.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

struct ScheduleDetection {
  /// The table entry named (the first of `matches`; ZBVPP when inexact with
  /// chunked split types); nullopt otherwise.
  std::optional<ScheduleId> id;
  /// The family: of the entry, or of the types when inexact; nullopt: unknown.
  std::optional<ScheduleFamily> family;
  /// Every table entry whose job list equals the run's, in table order.
  std::vector<ScheduleId> matches;
  /// True when every stage's order is exactly a table entry's job list.
  bool exact = false;
  int stages = 0;         ///< P
  int micro_batches = 0;  ///< M: distinct micro-batches of stage 0's forwards
  int chunks = 1;         ///< V

  friend bool operator==(const ScheduleDetection&, const ScheduleDetection&) = default;
};

/// The name of a detection: the entry's name ("1F1B", "ZBH1",
/// "Interleaved1F1B", ...), else the family's name ("interleaved",
/// "zero-bubble", ...), else "unknown".
std::string_view detection_name(const ScheduleDetection& detection);

/// Where the named list comes from: "PaddlePaddle static 1F1B = PaddlePaddle
/// dygraph 1F1B = PyTorch 1F1B" (every match), "PaddlePaddle static ZBVPP"
/// (inexact ZBVPP), or "" when no entry is named.
std::string detection_frameworks(const ScheduleDetection& detection);

/// Detects the schedule of one step; orders[s] holds stage s's compute ops in
/// execution order (F/B/W only). Never throws.
ScheduleDetection detect_schedule(const std::vector<std::vector<ScheduleStep>>& orders);

/// Mean durations (ns) of F, B and W ops.
struct OpMeans {
  double forward_ns = 0;
  double backward_ns = 0;
  double weight_ns = 0;
};

/// Ideal bubble ratio (idle share of the step) of an exact detection: its
/// entry's own job lists simulated with uniform costs (forward 1, whole
/// backward 2, split halves 1 each) and no latency. nullopt when inexact or
/// unknown.
std::optional<double> ideal_bubble_ratio(const ScheduleDetection& detection);

/// What detect_run_schedule found over all steps.
struct ScheduleReport {
  ScheduleDetection detection;
  /// Steps whose detection equals `detection`, and steps examined (steps in
  /// which every stage ran at least one compute op).
  std::int64_t steps_agreeing = 0;
  std::int64_t steps_examined = 0;
  OpMeans means;
  std::optional<double> ideal_bubble_ratio;
  /// The contract's overall bubble ratio, and measured - ideal.
  double measured_bubble_ratio = 0;
  std::optional<double> excess;
};

/// How many complete steps showed each detection, in the order each was
/// first seen (the first of equal counts wins, so the order is part of the
/// result). Step ranges' votes add in step order to the whole run's.
struct ScheduleVotes {
  struct Vote {
    ScheduleDetection detection;
    std::int64_t count = 0;
  };
  std::vector<Vote> votes;
  std::int64_t steps_examined = 0;

  /// Adds the votes of later steps.
  void add(const ScheduleVotes& later);
};

/// detect_schedule on each of steps [first, last) of `windows`
/// (Metrics::steps; each stage's first device, its jobs with their steps in
/// `job_step`). The run may hold only those steps' jobs and any others (a
/// part of the partitioned analysis): jobs of other steps are passed over.
ScheduleVotes vote_schedules(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                             std::span<const StepWindow> windows, std::size_t first,
                             std::size_t last, const StageMap& stages,
                             const std::vector<JobRole>& roles);

/// Durations of F, B and W jobs (by PipelineRole), summed exactly; the jobs
/// of an F+B action timed whole (JobRole::joined) are left out.
struct OpSums {
  std::array<__int128, 3> ns{0, 0, 0};
  std::array<std::uint64_t, 3> count{0, 0, 0};
  void add(const OpSums& other);
};

/// The sums over every job of `run`, or, with `job_step`, over the jobs of
/// steps [first, last) only.
OpSums op_sums(const Run& run, const std::vector<JobRole>& roles,
               const std::vector<std::vector<std::int32_t>>* job_step = nullptr,
               std::size_t first = 0, std::size_t last = 0);

/// The report from the votes and sums of every step.
ScheduleReport finish_schedule(const ScheduleVotes& votes, const OpSums& sums,
                               std::size_t stage_count, double measured_bubble_ratio);

/// Runs detect_schedule on each step (stage s = its first device) and keeps
/// the most frequent answer (ties: the earliest step's).
ScheduleReport detect_run_schedule(const Run& run, const Metrics& metrics, const StageMap& stages,
                                   const std::vector<JobRole>& roles);

}  // namespace pipescope
