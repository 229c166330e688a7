#!/usr/bin/env python3
"""Independent reference implementation of pipescope's metric contract.

Reads PaddlePaddle worker logs (workerlog.N, optionally inside machineK/
folders), parses the `Profiler Info: Job` lines with the line grammar, and
prints the figures of summary.json (jobs, launch segments, steps, windows,
complete steps, busy/idle, bubble ratios, per-input line counts) as JSON on
stdout.

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
STEP_START = b"Schedule Profiler start at step"
FIRST_STEP = re.compile(rb"Schedule Profiler start at step[ \t]*([0-9]+)")
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
    line = line.rstrip(b"\r")  # CR LF, and CR CR LF
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
    """Parses one worker log: (jobs, input stats, [(line, N)] of its
    `Schedule Profiler start at step N` lines)."""
    data = Path(path).read_bytes()
    lines = split_lines(data)
    # A last line without its newline is a write in progress (or a cut-off
    # file): counted as a line, never parsed.
    partial = len(lines[-1]) if lines and not data.endswith(b"\n") else 0
    complete = lines[:-1] if partial else lines
    jobs, malformed, marks, untimed = [], 0, [], 0
    for number, raw in enumerate(complete, start=1):
        m = FIRST_STEP.search(CSI.sub(b"", raw)) if STEP_START in raw else None
        if m:
            marks.append((number, int(m.group(1))))
        if LITERAL not in raw:
            continue
        job = parse_job(raw)
        if job is None:
            malformed += 1
            continue
        job["line"] = number
        if job["start"] == 0 and job["end"] == 0:
            # Untimed (PIR prints 0 for a job without a stream timer): a
            # matched line, but no job of the analysis.
            untimed += 1
            continue
        jobs.append(job)
    stats = {"path": str(path), "bytes": len(data), "lines": len(lines),
             "matched": len(jobs) + untimed, "malformed": malformed, "oversized": 0,
             "partial_last_line_bytes": partial}
    return jobs, stats, marks


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


GAP_STEPS = 10  # restart_after_gap: the gap exceeds this many median steps...
MIN_GAP_NS = 1_000_000_000  # ...and 1 s; an all-idle gap marks a launch from 1 s


def is_opener(job, kind, latest):
    """The contract's opening rule for a job after the device's first."""
    if kind == "lr":
        return latest is not None
    return kind == "forward" and job["mb"] == 0 and latest in ("backward", "optimizer")


def launch_signals(d):
    """[(stop, restart, found_by, where)]: where this device shows a new launch.

    step_start_line: a step-start line with jobs of the device on lines before
    and after it; stop = last end of the jobs on earlier lines, restart = first
    start of those on later lines (ignored when stop > restart).
    restart_after_gap: consecutive jobs (start order) with start - (latest end
    so far) > max(1 s, 10 x the device's median step span), where the first
    forward/backward/optimizer/lr job from the later one on is an lr or a
    forward of micro-batch 0, and either the later job opens no step or the
    step before the gap ran fewer forward/backward/optimizer jobs than the one
    before it."""
    jobs, out, ignored = d["jobs"], [], []
    for line, _ in d["marks"]:
        before = [j for j in jobs if j["line"] < line]
        after = [j for j in jobs if j["line"] > line]
        if not before or not after:
            continue
        stop, restart = max(j["end"] for j in before), min(j["start"] for j in after)
        where = f"{d['path']}:{line}"
        if stop > restart:
            ignored.append(("step_start_line", where))
        else:
            out.append((stop, restart, "step_start_line", where))
    if len(jobs) >= 2:
        step_of, steps = assign_steps(jobs)
        spans, fbo = [], [0] * steps
        for k in range(steps):
            mine = [j for j, s in zip(jobs, step_of) if s == k]
            first, last = min(j["start"] for j in mine), max(j["end"] for j in mine)
            if last > first:
                spans.append(last - first)
        for j, k in zip(jobs, step_of):
            if kind_of(j["type"]) in ("forward", "backward", "optimizer"):
                fbo[k] += 1
        median = sorted(spans)[len(spans) // 2] if spans else 0
        threshold = max(MIN_GAP_NS, GAP_STEPS * median)
        latest, max_end = None, jobs[0]["end"]
        for i, job in enumerate(jobs):
            kind = kind_of(job["type"])
            if i > 0 and job["start"] - max_end > threshold:
                steering = [j for j in jobs[i:]
                            if kind_of(j["type"]) in ("forward", "backward", "optimizer", "lr")]
                starts_over = bool(steering) and (
                    kind_of(steering[0]["type"]) == "lr"
                    or (kind_of(steering[0]["type"]) == "forward" and steering[0]["mb"] == 0))
                k = step_of[i - 1]
                cut = not is_opener(job, kind, latest) or (k > 0 and fbo[k] < fbo[k - 1])
                if starts_over and cut:
                    out.append((max_end, job["start"], "restart_after_gap",
                                f"{d['path']}:{job['line']}"))
            if kind in ("forward", "backward", "optimizer", "lr"):
                latest = kind
            max_end = max(max_end, job["end"])
    # Step-start lines first: a device is named once per cut, by them if any.
    return out, ignored


def kind_counts(d, k):
    """Jobs of each kind the device ran in step k, as a vector comparable
    element by element (see `>=` over all kinds via all())."""
    return KindCounts(kind_of(j["type"]) for j, s in zip(d["jobs"], d["step_of"]) if s == k)


class KindCounts(dict):
    """Counts by kind; a >= b when every kind of b has at least as many."""

    def __init__(self, kinds):
        super().__init__()
        for kind in kinds:
            self[kind] = self.get(kind, 0) + 1

    def __ge__(self, other):
        return all(self.get(kind, 0) >= n for kind, n in other.items())


def all_idle_cut(devices, lo, hi):
    """End of the longest stretch of [lo, hi] with no job running on any
    device (the first of equal ones), if it lasts at least 1 s."""
    busy = union((j["start"], j["end"]) for d in devices for j in d["jobs"]
                 if j["start"] < hi and j["end"] > lo)
    best, best_end, cursor = -1, None, lo
    for start, end in busy:
        if start > cursor and min(start, hi) - cursor > best:
            best, best_end = min(start, hi) - cursor, min(start, hi)
        cursor = max(cursor, end)
        if cursor >= hi:
            break
    if cursor < hi and hi - cursor > best:
        best, best_end = hi - cursor, hi
    return best_end if best >= MIN_GAP_NS else None


def split_segments(devices):
    """Cut times, and per cut (found_by, [where])."""
    cuts = {}
    for d in devices:
        signals, _ = launch_signals(d)
        named = set()
        for stop, restart, found_by, where in signals:
            at = all_idle_cut(devices, stop, restart)
            if at is None:
                continue
            entry = cuts.setdefault(at, [found_by, []])
            if found_by == "step_start_line":
                entry[0] = found_by
            if at not in named:
                entry[1].append(where)
                named.add(at)
    return sorted(cuts.items())


def begins_inside(jobs):
    """Whether a device's jobs of a segment begin inside a step: the first
    forward/backward/optimizer/lr job is neither an lr job nor a forward of
    micro-batch 0 (every step of a schedule opens with one of those)."""
    for job in jobs:
        kind = kind_of(job["type"])
        if kind in ("forward", "backward", "optimizer", "lr"):
            return not (kind == "lr" or (kind == "forward" and job["mb"] == 0))
    return False


def line_up(members):
    """(lead, first whole step) of each device of a segment, keyed by id(jobs):
    the lead is the number of the segment's steps before the device's first.
    Members: (idx, jobs, local step of each job, steps).

    The devices whose first job starts no later than the earliest end of any
    device's first step with a job began with the segment: lead 0. Their steps
    give windows (first start / last end per step, each start no earlier than
    the previous end, an empty step at the previous end). Every other device
    takes for its first whole step (its first, or its second when its first is
    a tail) the number of the first such window that ends after that step's
    first start, as long as its steps then end within theirs."""
    spans = []
    for idx, jobs, local, steps in members:
        first, last = {}, {}
        for job, k in zip(jobs, local):
            first[k] = min(first.get(k, job["start"]), job["start"])
            last[k] = max(last.get(k, job["end"]), job["end"])
        spans.append((jobs, first, last, steps))
    earliest_end = min(last[min(first)] for _, first, last, _ in spans)
    began = [jobs[0]["start"] <= earliest_end for jobs, _, _, _ in spans]
    ends, previous = [], None
    for k in range(max((st for (_, _, _, st), b in zip(spans, began) if b), default=0)):
        starts = [first[k] for (_, first, _, _), b in zip(spans, began) if b and k in first]
        lasts = [last[k] for (_, _, last, _), b in zip(spans, began) if b and k in last]
        if starts:
            start = min(starts) if previous is None else max(min(starts), previous)
            previous = max(max(lasts), start)
        ends.append(previous)
    out = {}
    for (jobs, first, last, steps), b in zip(spans, began):
        inside = 1 if begins_inside(jobs) else 0
        if b:
            out[id(jobs)] = (0, inside)
            continue
        whole = min(inside, steps - 1)
        t = first[min(k for k in first if k >= whole)]
        window = sum(1 for e in ends if e is None or e <= t)
        # Never past the last step of the devices that began with the segment:
        # a device whose steps fit theirs by count has a clock ahead.
        lead = min(max(0, window - whole), max(0, len(ends) - steps))
        out[id(jobs)] = (lead, lead + inside)
    return out


def analyse(paths, device_filter=None):
    devices, inputs, first_steps, left_out = [], [], [], []
    for index, (machine, name, rank, path) in enumerate(discover(paths)):
        if device_filter is not None and index not in device_filter:
            continue
        jobs, stats, marks = read_log(path)
        inputs.append(stats)
        if marks:
            first_steps.append(marks[0][1])
        if not jobs:
            left_out.append({"device": index, "machine": machine, "machine_name": name,
                             "rank": rank, "path": str(path), "reason": "empty_input"})
            continue
        jobs.sort(key=lambda j: (j["start"], j["end"], j["line"]))
        devices.append({"device": index, "machine": machine, "machine_name": name,
                        "rank": rank, "path": str(path), "jobs": jobs, "marks": marks,
                        "union": union((j["start"], j["end"]) for j in jobs),
                        # Busy time is every job but comm jobs (send*/recv*).
                        "compute": union((j["start"], j["end"]) for j in jobs
                                         if kind_of(j["type"]) != "comm")})
    first_step = min(first_steps) if first_steps else 0

    # Launch segments: a job belongs to segment (number of cuts <= its start).
    cuts = split_segments(devices)
    segment_count = len(cuts) + 1
    for d in devices:
        d["segment_of"] = [sum(1 for at, _ in cuts if at <= j["start"]) for j in d["jobs"]]

    # Steps per device and segment; segments in time order, steps numbered
    # from the segment's step-start lines, else on from the previous one.
    segments, offset, next_number = [], 0, first_step
    for s in range(segment_count):
        marked, count, members = None, 0, []
        for d in devices:
            idx = [i for i, seg in enumerate(d["segment_of"]) if seg == s]
            if not idx:
                d.setdefault("seg_steps", []).append(0)
                d.setdefault("lead", []).append(0)
                d.setdefault("first_whole", []).append(0)
                continue
            mine = [d["jobs"][i] for i in idx]
            min_line = min(j["line"] for j in mine)
            earlier = [j["line"] for j, seg in zip(d["jobs"], d["segment_of"]) if seg < s]
            # The last step-start line before the device's first job in the
            # segment (in line order) and after its jobs of earlier segments.
            opening = None
            for line, n in d["marks"]:
                if line < min_line and (not earlier or line > max(earlier)):
                    opening = n
            if opening is not None and (marked is None or opening < marked):
                marked = opening
            local, steps = assign_steps(mine)
            d["_local"] = (idx, mine, local, steps)
            members.append(d)
        # Steps line up by time, not by count: see line_up().
        placed = line_up([d["_local"] for d in members])
        for d in members:
            idx, mine, local, steps = d.pop("_local")
            lead, first_whole = placed[id(mine)]
            d.setdefault("step_of", [None] * len(d["jobs"]))
            for i, k in zip(idx, local):
                d["step_of"][i] = offset + lead + k
            d.setdefault("seg_steps", []).append(steps)
            d.setdefault("lead", []).append(lead)
            d.setdefault("first_whole", []).append(first_whole)
            count = max(count, lead + steps)
        number = marked if marked is not None else next_number
        if s == 0 and marked is not None:
            first_step = marked
        segments.append({"index": s, "first": offset, "count": count, "first_step": number,
                         "numbered_by_line": marked is not None, "members": members,
                         "found_by": cuts[s - 1][1][0] if s > 0 else ""})
        offset += count
        next_number = number + count
    for d in devices:
        d["steps"] = sum(d["seg_steps"])

    count = offset
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

    # Complete steps, segment by segment.
    complete = [False] * count
    for seg_pos, seg in enumerate(segments):
        n, previous = seg["count"], None
        for k in range(n):
            # Every device started a later step, and none began its input
            # after this step began.
            ok = all(d["lead"][seg_pos] + d["seg_steps"][seg_pos] > k + 1
                     and k >= d["first_whole"][seg_pos] for d in seg["members"])
            if not ok and k == n - 1:
                if n == 1:
                    ok = True  # a first and only step
                elif previous is not None:
                    ok = all(kind_counts(d, seg["first"] + k)
                             >= kind_counts(d, seg["first"] + previous)
                             for d in seg["members"])
            complete[seg["first"] + k] = ok
            if ok:
                previous = k
    # Figures for every step; totals and ratios over the complete ones only.
    segment_of_step, number_of_step = [], []
    for seg in segments:
        for k in range(seg["count"]):
            segment_of_step.append(seg["index"])
            number_of_step.append(seg["first_step"] + k)
    D = len(devices)
    steps_out, total_idle, total_window = [], 0, 0
    busy_total, comm_total = [0] * D, [0] * D
    for k, (start, end) in enumerate(windows):
        length = end - start
        per_device, idle_sum = [], 0
        for i, d in enumerate(devices):
            busy = covered(d["compute"], start, end)
            idle = length - busy
            # Comm time: what the comm jobs add to the busy union.
            comm = covered(d["union"], start, end) - busy
            if complete[k]:
                busy_total[i] += busy
                comm_total[i] += comm
            idle_sum += idle
            per_device.append({"device": d["device"], "busy_ns": busy, "idle_ns": idle,
                               "comm_ns": comm})
        if complete[k]:
            total_idle += idle_sum
            total_window += length
        steps_out.append({"step": number_of_step[k], "segment": segment_of_step[k],
                          "complete": complete[k], "start_ns": start, "end_ns": end,
                          "duration_ns": length, "bubble_ratio": ratio(idle_sum, D * length),
                          "devices": per_device})
    segments_out = []
    for seg in segments:
        first, n = seg["first"], seg["count"]
        segments_out.append({
            "index": seg["index"],
            "start_ns": windows[first][0] if n else 0,
            "end_ns": windows[first + n - 1][1] if n else 0,
            "first_step": seg["first_step"], "numbered_by_line": seg["numbered_by_line"],
            "steps": n, "complete_steps": sum(complete[first:first + n]),
            "found_by": seg["found_by"], "files": [d["path"] for d in seg["members"]]})

    devices_out = []
    for i, d in enumerate(devices):
        devices_out.append({
            "device": d["device"], "machine": d["machine"], "machine_name": d["machine_name"],
            "rank": d["rank"], "path": d["path"], "jobs": len(d["jobs"]),
            "steps": d["steps"],
            "busy_ns": busy_total[i], "idle_ns": total_window - busy_total[i],
            "comm_ns": comm_total[i],
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
        "comm_ns": sum(comm_total),
        "devices": devices_out,
        "steps": steps_out,
        "incomplete_steps": complete.count(False),
        "segments": segments_out,
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
