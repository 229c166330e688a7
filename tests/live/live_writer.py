#!/usr/bin/env python3
"""Writes a finished run's worker logs into a folder over time, as a running job does.

    live_writer.py FROM TO [--speed X] [--late RANK:SECONDS] [--copytruncate RANK:FRACTION]

Every `workerlog.N` of FROM (a folder, or machineK/ folders of them) is
created empty in TO at once, then each line is appended when the run's clock
reaches it: a job line at its job_end_time, any other line with the job line
before it. `--speed X` runs X run-seconds per wall second (the run of a test
takes a few seconds). Lines are flushed whole.

--late RANK:SECONDS  rank RANK's file stays empty for SECONDS of run time,
                     then fills from its first line on, SECONDS behind the
                     others (a rank whose output is held back); repeatable.
--pause S            wall seconds to wait before each rotation.
--copytruncate RANK:FRACTION
                     once FRACTION of the run's time has passed, rank RANK's
                     file is rotated as logrotate's `copytruncate` does: copied
                     to FILE.1 (outside the names a watch reads) and truncated
                     to 0 bytes in place; lines go on being appended to it.
                     RANK `all` rotates every file; repeatable.

Prints one JSON object on stdout at the end: the wall seconds it ran and,
per rotated file, the bytes the copy holds.
"""

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

END = re.compile(rb"job_end_time[ \t]*=[ \t]*([0-9]+(?:\.[0-9]+)?)")
WORKERLOG = re.compile(r"workerlog\.([0-9]+)$")


def logs_of(folder):
    out = []
    for path in sorted(Path(folder).rglob("workerlog.*")):
        if WORKERLOG.search(path.name):
            out.append(path)
    return out


def timed_lines(path):
    """(run time in ms, line bytes) of each line; a line without a job takes the time before."""
    out, last = [], None
    pending = []
    for line in path.read_bytes().splitlines(keepends=True):
        m = END.search(line)
        if m:
            last = float(m.group(1))
            for p in pending:
                out.append((last, p))  # lines before the first job go with it
            pending = []
            out.append((last, line))
        elif last is None:
            pending.append(line)
        else:
            out.append((last, line))
    for p in pending:
        out.append((last or 0.0, p))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--late", action="append", default=[])
    parser.add_argument("--copytruncate", action="append", default=[])
    parser.add_argument("--pause", type=float, default=0.0,
                        help="wall seconds to wait before each rotation (a watch then has read "
                             "everything the file held)")
    args = parser.parse_args()

    late = {}
    for item in args.late:
        rank, seconds = item.split(":")
        late[int(rank)] = float(seconds) * 1000.0
    rotate = []
    for item in args.copytruncate:
        rank, fraction = item.split(":")
        rotate.append((rank, float(fraction)))

    files = logs_of(args.source)
    if not files:
        parser.error(f"{args.source}: no workerlog.N files")
    events = []  # (run ms, order, file index, line)
    t0, t1 = None, None
    for i, path in enumerate(files):
        rank = int(WORKERLOG.search(path.name).group(1))
        for n, (t, line) in enumerate(timed_lines(path)):
            t0 = t if t0 is None else min(t0, t)
            t1 = t if t1 is None else max(t1, t)
            events.append((t + late.get(rank, 0.0), i, n, line))
    events.sort()
    targets = []
    for path in files:
        target = Path(args.target) / path.relative_to(args.source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"")
        targets.append(target)
    ranks = [int(WORKERLOG.search(p.name).group(1)) for p in files]
    rotations = []  # (run ms, file index)
    for rank, fraction in rotate:
        at = t0 + fraction * (t1 - t0)
        for i, r in enumerate(ranks):
            if rank == "all" or int(rank) == r:
                rotations.append((at, i))
    rotations.sort()

    handles = [open(t, "ab", buffering=0) for t in targets]
    began = time.monotonic()
    rotated = {}

    def wait_until(run_ms):
        due = began + (run_ms - t0) / 1000.0 / args.speed
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    r = 0
    for t, i, _, line in events:
        while r < len(rotations) and rotations[r][0] <= t:
            wait_until(rotations[r][0])
            time.sleep(args.pause)
            began += args.pause
            j = rotations[r][1]
            copy = Path(str(targets[j]) + ".1")
            shutil.copyfile(targets[j], copy)  # outside the names a watch reads
            handles[j].truncate(0)
            rotated[str(targets[j])] = copy.stat().st_size
            r += 1
        wait_until(t)
        handles[i].write(line)
    for h in handles:
        h.close()
    json.dump({"wall_s": round(time.monotonic() - began, 3), "rotated": rotated}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
