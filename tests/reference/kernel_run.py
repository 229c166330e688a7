#!/usr/bin/env python3
"""Generates the PyTorch profiler traces of a Megatron-style pipeline run, kernels only.

    kernel_run.py -o DIR --pp P --dp D --micro-batches M --steps K
                  --schedule {1f1b,interleaved} [--chunks V] [--machines N] [--machine-folders]
                  [--clock-offset-us X] [--no-comms-id] [--nccl-names {old,new}]
                  [--kernels-per-op 120] [--seed S] [--gz] [--first-step N]

Writes DIR/rank{R}.pt.trace.json[.gz] (one per global rank R, `distributedInfo.rank`
= R) and DIR/truth.json: the kernel view of summary.json (compute / transfer / wait /
idle per rank and step) worked out from the simulation's own knowledge of the true
times, and the clock offset each rank's file was written with. The traces carry no
`PP:` labels: only GPU activities, their launches, `ProfilerStep#N` spans and the
NCCL metadata Kineto copies into the kernels' args.

Standard library only, and written apart from the engine and the other generators,
so that an error both would share shows.

Layout (Megatron's rank order pp, dp, outermost first; no tensor parallelism):
global rank g = d + D * p for pipeline stage p (0..P-1) and data-parallel replica
d (0..D-1), so the D replicas of one stage are consecutive ranks. Pipeline group of
replica d: [d, d + D, ..., d + D (P-1)] ("PIPELINE_MODEL_PARALLEL_GROUP", process
group name str(1 + P + d)); data-parallel group of stage p: [D p, ..., D p + D - 1]
("DATA_PARALLEL_GROUP", name str(1 + p)). Machines: --machines N splits the ranks
in contiguous blocks of P D / N (machine g // (P D / N)); a rank's device (the
`pid` of its GPU events) is its place in its block. With --clock-offset-us X every
timestamp machine m writes is X m microseconds ahead of the true clock (the truth
stays on the true clock; truth.json says which offset each rank's file has).

Schedules: Megatron-LM's forward_backward_pipelining_without_interleaving (1f1b:
stage p runs min(P - p - 1, M) warm-up forwards, then 1F1B pairs, then the
remaining backwards) and forward_backward_pipelining_with_interleaving
(interleaved: V model chunks per rank, virtual stage c P + p; M divisible by P),
with the point-to-point calls of those functions (send_forward_recv_backward and
the like) and Megatron's non-batched p2p path (batch_p2p_comm off): every isend /
irecv of a call is its own NCCL kernel, issued even stages first send_next,
recv_prev, send_prev, recv_next, odd stages recv_prev, send_next, recv_next,
send_prev, and the compute after a call waits for every kernel of the call.

Timing model, integer ns throughout:
- CPU. One clock per rank. A forward's kernels are launched from the main thread, a
  backward's from the autograd thread, each launch inside a `cpu_op`; the CPU runs
  ahead of the GPU, at most QUEUE launches ahead (a launch waits until the kernel
  QUEUE launches before it has started). A step: `ProfilerStep#N` opens, data
  loading, a zeroing memset, the schedule, the data-parallel all-reduce (one per
  model chunk, D > 1 only), the gradient norm (a few kernels and a 4-byte copy to
  the host the CPU waits for with cudaStreamSynchronize), the optimizer's kernels
  (launched before the span closes; most of them run on the GPU after it), and the
  span closes where the next one opens.
- Compute. Each forward / backward of a micro-batch (and model chunk) is
  --kernels-per-op kernels back to back on stream 7 with gaps of 0.3-2.5 us; a
  kernel starts no earlier than 2.5-4.5 us after its launch began. A forward costs
  6 ms per micro-batch and stage (6/V ms per chunk), a backward twice that, +-4 %;
  the first stage is 4 % and the last 10 % slower.
- Communication. Each peer pair has its own NCCL stream on both ranks (FIFO), the
  data-parallel group one more. A NCCL kernel starts once launched, its stream is
  free and the compute issued before it has finished (PyTorch's stream sync); the
  kernel that starts first waits until its peer (all-reduce: the last member)
  starts, then every side transfers for the transfer time and ends at t0 + T + a
  jitter of 0-3 us of its own. T: p2p 60-120 us within a machine, 250-450 us
  across; all-reduce 3-5 ms (one machine) or 8-12 ms, divided by V.
  Send/recv are matched the way NCCL matches them: the k-th send from a to b with
  the k-th recv on b from a.
- Comm kernel args: "Collective name" (send, recv, allreduce), "Process Group
  Name", "Process Group Description", "Process Group Ranks" (global ranks of the
  whole group, "[0, 2]"), "Dst Rank" on a send and "Src Rank" on a recv (global
  ranks), the message sizes, and unless --no-comms-id "Comms Id", an unsigned
  64-bit integer (about half above 2^63, written as a bare integer) shared by both
  sides of a send/recv and by every member of an all-reduce. The same metadata is
  on the `record_param_comms` cpu_op around the launch. --nccl-names new (NCCL >=
  2.19): ncclDevKernel_SendRecv / ncclDevKernel_AllReduce_Sum_f32_RING_LL, launched
  by cuLaunchKernelEx (`cuda_driver`); old: ncclKernel_SendRecv_RING_SIMPLE_... /
  ncclKernel_AllReduce_RING_LL_Sum_float, launched by cudaLaunchKernel.

Write order (Kineto's, as in the real traces of ../shared/reference/kineto): the
CPU events first (`ProfilerStep#N` spans, cpu_ops, record_param_comms and its
`nccl:*` annotation, the optimizer's annotation) in time order, then the runtime
and driver calls (launches with their `ac2g` "s" flow, cudaEventRecord,
cudaStreamSynchronize) interleaved with the GPU activities (with their "f" flow)
in time order, then the process and thread metadata, and after the events array
`traceName`, `displayTimeUnit` and `baseTimeNanoseconds`. `ts` and `dur` are
microseconds after the base with exactly three decimals.

truth.json: {"kernel_view": the summary.json object (schema of the kernel view
contract), "clock_offsets_ns": {rank: ns}, "layout": every rank's stage, replica,
machine and device, "files": each trace's name and size}. Its figures come from
interval arithmetic on the true times: an activity's step is the step whose span
its launch lies in, windows S_k = max(min first start, E_{k-1}), E_k = max last
end; compute > transfer > wait > idle instant by instant; a comm kernel waits from
its start to the latest start among its true peers. most_waited_on: each instant
of wait left after precedence (inside the window) goes to one peer: among the
kernels waiting then, the one whose wait ends latest names its latest-starting peer
(ties: the lowest rank, for both); the largest sum wins (ties: lowest rank); null
when the rank's wait in the step is 0 ns. Ranks in global-rank order, "device" = place in that order.
With --clock-offset-us 0 the files say exactly what the truth says.
"""

import argparse
import gzip
import json
import random
import shutil
import sys
import time
from decimal import Decimal
from pathlib import Path

BASE_NS = 1_712_195_000_000_000_000   # baseTimeNanoseconds of every file
ORIGIN_NS = BASE_NS + 4_000_000_000   # the run starts 4 s after the base
QUEUE = 512                           # launches the CPU may run ahead of the GPU
FORWARD_NS = 6_000_000                # one micro-batch's forward on one stage
COMPUTE_STREAM = 7
DP_STREAM = 13
P2P_STREAM = 17                       # + 4 per peer, in the order of first use

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_" \
       "execute_segment_k_off_kernel__5x_cublas"
LN_FWD = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, " \
         "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, " \
         "float*, float*, c10::BFloat16*)"
LN_BWD = "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<" \
         "c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, " \
         "float const*, c10::BFloat16 const*, c10::BFloat16*, int)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<" \
      "c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<" \
      "c10::BFloat16>, at::detail::Array<char*, 3>)"
GELU = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(" \
       "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::" \
       "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::" \
       "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::" \
       "operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"
GELU_BWD = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous " \
           "namespace)::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::" \
           "GeluType)::{lambda()#2}::operator()() const::{lambda(c10::BFloat16, " \
           "c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, ...)"
FLASH_FWD = "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, " \
            "cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>" \
            "(Flash_fwd_params)"
FLASH_BWD = "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, " \
            "64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, true, false, false, " \
            "false, false, true, false>(Flash_bwd_params)"
L2NORM = "void multi_tensor_apply_kernel<TensorListMetadata<1>, L2NormFunctor<float>, float*, " \
         "float*, bool, int>(long, int volatile*, TensorListMetadata<1>, L2NormFunctor<float>, " \
         "float*, float*, bool, int)"
ADAM = "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, " \
       "float, float, float, float, adamMode_t, float>(long, int volatile*, " \
       "TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, " \
       "adamMode_t, float)"
MEMSET = "Memset (Device)"
MEMCPY = "Memcpy DtoH (Device -> Pinned)"

# One transformer layer: (kernel, cpu_op, relative cost), repeated to fill an op.
FORWARD_PATTERN = [(LN_FWD, "aten::native_layer_norm", 1.0), (GEMM, "aten::mm", 6.0),
                   (FLASH_FWD, "FlashAttnFunc", 8.0), (GEMM, "aten::mm", 3.0),
                   (ADD, "aten::add", 1.0), (LN_FWD, "aten::native_layer_norm", 1.0),
                   (GEMM, "aten::mm", 10.0), (GELU, "aten::gelu", 1.5),
                   (GEMM, "aten::mm", 10.0), (ADD, "aten::add", 1.0)]
BACKWARD_PATTERN = [(ADD, "aten::add_", 1.0), (GEMM, "aten::mm", 10.0), (GEMM, "aten::mm", 10.0),
                    (GELU_BWD, "aten::gelu_backward", 1.5), (GEMM, "aten::mm", 10.0),
                    (GEMM, "aten::mm", 10.0), (LN_BWD, "aten::native_layer_norm_backward", 1.5),
                    (GEMM, "aten::mm", 3.0), (GEMM, "aten::mm", 3.0),
                    (FLASH_BWD, "FlashAttnFuncBackward", 16.0), (GEMM, "aten::mm", 6.0),
                    (GEMM, "aten::mm", 6.0), (LN_BWD, "aten::native_layer_norm_backward", 1.5)]

NCCL_NAMES = {
    "new": {"p2p": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
            "allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"},
    "old": {"p2p": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)",
            "allreduce": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"},
}
# Launch calls: (name, cat, cbid).
LAUNCH_KERNEL = ("cudaLaunchKernel", "cuda_runtime", 211)
LAUNCH_EX = ("cuLaunchKernelEx", "cuda_driver", 652)
MEMSET_ASYNC = ("cudaMemsetAsync", "cuda_runtime", 51)
MEMCPY_ASYNC = ("cudaMemcpyAsync", "cuda_runtime", 41)

ACTIVATION_NELEMS = 4096 * 1 * 8192    # seq x micro-batch x hidden, bf16
PARAMETERS = 1_200_000_000             # gradients all-reduced per stage (fp32), split over chunks


def host_pid(g):
    """The process id of rank g (its main thread's id too)."""
    return 2_900_000 + 131 * g


def us_text(ns):
    """ns -> microseconds with exactly three decimals (exact, no float)."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------

class Layout:
    """Megatron's order pp, dp (pp outermost): g = d + D p; machines in blocks."""

    def __init__(self, pp, dp, chunks, machines):
        self.pp, self.dp, self.chunks, self.machines = pp, dp, chunks, machines
        self.world = pp * dp
        if machines < 1 or self.world % machines:
            raise ValueError(f"--machines {machines} must divide pp x dp = {self.world}")
        self.per_machine = self.world // machines

    def rank(self, stage, replica):
        return replica + self.dp * stage

    def stage(self, g):
        return g // self.dp

    def replica(self, g):
        return g % self.dp

    def machine(self, g):
        return g // self.per_machine

    def device(self, g):
        return g % self.per_machine

    def pp_group(self, replica):
        ranks = [self.rank(p, replica) for p in range(self.pp)]
        return str(1 + self.pp + replica), "PIPELINE_MODEL_PARALLEL_GROUP", ranks

    def dp_group(self, stage):
        ranks = [self.rank(stage, d) for d in range(self.dp)]
        return str(1 + stage), "DATA_PARALLEL_GROUP", ranks


# ---------------------------------------------------------------------------
# Schedules: Megatron's call sequences, per stage
# ---------------------------------------------------------------------------

def p2p_call(stage, pp, send_next=False, recv_prev=False, send_prev=False, recv_next=False):
    """One _communicate call: its isend/irecv in Megatron's _p2p_ops order.
    Ops: (op, peer stage, what)."""
    prev, nxt = (stage - 1) % pp, (stage + 1) % pp
    want = {"send_next": send_next, "recv_prev": recv_prev, "send_prev": send_prev,
            "recv_next": recv_next}
    op = {"send_next": ("send", nxt, "activation"), "recv_prev": ("recv", prev, "activation"),
          "send_prev": ("send", prev, "gradient"), "recv_next": ("recv", nxt, "gradient")}
    order = (("send_next", "recv_prev", "send_prev", "recv_next") if stage % 2 == 0
             else ("recv_prev", "send_next", "recv_next", "send_prev"))
    ops = [op[k] for k in order if want[k]]
    return ("call", ops) if ops else None


def schedule_1f1b(stage, pp, m):
    """forward_backward_pipelining_without_interleaving."""
    first, last = stage == 0, stage == pp - 1
    acts = []

    def call(**kw):
        c = p2p_call(stage, pp, **kw)
        if c:
            acts.append(c)

    warm = min(pp - stage - 1, m)
    rem = m - warm
    for i in range(warm):
        if not first:
            call(recv_prev=True)                       # recv_forward
        acts.append(("forward", 0, i))
        if not last:
            call(send_next=True)                       # send_forward
    if rem > 0 and not first:
        call(recv_prev=True)                           # recv_forward
    for i in range(rem):
        acts.append(("forward", 0, warm + i))
        if not last:
            call(send_next=True, recv_next=True)       # send_forward_recv_backward
        acts.append(("backward", 0, i))
        if not first:
            if i == rem - 1:
                call(send_prev=True)                   # send_backward
            else:
                call(send_prev=True, recv_prev=True)   # send_backward_recv_forward
    for i in range(warm):
        if not last:
            call(recv_next=True)                       # recv_backward
        acts.append(("backward", 0, rem + i))
        if not first:
            call(send_prev=True)                       # send_backward
    return acts


def schedule_interleaved(stage, pp, m, v):
    """forward_backward_pipelining_with_interleaving (overlap_p2p_comm off)."""
    total = m * v
    first_rank, last_rank = stage == 0, stage == pp - 1
    acts = []

    def call(**kw):
        c = p2p_call(stage, pp, **kw)
        if c:
            acts.append(c)

    def chunk_id(k, forward):
        c = (k % (pp * v)) // pp
        return c if forward else v - c - 1

    def micro_batch(k):
        return (k // (pp * v)) * pp + k % pp

    def first_virtual(c):
        return first_rank and c == 0

    def last_virtual(c):
        return last_rank and c == v - 1

    all_warmup = m == pp
    warm = total if all_warmup else min((pp - stage - 1) * 2 + (v - 1) * pp, total)
    rem = total - warm
    if not first_virtual(0):
        call(recv_prev=True)                           # recv_forward (chunk 0)
    for k in range(warm):
        c = chunk_id(k, True)
        acts.append(("forward", c, micro_batch(k)))
        recv_prev = True
        if first_rank and chunk_id(k + 1, True) == 0:
            recv_prev = False
        if k == total - 1:
            recv_prev = False
        send_next = not last_virtual(c)
        if k == warm - 1 and not all_warmup:
            call(send_next=send_next, recv_prev=recv_prev, recv_next=not last_rank)
        else:
            call(send_next=send_next, recv_prev=recv_prev)
    for k in range(rem):
        fk = k + warm
        fc, bc = chunk_id(fk, True), chunk_id(k, False)
        acts.append(("forward", fc, micro_batch(fk)))
        acts.append(("backward", bc, micro_batch(k)))
        recv_prev = True
        if first_rank and chunk_id(fk - (pp - 1), True) == v - 1:
            recv_prev = False
        recv_next = True
        if last_rank and chunk_id(k - (pp - 1), False) == 0:
            recv_next = False
        if k == rem - 1:
            recv_prev = False
        call(send_next=not last_virtual(fc), send_prev=not first_virtual(bc),
             recv_prev=recv_prev, recv_next=recv_next)
    if all_warmup and not last_rank:
        call(recv_next=True)                           # recv_backward
    for k in range(rem, total):
        bc = chunk_id(k, False)
        acts.append(("backward", bc, micro_batch(k)))
        recv_next = True
        if last_rank and chunk_id(k + 1, False) == v - 1:
            recv_next = False
        if k == total - 1:
            recv_next = False
        call(send_prev=not first_virtual(bc), recv_next=recv_next)
    return acts


def stage_program(args, lay, stage):
    if lay.pp == 1:
        acts = []
        for i in range(args.micro_batches):
            acts += [("forward", 0, i), ("backward", 0, i)]
        return acts
    if args.schedule == "1f1b":
        return schedule_1f1b(stage, lay.pp, args.micro_batches)
    return schedule_interleaved(stage, lay.pp, args.micro_batches, lay.chunks)


def check_programs(lay, programs):
    """Every directed stage pair posts as many sends as the receiver posts recvs."""
    sends, recvs = {}, {}
    for stage, acts in programs.items():
        for a in acts:
            if a[0] == "call":
                for op, peer, _ in a[1]:
                    if op == "send":
                        sends[(stage, peer)] = sends.get((stage, peer), 0) + 1
                    else:
                        recvs[(peer, stage)] = recvs.get((peer, stage), 0) + 1
    if sends != recvs:
        raise RuntimeError(f"schedule posts unmatched p2p: sends {sends}, recvs {recvs}")


# ---------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------

class Message:
    """One communication: the kernels of its members, matched."""
    __slots__ = ("key", "members", "items", "transfer", "comms_id", "t0")

    def __init__(self, key, members, transfer, comms_id):
        self.key, self.members, self.transfer, self.comms_id = key, members, transfer, comms_id
        self.items = {}
        self.t0 = None


class Item:
    """One GPU activity and its launch."""
    __slots__ = ("cat", "name", "stream", "start", "end", "corr", "ext", "step", "launch_ts",
                 "launch_dur", "launch", "tid", "msg", "jitter", "comm", "grid", "block")

    def __init__(self, cat, name, stream, step, tid):
        self.cat, self.name, self.stream, self.step, self.tid = cat, name, stream, step, tid
        self.start = self.end = None
        self.msg = self.comm = None


class Rank:
    def __init__(self, g):
        self.g = g
        self.items = []          # GPU activities in launch order
        self.cpu = []            # (ts, end, depth, cat, name, tid, ext, args_text)
        self.runtime = []        # (ts, dur, name, cbid, corr, ext, tid): non-launch calls
        self.spans = []          # (step, start, end)
        self.done = False


class Simulation:
    def __init__(self, args, lay):
        self.args, self.lay = args, lay
        self.messages = {}
        self.ids = set()
        programs = {p: stage_program(args, lay, p) for p in range(lay.pp)}
        check_programs(lay, programs)
        self.programs = programs
        self.ranks = {g: Rank(g) for g in range(lay.world)}

    def message(self, key, members, transfer_range):
        msg = self.messages.get(key)
        if msg is None:
            rng = random.Random(f"kernel_run:{self.args.seed}:msg:{key}")
            lo, hi = transfer_range
            transfer = rng.randint(lo, hi)
            cid = rng.getrandbits(64)
            while cid in self.ids or cid == 0:
                cid = rng.getrandbits(64)
            self.ids.add(cid)
            msg = Message(key, members, transfer, cid)
            self.messages[key] = msg
        return msg

    def join(self, msg, g, item):
        msg.items[g] = item
        if len(msg.items) == len(msg.members):
            msg.t0 = max(it.start for it in msg.items.values())
            for it in msg.items.values():
                it.end = msg.t0 + msg.transfer + it.jitter

    def run(self):
        procs = {g: self.process(g) for g in self.ranks}
        progress = {g: -1 for g in procs}
        while procs:
            moved = False
            for g in list(procs):
                try:
                    n = next(procs[g])
                except StopIteration:
                    del procs[g]
                    moved = True
                    continue
                if n != progress[g]:
                    progress[g] = n
                    moved = True
            if not moved:
                raise RuntimeError("the schedule deadlocks: ranks " +
                                   ", ".join(str(g) for g in sorted(procs)) + " wait forever")

    def process(self, g):
        """Rank g's CPU and GPU, as a generator that yields (its item count) when
        it waits for another rank's kernel."""
        args, lay = self.args, self.lay
        rank = self.ranks[g]
        rng = random.Random(f"kernel_run:{args.seed}:rank:{g}")
        stage, replica = lay.stage(g), lay.replica(g)
        v = lay.chunks
        n_kernels = args.kernels_per_op
        names = NCCL_NAMES[args.nccl_names]
        comm_launch = LAUNCH_EX if args.nccl_names == "new" else LAUNCH_KERNEL
        pp_name, pp_desc, pp_ranks = lay.pp_group(replica)
        dp_name, dp_desc, dp_ranks = lay.dp_group(stage)
        main_tid = host_pid(g)
        grad_tid = main_tid + 13
        items, starts = rank.items, []
        state = {"cpu": ORIGIN_NS + rng.randint(0, 300_000), "corr": 1, "ext": 100,
                 "compute_free": ORIGIN_NS, "step": None}
        streams = {}          # stream -> last item on it
        peer_stream = {}      # peer rank -> stream id
        sent, received = {}, {}
        allreduces = [0]
        stage_factor = 1.0 + (0.04 if stage == 0 else 0.0) + (0.10 if stage == lay.pp - 1 else 0.0)

        def next_ext():
            state["ext"] += 1
            return state["ext"]

        def launch_slot():
            """The CPU may run at most QUEUE launches ahead of the GPU."""
            if len(starts) >= QUEUE:
                state["cpu"] = max(state["cpu"], starts[-QUEUE] + rng.randint(1_000, 3_000))

        def compute(cat, name, dur, tid, op_name, launch=LAUNCH_KERNEL, barrier=0):
            launch_slot()
            ext = next_ext()
            op_ts = state["cpu"] + rng.randint(300, 1_500)
            it = Item(cat, name, COMPUTE_STREAM, state["step"], tid)
            it.launch = launch
            it.launch_ts = op_ts + rng.randint(500, 1_500)
            it.launch_dur = rng.randint(2_500, 5_000)
            it.corr = state["corr"]
            state["corr"] += 1
            it.ext = ext
            it.start = max(it.launch_ts + rng.randint(2_500, 4_500),
                           state["compute_free"] + rng.randint(300, 2_500), barrier)
            it.end = it.start + max(1_000, dur)
            state["compute_free"] = it.end
            op_end = it.launch_ts + it.launch_dur + rng.randint(500, 1_000)
            rank.cpu.append((op_ts, op_end, 1, "cpu_op", op_name, tid, ext, ""))
            state["cpu"] = op_end + rng.randint(500, 2_000)
            items.append(it)
            starts.append(it.start)
            return it

        def op_kernels(kind, chunk):
            pattern = FORWARD_PATTERN if kind == "forward" else BACKWARD_PATTERN
            total = FORWARD_NS * (2 if kind == "backward" else 1) * stage_factor / v
            total *= rng.uniform(0.96, 1.04)
            picks = [pattern[i % len(pattern)] for i in range(n_kernels)]
            weights = [w * rng.uniform(0.7, 1.3) for _, _, w in picks]
            scale = total / sum(weights)
            tid = main_tid if kind == "forward" else grad_tid
            for (name, op_name, _), w in zip(picks, weights):
                compute("kernel", name, int(w * scale), tid, op_name)

        def comm(coll, peer, group, stream, key, members, transfer_range, nelems, dtype):
            """Launch one NCCL kernel (record_param_comms around it); its start."""
            launch_slot()
            gname, gdesc, granks = group
            msg = self.message(key, members, transfer_range)
            meta = {"Collective name": coll, "In msg nelems": nelems, "Out msg nelems": nelems,
                    "Group size": len(granks), "dtype": dtype, "In split size": "[]",
                    "Out split size": "[]", "Process Group Name": gname,
                    "Process Group Ranks": "[" + ", ".join(map(str, granks)) + "]"}
            if not args.no_group_descriptions:
                meta["Process Group Description"] = gdesc
            if coll == "send":
                meta["Dst Rank"] = peer
            elif coll == "recv":
                meta["Src Rank"] = peer
            if not args.no_comms_id:
                meta["Comms Id"] = msg.comms_id
            meta_text = json.dumps(meta, separators=(", ", ": "))[1:-1]
            cpu0 = state["cpu"]
            rpc_ext, anno_ext, ext = next_ext(), next_ext(), next_ext()
            anno_ts = cpu0 + rng.randint(3_000, 6_000)
            ev_ts = anno_ts + rng.randint(4_000, 8_000)
            ev_dur = rng.randint(1_500, 3_000)
            rank.runtime.append((ev_ts, ev_dur, "cudaEventRecord", 135, state["corr"], ext,
                                 main_tid))
            state["corr"] += 1
            it = Item("kernel", names["p2p" if coll in ("send", "recv") else "allreduce"],
                      stream, state["step"], main_tid)
            it.launch = comm_launch
            it.launch_ts = ev_ts + ev_dur + rng.randint(2_000, 4_000)
            it.launch_dur = rng.randint(6_000, 14_000)
            it.corr = state["corr"]
            state["corr"] += 1
            it.ext = ext
            it.jitter = rng.randint(0, 3_000)
            it.comm = meta_text
            it.msg = msg
            anno_end = it.launch_ts + it.launch_dur + rng.randint(2_000, 4_000)
            rpc_end = anno_end + rng.randint(10_000, 25_000)
            name = {"send": "nccl:send", "recv": "nccl:recv", "allreduce": "nccl:all_reduce"}[coll]
            rank.cpu.append((cpu0, rpc_end, 1, "cpu_op", "record_param_comms", main_tid, rpc_ext,
                             ", " + meta_text))
            rank.cpu.append((anno_ts, anno_end, 2, "user_annotation", name, main_tid, anno_ext, ""))
            state["cpu"] = rpc_end + rng.randint(2_000, 6_000)
            items.append(it)
            return it, msg

        def place(it, msg):
            """The kernel's GPU start (its stream free, the compute before it done)."""
            last = streams.get(it.stream)
            while last is not None and last.end is None:
                yield len(items)
            free = last.end + rng.randint(1_000, 2_000) if last is not None else 0
            it.start = max(it.launch_ts + rng.randint(3_000, 6_000), free, state["compute_free"])
            streams[it.stream] = it
            starts.append(it.start)
            self.join(msg, g, it)

        def wait_all(call_items):
            while any(it.end is None for it in call_items):
                yield len(items)
            barrier = max(it.end for it in call_items) + rng.randint(1_000, 3_000)
            state["compute_free"] = max(state["compute_free"], barrier)

        def machine_of(peer):
            return lay.machine(peer) == lay.machine(g)

        for k in range(args.steps):
            step = args.first_step + k
            state["step"] = step
            span_start = state["cpu"]
            state["cpu"] += rng.randint(300_000, 900_000)          # data loading
            compute("gpu_memset", MEMSET, rng.randint(30_000, 60_000), main_tid, "aten::zero_",
                    launch=MEMSET_ASYNC)
            for act in self.programs[stage]:
                if act[0] in ("forward", "backward"):
                    op_kernels(act[0], act[1])
                    continue
                call_items = []
                for op, peer_stage, _ in act[1]:
                    peer = lay.rank(peer_stage, replica)
                    if peer not in peer_stream:
                        peer_stream[peer] = P2P_STREAM + 4 * len(peer_stream)
                    if op == "send":
                        n = sent.get(peer, 0)
                        sent[peer] = n + 1
                        key = (g, peer, n)
                    else:
                        n = received.get(peer, 0)
                        received[peer] = n + 1
                        key = (peer, g, n)
                    near = machine_of(peer)
                    it, msg = comm(op, peer, (pp_name, pp_desc, pp_ranks),
                                   peer_stream[peer], key, (key[0], key[1]),
                                   (60_000, 120_000) if near else (250_000, 450_000),
                                   ACTIVATION_NELEMS, "BFloat16")
                    yield from place(it, msg)
                    call_items.append(it)
                yield from wait_all(call_items)
            if lay.dp > 1:
                near = all(lay.machine(r) == lay.machine(g) for r in dp_ranks)
                lo, hi = (3_000_000, 5_000_000) if near else (8_000_000, 12_000_000)
                call_items = []
                for c in range(v):
                    key = ("allreduce", stage, allreduces[0])
                    allreduces[0] += 1
                    it, msg = comm("allreduce", None, (dp_name, dp_desc, dp_ranks),
                                   DP_STREAM, key, tuple(dp_ranks), (lo // v, hi // v),
                                   PARAMETERS // (lay.pp * v), "Float")
                    yield from place(it, msg)
                    call_items.append(it)
                yield from wait_all(call_items)
            # Gradient norm: a few kernels, a copy to the host and a synchronize.
            for _ in range(4):
                compute("kernel", L2NORM, rng.randint(15_000, 30_000), main_tid,
                        "aten::_foreach_norm")
            cp = compute("gpu_memcpy", MEMCPY, rng.randint(1_500, 3_000), main_tid,
                         "aten::_local_scalar_dense", launch=MEMCPY_ASYNC)
            sync_ts = state["cpu"]
            sync_end = max(sync_ts + rng.randint(2_000, 4_000), cp.end + rng.randint(5_000, 15_000))
            ext = next_ext()
            rank.cpu.append((sync_ts - 200, sync_end + 500, 1, "cpu_op", "aten::item", main_tid,
                             ext, ""))
            rank.runtime.append((sync_ts, sync_end - sync_ts, "cudaStreamSynchronize", 131,
                                 state["corr"], ext, main_tid))
            state["corr"] += 1
            state["cpu"] = sync_end + rng.randint(5_000, 20_000)
            # Optimizer: its kernels run mostly after the step's span has closed.
            opt_start = state["cpu"]
            state["cpu"] += rng.randint(5_000, 10_000)
            for _ in range(max(8, n_kernels // 4)):
                compute("kernel", ADAM, rng.randint(25_000, 40_000), main_tid,
                        "aten::_fused_adam_")
            opt_end = state["cpu"] + rng.randint(2_000, 5_000)
            rank.cpu.append((opt_start, opt_end, 1, "user_annotation",
                             "Optimizer.step#FusedAdam.step", main_tid, next_ext(), ""))
            state["cpu"] = opt_end + rng.randint(10_000, 30_000)
            rank.spans.append((step, span_start, state["cpu"]))
            yield len(items)
        # The last span ends a little after its last launch.
        s, a, b = rank.spans[-1]
        rank.spans[-1] = (s, a, b + 20_000)
        rank.done = True


# ---------------------------------------------------------------------------
# The truth: the kernel view from the true times
# ---------------------------------------------------------------------------

def merge(intervals):
    out = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return out


def clip(merged, lo, hi):
    out = []
    for a, b in merged:
        if b <= lo:
            continue
        if a >= hi:
            break
        a, b = max(a, lo), min(b, hi)
        if b > a:
            out.append([a, b])
    return out


def length(merged):
    return sum(b - a for a, b in merged)


def overlap(x, y):
    """Length of the intersection of two merged lists."""
    i = j = total = 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if b > a:
            total += b - a
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return total


def minus(x, y):
    """x without y, both merged lists."""
    out = []
    j = 0
    for a, b in x:
        while j < len(y) and y[j][1] <= a:
            j += 1
        k, cur = j, a
        while k < len(y) and y[k][0] < b:
            if y[k][0] > cur:
                out.append([cur, y[k][0]])
            cur = max(cur, y[k][1])
            k += 1
        if cur < b:
            out.append([cur, b])
    return out


def blame_left_wait(waits, left):
    """{peer: ns}: every instant of `left` (the wait that precedence leaves, merged)
    goes to the peer that ends the latest-ending wait part holding it (ties: the
    lowest peer); `waits` are (start, end, peer), sorted."""
    blame = {}
    for a, b in left:
        holding = [w for w in waits if w[0] < b and w[1] > a]
        cuts = sorted({a, b} | {x for s, e, _ in holding for x in (s, e) if a < x < b})
        for lo, hi in zip(cuts, cuts[1:]):
            here = [(e, p) for s, e, p in holding if s <= lo and e >= hi]
            if not here:
                continue
            end = max(e for e, _ in here)
            by = min(p for e, p in here if e == end)
            blame[by] = blame.get(by, 0) + hi - lo
    return blame


def is_comm(it):
    return it.cat == "kernel" and it.name.startswith("nccl")


def kernel_view(sim, paths):
    lay = sim.lay
    ranks = sorted(sim.ranks)
    # Per rank: compute union, transfer parts, wait parts (with the peer ending each).
    per = {}
    first, last = {}, {}
    gpu_activities = comm_kernels = without_peers = 0
    for g in ranks:
        compute, transfer, waits = [], [], []
        for it in sim.ranks[g].items:
            gpu_activities += 1
            if it.step is not None:
                key = (it.step, g)
                first[key] = min(first.get(key, it.start), it.start)
                last[key] = max(last.get(key, it.end), it.end)
            if not is_comm(it):
                compute.append((it.start, it.end))
                continue
            comm_kernels += 1
            peers = [(p, o) for p, o in it.msg.items.items() if p != g]
            if not peers:
                without_peers += 1
                transfer.append((it.start, it.end))
                continue
            latest = max(o.start for _, o in peers)
            by = min(p for p, o in peers if o.start == latest)
            t = min(it.end, max(it.start, latest))
            transfer.append((t, it.end))
            if t > it.start:
                waits.append((it.start, t, by))
        per[g] = (merge(compute), merge(transfer), sorted(waits))
    numbers = sorted({s for s, _ in first})
    windows = []
    prev_end = None
    for n in numbers:
        have = [g for g in ranks if (n, g) in first]
        s = min(first[(n, g)] for g in have)
        if prev_end is not None:
            s = max(s, prev_end)
        e = max(last[(n, g)] for g in have)
        e = max(e, s)
        windows.append({"step": n, "complete": len(have) == len(ranks), "start_ns": s,
                        "end_ns": e})
        prev_end = e
    out_ranks = []
    totals = dict.fromkeys(("window_ns", "compute_ns", "transfer_ns", "wait_ns", "idle_ns"), 0)
    for i, g in enumerate(ranks):
        c_all, t_all, w_list = per[g]
        w_all = merge([(a, b) for a, b, _ in w_list])
        ct_all = merge([tuple(x) for x in c_all] + [tuple(x) for x in t_all])
        rt = dict.fromkeys(totals, 0)
        blamed_total = {}  # over the complete steps in which the rank waited
        steps = []
        for w in windows:
            lo, hi = w["start_ns"], w["end_ns"]
            c = clip(c_all, lo, hi)
            t = clip(t_all, lo, hi)
            wt = clip(w_all, lo, hi)
            compute = length(c)
            transfer = length(t) - overlap(t, c)
            wait = length(wt) - overlap(wt, clip(ct_all, lo, hi))
            window = hi - lo
            idle = window - compute - transfer - wait
            blame = blame_left_wait(w_list, minus(wt, clip(ct_all, lo, hi)))
            most = None
            if wait > 0 and blame:
                top = max(blame.values())
                most = min(p for p, x in blame.items() if x == top)
            entry = {"step": w["step"], "complete": w["complete"], "start_ns": lo, "end_ns": hi,
                     "window_ns": window, "compute_ns": compute, "transfer_ns": transfer,
                     "wait_ns": wait, "idle_ns": idle, "most_waited_on": most}
            steps.append(entry)
            if w["complete"]:
                for key in rt:
                    rt[key] += entry[key]
                if wait > 0:
                    for p, x in blame.items():
                        blamed_total[p] = blamed_total.get(p, 0) + x
        most_overall = None
        if blamed_total:
            top = max(blamed_total.values())
            most_overall = min(p for p, x in blamed_total.items() if x == top)
        for key in totals:
            totals[key] += rt[key]
        out_ranks.append({"device": i, "global_rank": g, "rank_source": "distributed_info",
                          "path": paths[g], **rt,
                          "most_waited_on": most_overall, "steps": steps})
    win = totals["window_ns"]

    def ratio(x):
        return x / win if win else 0.0

    return {"ranks": out_ranks, "steps": windows, **totals,
            "bubble_ratio": ratio(win - totals["compute_ns"]),
            "idle_share": ratio(totals["idle_ns"]), "wait_share": ratio(totals["wait_ns"]),
            "transfer_share": ratio(totals["transfer_ns"]),
            "comm_kernels": comm_kernels, "comm_kernels_without_peers": without_peers,
            "gpu_activities": gpu_activities, "step_spans": True,
            "without_launch": 0}  # every activity is written with its launch


# ---------------------------------------------------------------------------
# Writing the traces
# ---------------------------------------------------------------------------

def rank_text(sim, g, offset_ns):
    """Rank g's trace in Kineto's write order, its clock offset_ns ahead."""
    args, lay = sim.args, sim.lay
    rank = sim.ranks[g]
    dev = lay.device(g)
    pid = host_pid(g)
    shift = offset_ns - BASE_NS

    def ts(ns):
        return us_text(ns + shift)

    parts = ['{\n  "schemaVersion": 1,\n  "deviceProperties": [\n']
    parts.append(",\n".join(
        f'    {{"id": {i}, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045183744, '
        f'"computeMajor": 9, "computeMinor": 0, "numSms": 132}}'
        for i in range(lay.per_machine)))
    parts.append("\n  ],\n")
    parts.append(f'  "distributedInfo": {{"backend": "nccl", "rank": {g}, "world_size": '
                 f'{lay.world}, "nccl_version": '
                 f'"{"2.21.5" if args.nccl_names == "new" else "2.10.3"}"}},\n')
    parts.append('  "traceEvents": [\n')
    events = []
    # CPU events: ProfilerStep spans, cpu_ops, annotations; in time order.
    cpu = [(a, 0, b, "user_annotation", f"ProfilerStep#{s}", pid, 1 + n, "")
           for n, (s, a, b) in enumerate(rank.spans)]
    cpu += [(a, d, b, cat, name, tid, ext, extra)
            for a, b, d, cat, name, tid, ext, extra in rank.cpu]
    cpu.sort(key=lambda e: (e[0], e[1]))
    names = {}

    def q(name):
        t = names.get(name)
        if t is None:
            t = names[name] = json.dumps(name)
        return t

    for a, _, b, cat, name, tid, ext, extra in cpu:
        events.append(f'{{"ph": "X", "cat": "{cat}", "name": {q(name)}, "pid": {pid}, '
                      f'"tid": {tid}, "ts": {ts(a)}, "dur": {us_text(b - a)}, '
                      f'"args": {{"External id": {ext}{extra}}}}}')
    # Runtime / driver calls and GPU activities, in time order.
    gpu = []
    for it in rank.items:
        lname, lcat, cbid = it.launch
        lt = ts(it.launch_ts)
        gpu.append((it.launch_ts, 0,
                    f'{{"ph": "X", "cat": "{lcat}", "name": "{lname}", "pid": {pid}, '
                    f'"tid": {it.tid}, "ts": {lt}, "dur": {us_text(it.launch_dur)}, '
                    f'"args": {{"External id": {it.ext}, "cbid": {cbid}, '
                    f'"correlation": {it.corr}}}}}'))
        gpu.append((it.launch_ts, 1,
                    f'{{"ph": "s", "id": {it.corr}, "pid": {pid}, "tid": {it.tid}, '
                    f'"ts": {lt}, "cat": "ac2g", "name": "ac2g"}}'))
        kt = ts(it.start)
        if it.cat == "kernel":
            extra = (f', {it.comm}' if it.comm is not None else "")
            shape = ('"grid": [24, 1, 1], "block": [544, 1, 1]' if it.comm is not None
                     else '"grid": [132, 1, 1], "block": [256, 1, 1]')
            body = (f'"registers per thread": {96 if it.comm is not None else 128}, '
                    f'{shape}{extra}')
        else:
            body = f'"bytes": {4 if it.cat == "gpu_memcpy" else 268435456}'
        gpu.append((it.start, 2,
                    f'{{"ph": "X", "cat": "{it.cat}", "name": {q(it.name)}, "pid": {dev}, '
                    f'"tid": {it.stream}, "ts": {kt}, "dur": {us_text(it.end - it.start)}, '
                    f'"args": {{"External id": {it.ext}, "queued": 0, "device": {dev}, '
                    f'"context": 1, "stream": {it.stream}, "correlation": {it.corr}, {body}}}}}'))
        gpu.append((it.start, 3,
                    f'{{"ph": "f", "id": {it.corr}, "pid": {dev}, "tid": {it.stream}, '
                    f'"ts": {kt}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}'))
    for a, d, name, cbid, corr, ext, tid in rank.runtime:
        gpu.append((a, 0,
                    f'{{"ph": "X", "cat": "cuda_runtime", "name": "{name}", "pid": {pid}, '
                    f'"tid": {tid}, "ts": {ts(a)}, "dur": {us_text(d)}, '
                    f'"args": {{"External id": {ext}, "cbid": {cbid}, "correlation": {corr}}}}}'))
    gpu.sort(key=lambda e: (e[0], e[1]))
    events.extend(e[2] for e in gpu)
    # Metadata.
    t0 = ts(rank.spans[0][1])
    meta = [("process_name", pid, 0, '{"name": "python3"}'),
            ("process_labels", pid, 0, '{"labels": "CPU"}'),
            ("process_name", dev, 0, '{"name": "python3"}'),
            ("process_labels", dev, 0, f'{{"labels": "GPU {dev}"}}')]
    for stream in sorted({it.stream for it in rank.items}):
        meta.append(("thread_name", dev, stream, f'{{"name": "stream {stream} "}}'))
    main_tid = pid
    meta.append(("thread_name", pid, main_tid, f'{{"name": "thread {main_tid} (pt_main_thread)"}}'))
    meta.append(("thread_name", pid, main_tid + 13,
                 f'{{"name": "thread {main_tid + 13} (pt_autograd_{dev})"}}'))
    for name, p, tid, a in meta:
        events.append(f'{{"name": "{name}", "ph": "M", "ts": {t0}, "pid": {p}, "tid": {tid}, '
                      f'"args": {a}}}')
    parts.append(",\n".join(events))
    parts.append("\n  ],\n")
    parts.append(f'  "traceName": "rank{g}.pt.trace.json", "displayTimeUnit": "ms",\n'
                 f'  "baseTimeNanoseconds": {BASE_NS}\n}}\n')
    return "".join(parts)


def offset_ns(args):
    x = Decimal(str(args.clock_offset_us)) * 1000
    if x != x.to_integral_value():
        raise ValueError("--clock-offset-us must be a whole number of ns")
    return int(x)


def generate(args):
    if args.schedule == "interleaved":
        chunks = args.chunks if args.chunks is not None else 2
        if chunks < 2:
            raise ValueError("--schedule interleaved needs --chunks >= 2")
        if args.pp < 2:
            raise ValueError("--schedule interleaved needs --pp >= 2")
        if args.micro_batches % args.pp:
            raise ValueError("interleaved: --micro-batches must be a multiple of --pp "
                             "(as Megatron requires)")
    else:
        chunks = args.chunks if args.chunks is not None else 1
        if chunks != 1:
            raise ValueError("--chunks applies to --schedule interleaved only")
    if min(args.pp, args.dp, args.micro_batches, args.steps, args.kernels_per_op) < 1:
        raise ValueError("--pp, --dp, --micro-batches, --steps, --kernels-per-op must be >= 1")
    lay = Layout(args.pp, args.dp, chunks, args.machines)
    began = time.monotonic()
    sim = Simulation(args, lay)
    sim.run()
    out = Path(args.output)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    step_ns = offset_ns(args)
    offsets, paths, files = {}, {}, []
    for g in range(lay.world):
        offsets[g] = lay.machine(g) * step_ns
        name = f"rank{g}.pt.trace.json" + (".gz" if args.gz else "")
        if args.machine_folders:
            name = f"machine{lay.machine(g)}/{name}"
            (out / name).parent.mkdir(exist_ok=True)
        paths[g] = str(out / name)
        text = rank_text(sim, g, offsets[g]).encode()
        data = gzip.compress(text, compresslevel=6, mtime=0) if args.gz else text
        (out / name).write_bytes(data)
        files.append({"path": name, "rank": g, "bytes": len(text), "file_bytes": len(data)})
    view = kernel_view(sim, paths)
    truth = {
        "kernel_view": view,
        "clock_offsets_ns": {str(g): offsets[g] for g in range(lay.world)},
        "layout": {"pp": lay.pp, "dp": lay.dp, "chunks": lay.chunks, "machines": lay.machines,
                   "order": "pp,dp", "schedule": args.schedule,
                   "micro_batches": args.micro_batches, "steps": args.steps,
                   "first_step": args.first_step, "kernels_per_op": args.kernels_per_op,
                   "comms_id": not args.no_comms_id, "nccl_names": args.nccl_names,
                   "base_ns": BASE_NS,
                   "ranks": [{"global_rank": g, "stage": lay.stage(g), "replica": lay.replica(g),
                              "machine": lay.machine(g), "device": lay.device(g)}
                             for g in range(lay.world)]},
        "files": files,
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    truth["seconds"] = round(time.monotonic() - began, 3)
    return truth


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--pp", type=int, default=4)
    p.add_argument("--dp", type=int, default=2)
    p.add_argument("--micro-batches", type=int, default=8)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--schedule", default="1f1b", choices=("1f1b", "interleaved"))
    p.add_argument("--chunks", type=int, default=None,
                   help="model chunks per rank (interleaved; default 2)")
    p.add_argument("--machines", type=int, default=1,
                   help="machines, each a contiguous block of ranks")
    p.add_argument("--machine-folders", action="store_true",
                   help="write machine m's traces into DIR/machine{m}/ (as a cluster's "
                        "folders are gathered), so that a reader knows which ranks share a clock")
    p.add_argument("--clock-offset-us", default="0",
                   help="machine m writes its timestamps m times this far ahead (us)")
    p.add_argument("--no-comms-id", action="store_true", help="leave out \"Comms Id\"")
    p.add_argument("--nccl-names", default="new", choices=("old", "new"))
    p.add_argument("--no-group-descriptions", action="store_true",
                   help="leave out \"Process Group Description\" (PyTorch before 2.2 writes "
                        "none, and the group names are numbers): the layout then comes from "
                        "who sends to whom")
    p.add_argument("--kernels-per-op", type=int, default=120,
                   help="compute kernels per forward / backward of a micro-batch (and chunk)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--first-step", type=int, default=0, help="N of the first ProfilerStep#N")
    p.add_argument("--gz", action="store_true", help="gzip the traces")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        truth = generate(args)
    except (ValueError, RuntimeError) as e:
        print(f"kernel_run.py: {e}", file=sys.stderr)
        return 2
    kv = truth["kernel_view"]
    print(f"{len(truth['files'])} traces in {args.output}: bubble {kv['bubble_ratio']:.4f} "
          f"(idle {kv['idle_share']:.4f}, wait {kv['wait_share']:.4f}, transfer "
          f"{kv['transfer_share']:.4f}), {kv['gpu_activities']} GPU activities, "
          f"{kv['comm_kernels']} NCCL kernels, {truth['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
