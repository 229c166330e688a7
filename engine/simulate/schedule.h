// Pipeline schedules as per-stage op lists: which forward (F), backward (B),
// input-gradient backward (I) and weight-gradient (W) op each pipeline stage
// (rank) runs, in which order, as PaddlePaddle and PyTorch build them.
//
// This is the simulator's own transcription of the frameworks' job lists,
// written apart from the table the analysis recognises runs by
// (analysis/schedule_table.h) on purpose: the simulator is the tests' independent
// oracle, so a mistake in one is caught by the other. Keep them separate; never
// share the tables. Sources (file, function, version) are listed with the
// analysis table and in docs/guide.md ("Explaining the bubbles").
//
// Usage:
//   ScheduleShape shape{ScheduleKind::one_f_one_b, /*stages=*/4, /*micro_batches=*/8};
//   validate_schedule(shape);                       // throws std::invalid_argument
//   std::vector<ScheduleOp> ops = stage_ops(shape, /*stage=*/0);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "model/option_words.h"

namespace pipescope::sim {

enum class ScheduleKind {
  /// PaddlePaddle static pass FThenB: every forward of the step, then every backward.
  fthenb,
  /// PaddlePaddle static pass 1F1B: P-s warm-up forwards, (backward, forward)
  /// pairs, P-s cool-down backwards (needs M >= P).
  one_f_one_b,
  /// PaddlePaddle static pass VPP: interleaved 1F1B over V model chunks.
  interleaved,
  /// PaddlePaddle static pass Eager1F1B: 1F1B with 2(P-s)-1 warm-up forwards.
  eager_one_f_one_b,
  /// PaddlePaddle static pass ZBH1 (its real job list; needs M >= P).
  zbh1,
  /// PaddlePaddle static pass ZBVPP: its job list comes from a memory-aware
  /// search over measured memory; known by name, never simulated.
  zbvpp,
  /// PaddlePaddle dygraph PipelineParallel (1F1B, any M).
  dygraph_one_f_one_b,
  /// PaddlePaddle dygraph PipelineParallelWithInterleave (needs M >= P).
  dygraph_interleave,
  /// PyTorch torch.distributed.pipelining ScheduleGPipe.
  torch_gpipe,
  /// PyTorch Schedule1F1B.
  torch_one_f_one_b,
  /// PyTorch ScheduleInterleaved1F1B.
  torch_interleaved_1f1b,
  /// PyTorch ScheduleInterleavedZeroBubble.
  torch_interleaved_zero_bubble,
  /// PyTorch ScheduleZBVZeroBubble (two stages per rank in a V).
  torch_zbv_zero_bubble,
  /// PyTorch ScheduleDualPipeV (two stages per rank in a V).
  torch_dualpipev,
  /// PaddlePaddle static pass VPP with split_backward and M == P: every
  /// forward, every backward_b, then every backward_w, last chunk first.
  vpp_split_backward,
};

/// Every kind, in the order above.
std::span<const ScheduleKind> all_schedule_kinds();

/// Accepts the names schedule_kind_name gives, case-insensitively, plus
/// "gpipe" (fthenb), "interleaved" (vpp), "zb-h1" (zbh1) and the forms
/// "paddle:FThenB", "paddle:1F1B", "paddle:Eager1F1B", "paddle:VPP",
/// "paddle:ZBH1", "paddle:ZBVPP", "paddle-dygraph:1F1B",
/// "paddle-dygraph:Interleave", and "torch:" + the name PyTorch's
/// get_schedule_class takes (GPipe, 1F1B, Interleaved1F1B,
/// InterleavedZeroBubble, ZBVZeroBubble, DualPipeV).
std::optional<ScheduleKind> parse_schedule_kind(std::string_view name);
/// "fthenb", "1f1b", "vpp", "eager1f1b", "zbh1", "zbvpp", "dygraph-1f1b",
/// "dygraph-interleave", "torch-gpipe", "torch-1f1b", "torch-interleaved1f1b",
/// "torch-interleavedzerobubble", "torch-zbvzerobubble", "torch-dualpipev".
std::string_view schedule_kind_name(ScheduleKind kind);

/// Whether the kind runs several model chunks per stage (type names carry
/// the chunk: forward0, backward_b1).
bool has_chunks(ScheduleKind kind);
/// Whether rank s holds stages s and 2P-1-s (a V), not s, s+P, s+2P, ...
bool v_shape(ScheduleKind kind);

enum class OpKind : std::uint8_t {
  forward,
  /// The whole backward (input and weight gradients in one job).
  backward,
  /// The weight-gradient half of a split backward (W, type backward_w).
  weight,
  /// The input-gradient half of a split backward (B / PyTorch's I, type
  /// backward_b). Last, so that the older kinds keep their values.
  backward_input,
};

struct ScheduleOp {
  OpKind kind = OpKind::forward;
  std::int32_t micro_batch = 0;
  /// Model chunk (local stage) on this rank; 0 for one-chunk schedules.
  std::int32_t chunk = 0;

  friend bool operator==(const ScheduleOp&, const ScheduleOp&) = default;
};

struct ScheduleShape {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  /// P: pipeline stages (ranks).
  int stages = 4;
  /// M: micro-batches per training step.
  int micro_batches = 8;
  /// V: model chunks per stage (1 for one-chunk schedules, 2 for V shapes).
  int chunks = 1;
};

/// Throws std::invalid_argument, naming the offending value and the
/// framework's own requirement, for a shape the schedule does not support
/// (e.g. Paddle's 1F1B pass with M < P, VPP with M not a multiple of P);
/// the chunks are named by CallerOption::chunks in `words`.
void validate_schedule(const ScheduleShape& shape,
                       const OptionWords& words = *OptionWords::engine());

/// The ordered ops of one stage for one training step (shape must be valid).
std::vector<ScheduleOp> stage_ops(const ScheduleShape& shape, int stage);

/// The global stage (0 .. P·V-1) that chunk `chunk` of rank `stage` holds:
/// chunk·P + stage, or for a V shape stage (chunk 0) and 2P-1-stage (chunk 1).
int global_stage(const ScheduleShape& shape, int stage, int chunk);

}  // namespace pipescope::sim
