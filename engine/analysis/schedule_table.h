// The table of pipeline schedules as the frameworks define them: one entry
// per schedule, each with the source its job list is transcribed from (file,
// function, version), the job list itself for any P, M and V, and the
// uniform-cost simulation that gives a schedule's ideal bubble ratio. The
// schedule detector (schedule_detect.h), the ideal bubble and what-if all read
// this table; docs/guide.md ("Explaining the bubbles") prints it.
//
// The simulator keeps its own, separately written transcription
// (simulate/schedule.h) as the tests' independent oracle; a test compares the
// two job by job. Keep them separate; never share the code.
//
// Usage:
//   for (const ScheduleEntry& e : schedule_table()) ...
//   auto list = schedule_job_list(ScheduleId::paddle_zbh1, 4, 8, 1, /*stage=*/2);
//   std::optional<double> ideal = uniform_bubble_ratio(ScheduleId::paddle_zbh1, 4, 8, 1);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "analysis/job_role.h"

namespace pipescope {

/// One compute op of a job list, as a schedule sees it.
struct ScheduleStep {
  PipelineRole role = PipelineRole::forward;  ///< forward, backward or weight
  std::int64_t micro_batch = 0;
  /// Model chunk on the stage (its local stage index; 0 without chunks).
  std::int32_t chunk = 0;
  /// For a backward: only the input-gradient half (backward_b, PyTorch's I),
  /// its weight half being a separate weight op. False for a whole backward.
  bool split = false;
  /// This op and the next one of the list are one action that runs both, this
  /// one first: DualPipeV's OVERLAP_F_B (a forward of one micro-batch and a
  /// backward of another). torch's runtime starts the forward once its input
  /// is there, the backward once the forward is done and its own input is
  /// there, and sends both outputs after the action.
  bool overlap_next = false;

  friend bool operator==(const ScheduleStep&, const ScheduleStep&) = default;
};

enum class ScheduleId : std::uint8_t {
  paddle_fthenb,
  paddle_1f1b,
  paddle_eager_1f1b,
  paddle_vpp,
  paddle_vpp_split_backward,
  paddle_zbh1,
  paddle_zbvpp,
  dygraph_1f1b,
  dygraph_interleave,
  torch_gpipe,
  torch_1f1b,
  torch_interleaved_1f1b,
  torch_interleaved_zero_bubble,
  torch_zbv_zero_bubble,
  torch_dualpipev,
};

/// What kind of schedule, whatever the framework and its name for it: runs
/// are comparable (compare/check.h) only within one family.
enum class ScheduleFamily : std::uint8_t {
  fthenb,             ///< all forwards, then all backwards (FThenB, GPipe)
  one_f_one_b,        ///< 1F1B with P-s(-1) warm-up forwards
  eager_one_f_one_b,  ///< Paddle's Eager1F1B
  interleaved,        ///< interleaved 1F1B over V chunks (VPP, Interleaved1F1B)
  zero_bubble,        ///< split backward, weight gradients deferred (ZBH1, ZBVPP, ...)
  zero_bubble_v,      ///< zero bubble with two chunks per rank in a V (ZBVZeroBubble)
  dualpipe_v,         ///< DualPipeV
};

/// "fthenb", "1f1b", "eager-1f1b", "interleaved", "zero-bubble",
/// "zero-bubble-v", "dualpipe-v".
std::string_view schedule_family_name(ScheduleFamily family);

/// The family of a schedule name as any version of pipescope wrote it into
/// summary.json (today's table names, and the older "ZB-H1"); nullopt for
/// "unknown" or a name never written.
std::optional<ScheduleFamily> family_of_schedule_name(std::string_view name);
/// The family from its schedule_family_name.
std::optional<ScheduleFamily> parse_schedule_family(std::string_view name);

/// Which global stages a rank holds.
enum class StagePlacement : std::uint8_t {
  looped,   ///< chunk c of rank s is global stage c·P + s
  v_shape,  ///< rank s holds global stages s (chunk 0) and 2P-1-s (chunk 1)
};

/// Global stage of `chunk` on rank (stage) `stage` of P, and back: the
/// rank and chunk holding global stage `global` (0 <= global < P·V).
int global_stage(StagePlacement placement, int p, int stage, int chunk);
struct StageChunk {
  int stage = 0;
  int chunk = 0;
};
StageChunk stage_chunk_of(StagePlacement placement, int p, int global);

struct ScheduleEntry {
  ScheduleId id;
  /// The name the framework gives it (Paddle's pass name, PyTorch's
  /// get_schedule_class name): "1F1B", "ZBH1", "Interleaved1F1B", ...
  std::string_view name;
  /// "PaddlePaddle static", "PaddlePaddle dygraph" or "PyTorch".
  std::string_view framework;
  ScheduleFamily family;
  StagePlacement placement;
  int min_chunks;  ///< V accepted: min_chunks .. max_chunks
  int max_chunks;
  /// False when the job list is not a function of P, M and V (ZBVPP).
  bool has_job_list;
  /// File, function, and version of the source the list is transcribed from.
  std::string_view source;
  /// The framework's own requirement on P, M, V, in words.
  std::string_view requirement;
};

/// Every schedule, PaddlePaddle static passes first, then Paddle dygraph,
/// then PyTorch. Where two entries give the same job list, the detector
/// names the first.
std::span<const ScheduleEntry> schedule_table();
const ScheduleEntry& schedule_entry(ScheduleId id);

/// The job list (compute ops in order) of `stage` for P stages, M
/// micro-batches and V chunks; nullopt when the schedule has no list or the
/// framework rejects the shape.
std::optional<std::vector<ScheduleStep>> schedule_job_list(ScheduleId id, int stages,
                                                           int micro_batches, int chunks,
                                                           int stage);

/// Costs of the simulation: a forward, a whole backward, a split backward's
/// input half, its weight half.
struct OpCosts {
  double forward = 1;
  double backward = 2;
  double backward_input = 1;
  double weight = 1;
};

/// What simulate_job_lists found: when the last op ends, and each stage's
/// busy time (Σ of its ops' costs); stage s is idle makespan − busy[s].
struct SimulatedSchedule {
  double makespan = 0;
  std::vector<double> busy;
  double total_busy = 0;  ///< Σ busy, summed in the order the ops ran
};

/// Runs the job lists (lists[s] = stage s's ops) with `costs` and no latency:
/// an op starts when its stage is free and its input is there (the forward of
/// the previous global stage, the backward of the next). nullopt when the
/// lists deadlock or name an op twice, or the costs are not positive.
std::optional<SimulatedSchedule> simulate_job_lists(
    const std::vector<std::vector<ScheduleStep>>& lists, StagePlacement placement, int chunks,
    const OpCosts& costs);

/// Runs the job lists (lists[s] = stage s's ops) with `costs` and no latency:
/// an op starts when its stage is free and its input is there (the forward of
/// the previous global stage, the backward of the next). Returns the idle
/// share of P × makespan; nullopt when the lists deadlock or name an op
/// twice, or the costs are not positive.
std::optional<double> simulated_bubble_ratio(const std::vector<std::vector<ScheduleStep>>& lists,
                                             StagePlacement placement, int chunks,
                                             const OpCosts& costs);

/// simulated_bubble_ratio of a table entry's own lists under uniform costs
/// (forward 1, whole backward 2, split halves 1 each): the ideal bubble
/// ratio of that schedule. nullopt without a list for this shape.
std::optional<double> uniform_bubble_ratio(ScheduleId id, int stages, int micro_batches,
                                           int chunks);

}  // namespace pipescope
