#!/usr/bin/env python3
"""Independent reference implementation of pipescope's metric contract.

Reads PaddlePaddle worker logs (workerlog.N, optionally inside machineK/
folders), parses the `Profiler Info: Job` lines with the line grammar, and
prints the figures of summary.json (jobs, steps, windows, busy/idle, bubble
ratios, per-input line counts) as JSON on stdout.

Written for clarity, not speed, and sharing no code with the C++ engine: it is
the second opinion the end-to-end tests compare the real tool against.

    pipescope_reference.py PATH... [--devices LIST]

LIST is a comma-separated list of global device indices or ranges (`0,2-3`);
only those devices are analysed (D counts them) and only their inputs listed.
A device whose log holds no job is left out of D and listed in "left_out"
(docs/guide.md, "Missing, unreadable and empty ranks").
"""

import argparse
import json
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

INT64_MAX = 2**63 - 1

LITERAL = b"Profiler Info: Job"
# ESC '[' parameter bytes (0x30-0x3F) final byte (0x40-0x7E): the contract's
# definition of a CSI sequence (no intermediate bytes).
CSI = re.compile(rb"\x1b\[[\x30-\x3f]*[\x40-\x7e]")
WS = rb"[ \t]*"
INT = rb"(-?[0-9]{1,18})"
TIME = rb"([0-9]{1,13}(?:\.[0-9]{1,9})?)"
JOB = re.compile(
    rb"Job" + WS + rb"\(" + WS + INT + WS + rb"\)" + WS + rb"," + WS
    + rb"type" + WS + rb"=([^,]*)," + WS
    + rb"micro_batch_id" + WS + rb"=" + WS + INT + WS + rb"," + WS
    + rb"job_start_time" + WS + rb"=" + WS + TIME + WS + rb"," + WS
    + rb"job_end_time" + WS + rb"=" + WS + TIME + WS + rb"(?:,|\Z)",
    re.DOTALL)
FIRST_STEP = re.compile(rb"Schedule Profiler start at step ([0-9]+)")
WORKERLOG = re.compile(r"workerlog\.([0-9]+)")
MACHINE = re.compile(r"machine([0-9]+)")


def ms_to_ns(text):
    """Milliseconds text -> integer ns, digits beyond the 6th rounded half up."""
    value = Decimal(text.decode("ascii")) * 1000000
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def kind_of(job_type):
    for prefix, kind in (("forward", "forward"), ("backward", "backward"),
                         ("optimizer", "optimizer"), ("send", "comm"), ("recv", "comm"),
                         ("lr", "lr")):
        if job_type.startswith(prefix):
            return kind
    return "other"


def split_lines(data):
    """Lines of a file without their '\\n'; a final line without one counts."""
    if not data:
        return []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()  # split() yields an empty string after the final newline
    return lines


def parse_job(raw):
    """Returns a job dict, or None when the candidate line is malformed."""
    line = CSI.sub(b"", raw)
    if line.endswith(b"\r"):
        line = line[:-1]
    at = line.find(LITERAL)
    if at < 0:  # an escape sequence's final byte ate part of the literal
        return None
    m = JOB.match(line, at + len(b"Profiler Info: "))
    if not m:
        return None
    job_id, job_type, mb, start_text, end_text = m.groups()
    job_type = job_type.strip(b" \t")
    if not job_type:
        return None
    start, end = ms_to_ns(start_text), ms_to_ns(end_text)
    # 13 integer digits of ms can exceed int64 ns; the engine stores int64.
    if end < start or end > INT64_MAX:
        return None
    return {"id": int(job_id), "type": job_type.decode("utf-8", errors="replace"),
            "mb": int(mb), "start": start, "end": end}


def read_log(path):
    """Parses one worker log: (jobs, input stats, first step or None)."""
    data = Path(path).read_bytes()
    lines = split_lines(data)
    # A last line without its newline is a write in progress (or a cut-off
    # file): counted as a line, never parsed.
    partial = len(lines[-1]) if lines and not data.endswith(b"\n") else 0
    complete = lines[:-1] if partial else lines
    jobs, malformed, first_step = [], 0, None
    for number, raw in enumerate(complete, start=1):
        if first_step is None:
            m = FIRST_STEP.search(raw)
            if m:
                first_step = int(m.group(1))
        if LITERAL not in raw:
            continue
        job = parse_job(raw)
        if job is None:
            malformed += 1
            continue
        job["line"] = number
        jobs.append(job)
    stats = {"path": str(path), "bytes": len(data), "lines": len(lines),
             "matched": len(jobs), "malformed": malformed, "oversized": 0,
             "partial_last_line_bytes": partial}
    return jobs, stats, first_step


def numbered(folder, pattern, want_dir):
    found = []
    for entry in folder.iterdir():
        m = pattern.fullmatch(entry.name)
        if m and (entry.is_dir() if want_dir else entry.is_file()):
            found.append((int(m.group(1)), entry.name, entry))
    return sorted(found)


def discover(paths):
    """[(machine ordinal, machine name, rank, path)] in global device order."""
    machines = []  # (machine name, [(rank, path)])
    for path in paths:
        folder = Path(path)
        logs = numbered(folder, WORKERLOG, want_dir=False)
        if logs:
            machines.append(("", [(rank, p) for rank, _, p in logs]))
            continue
        for _, name, sub in numbered(folder, MACHINE, want_dir=True):
            logs = numbered(sub, WORKERLOG, want_dir=False)
            machines.append((name, [(rank, p) for rank, _, p in logs]))
    devices = []
    for ordinal, (name, logs) in enumerate(machines):
        for rank, p in logs:
            devices.append((ordinal, name, rank, p))
    return devices


def parse_device_list(text):
    chosen = set()
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            chosen.update(range(int(lo), int(hi) + 1))
        elif part:
            chosen.add(int(part))
    return chosen


def assign_steps(jobs):
    """Step ordinal of each job of one device (jobs already in start order) and
    the device's number of steps.

    Openers: the first job; an lr job after some forward/backward/optimizer/lr
    job; a forward job of micro-batch 0 whose latest earlier
    forward/backward/optimizer/lr job is a backward or an optimizer. Every job
    belongs to the latest opener at or before it, except the step's prologue:
    walking back from an opener, the lr and recv jobs met before any
    forward/backward/optimizer job belong to that opener's step (the walk also
    stops after an opener, whose own prologue is its own)."""
    kinds = [kind_of(job["type"]) for job in jobs]
    openers = []
    latest = None  # latest earlier forward/backward/optimizer/lr kind
    for i, (job, kind) in enumerate(zip(jobs, kinds)):
        if i == 0:
            openers.append(i)
        elif kind == "lr" and latest is not None:
            openers.append(i)
        elif kind == "forward" and job["mb"] == 0 and latest in ("backward", "optimizer"):
            openers.append(i)
        if kind in ("forward", "backward", "optimizer", "lr"):
            latest = kind
    steps = []
    for i in range(len(jobs)):
        steps.append(sum(1 for o in openers if o <= i) - 1)
    own_step = {o: n for n, o in enumerate(openers)}
    for o in openers:
        j = o - 1
        while j >= 0 and kinds[j] not in ("forward", "backward", "optimizer"):
            if kinds[j] == "lr" or jobs[j]["type"].startswith("recv"):
                steps[j] = own_step[o]
            if j in own_step:
                break
            j -= 1
    return steps, len(openers)


def union(intervals):
    """Sorted, disjoint [start, end) intervals covering the given ones."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def covered(merged, lo, hi):
    return sum(max(0, min(end, hi) - max(start, lo)) for start, end in merged)


def ratio(numerator, denominator):
    # Integers stay exact; only the final division is done in doubles.
    return float(numerator) / float(denominator) if denominator else 0.0


def analyse(paths, device_filter=None):
    devices, inputs, first_steps, left_out = [], [], [], []
    for index, (machine, name, rank, path) in enumerate(discover(paths)):
        if device_filter is not None and index not in device_filter:
            continue
        jobs, stats, first_step = read_log(path)
        inputs.append(stats)
        if first_step is not None:
            first_steps.append(first_step)
        if not jobs:
            left_out.append({"device": index, "machine": machine, "machine_name": name,
                             "rank": rank, "path": str(path), "reason": "empty_input"})
            continue
        jobs.sort(key=lambda j: (j["start"], j["end"], j["line"]))
        step_of, steps = assign_steps(jobs)
        devices.append({"device": index, "machine": machine, "machine_name": name,
                        "rank": rank, "path": str(path), "jobs": jobs,
                        "step_of": step_of, "steps": steps,
                        "union": union((j["start"], j["end"]) for j in jobs)})
    first_step = min(first_steps) if first_steps else 0

    count = max((d["steps"] for d in devices), default=0)
    earliest = min((j["start"] for d in devices for j in d["jobs"]), default=0)
    windows = []
    previous_end = None
    for k in range(count):
        firsts, lasts = [], []
        for d in devices:
            mine = [j for j, s in zip(d["jobs"], d["step_of"]) if s == k]
            if mine:
                firsts.append(mine[0]["start"])
                lasts.append(max(j["end"] for j in mine))
        if not firsts:
            # No job of step k anywhere (lr, lr: the first lr opens a step
            # and then joins the next one): an empty window where step k-1 ended.
            start = end = earliest if previous_end is None else previous_end
        else:
            start = min(firsts) if previous_end is None else max(min(firsts), previous_end)
            end = max(max(lasts), start)
        windows.append((start, end))
        previous_end = end

    D = len(devices)
    steps_out, total_idle, total_window = [], 0, 0
    busy_total = [0] * D
    for k, (start, end) in enumerate(windows):
        length = end - start
        per_device, idle_sum = [], 0
        for i, d in enumerate(devices):
            busy = covered(d["union"], start, end)
            idle = length - busy
            busy_total[i] += busy
            idle_sum += idle
            per_device.append({"device": d["device"], "busy_ns": busy, "idle_ns": idle})
        total_idle += idle_sum
        total_window += length
        steps_out.append({"step": first_step + k, "start_ns": start, "end_ns": end,
                          "duration_ns": length, "bubble_ratio": ratio(idle_sum, D * length),
                          "devices": per_device})

    devices_out = []
    for i, d in enumerate(devices):
        devices_out.append({
            "device": d["device"], "machine": d["machine"], "machine_name": d["machine_name"],
            "rank": d["rank"], "path": d["path"], "jobs": len(d["jobs"]),
            "steps": d["steps"],
            "busy_ns": busy_total[i], "idle_ns": total_window - busy_total[i],
            "utilization": ratio(busy_total[i], total_window)})

    type_counts, type_totals = {}, {}
    for d in devices:
        for j in d["jobs"]:
            type_counts[j["type"]] = type_counts.get(j["type"], 0) + 1
            type_totals[j["type"]] = type_totals.get(j["type"], 0) + j["end"] - j["start"]
    summary = {
        "schema": "pipescope.summary/1",
        "jobs": sum(len(d["jobs"]) for d in devices),
        "first_step": first_step,
        "bubble_ratio": ratio(total_idle, D * total_window),
        "total_window_ns": total_window,
        "devices": devices_out,
        "steps": steps_out,
        "job_types": [{"type": t, "kind": kind_of(t), "jobs": n, "total_ns": type_totals[t]}
                      for t, n in sorted(type_counts.items())],
        "inputs": inputs,
    }
    if left_out:
        summary["left_out"] = left_out
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--devices", help="global device indices to analyse, e.g. 0,2-3")
    args = parser.parse_args()
    device_filter = parse_device_list(args.devices) if args.devices else None
    for path in args.paths:
        if not Path(path).is_dir():
            parser.error(f"{path}: not a folder")
    json.dump(analyse(args.paths, device_filter), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
