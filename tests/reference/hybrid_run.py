#!/usr/bin/env python3
"""Generates a hybrid-parallel (data x pipeline x tensor) PaddlePaddle run.

    hybrid_run.py -o DIR --pp 4 --dp 2 --tp 1 --order dp,pp,tp
                  --gpus-per-machine 4 --schedule 1f1b --micro-batches 8
                  --steps 3 --seed 1 [--skew MACHINE:NS ...]
                  [--replica-jitter independent|shared] [--symmetric-latency] ...

Writes DIR/machineK/workerlog.N (N: the rank within machine K) with PaddlePaddle's
`Profiler Info: Job` lines, and DIR/truth.json: the layout (every global rank's
machine, stage, replica and tensor-parallel index), the skews, and the run's
figures computed from the true (unskewed) times by the metric contract
(pipescope_reference.py), for the whole run and for each replica alone.

Written independently of the engine and of `pipescope simulate`, on purpose with
other assumptions, so that tests can catch errors both would share:

- Mesh. Axes dp, pp, tp in any order, outermost first, the last axis fastest
  (Paddle fleet's CommunicateTopology: dp,pp,(sharding,sep),mp = "dp,pp,tp";
  Megatron, DeepSpeed and torchtitan: "pp,dp,tp"). Rank r is on machine
  r // gpus_per_machine.
- Schedules. Paddle's static job lists: fthenb (all forwards, all backwards,
  optimizer) and 1f1b (stage s: P-s forwards, then (backward, forward) pairs,
  then the remaining backwards, then optimizer).
- Timing, in integer ns. A job starts when the device finished its previous job
  and its input arrived: F(m) on stage s waits for F(m) on stage s-1 of the same
  replica, B(m) for B(m) on stage s+1 (the last stage for its own F(m)), each
  plus a link latency that depends on whether the two ranks share a machine and
  on the direction (activations forward, gradients backward: other sizes), with
  a small random part; --symmetric-latency makes it one constant per link type.
- Tensor parallelism. The tp peers of a (replica, stage) run the same jobs, start
  each a little apart (a launch jitter, 0-20 us) and end together (their
  all-reduce): end = latest start + cost.
- Data parallelism. The optimizer of stage s starts after every replica's stage s
  finished its last backward, plus a gradient all-reduce time; with
  --replica-jitter independent every replica draws its own costs, with shared all
  replicas of a stage run identical times.
- --skew MACHINE:NS adds NS to every time machine MACHINE writes (its clock reads
  NS ahead). The true times do not depend on the skews.
"""

import argparse
import itertools
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pipescope_reference  # noqa: E402  (the independent metric contract)

AXES = ("dp", "pp", "tp")
ORDERS = [",".join(p) for p in itertools.permutations(AXES)]
BASE_EPOCH_NS = 1_700_000_000_000 * 1_000_000  # 2023-11-14, ms since the epoch x 10^6


# ---------------------------------------------------------------- layout

class Layout:
    """Where each (replica d, stage s, tp index t) runs."""

    def __init__(self, pp, dp, tp, order, gpus_per_machine):
        self.pp, self.dp, self.tp = pp, dp, tp
        self.order = order.split(",")
        if sorted(self.order) != sorted(AXES):
            raise ValueError(f"--order {order}: a permutation of dp,pp,tp expected")
        self.size = {"dp": dp, "pp": pp, "tp": tp}
        self.world = pp * dp * tp
        self.gpm = gpus_per_machine
        if self.gpm < 1:
            raise ValueError("--gpus-per-machine must be at least 1")
        if self.world > self.gpm and self.world % self.gpm:
            raise ValueError(f"{self.world} ranks do not fill machines of {self.gpm}")
        self.machines = (self.world + self.gpm - 1) // self.gpm

    def rank(self, d, s, t):
        coords = {"dp": d, "pp": s, "tp": t}
        r = 0
        for axis in self.order:  # outermost first, the last axis fastest
            r = r * self.size[axis] + coords[axis]
        return r

    def machine(self, rank):
        return rank // self.gpm

    def local_rank(self, rank):
        return rank % self.gpm

    def coords(self):
        for d in range(self.dp):
            for s in range(self.pp):
                for t in range(self.tp):
                    yield d, s, t

    def to_json(self):
        ranks = []
        by_rank = {self.rank(d, s, t): (d, s, t) for d, s, t in self.coords()}
        for r in range(self.world):
            d, s, t = by_rank[r]
            ranks.append({"rank": r, "device": r, "machine": self.machine(r),
                          "local_rank": self.local_rank(r), "stage": s, "replica": d,
                          "tp": t})
        return {
            "pp": self.pp, "dp": self.dp, "tp": self.tp, "order": ",".join(self.order),
            "gpus_per_machine": self.gpm, "machines": self.machines, "ranks": ranks,
            "stages": [{"stage": s, "devices": sorted(self.rank(d, s, t)
                                                      for d in range(self.dp)
                                                      for t in range(self.tp))}
                       for s in range(self.pp)],
            "replicas": [{"replica": d, "devices": sorted(self.rank(d, s, t)
                                                          for s in range(self.pp)
                                                          for t in range(self.tp))}
                         for d in range(self.dp)],
        }


# ---------------------------------------------------------------- schedules

def job_list(schedule, P, s, M):
    """The (type, micro-batch) list stage s of P runs in one step."""
    if schedule == "fthenb":
        jobs = [("forward", m) for m in range(M)] + [("backward", m) for m in range(M)]
    elif schedule == "1f1b":
        warm = min(P - s, M)
        jobs = [("forward", m) for m in range(warm)]
        f, b = warm, 0
        while f < M:
            jobs += [("backward", b), ("forward", f)]
            b, f = b + 1, f + 1
        jobs += [("backward", m) for m in range(b, M)]
    else:
        raise ValueError(f"unknown schedule {schedule}")
    return jobs + [("optimizer", 0)]


# ---------------------------------------------------------------- timing

class Costs:
    """All durations and latencies in integer ns, drawn from seeded streams that
    do not depend on the order in which the simulation asks for them."""

    def __init__(self, args, layout):
        self.a, self.layout = args, layout
        self.P = layout.pp
        self.scale = parse_scales(args.stage_scale, self.P)
        self.slow = dict(args.slow_replica or [])
        self.lists = [job_list(args.schedule, self.P, s, args.micro_batches)
                      for s in range(self.P)]
        self.cost, self.launch, self.wire = {}, {}, {}
        keys = [0] if args.replica_jitter == "shared" else range(layout.dp)
        for key in keys:
            for s in range(self.P):
                self._draw(key, s)

    def key(self, d):
        return 0 if self.a.replica_jitter == "shared" else d

    def _draw(self, key, s):
        a, tp = self.a, self.layout.tp
        seed = f"hybrid_run:{a.seed}:{key}:{s}"
        costs, launches, wires = (random.Random(seed + ":cost"),
                                  random.Random(seed + ":launch"),
                                  random.Random(seed + ":wire"))
        forward = a.forward_us * 1000 * self.scale[s] // 1000
        base = {"forward": forward,
                "backward": forward * a.backward_permille // 1000,
                "optimizer": a.optimizer_us * 1000}
        for k in range(a.steps):
            for i, (kind, _) in enumerate(self.lists[s]):
                b = base[kind]
                amp = b * a.jitter_permille // 1000
                self.cost[key, s, k, i] = b + costs.randint(-amp, amp)
                # Launch offsets of the tp peers, relative to the earliest one.
                draws = [launches.randint(0, a.tp_launch_jitter_us * 1000)
                         for _ in range(tp)]
                low = min(draws)
                self.launch[key, s, k, i] = [x - low for x in draws]
                # Random part of the latency of the message each peer receives.
                self.wire[key, s, k, i] = [wires.randint(0, a.wire_jitter_us * 1000)
                                           for _ in range(tp)]

    def job_cost(self, d, s, k, i):
        c = self.cost[self.key(d), s, k, i]
        factor = self.slow.get(d)
        return c * factor // 1000 if factor else c

    def launch_offsets(self, d, s, k, i):
        return self.launch[self.key(d), s, k, i]

    def latency(self, src, dst, direction, d, s, k, i, t):
        """ns from the producer's end to the data being usable on rank dst."""
        a = self.a
        same = self.layout.machine(src) == self.layout.machine(dst)
        base = (a.intra_latency_us if same else a.inter_latency_us) * 1000
        if a.symmetric_latency:
            return base
        size = a.activation_bytes if direction == "forward" else a.gradient_bytes
        mbps = a.intra_mb_per_ms if same else a.inter_mb_per_ms  # MB/ms = GB/s
        transfer = size // mbps  # bytes / (MB per ms) = ns
        return base + transfer + self.wire[self.key(d), s, k, i][t]

    def allreduce(self, s):
        """Gradient all-reduce of stage s over its replicas."""
        a, L = self.a, self.layout
        if L.dp == 1:
            return 0
        machines = {L.machine(L.rank(d, s, t)) for d in range(L.dp) for t in range(L.tp)}
        extra = a.inter_allreduce_us * 1000 if len(machines) > 1 else 0
        return a.allreduce_us * 1000 + s * a.allreduce_stage_us * 1000 + extra


def parse_scales(text, P):
    """Stage cost factors in permille. Default: the last stage 10% slower (loss
    and head), the first 5% (embedding)."""
    if text:
        values = [int(round(float(x) * 1000)) for x in text.split(",")]
        if len(values) != P:
            raise ValueError(f"--stage-scale needs {P} values")
        return values
    scales = [1000] * P
    if P > 1:
        scales[0] = 1050
    scales[-1] = 1100
    return scales


def simulate(args, layout):
    """True (unskewed) job times: {rank: [(step, list index, type, mb, start, end)]}."""
    costs = Costs(args, layout)
    P, L, steps = layout.pp, layout, args.steps
    lists = costs.lists
    groups = [(d, s) for d in range(L.dp) for s in range(P)]
    pos = {g: 0 for g in groups}            # next (step, index) as a flat position
    group_end = {g: BASE_EPOCH_NS for g in groups}
    ends = {}      # (kind, step, mb, d, s) -> end of the group's job
    last_backward = {}  # (step, d, s) -> end of the group's last backward
    times = {r: [] for r in range(L.world)}
    n_jobs = {s: len(lists[s]) for s in range(P)}
    last_b_index = {s: max(i for i, (kind, _) in enumerate(lists[s]) if kind == "backward")
                    for s in range(P)}
    gap = args.step_gap_us * 1000

    def ready(d, s, k, i):
        """When the job's input is there, or None if its producer has not run."""
        kind, m = lists[s][i]
        if kind == "forward" and s > 0:
            src = ends.get(("forward", k, m, d, s - 1))
            if src is None:
                return None
            return src + max(costs.latency(L.rank(d, s - 1, t), L.rank(d, s, t), "forward",
                                           d, s, k, i, t) for t in range(L.tp))
        if kind == "backward" and s < P - 1:
            src = ends.get(("backward", k, m, d, s + 1))
            if src is None:
                return None
            return src + max(costs.latency(L.rank(d, s + 1, t), L.rank(d, s, t), "backward",
                                           d, s, k, i, t) for t in range(L.tp))
        if kind == "optimizer":
            done = [last_backward.get((k, e, s)) for e in range(L.dp)]
            if any(x is None for x in done):
                return None
            return max(done) + costs.allreduce(s)
        return 0  # stage 0's forwards, the last stage's backwards: the device order

    remaining = sum(n_jobs[s] * steps for _, s in groups)
    while remaining:
        progress = False
        for g in groups:
            d, s = g
            while pos[g] < n_jobs[s] * steps:
                k, i = divmod(pos[g], n_jobs[s])
                r = ready(d, s, k, i)
                if r is None:
                    break
                start = max(group_end[g] + (gap if i == 0 and k > 0 else 0), r)
                offsets = costs.launch_offsets(d, s, k, i)
                end = start + max(offsets) + costs.job_cost(d, s, k, i)
                kind, m = lists[s][i]
                for t in range(L.tp):
                    times[L.rank(d, s, t)].append((k, i, kind, m, start + offsets[t], end))
                ends[kind, k, m, d, s] = end
                if i == last_b_index[s]:
                    last_backward[k, d, s] = end
                group_end[g] = end
                pos[g] += 1
                remaining -= 1
                progress = True
        if not progress:
            raise RuntimeError("the schedule deadlocked (a bug in the generator)")
    return times


# ---------------------------------------------------------------- writing

def ms_text(ns):
    """ns since the epoch -> milliseconds with exactly 6 decimals."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1_000_000}.{ns % 1_000_000:06d}"


def glog_prefix(ns, thread, source):
    seconds, rest = divmod(ns, 1_000_000_000)
    tm = time.gmtime(seconds)
    return (f"I{tm.tm_mon:02d}{tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}:"
            f"{tm.tm_sec:02d}.{rest // 1000:06d} {thread} {source}]")


def python_prefix(ns):
    seconds, rest = divmod(ns, 1_000_000_000)
    tm = time.gmtime(seconds)
    return (f"[{tm.tm_year}-{tm.tm_mon:02d}-{tm.tm_mday:02d} {tm.tm_hour:02d}:"
            f"{tm.tm_min:02d}:{tm.tm_sec:02d},{rest // 1_000_000:03d}]")


def log_text(args, layout, rank, jobs, skew, steps=()):
    """The worker log of one rank; every time as its machine's clock reads it: ahead by
    the skew, and from each clock step's true time on by that step's size too (an NTP
    step moves every timestamp after it, a job's start and end each by its own)."""
    def clock(t):
        return t + skew + sum(size for at, size in steps if t >= at)

    thread = 20000 + (rank * 7919) % 40000
    first = clock(jobs[0][4]) if jobs else BASE_EPOCH_NS + skew
    t0 = first - 5_000_000_000
    lines = [
        f"{python_prefix(t0)} [    INFO] distributed_strategy.py:214 - distributed strategy initialized",
        "======================= Modified FLAGS detected =======================",
        "FLAGS(name='FLAGS_enable_pir_in_executor', current_value=True, default_value=False)",
        "=======================================================================",
        f"{glog_prefix(t0 + 101_500_000, thread, 'tcp_utils.cc:181')} The server starts to listen on IP_ANY:44311",
        f"{glog_prefix(t0 + 350_000_000, thread, 'process_group_nccl.cc:129')} ProcessGroupNCCL pg_timeout_ 1800000",
        f"W{glog_prefix(t0 + 1_201_000_000, thread, 'gpu_resources.cc:119')[1:]} Please NOTE: device: "
        f"{layout.local_rank(rank)}, GPU Compute Capability: 9.0, Driver API Version: 12.4, Runtime API Version: 12.3",
        f"{python_prefix(t0 + 3_000_000_000)} [    INFO] -   Pipeline parallel degree = {layout.pp}",
        f"{python_prefix(t0 + 3_000_000_000)} [    INFO] -   Data parallel degree = {layout.dp}",
        f"{python_prefix(t0 + 3_000_000_000)} [    INFO] -   Tensor parallel degree = {layout.tp}",
        f"{glog_prefix(t0 + 4_000_000_000, thread, 'pipeline_scheduler_pass.cc:88')} Pipeline schedule plan "
        f"created with {args.micro_batches} micro batches",
        f"{python_prefix(t0 + 4_900_000_000)} [    INFO] - Schedule Profiler start at step 0",
    ]
    by_step = {}
    for job in jobs:
        by_step.setdefault(job[0], []).append(job)
    for k in sorted(by_step):
        mine = by_step[k]  # already in the device's list order
        printed = clock(max(j[5] for j in mine)) + 150_000  # profiler lines come after the step
        lines.append(f"{glog_prefix(printed, thread, 'program_interpreter.cc:212')} New Executor is Running.")
        for n, (_, i, kind, m, start, end) in enumerate(mine):
            lines.append(
                f"{glog_prefix(printed + 20_000 * (n + 1), thread, 'standalone_executor.cc:217')} "
                f"Profiler Info: Job ({i}), type = {kind}, micro_batch_id = {m}, "
                f"job_start_time = {ms_text(clock(start))}, job_end_time = {ms_text(clock(end))}")
            if n % 5 == 4:
                lines.append(f"{glog_prefix(printed + 20_000 * (n + 1) + 3_000, thread, 'nccl_comm_context.cc:94')} "
                             f"Send tensor numel=4194304 to peer 1 on ring_id 1")
        lines.append(f"{glog_prefix(printed + 1_000_000, thread, 'profiler.cc:117')} "
                     f"Profiler Info: cuda events collected = {len(mine) * 6}")
    return "\n".join(lines) + "\n"


def write_logs(folder, args, layout, times, skews, steps=None):
    folder = Path(folder)
    for m in range(layout.machines):
        (folder / f"machine{m}").mkdir(parents=True, exist_ok=True)
    for rank in range(layout.world):
        m = layout.machine(rank)
        path = folder / f"machine{m}" / f"workerlog.{layout.local_rank(rank)}"
        path.write_text(log_text(args, layout, rank, times[rank], skews.get(m, 0),
                                 (steps or {}).get(m, ())))


# ---------------------------------------------------------------- truth

def contract_figures(summary):
    """The metric contract's figures of a pipescope_reference summary."""
    return {
        "jobs": summary["jobs"],
        "bubble_ratio": summary["bubble_ratio"],
        "total_window_ns": summary["total_window_ns"],
        "incomplete_steps": summary["incomplete_steps"],
        "devices": [{k: d[k] for k in ("device", "machine", "rank", "jobs", "steps",
                                       "busy_ns", "idle_ns", "utilization")}
                    for d in summary["devices"]],
        "steps": [{"step": s["step"], "complete": s["complete"], "start_ns": s["start_ns"],
                   "end_ns": s["end_ns"], "duration_ns": s["duration_ns"],
                   "bubble_ratio": s["bubble_ratio"],
                   "devices": [{k: d[k] for k in ("device", "busy_ns", "idle_ns")}
                               for d in s["devices"]]}
                  for s in summary["steps"]],
    }


def replica_figures(folder, layout_json):
    out = []
    for rep in layout_json["replicas"]:
        summary = pipescope_reference.analyse([str(folder)], set(rep["devices"]))
        complete = [s for s in summary["steps"] if s["complete"]]
        out.append({"replica": rep["replica"], "devices": rep["devices"],
                    "bubble_ratio": summary["bubble_ratio"],
                    "total_window_ns": summary["total_window_ns"],
                    "complete_steps": len(complete),
                    # The replica analysed alone (`analyze --devices` of its devices).
                    "figures": contract_figures(summary)})
    if out:
        longest = max(r["total_window_ns"] for r in out)
        for r in out:
            r["slowest"] = r["total_window_ns"] == longest
    return out


def generate(args):
    """Writes the run and truth.json; returns the truth."""
    layout = Layout(args.pp, args.dp, args.tp, args.order, args.gpus_per_machine)
    if args.schedule == "1f1b" and args.micro_batches < args.pp:
        raise ValueError("1f1b needs --micro-batches >= --pp")
    skews = {}
    for m, ns in args.skew or []:
        if not 0 <= m < layout.machines:
            raise ValueError(f"--skew {m}:{ns}: no machine {m} (there are {layout.machines})")
        skews[m] = skews.get(m, 0) + ns
    out = Path(args.output)
    if out.exists():
        # Replace an earlier run (or an empty folder), never anything else.
        if not out.is_dir() or not ((out / "truth.json").is_file() or not any(out.iterdir())):
            raise ValueError(f"{out}: exists and holds no earlier run (no truth.json); "
                             f"not replaced")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    times = simulate(args, layout)
    steps = {}
    for m, at_us, ns in args.clock_step or []:
        if not 0 <= m < layout.machines:
            raise ValueError(f"--clock-step: no machine {m} (there are {layout.machines})")
        steps.setdefault(m, []).append((BASE_EPOCH_NS + at_us * 1000, ns))
    write_logs(out, args, layout, times, skews, steps)
    layout_json = layout.to_json()
    truth = {
        "generator": "hybrid_run.py",
        "layout": layout_json,
        "skews": [{"machine": m, "skew_ns": skews.get(m, 0)} for m in range(layout.machines)],
        "schedule": args.schedule, "micro_batches": args.micro_batches, "steps": args.steps,
        "seed": args.seed, "replica_jitter": args.replica_jitter,
        "symmetric_latency": args.symmetric_latency,
        "options": {k: v for k, v in sorted(vars(args).items())
                    if k not in ("output", "skew", "slow_replica", "clock_step")},
        "slow_replicas": [{"replica": d, "permille": p} for d, p in args.slow_replica or []],
        "clock_steps": [{"machine": m, "at_ns": at, "size_ns": ns}
                        for m, lst in sorted(steps.items()) for at, ns in lst],
    }
    if any(skews.values()) or steps:
        with tempfile.TemporaryDirectory(prefix="hybrid_true_") as tmp:
            write_logs(tmp, args, layout, times, {})
            truth["expected"] = contract_figures(pipescope_reference.analyse([tmp]))
            truth["replicas"] = replica_figures(tmp, layout_json) if layout.dp > 1 else []
        truth["as_written"] = contract_figures(pipescope_reference.analyse([str(out)]))
    else:
        truth["expected"] = contract_figures(pipescope_reference.analyse([str(out)]))
        truth["replicas"] = replica_figures(out, layout_json) if layout.dp > 1 else []
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


# ---------------------------------------------------------------- command line

def skew_arg(text):
    machine, _, ns = text.partition(":")
    try:
        return int(machine), int(ns)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: MACHINE:NS expected, e.g. 1:5000000")


def clock_step_arg(text):
    parts = text.split(":")
    try:
        m, at, ns = (int(x) for x in parts)
        return m, at, ns
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: MACHINE:AT_US:NS expected, e.g. 1:20000:-150000000")


def slow_arg(text):
    replica, _, factor = text.partition(":")
    try:
        return int(replica), int(round(float(factor) * 1000))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: REPLICA:FACTOR expected, e.g. 1:1.2")


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("-o", "--output", required=True, help="run folder (replaced)")
    p.add_argument("--pp", type=int, default=4, help="pipeline stages")
    p.add_argument("--dp", type=int, default=1, help="data-parallel replicas")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel peers per stage")
    p.add_argument("--order", default="dp,pp,tp", choices=ORDERS,
                   help="mesh order, outermost first (the last axis varies fastest)")
    p.add_argument("--gpus-per-machine", type=int, default=8)
    p.add_argument("--schedule", default="1f1b", choices=("fthenb", "1f1b"))
    p.add_argument("--micro-batches", type=int, default=8)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--skew", type=skew_arg, action="append", metavar="MACHINE:NS",
                   help="machine MACHINE's clock reads NS ahead (repeatable)")
    p.add_argument("--clock-step", type=clock_step_arg, action="append",
                   metavar="MACHINE:AT_US:NS",
                   help="machine MACHINE's clock steps by NS (negative: back, as NTP steps a "
                        "clock that ran ahead) AT_US microseconds after the run began")
    p.add_argument("--replica-jitter", default="independent", choices=("independent", "shared"))
    p.add_argument("--slow-replica", type=slow_arg, action="append", metavar="REPLICA:FACTOR",
                   help="scale every job cost of one replica (repeatable)")
    p.add_argument("--forward-us", type=int, default=1000, help="forward cost of a stage")
    p.add_argument("--backward-permille", type=int, default=2000,
                   help="backward cost, permille of the forward")
    p.add_argument("--optimizer-us", type=int, default=400)
    p.add_argument("--stage-scale", help="per-stage cost factors, e.g. 1,1,1,1.1 "
                   "(default: first stage 1.05, last 1.1)")
    p.add_argument("--jitter-permille", type=int, default=80,
                   help="per-job cost jitter, +- permille")
    p.add_argument("--tp-launch-jitter-us", type=int, default=20)
    p.add_argument("--symmetric-latency", action="store_true",
                   help="one constant latency per link type, both directions")
    p.add_argument("--intra-latency-us", type=int, default=15)
    p.add_argument("--inter-latency-us", type=int, default=120)
    p.add_argument("--activation-bytes", type=int, default=4 << 20)
    p.add_argument("--gradient-bytes", type=int, default=6 << 20)
    p.add_argument("--intra-mb-per-ms", type=int, default=150, help="= GB/s, NVLink-like")
    p.add_argument("--inter-mb-per-ms", type=int, default=20, help="= GB/s, network")
    p.add_argument("--wire-jitter-us", type=int, default=8,
                   help="random part of each message's latency")
    p.add_argument("--allreduce-us", type=int, default=300)
    p.add_argument("--allreduce-stage-us", type=int, default=40)
    p.add_argument("--inter-allreduce-us", type=int, default=200)
    p.add_argument("--step-gap-us", type=int, default=200, help="host time between steps")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        truth = generate(args)
    except (ValueError, RuntimeError) as e:
        print(f"hybrid_run.py: {e}", file=sys.stderr)
        return 2
    lay = truth["layout"]
    print(f"{args.output}: pp={lay['pp']} dp={lay['dp']} tp={lay['tp']} order={lay['order']}, "
          f"{lay['machines']} machines, bubble ratio {truth['expected']['bubble_ratio']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
