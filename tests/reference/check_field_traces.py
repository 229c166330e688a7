#!/usr/bin/env python3
"""The kernel view on traces as real frameworks write them, against field_traces.py's truth.

    check_field_traces.py PIPESCOPE WORKDIR [--case TEXT] [--keep] [--list]

For each case below, writes the run with field_traces.py into WORKDIR/NAME,
runs `PIPESCOPE analyze WORKDIR/NAME -o WORKDIR/NAME.out --no-trace`, and
compares summary.json's `kernel_view` with WORKDIR/NAME/truth.json: the steps
(the truth's recorded steps, each complete, with its start_ns and end_ns), and
per rank (by global rank) and step: start_ns, end_ns, window, compute,
transfer, wait and idle to the ns, and most_waited_on; then each rank's totals.
In the cases whose traces cannot tell who waited on whom (PyTorch 2.2's batched
kernels: send/recv calls without a peer; 2.1 and earlier: no args at all), the
rule is an unknown split, never one that looks measured: there transfer, wait
and most_waited_on must be null (or the truth), with the
comm_kernels_without_peers warning; where the guide's order rules fix the
peers (a world of two ranks, a call's group of two members), the figures are
exact and the comm_peers_by_order note says so. In the cases the reference
script handles (no clocks to estimate, no windows to join, no hosts in file
names), kernel_reference.py's reading of the same files is compared with the
truth the same way. Prints PASS or FAIL per case with the first
differences; exits 1 when a case fails. `--case TEXT` runs the cases whose name holds TEXT; `--keep` keeps the
folders of passing cases too (a failing case's are always kept).
"""

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENERATOR = HERE / "field_traces.py"
REFERENCE = HERE / "kernel_reference.py"

# (name, field_traces.py arguments)
CASES = [
    # the plain shape: separate isend/irecv kernels carrying every arg (2.5)
    ("control-2.5", ["--case", "host-args", "--torch", "2.5"]),
    ("batched", ["--case", "batched"]),
    ("batched-first-op", ["--case", "batched", "--kernel-args", "first-op"]),
    ("batched-last-op", ["--case", "batched", "--kernel-args", "last-op"]),
    ("batched-coalesced", ["--case", "batched", "--kernel-args", "coalesced"]),
    ("batched-2.2", ["--case", "batched", "--torch", "2.2"]),  # cannot tell
    ("batched-2.3", ["--case", "batched", "--torch", "2.3"]),
    ("batched-2.4", ["--case", "batched", "--torch", "2.4"]),
    ("host-args", ["--case", "host-args"]),
    ("host-args-2.3", ["--case", "host-args", "--torch", "2.3"]),
    ("no-args", ["--case", "no-args"]),  # cannot tell
    # the order rules: a world of two ranks fixes every peer (2.0: nothing
    # named at all), a group of two members a call's (2.2: direction and
    # group named, not the peer); two pipelines of two stay unknown on 2.0
    ("batched-2.2-pp2", ["--case", "batched", "--torch", "2.2", "--pp", "2"]),
    ("no-args-pp2", ["--case", "no-args", "--pp", "2"]),
    ("no-args-pp2-dp2", ["--case", "no-args", "--pp", "2", "--dp", "2"]),  # cannot tell
    ("one-folder", ["--case", "one-folder"]),
    ("one-folder-same-clock", ["--case", "one-folder", "--skew", "none"]),
    ("no-distinfo", ["--case", "no-distinfo"]),
    ("big-group", ["--case", "big-group"]),
    ("repeat", ["--case", "repeat"]),
    ("mid-step", ["--case", "mid-step"]),
    ("early-recv", ["--case", "early-recv"]),
]

# The cases kernel_reference.py is compared on too (it estimates no clocks,
# joins no profiling windows and reads no host from a file name).
REFERENCE_CASES = {"control-2.5", "batched", "batched-2.2", "batched-2.3", "batched-2.4", "host-args",
                   "host-args-2.3", "no-args", "batched-2.2-pp2", "no-args-pp2", "no-args-pp2-dp2",
                   "no-distinfo", "big-group", "mid-step", "early-recv"}

FIGURES = ("window", "compute", "transfer", "wait", "idle")

# Traces that name no peer (docs/guide.md, "The kernel view": the split is
# then unknown).
CANNOT_TELL = {"batched-2.2", "no-args", "no-args-pp2-dp2"}
# Where the order rules fix the peers: the note that says so is required.
BY_ORDER = {"batched-2.2-pp2", "no-args-pp2"}


def fig(obj, key):
    """A figure of the engine's summary: `key_ns`, else `key`."""
    if key + "_ns" in obj:
        return obj[key + "_ns"]
    return obj.get(key)


def compare(truth, summary, cannot_tell=False):
    """The differences, in the order they are found. With `cannot_tell`, an
    unknown (null) transfer, wait or most_waited_on is right too."""
    diffs = []

    def same(got, want, key):
        if got == want:
            return True
        return cannot_tell and got is None and key in ("transfer", "wait", "most_waited_on")

    kv = summary.get("kernel_view")
    if kv is None:
        return ["summary.json has no kernel_view"]
    want_steps = [s["step"] for s in truth["steps"]]
    got_steps = {s["step"]: s for s in kv.get("steps", [])}
    complete = [s for s, v in got_steps.items() if v.get("complete")]
    if sorted(complete) != want_steps:
        diffs.append(f"complete steps {sorted(complete)}, truth {want_steps}")
    for ts in truth["steps"]:
        gs = got_steps.get(ts["step"])
        if gs is None:
            continue
        for key in ("start_ns", "end_ns"):
            if gs.get(key) != ts[key]:
                diffs.append(f"step {ts['step']} {key} {gs.get(key)}, truth {ts[key]} "
                             f"(off by {None if gs.get(key) is None else gs.get(key) - ts[key]} ns)")
    by_rank = {}
    for r in kv.get("ranks", []):
        if r.get("global_rank") in by_rank:
            diffs.append(f"global rank {r.get('global_rank')} twice ({r.get('path')})")
        by_rank[r.get("global_rank")] = r
    if len(kv.get("ranks", [])) != len(truth["ranks"]):
        diffs.append(f"rank count {len(kv.get('ranks', []))}, truth {len(truth['ranks'])}")
    for tr in truth["ranks"]:
        g = tr["global_rank"]
        er = by_rank.get(g)
        if er is None:
            diffs.append(f"rank {g} ({', '.join(tr['path'])}) missing")
            continue
        esteps = {s["step"]: s for s in er.get("steps", [])}
        for ts in tr["steps"]:
            es = esteps.get(ts["step"])
            if es is None:
                diffs.append(f"rank {g} step {ts['step']} missing")
                continue
            for key in ("start_ns", "end_ns"):
                if es.get(key) != ts[key]:
                    diffs.append(f"rank {g} step {ts['step']} {key} {es.get(key)}, truth {ts[key]}")
            for key in FIGURES:
                if not same(fig(es, key), ts[key], key):
                    diffs.append(f"rank {g} step {ts['step']} {key} {shown(fig(es, key))}, truth {ts[key]}"
                                 + (f" ({fig(es, key) - ts[key]:+d} ns)"
                                    if isinstance(fig(es, key), int) else ""))
            if not same(es.get("most_waited_on"), ts["most_waited_on"], "most_waited_on"):
                diffs.append(f"rank {g} step {ts['step']} most_waited_on {es.get('most_waited_on')}, "
                             f"truth {ts['most_waited_on']}")
        for key in FIGURES:
            if not same(fig(er, key), tr["totals"][key], key):
                diffs.append(f"rank {g} total {key} {fig(er, key)}, truth {tr['totals'][key]}")
        if not same(er.get("most_waited_on"), tr["totals"]["most_waited_on"], "most_waited_on"):
            diffs.append(f"rank {g} total most_waited_on {er.get('most_waited_on')}, "
                         f"truth {tr['totals']['most_waited_on']}")
    return diffs


def shown(value):
    return "null (unknown)" if value is None else value


def summarize(diffs):
    """Which figures differ, and how many times."""
    counts = {}
    for d in diffs:
        words = d.split()
        key = next((w for w in words if w in FIGURES + ("most_waited_on", "start_ns", "end_ns", "count")),
                   words[0])
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in sorted(counts.items()))


def run_case(cli, work, name, args):
    out_dir = work / name
    res_dir = work / (name + ".out")
    for d in (out_dir, res_dir):
        if d.exists():
            shutil.rmtree(d)
    gen = subprocess.run([sys.executable, str(GENERATOR), "-o", str(out_dir)] + args,
                         capture_output=True, text=True)
    if gen.returncode != 0:
        return False, [f"generator failed: {gen.stderr.strip()[-400:]}"], None
    truth = json.loads((out_dir / "truth.json").read_text())
    run = subprocess.run([cli, "analyze", str(out_dir), "-o", str(res_dir), "--no-trace", "--quiet"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        tail = (run.stderr.strip() or run.stdout.strip())[-400:]
        return False, [f"pipescope exited {run.returncode}: {tail}"], truth
    summary_path = res_dir / "summary.json"
    if not summary_path.exists():
        return False, ["no summary.json"], truth
    summary = json.loads(summary_path.read_text())
    diffs = compare(truth, summary, name in CANNOT_TELL)
    warn = [w if isinstance(w, str) else w.get("code", str(w)) for w in summary.get("warnings", [])]
    if name in CANNOT_TELL and "comm_kernels_without_peers" not in warn:
        diffs.append("no comm_kernels_without_peers warning for traces that name no peer")
    if (name in BY_ORDER) != ("comm_peers_by_order" in warn):
        diffs.append("comm_peers_by_order note " + ("missing" if name in BY_ORDER else "where no "
                                                      "order rule applies"))
    if name in REFERENCE_CASES:
        # The reference script, written from the guide's text, on the same files.
        traces = sorted(str(p) for p in out_dir.rglob("*.json") if p.name != "truth.json")
        ref = subprocess.run([sys.executable, str(REFERENCE)] + traces, capture_output=True, text=True)
        if ref.returncode != 0:
            diffs.append(f"kernel_reference.py exited {ref.returncode}: {ref.stderr.strip()[-300:]}")
        else:
            diffs += ["reference: " + d for d in compare(truth, {"kernel_view": json.loads(ref.stdout)},
                                                          name in CANNOT_TELL)]
    extra = None
    kv = summary.get("kernel_view", {})
    if kv:
        extra = (f"comm_kernels {kv.get('comm_kernels')}, without peers {kv.get('comm_kernels_without_peers')}"
                 + (f", warnings: {', '.join(str(w) for w in warn[:4])}" if warn else ""))
    return not diffs, diffs, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipescope", nargs="?")
    ap.add_argument("workdir", nargs="?")
    ap.add_argument("--case", default="", help="run the cases whose name holds TEXT")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--max-diffs", type=int, default=5)
    a = ap.parse_args()
    cases = [(n, args) for n, args in CASES if a.case in n]
    if a.list:
        for n, args in cases:
            print(f"{n:24s} field_traces.py {' '.join(args)}")
        return 0
    if not a.pipescope or not a.workdir:
        ap.error("PIPESCOPE and WORKDIR are required")
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, args in cases:
        ok, diffs, extra = run_case(a.pipescope, work, name, args)
        if ok:
            print(f"PASS {name}" + (f"  ({extra})" if extra else ""))
            if not a.keep:
                shutil.rmtree(work / name, ignore_errors=True)
                shutil.rmtree(work / (name + ".out"), ignore_errors=True)
            continue
        failed += 1
        print(f"FAIL {name}: {len(diffs)} differences ({summarize(diffs)})"
              + (f"  [{extra}]" if isinstance(extra, str) else ""))
        for d in diffs[:a.max_diffs]:
            print(f"     {d}")
        print(f"     kept: {work / name}")
    print(f"{len(cases) - failed} of {len(cases)} cases pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
