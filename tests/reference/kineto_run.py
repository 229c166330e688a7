#!/usr/bin/env python3
"""Generates the PyTorch profiler traces of a pipeline run, in Kineto's write order.

    kineto_run.py -o DIR --pp 4 --micro-batches 8 --steps 6 --schedule 1f1b --seed 1
                  [--gz] [--base first|last|none] [--cut RANK:SECTION:FRACTION]
                  [--repeat N --active K]

Writes DIR/rankR.pt.trace.json[.gz] (one per rank; with --repeat, one per profiling
window: rankR.W.pt.trace.json) and DIR/truth.json: every rank's true job intervals,
which events of a cut trace survived, and the metric contract's figures of the true
times per step (pipescope_reference.py on worker logs of the same jobs).

Written independently of the engine and of `pipescope simulate`; the job times come
from hybrid_run.py's simulation (pp only). What it copies from real traces (the
ones of ../shared/reference/kineto):

- Write order. Kineto writes the CPU events first (`user_annotation` labels such as
  `PP:1F3` and `ProfilerStep#N`, `cpu_op`s between them), then the runtime calls and
  GPU activities interleaved in time order (`cuda_runtime` cudaLaunchKernel, its
  `ac2g` flow pair, the `kernel`), then the `gpu_user_annotation` spans, then the
  process metadata (`ph` "M"), and only after the events array `traceName`,
  `displayTimeUnit` and `baseTimeNanoseconds`. A crash while writing (or a copy cut
  short) therefore loses the base time and the GPU annotations first, then the
  kernels from the latest back.
- Times. `ts` and `dur` in microseconds with three decimals, after the base (or,
  with --base none, since the epoch, as older traces write them).
- Host and device. A job's CPU annotation runs ahead of its kernels (the CPU launches
  asynchronously): its host span starts 30-400 us before the GPU starts the job and
  lasts 20-60 us, so a job timed by the host is in the wrong place.
- Kernels. Each job is three kernels back to back on the compute stream, the first
  starting at the job's start and the last ending at its end: the job's GPU interval
  is their span.

--cut RANK:SECTION:FRACTION cuts RANK's trace in SECTION (cpu: the CPU events, gpu:
the runtime calls and kernels, annotations: the GPU annotations, meta: the
metadata, tail: after the events array) at FRACTION of its bytes; with --gz the
compressed file is cut at the byte that holds that place, as a crash leaves it.
"""

import argparse
import gzip
import json
import random
import re
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import hybrid_run  # noqa: E402  (the job times)
import pipescope_reference  # noqa: E402  (the independent metric contract)

NUMBER = re.compile(r'"(ts|dur)": "(-?[0-9]+\.[0-9]{3})"')
SECTIONS = ("cpu", "gpu", "annotations", "meta", "tail")


def us_text(ns):
    """ns -> microseconds with exactly three decimals (exact, no float)."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def simulate(args):
    """{rank: [(step, type, mb, start_ns, end_ns)]} without the optimizer (a
    torch.distributed.pipelining schedule has no optimizer action)."""
    h = hybrid_run.parser().parse_args(
        ["-o", "unused", "--pp", str(args.pp), "--dp", "1", "--tp", "1",
         "--gpus-per-machine", str(args.pp), "--schedule", args.schedule,
         "--micro-batches", str(args.micro_batches), "--steps", str(args.steps),
         "--seed", str(args.seed)])
    layout = hybrid_run.Layout(args.pp, 1, 1, "dp,pp,tp", args.pp)
    times = hybrid_run.simulate(h, layout)
    return {r: [(k, kind, m, start, end) for (k, _, kind, m, start, end) in jobs
                if kind != "optimizer"]
            for r, jobs in times.items()}


class Trace:
    """One trace's text, built section by section, with each event's byte range."""

    def __init__(self):
        self.parts, self.size = [], 0
        self.sections = {}  # name -> (first byte, end byte)
        self.events = []    # (kind, key, end byte): kind "kernel"/"gpu_annotation"/...

    def put(self, text):
        self.parts.append(text)
        self.size += len(text.encode())

    def begin(self, name):
        self.sections[name] = [self.size, None]

    def end(self, name):
        self.sections[name][1] = self.size

    def event(self, obj, kind=None, key=None, first=False):
        # Times are written as JSON numbers with three decimals, exactly.
        text = NUMBER.sub(r'"\1": \2', json.dumps(obj, separators=(", ", ": ")))
        self.put(("" if first else ",\n") + text)
        if kind:
            self.events.append((kind, key, self.size))

    def text(self):
        return "".join(self.parts)


def rank_trace(args, rank, jobs, base_ns, steps, rng, first_step):
    """The trace of `rank` holding the jobs of steps `steps` (a profiling window)."""
    mine = [j for j in jobs if j[0] in steps]
    t = Trace()
    t.put('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB '
          'HBM3", "totalGlobalMem": 85045183744}],\n')
    t.put(f'  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {args.pp}}},\n')
    if args.base == "first":
        t.put(f'  "baseTimeNanoseconds": {base_ns},\n')
    t.put('  "traceEvents": [\n')
    origin = 0 if args.base == "none" else base_ns

    def ts(ns):
        return us_text(ns - origin)

    # Host spans: ahead of the GPU, never overlapping on the one CPU thread.
    host = []
    host_end = None
    for k, kind, m, start, end in mine:
        h_start = start - rng.randint(30_000, 400_000)
        if host_end is not None:
            h_start = max(h_start, host_end + 2_000)
        h_end = h_start + rng.randint(20_000, 60_000)
        host.append((h_start, h_end))
        host_end = h_end
    # CPU section: ProfilerStep spans (contiguous), labels, cpu_ops between them.
    t.begin("cpu")
    first = True
    by_step = {}
    for i, j in enumerate(mine):
        by_step.setdefault(j[0], []).append(i)
    step_spans = []
    keys = sorted(by_step)
    for n, k in enumerate(keys):
        lo = host[by_step[k][0]][0] - 5_000
        hi = (host[by_step[keys[n + 1]][0]][0] - 5_000 if n + 1 < len(keys)
              else host[by_step[k][-1]][1] + 5_000)
        step_spans.append((k, lo, hi))
    events = []
    for k, lo, hi in step_spans:
        events.append((lo, 0, {"ph": "X", "cat": "user_annotation",
                               "name": f"ProfilerStep#{first_step + k}", "pid": 4242, "tid": 4242,
                               "ts": None, "dur": None, "args": {"External id": 1 + k}},
                       lo, hi))
    label = {"forward": "F", "backward": "B"}
    for i, ((k, kind, m, start, end), (hs, he)) in enumerate(zip(mine, host)):
        name = f"PP:{rank}{label[kind]}{m}"
        events.append((hs, 1, {"ph": "X", "cat": "user_annotation", "name": name,
                               "pid": 4242, "tid": 4242, "ts": None, "dur": None,
                               "args": {"External id": 1000 + i}}, hs, he))
        events.append((hs + 1_000, 2, {"ph": "X", "cat": "cpu_op", "name": "aten::mm",
                                       "pid": 4242, "tid": 4242, "ts": None, "dur": None,
                                       "args": {"External id": 100000 + i,
                                                "Record function id": 0}},
                       hs + 1_000, he - 1_000))
    events.sort(key=lambda e: (e[0], e[1]))
    for _, _, obj, lo, hi in events:
        obj["ts"], obj["dur"] = ts(lo), us_text(hi - lo)
        t.event(obj, "cpu", None, first)
        first = False
    t.end("cpu")
    # GPU section: launches and kernels in time order, with their flows.
    t.begin("gpu")
    gpu = []
    corr = 1
    for i, ((k, kind, m, start, end), (hs, he)) in enumerate(zip(mine, host)):
        cuts = [start, start + (end - start) // 3, start + 2 * (end - start) // 3, end]
        for n in range(3):
            launch = hs + 3_000 + n * 4_000
            gpu.append((launch, 0, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                    "pid": 4242, "tid": 4242, "ts": ts(launch),
                                    "dur": us_text(3_000),
                                    "args": {"External id": 100000 + i, "cbid": 211,
                                             "correlation": corr}}, None))
            gpu.append((launch, 1, {"ph": "s", "id": corr, "pid": 4242, "tid": 4242,
                                    "ts": ts(launch), "cat": "ac2g", "name": "ac2g"}, None))
            gpu.append((cuts[n], 2, {"ph": "X", "cat": "kernel",
                                     "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0,
                                     "tid": 7, "ts": ts(cuts[n]),
                                     "dur": us_text(cuts[n + 1] - cuts[n]),
                                     "args": {"External id": 100000 + i, "device": 0,
                                              "stream": 7, "correlation": corr}},
                        (i, n)))
            gpu.append((cuts[n], 3, {"ph": "f", "id": corr, "pid": 0, "tid": 7,
                                     "ts": ts(cuts[n]), "cat": "ac2g", "name": "ac2g",
                                     "bp": "e"}, None))
            corr += 1
    gpu.sort(key=lambda e: (e[0], e[1]))
    for _, _, obj, key in gpu:
        t.event(obj, "kernel" if key is not None else None, key, first)
        first = False
    t.end("gpu")
    t.begin("annotations")
    for i, (k, kind, m, start, end) in enumerate(mine):
        t.event({"ph": "X", "cat": "gpu_user_annotation", "name": f"PP:{rank}{label[kind]}{m}",
                 "pid": 0, "tid": 7, "ts": ts(start), "dur": us_text(end - start),
                 "args": {"External id": 1000 + i}}, "gpu_annotation", i, first)
        first = False
    t.end("annotations")
    t.begin("meta")
    for pid, name in ((4242, "python3"), (0, "stream 7")):
        t.event({"name": "process_name", "ph": "M", "ts": ts(mine[0][3] if mine else origin),
                 "pid": pid, "tid": 0, "args": {"name": name}}, None, None, first)
        first = False
    t.end("meta")
    t.put("\n  ],\n")
    t.begin("tail")
    t.put('  "traceName": "trace", "displayTimeUnit": "ms"')
    if args.base == "last":
        t.put(f',\n  "baseTimeNanoseconds": {base_ns}')
    t.put("\n}\n")
    t.end("tail")
    return t, mine


def surviving(data, gz):
    """Bytes of the trace's text that a reader of the (cut) file gets back."""
    if not gz:
        return len(data)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return len(d.decompress(data))
    except zlib.error:
        return 0


def truth_figures(jobs_by_rank, work):
    """The contract's per-step figures of the true times (worker logs of the same jobs)."""
    folder = Path(work) / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    for rank, jobs in jobs_by_rank.items():
        lines = []
        for n, (k, kind, m, start, end) in enumerate(jobs):
            lines.append(f"I1114 22:13:20.000000 1 standalone_executor.cc:217] Profiler Info: "
                         f"Job ({n}), type = {kind}, micro_batch_id = {m}, "
                         f"job_start_time = {hybrid_run.ms_text(start)}, "
                         f"job_end_time = {hybrid_run.ms_text(end)}")
        (folder / f"workerlog.{rank}").write_text("\n".join(lines) + "\n")
    summary = pipescope_reference.analyse([str(folder)])
    return {"steps": [{"step": s["step"], "start_ns": s["start_ns"], "end_ns": s["end_ns"],
                       "duration_ns": s["duration_ns"],
                       "devices": [{k: d[k] for k in ("device", "busy_ns", "idle_ns")}
                                   for d in s["devices"]]}
                      for s in summary["steps"]]}


def generate(args):
    out = Path(args.output)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    times = simulate(args)
    base_ns = min(j[3] for jobs in times.values() for j in jobs) - 2_000_000_000
    cut = None
    if args.cut:
        r, section, fraction = args.cut.split(":")
        cut = (int(r), section, float(fraction))
        if section not in SECTIONS:
            raise ValueError(f"--cut: section one of {', '.join(SECTIONS)}")
    windows = []
    if args.repeat:
        span = args.wait + args.warmup + args.active
        for w in range(args.repeat):
            first = w * span + args.wait + args.warmup
            windows.append(list(range(first, first + args.active)))
        if windows[-1][-1] >= args.steps:
            raise ValueError("--steps too few for the profiling windows")
    else:
        windows.append(list(range(args.steps)))
    truth = {"pp": args.pp, "base_ns": base_ns, "base": args.base, "files": [],
             "jobs": {}}
    for rank in range(args.pp):
        for w, steps in enumerate(windows):
            rng = random.Random(f"kineto_run:{args.seed}:{rank}:{w}")
            t, mine = rank_trace(args, rank, times[rank], base_ns, set(steps), rng,
                                 args.first_step)
            text = t.text().encode()
            name = (f"rank{rank}.{w}.pt.trace.json" if args.repeat
                    else f"rank{rank}.pt.trace.json") + (".gz" if args.gz else "")
            data = gzip.compress(text, mtime=0) if args.gz else text
            entry = {"path": name, "rank": rank, "window": w, "steps": steps,
                     "bytes": len(text)}
            if cut and cut[0] == rank and w == len(windows) - 1:
                lo, hi = t.sections[cut[1]]
                place = lo + int((hi - lo) * cut[2])
                if args.gz:
                    # The same share of the compressed bytes: where a crash
                    # stops the compressed stream.
                    data = data[:max(10, len(data) * place // len(text))]
                else:
                    data = text[:place]
                got = surviving(data, args.gz)
                kernels = {key for kind, key, end in t.events if kind == "kernel" and end <= got}
                entry.update({"cut_section": cut[1], "surviving_bytes": got,
                              "file_bytes": len(data)})
                # The steps whose every kernel survived.
                survived = []
                for k in steps:
                    idx = [i for i, j in enumerate(mine) if j[0] == k]
                    if all((i, n) in kernels for i in idx for n in range(3)):
                        survived.append(k)
                entry["survived_steps"] = survived
            (out / name).write_bytes(data)
            truth["files"].append(entry)
    for rank, jobs in times.items():
        truth["jobs"][str(rank)] = [list(j) for j in jobs]
    with tempfile.TemporaryDirectory() as work:
        truth.update(truth_figures(times, work))
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--pp", type=int, default=4)
    p.add_argument("--micro-batches", type=int, default=8)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--schedule", default="1f1b", choices=("fthenb", "1f1b"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--first-step", type=int, default=0, help="N of the first ProfilerStep#N")
    p.add_argument("--gz", action="store_true", help="gzip the traces")
    p.add_argument("--base", default="last", choices=("first", "last", "none"),
                   help="where baseTimeNanoseconds goes (Kineto: last; none: older traces, "
                        "absolute times)")
    p.add_argument("--cut", help="RANK:SECTION:FRACTION, SECTION one of " + ", ".join(SECTIONS))
    p.add_argument("--repeat", type=int, default=0,
                   help="schedule(wait, warmup, active, repeat): this many windows per rank")
    p.add_argument("--wait", type=int, default=1)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--active", type=int, default=2)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    generate(args)


if __name__ == "__main__":
    main()
