#!/usr/bin/env python3
"""A real PyTorch pipeline timed by pipescope_timer, checked against time.time_ns().

    torch_1f1b_test.py PIPESCOPE_BINARY WORK_DIR

Four processes (ranks 0-3, one stage each) train a small MLP with a
hand-written 1F1B schedule: activations go forward and gradients backward
with point-to-point send/recv over gloo, every step ends with an optimizer
step. Each forward, backward and optimizer job is timed twice around the same
calls: by the module (host backend: begin/end, flush at each step boundary)
and independently by time.time_ns() just outside it. `pipescope analyze` of
the .ivl files must find the same jobs and steps as the independent timing
and an overall bubble ratio within half a point of the one computed here from
the independent intervals by the metric contract (docs/guide.md); each step's
within two points (a loaded machine can preempt a rank between a clock read
and the module's call: one 30 ms preemption moves a 1.4 s step's ratio by
half a point). Exits 77 (skip) when torch or its gloo backend cannot be
imported.

Debian's python3-torch imports under /usr/bin/python3 only; the module itself
is plain ctypes (PYTHONPATH=build/python).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as e:  # the only reason to skip
    print(f"SKIP: cannot import torch under {sys.executable}: {e}")
    sys.exit(77)
if not dist.is_available() or not dist.is_gloo_available():
    print(f"SKIP: torch {torch.__version__} has no gloo backend")
    sys.exit(77)

import pipescope_timer

RANKS = 4          # pipeline stages, one per process
MICRO_BATCHES = 6
STEPS = 3
FIRST_STEP = 10
BATCH, WIDTH = 32, 512


def stage_jobs(rank):
    """The 1F1B order of one stage: ("F"|"B", micro_batch) for one step."""
    warmup = min(RANKS - rank - 1, MICRO_BATCHES)
    order = [("F", mb) for mb in range(warmup)]
    f, b = warmup, 0
    while f < MICRO_BATCHES:
        order.append(("F", f))
        f += 1
        order.append(("B", b))
        b += 1
    order += [("B", mb) for mb in range(b, MICRO_BATCHES)]
    return order


def run_rank(rank, work_dir, store):
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=RANKS)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh(),
                                torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    timer = pipescope_timer.JobTimer(os.path.join(work_dir, f"workerlog.{rank}.ivl"), rank=rank,
                                     first_step=FIRST_STEP, backend="host")
    for kind in ("forward", "backward", "optimizer"):
        timer.job_type(kind)  # interned up front, as a framework would
    independent = []  # (step, kind, micro_batch, start_ns, end_ns)
    pending = []

    def timed(step, kind, mb, work):
        # The independent clock reads bracket the module's calls as tightly
        # as Python allows.
        t0 = time.time_ns()
        timer.begin(kind, mb)
        result = work()
        timer.end()
        independent.append((step, kind, mb, t0, time.time_ns()))
        return result

    for step in range(FIRST_STEP, FIRST_STEP + STEPS):
        inputs, outputs = {}, {}
        for kind, mb in stage_jobs(rank):
            if kind == "F":
                if rank == 0:
                    x = torch.randn(BATCH, WIDTH)
                else:
                    x = torch.empty(BATCH, WIDTH)
                    dist.recv(x, src=rank - 1)
                x.requires_grad_(rank > 0)
                y = timed(step, "forward", mb, lambda: model(x))
                inputs[mb], outputs[mb] = x, y
                if rank < RANKS - 1:
                    pending.append(dist.isend(y.detach(), dst=rank + 1))
            else:
                x, y = inputs.pop(mb), outputs.pop(mb)
                if rank == RANKS - 1:
                    grad = None
                    loss_of = lambda: y.pow(2).mean()  # noqa: E731
                else:
                    grad = torch.empty(BATCH, WIDTH)
                    dist.recv(grad, src=rank + 1)
                    loss_of = None

                def backward():
                    if loss_of is not None:
                        loss_of().backward()
                    else:
                        y.backward(grad)

                timed(step, "backward", mb, backward)
                if rank > 0:
                    pending.append(dist.isend(x.grad, dst=rank - 1))
        timed(step, "optimizer", 0, lambda: (optimizer.step(), optimizer.zero_grad()))
        for work in pending:
            work.wait()
        pending.clear()
        timer.flush()
    timer.close()
    with open(os.path.join(work_dir, f"independent.{rank}.json"), "w") as f:
        json.dump(independent, f)
    dist.barrier()
    dist.destroy_process_group()


def reference(intervals):
    """Step windows and bubble ratios by the metric contract, from the
    independent intervals: {step: (start, end, ratio)}, overall ratio."""
    steps = sorted({s for rank in intervals for (s, *_rest) in rank})
    windows, previous_end = {}, None
    for k in steps:
        start = min(t0 for rank in intervals for (s, _, _, t0, _) in rank if s == k)
        end = max(t1 for rank in intervals for (s, _, _, _, t1) in rank if s == k)
        if previous_end is not None:
            start = max(start, previous_end)
        end = max(end, start)
        windows[k] = (start, end)
        previous_end = end
    per_step, idle_total, span_total = {}, 0, 0
    for k, (start, end) in windows.items():
        idle = 0
        for rank in intervals:
            spans = sorted((max(t0, start), min(t1, end)) for (_, _, _, t0, t1) in rank
                           if min(t1, end) > max(t0, start))
            busy, cur_s, cur_e = 0, None, None
            for s0, s1 in spans:
                if cur_e is None or s0 > cur_e:
                    busy += 0 if cur_e is None else cur_e - cur_s
                    cur_s, cur_e = s0, s1
                else:
                    cur_e = max(cur_e, s1)
            busy += 0 if cur_e is None else cur_e - cur_s
            idle += (end - start) - busy
        per_step[k] = (start, end, idle / (len(intervals) * (end - start)))
        idle_total += idle
        span_total += len(intervals) * (end - start)
    return per_step, idle_total / span_total


def main():
    pipescope, work_dir = sys.argv[1], sys.argv[2]
    os.makedirs(work_dir, exist_ok=True)
    for name in os.listdir(work_dir):
        if name.startswith(("workerlog.", "independent.", "store")):
            os.remove(os.path.join(work_dir, name))
    started = time.monotonic()
    store = os.path.join(work_dir, "store")
    mp.start_processes(run_rank, args=(work_dir, store), nprocs=RANKS, start_method="fork")
    took = time.monotonic() - started
    intervals = []
    for rank in range(RANKS):
        with open(os.path.join(work_dir, f"independent.{rank}.json")) as f:
            intervals.append([tuple(i) for i in json.load(f)])
    per_step, overall = reference(intervals)

    out = os.path.join(work_dir, "out")
    logs = os.path.join(work_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    for rank in range(RANKS):
        os.replace(os.path.join(work_dir, f"workerlog.{rank}.ivl"),
                   os.path.join(logs, f"workerlog.{rank}.ivl"))
    subprocess.run([pipescope, "analyze", logs, "-o", out, "--no-trace", "-q"], check=True)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)

    failures = []
    jobs = sum(len(rank) for rank in intervals)
    if summary["jobs"] != jobs:
        failures.append(f"jobs: analyze {summary['jobs']}, independent {jobs}")
    got_steps = [s["step"] for s in summary["steps"]]
    if got_steps != sorted(per_step):
        failures.append(f"steps: analyze {got_steps}, independent {sorted(per_step)}")
    print(f"{RANKS} ranks, {MICRO_BATCHES} micro-batches, {STEPS} steps, {jobs} jobs, "
          f"pipeline ran {took:.1f} s (torch {torch.__version__}, gloo)")
    print(f"{'step':>6} {'analyze ms':>11} {'time_ns ms':>11} {'analyze bubble':>15} {'time_ns bubble':>15}")
    for s in summary["steps"]:
        start, end, ratio = per_step.get(s["step"], (0, 0, float("nan")))
        print(f"{s['step']:>6} {s['duration_ns'] / 1e6:>11.3f} {(end - start) / 1e6:>11.3f} "
              f"{100 * s['bubble_ratio']:>14.2f}% {100 * ratio:>14.2f}%")
        if not abs(s["bubble_ratio"] - ratio) <= 0.02:
            failures.append(f"step {s['step']}: bubble {s['bubble_ratio']:.4f} vs {ratio:.4f}")
    print(f"overall bubble: analyze {100 * summary['bubble_ratio']:.2f}%, "
          f"time_ns {100 * overall:.2f}%")
    if not abs(summary["bubble_ratio"] - overall) <= 0.005:
        failures.append(f"overall bubble {summary['bubble_ratio']:.4f} vs {overall:.4f}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
