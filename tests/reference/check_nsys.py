#!/usr/bin/env python3
"""The Nsight Systems reference reader against generated truth, and its figures on real exports.

    check_nsys.py WORKDIR [--case TEXT] [--keep] [--list] [--real DIR]

For each case below, writes the run with nsys_run.py into WORKDIR/NAME, reads
the exports with nsys_reference.py (`--step-range` where the case's truth
names one) and compares its `kernel_view` with WORKDIR/NAME/truth.json as
check_field_traces.py compares the engine's (the complete steps and their
windows; per rank, by global rank, and step the window, compute, transfer,
wait and idle to the ns and most_waited_on; each rank's totals; where the
exports cannot tell who waited on whom, transfer, wait and most_waited_on
must be null or the truth, and some kernel must be without peers), and
checks what only exports have: each rank's rank_source, host and pid, the
machines in order, and the clock offsets found (each skewed host's offset
exactly, applied; none applied without skew). Inputs that are no export (a
text file, a report not exported, another SQLite database) must exit 2
naming the file and what it lacks. Then runs the reader on the
three real exports of ../shared/reference/nsys (or --real DIR) and prints
their figures: no truth there; the engine is compared with the reference on
them (skipped, said so, where the folder is not there; a missing or
unreadable file in it fails). Prints PASS or FAIL per case; exit 1 when one
fails.
"""

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import check_field_traces as cft  # noqa: E402
import nsys_reference  # noqa: E402

GENERATOR = HERE / "nsys_run.py"
READER = HERE / "nsys_reference.py"
REAL_DEFAULT = HERE.parent.parent.parent / "shared" / "reference" / "nsys"
REAL = ["mfu_2gpu_after.sqlite", "h100_2gpu_1s.sqlite", "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"]

# (name, nsys_run.py arguments)
CASES = [
    ("rank-reports", ["--case", "rank-reports"]),
    ("rank-reports-dp2", ["--case", "rank-reports-dp2"]),
    ("node-reports", ["--case", "node-reports"]),
    ("node-reports-pp3", ["--case", "node-reports", "--pp", "3", "--gpus-per-machine", "1",
                          "--micro-batches", "6", "--seed", "4"]),
    ("capture-range", ["--case", "capture-range"]),
    ("pp-labels", ["--case", "pp-labels"]),
    ("one-window", ["--case", "one-window"]),
    ("schema-2.9", ["--case", "schema-2.9"]),
    ("schema-2.9-pp4", ["--case", "schema-2.9-pp4"]),
    ("rank-reports-same-clock", ["--case", "rank-reports", "--skew", "0", "--seed", "2"]),
]


def check_case(work, name, args):
    out = work / name
    if out.exists():
        shutil.rmtree(out)
    gen = subprocess.run([sys.executable, str(GENERATOR), "-o", str(out)] + args,
                         capture_output=True, text=True)
    if gen.returncode != 0:
        return [f"generator failed: {gen.stderr.strip()[-400:]}"], None
    truth = json.loads((out / "truth.json").read_text())
    cmd = [sys.executable, str(READER), str(out)]
    if truth.get("step_range"):
        cmd += ["--step-range", truth["step_range"]]
    ref = subprocess.run(cmd, capture_output=True, text=True)
    if ref.returncode != 0:
        return [f"nsys_reference.py exited {ref.returncode}: {ref.stderr.strip()[-400:]}"], truth
    view = json.loads(ref.stdout)
    cannot = truth["cannot_tell"]
    diffs = cft.compare(truth, {"kernel_view": view}, cannot)
    if cannot and not view.get("comm_kernels_without_peers"):
        diffs.append("the exports name no peer for some kernels, yet every kernel found its peers")
    if not cannot and view.get("comm_kernels_without_peers"):
        diffs.append(f"{view['comm_kernels_without_peers']} kernels without peers")
    if view.get("step_spans") == truth["one_window"]:
        diffs.append(f"step_spans {view.get('step_spans')} for a case with"
                     f"{'out' if truth['one_window'] else ''} step ranges")
    by_rank = {r["global_rank"]: r for r in view["ranks"]}
    for tr in truth["ranks"]:
        got = by_rank.get(tr["global_rank"])
        if got is None:
            continue
        for key in ("rank_source", "host", "pid"):
            if got.get(key) != tr[key]:
                diffs.append(f"rank {tr['global_rank']} {key} {got.get(key)!r}, truth {tr[key]!r}")
    hosts = [m["host"] for m in view["clock"]["machines"]]
    if hosts != truth["machines"]:
        diffs.append(f"machines {hosts}, truth {truth['machines']}")
    skews = truth["skews_ns"]
    for m in view["clock"]["machines"]:
        want = skews.get(m["host"], 0)
        if m["offset_ns"] != want:
            diffs.append(f"machine {m['host']} offset {m['offset_ns']} ns, truth {want} ns")
    if view["clock"]["applied"] != bool(skews):
        diffs.append(f"clock applied {view['clock']['applied']}, skews {skews}")
    extra = (f"{len(view['ranks'])} ranks on {len(hosts)} machines, comm_kernels {view['comm_kernels']}, "
             f"without peers {view['comm_kernels_without_peers']}, by order {view['comm_peers_by_order']}, "
             f"sources {sorted({r['rank_source'] for r in view['ranks']})}")
    return diffs, extra


def check_refusals(work):
    """Inputs that are no export: exit 2 naming the file and what it lacks."""
    folder = work / "refusals"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "notes.sqlite").write_text("not a database\n")
    (folder / "run.nsys-rep").write_bytes(b"\x00" * 64)
    other = folder / "other.sqlite"
    db = sqlite3.connect(str(other))
    db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    db.commit()
    db.close()
    want = {"notes.sqlite": "not an SQLite database",
            "run.nsys-rep": "nsys export --type sqlite --include-blobs=true",
            "other.sqlite": "lacks TARGET_INFO_SESSION_START_TIME, META_DATA_EXPORT (or EXPORT_META_DATA)"}
    diffs = []
    for name, text in want.items():
        run = subprocess.run([sys.executable, str(READER), str(folder / name)], capture_output=True, text=True)
        if run.returncode != 2 or text not in run.stderr or name not in run.stderr:
            diffs.append(f"{name}: exit {run.returncode}, {run.stderr.strip()[-200:]!r}, want exit 2 and {text!r}")
    return diffs


def fmt_ratio(x):
    return "null" if x is None else f"{100 * x:.3f}%"


def print_real(path):
    view = nsys_reference.nsys_view([str(path)])
    inp = view["inputs"][0]
    print(f"REAL {path.name}: schema {inp['schema_version']}, hosts {inp['hosts']}, "
          f"{inp['gpu_processes']} GPU processes, {view['gpu_activities']} activities "
          f"({view['without_launch']} without launch), comm kernels {view['comm_kernels']} "
          f"({view['comm_kernels_without_peers']} without peers), step spans {view['step_spans']}")
    for s in view["steps"]:
        print(f"     step {s['step']} [{s['start_ns']}, {s['end_ns']}) complete {s['complete']}")
    for r in view["ranks"]:
        print(f"     rank {r['global_rank']} ({r['rank_source']}, pid {r['pid']}, {r['host']}): "
              f"window {r['window_ns']} compute {r['compute_ns']} transfer {r['transfer_ns']} "
              f"wait {r['wait_ns']} idle {r['idle_ns']} most_waited_on {r['most_waited_on']}")
    print(f"     bubble {fmt_ratio(view['bubble_ratio'])} = idle {fmt_ratio(view['idle_share'])} "
          f"+ wait {fmt_ratio(view['wait_share'])} + transfer {fmt_ratio(view['transfer_share'])}")
    return view


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workdir", nargs="?")
    ap.add_argument("--case", default="", help="run the cases whose name holds TEXT")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--real", default=str(REAL_DEFAULT), help="folder of the real exports")
    ap.add_argument("--max-diffs", type=int, default=5)
    a = ap.parse_args()
    cases = [(n, args) for n, args in CASES if a.case in n]
    if a.list:
        for n, args in cases:
            print(f"{n:24s} nsys_run.py {' '.join(args)}")
        print(f"{'refusals':24s} a text file, a .nsys-rep, another SQLite database: exit 2")
        return 0
    if not a.workdir:
        ap.error("WORKDIR is required")
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, args in cases:
        diffs, extra = check_case(work, name, args)
        if not diffs:
            print(f"PASS {name}  ({extra})")
            if not a.keep:
                shutil.rmtree(work / name, ignore_errors=True)
            continue
        failed += 1
        print(f"FAIL {name}: {len(diffs)} differences ({cft.summarize(diffs)})"
              + (f"  [{extra}]" if isinstance(extra, str) else ""))
        for d in diffs[:a.max_diffs]:
            print(f"     {d}")
        print(f"     kept: {work / name}")
    total = len(cases)
    if a.case in "refusals":
        total += 1
        diffs = check_refusals(work)
        print("PASS refusals" if not diffs else f"FAIL refusals: {len(diffs)} differences")
        for d in diffs[:a.max_diffs]:
            print(f"     {d}")
        failed += bool(diffs)
        if not diffs and not a.keep:
            shutil.rmtree(work / "refusals", ignore_errors=True)
    print(f"{total - failed} of {total} cases pass")
    folder = Path(a.real)
    if not a.case:
        if not folder.is_dir():
            print(f"skipped: no export folder at {folder} (the real exports are not checked out "
                  f"beside the repository)")
        for name in REAL if folder.is_dir() else []:
            try:
                print_real(folder / name)
            except (OSError, nsys_reference.ExportError) as e:
                print(f"FAIL real {name}: {e}")
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
