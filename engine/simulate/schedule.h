// Pipeline schedules as per-stage op lists: which forward (F), backward (B)
// and weight-gradient (W) op each pipeline stage runs, in which order.
//
// This is the simulator's own transcription of the schedules, written apart
// from the one the analysis recognises runs by (analysis/schedule_detect.h)
// on purpose: the simulator is the tests' independent oracle, so a mistake in
// one is caught by the other. Keep them separate; never share the tables.
//
// Usage:
//   ScheduleShape shape{ScheduleKind::one_f_one_b, /*stages=*/4, /*micro_batches=*/8};
//   validate_schedule(shape);                       // throws std::invalid_argument
//   std::vector<ScheduleOp> ops = stage_ops(shape, /*stage=*/0);
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace pipescope::sim {

enum class ScheduleKind {
  /// GPipe: every forward of the step, then every backward.
  fthenb,
  /// PipeDream-flush / Megatron 1F1B: warm-up forwards, steady 1F1B, cool-down.
  one_f_one_b,
  /// Megatron-LM interleaved 1F1B with V model chunks per stage (VPP).
  interleaved,
  /// PaddlePaddle's Eager1F1B: 1F1B with 2(P-s-1) warm-up forwards on stage s,
  /// so activations are sent earlier (at the cost of memory).
  eager_one_f_one_b,
  /// ZB-H1 ("Zero Bubble Pipeline Parallelism", Qi et al. 2023): the backward is
  /// split into B (input gradient) and W (weight gradient); W is deferred.
  zb_h1,
};

/// Accepts "fthenb", "1f1b", "eager1f1b", "vpp" (or "interleaved") and "zbh1" (or "zb-h1").
std::optional<ScheduleKind> parse_schedule_kind(std::string_view name);
/// The name parse_schedule_kind accepts first ("fthenb", "1f1b", "eager1f1b", "vpp", "zbh1").
std::string_view schedule_kind_name(ScheduleKind kind);

enum class OpKind : std::uint8_t {
  forward,
  /// The whole backward, or only the input-gradient half (B) under ZB-H1.
  backward,
  /// The weight-gradient half of the backward (W); ZB-H1 only.
  weight,
};

struct ScheduleOp {
  OpKind kind = OpKind::forward;
  std::int32_t micro_batch = 0;
  /// Model chunk (virtual stage) on this stage; always 0 except interleaved.
  std::int32_t chunk = 0;

  friend bool operator==(const ScheduleOp&, const ScheduleOp&) = default;
};

struct ScheduleShape {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  /// P: pipeline stages.
  int stages = 4;
  /// M: micro-batches per training step.
  int micro_batches = 8;
  /// V: model chunks per stage (interleaved only; 1 otherwise).
  int chunks = 1;
};

/// Throws std::invalid_argument, naming the offending value, for a shape no
/// schedule supports (e.g. interleaved with M not a multiple of P).
void validate_schedule(const ScheduleShape& shape);

/// The ordered ops of one stage for one training step (shape must be valid).
/// Every stage runs M·V forwards and M·V backwards, plus M·V weight ops for ZB-H1.
std::vector<ScheduleOp> stage_ops(const ScheduleShape& shape, int stage);

/// Number of warm-up forwards stage `stage` runs before its first backward.
int warmup_forwards(const ScheduleShape& shape, int stage);

}  // namespace pipescope::sim
