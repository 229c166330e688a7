#include "simulate/schedule.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace pipescope::sim {

namespace {

// Generous bounds: they only keep index arithmetic far from overflow.
constexpr int kMaxStages = 4096;
constexpr int kMaxMicroBatches = 1 << 20;
constexpr int kMaxChunks = 64;

constexpr std::array kKinds = {
    ScheduleKind::fthenb,
    ScheduleKind::one_f_one_b,
    ScheduleKind::interleaved,
    ScheduleKind::eager_one_f_one_b,
    ScheduleKind::zbh1,
    ScheduleKind::zbvpp,
    ScheduleKind::dygraph_one_f_one_b,
    ScheduleKind::dygraph_interleave,
    ScheduleKind::torch_gpipe,
    ScheduleKind::torch_one_f_one_b,
    ScheduleKind::torch_interleaved_1f1b,
    ScheduleKind::torch_interleaved_zero_bubble,
    ScheduleKind::torch_zbv_zero_bubble,
    ScheduleKind::torch_dualpipev,
    ScheduleKind::vpp_split_backward,
};

ScheduleOp fwd(int mb, int chunk = 0) { return {OpKind::forward, mb, chunk}; }
ScheduleOp bwd(int mb, int chunk = 0) { return {OpKind::backward, mb, chunk}; }
ScheduleOp input(int mb, int chunk = 0) { return {OpKind::backward_input, mb, chunk}; }
ScheduleOp weight(int mb, int chunk = 0) { return {OpKind::weight, mb, chunk}; }

// F^w, then (F, B) pairs, then B^w: the classic 1F1B shape with w warm-up
// forwards. Every 1F1B list of the frameworks is this order for some w
// (a list written as F^(w+1) (B, F)... B^(w+1) is the same order).
std::vector<ScheduleOp> one_f_one_b(int m, int warmup) {
  warmup = std::min(warmup, m);
  std::vector<ScheduleOp> ops;
  for (int i = 0; i < warmup; ++i) ops.push_back(fwd(i));
  for (int i = warmup; i < m; ++i) {
    ops.push_back(fwd(i));
    ops.push_back(bwd(i - warmup));
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back(bwd(i));
  return ops;
}

// Paddle's ZBH1 (pipeline_zero_bubble.py): stage s runs P-s forwards; s
// pairs (B input-half, F); M-P pairs (full backward, F); P-s-1 full
// backwards; the last micro-batch as B + W (stage 0: one full backward);
// then the W of micro-batches 0..s-1, whose B ran split early.
std::vector<ScheduleOp> zbh1(int p, int m, int s) {
  std::vector<ScheduleOp> ops;
  int next_f = 0, next_b = 0;
  while (next_f < p - s) ops.push_back(fwd(next_f++));
  for (int i = 0; i < s; ++i) {
    ops.push_back(input(next_b++));
    ops.push_back(fwd(next_f++));
  }
  for (int i = 0; i < m - p; ++i) {
    ops.push_back(bwd(next_b++));
    ops.push_back(fwd(next_f++));
  }
  for (int i = 0; i < p - s - 1; ++i) ops.push_back(bwd(next_b++));
  if (s == 0) {
    ops.push_back(bwd(next_b++));
  } else {
    ops.push_back(input(next_b));
    ops.push_back(weight(next_b++));
  }
  for (int i = 0; i < s; ++i) ops.push_back(weight(i));
  return ops;
}

// Interleaved 1F1B over V chunks: step k of `total` = M·V forwards (and
// backwards) runs chunk chunk_of(k); micro-batch numbers count per chunk.
// `warmup` forwards first, then (F, B) pairs, then the remaining backwards;
// split = true turns backwards into B and adds W's (PyTorch's zero bubble).
struct Interleave {
  int v = 1;
  int total = 0;
  int warmup = 0;
  // Chunk of the k-th forward and of the k-th backward.
  std::function<int(int)> forward_chunk;
  std::function<int(int)> backward_chunk;
  // Zero bubble: the k-th backward (k >= first_w_after) is followed by the
  // W of the oldest backward still owed; the rest close the step.
  bool split = false;
  int first_w_after = 0;
};

std::vector<ScheduleOp> interleave(const Interleave& x) {
  std::vector<int> f_count(x.v, 0), b_count(x.v, 0), w_count(x.v, 0);
  std::deque<int> owed;  // chunks of backwards whose W is owed, oldest first
  std::vector<ScheduleOp> ops;
  auto add_forward = [&](int k) {
    const int c = x.forward_chunk(k);
    ops.push_back(fwd(f_count[c]++, c));
  };
  auto add_backward = [&](int k) {
    const int c = x.backward_chunk(k);
    if (!x.split) {
      ops.push_back(bwd(b_count[c]++, c));
      return;
    }
    ops.push_back(input(b_count[c]++, c));
    owed.push_back(c);
    if (k >= x.first_w_after) {
      const int wc = owed.front();
      owed.pop_front();
      ops.push_back(weight(w_count[wc]++, wc));
    }
  };
  for (int k = 0; k < x.warmup; ++k) add_forward(k);
  for (int k = 0; k < x.total - x.warmup; ++k) {
    add_forward(x.warmup + k);
    add_backward(k);
  }
  for (int k = x.total - x.warmup; k < x.total; ++k) add_backward(k);
  while (!owed.empty()) {
    const int wc = owed.front();
    owed.pop_front();
    ops.push_back(weight(w_count[wc]++, wc));
  }
  return ops;
}

// Megatron's chunk order, as Paddle's VPP pass writes it: groups of P steps
// per chunk; backwards run the chunks in reverse.
Interleave grouped(int v, int m, int group, int warmup) {
  Interleave x;
  x.v = v;
  x.total = m * v;
  x.warmup = std::min(warmup, x.total);
  x.forward_chunk = [=](int k) { return (k % (group * v)) / group; };
  x.backward_chunk = [=](int k) { return v - 1 - (k % (group * v)) / group; };
  return x;
}

// Paddle dygraph's interleave: the first (M mod P + P)·V steps go chunk by
// chunk in groups of M mod P + P, the rest in groups of P.
Interleave dygraph(int p, int v, int m, int s) {
  const int first = m % p + p;
  Interleave x;
  x.v = v;
  x.total = m * v;
  x.warmup = std::min(2 * (p - s - 1) + (v - 1) * first, x.total);
  auto chunk = [=](int k) {
    if (k < first * v) return k / first;
    return ((k - first * v) % (p * v)) / p;
  };
  x.forward_chunk = chunk;
  x.backward_chunk = [=](int k) { return v - 1 - chunk(k); };
  return x;
}

// PyTorch's ZBVZeroBubble (_calculate_single_rank_operations), written for
// n = max(2P-1, M) micro-batches; the ops of micro-batches >= M are then
// dropped, as PyTorch turns them into empty slots.
std::vector<ScheduleOp> zbv(int p, int m, int r) {
  const int n = std::max(2 * p - 1, m);
  std::vector<ScheduleOp> ops;
  int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  for (int i = 0; i < 2 * (p - r) - 1; ++i) ops.push_back(fwd(f0++, 0));
  for (int i = 0; i < r; ++i) {
    ops.push_back(fwd(f1++, 1));
    ops.push_back(fwd(f0++, 0));
  }
  for (int i = 0; i < p - r; ++i) {
    ops.push_back(fwd(f1++, 1));
    ops.push_back(input(b1, 1));
    ops.push_back(weight(b1++, 1));
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n) ops.push_back(fwd(f0++, 0));
    ops.push_back(input(b0, 0));
    ops.push_back(weight(b0++, 0));
    ops.push_back(fwd(f1++, 1));
    ops.push_back(input(b1, 1));
    ops.push_back(weight(b1++, 1));
  }
  int w0 = b0, w1 = b1;
  for (int i = 0; i < r; ++i) {
    ops.push_back(input(b0++, 0));
    ops.push_back(input(b1++, 1));
  }
  for (int i = 0; i < p - r; ++i) {
    ops.push_back(input(b0++, 0));
    ops.push_back(weight(w0++, 0));
  }
  while (w1 < b1) ops.push_back(weight(w1++, 1));
  while (w0 < b0) ops.push_back(weight(w0++, 0));
  std::erase_if(ops, [m](const ScheduleOp& op) { return op.micro_batch >= m; });
  return ops;
}

// PyTorch's DualPipeV (_calculate_single_rank_operations): chunk 0 is stage
// r, chunk 1 stage 2P-1-r. An overlapped F+B action runs its forward, then
// its full backward. A full backward counts as both halves; only a B (input
// half) queues a W, taken oldest first.
std::vector<ScheduleOp> dualpipev(int p, int m, int r) {
  std::vector<ScheduleOp> ops;
  int f[2] = {0, 0}, b[2] = {0, 0};
  std::deque<std::pair<int, int>> w_queue;  // (chunk, micro-batch)
  auto F = [&](int c) { ops.push_back(fwd(f[c]++, c)); };
  auto B = [&](int c) { ops.push_back(bwd(b[c]++, c)); };
  auto I = [&](int c) {
    w_queue.emplace_back(c, b[c]);
    ops.push_back(input(b[c]++, c));
  };
  auto W = [&] {
    if (w_queue.empty()) return;
    ops.push_back(weight(w_queue.front().second, w_queue.front().first));
    w_queue.pop_front();
  };
  for (int i = 0; i < 2 * (p - r - 1); ++i) F(0);
  for (int i = 0; i < r + 1; ++i) {
    F(0);
    F(1);
  }
  for (int i = 0; i < p - r - 1; ++i) {
    I(1);
    W();
    F(1);
  }
  for (int i = 0; i < m - 2 * p + r + 1; ++i) {
    F(0);  // also the case i == 0 on the last rank, which is not overlapped
    B(1);
    F(1);
    B(0);
  }
  for (int i = 0; i < p - r - 1; ++i) {
    B(1);
    F(1);
    B(0);
  }
  bool zb = false;
  const int n6 = r + 1;
  for (int i = 0; i < n6; ++i) {
    if (i == n6 / 2 && r % 2 == 1) zb = true;
    zb ? I(1) : B(1);
    if (i == n6 / 2 && r % 2 == 0) zb = true;
    zb ? I(0) : B(0);
  }
  for (int i = 0; i < p - r - 1; ++i) {
    W();
    zb ? I(0) : B(0);
  }
  for (int i = 0; i < r + 1; ++i) W();
  return ops;
}

// Paddle's VPP pass with split_backward, which applies only when M == P
// (real_split_backward): micro-step k of the P·V forwards is chunk k / P,
// micro-batch k mod P; the backward_b's run the chunks from the last; then
// the backward_w's, chunk by chunk from the last, micro-batches in order.
std::vector<ScheduleOp> vpp_split_backward(int m, int v) {
  std::vector<ScheduleOp> ops;
  for (int c = 0; c < v; ++c)
    for (int mb = 0; mb < m; ++mb) ops.push_back(fwd(mb, c));
  for (int c = v - 1; c >= 0; --c)
    for (int mb = 0; mb < m; ++mb) ops.push_back(input(mb, c));
  for (int c = v - 1; c >= 0; --c)
    for (int mb = 0; mb < m; ++mb) ops.push_back(weight(mb, c));
  return ops;
}

// PyTorch's interleaved schedules: rounds = max(1, M / P) and
// microbatches_per_round = M / rounds.
int torch_per_round(int p, int m) { return m / std::max(1, m / p); }

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::span<const ScheduleKind> all_schedule_kinds() { return kKinds; }

std::optional<ScheduleKind> parse_schedule_kind(std::string_view name) {
  static const std::map<std::string, ScheduleKind> names = {
      {"gpipe", ScheduleKind::fthenb},
      {"interleaved", ScheduleKind::interleaved},
      {"zb-h1", ScheduleKind::zbh1},
      {"paddle:fthenb", ScheduleKind::fthenb},
      {"paddle:1f1b", ScheduleKind::one_f_one_b},
      {"paddle:vpp", ScheduleKind::interleaved},
      {"paddle:eager1f1b", ScheduleKind::eager_one_f_one_b},
      {"paddle:zbh1", ScheduleKind::zbh1},
      {"paddle:zbvpp", ScheduleKind::zbvpp},
      {"paddle-dygraph:1f1b", ScheduleKind::dygraph_one_f_one_b},
      {"paddle-dygraph:interleave", ScheduleKind::dygraph_interleave},
      {"torch:gpipe", ScheduleKind::torch_gpipe},
      {"torch:1f1b", ScheduleKind::torch_one_f_one_b},
      {"torch:interleaved1f1b", ScheduleKind::torch_interleaved_1f1b},
      {"torch:interleavedzerobubble", ScheduleKind::torch_interleaved_zero_bubble},
      {"torch:zbvzerobubble", ScheduleKind::torch_zbv_zero_bubble},
      {"torch:dualpipev", ScheduleKind::torch_dualpipev},
      {"paddle:vpp-split-backward", ScheduleKind::vpp_split_backward},
  };
  const std::string key = lower(name);
  for (const ScheduleKind kind : kKinds) {
    if (key == schedule_kind_name(kind)) return kind;
  }
  const auto it = names.find(key);
  if (it != names.end()) return it->second;
  return std::nullopt;
}

std::string_view schedule_kind_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::fthenb:
      return "fthenb";
    case ScheduleKind::one_f_one_b:
      return "1f1b";
    case ScheduleKind::interleaved:
      return "vpp";
    case ScheduleKind::eager_one_f_one_b:
      return "eager1f1b";
    case ScheduleKind::zbh1:
      return "zbh1";
    case ScheduleKind::zbvpp:
      return "zbvpp";
    case ScheduleKind::dygraph_one_f_one_b:
      return "dygraph-1f1b";
    case ScheduleKind::dygraph_interleave:
      return "dygraph-interleave";
    case ScheduleKind::torch_gpipe:
      return "torch-gpipe";
    case ScheduleKind::torch_one_f_one_b:
      return "torch-1f1b";
    case ScheduleKind::torch_interleaved_1f1b:
      return "torch-interleaved1f1b";
    case ScheduleKind::torch_interleaved_zero_bubble:
      return "torch-interleavedzerobubble";
    case ScheduleKind::torch_zbv_zero_bubble:
      return "torch-zbvzerobubble";
    case ScheduleKind::torch_dualpipev:
      return "torch-dualpipev";
    case ScheduleKind::vpp_split_backward:
      return "vpp-split-backward";
  }
  return "1f1b";
}

bool has_chunks(ScheduleKind kind) {
  return kind == ScheduleKind::interleaved || kind == ScheduleKind::vpp_split_backward ||
         kind == ScheduleKind::zbvpp || kind == ScheduleKind::dygraph_interleave ||
         kind == ScheduleKind::torch_interleaved_1f1b ||
         kind == ScheduleKind::torch_interleaved_zero_bubble || v_shape(kind);
}

bool v_shape(ScheduleKind kind) {
  return kind == ScheduleKind::torch_zbv_zero_bubble || kind == ScheduleKind::torch_dualpipev;
}

void validate_schedule(const ScheduleShape& shape, const OptionWords& words) {
  const int p = shape.stages, m = shape.micro_batches, v = shape.chunks;
  const std::string_view name = schedule_kind_name(shape.kind);
  if (p < 1 || p > kMaxStages) {
    throw std::invalid_argument(
        fmt::format("number of stages must be in 1..{}, got {}", kMaxStages, p));
  }
  if (m < 1 || m > kMaxMicroBatches) {
    throw std::invalid_argument(
        fmt::format("number of micro-batches must be in 1..{}, got {}", kMaxMicroBatches, m));
  }
  if (v < 1 || v > kMaxChunks) {
    throw std::invalid_argument(
        fmt::format("number of chunks must be in 1..{}, got {}", kMaxChunks, v));
  }
  auto need = [&](bool ok, std::string_view what) {
    if (!ok) {
      throw std::invalid_argument(
          fmt::format("the {} schedule needs {}: {} stages, {} micro-batches", name, what, p, m));
    }
  };
  if (shape.kind == ScheduleKind::zbvpp) {
    throw std::invalid_argument(
        "the zbvpp schedule (PaddlePaddle's ZBVPP pass) builds its job list by a memory-aware "
        "search over the memory it measures on the devices (VScheduleCreator); it cannot be "
        "simulated");
  }
  if (v_shape(shape.kind) && v != 2) {
    throw std::invalid_argument(
        fmt::format("the {} schedule runs exactly 2 chunks per stage (a V), got {} {}", name,
                    words.name(CallerOption::chunks), v));
  }
  if (!has_chunks(shape.kind) && v != 1) {
    throw std::invalid_argument(
        fmt::format("the {} schedule has one model chunk per stage; {} {} needs an interleaved "
                    "schedule",
                    name, words.name(CallerOption::chunks), v));
  }
  switch (shape.kind) {
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zbh1:
      need(p <= m, "at least as many micro-batches as stages, as the Paddle pass asserts");
      break;
    case ScheduleKind::eager_one_f_one_b:
      need(2 * p - 1 <= m, "at least 2P-1 micro-batches, as the Paddle pass asserts");
      break;
    case ScheduleKind::interleaved:
      need(m % p == 0,
           "the number of micro-batches to be a multiple of the number of stages, as the "
           "Paddle pass asserts");
      break;
    case ScheduleKind::dygraph_interleave:
      need(p <= m, "at least as many micro-batches as stages");
      break;
    case ScheduleKind::vpp_split_backward:
      need(m == p,
           "as many micro-batches as stages (the Paddle pass splits the backward only then)");
      break;
    case ScheduleKind::torch_interleaved_1f1b:
    case ScheduleKind::torch_interleaved_zero_bubble:
      need(m % std::max(1, m / p) == 0,
           "the number of micro-batches to be a multiple of the number of rounds max(1, M/P), "
           "as PyTorch requires");
      break;
    case ScheduleKind::torch_dualpipev:
      need(m >= 2 * p, "at least as many micro-batches as stages (2P), as PyTorch requires");
      break;
    default:
      break;
  }
}

int global_stage(const ScheduleShape& shape, int stage, int chunk) {
  if (v_shape(shape.kind)) return chunk == 0 ? stage : 2 * shape.stages - 1 - stage;
  return chunk * shape.stages + stage;
}

std::vector<ScheduleOp> stage_ops(const ScheduleShape& shape, int stage) {
  const int p = shape.stages, m = shape.micro_batches, v = shape.chunks, s = stage;
  switch (shape.kind) {
    case ScheduleKind::fthenb:
    case ScheduleKind::torch_gpipe:
      return one_f_one_b(m, m);
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::dygraph_one_f_one_b:
    case ScheduleKind::torch_one_f_one_b:
      return one_f_one_b(m, p - s - 1);
    case ScheduleKind::eager_one_f_one_b:
      return one_f_one_b(m, 2 * (p - s - 1));
    case ScheduleKind::zbh1:
      return zbh1(p, m, s);
    case ScheduleKind::zbvpp:
      return {};
    case ScheduleKind::interleaved:
      // Paddle's VPP pass (as Megatron) runs everything as warm-up when M == P.
      return interleave(grouped(v, m, p, m == p ? m * v : 2 * (p - s - 1) + (v - 1) * p));
    case ScheduleKind::dygraph_interleave:
      return interleave(dygraph(p, v, m, s));
    case ScheduleKind::torch_interleaved_1f1b: {
      const int per_round = torch_per_round(p, m);
      return interleave(grouped(v, m, per_round, (v - 1) * per_round + 2 * (p - 1 - s)));
    }
    case ScheduleKind::torch_interleaved_zero_bubble: {
      const int per_round = torch_per_round(p, m);
      Interleave x = grouped(v, m, per_round, (v - 1) * per_round + (p - 1 - s));
      x.split = true;
      x.first_w_after = s;
      return interleave(x);
    }
    case ScheduleKind::torch_zbv_zero_bubble:
      return zbv(p, m, s);
    case ScheduleKind::torch_dualpipev:
      return dualpipev(p, m, s);
    case ScheduleKind::vpp_split_backward:
      return vpp_split_backward(m, v);
  }
  return {};
}

}  // namespace pipescope::sim
