#!/usr/bin/env python3
"""`pipescope watch` on logs written over time (live_writer.py), against the truth.

    check_watch_live.py --cli PIPESCOPE [--work DIR] [--case late|copytruncate|never]...

late          one rank's file exists, empty, and fills 30 run-seconds late (from
              its first line on). Every live step equals the independent
              reference's figure of that step on the complete logs (the figure
              without the late rank is only allowed on a line marked
              provisional); a line is provisional exactly while the late rank
              has not logged that step; no provisional line is "beyond recent
              spread"; the run's last complete step is reported; the final
              summary is analyze's on the complete logs.
copytruncate  every file rotated (copied, truncated in place) halfway: every live
              step is the reference's, and the final summary covers the whole
              run followed (analyze of the concatenation of what was read).
never         one rank's file stays empty: lines are provisional, never beyond
              spread, and the final summary leaves the rank out (empty_input).

Prints each case's figures (before/after measurements); exit 1 on a failed check.
The run is compressed in time (--speed), so a case takes a few seconds.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WRITER = HERE / "live_writer.py"
REFERENCE = HERE.parent / "reference" / "pipescope_reference.py"

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"  FAIL: {what}")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def reference(folder):
    return json.loads(run([sys.executable, str(REFERENCE), str(folder)]).stdout)


def ref_steps(ref):
    return {(s["segment"], s["step"]): s for s in ref["steps"] if s["complete"]}


def watch_while_writing(cli, work, source, writer_args, speed):
    live = work / "live"
    out = work / "out"
    # The writer creates the files empty at once; the watch starts after it.
    writer = subprocess.Popen([sys.executable, str(WRITER), str(source), str(live),
                               "--speed", str(speed)] + writer_args,
                              stdout=subprocess.PIPE, text=True)
    while not (live / "workerlog.0").exists():
        pass
    watch = subprocess.Popen([cli, "watch", str(live), "--interval", "0.05",
                              "--until-idle", "3", "--no-trace", "-q", "-o", str(out),
                              "--jsonl", str(work / "steps.jsonl"),
                              "--prometheus", str(work / "run.prom")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Every version of the Prometheus file, as a scraper would see them.
    proms = []
    last = None
    while watch.poll() is None:
        try:
            text = (work / "run.prom").read_text()
        except FileNotFoundError:
            text = None
        if text and text != last:
            proms.append(text)
            last = text
    w_out, w_err = watch.communicate()
    wrote = json.loads(writer.communicate()[0])
    check(watch.returncode == 0, f"watch exit {watch.returncode}: {w_err}")
    lines = [json.loads(l) for l in (work / "steps.jsonl").read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    return live, lines, proms, summary, w_out, w_err, wrote


def prom_value(text, name):
    for line in text.splitlines():
        if line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def describe(lines, summary, truth, proms):
    ratios = [100 * l["bubble_ratio"] for l in lines]
    prov = [l for l in lines if l["provisional"]]
    beyond = [l for l in lines if l["beyond_spread"]]
    print(f"  live lines: {len(lines)} (steps {lines[0]['label'] if lines else '-'}.."
          f"{lines[-1]['label'] if lines else '-'}), bubble {min(ratios):.2f}-{max(ratios):.2f}%, "
          f"provisional {len(prov)}, beyond spread {len(beyond)}")
    print(f"  prometheus versions with provisional 1: "
          f"{sum(prom_value(p, 'pipescope_step_provisional') == 1 for p in proms)}, "
          f"with beyond_spread 1: "
          f"{sum(prom_value(p, 'pipescope_step_beyond_spread') == 1 for p in proms)} "
          f"of {len(proms)}")
    print(f"  final summary bubble {100 * summary['bubble_ratio']:.2f}% "
          f"(truth {100 * truth['bubble_ratio']:.2f}%), complete steps "
          f"{sum(s['complete'] for s in summary['steps'])} (truth "
          f"{sum(s['complete'] for s in truth['steps'])})")


def same_step(line, ref_step):
    return (line["start_ns"] == ref_step["start_ns"] and line["end_ns"] == ref_step["end_ns"]
            and abs(line["bubble_ratio"] - ref_step["bubble_ratio"]) < 1e-12)


def case_late(cli, work, source, speed, late_s):
    print(f"late: rank 3 fills {late_s} run-seconds late")
    live, lines, proms, summary, _, err, _ = watch_while_writing(
        cli, work, source, ["--late", f"3:{late_s}"], speed)
    truth = reference(source)
    describe(lines, summary, truth, proms)
    steps = ref_steps(truth)
    check(lines and (lines[-1]["segment"], lines[-1]["step"]) == max(steps),
          "the run's last complete step is reported")
    check(len(lines) == len(steps), f"{len(lines)} live lines for {len(steps)} complete steps")
    for l in lines:
        r = steps.get((l["segment"], l["step"]))
        if r is None:
            check(False, f"step {l['label']} is not a complete step of the run")
            continue
        if not l["provisional"]:
            check(same_step(l, r), f"final line of step {l['label']} differs from the reference: "
                                   f"{l['bubble_ratio']} vs {r['bubble_ratio']}")
        check(not (l["provisional"] and l["beyond_spread"]),
              f"step {l['label']} provisional and beyond spread")
        check(abs(l["bubble_ratio"] - r["bubble_ratio"]) < 0.05,
              f"step {l['label']}: {100 * l['bubble_ratio']:.2f}% for "
              f"{100 * r['bubble_ratio']:.2f}% (a device counted idle?)")
    check(any(l["provisional"] for l in lines), "lines before the late rank logged are provisional")
    for p in proms:
        check(not (prom_value(p, "pipescope_step_provisional") == 1
                   and prom_value(p, "pipescope_step_beyond_spread") == 1),
              "a Prometheus file says provisional 1 and beyond_spread 1")
    check(abs(summary["bubble_ratio"] - truth["bubble_ratio"]) < 1e-12,
          "final summary is the run's")


def case_copytruncate(cli, work, source, speed):
    print("copytruncate: every file rotated halfway")
    live, lines, proms, summary, _, err, wrote = watch_while_writing(
        cli, work, source, ["--copytruncate", "all:0.5", "--pause", "1"], speed)
    # What was read: the rotated copy, then what the file holds now.
    joined = work / "joined"
    for path in sorted(live.glob("workerlog.*")):
        if path.name.count(".") > 1:  # a rotated copy
            continue
        copy = Path(str(path) + ".1")
        (joined).mkdir(exist_ok=True)
        (joined / path.name).write_bytes((copy.read_bytes() if copy.exists() else b"")
                                         + path.read_bytes())
    truth = reference(source)
    describe(lines, summary, truth, proms)
    check(len(wrote["rotated"]) == 4, f"rotated {wrote['rotated']}")
    steps = ref_steps(truth)
    check(len(lines) == len(steps), f"{len(lines)} live lines for {len(steps)} complete steps")
    for l in lines:
        r = steps.get((l["segment"], l["step"]))
        check(r is not None and same_step(l, r), f"live step {l['label']} is the reference's")
    a = run([cli, "analyze", str(joined), "--no-trace", "-q", "-o", str(work / "a")])
    del a
    analyzed = json.loads((work / "a" / "summary.json").read_text())
    check(summary["bubble_ratio"] == analyzed["bubble_ratio"],
          f"final summary {100 * summary['bubble_ratio']:.2f}% is analyze's on what was read "
          f"({100 * analyzed['bubble_ratio']:.2f}%)")
    check(abs(summary["bubble_ratio"] - truth["bubble_ratio"]) < 1e-12,
          "final summary is the run's")
    check(summary["jobs"] == truth["jobs"], f"final summary jobs {summary['jobs']} of {truth['jobs']}")


def case_never(cli, work, source, speed):
    print("never: rank 3's file stays empty")
    empty = work / "src"
    empty.mkdir()
    for path in sorted(Path(source).glob("workerlog.*")):
        (empty / path.name).write_bytes(b"" if path.name == "workerlog.3" else path.read_bytes())
    live, lines, proms, summary, _, err, _ = watch_while_writing(cli, work, empty, [], speed)
    truth = reference(empty)
    describe(lines, summary, truth, proms)
    check(all(l["provisional"] and not l["beyond_spread"] for l in lines),
          "every line provisional, none beyond spread")
    codes = [w.get("code") for w in summary.get("warnings", [])]
    check("empty_input" in codes, f"final summary names the empty input (warnings {codes})")
    check(len(lines) == len(ref_steps(truth)), "every complete step reported")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--work")
    parser.add_argument("--case", action="append", choices=["late", "copytruncate", "never"])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--speed", type=float, default=10.0)
    parser.add_argument("--late", type=float, default=30.0, help="run seconds")
    args = parser.parse_args()
    cases = args.case or ["late", "copytruncate", "never"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.work or tmp)
        source = root / "sim"
        if not source.exists():
            run([args.cli, "simulate", "-o", str(source), "--steps", str(args.steps),
                 "--seed", "48"])
            (source / "expected.json").unlink(missing_ok=True)
        for case in cases:
            work = root / case
            shutil.rmtree(work, ignore_errors=True)  # the jsonl file is appended to
            work.mkdir(parents=True)
            if case == "late":
                case_late(args.cli, work, source, args.speed, args.late)
            elif case == "copytruncate":
                case_copytruncate(args.cli, work, source, args.speed)
            else:
                case_never(args.cli, work, source, args.speed)
    if failures:
        print(f"{len(failures)} failed check(s)")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
