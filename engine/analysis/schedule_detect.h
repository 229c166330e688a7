// Which pipeline schedule produced a run, read from the order of the ops each
// stage ran in one step, and the bubble ratio that schedule would have under
// a uniform-cost model.
//
// Recognised schedules (P stages, M micro-batches per step, V chunks):
//   FThenB     every forward of the step, then every backward (GPipe)
//   1F1B       stage s runs min(P-s, M) forwards before its first backward,
//              then alternates (PipeDream-flush / Megatron)
//   Eager1F1B  like 1F1B with min(2(P-s)-1, M) forwards before the first
//              backward (PaddlePaddle's Eager1F1B: sends earlier, more memory)
//   VPP        Megatron-LM's interleaved 1F1B over V model chunks per stage,
//              recognised from chunked types (forward0, forward(chunk1))
//   ZB-H1      zero-bubble H1 (Qi et al. 2023): backward split into
//              backward_b (B) and backward_w (W), W deferred
// A run whose order matches none of these exactly is still classed by its
// types (chunked types: VPP, B/W split: zero-bubble) with exact = false, or
// `unknown`.
//
// These orders are the analysis's transcription; the simulator keeps its own,
// written separately (simulate/schedule.h), as the tests' independent oracle.
// Keep them separate; never share the tables.
//
// Usage:
//   ScheduleDetection s = detect_schedule(orders);   // orders[stage] = ops of one step
//   std::optional<double> ideal = ideal_bubble_ratio(s, means);
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

enum class PipelineSchedule {
  unknown,
  fthenb,
  one_f_one_b,
  eager_one_f_one_b,
  interleaved,  ///< VPP
  zero_bubble,  ///< ZB-H1 when exact
};

/// "unknown", "FThenB", "1F1B", "Eager1F1B", "VPP", "ZB-H1".
std::string_view pipeline_schedule_name(PipelineSchedule schedule);

/// One compute op as a schedule sees it.
struct ScheduleStep {
  PipelineRole role = PipelineRole::forward;  ///< forward, backward or weight
  std::int64_t micro_batch = 0;
  std::int32_t chunk = 0;

  friend bool operator==(const ScheduleStep&, const ScheduleStep&) = default;
};

struct ScheduleDetection {
  PipelineSchedule schedule = PipelineSchedule::unknown;
  /// True when every stage's order is exactly the canonical order of
  /// `schedule` (op kinds, chunks and micro-batches, the latter counted from
  /// the smallest number the stage ran).
  bool exact = false;
  int stages = 0;         ///< P
  int micro_batches = 0;  ///< M: distinct micro-batches of stage 0's forwards
  int chunks = 1;         ///< V
};

/// Detects the schedule of one step; orders[s] holds stage s's compute ops in
/// execution order (F/B/W only). Never throws.
ScheduleDetection detect_schedule(const std::vector<std::vector<ScheduleStep>>& orders);

/// The canonical op order of stage `stage` (unknown: empty). For VPP M must be
/// a multiple of P (Megatron's requirement); otherwise the order is empty.
std::vector<ScheduleStep> canonical_order(PipelineSchedule schedule, int stages, int micro_batches,
                                          int chunks, int stage);

/// Mean durations (ns) of F, B and W ops, for the zero-bubble formula.
struct OpMeans {
  double forward_ns = 0;
  double backward_ns = 0;
  double weight_ns = 0;
};

/// Ideal bubble ratio (idle share of wall time) under a uniform-cost model:
/// FThenB/1F1B/Eager1F1B (P-1)/(M+P-1); VPP (P-1)/(V·M+P-1); zero-bubble
/// (ZB-H1 paper) (P-1)(F+B-W) / ((P-1)(F+B-W) + M(F+B+W)) with F+B-W
/// floored at 0. nullopt for unknown or when P or M is 0.
std::optional<double> ideal_bubble_ratio(const ScheduleDetection& detection, const OpMeans& means);

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

/// Runs detect_schedule on each step (stage s = its first device) and keeps
/// the most frequent answer (ties: the earliest step's).
ScheduleReport detect_run_schedule(const Run& run, const Metrics& metrics, const StageMap& stages,
                                   const std::vector<JobRole>& roles);

}  // namespace pipescope
