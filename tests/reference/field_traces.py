#!/usr/bin/env python3
"""PyTorch profiler traces of pipeline-parallel runs as real frameworks write them.

    field_traces.py -o DIR --case NAME [--torch 2.5] [--pp 4 --dp 1 --tp 1]
                    [--micro-batches 8 --steps 3] [--seed 1] [--skew HOST:NS]
                    [--kernel-args none|first-op|last-op|coalesced] [--list]

A generator written apart from kernel_run.py, kineto_run.py and the C++
simulator, on purpose with its own assumptions, so that an error shared by the
engine and those generators shows here. It runs a physical event model of a
Megatron-style 1F1B pipeline (pp stages, dp replicas, tp ranks, micro-batches,
steps) on per-rank GPU streams, then writes what Kineto records of it, in the
shapes each PyTorch release writes (docs of the shapes: tests/reference/README.md,
"field_traces.py"), and DIR/truth.json with the true per-rank, per-step split.

The physical model
- Each rank has a host thread and GPU streams: compute (stream 7), NCCL (one
  stream per communicator in use; the early-recv case posts its receives on a
  second one). The host runs the program in order: every launch costs host
  time; `torch.cuda.synchronize()` (after each batched exchange, Megatron's
  batch_p2p_sync, and at the end of every step) waits for the rank's GPU.
- A kernel starts when its launch call has returned, the previous kernel of
  its stream has ended and what it depends on has ended: a NCCL kernel the
  compute launched before it (ProcessGroupNCCL's syncStream), a compute kernel
  the NCCL kernel whose result it uses (work.wait()).
- A NCCL kernel (one per batch_isend_irecv call, or one per isend/irecv/
  collective) ends at max(its start, the starts of all its peers) + the
  transfer time of its communication, the same for all its kernels: matched
  kernels end together, to the ns.
- Every step ends with a world all-reduce and a host synchronize, so no
  kernel of a step runs inside another step's window (then steps that are not
  recorded, or the part of a step recorded before the profiler started, cannot
  leak into the windows that are).

The truth (truth.json), per rank and step, from the model (not from the files):
wait of a NCCL kernel = [start, latest start among its peers), transfer = the
rest; instant by instant compute > transfer > wait > idle over the window;
S_k = max(min over ranks of the first start of step k's kernels, E_{k-1}),
E_k = max over ranks of the last end, over the recorded steps; every instant
of wait that is left after precedence is blamed on one peer: the one whose
late start ends the latest-ending wait among the kernels waiting then (ties:
lowest global rank); most_waited_on = the peer with most blamed ns (ties:
lowest), null when none. Skews move what a host writes, never the truth.

Standard library only; deterministic for a --seed.
"""

import argparse
import json
import os
import random
import sys
from pathlib import Path

# --------------------------------------------------------------------------
# Release shapes (see tests/reference/README.md for the sources of each row).
# host: which keys record_param_comms carries; kernel: which Kineto copies to
# the kernel linked to it; ext: what "External id" a kernel/launch holds
# ("correlation": the CUPTI correlation, Kineto before #873; "linked": the
# enclosing cpu_op's id, else the correlation); ts: "int" absolute whole us,
# "abs3" absolute us with 3 decimals, "rel3" us relative to
# baseTimeNanoseconds; dist: the distributedInfo shape.
# --------------------------------------------------------------------------
K_NAME, K_SIZE_OLD, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT = "name", "msgsize", "nelems", "dtype", "gsize", "split"
K_GSTART, K_PG, K_PGDESC, K_RANK, K_PEER, K_SEQ, K_COMMSID = "gstart", "pg", "pgdesc", "rank", "peer", "seq", "commsid"

VERSIONS = {
    "1.13": dict(host=set(), host_p2p=False, kernel=set(), ext="correlation", ts="int",
                 base=False, dist="basic", nccl="old", step_cat="user_annotation"),
    "2.0": dict(host=set(), host_p2p=False, kernel=set(), ext="correlation", ts="int",
                base=False, dist="basic", nccl="old", step_cat="user_annotation"),
    "2.1": dict(host={K_NAME, K_SIZE_OLD, K_DTYPE, K_GSIZE, K_SPLIT}, host_p2p=False, kernel=set(),
                ext="correlation", ts="int", base=False, dist="basic", nccl="old",
                step_cat="user_annotation"),
    "2.2": dict(host={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT, K_GSTART}, host_p2p=True,
                kernel={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT}, ext="correlation", ts="int",
                base=False, dist="pg-uid", nccl="new", step_cat="user_annotation"),
    "2.3": dict(host={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT, K_GSTART, K_PG, K_RANK},
                host_p2p=True, kernel={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT}, ext="linked",
                ts="abs3", base=False, dist="pg-uid", nccl="new", step_cat="user_annotation"),
    "2.4": dict(host={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT, K_GSTART, K_PG, K_PGDESC, K_RANK,
                      K_PEER},
                host_p2p=True, kernel={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT, K_PG, K_PGDESC},
                ext="linked", ts="rel3", base=True, dist="pg-desc", nccl="new",
                step_cat="user_annotation"),
    "2.5": dict(host={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT, K_GSTART, K_PG, K_PGDESC, K_RANK,
                      K_PEER},
                host_p2p=True,
                kernel={K_NAME, K_NELEMS, K_DTYPE, K_GSIZE, K_SPLIT, K_PG, K_PGDESC, K_PEER},
                ext="linked", ts="rel3", base=True, dist="pg-desc", nccl="new",
                step_cat="user_annotation"),
}
VERSIONS["2.6"] = dict(VERSIONS["2.5"])
VERSIONS["2.12"] = dict(VERSIONS["2.5"], host=VERSIONS["2.5"]["host"] | {K_SEQ, K_COMMSID},
                        kernel=VERSIONS["2.5"]["kernel"] | {K_SEQ, K_COMMSID}, base_first=True)

CASES = {
    # name: (default torch, p2p mode, description)
    "batched": ("2.5", "batched", "Megatron batch_p2p_comm: one SendRecv kernel per batch_isend_irecv"),
    "host-args": ("2.4", "separate", "comm args on record_param_comms only (kernel lacks peers)"),
    "no-args": ("2.0", "separate", "no comm args anywhere"),
    "one-folder": ("2.5", "separate", "all hosts' traces in one folder, <host>_<pid>.<ms>.pt.trace.json"),
    "no-distinfo": ("2.5", "separate", "one trace without distributedInfo"),
    "big-group": ("2.5", "separate", "64 ranks, data-parallel groups of 32: truncated Process Group Ranks"),
    "repeat": ("2.5", "separate", "two profiling windows per rank, one file each"),
    "mid-step": ("2.5", "separate", "profiler started in the middle of a step"),
    "early-recv": ("2.5", "separate", "recv posted early on its own stream, waiting under compute"),
}

US = 1000
COMPUTE_STREAM = 7
ORIGIN_NS = 1_712_000_000_000_000_000


class Cfg:
    pass


# --------------------------------------------------------------------------
# Layout: Megatron's rank order, tp innermost, then dp, pp outermost.
# --------------------------------------------------------------------------
def rank_of(cfg, stage, dp, tp):
    return tp + cfg.tp * (dp + cfg.dp * stage)


def coords(cfg, r):
    return r // (cfg.tp * cfg.dp), (r // cfg.tp) % cfg.dp, r % cfg.tp


class Group:
    def __init__(self, name, desc, ranks):
        self.name, self.desc, self.ranks = name, desc, ranks


def make_groups(cfg):
    """Process groups in the order every rank creates them (the name is the
    creation counter, as c10d's _process_group_name does)."""
    groups = {}
    counter = [0]

    def new(desc, ranks):
        g = Group(str(counter[0]), desc, ranks)
        counter[0] += 1
        return g

    world = new("default_pg", list(range(cfg.world)))
    dpg, ppg, tpg = {}, {}, {}
    for s in range(cfg.pp):
        for t in range(cfg.tp):
            g = new("DATA_PARALLEL_GROUP", [rank_of(cfg, s, d, t) for d in range(cfg.dp)])
            for r in g.ranks:
                dpg[r] = g
    for d in range(cfg.dp):
        for t in range(cfg.tp):
            g = new("PIPELINE_MODEL_PARALLEL_GROUP", [rank_of(cfg, s, d, t) for s in range(cfg.pp)])
            for r in g.ranks:
                ppg[r] = g
    for s in range(cfg.pp):
        for d in range(cfg.dp):
            g = new("TENSOR_MODEL_PARALLEL_GROUP", [rank_of(cfg, s, d, t) for t in range(cfg.tp)])
            for r in g.ranks:
                tpg[r] = g
    groups["world"], groups["dp"], groups["pp"], groups["tp"] = world, dpg, ppg, tpg
    return groups


# --------------------------------------------------------------------------
# Physical model
# --------------------------------------------------------------------------
class Kernel:
    __slots__ = ("kid", "rank", "stream", "nccl", "dur", "launch", "rt_dur", "ready", "deps",
                 "prev", "peers", "comm", "step", "name", "ops", "coll", "group", "start", "end",
                 "corr", "ext", "host_ops", "nelems", "variant_ext", "seq", "span", "hostt")

    def __init__(self, rank, stream, nccl):
        self.rank, self.stream, self.nccl = rank, stream, nccl
        self.deps, self.peers, self.ops, self.host_ops = [], [], [], []
        self.start = self.end = self.launch = self.ready = None
        self.prev = None
        self.comm = None
        self.coll = None
        self.group = None
        self.variant_ext = None


class Comm:
    """One communication: its kernels (one per rank) share a transfer time."""
    __slots__ = ("cid", "transfer", "kernels")

    def __init__(self, cid, transfer):
        self.cid, self.transfer, self.kernels = cid, transfer, []


class Model:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.q = cfg.quantum
        self.groups = make_groups(cfg)
        self.kernels = []
        self.programs = {r: [] for r in range(cfg.world)}
        self.last_compute = {r: None for r in range(cfg.world)}
        self.comms = []
        # pending p2p ops per (src, dst): FIFO of (kernel) for matching
        self.sends = {}
        self.recvs = {}
        self.coll_seq = {}
        self.rank_speed = {r: 0.92 + 0.16 * self.rng.random() for r in range(cfg.world)}

    def dq(self, lo_us, hi_us):
        """A random duration in [lo, hi] us, a whole number of quanta."""
        ns = int(self.rng.uniform(lo_us, hi_us) * US)
        return max(self.q, (ns // self.q) * self.q)

    # ---- program building ------------------------------------------------
    def compute_job(self, r, step, kind, count, lo, hi, waits=()):
        prog = self.programs[r]
        first = True
        for i in range(count):
            k = Kernel(r, COMPUTE_STREAM, False)
            k.dur = max(self.q, (int(self.dq(lo, hi) * self.rank_speed[r]) // self.q) * self.q)
            k.step = step
            k.name = COMPUTE_NAMES[(i + (0 if kind == "F" else 3)) % len(COMPUTE_NAMES)]
            k.host_ops = [COMPUTE_OPS[(i + (0 if kind == "F" else 2)) % len(COMPUTE_OPS)]]
            if first:
                k.deps.extend(waits)
                first = False
            self.add_kernel(k)
            prog.append(("launch", k, self.dq(9, 22)))
            self.last_compute[r] = k
        prog.append(("host", self.dq(15, 45)))

    def add_kernel(self, k):
        k.kid = len(self.kernels)
        self.kernels.append(k)

    def nccl_kernel(self, r, step, stream):
        k = Kernel(r, stream, True)
        k.step = step
        if self.last_compute[r] is not None:
            k.deps.append(self.last_compute[r])
        self.add_kernel(k)
        return k

    def p2p(self, r, step, ops, batched, stream=None, sync=False):
        """ops: list of (kind 'send'/'recv', peer global rank). Returns the
        kernels (one when batched)."""
        stream = stream or self.cfg.p2p_stream
        prog = self.programs[r]
        group = self.groups["pp"][r]
        out = []
        if batched:
            k = self.nccl_kernel(r, step, stream)
            k.coll = "batch"
            k.group = group
            for kind, peer in ops:
                k.ops.append((kind, peer))
                self.queue_p2p(r, kind, peer, k)
                prog.append(("hostop", k, kind, peer, self.dq(12, 20)))
            prog.append(("launch", k, self.dq(20, 35)))
            if sync:
                prog.append(("sync",))
            out.append(k)
        else:
            for kind, peer in ops:
                k = self.nccl_kernel(r, step, stream)
                k.coll = kind
                k.group = group
                k.ops.append((kind, peer))
                self.queue_p2p(r, kind, peer, k)
                prog.append(("launch", k, self.dq(25, 40)))
                out.append(k)
        return out

    def queue_p2p(self, r, kind, peer, k):
        if kind == "send":
            self.sends.setdefault((r, peer), []).append(k)
        else:
            self.recvs.setdefault((peer, r), []).append(k)

    def collective(self, r, group, step, coll, nelems, lo, hi, stream):
        """Rank r's kernel of its next collective in `group`; the i-th ones of
        all members form one communication (match_collectives)."""
        k = self.nccl_kernel(r, step, stream)
        k.coll = coll
        k.group = group
        k.nelems = nelems
        k.span = (lo, hi)
        self.coll_seq.setdefault((group.name, r), []).append(k)
        self.programs[r].append(("launch", k, self.dq(25, 45)))
        return k

    def match_collectives(self):
        groups = {}
        for (name, r), ks in self.coll_seq.items():
            groups.setdefault(name, {})[r] = ks
        for name in sorted(groups, key=int):
            per = groups[name]
            counts = {len(ks) for ks in per.values()}
            if len(counts) != 1:
                raise SystemExit(f"internal: members of group {name} call different numbers of collectives")
            for i in range(counts.pop()):
                ks = [per[r][i] for r in sorted(per)]
                lo, hi = ks[0].span
                comm = Comm(len(self.comms), self.dq(lo, hi))
                self.comms.append(comm)
                for k in ks:
                    k.comm = comm
                    comm.kernels.append(k)
                    k.peers = [o for o in ks if o is not k]

    def match_p2p(self):
        """Pair the k-th send a->b with the k-th recv on b from a; kernels
        holding matched ops are peers; batched kernels matched to one kernel
        on each side form one communication."""
        pairs = []
        for key, sends in self.sends.items():
            recvs = self.recvs.get(key, [])
            if len(recvs) != len(sends):
                raise SystemExit(f"internal: {len(sends)} sends but {len(recvs)} recvs for {key}")
            pairs.extend(zip(sends, recvs))
        for key in self.recvs:
            if key not in self.sends:
                raise SystemExit(f"internal: recvs without sends for {key}")
        peers = {}
        for a, b in pairs:
            peers.setdefault(a.kid, set()).add(b.kid)
            peers.setdefault(b.kid, set()).add(a.kid)
        # communications: connected components of the peer relation
        seen = set()
        for kid in sorted(peers):
            if kid in seen:
                continue
            stack, comp = [kid], []
            seen.add(kid)
            while stack:
                x = stack.pop()
                comp.append(x)
                for y in peers[x]:
                    if y not in seen:
                        seen.add(y)
                        stack.append(y)
            intra = len({self.cfg.machine_of(self.kernels[x].rank) for x in comp}) == 1
            comm = Comm(len(self.comms), self.dq(40, 110) if intra else self.dq(160, 380))
            self.comms.append(comm)
            for x in comp:
                k = self.kernels[x]
                k.comm = comm
                comm.kernels.append(k)
                k.peers = [self.kernels[y] for y in sorted(peers[x])]
        for k in self.kernels:
            if k.nccl and k.comm is None and k.coll != "allreduce":
                raise SystemExit(f"internal: NCCL kernel without a communication on rank {k.rank}")
            if k.nccl and k.coll not in ("allreduce",):
                for o in k.peers:
                    if k not in o.peers:
                        raise SystemExit("internal: p2p peers are not mutual")

    # ---- evaluation ------------------------------------------------------
    def run(self, t0):
        """Evaluates the programs: host times, launches, kernel starts and
        ends, to a fixpoint; raises on a deadlock."""
        cfg = self.cfg
        host = {r: t0 + self.dq(0, 40) for r in range(cfg.world)}
        pc = {r: 0 for r in range(cfg.world)}
        self.host_log = {r: [] for r in range(cfg.world)}
        launched = {r: [] for r in range(cfg.world)}
        order = {r: [] for r in range(cfg.world)}
        for r in range(cfg.world):
            for act in self.programs[r]:
                if act[0] == "launch":
                    order[r].append(act[1])
        stream_q = {}
        for r in range(cfg.world):
            for k in order[r]:
                q = stream_q.setdefault((r, k.stream), [])
                if q:
                    k.prev = q[-1]
                q.append(k)
        heads = {key: 0 for key in stream_q}
        pending_end = []
        done = 0
        total = len(self.kernels)
        while True:
            progress = False
            for r in range(cfg.world):
                prog = self.programs[r]
                while pc[r] < len(prog):
                    act = prog[pc[r]]
                    op = act[0]
                    if op == "launch":
                        k, cost = act[1], act[2]
                        self.host_log[r].append(("launch", host[r], cost, k))
                        k.hostt = host[r]
                        k.launch = host[r] + (cost // 2 // self.q) * self.q
                        k.rt_dur = max(self.q, (cost // 3 // self.q) * self.q)
                        k.ready = k.launch + k.rt_dur
                        host[r] += cost
                        launched[r].append(k)
                    elif op == "hostop":
                        k, kind, peer, cost = act[1], act[2], act[3], act[4]
                        self.host_log[r].append(("hostop", host[r], cost, k, kind, peer))
                        host[r] += cost
                    elif op == "host":
                        host[r] += act[1]
                    elif op == "sync":
                        if any(x.end is None for x in launched[r]):
                            break
                        last = max((x.end for x in launched[r]), default=host[r])
                        host[r] = max(host[r], last) + 8 * US
                        self.host_log[r].append(("sync", host[r]))
                    elif op == "mark":
                        self.host_log[r].append(("mark", host[r], act[1]))
                    pc[r] += 1
                    progress = True
            for key, q in stream_q.items():
                i = heads[key]
                while i < len(q):
                    k = q[i]
                    if k.ready is None:
                        break
                    if k.prev is not None and k.prev.end is None:
                        break
                    if any(d.end is None for d in k.deps):
                        break
                    s = k.ready
                    if k.prev is not None:
                        s = max(s, k.prev.end)
                    for d in k.deps:
                        s = max(s, d.end)
                    k.start = s
                    if not k.nccl:
                        k.end = s + k.dur
                        done += 1
                    else:
                        pending_end.append(k)
                        # a NCCL kernel holds its stream until it ends
                        if not self.try_end(k):
                            i += 1
                            progress = True
                            break
                        done += 1
                        pending_end.remove(k)
                    i += 1
                    progress = True
                heads[key] = i
            still = []
            for k in pending_end:
                if self.try_end(k):
                    done += 1
                    progress = True
                else:
                    still.append(k)
            pending_end = still
            if done == total and all(pc[r] == len(self.programs[r]) for r in range(cfg.world)):
                break
            if not progress:
                stuck = [k for k in self.kernels if k.end is None][:3]
                raise SystemExit("internal: the run deadlocks at "
                                 + ", ".join(f"rank {k.rank} {k.coll or k.name}" for k in stuck))
        self.host_end = host

    def try_end(self, k):
        if k.end is not None:
            return True
        if any(p.start is None for p in k.peers):
            return False
        latest = max([k.start] + [p.start for p in k.peers])
        k.end = latest + k.comm.transfer
        return True


COMPUTE_NAMES = [
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "flash_fwd_kernel",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
]
COMPUTE_OPS = ["aten::mm", "aten::gelu", "aten::addmm", "aten::native_layer_norm", "aten::_flash_attention_forward", "aten::mul"]


# --------------------------------------------------------------------------
# The run: Megatron's forward_backward_pipelining_without_interleaving.
# --------------------------------------------------------------------------
def build(cfg):
    m = Model(cfg)
    batched = cfg.p2p == "batched"
    act_nelems = 2 * 2048 * 4096
    for step in cfg.physical_steps:
        for r in range(cfg.world):
            m.programs[r].append(("mark", ("step", step)))
            m.programs[r].append(("host", m.dq(40, 80)))
        for r in range(cfg.world):
            build_rank_step(m, cfg, r, step, batched, act_nelems)
        # end of step: dp gradient all-reduce, optimizer, world all-reduce, sync
        for r in range(cfg.world):
            if cfg.dp > 1:
                m.collective(r, m.groups["dp"][r], step, "allreduce", 25_000_000, 300, 700,
                             cfg.coll_stream)
            m.compute_job(r, step, "O", 4, 20, 50)
            m.collective(r, m.groups["world"], step, "allreduce", 1, 15, 30, cfg.coll_stream)
            m.programs[r].append(("sync",))
            m.programs[r].append(("mark", ("step_end", step)))
    m.match_p2p()
    m.match_collectives()
    return m


def build_rank_step(m, cfg, r, step, batched, nelems):
    s, d, t = coords(cfg, r)
    prev = rank_of(cfg, s - 1, d, t) if s > 0 else None
    nxt = rank_of(cfg, s + 1, d, t) if s < cfg.pp - 1 else None
    mb = cfg.micro_batches
    warm = min(cfg.pp - s - 1, mb)
    remaining = mb - warm
    even = (s % 2 == 0)
    early = cfg.case == "early-recv"
    pending = []  # kernels whose results the next compute job waits for
    sync = batched  # Megatron's batch_p2p_sync

    def order(ops):
        if batched:
            return ops
        # Megatron _p2p_ops: even stages send_next, recv_prev, send_prev, recv_next;
        # odd stages recv_prev, send_next, recv_next, send_prev.
        rank_key = {True: {("send", nxt): 0, ("recv", prev): 1, ("send", prev): 2, ("recv", nxt): 3},
                    False: {("recv", prev): 0, ("send", nxt): 1, ("recv", nxt): 2, ("send", prev): 3}}
        key = rank_key[even]
        return sorted(ops, key=lambda op: key[op])

    def call(ops, stream=None):
        ops = [op for op in ops if op[1] is not None]
        if not ops:
            return []
        ks = m.p2p(r, step, order(ops), batched, stream=stream, sync=sync)
        for k in ks:
            k.nelems = nelems
        return [k for k in ks if any(op[0] == "recv" for op in k.ops)]

    tp_wait = []

    def job(kind, waits):
        waits = list(waits) + tp_wait
        tp_wait.clear()
        if kind == "F":
            m.compute_job(r, step, "F", 6, 45, 110, waits)
        else:
            m.compute_job(r, step, "B", 6, 90, 220, waits)
        if cfg.tp > 1:
            # the job's tensor-parallel all-reduce; the next job uses its result
            tp_wait.append(m.collective(r, m.groups["tp"][r], step, "allreduce", nelems, 30, 90,
                                        cfg.tp_stream))

    early_recv = []
    for i in range(warm):
        pending = call([("recv", prev)])
        job("F", pending)
        call([("send", nxt)])
    if remaining > 0:
        pending = call([("recv", prev)])
    for i in range(remaining):
        last = i == remaining - 1
        job("F", pending + early_recv)
        early_recv = []
        got = call([("send", nxt), ("recv", nxt)])
        if early and not last and prev is not None:
            # the next forward's input, posted before this backward on its own stream
            early_recv = m.p2p(r, step, [("recv", prev)], False, stream=cfg.early_stream)
            for k in early_recv:
                k.nelems = nelems
        job("B", got)
        if last:
            call([("send", prev)])
            pending = []
        elif early and prev is not None:
            call([("send", prev)])
            pending = []
        else:
            pending = call([("send", prev), ("recv", prev)])
    for i in range(warm):
        got = call([("recv", nxt)])
        job("B", got)
        call([("send", prev)])


# --------------------------------------------------------------------------
# Truth
# --------------------------------------------------------------------------
def truth(m, cfg):
    ks = m.kernels
    recorded = cfg.recorded_steps
    by_rank = {r: [] for r in range(cfg.world)}
    for k in ks:
        by_rank[k.rank].append(k)
    windows = []
    prev_end = None
    for step in recorded:
        firsts = [min(k.start for k in by_rank[r] if k.step == step) for r in range(cfg.world)]
        lasts = [max(k.end for k in by_rank[r] if k.step == step) for r in range(cfg.world)]
        s = min(firsts)
        if prev_end is not None:
            s = max(s, prev_end)
        e = max(max(lasts), s)
        windows.append((step, s, e))
        prev_end = e
    # no kernel of an unrecorded (or not recorded) part may touch a window
    for k in ks:
        if not cfg.kernel_recorded(k):
            for step, s, e in windows:
                if k.start < e and k.end > s:
                    raise SystemExit(f"internal: an unrecorded kernel (rank {k.rank}, step {k.step}) "
                                     f"runs inside the window of step {step}")
    ranks = []
    for r in range(cfg.world):
        comp, trans, waits = [], [], []
        for k in by_rank[r]:
            if not k.nccl:
                comp.append((k.start, k.end))
                continue
            latest = max([k.start] + [p.start for p in k.peers])
            wend = min(latest, k.end)
            if wend > k.start:
                blamed = min(p.rank for p in k.peers if p.start == latest)
                waits.append((k.start, wend, blamed))
            trans.append((max(k.start, wend), k.end))
        steps = []
        tot = dict(window=0, compute=0, transfer=0, wait=0, idle=0)
        blame_tot = {}
        for step, s, e in windows:
            fig, blame = split_window(s, e, comp, trans, waits)
            for key in tot:
                tot[key] += fig[key]
            for p, ns in blame.items():
                blame_tot[p] = blame_tot.get(p, 0) + ns
            steps.append(dict(step=step, start_ns=s, end_ns=e, **fig, most_waited_on=most(blame)))
        tot["most_waited_on"] = most(blame_tot)
        ranks.append(dict(global_rank=r, machine=cfg.machine_of(r), host=cfg.host_name(r),
                          path=cfg.paths.get(r, []), steps=steps, totals=tot))
    return ranks, windows


def split_window(s, e, comp, trans, waits):
    pts = {s, e}
    for a, b in comp + trans:
        if a < e and b > s:
            pts.add(max(a, s))
            pts.add(min(b, e))
    for a, b, _ in waits:
        if a < e and b > s:
            pts.add(max(a, s))
            pts.add(min(b, e))
    pts = sorted(pts)
    fig = dict(window=e - s, compute=0, transfer=0, wait=0, idle=0)
    blame = {}
    comp_in = [(a, b) for a, b in comp if a < e and b > s]
    trans_in = [(a, b) for a, b in trans if a < e and b > s]
    waits_in = [w for w in waits if w[0] < e and w[1] > s]
    for a, b in zip(pts, pts[1:]):
        n = b - a
        if any(x <= a and y >= b for x, y in comp_in):
            fig["compute"] += n
        elif any(x <= a and y >= b for x, y in trans_in):
            fig["transfer"] += n
        else:
            here = [w for w in waits_in if w[0] <= a and w[1] >= b]
            if here:
                fig["wait"] += n
                top = max(w[1] for w in here)
                peer = min(w[2] for w in here if w[1] == top)
                blame[peer] = blame.get(peer, 0) + n
            else:
                fig["idle"] += n
    return fig, blame


def most(blame):
    if not blame:
        return None
    best = max(blame.values())
    return min(p for p, ns in blame.items() if ns == best)


# --------------------------------------------------------------------------
# Writing Kineto JSON
# --------------------------------------------------------------------------
class Raw(str):
    """Text written into the JSON as it is (a number with exact decimals)."""


def jv(v):
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v)


def ranks_text(ranks):
    if len(ranks) > 30:
        return "[" + ", ".join(str(x) for x in ranks[:30]) + ", ...]"
    return "[" + ", ".join(str(x) for x in ranks) + "]"


class Writer:
    def __init__(self, m, cfg, vers):
        self.m, self.cfg, self.v = m, cfg, vers

    def fmt_time(self, ns, base):
        if self.v["ts"] == "int":
            assert ns % 1000 == 0, ns
            return Raw(str(ns // 1000))
        x = ns - base if self.v["ts"] == "rel3" else ns
        return Raw(f"{x // 1000}.{x % 1000:03d}")

    def fmt_dur(self, ns):
        if self.v["ts"] == "int":
            return Raw(str(ns // 1000))
        return Raw(f"{ns // 1000}.{ns % 1000:03d}")

    def comm_args(self, k, kind, peer, for_kernel, name_override=None):
        """The comm args of a record_param_comms op (host) or of the kernel
        Kineto links to it, in saveNcclMeta's key spellings and JSON types."""
        keys = self.v["kernel"] if for_kernel else self.v["host"]
        g = k.group
        coll = name_override or kind
        p2p = coll in ("send", "recv")
        if p2p and not for_kernel and not self.v["host_p2p"]:
            return []
        out = []
        if K_NAME in keys:
            out.append(("Collective name", coll))
        nel = getattr(k, "nelems", None) or 0
        if name_override == "coalesced":
            nel = 0
        if K_SIZE_OLD in keys:
            out += [("In msg size", nel), ("Out msg size", nel)]
        if K_NELEMS in keys:
            out += [("In msg nelems", nel), ("Out msg nelems", nel)]
        if K_GSIZE in keys:
            out.append(("Group size", len(g.ranks)))
        if K_DTYPE in keys:
            out.append(("dtype", "BFloat16" if nel > 1 else "Float"))
        if K_SPLIT in keys:
            out += [("In split size", "[]"), ("Out split size", "[]")]
        if K_GSTART in keys and not for_kernel:
            stride = (g.ranks[1] - g.ranks[0]) if len(g.ranks) > 1 else 1
            strided = all(g.ranks[i] == g.ranks[0] + i * stride for i in range(len(g.ranks)))
            out += [("Global rank start", g.ranks[0] if strided else -1),
                    ("Global rank stride", stride if strided else -1)]
        if K_PG in keys:
            out.append(("Process Group Name", g.name))
        if K_PGDESC in keys:
            out.append(("Process Group Description", g.desc))
        if K_PG in keys:
            out.append(("Process Group Ranks", ranks_text(g.ranks)))
        if K_RANK in keys and not for_kernel:
            own = g.ranks.index(k.rank)
            out.append(("Rank", g.ranks.index(peer) if p2p else own))
        if K_PEER in keys and p2p and name_override != "coalesced":
            out.append(("Dst Rank" if coll == "send" else "Src Rank", peer))
        if K_SEQ in keys:
            out.append(("Seq", k.comm.cid + 1))
        if K_COMMSID in keys:
            out.append(("Comms Id", (k.comm.cid * 2654435761 + 0x9E3779B97F4A7C15) % (1 << 64)))
        return out

    def rank_events(self, r, lo, hi):
        """CPU, runtime and GPU events of rank r recorded in [lo, hi) host time."""
        cfg, v, m = self.cfg, self.v, self.m
        pid = cfg.pid_of(r)
        tid = pid
        dev = r % cfg.gpus_per_machine
        cpu, gpu = [], []
        ext = [0]
        corr = [5000 + 100 * r]

        def new_ext():
            ext[0] += 1
            return ext[0]

        def span(cat, name, t, dur, args=None):
            e = dict(ph="X", cat=cat, name=name, pid=pid, tid=tid, ts=t, dur=dur,
                     args=[("External id", new_ext())] + (args or []))
            cpu.append(e)
            return e

        log = m.host_log[r]
        steps = []
        for item in log:
            if item[0] == "mark" and item[2][0] == "step":
                steps.append((item[2][1], item[1]))
            if item[0] == "mark" and item[2][0] == "step_end":
                steps.append((("end", item[2][1]), item[1]))
        # ProfilerStep spans: from a step's mark to the next step's mark
        marks = [x for x in steps if not isinstance(x[0], tuple)]
        ends = {x[0][1]: x[1] for x in steps if isinstance(x[0], tuple)}
        for i, (step, t) in enumerate(marks):
            end = marks[i + 1][1] if i + 1 < len(marks) else ends[step] + 20 * US
            if step in cfg.recorded_steps and t >= lo and end <= hi:
                span(v["step_cat"], f"ProfilerStep#{step}", t, end - t)
        batch_rpc = {}
        for item in log:
            if item[0] == "hostop":
                _, t, cost, k, kind, peer = item
                if not (lo <= t < hi):
                    continue
                opname = "c10d::send" if kind == "send" else "c10d::recv_"
                span("cpu_op", opname, t, cost - 2 * US)
                if v["host_p2p"]:
                    e = span("cpu_op", "record_param_comms", t + 2 * US, cost - 5 * US,
                             self.comm_args(k, kind, peer, False))
                    batch_rpc.setdefault(k.kid, []).append((e, kind, peer))
                else:
                    span("user_annotation", self.title(k, kind, peer), t + 3 * US, cost - 7 * US)
            elif item[0] == "launch":
                _, t, cost, k = item
                if not (lo <= t < hi):
                    continue
                linked = None
                rt_start = k.launch
                if not k.nccl:
                    linked = span("cpu_op", k.host_ops[0], t, cost - US)
                elif k.coll == "batch":
                    variant = cfg.kernel_args
                    if variant == "coalesced" and v["host_p2p"]:
                        linked = span("cpu_op", "record_param_comms", t + US, cost - 3 * US,
                                      self.comm_args(k, "coalesced", None, False, "coalesced"))
                        linked["_kernel_args"] = self.comm_args(k, "coalesced", None, True, "coalesced")
                    span("user_annotation", "nccl:coalesced", t + 2 * US, cost - 5 * US)
                    rpcs = batch_rpc.get(k.kid, [])
                    if variant in ("first-op", "last-op") and rpcs:
                        e, kind, peer = rpcs[0] if variant == "first-op" else rpcs[-1]
                        k.variant_ext = (e, self.comm_args(k, kind, peer, True))
                else:
                    kind = k.coll
                    peer = k.ops[0][1] if k.ops else None
                    opname = {"send": "c10d::send", "recv": "c10d::recv_",
                              "allreduce": "c10d::allreduce_"}[kind]
                    span("cpu_op", opname, t, cost - US)
                    if kind == "allreduce" or v["host_p2p"]:
                        linked = span("cpu_op", "record_param_comms", t + 2 * US, cost - 4 * US,
                                      self.comm_args(k, kind, peer, False))
                        linked["_kernel_args"] = self.comm_args(k, kind, peer, True)
                    span("user_annotation", self.title(k, kind, peer), t + 3 * US, cost - 6 * US)
                c = corr[0] = corr[0] + 1
                k.corr = c
                ext_id = c
                if v["ext"] == "linked" and linked is not None:
                    ext_id = linked["args"][0][1]
                kargs = []
                if k.variant_ext is not None:
                    e, args = k.variant_ext
                    if v["ext"] == "linked":
                        ext_id = e["args"][0][1]
                    kargs = args
                elif linked is not None:
                    kargs = linked.get("_kernel_args", [])
                k.ext = ext_id
                new_nccl = v["nccl"] == "new"
                if k.nccl and new_nccl:
                    rt = dict(ph="X", cat="cuda_driver", name="cuLaunchKernelEx", pid=pid, tid=tid,
                              ts=rt_start, dur=k.rt_dur,
                              args=[("External id", ext_id), ("cbid", 652), ("correlation", c)])
                elif k.nccl:
                    rt = dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=pid, tid=tid,
                              ts=rt_start, dur=k.rt_dur,
                              args=[("External id", ext_id), ("cbid", 211), ("correlation", c)])
                else:
                    rt = dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=pid, tid=tid,
                              ts=rt_start, dur=k.rt_dur,
                              args=[("External id", ext_id), ("cbid", 211), ("correlation", c)])
                gpu.append(rt)
                gpu.append(dict(ph="s", id=c, pid=pid, tid=tid, ts=rt_start, cat="ac2g", name="ac2g"))
                kern = dict(ph="X", cat="kernel", name=self.kernel_name(k), pid=dev, tid=k.stream,
                            ts=k.start, dur=k.end - k.start,
                            args=[("External id", ext_id), ("queued", 0), ("device", dev),
                                  ("context", 1), ("stream", k.stream), ("correlation", c),
                                  ("registers per thread", 96 if k.nccl else 128),
                                  ("shared memory", 4096 if k.nccl else 49152),
                                  ("blocks per SM", Raw("0.222222")), ("warps per SM", Raw("3.555556")),
                                  ("grid", [24, 1, 1] if k.nccl else [132, 1, 1]),
                                  ("block", [512, 1, 1] if k.nccl else [256, 1, 1]),
                                  ("est. achieved occupancy %", 6 if k.nccl else 25)] + kargs)
                gpu.append(kern)
                gpu.append(dict(ph="f", id=c, pid=dev, tid=k.stream, ts=k.start, cat="ac2g",
                                name="ac2g", bp="e"))
        return cpu, gpu, pid, dev

    def title(self, k, kind, peer):
        g = k.group
        me = g.ranks.index(k.rank)
        if kind == "send":
            return f"nccl:send {me}->{g.ranks.index(peer)}"
        if kind == "recv":
            return f"nccl:recv {me}<-{g.ranks.index(peer)}"
        return "nccl:all_reduce"

    def kernel_name(self, k):
        if not k.nccl:
            return k.name
        new = self.v["nccl"] == "new"
        if k.coll == "allreduce":
            if new:
                return "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
            return "ncclKernel_AllReduce_RING_LL_Sum_bfloat16(ncclDevComm*, unsigned long, ncclWork*)"
        if new:
            return "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
        return "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"

    def event_text(self, e, base, skew):
        parts = []
        head = []
        for key in ("ph", "cat", "name", "id", "pid", "tid"):
            if key in e:
                head.append(f'"{key}": {jv(e[key])}')
        t = [f'"ts": {self.fmt_time(e["ts"] + skew, base)}']
        if "dur" in e:
            t.append(f'"dur": {self.fmt_dur(e["dur"])}')
        if "bp" in e:
            t.append(f'"bp": "{e["bp"]}"')
        parts.append("  {\n    " + ", ".join(head) + ",\n    " + ", ".join(t))
        if e.get("args"):
            args = ",\n      ".join(f"{json.dumps(k)}: {jv(v)}" for k, v in e["args"])
            parts.append(",\n    \"args\": {\n      " + args + "\n    }")
        parts.append("\n  }")
        return "".join(parts)

    def dist_info(self, r):
        v, cfg, m = self.v, self.cfg, self.m
        d = {"backend": "nccl", "rank": r, "world_size": cfg.world}
        if v["dist"] == "basic":
            return d
        mine = [m.groups["world"], m.groups["dp"][r], m.groups["pp"][r]]
        if cfg.tp > 1:
            mine.append(m.groups["tp"][r])
        mine.sort(key=lambda g: int(g.name))
        d["pg_count"] = len(mine)
        cfgs = []
        for g in mine:
            if v["dist"] == "pg-uid":
                cfgs.append({"pg_name": g.name, "uid": int(g.name), "backend_config": "cuda:nccl",
                             "pg_size": len(g.ranks), "ranks": g.ranks})
            else:
                cfgs.append({"pg_name": g.name, "pg_desc": g.desc, "backend_config": "cuda:nccl",
                             "pg_size": len(g.ranks), "ranks": g.ranks})
        d["pg_config"] = cfgs
        if v["dist"] == "pg-desc":
            d["nccl_version"] = "2.21.5"
        return d

    def write_rank(self, r, path, lo, hi, with_dist):
        cfg, v = self.cfg, self.v
        skew = cfg.skew_of(r)
        cpu, gpu, pid, dev = self.rank_events(r, lo, hi)
        if not cpu and not gpu:
            raise SystemExit(f"internal: rank {r} records nothing in its window")
        base = lo + skew
        if v["ts"] == "int":
            base = 0
        cpu.sort(key=lambda e: (e["ts"], -e["dur"]))
        gpu.sort(key=lambda e: (e["ts"], 0 if e["ph"] == "X" else 1))
        out = ["{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    "
               + json.dumps({"id": dev, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045510144,
                             "computeMajor": 9, "computeMinor": 0, "numSms": 132})
               + "\n  ],"]
        if with_dist:
            out.append('\n  "distributedInfo": ' + json.dumps(self.dist_info(r)) + ",")
        if v.get("base_first"):
            out.append(f'\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {base},')
        out.append('\n  "traceEvents": [\n')
        texts = [self.event_text(e, base, skew) for e in cpu + gpu]
        meta_ts = lo
        meta = [dict(ph="M", name="process_name", pid=pid, tid=0, ts=meta_ts,
                     args=[("name", "python3")]),
                dict(ph="M", name="process_labels", pid=pid, tid=0, ts=meta_ts,
                     args=[("labels", "CPU")]),
                dict(ph="M", name="process_name", pid=dev, tid=0, ts=meta_ts,
                     args=[("name", f"GPU {dev}")]),
                dict(ph="M", name="thread_name", pid=pid, tid=pid, ts=meta_ts,
                     args=[("name", f"thread {pid} (python3)")])]
        for e in meta:
            texts.append(self.event_text(e, base, skew))
        end_ns = hi + skew if v["ts"] != "int" else ((hi + skew) // 1000) * 1000
        texts.append('  {\n    "name": "Record Window End", "ph": "i", "s": "g",\n    "pid": "", "tid": "", "ts": '
                     + str(self.fmt_time(end_ns, base)) + "\n  }")
        out.append(",\n".join(texts))
        out.append("\n  ],")
        out.append(f'\n  "traceName": {json.dumps(path.name)}')
        if not v.get("base_first"):
            out.append(',\n  "displayTimeUnit": "ms"')
            if v["base"]:
                out.append(f',\n  "baseTimeNanoseconds": {base}')
        out.append("\n}\n")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(out))


# --------------------------------------------------------------------------
# Configuration per case
# --------------------------------------------------------------------------
def configure(args):
    cfg = Cfg()
    if args.case not in CASES:
        raise SystemExit(f"unknown case {args.case!r}; --list names them")
    torch_default, p2p, _ = CASES[args.case]
    cfg.case = args.case
    cfg.torch = args.torch or torch_default
    if cfg.torch not in VERSIONS:
        raise SystemExit(f"unknown --torch {cfg.torch}; one of {', '.join(VERSIONS)}")
    v = VERSIONS[cfg.torch]
    cfg.p2p = args.p2p or p2p
    cfg.kernel_args = args.kernel_args
    cfg.seed = args.seed
    big = cfg.case == "big-group"
    cfg.pp = args.pp or (2 if big else 4)
    cfg.dp = args.dp or (32 if big else (2 if cfg.case == "one-folder" else 1))
    cfg.tp = args.tp or 1
    cfg.world = cfg.pp * cfg.dp * cfg.tp
    cfg.micro_batches = args.micro_batches or (4 if big else 8)
    cfg.steps = args.steps or (2 if big else 3)
    cfg.gpus_per_machine = args.gpus_per_machine or (4 if cfg.case == "one-folder" else 8)
    cfg.gpus_per_machine = min(cfg.gpus_per_machine, cfg.world) or 1
    cfg.quantum = 1000 if v["ts"] == "int" else 1
    cfg.p2p_stream = 20
    cfg.early_stream = 24
    cfg.coll_stream = 28
    cfg.tp_stream = 32
    cfg.first_step = args.first_step if args.first_step is not None else (40 if cfg.case == "mid-step" else 0)
    if cfg.case == "repeat":
        # schedule(wait=1, warmup=1, active=A, repeat=2): windows of A steps
        a = cfg.steps
        cfg.physical_steps = list(range(cfg.first_step, cfg.first_step + 2 * (a + 2)))
        w1 = cfg.physical_steps[2:2 + a]
        w2 = cfg.physical_steps[4 + a:4 + 2 * a]
        cfg.windows = [w1, w2]
    elif cfg.case == "mid-step":
        cfg.physical_steps = list(range(cfg.first_step, cfg.first_step + cfg.steps + 1))
        cfg.windows = [cfg.physical_steps]
    else:
        cfg.physical_steps = list(range(cfg.first_step, cfg.first_step + cfg.steps))
        cfg.windows = [cfg.physical_steps]
    cfg.recorded_steps = [s for w in cfg.windows for s in w]
    if cfg.case == "mid-step":
        cfg.recorded_steps = cfg.physical_steps[1:]
    cfg.midstep_step = cfg.physical_steps[0] if cfg.case == "mid-step" else None
    cfg.machine_of = lambda r: r // cfg.gpus_per_machine
    cfg.host_name = lambda r: f"node{r // cfg.gpus_per_machine}"
    skews = {}
    spec = args.skew
    if spec is None and cfg.case == "one-folder":
        spec = ["node1:1500250"]
    for item in spec or []:
        if item == "none":
            continue
        host, _, ns = item.partition(":")
        host = host if host.startswith("node") else f"node{host.replace('machine', '')}"
        skews[host] = (int(ns) // cfg.quantum) * cfg.quantum
    cfg.skews = skews
    cfg.skew_of = lambda r: skews.get(cfg.host_name(r), 0)
    cfg.paths = {}
    cfg.no_dist_rank = 2 % cfg.world
    # process ids: distinct, in no particular order of the ranks
    pids = random.Random(cfg.seed * 7919 + 17).sample(range(2000, 60000), cfg.world)
    cfg.pid_of = lambda r: pids[r]
    return cfg, v


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", help="output folder")
    ap.add_argument("--case", default="batched")
    ap.add_argument("--torch", help="release shape: " + ", ".join(VERSIONS))
    ap.add_argument("--p2p", choices=["batched", "separate"], help="override the case's p2p mode")
    ap.add_argument("--kernel-args", default="none", choices=["none", "first-op", "last-op", "coalesced"],
                    help="batched case: what the one SendRecv kernel carries (none is what PyTorch does)")
    ap.add_argument("--pp", type=int)
    ap.add_argument("--dp", type=int)
    ap.add_argument("--tp", type=int)
    ap.add_argument("--micro-batches", type=int)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--first-step", type=int)
    ap.add_argument("--gpus-per-machine", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skew", action="append", help="HOST:NS, moves what host nodeK writes by NS (none: no skew)")
    ap.add_argument("--list", action="store_true", help="list the cases")
    args = ap.parse_args(argv)
    if args.list:
        for name, (tv, p2p, desc) in CASES.items():
            print(f"{name:12s} torch {tv:5s} {p2p:9s} {desc}")
        return 0
    if not args.out:
        ap.error("-o/--out is required")
    cfg, v = configure(args)
    generate(cfg, v, Path(args.out))
    return 0


def generate(cfg, v, out):
    m = build(cfg)
    t0 = ORIGIN_NS + (random.Random(cfg.seed).randrange(10**9) // cfg.quantum) * cfg.quantum
    m.run(t0)
    # what each rank records: its host time ranges
    ranges = {r: record_ranges(m, cfg, r) for r in range(cfg.world)}

    def recorded(k):
        return any(lo <= k.hostt < hi for lo, hi, _ in ranges[k.rank])
    cfg.kernel_recorded = recorded
    w = Writer(m, cfg, v)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for r in range(cfg.world):
        for wi, (lo, hi, steps) in enumerate(ranges[r]):
            path = out / file_name(cfg, r, wi, hi)
            w.write_rank(r, path, lo, hi, with_dist=not (cfg.case == "no-distinfo" and r == cfg.no_dist_rank))
            cfg.paths.setdefault(r, []).append(str(path.relative_to(out)))
            written.append(path)
    ranks, windows = truth(m, cfg)
    notes = [CASES[cfg.case][2],
             f"torch {cfg.torch} shapes; p2p {cfg.p2p}"
             + (f"; batched kernel args: {cfg.kernel_args}" if cfg.p2p == "batched" else ""),
             "truth from the physical model; skews move what a host writes, never the truth"]
    if cfg.case == "no-distinfo":
        notes.append(f"rank {cfg.no_dist_rank}'s trace has no distributedInfo")
    if cfg.skews:
        notes.append("skews: " + ", ".join(f"{h} {ns} ns" for h, ns in sorted(cfg.skews.items())))
    doc = dict(case=cfg.case, torch_version=cfg.torch, p2p=cfg.p2p,
               kernel_args=cfg.kernel_args if cfg.p2p == "batched" else None,
               pp=cfg.pp, dp=cfg.dp, tp=cfg.tp, micro_batches=cfg.micro_batches,
               world_size=cfg.world, gpus_per_machine=cfg.gpus_per_machine, seed=cfg.seed,
               skews_ns=cfg.skews, notes=notes,
               steps=[dict(step=s, start_ns=a, end_ns=b) for s, a, b in windows],
               ranks=ranks)
    (out / "truth.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def record_ranges(m, cfg, r):
    """[lo, hi) host-time ranges the profiler records on rank r, with the
    steps of each: a window from the first recorded step's start to the end
    of its last step (mid-step: from the middle of the first step's host
    program)."""
    log = m.host_log[r]
    starts = {it[2][1]: it[1] for it in log if it[0] == "mark" and it[2][0] == "step"}
    ends = {it[2][1]: it[1] for it in log if it[0] == "mark" and it[2][0] == "step_end"}
    out = []
    for win in cfg.windows:
        lo = starts[win[0]]
        hi = ends[win[-1]] + 20 * US
        if cfg.case == "mid-step":
            launches = [it[1] for it in log if it[0] in ("launch", "hostop")
                        and starts[win[0]] <= it[1] < ends[win[0]]]
            lo = launches[len(launches) * (2 + r % 3) // 7]
        out.append((lo, hi, win))
    return out


def file_name(cfg, r, wi, hi):
    if cfg.case in ("one-folder", "no-distinfo"):
        # tensorboard_trace_handler's default worker name, {hostname}_{pid}
        return f"{cfg.host_name(r)}_{cfg.pid_of(r)}.{(hi + cfg.skew_of(r)) // 1_000_000}.pt.trace.json"
    if cfg.case == "repeat":
        return f"rank{r}.{(hi + cfg.skew_of(r)) // 1_000_000}.pt.trace.json"
    if cfg.case == "big-group" or cfg.skews:
        return f"machine{cfg.machine_of(r)}/rank{r}.pt.trace.json"
    return f"rank{r}.pt.trace.json"


if __name__ == "__main__":
    sys.exit(main())
