#!/usr/bin/env python3
"""The engine's reader of Nsight Systems exports against the reference reader, to the ns.

    check_nsys_engine.py --cli build/cli/pipescope WORKDIR [--case TEXT] [--real DIR] [--keep]

For each case of check_nsys.py (exports written by nsys_run.py: schemas 3.25
and 2.9.1, one report per rank or per node, skewed hosts, NCCL payloads or
none, `--step-range`), and for the three real exports of ../shared/reference/nsys
(or --real DIR), runs `pipescope analyze EXPORTS -o OUT --quiet` (requiring
exit 0) and compares OUT/summary.json's `kernel_view` with what
nsys_reference.py (written apart from the engine) computes on the same files,
key by key with check_kernel_view.py's comparison: every *_ns figure and
count equal to the ns, the ratios within 1e-9, null where the reference says
null, `path` on its file name; the clock (applied, noise, each machine's
offset and pairs) where the engine writes it (it leaves it out for one
machine: the reference must then have one machine, applied false). What only
the reference prints (each rank's pid and host, the inputs) is not in
summary.json. Inputs that are no export exit 2 naming what they lack (a text
file, a report not exported, another SQLite database). Prints PASS or FAIL
per case; exit 1 when one fails.

The jobs, against nsys_run.py's truth (`job_analysis`: the model's own jobs,
not read back from the exports): the NVTX ranges made jobs (`PP:` labels
with no option; `forward_mb<M>` & co. with the truth's --job-pattern), each
case's summary.json must give every step window, each rank's job count and
busy time to the ns, and the bubble ratio within 1e-12.
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
import check_kernel_view as ckv  # noqa: E402
import check_nsys  # noqa: E402
import nsys_reference  # noqa: E402

REFERENCE_ONLY_RANK_KEYS = ("pid", "host", "machine")


def engine_view(cli, inputs, out, extra=()):
    r = subprocess.run([str(cli), "analyze", *map(str, inputs), "-o", str(out), "--quiet", *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ckv.Failure(f"analyze exit {r.returncode}: {(r.stderr or r.stdout)[-600:]}")
    view = json.loads((out / "summary.json").read_text()).get("kernel_view")
    if view is None:
        raise ckv.Failure("summary.json has no kernel_view")
    view.pop("layout", None)
    for row in view.get("ranks", []):
        row.pop("stage", None)
    return view


def compare(actual, expected):
    """check_kernel_view's comparison of the figures both write; the clock
    as the engine writes it. None when they agree, else a message."""
    expected = json.loads(json.dumps(expected))
    for key in ("inputs", "comm_peers_by_order"):
        expected.pop(key, None)
    for row in expected["ranks"]:
        for key in REFERENCE_ONLY_RANK_KEYS:
            row.pop(key, None)
    clock = expected.pop("clock")
    for m in clock["machines"]:
        m.pop("host", None)
    got_clock = actual.pop("clock", None)
    diff = ckv.compare(actual, expected)
    if diff:
        where, a, e = diff
        return f"{where}: engine {ckv.short(a)}, reference {ckv.short(e)}"
    if got_clock is None:
        if len(clock["machines"]) != 1 or clock["applied"]:
            return f"no clock in summary.json, the reference's: {clock}"
    else:
        diff = ckv.compare(got_clock, clock)
        if diff:
            where, a, e = diff
            return f"clock {where}: engine {ckv.short(a)}, reference {ckv.short(e)}"
    return None


def check_run(cli, name, inputs, work, step_range=None):
    extra = ["--step-range", step_range] if step_range else []
    actual = engine_view(cli, inputs, work / (name + "-out"), extra)
    expected = nsys_reference.nsys_view([str(p) for p in inputs], step_range)
    problem = compare(actual, expected)
    line = (f"{len(expected['ranks'])} ranks, {expected['gpu_activities']} activities, comm kernels "
            f"{expected['comm_kernels']} ({expected['comm_kernels_without_peers']} without peers), "
            f"sources {sorted({r['rank_source'] for r in expected['ranks']})}, clock applied "
            f"{expected['clock']['applied']}")
    return problem, line


def check_jobs(cli, name, run, work, truth):
    """summary.json's job figures against the truth's job_analysis; None
    when they agree, else a message."""
    want = truth["job_analysis"]
    extra = ["--step-range", truth["step_range"]] if truth.get("step_range") else []
    out = work / (name + "-out")
    if want["job_pattern"]:
        out = work / (name + "-jobs")
        extra += ["--job-pattern", want["job_pattern"]]
        r = subprocess.run([str(cli), "analyze", str(run), "-o", str(out), "--quiet", *extra],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"analyze --job-pattern exit {r.returncode}: {(r.stderr or r.stdout)[-600:]}"
    s = json.loads((out / "summary.json").read_text())
    got_steps = [(st["start_ns"], st["end_ns"]) for st in s["steps"]]
    want_steps = [(st["start_ns"], st["end_ns"]) for st in want["steps"]]
    if got_steps != want_steps:
        return f"job steps {got_steps}, truth {want_steps}"
    if s["incomplete_steps"] != 0 or s["total_window_ns"] != want["total_window_ns"]:
        return (f"total window {s['total_window_ns']} ({s['incomplete_steps']} incomplete), "
                f"truth {want['total_window_ns']}")
    got = [(d["jobs"], d["busy_ns"]) for d in s["devices"]]
    expect = [(r["jobs"], r["busy_ns"]) for r in want["ranks"]]
    if got != expect:
        return f"(jobs, busy_ns) per rank {got}, truth {expect}"
    if abs(s["bubble_ratio"] - want["bubble_ratio"]) > 1e-12:
        return f"bubble ratio {s['bubble_ratio']}, truth {want['bubble_ratio']}"
    return None


def check_refusals(cli, work):
    folder = work / "engine-refusals"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "notes.sqlite").write_text("not a database\n")
    (folder / "run.nsys-rep").write_bytes(b"\x00" * 64)
    db = sqlite3.connect(str(folder / "other.sqlite"))
    db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    db.commit()
    db.close()
    want = {"notes.sqlite": "not an SQLite database",
            "run.nsys-rep": "nsys export --type sqlite --include-blobs=true",
            "other.sqlite": "lacks TARGET_INFO_SESSION_START_TIME, META_DATA_EXPORT (or EXPORT_META_DATA)"}
    problems = []
    for name, text in want.items():
        r = subprocess.run([str(cli), "analyze", str(folder / name), "-o", str(folder / "out"),
                            "--quiet"], capture_output=True, text=True)
        if r.returncode != 2 or text not in r.stderr or name not in r.stderr:
            problems.append(f"{name}: exit {r.returncode}, {r.stderr.strip()[-300:]!r}; "
                            f"want exit 2 and {text!r}")
    return problems


def check_two_runs(cli, folder, work):
    try:
        nsys_reference.nsys_view([str(folder)])
        return "the reference finds one run in the real folder (expected two runs)"
    except nsys_reference.TwoRunsError:
        pass
    r = subprocess.run([str(cli), "analyze", str(folder), "-o", str(work / "two-runs-out"),
                        "--quiet"], capture_output=True, text=True)
    if r.returncode != 2 or "the exports hold two runs" not in r.stderr:
        return f"exit {r.returncode}, {r.stderr.strip()[-300:]!r}; want exit 2, two runs"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("workdir")
    ap.add_argument("--case", default="")
    ap.add_argument("--real", default=str(check_nsys.REAL_DEFAULT))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    failed = total = 0
    for name, args in check_nsys.CASES:
        if a.case not in name:
            continue
        total += 1
        run = work / name
        if run.exists():
            shutil.rmtree(run)
        gen = subprocess.run([sys.executable, str(check_nsys.GENERATOR), "-o", str(run)] + args,
                             capture_output=True, text=True)
        if gen.returncode != 0:
            print(f"FAIL {name}: generator exit {gen.returncode}: {gen.stderr.strip()[-300:]}")
            failed += 1
            continue
        truth = json.loads((run / "truth.json").read_text())
        try:
            problem, line = check_run(a.cli, name, [run], work, truth.get("step_range"))
            problem = problem or check_jobs(a.cli, name, run, work, truth)
            jobs = truth["job_analysis"]
            line += (f"; jobs {sum(r['jobs'] for r in jobs['ranks'])} "
                     f"({'PP: labels' if not jobs['job_pattern'] else '--job-pattern'}), "
                     f"bubble {jobs['bubble_ratio']:.6f}")
        except (ckv.Failure, nsys_reference.ExportError) as e:
            problem, line = str(e), ""
        if problem:
            failed += 1
            print(f"FAIL {name}: {problem}\n     kept: {run}")
            continue
        print(f"PASS {name}  ({line})")
        if not a.keep:
            shutil.rmtree(run, ignore_errors=True)
            shutil.rmtree(work / (name + "-out"), ignore_errors=True)
            shutil.rmtree(work / (name + "-jobs"), ignore_errors=True)
    if a.case in "refusals":
        total += 1
        problems = check_refusals(a.cli, work)
        print("PASS refusals" if not problems else f"FAIL refusals: {'; '.join(problems)}")
        failed += bool(problems)
    real = Path(a.real)
    if not a.case:
        if not real.is_dir():
            print(f"skipped: no export folder at {real}")
        for name in check_nsys.REAL if real.is_dir() else []:
            total += 1
            try:
                problem, line = check_run(a.cli, "real-" + name, [real / name], work)
            except (ckv.Failure, nsys_reference.ExportError) as e:
                problem, line = str(e), ""
            print(f"PASS real {name}  ({line})" if not problem else f"FAIL real {name}: {problem}")
            failed += bool(problem)
    if not a.case and real.is_dir():
        # Exports of separate runs in one folder: the reference finds the gap
        # on its own; the engine must then refuse (exit 2), never analyse one
        # window over days.
        total += 1
        problem = check_two_runs(a.cli, real, work)
        print("PASS real folder: two runs refused" if not problem
              else f"FAIL real folder: {problem}")
        failed += bool(problem)
    print(f"{total - failed} of {total} cases pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
