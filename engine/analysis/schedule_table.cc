#include "analysis/schedule_table.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <utility>

namespace pipescope {

namespace {

constexpr std::string_view kPaddleStatic = "PaddlePaddle static";
constexpr std::string_view kPaddleDygraph = "PaddlePaddle dygraph";
constexpr std::string_view kPyTorch = "PyTorch";
constexpr int kAnyChunks = 64;

// Sources: the files as read at the commits named (PaddlePaddle/Paddle and
// pytorch/pytorch on GitHub).
constexpr std::array<ScheduleEntry, 15> kTable = {{
    {ScheduleId::paddle_fthenb, "FThenB", kPaddleStatic, ScheduleFamily::fthenb,
     StagePlacement::looped, 1, 1, true,
     "python/paddle/distributed/passes/pipeline_scheduler_pass/pipeline_fthenb.py, "
     "PipelineFThenBPass._create_job_list (Paddle 807c4ba, 2024); the 2023 "
     "pipeline_scheduler_pass.py opens the list with an lr job",
     "any P, M"},
    {ScheduleId::paddle_1f1b, "1F1B", kPaddleStatic, ScheduleFamily::one_f_one_b,
     StagePlacement::looped, 1, 1, true,
     "python/paddle/distributed/passes/pipeline_scheduler_pass/pipeline_1f1b.py, "
     "Pipeline1F1BPass._create_job_list and _create_job_list_in_pir (Paddle 0ab6998, 2024); "
     "the 2023 pipeline_scheduler_pass.py opens the list with an lr job; PIR mode adds "
     "recv_forward before each forward and send_backward after each backward",
     "M >= P (asserted)"},
    {ScheduleId::paddle_eager_1f1b, "Eager1F1B", kPaddleStatic, ScheduleFamily::eager_one_f_one_b,
     StagePlacement::looped, 1, 1, true,
     "python/paddle/distributed/passes/pipeline_scheduler_pass/pipeline_eager_1f1b.py, "
     "PipelineEager1F1BPass._create_job_list (Paddle 30da508, 2024)",
     "M >= 2(P-s)-1 on every stage, i.e. M >= 2P-1 (asserted)"},
    {ScheduleId::paddle_vpp, "VPP", kPaddleStatic, ScheduleFamily::interleaved,
     StagePlacement::looped, 1, kAnyChunks, true,
     "python/paddle/distributed/passes/pipeline_scheduler_pass/pipeline_vpp.py, "
     "PipelineVirtualPipelinePass._create_job_list (Paddle 07efe79, 2024), without "
     "split_backward (with it and M == P: the next entry)",
     "M a multiple of P (asserted); M == P: every forward is warm-up"},
    {ScheduleId::paddle_vpp_split_backward, "VPP", kPaddleStatic, ScheduleFamily::interleaved,
     StagePlacement::looped, 1, kAnyChunks, true,
     "python/paddle/distributed/passes/pipeline_scheduler_pass/pipeline_vpp.py, "
     "PipelineVirtualPipelinePass._create_job_list with split_backward (Paddle 07efe79, "
     "2024): with M == P every forward, then every backward as backward_b{c}, then "
     "backward_w{c} of every micro-batch, last chunk first (the last of a chunk "
     "backward_w{c}_reduce when sharding's reduce moved into it)",
     "split_backward and M == P (otherwise the pass runs the VPP list above)"},
    {ScheduleId::paddle_zbh1, "ZBH1", kPaddleStatic, ScheduleFamily::zero_bubble,
     StagePlacement::looped, 1, 1, true,
     "python/paddle/distributed/passes/pipeline_scheduler_pass/pipeline_zero_bubble.py, "
     "PipelineZeroBubblePipelinePass._create_job_list (Paddle 06a80bf, 2024)",
     "M >= P (asserted)"},
    {ScheduleId::paddle_zbvpp, "ZBVPP", kPaddleStatic, ScheduleFamily::zero_bubble,
     StagePlacement::looped, 2, kAnyChunks, false,
     "python/paddle/distributed/passes/pipeline_scheduler_pass/pipeline_zero_bubble.py, "
     "PipelineZeroBubbleVirtualPipelinePass._create_job_list (Paddle 06a80bf, 2024): the list "
     "comes from VScheduleCreator, a search over the memory measured on the devices, so it is "
     "no function of P, M and V: recognised by its types (chunked backward_b/backward_w), "
     "without an ideal",
     "chunks >= 2"},
    {ScheduleId::dygraph_1f1b, "1F1B", kPaddleDygraph, ScheduleFamily::one_f_one_b,
     StagePlacement::looped, 1, 1, true,
     "python/paddle/distributed/fleet/meta_parallel/pipeline_parallel.py, "
     "PipelineParallel.forward_backward_pipeline (Paddle 00e2b04, 2025)",
     "any P, M"},
    {ScheduleId::dygraph_interleave, "Interleave", kPaddleDygraph, ScheduleFamily::interleaved,
     StagePlacement::looped, 1, kAnyChunks, true,
     "python/paddle/distributed/fleet/meta_parallel/pipeline_parallel.py, "
     "PipelineParallelWithInterleave.forward_backward_pipeline and _get_virtual_pp_rank "
     "(Paddle 00e2b04, 2025: first chunk group of M mod P + P micro-batches; older versions "
     "made every forward warm-up when M == P)",
     "M >= P"},
    {ScheduleId::torch_gpipe, "GPipe", kPyTorch, ScheduleFamily::fthenb, StagePlacement::looped, 1,
     1, true,
     "torch/distributed/pipelining/schedules.py, ScheduleGPipe._step_microbatches "
     "(pytorch 00722e6, 2025)",
     "any P, M"},
    {ScheduleId::torch_1f1b, "1F1B", kPyTorch, ScheduleFamily::one_f_one_b, StagePlacement::looped,
     1, 1, true,
     "torch/distributed/pipelining/schedules.py, Schedule1F1B._step_microbatches "
     "(pytorch 00722e6, 2025)",
     "any P, M"},
    {ScheduleId::torch_interleaved_1f1b, "Interleaved1F1B", kPyTorch, ScheduleFamily::interleaved,
     StagePlacement::looped, 1, kAnyChunks, true,
     "torch/distributed/pipelining/schedules.py, "
     "ScheduleInterleaved1F1B._calculate_single_rank_operations, _get_warmup_ops, "
     "_get_1f1b_rank_ops (pytorch 00722e6, 2025)",
     "M a multiple of max(1, M/P)"},
    {ScheduleId::torch_interleaved_zero_bubble, "InterleavedZeroBubble", kPyTorch,
     ScheduleFamily::zero_bubble, StagePlacement::looped, 1, kAnyChunks, true,
     "torch/distributed/pipelining/schedules.py, "
     "ScheduleInterleavedZeroBubble._calculate_single_rank_operations, _get_1f1b_rank_ops "
     "with enable_zero_bubble (pytorch 00722e6, 2025); _add_bubbles_to_actions only adds "
     "empty slots",
     "M a multiple of max(1, M/P)"},
    {ScheduleId::torch_zbv_zero_bubble, "ZBVZeroBubble", kPyTorch, ScheduleFamily::zero_bubble_v,
     StagePlacement::v_shape, 2, 2, true,
     "torch/distributed/pipelining/schedules.py, "
     "ScheduleZBVZeroBubble._calculate_single_rank_operations (pytorch 00722e6, 2025)",
     "exactly 2 chunks per rank"},
    {ScheduleId::torch_dualpipev, "DualPipeV", kPyTorch, ScheduleFamily::dualpipe_v,
     StagePlacement::v_shape, 2, 2, true,
     "torch/distributed/pipelining/schedules.py, "
     "ScheduleDualPipeV._calculate_single_rank_operations (pytorch 00722e6, 2025); an "
     "overlapped F+B action runs its forward, then its backward",
     "exactly 2 chunks per rank, M >= 2P"},
}};

using List = std::vector<ScheduleStep>;

ScheduleStep F(std::int64_t mb, std::int32_t chunk = 0) {
  return {PipelineRole::forward, mb, chunk, false};
}
ScheduleStep B(std::int64_t mb, std::int32_t chunk = 0) {
  return {PipelineRole::backward, mb, chunk, false};
}
ScheduleStep Bi(std::int64_t mb, std::int32_t chunk = 0) {
  return {PipelineRole::backward, mb, chunk, true};
}
ScheduleStep W(std::int64_t mb, std::int32_t chunk = 0) {
  return {PipelineRole::weight, mb, chunk, false};
}

// --- PaddlePaddle static passes (loops as the passes write them) -------------

List paddle_fthenb(int m) {
  List jobs;
  for (int i = 0; i < m; ++i) jobs.push_back(F(i));
  for (int i = 0; i < m; ++i) jobs.push_back(B(i));
  return jobs;
}

// micro_batch_in_warmup = P - s; micro_batch_in_1f1b = M - warmup.
List paddle_1f1b(int p, int m, int s) {
  const int warmup = p - s;
  List jobs;
  int f = 0, b = 0;
  for (int i = 0; i < warmup; ++i) jobs.push_back(F(f++));
  for (int i = 0; i < m - warmup; ++i) {
    jobs.push_back(B(b++));
    jobs.push_back(F(f++));
  }
  for (int i = 0; i < warmup; ++i) jobs.push_back(B(b++));
  return jobs;
}

List paddle_eager_1f1b(int p, int m, int s) {
  const int warmup = 2 * (p - s) - 1;
  List jobs;
  int f = 0, b = 0;
  for (int i = 0; i < warmup; ++i) jobs.push_back(F(f++));
  for (int i = 0; i < m - warmup; ++i) {
    jobs.push_back(B(b++));
    jobs.push_back(F(f++));
  }
  for (int i = 0; i < warmup; ++i) jobs.push_back(B(b++));
  return jobs;
}

// _get_virtual_pp_rank: (step % (P·V)) / P, reversed for backwards; the
// micro-batch of a job counts that chunk's jobs so far.
List paddle_vpp(int p, int m, int v, int s) {
  const int total = m * v;
  const int warmup = m == p ? total : std::min(2 * (p - s - 1) + (v - 1) * p, total);
  auto rank = [&](int step, bool forward) {
    const int c = (step % (p * v)) / p;
    return forward ? c : v - 1 - c;
  };
  std::vector<int> fc(v, 0), bc(v, 0);
  List jobs;
  for (int step = 0; step < warmup; ++step) {
    const int c = rank(step, true);
    jobs.push_back(F(fc[c]++, c));
  }
  for (int step = 0; step < total - warmup; ++step) {
    const int fwd = rank(step + warmup, true);
    jobs.push_back(F(fc[fwd]++, fwd));
    const int bwd = rank(step, false);
    jobs.push_back(B(bc[bwd]++, bwd));
  }
  for (int step = total - warmup; step < total; ++step) {
    const int c = rank(step, false);
    jobs.push_back(B(bc[c]++, c));
  }
  return jobs;
}

// The same pass with split_backward when M == P (real_split_backward): every
// step is warm-up, the backwards are backward_b{c} in the cool-down order,
// then for chunk V-1 down to 0 a backward_w{c} of each micro-batch.
List paddle_vpp_split_backward(int p, int m, int v, int s) {
  List jobs;
  for (const ScheduleStep& op : paddle_vpp(p, m, v, s)) {
    jobs.push_back(op.role == PipelineRole::backward ? Bi(op.micro_batch, op.chunk) : op);
  }
  for (int c = v - 1; c >= 0; --c) {
    for (int mb = 0; mb < m; ++mb) jobs.push_back(W(mb, c));
  }
  return jobs;
}

List paddle_zbh1(int p, int m, int s) {
  const int warmup = p - s;
  List jobs;
  int f = 0, b = 0;
  for (int i = 0; i < warmup; ++i) jobs.push_back(F(f++));
  for (int i = 0; i < s; ++i) {
    jobs.push_back(Bi(b++));
    jobs.push_back(F(f++));
  }
  for (int i = 0; i < m - p; ++i) {
    jobs.push_back(B(b++));
    jobs.push_back(F(f++));
  }
  for (int i = 0; i < warmup - 1; ++i) jobs.push_back(B(b++));
  if (s > 0) {
    jobs.push_back(Bi(b));
    jobs.push_back(W(b));
  } else {
    jobs.push_back(B(b));
  }
  ++b;
  for (int i = 0; i < s; ++i) jobs.push_back(W(i));
  return jobs;
}

// --- PaddlePaddle dygraph ----------------------------------------------------

// startup_steps = min(P - s - 1, M); steady: forward then backward.
List dygraph_1f1b(int p, int m, int s) {
  const int startup = std::min(p - s - 1, m);
  List jobs;
  int f = 0, b = 0;
  for (int i = 0; i < startup; ++i) jobs.push_back(F(f++));
  for (int i = 0; i < m - startup; ++i) {
    jobs.push_back(F(f++));
    jobs.push_back(B(b++));
  }
  for (int i = 0; i < startup; ++i) jobs.push_back(B(b++));
  return jobs;
}

List dygraph_interleave(int p, int m, int v, int s) {
  const int first_chunk_acc = m % p + p;
  const int num_steps = m * v;
  const int startup = std::min(2 * (p - s - 1) + (v - 1) * first_chunk_acc, num_steps);
  auto rank = [&](int micro_step, bool forward) {
    int c = 0;
    if (micro_step < first_chunk_acc * v) {
      c = micro_step / first_chunk_acc;
    } else {
      c = ((micro_step - first_chunk_acc * v) % (p * v)) / p;
    }
    return forward ? c : v - 1 - c;
  };
  std::vector<int> fc(v, 0), bc(v, 0);
  List jobs;
  auto forward_step = [&](int micro_step) {
    const int c = rank(micro_step, true);
    jobs.push_back(F(fc[c]++, c));
  };
  auto backward_step = [&](int micro_step) {
    const int c = rank(micro_step, false);
    jobs.push_back(B(bc[c]++, c));
  };
  for (int i = 0; i < startup; ++i) forward_step(i);
  for (int i = 0; i < num_steps - startup; ++i) {
    forward_step(i + startup);
    backward_step(i);
  }
  for (int i = num_steps - startup; i < num_steps; ++i) backward_step(i);
  return jobs;
}

// --- PyTorch torch.distributed.pipelining --------------------------------------

// Schedule1F1B: warmup_chunks = min(M, P - s), then 1B1F, then cool-down.
List torch_1f1b(int p, int m, int s) {
  const int warmup = std::min(m, p - s);
  List jobs;
  int f = 0, b = 0;
  for (int i = 0; i < warmup; ++i) jobs.push_back(F(f++));
  while (true) {
    jobs.push_back(B(b++));
    if (f == m) break;
    jobs.push_back(F(f++));
  }
  while (b < m) jobs.push_back(B(b++));
  return jobs;
}

// _get_1f1b_rank_ops over local stage indices (the chunk), with
// _get_warmup_ops(multiply_factor) and ScheduleInterleaved*'s stage index
// functions; enable_zero_bubble turns backwards into I and adds W's.
List torch_1f1b_rank_ops(int p, int m, int v, int rank, int multiply_factor, bool zero_bubble) {
  const int rounds = std::max(1, m / p);
  const int per_round = m / rounds;
  const int warmup_ops = std::min((v - 1) * per_round + multiply_factor * ((p - 1) - rank), m * v);
  const int fwd_bwd_ops = m * v - warmup_ops;
  const int cooldown_ops = m * v - fwd_bwd_ops;
  const int total_ops = warmup_ops + fwd_bwd_ops + cooldown_ops;
  const int num_1f1b_microbatches = zero_bubble ? rank : 0;
  auto forward_stage = [&](int step) { return (step / per_round) % v; };
  auto backward_stage = [&](int step) { return v - 1 - ((step - warmup_ops) / per_round) % v; };
  std::map<int, int> fwd_mb, bwd_mb, weight_mb;
  std::vector<int> backward_op_ids;
  std::size_t weight_op_count = 0;
  List jobs;
  auto add_backward = [&](int op) {
    const int c = backward_stage(op);
    const int mb = bwd_mb[c]++;
    jobs.push_back(zero_bubble ? Bi(mb, c) : B(mb, c));
    backward_op_ids.push_back(op);
    if (zero_bubble && op - warmup_ops >= num_1f1b_microbatches) {
      const int wc = backward_stage(backward_op_ids[weight_op_count++]);
      jobs.push_back(W(weight_mb[wc]++, wc));
    }
  };
  for (int op = 0; op < total_ops; ++op) {
    if (op < warmup_ops) {
      const int c = forward_stage(op);
      jobs.push_back(F(fwd_mb[c]++, c));
    } else if (op < warmup_ops + fwd_bwd_ops) {
      const int c = forward_stage(op);
      jobs.push_back(F(fwd_mb[c]++, c));
      add_backward(op);
    } else {
      add_backward(op);
    }
  }
  while (zero_bubble && weight_op_count < backward_op_ids.size()) {
    const int wc = backward_stage(backward_op_ids[weight_op_count++]);
    jobs.push_back(W(weight_mb[wc]++, wc));
  }
  return jobs;
}

// ScheduleZBVZeroBubble: chunk 0 = stage r, chunk 1 = stage 2P-1-r.
List torch_zbv(int p, int m, int rank) {
  const int n_micro = std::max(2 * p - 1, m);
  List jobs;
  int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  for (int i = 0; i < 2 * (p - rank) - 1; ++i) jobs.push_back(F(f0++, 0));
  for (int i = 0; i < rank; ++i) {
    jobs.push_back(F(f1++, 1));
    jobs.push_back(F(f0++, 0));
  }
  for (int i = 0; i < p - rank; ++i) {
    jobs.push_back(F(f1++, 1));
    jobs.push_back(Bi(b1, 1));
    jobs.push_back(W(b1, 1));
    ++b1;
  }
  while (f1 < f0 || f0 < n_micro) {
    if (f0 < n_micro) jobs.push_back(F(f0++, 0));
    jobs.push_back(Bi(b0, 0));
    jobs.push_back(W(b0, 0));
    ++b0;
    jobs.push_back(F(f1++, 1));
    jobs.push_back(Bi(b1, 1));
    jobs.push_back(W(b1, 1));
    ++b1;
  }
  int w0 = b0, w1 = b1;
  for (int i = 0; i < rank; ++i) {
    jobs.push_back(Bi(b0++, 0));
    jobs.push_back(Bi(b1++, 1));
  }
  for (int i = 0; i < p - rank; ++i) {
    jobs.push_back(Bi(b0++, 0));
    jobs.push_back(W(w0++, 0));
  }
  while (w1 < b1) jobs.push_back(W(w1++, 1));
  while (w0 < b0) jobs.push_back(W(w0++, 0));
  // Actions of micro-batches >= M become empty slots.
  List kept;
  for (const ScheduleStep& j : jobs) {
    if (j.micro_batch < m) kept.push_back(j);
  }
  return kept;
}

// ScheduleDualPipeV: counters per (chunk, F / I); a full backward advances
// the I counter; a weight action pops the oldest queued I.
List torch_dualpipev(int p, int m, int rank) {
  enum { kF, kI };
  std::map<std::pair<int, int>, int> counters;
  std::vector<std::pair<int, int>> weight_queue;  // (chunk, micro-batch)
  List jobs;
  auto add = [&](int chunk, char type) {
    const int key = type == 'F' ? kF : kI;
    const int mb = counters[{chunk, key}]++;
    if (type == 'F') jobs.push_back(F(mb, chunk));
    if (type == 'B') jobs.push_back(B(mb, chunk));
    if (type == 'I') {
      jobs.push_back(Bi(mb, chunk));
      weight_queue.emplace_back(chunk, mb);
    }
  };
  auto overlap_f_b = [&](int forward_chunk, int backward_chunk) {
    add(forward_chunk, 'F');
    jobs.back().overlap_next = true;
    add(backward_chunk, 'B');
  };
  auto weight_if_pending = [&] {
    if (weight_queue.empty()) return;
    jobs.push_back(W(weight_queue.front().second, weight_queue.front().first));
    weight_queue.erase(weight_queue.begin());
  };
  for (int i = 0; i < (p - rank - 1) * 2; ++i) add(0, 'F');
  for (int i = 0; i < rank + 1; ++i) {
    add(0, 'F');
    add(1, 'F');
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    add(1, 'I');
    weight_if_pending();
    add(1, 'F');
  }
  const int step_4 = m - p * 2 + rank + 1;
  for (int i = 0; i < step_4; ++i) {
    if (i == 0 && rank == p - 1) {
      add(0, 'F');
      add(1, 'B');
    } else {
      overlap_f_b(0, 1);
    }
    overlap_f_b(1, 0);
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    add(1, 'B');
    overlap_f_b(1, 0);
  }
  const int step_6 = rank + 1;
  bool enable_zb = false;
  for (int i = 0; i < step_6; ++i) {
    if (i == step_6 / 2 && rank % 2 == 1) enable_zb = true;
    add(1, enable_zb ? 'I' : 'B');
    if (i == step_6 / 2 && rank % 2 == 0) enable_zb = true;
    add(0, enable_zb ? 'I' : 'B');
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    weight_if_pending();
    add(0, enable_zb ? 'I' : 'B');
  }
  for (int i = 0; i < rank + 1; ++i) weight_if_pending();
  return jobs;
}

}  // namespace

int global_stage(StagePlacement placement, int p, int stage, int chunk) {
  if (placement == StagePlacement::v_shape) return chunk == 0 ? stage : 2 * p - 1 - stage;
  return chunk * p + stage;
}

StageChunk stage_chunk_of(StagePlacement placement, int p, int global) {
  const int chunk = global / p;
  if (placement == StagePlacement::v_shape)
    return {chunk == 0 ? global : 2 * p - 1 - global, chunk};
  return {global % p, chunk};
}

std::string_view schedule_family_name(ScheduleFamily family) {
  switch (family) {
    case ScheduleFamily::fthenb:
      return "fthenb";
    case ScheduleFamily::one_f_one_b:
      return "1f1b";
    case ScheduleFamily::eager_one_f_one_b:
      return "eager-1f1b";
    case ScheduleFamily::interleaved:
      return "interleaved";
    case ScheduleFamily::zero_bubble:
      return "zero-bubble";
    case ScheduleFamily::zero_bubble_v:
      return "zero-bubble-v";
    case ScheduleFamily::dualpipe_v:
      return "dualpipe-v";
  }
  return "1f1b";
}

std::optional<ScheduleFamily> parse_schedule_family(std::string_view name) {
  for (const auto f :
       {ScheduleFamily::fthenb, ScheduleFamily::one_f_one_b, ScheduleFamily::eager_one_f_one_b,
        ScheduleFamily::interleaved, ScheduleFamily::zero_bubble, ScheduleFamily::zero_bubble_v,
        ScheduleFamily::dualpipe_v}) {
    if (schedule_family_name(f) == name) return f;
  }
  return std::nullopt;
}

std::optional<ScheduleFamily> family_of_schedule_name(std::string_view name) {
  if (name == "ZB-H1") return ScheduleFamily::zero_bubble;  // before the table (issue 14)
  for (const ScheduleEntry& e : kTable) {
    if (e.name == name) return e.family;
  }
  // Names of an inexact detection: the family's own name.
  return parse_schedule_family(name);
}

std::span<const ScheduleEntry> schedule_table() { return kTable; }

const ScheduleEntry& schedule_entry(ScheduleId id) { return kTable[static_cast<std::size_t>(id)]; }

std::optional<std::vector<ScheduleStep>> schedule_job_list(ScheduleId id, int stages,
                                                           int micro_batches, int chunks,
                                                           int stage) {
  const int p = stages, m = micro_batches, v = chunks, s = stage;
  const ScheduleEntry& e = schedule_entry(id);
  if (!e.has_job_list || p < 1 || m < 1 || s < 0 || s >= p || v < e.min_chunks ||
      v > e.max_chunks) {
    return std::nullopt;
  }
  switch (id) {
    case ScheduleId::paddle_fthenb:
    case ScheduleId::torch_gpipe:
      return paddle_fthenb(m);
    case ScheduleId::paddle_1f1b:
      if (m < p) return std::nullopt;
      return paddle_1f1b(p, m, s);
    case ScheduleId::paddle_eager_1f1b:
      if (m < 2 * p - 1) return std::nullopt;
      return paddle_eager_1f1b(p, m, s);
    case ScheduleId::paddle_vpp:
      if (m % p != 0) return std::nullopt;
      return paddle_vpp(p, m, v, s);
    case ScheduleId::paddle_vpp_split_backward:
      if (m != p) return std::nullopt;
      return paddle_vpp_split_backward(p, m, v, s);
    case ScheduleId::paddle_zbh1:
      if (m < p) return std::nullopt;
      return paddle_zbh1(p, m, s);
    case ScheduleId::paddle_zbvpp:
      return std::nullopt;
    case ScheduleId::dygraph_1f1b:
      return dygraph_1f1b(p, m, s);
    case ScheduleId::dygraph_interleave:
      if (m < p) return std::nullopt;
      return dygraph_interleave(p, m, v, s);
    case ScheduleId::torch_1f1b:
      return torch_1f1b(p, m, s);
    case ScheduleId::torch_interleaved_1f1b:
    case ScheduleId::torch_interleaved_zero_bubble: {
      if (m % std::max(1, m / p) != 0) return std::nullopt;
      const bool zb = id == ScheduleId::torch_interleaved_zero_bubble;
      return torch_1f1b_rank_ops(p, m, v, s, zb ? 1 : 2, zb);
    }
    case ScheduleId::torch_zbv_zero_bubble:
      return torch_zbv(p, m, s);
    case ScheduleId::torch_dualpipev:
      if (m < 2 * p) return std::nullopt;
      return torch_dualpipev(p, m, s);
  }
  return std::nullopt;
}

std::optional<SimulatedSchedule> simulate_job_lists(
    const std::vector<std::vector<ScheduleStep>>& lists, StagePlacement placement, int chunks,
    const OpCosts& costs) {
  const int p = static_cast<int>(lists.size());
  if (p < 1 || chunks < 1 || !(costs.forward > 0) || !(costs.backward > 0) ||
      !(costs.backward_input > 0) || !(costs.weight > 0)) {
    return std::nullopt;
  }
  if (placement == StagePlacement::v_shape && chunks != 2) return std::nullopt;
  const int g_count = p * chunks;
  // End time of F(m) and of the input-gradient backward of m on each global
  // stage, by micro-batch: flat tables when the micro-batches are 0..M-1 (a
  // run's every step is simulated; a map per stage and step was most of the
  // cost), maps otherwise.
  std::int64_t min_mb = 0, max_mb = -1;
  std::size_t ops = 0;
  for (const auto& list : lists) {
    for (const ScheduleStep& op : list) {
      min_mb = ops == 0 ? op.micro_batch : std::min(min_mb, op.micro_batch);
      max_mb = ops == 0 ? op.micro_batch : std::max(max_mb, op.micro_batch);
      ++ops;
    }
  }
  constexpr double kNotYet = -1;
  const bool flat = min_mb >= 0 && max_mb < static_cast<std::int64_t>(4 * ops + 64);
  const std::size_t width = flat ? static_cast<std::size_t>(max_mb + 1) : 0;
  std::vector<double> f_flat(flat ? width * static_cast<std::size_t>(g_count) : 0, kNotYet);
  std::vector<double> b_flat(f_flat.size(), kNotYet);
  std::vector<std::map<std::int64_t, double>> f_end(flat ? 0 : g_count), b_end(flat ? 0 : g_count);
  // The end of `role`'s op of micro-batch `mb` on global stage g (forward:
  // f, else b), or kNotYet.
  auto end_of = [&](bool forward, int g, std::int64_t mb) {
    if (flat)
      return (forward ? f_flat
                      : b_flat)[static_cast<std::size_t>(g) * width + static_cast<std::size_t>(mb)];
    const auto& ends = (forward ? f_end : b_end)[static_cast<std::size_t>(g)];
    const auto it = ends.find(mb);
    return it == ends.end() ? kNotYet : it->second;
  };
  // Records an end; false when the op was there already.
  auto set_end = [&](bool forward, int g, std::int64_t mb, double end) {
    if (flat) {
      double& slot =
          (forward ? f_flat
                   : b_flat)[static_cast<std::size_t>(g) * width + static_cast<std::size_t>(mb)];
      if (slot != kNotYet) return false;
      slot = end;
      return true;
    }
    return (forward ? f_end : b_end)[static_cast<std::size_t>(g)].emplace(mb, end).second;
  };
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);
  std::vector<double> stage_busy(p, 0.0);
  double busy = 0;
  std::size_t remaining = ops;
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < lists[s].size()) {
        const ScheduleStep& op = lists[s][next[s]];
        if (op.chunk < 0 || op.chunk >= chunks) return std::nullopt;
        const int g = global_stage(placement, p, s, op.chunk);
        double ready = 0;
        double cost = 0;
        if (op.role == PipelineRole::forward) {
          if (g > 0) ready = end_of(true, g - 1, op.micro_batch);
          cost = costs.forward;
        } else if (op.role == PipelineRole::backward) {
          ready = g < g_count - 1 ? end_of(false, g + 1, op.micro_batch)
                                  : end_of(true, g, op.micro_batch);
          cost = op.split ? costs.backward_input : costs.backward;
        } else if (op.role == PipelineRole::weight) {
          ready = end_of(false, g, op.micro_batch);
          cost = costs.weight;
        } else {
          return std::nullopt;
        }
        if (ready == kNotYet) break;
        const double start = std::max(free_at[s], ready);
        const double end = start + cost;
        if (op.role != PipelineRole::weight &&
            !set_end(op.role == PipelineRole::forward, g, op.micro_batch, end)) {
          return std::nullopt;  // the same op twice
        }
        free_at[s] = end;
        stage_busy[s] += cost;
        busy += cost;
        ++next[s];
        --remaining;
        progress = true;
      }
    }
    if (!progress) return std::nullopt;  // deadlock
  }
  const double makespan = *std::max_element(free_at.begin(), free_at.end());
  if (!(makespan > 0)) return std::nullopt;
  return SimulatedSchedule{makespan, std::move(stage_busy), busy};
}

std::optional<double> simulated_bubble_ratio(const std::vector<std::vector<ScheduleStep>>& lists,
                                             StagePlacement placement, int chunks,
                                             const OpCosts& costs) {
  const auto simulated = simulate_job_lists(lists, placement, chunks, costs);
  if (!simulated) return std::nullopt;
  const int p = static_cast<int>(lists.size());
  const double makespan = simulated->makespan;
  const double busy = simulated->total_busy;
  // idle / total rather than 1 - busy / total: with whole-number costs both
  // are exact, and the quotient is then the correctly rounded ratio.
  const double total = static_cast<double>(p) * makespan;
  return (total - busy) / total;
}

std::optional<double> uniform_bubble_ratio(ScheduleId id, int stages, int micro_batches,
                                           int chunks) {
  std::vector<std::vector<ScheduleStep>> lists;
  for (int s = 0; s < stages; ++s) {
    auto list = schedule_job_list(id, stages, micro_batches, chunks, s);
    if (!list) return std::nullopt;
    lists.push_back(std::move(*list));
  }
  return simulated_bubble_ratio(lists, schedule_entry(id).placement, chunks, OpCosts{});
}

}  // namespace pipescope
