#!/usr/bin/env python3
"""Log events against two independent accounts of where they belong.

    check_events.py --cli build/cli/pipescope [--patterns data/log_events.patterns]

For each case, `pipescope simulate --events` writes worker logs with event lines at
times the simulator knows (in a local time zone, with stalls that make slow steps)
and expected.json's `events` (the simulator's own placement, C++ code apart from
the analysis); `pipescope analyze` then places them. Checked:

1. summary.json `events` equals expected.json `events`: every step's `before` and
   `events` lists (device, id, time, approximate), `after_last`, the total and the
   outlier steps.
2. A third account, written here with Python's `re` and `datetime` and nothing of
   the engine: every line of the logs that a library pattern matches is an event;
   its time is its own stamp (GLOG `I1020 09:15:07.265326` with the year, or a
   dated `2023-10-20 09:15:07,265`), read with `datetime` and moved to UTC by the
   offset of the nearest job line before it (stamp minus `job_end_time`, rounded to
   15 minutes; the file's first job line for lines before it), or, without a stamp,
   the time of the closest dated line before it.
   The events summary.json lists equal these, event for event.

Standard library only.
"""
import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_PATTERNS = HERE.parent.parent / "data" / "log_events.patterns"

CASES = [
    ("1f1b-utc+0545-stall", ["--stages", "4", "--micro-batches", "8", "--steps", "12",
                             "--utc-offset", "+05:45", "--stall", "6:3:300",
                             "--noise-per-job", "5"]),
    ("vpp-utc-0700-two-machines", ["--schedule", "vpp", "--stages", "4", "--micro-batches", "8",
                                   "--chunks", "2", "--steps", "10", "--machines", "2",
                                   "--utc-offset", "-07:00", "--stall", "4:3:150",
                                   "--stall", "8:2:90", "--seed", "3"]),
    # A run over New Year's Eve (UTC): GLOG stamps carry no year.
    ("fthenb-new-year", ["--schedule", "fthenb", "--stages", "2", "--micro-batches", "4",
                         "--steps", "9", "--start-ns", "1704067198000000000", "--stall", "5:1:120",
                         "--first-step", "100", "--noise-per-job", "3"]),
]

GLOG = re.compile(r"(?:^|[^0-9A-Za-z])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{9}|\d{6}) ")
DATED = re.compile(r"(?:^|[^0-9A-Za-z])(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[,.](\d+))?")
JOB_END = re.compile(r"job_end_time = (\d+)\.(\d+)")
EPOCH = dt.datetime(1970, 1, 1)


class Failure(Exception):
    pass


def load_patterns(path):
    """(id, compiled regex) in file order."""
    out, current = [], None
    for line in Path(path).read_text().splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif current and line.startswith("regex = "):
            out.append((current, re.compile(line[len("regex = "):])))
    return out


def ns_of(moment):
    delta = moment - EPOCH
    return (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def stamp(line, year):
    """(local datetime, has_year) of a line's leading stamp, or None."""
    head = line[:96]
    m = GLOG.search(head)
    d = DATED.search(head)
    if m and (not d or m.start() <= d.start()):
        mo, day, h, mi, s = (int(x) for x in m.groups()[:5])
        us = int(m.group(6)[:6])  # datetime holds microseconds: the simulator prints 6 digits
        return dt.datetime(year, mo, day, h, mi, s, us), False
    if d:
        y, mo, day, h, mi, s = (int(x) for x in d.groups()[:6])
        frac = (d.group(7) or "0")[:6].ljust(6, "0")
        return dt.datetime(y, mo, day, h, mi, s, int(frac)), True
    return None


def job_offset(line, job):
    """(offset ns, anchor ns) a stamped job line gives, or None."""
    ms, frac = job.groups()
    end_ns = int(ms) * 10**6 + int((frac + "000000")[:6])
    year = (EPOCH + dt.timedelta(microseconds=end_ns // 1000)).year
    candidates = []
    for y in (year - 1, year, year + 1):
        local = stamp(line, y)
        if local is None:
            return None
        raw = ns_of(local[0]) - end_ns
        quarter = 15 * 60 * 10**9
        candidates.append(int(round(raw / quarter)) * quarter)
    return min(candidates, key=abs), end_ns


def python_events(log, patterns):
    """[(id, time_ns, approximate)] of one worker log, by this script's own rules."""
    lines = log.read_text().splitlines()
    # Each line's offset: the nearest stamped job line's before it (the
    # first one's for the lines before it).
    anchors, current = [], None
    for line in lines:
        job = JOB_END.search(line)
        if job and "Profiler Info: Job" in line:
            current = job_offset(line, job) or current
        anchors.append(current)
    first = next((a for a in anchors if a is not None), None)
    if first is None:
        raise Failure(f"{log}: no job line to anchor its times")
    events, last_dated = [], None
    for line, anchor in zip(lines, anchors):
        offset, anchor_ns = anchor or first
        anchor_year = (EPOCH + dt.timedelta(microseconds=anchor_ns // 1000)).year
        placed = None
        got = stamp(line, anchor_year)
        if got is not None:
            local, has_year = got
            if has_year:
                placed = ns_of(local) - offset
            else:  # the year that puts it closest to the anchor
                options = [ns_of(local.replace(year=y)) - offset
                           for y in (anchor_year - 1, anchor_year, anchor_year + 1)]
                placed = min(options, key=lambda t: abs(t - anchor_ns))
        for pid, regex in patterns:
            if regex.search(line):
                if placed is not None:
                    events.append((pid, placed, False))
                else:
                    events.append((pid, last_dated, True))
        if placed is not None:
            last_dated = placed
    return events


def norm(events):
    return [(e["device"], e["id"], e["time_ns"], bool(e.get("approximate", False)))
            for e in events]


def check_case(cli, name, args, patterns, work):
    run, out = work / name, work / (name + "-out")
    subprocess.run([cli, "simulate", "-o", str(run), "--events", *args], check=True,
                   capture_output=True)
    subprocess.run([cli, "analyze", str(run), "-o", str(out), "--no-trace", "-q"], check=True,
                   capture_output=True)
    got = json.loads((out / "summary.json").read_text())["events"]
    want = json.loads((run / "expected.json").read_text())["events"]
    # 1. Against the simulator.
    got_steps = {s["step"]: (norm(s.get("before", [])), norm(s.get("events", [])))
                 for s in got.get("steps", [])}
    want_steps = {s["step"]: (norm(s["before"]), norm(s["events"])) for s in want["steps"]}
    if got_steps != want_steps:
        for k in sorted(set(got_steps) | set(want_steps)):
            if got_steps.get(k) != want_steps.get(k):
                raise Failure(f"step {k}: analyze {got_steps.get(k)}, simulator {want_steps.get(k)}")
    if norm(got.get("after_last", [])) != norm(want["after_last"]):
        raise Failure(f"after the last window: {got.get('after_last')} vs {want['after_last']}")
    if got.get("total") != want["total"]:
        raise Failure(f"total {got.get('total')}, simulator {want['total']}")
    outliers = [(o["step"], o["slow"], o["bubble"], o["events"]) for o in got.get("outliers", [])]
    want_outliers = [(o["step"], o["slow"], o["bubble"], o["events"]) for o in want["outliers"]]
    if outliers != want_outliers:
        raise Failure(f"outliers {outliers}, simulator {want_outliers}")
    if not any(o[1] for o in outliers):
        raise Failure("no slow step: the stall should make one")
    # 2. Against this script's own reading of the logs.
    listed = {}
    for s in got.get("steps", []):
        for e in s.get("before", []) + s.get("events", []):
            listed.setdefault(e["path"], []).append((e["id"], e["time_ns"],
                                                     bool(e.get("approximate", False))))
    for e in got.get("after_last", []):
        listed.setdefault(e["path"], []).append((e["id"], e["time_ns"],
                                                 bool(e.get("approximate", False))))
    logs = sorted(run.rglob("workerlog.*"))
    for log in logs:
        mine = sorted(python_events(log, patterns), key=lambda e: (e[1], e[0]))
        theirs = sorted(listed.get(str(log), []), key=lambda e: (e[1], e[0]))
        if mine != theirs:
            raise Failure(f"{log.name}: analyze {theirs[:4]}..., this script {mine[:4]}...")
    return (f"{got['total']} events on {len(logs)} logs, outliers "
            f"{[o[0] for o in outliers]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", required=True)
    p.add_argument("--patterns", default=str(DEFAULT_PATTERNS))
    a = p.parse_args()
    patterns = load_patterns(a.patterns)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="events-") as tmp:
        for name, args in CASES:
            try:
                print(f"ok    {name}: {check_case(a.cli, name, args, patterns, Path(tmp))}")
            except (Failure, subprocess.CalledProcessError) as e:
                failed += 1
                print(f"FAIL  {name}: {e}")
    print(f"{len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
