#include "simulate/schedule.h"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace pipescope::sim {

namespace {

// Generous bounds: they only keep index arithmetic far from overflow.
constexpr int kMaxStages = 4096;
constexpr int kMaxMicroBatches = 1 << 20;
constexpr int kMaxChunks = 64;

ScheduleOp forward(int mb, int chunk = 0) { return {OpKind::forward, mb, chunk}; }
ScheduleOp backward(int mb, int chunk = 0) { return {OpKind::backward, mb, chunk}; }
ScheduleOp weight(int mb) { return {OpKind::weight, mb, 0}; }

std::vector<ScheduleOp> fthenb_ops(int m) {
  std::vector<ScheduleOp> ops;
  ops.reserve(2 * static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i) ops.push_back(forward(i));
  for (int i = 0; i < m; ++i) ops.push_back(backward(i));
  return ops;
}

std::vector<ScheduleOp> one_f_one_b_ops(const ScheduleShape& shape, int stage) {
  const int m = shape.micro_batches;
  const int warmup = warmup_forwards(shape, stage);
  std::vector<ScheduleOp> ops;
  ops.reserve(2 * static_cast<std::size_t>(m));
  for (int i = 0; i < warmup; ++i) ops.push_back(forward(i));
  for (int i = 0; i < m - warmup; ++i) {
    ops.push_back(forward(warmup + i));
    ops.push_back(backward(i));
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back(backward(i));
  return ops;
}

// ZB-H1 keeps 1F1B's warm-up (so peak activation memory is unchanged) and
// splits each backward into B and W. W has no consumer on another stage, so
// stage s defers its first P-s-1 W's: the last stage runs F-B-W from the
// start; earlier stages run F-B for their first P-s-1 steady iterations and
// F-B-W after that. In the cool-down each B is followed by one W, which fills
// the wait for the next B from downstream; the W's still owed run at the end.
std::vector<ScheduleOp> zb_h1_ops(const ScheduleShape& shape, int stage) {
  const int m = shape.micro_batches;
  const int warmup = warmup_forwards(shape, stage);
  const int deferred = shape.stages - stage - 1;
  std::vector<ScheduleOp> ops;
  ops.reserve(3 * static_cast<std::size_t>(m));
  int next_w = 0;
  for (int i = 0; i < warmup; ++i) ops.push_back(forward(i));
  for (int i = 0; i < m - warmup; ++i) {
    ops.push_back(forward(warmup + i));
    ops.push_back(backward(i));
    if (i >= deferred) ops.push_back(weight(next_w++));
  }
  for (int i = m - warmup; i < m; ++i) {
    ops.push_back(backward(i));
    ops.push_back(weight(next_w++));
  }
  while (next_w < m) ops.push_back(weight(next_w++));
  return ops;
}

// Megatron-LM's forward_backward_pipelining_with_interleaving: ops are
// numbered k = 0 .. M·V-1; groups of P consecutive micro-batches run through
// chunk 0, then chunk 1, ...; backwards visit the chunks in reverse order.
std::vector<ScheduleOp> interleaved_ops(const ScheduleShape& shape, int stage) {
  const int p = shape.stages;
  const int v = shape.chunks;
  const int total = shape.micro_batches * v;
  const int warmup = warmup_forwards(shape, stage);
  auto chunk_of = [&](int k, bool is_forward) {
    const int c = (k % (p * v)) / p;
    return is_forward ? c : v - 1 - c;
  };
  auto micro_batch_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  std::vector<ScheduleOp> ops;
  ops.reserve(2 * static_cast<std::size_t>(total));
  for (int k = 0; k < warmup; ++k) ops.push_back(forward(micro_batch_of(k), chunk_of(k, true)));
  for (int k = 0; k < total - warmup; ++k) {
    const int f = warmup + k;
    ops.push_back(forward(micro_batch_of(f), chunk_of(f, true)));
    ops.push_back(backward(micro_batch_of(k), chunk_of(k, false)));
  }
  for (int k = total - warmup; k < total; ++k) {
    ops.push_back(backward(micro_batch_of(k), chunk_of(k, false)));
  }
  return ops;
}

}  // namespace

std::optional<ScheduleKind> parse_schedule_kind(std::string_view name) {
  if (name == "fthenb" || name == "FThenB" || name == "gpipe") return ScheduleKind::fthenb;
  if (name == "1f1b" || name == "1F1B") return ScheduleKind::one_f_one_b;
  if (name == "eager1f1b" || name == "Eager1F1B") return ScheduleKind::eager_one_f_one_b;
  if (name == "vpp" || name == "VPP" || name == "interleaved") return ScheduleKind::interleaved;
  if (name == "zbh1" || name == "zb-h1" || name == "ZBH1" || name == "ZB-H1") {
    return ScheduleKind::zb_h1;
  }
  return std::nullopt;
}

std::string_view schedule_kind_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::fthenb:
      return "fthenb";
    case ScheduleKind::one_f_one_b:
      return "1f1b";
    case ScheduleKind::eager_one_f_one_b:
      return "eager1f1b";
    case ScheduleKind::interleaved:
      return "vpp";
    case ScheduleKind::zb_h1:
      return "zbh1";
  }
  return "1f1b";
}

void validate_schedule(const ScheduleShape& shape) {
  if (shape.stages < 1 || shape.stages > kMaxStages) {
    throw std::invalid_argument(
        fmt::format("number of stages must be in 1..{}, got {}", kMaxStages, shape.stages));
  }
  if (shape.micro_batches < 1 || shape.micro_batches > kMaxMicroBatches) {
    throw std::invalid_argument(fmt::format("number of micro-batches must be in 1..{}, got {}",
                                            kMaxMicroBatches, shape.micro_batches));
  }
  if (shape.chunks < 1 || shape.chunks > kMaxChunks) {
    throw std::invalid_argument(
        fmt::format("number of chunks must be in 1..{}, got {}", kMaxChunks, shape.chunks));
  }
  if (shape.kind != ScheduleKind::interleaved && shape.chunks != 1) {
    throw std::invalid_argument(fmt::format(
        "the {} schedule has one model chunk per stage; --chunks {} needs --schedule vpp",
        schedule_kind_name(shape.kind), shape.chunks));
  }
  if (shape.kind == ScheduleKind::interleaved && shape.micro_batches % shape.stages != 0) {
    throw std::invalid_argument(fmt::format(
        "the interleaved (vpp) schedule needs the number of micro-batches to be a multiple of "
        "the number of stages, as Megatron-LM requires: {} micro-batches, {} stages",
        shape.micro_batches, shape.stages));
  }
}

int warmup_forwards(const ScheduleShape& shape, int stage) {
  const int p = shape.stages;
  const int m = shape.micro_batches;
  switch (shape.kind) {
    case ScheduleKind::fthenb:
      return m;
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1:
      return std::min(p - stage - 1, m);
    case ScheduleKind::eager_one_f_one_b:
      return std::min(2 * (p - stage - 1), m);
    case ScheduleKind::interleaved: {
      const int total = m * shape.chunks;
      // Megatron runs everything as warm-up when M == P.
      if (m == p) return total;
      return std::min((p - stage - 1) * 2 + (shape.chunks - 1) * p, total);
    }
  }
  return 0;
}

std::vector<ScheduleOp> stage_ops(const ScheduleShape& shape, int stage) {
  switch (shape.kind) {
    case ScheduleKind::fthenb:
      return fthenb_ops(shape.micro_batches);
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::eager_one_f_one_b:
      return one_f_one_b_ops(shape, stage);
    case ScheduleKind::interleaved:
      return interleaved_ops(shape, stage);
    case ScheduleKind::zb_h1:
      return zb_h1_ops(shape, stage);
  }
  return {};
}

}  // namespace pipescope::sim
