#!/usr/bin/env python3
"""Writes pipeline runs whose actions overlap a forward and a backward, labelled
the way the frameworks label them, with the true figures beside them.

    overlap_run.py -o DIR --schedule dualpipev --pp 4 --micro-batches 8 [--split-labels]
    overlap_run.py -o DIR --schedule paddle-1f1b --pp 4 --micro-batches 8 --pieces 2

dualpipev: PyTorch profiler traces (DIR/rankR.pt.trace.json) of
torch.distributed.pipelining's ScheduleDualPipeV, transcribed here from
torch/distributed/pipelining/schedules.py (_calculate_single_rank_operations,
pytorch 00722e6): each rank holds stages r and 2P-1-r; the overlapped actions
are one profiler range named as _get_profiler_function_name names the action,
`PP:(1F6;6B2)OVERLAP_F_B`, and _step_microbatches runs its sub-actions in order
(the forward, then the full backward), each on its own input, and sends both
outputs after the action (_add_send_recv puts SEND_F and SEND_B after it).
--split-labels runs and writes each sub-action as an action of its own (PP:1F6,
PP:6B2), each output sent after its own action.

The trace is written as the profiler writes it (--trace):
  kernels    (default) each action's work as kernels with their launches
             (cudaLaunchKernel, correlation ids): a forward's launched from the
             range's own thread, under aten ops; a backward's (B, I, W) from
             autograd's device thread, each under an
             `autograd::engine::evaluate_function: ...` op (the last stage's
             backward first launches the loss gradient's fill kernel from the
             range's thread, as torch.autograd.backward makes it there); a GPU
             annotation over the kernels launched from the range's thread; in
             Kineto's order (CPU events, then runtime calls and kernels in time
             order, then GPU annotations).
  one-thread the same with every launch from the range's thread (autograd
             without its device thread, set_multithreading_enabled(False)).
  cpu        a CPU-only run: the annotations alone, over the work itself.
truth.json also holds every action's true sub-op intervals.

paddle-fthenb, paddle-eager1f1b: the same logs of Paddle's FThenB and Eager1F1B
passes (pipeline_fthenb.py, pipeline_eager_1f1b.py), one job an action.
paddle-zbh1: Paddle's ZBH1 pass (pipeline_zero_bubble.py,
PipelineZeroBubblePipelinePass._create_job_list, Paddle 06a80bf).
torch-interleavedzerobubble: PyTorch's ScheduleInterleavedZeroBubble with one
stage per rank (_get_warmup_ops with multiply_factor 1, _get_1f1b_rank_ops with
enable_zero_bubble, pytorch 00722e6), written as the same job lines
(backward_b for its I, backward_w for its W) so that its run's figures can be
measured as the others'.

paddle-1f1b: PaddlePaddle static worker logs of Pipeline1F1BPass
(pipeline_1f1b.py, Paddle 0ab6998) with enable_backward_forward_overlap: the
steady phase runs backward(chunk0), forward(chunk0), backward(chunk1), ... (the
pieces _split_program_for_overlapping cuts the programs into, as
jobs_in_stable_phase orders them); warm-up forwards and cool-down backwards are
whole. --pieces 0 writes the same run with the overlap off.

The costs do not follow the engine's replay model: each micro-batch has a cost
factor shared by every stage (--mb-pattern, e.g. 1,1,1,1.6), every op pays a
fixed cost (--op-fixed-us) beside its share of the stage's work, and the
optimizer starts before the last backward of the step ends (--opt-overlap-us,
Paddle only). truth.json holds the true step windows (first job start of the
step to the first job start of the next one, the last step to its last end).

Written independently of the engine and of `pipescope simulate`.
"""

import argparse
import json
import random
from pathlib import Path


def dualpipev_actions(p, m, rank):
    """torch's ScheduleDualPipeV._calculate_single_rank_operations for `rank`:
    a list of actions, each a tuple of sub-actions (stage, op, mb)."""
    actions = []
    counters = {}
    weight_queue = []
    s0, s1 = rank, 2 * p - 1 - rank

    def inc_backward(stage):
        for key in ((stage, "I"), (stage, "W")):
            counters[key] = counters.get(key, 0) + 1

    def add_overlap(fs, bs):
        fmb = counters.get((fs, "F"), 0)
        bmb = counters.get((bs, "I"), 0)
        actions.append(((fs, "F", fmb), (bs, "B", bmb)))
        counters[(fs, "F")] = fmb + 1
        inc_backward(bs)

    def add(stage, op):
        key = (stage, op) if op != "B" else (stage, "I")
        mb = counters.get(key, 0)
        actions.append(((stage, op, mb),))
        if op == "B":
            inc_backward(stage)
        else:
            if op == "I":
                weight_queue.append((stage, mb))
            counters[key] = mb + 1

    def weight_if_pending():
        if not weight_queue:
            return
        stage, mb = weight_queue.pop(0)
        actions.append(((stage, "W", mb),))
        counters[(stage, "W")] = counters.get((stage, "W"), 0) + 1

    for _ in range((p - rank - 1) * 2):
        add(s0, "F")
    for _ in range(rank + 1):
        add(s0, "F")
        add(s1, "F")
    for _ in range(p - rank - 1):
        add(s1, "I")
        weight_if_pending()
        add(s1, "F")
    for i in range(m - p * 2 + rank + 1):
        if i == 0 and rank == p - 1:
            add(s0, "F")
            add(s1, "B")
        else:
            add_overlap(s0, s1)
        add_overlap(s1, s0)
    for _ in range(p - rank - 1):
        add(s1, "B")
        add_overlap(s1, s0)
    step_6 = rank + 1
    zb = False
    for i in range(step_6):
        if i == step_6 // 2 and rank % 2 == 1:
            zb = True
        add(s1, "I" if zb else "B")
        if i == step_6 // 2 and rank % 2 == 0:
            zb = True
        add(s0, "I" if zb else "B")
    for _ in range(p - rank - 1):
        weight_if_pending()
        add(s0, "I" if zb else "B")
    for _ in range(rank + 1):
        weight_if_pending()
    return actions


def paddle_1f1b_actions(p, m, s, pieces):
    """Pipeline1F1BPass._create_job_list of stage s: actions of (type, mb)
    sub-jobs; with pieces > 0 the steady phase's (backward, forward) pair is
    cut into pieces, as jobs_in_stable_phase orders them."""
    warmup = p - s
    actions = [(("forward", f),) for f in range(warmup)]
    for i in range(m - warmup):
        b, f = i, warmup + i
        if pieces:
            unit = []
            for k in range(pieces):
                unit += [(f"backward(chunk{k})", b), (f"forward(chunk{k})", f)]
            actions.append(tuple(unit))
        else:
            actions.append((("backward", b),))
            actions.append((("forward", f),))
    actions += [(("backward", b),) for b in range(m - warmup, m)]
    return actions


def paddle_plain_actions(kind, p, m, s):
    """Paddle's FThenB pass (every forward, then every backward) and
    Eager1F1B pass (2(P-s)-1 warm-up forwards, then (backward, forward)
    pairs, then the rest of the backwards), one job an action."""
    if kind == "paddle-fthenb":
        return [(("forward", f),) for f in range(m)] + [(("backward", b),) for b in range(m)]
    warmup = min(2 * (p - s) - 1, m)
    actions = [(("forward", f),) for f in range(warmup)]
    for i in range(m - warmup):
        actions += [(("backward", i),), (("forward", warmup + i),)]
    actions += [(("backward", b),) for b in range(m - warmup, m)]
    return actions


def paddle_zbh1_actions(p, m, s):
    """Paddle's PipelineZeroBubblePipelinePass._create_job_list for stage s:
    P-s forwards; s (backward_b, forward) pairs; M-P (backward, forward)
    pairs; P-s-1 backwards; backward_b and backward_w of the next micro-batch
    (stage 0: a backward); the backward_w of micro-batches 0..s-1."""
    warmup = p - s
    out = [("F", f) for f in range(warmup)]
    f, b = warmup, 0
    for _ in range(s):
        out += [("I", b), ("F", f)]
        b, f = b + 1, f + 1
    for _ in range(m - p):
        out += [("B", b), ("F", f)]
        b, f = b + 1, f + 1
    for _ in range(warmup - 1):
        out.append(("B", b))
        b += 1
    out += [("I", b), ("W", b)] if s > 0 else [("B", b)]
    out += [("W", i) for i in range(s)]
    return [(a,) for a in out]


def torch_interleaved_zb_actions(p, m, r):
    """torch's ScheduleInterleavedZeroBubble with one stage per rank:
    _get_warmup_ops(rank, 1, ..., multiply_factor=1) warm-up forwards, then
    _get_1f1b_rank_ops(enable_zero_bubble, num_1f1b_microbatches=rank): a
    forward and an I per op, a W once op - warmup >= rank, the I's of the
    cool-down, the W's left (the bubbles it adds are no actions)."""
    warmup = min(p - 1 - r, m)
    fwd_bwd, cooldown = m - warmup, warmup
    out, f, b, w, backward_ops = [], 0, 0, 0, 0
    for op in range(warmup + fwd_bwd + cooldown):
        if op < warmup:
            out.append(("F", f))
            f += 1
            continue
        if op < warmup + fwd_bwd:
            out.append(("F", f))
            f += 1
        out.append(("I", b))
        b += 1
        backward_ops += 1
        if op - warmup >= r:
            out.append(("W", w))
            w += 1
    while w < backward_ops:
        out.append(("W", w))
        w += 1
    return [(a,) for a in out]


class Costs:
    def __init__(self, args, rng, stages):
        self.args, self.rng = args, rng
        pattern = [float(x) for x in args.mb_pattern.split(",")] if args.mb_pattern else [1.0]
        self.pattern = pattern
        self.stage_factor = [1.0 + 0.15 * ((s * 7) % 5) / 4 for s in range(stages)]

    def op(self, kind, stage, mb, share=1.0):
        base = {"F": self.args.forward_ms, "B": self.args.forward_ms * 2,
                "I": self.args.forward_ms, "W": self.args.forward_ms}[kind] * 1e6
        work = base * self.stage_factor[stage] * self.pattern[mb % len(self.pattern)] * share
        work *= 1 + self.rng.uniform(-self.args.jitter, self.args.jitter)
        return int(work + self.args.op_fixed_us * 1000)


def simulate(rank_actions, stage_of_rank_stage, n_global, latency_ns, costs, steps, optimizer_ns,
             opt_overlap_ns, rank_of_global, one_action=False):
    """Runs every rank's actions in order, each sub-op on its own input:
    returns {rank: [(step, sub, start, end)]}. A sub is (kind, global stage,
    mb, piece, pieces). With one_action, an action of several sub-ops sends
    their outputs when it ends (torch's OVERLAP_F_B); otherwise each at its
    own end."""
    ranks = sorted(rank_actions)
    jobs = {r: [] for r in ranks}
    free = {r: 1_000_000 for r in ranks}  # room for the host before the first kernel
    for step in range(steps):
        f_done, b_done = {}, {}
        cursor = {r: 0 for r in ranks}
        pending = sum(len(a) for a in rank_actions.values())
        while pending:
            progress = False
            for r in ranks:
                acts = rank_actions[r]
                while cursor[r] < len(acts):
                    action = acts[cursor[r]]
                    # An action starts only when its first sub-op can (the
                    # others wait for theirs inside it).
                    t = free[r]
                    planned = []
                    ok = True
                    for sub in action:
                        kind, g, mb, piece, n_pieces = sub
                        ready = 0
                        if kind == "F" and g > 0 and piece == 0:
                            key = (g - 1, mb)
                            if key not in f_done:
                                ok = False
                                break
                            ready = f_done[key] + (latency_ns if rank_of_global[g - 1] != r else 0)
                        if kind in ("B", "I") and g < n_global - 1 and piece == 0:
                            key = (g + 1, mb)
                            if key not in b_done:
                                ok = False
                                break
                            ready = b_done[key] + (latency_ns if rank_of_global[g + 1] != r else 0)
                        start = max(t, ready)
                        end = start + costs.op(kind, g, mb, 1.0 / n_pieces)
                        planned.append((sub, start, end))
                        t = end
                    if not ok:
                        break
                    action_end = planned[-1][2]
                    for sub, start, end in planned:
                        kind, g, mb, piece, n_pieces = sub
                        jobs[r].append((step, sub, start, end))
                        if piece == n_pieces - 1:
                            sent = action_end if one_action and len(planned) > 1 else end
                            (f_done if kind == "F" else b_done if kind in ("B", "I") else {})[
                                (g, mb)] = sent
                    free[r] = t
                    cursor[r] += 1
                    pending -= 1
                    progress = True
            if not progress:
                raise RuntimeError("deadlock")
        for r in ranks:
            if optimizer_ns:
                start = max(free[r] - opt_overlap_ns, jobs[r][-1][2] + 1)
                end = start + optimizer_ns
                jobs[r].append((step, ("O", -1, 0, 0, 1), start, end))
                free[r] = max(end, free[r])
            free[r] += 200_000  # the host's work between steps
    return jobs


def step_windows(jobs):
    starts = {}
    last_end = 0
    for r, js in jobs.items():
        for step, sub, start, end in js:
            starts[step] = min(starts.get(step, start), start)
            last_end = max(last_end, end)
    keys = sorted(starts)
    return [{"step": k, "start_ns": starts[k],
             "end_ns": starts[keys[i + 1]] if i + 1 < len(keys) else last_end}
            for i, k in enumerate(keys)]


MAIN_TID, AUTOGRAD_TID = 4242, 4243
KERNELS_PER_OP = 3
FILL_NS = 2_000  # the loss gradient's fill kernel (torch.ones_like)


def write_torch(out, args, jobs, base_ns, n_global):
    """jobs: {rank: [(step, name, [(kind, g, mb, start, end), ...])]}, the
    actions of a rank in order, each with its sub-ops' true GPU intervals."""
    for r, actions in jobs.items():
        cpu, runtime, gpu = [], [], []
        ext = [0]
        corr = [0]

        def next_ext():
            ext[0] += 1
            return ext[0]

        def x(cat, name, pid, tid, start, end, **a):
            return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                    "ts": start / 1000, "dur": (end - start) / 1000, "args": a}

        def launch(tid, at, start, end, name, parent_ext):
            assert at + 1_000 <= start, f"a kernel that starts before its launch {name} {at} {start} {r}"
            corr[0] += 1
            runtime.append(x("cuda_runtime", "cudaLaunchKernel", 4242, tid, at, at + 1_000,
                             correlation=corr[0], **{"External id": parent_ext}))
            runtime.append(x("kernel", name, 0, 7, start, end, device=0, stream=7,
                             correlation=corr[0], **{"External id": parent_ext}))
            return start, end

        by_step = {}
        for step, _, subs in actions:
            lo, hi = by_step.get(step, (None, None))
            s0, e1 = subs[0][3], subs[-1][4]
            by_step[step] = (s0 if lo is None else min(lo, s0), e1 if hi is None else max(hi, e1))
        for step, (lo, hi) in by_step.items():
            cpu.append(x("user_annotation", f"ProfilerStep#{step}", 4242, MAIN_TID, lo - 50_000,
                         hi + 10_000, **{"External id": next_ext()}))
        host = 0
        for step, name, subs in actions:
            start, end = subs[0][3], subs[-1][4]
            if args.trace == "cpu":
                # A CPU-only run: the range is the work itself.
                cpu.append(x("user_annotation", name, 4242, MAIN_TID, start, end,
                             **{"External id": next_ext()}))
                continue
            range_ext = next_ext()
            hs = max(start - 40_000, host + 1_000)
            t = hs + 1_000
            main_kernels = []
            for kind, g, mb, s, e in subs:
                backward = kind != "F"
                tid = AUTOGRAD_TID if backward and args.trace == "kernels" else MAIN_TID
                if kind in ("B", "I") and g == n_global - 1:
                    # torch.autograd.backward makes the loss's gradient (ones)
                    # on the calling thread before the engine runs.
                    op_ext = next_ext()
                    cpu.append(x("cpu_op", "aten::ones_like", 4242, MAIN_TID, t, t + 3_000,
                                 **{"External id": op_ext}))
                    main_kernels.append(launch(MAIN_TID, t + 1_000, s, s + FILL_NS,
                                               "vectorized_elementwise_kernel<fill>", op_ext))
                    t += 4_000
                    s += FILL_NS
                bounds = [s + (e - s) * k // KERNELS_PER_OP for k in range(KERNELS_PER_OP + 1)]
                for k in range(KERNELS_PER_OP):
                    op_ext = next_ext()
                    op = "autograd::engine::evaluate_function: MmBackward0" if backward \
                        else "aten::mm"
                    cpu.append(x("cpu_op", op, 4242, tid, t, t + 3_000, **{"External id": op_ext}))
                    span = launch(tid, t + 1_000, bounds[k], bounds[k + 1], "gemm_kernel", op_ext)
                    if tid == MAIN_TID:
                        main_kernels.append(span)
                    t += 4_000
            he = t + 1_000
            host = he
            cpu.append(x("user_annotation", name, 4242, MAIN_TID, hs, he,
                         **{"External id": range_ext}))
            if main_kernels:
                gpu.append(x("gpu_user_annotation", name, 0, 7, min(k[0] for k in main_kernels),
                             max(k[1] for k in main_kernels), **{"External id": range_ext}))
        cpu.sort(key=lambda e: e["ts"])
        runtime.sort(key=lambda e: e["ts"])
        gpu.sort(key=lambda e: e["ts"])
        doc = {"schemaVersion": 1,
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": len(jobs)},
               "traceEvents": cpu + runtime + gpu, "traceName": "trace",
               "baseTimeNanoseconds": base_ns}
        (out / f"rank{r}.pt.trace.json").write_text(json.dumps(doc))


def ms_text(ns):
    return f"{ns // 1_000_000}.{ns % 1_000_000:06d}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--schedule", required=True,
                    choices=["dualpipev", "paddle-1f1b", "paddle-fthenb", "paddle-eager1f1b",
                             "paddle-zbh1", "torch-interleavedzerobubble"])
    ap.add_argument("--pp", type=int, default=4)
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--pieces", type=int, default=2)
    ap.add_argument("--split-labels", action="store_true")
    ap.add_argument("--trace", choices=["kernels", "one-thread", "cpu"], default="kernels")
    ap.add_argument("--forward-ms", type=float, default=10.0)
    ap.add_argument("--jitter", type=float, default=0.02)
    ap.add_argument("--mb-pattern", default="")
    ap.add_argument("--op-fixed-us", type=float, default=0.0)
    ap.add_argument("--latency-us", type=float, default=100.0)
    ap.add_argument("--optimizer-ms", type=float, default=5.0)
    ap.add_argument("--opt-overlap-us", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    p, m = args.pp, args.micro_batches
    base_ns = 1_700_000_000_000_000_000
    latency = int(args.latency_us * 1000)
    if args.schedule == "dualpipev":
        n_global = 2 * p
        rank_of_global = {g: (g if g < p else 2 * p - 1 - g) for g in range(n_global)}
        actions = {}
        for r in range(p):
            acts = [tuple((kind, g, mb, 0, 1) for (g, kind, mb) in a)
                    for a in dualpipev_actions(p, m, r)]
            if args.split_labels:  # every sub-action an action of its own
                acts = [(sub,) for a in acts for sub in a]
            actions[r] = acts
        costs = Costs(args, rng, n_global)
        jobs = simulate(actions, None, n_global, latency, costs, args.steps, 0, 0, rank_of_global,
                        one_action=True)

        def label(sub):
            kind, g, mb = sub[:3]
            return f"{g}{kind}{mb}"
        named = {}
        for r, js in jobs.items():
            rows = []
            # The actions' ranges: consecutive sub-ops of one action.
            sizes = [len(a) for a in actions[r]]
            per_step = sum(sizes)
            for step in range(args.steps):
                chunk = js[step * per_step:(step + 1) * per_step]
                k = 0
                for n in sizes:
                    subs = [(sub[0], sub[1], sub[2], st, en) for _, sub, st, en in chunk[k:k + n]]
                    k += n
                    name = (f"PP:{label(subs[0])}" if n == 1 else
                            "PP:(" + ";".join(label(sub) for sub in subs) + ")OVERLAP_F_B")
                    rows.append((step, name, subs))
            named[r] = rows
        write_torch(out, args, named, base_ns, n_global)
        truth_actions = {r: [{"step": st, "name": nm,
                              "subs": [{"kind": k, "stage": g, "mb": mb, "start_ns": s0,
                                        "end_ns": e0} for k, g, mb, s0, e0 in subs]}
                             for st, nm, subs in rows] for r, rows in named.items()}
        named = {r: [(st, None, subs[0][3], subs[-1][4]) for st, _, subs in rows]
                 for r, rows in named.items()}
    else:
        n_global = p
        rank_of_global = {g: g for g in range(p)}
        actions = {}
        for s in range(p):
            acts = []
            if args.schedule == "paddle-1f1b":
                lists = paddle_1f1b_actions(p, m, s, args.pieces)
            elif args.schedule == "paddle-zbh1":
                lists = paddle_zbh1_actions(p, m, s)
            elif args.schedule == "torch-interleavedzerobubble":
                lists = torch_interleaved_zb_actions(p, m, s)
            else:
                lists = paddle_plain_actions(args.schedule, p, m, s)
            for a in lists:
                subs = []
                for typ, mb in a:
                    kind = typ if typ in ("F", "B", "I", "W") else (
                        "F" if typ.startswith("forward") else "B")
                    piece = int(typ[len("forward(chunk") if kind == "F" else len("backward(chunk"):
                                    -1]) if "(" in typ else 0
                    n = args.pieces if "(" in typ else 1
                    subs.append((kind, s, mb, piece, n))
                acts.append(tuple(subs))
            actions[s] = acts
        costs = Costs(args, rng, p)
        base = base_ns
        jobs = simulate(actions, None, p, latency, costs, args.steps,
                        int(args.optimizer_ms * 1e6), int(args.opt_overlap_us * 1000),
                        rank_of_global)
        for s, js in jobs.items():
            lines = []
            for n, (step, sub, start, end) in enumerate(js):
                kind, g, mb, piece, n_pieces = sub
                if kind == "O":
                    typ, mb = "optimizer", 0
                elif n_pieces > 1:
                    typ = f"{'forward' if kind == 'F' else 'backward'}(chunk{piece})"
                else:
                    typ = {"F": "forward", "B": "backward", "I": "backward_b",
                           "W": "backward_w"}[kind]
                lines.append(f"I1114 22:13:20.000000 1 standalone_executor.cc:217] Profiler "
                             f"Info: Job ({n}), type = {typ}, micro_batch_id = {mb}, "
                             f"job_start_time = {ms_text(base + start)}, "
                             f"job_end_time = {ms_text(base + end)}")
            (out / f"workerlog.{s}").write_text("\n".join(lines) + "\n")
        named = jobs
    windows = step_windows({r: [(st, None, s, e) for st, _, s, e in js]
                            for r, js in (named if args.schedule == "dualpipev" else jobs).items()})
    truth = {"steps": windows}
    if args.schedule == "dualpipev":
        truth["actions"] = truth_actions
    (out / "truth.json").write_text(json.dumps(truth, indent=1))


if __name__ == "__main__":
    main()
