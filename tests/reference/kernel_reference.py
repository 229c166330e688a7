#!/usr/bin/env python3
"""Independent reference implementation of pipescope's kernel view.

Implements the kernel-view contract (the `kernel_view` object of summary.json):
the GPU activities of PyTorch profiler (Kineto) Chrome traces, one trace per
rank, are split per rank and per step window into compute, transfer, wait and
idle time, with the waiting of NCCL kernels told apart by matching each kernel
with its peers on the other ranks.

Written apart from the C++ engine and sharing no code with it: its own JSON
reading (exact decimal times), its own interval arithmetic (sort and sweep) and
its own peer matching. It is the second opinion the checks compare
`pipescope analyze` against. Standard library only; written for clarity, not
speed.

    kernel_reference.py TRACE... [--ranks-from-files]

prints the `kernel_view` object as JSON on stdout. Other scripts call
`kernel_view(paths)`.

The contract, in short:

- Times are integer ns: baseTimeNanoseconds (0 when absent) + `ts` (us) read
  exactly from the decimal text; end = start + `dur` (missing: 0).
- GPU activity: `ph` "X", `cat` kernel / gpu_memcpy / gpu_memset. A kernel
  whose name starts with "nccl" is a communication kernel; everything else is
  compute.
- Launch: `ph` "X", cat cuda_runtime / cuda_driver, integer args.correlation,
  name holding "Launch", "Memcpy" or "Memset". An activity's step is the N of
  the `ProfilerStep#N` user_annotation span holding its launch's start (the
  latest-starting one when several do).
- Step windows: S_k = max(min over ranks of the first start of a step-k
  activity, E_{k-1}); E_k = max over ranks of the last end (at least S_k). A
  step is complete when every rank has an activity of it. Without any step,
  one window (step 0) over all activities.
- Per rank and window, instant by instant: compute > transfer > wait > idle,
  where a communication kernel waits from its start until its latest peer
  starts (or until it ends) and transfers for the rest.

Choices where the contract is silent (kept in one place, `CHOICES` below).
"""

import argparse
import bisect
import decimal
import gzip
import json
import re
import sys
from pathlib import Path

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}
LAUNCH_WORDS = ("Launch", "Memcpy", "Memset")
STEP_NAME = re.compile(r"ProfilerStep#([0-9]+)")
SEND, RECV = "send", "recv"

CHOICES = """\
- Two step spans holding a launch and starting at the same instant: the larger N.
- Two launch records with the same correlation in one file: the first one read.
- A time with digits below the nanosecond: an error (the contract reads exact ns).
- `step_spans` is true when at least one activity has a step (the windows come
  from ProfilerStep spans), false for the one-window case.
- `gpu_activities`, `comm_kernels` and `comm_kernels_without_peers` count every
  activity of every rank, whatever step (or none) it belongs to.
- Peers are looked for on the other files (ranks), never on the kernel's own file.
  Process groups are told apart by "Process Group Name"; a collective without
  "Process Group Ranks", or a send/recv without its "Dst Rank"/"Src Rank", has no
  peers. Kernels are counted per (group, collective name) in start order (ties: file
  order), whether or not they carry a Comms Id.
- Every file's rank: distributedInfo.rank when it has one, else its place among
  the inputs sorted by path. Files are ordered (device i) by rank when all have
  one (ties by path), else by path.
"""


class TraceError(Exception):
    """A trace the contract cannot read."""


# ----------------------------------------------------------------- reading

def us_to_ns(value, what):
    """Microseconds (int, exact Decimal or decimal text) -> integer ns, exactly."""
    if isinstance(value, bool):
        raise TraceError(f"{what}: not a number: {value!r}")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, str):
        try:
            value = decimal.Decimal(value.strip())
        except decimal.InvalidOperation:
            raise TraceError(f"{what}: not a number: {value!r}") from None
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise TraceError(f"{what}: not a finite number: {value}")
        with decimal.localcontext() as ctx:
            ctx.prec = 200
            scaled = value.scaleb(3)
            whole = scaled.to_integral_value(rounding=decimal.ROUND_FLOOR)
            if scaled != whole:
                raise TraceError(f"{what}: {value} us is not a whole number of ns")
            return int(whole)
    raise TraceError(f"{what}: not a number: {value!r}")


def exact_int(value):
    """An integer from an int, an integral Decimal or decimal text; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, decimal.Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        return None
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?[0-9]+", text):
            return int(text)
    return None


def load_json(path):
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        return json.loads(raw.decode("utf-8"), parse_float=decimal.Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TraceError(f"{path}: not a JSON trace ({e})") from None


def parse_ranks_list(value):
    """"[0, 1]" (or a JSON list) -> [0, 1]; None when absent or unreadable."""
    if isinstance(value, list):
        ranks = [exact_int(v) for v in value]
        return ranks if all(r is not None for r in ranks) else None
    if isinstance(value, str):
        return [int(x) for x in re.findall(r"-?[0-9]+", value)]
    return None


class Activity:
    """One GPU activity of one rank, times in absolute ns."""

    __slots__ = ("start", "end", "name", "is_comm", "step", "order", "meta",
                 "peers", "cut")

    def __init__(self, start, end, name, is_comm, order):
        self.start = start
        self.end = end
        self.name = name
        self.is_comm = is_comm
        self.step = None
        self.order = order      # place in the file, to break start-order ties
        self.meta = {}
        self.peers = []         # [(device, Activity)]
        self.cut = start        # t: the end of the wait part, start of transfer


class Trace:
    def __init__(self, path):
        self.path = path
        self.rank_in_file = None
        self.activities = []
        self.device = None
        self.global_rank = None


def comm_meta(args):
    """The communication metadata a kernel's args carry (recent Kineto)."""
    meta = {}
    name = args.get("Collective name")
    if isinstance(name, str) and name:
        meta["collective"] = name
    group = args.get("Process Group Name")
    if group is not None:
        meta["group"] = str(group)
    ranks = parse_ranks_list(args.get("Process Group Ranks"))
    if ranks is not None:
        meta["ranks"] = ranks
    for key, field in (("Src Rank", "src"), ("Dst Rank", "dst")):
        v = exact_int(args.get(key))
        if v is not None:
            meta[field] = v
    cid = args.get("Comms Id")
    if isinstance(cid, str):
        text = cid.strip()
        try:
            cid = int(text, 0) if text else None
        except ValueError:
            cid = None
    else:
        cid = exact_int(cid)
    if cid is not None:
        meta["comms_id"] = cid   # a Python int: exact for any 64-bit value
    return meta


def read_trace(path):
    data = load_json(path)
    trace = Trace(str(path))
    if isinstance(data, dict):
        events = data.get("traceEvents", [])
        base = data.get("baseTimeNanoseconds", 0)
        base = exact_int(base) if base is not None else 0
        if base is None:
            raise TraceError(f"{path}: baseTimeNanoseconds is not an integer")
        info = data.get("distributedInfo")
        if isinstance(info, dict):
            trace.rank_in_file = exact_int(info.get("rank"))
    elif isinstance(data, list):
        events, base = data, 0
    else:
        raise TraceError(f"{path}: not a Chrome trace")
    if not isinstance(events, list):
        raise TraceError(f"{path}: traceEvents is not a list")

    launches = {}       # correlation -> launch start ns
    spans = []          # (start ns, end ns, N)
    pending = []        # (Activity, correlation)
    for order, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        name = e.get("name")
        name = name if isinstance(name, str) else ""
        if cat not in GPU_CATS and cat not in LAUNCH_CATS and cat != "user_annotation":
            continue
        where = f"{path}: event {order} ({name[:40]})"
        start = base + us_to_ns(e.get("ts"), where + " ts")
        dur = e.get("dur")
        end = start + (us_to_ns(dur, where + " dur") if dur is not None else 0)
        args = e.get("args")
        args = args if isinstance(args, dict) else {}
        corr = args.get("correlation")
        corr = corr if isinstance(corr, int) and not isinstance(corr, bool) else None
        if cat in GPU_CATS:
            is_comm = cat == "kernel" and name.startswith("nccl")
            a = Activity(start, end, name, is_comm, order)
            if is_comm:
                a.meta = comm_meta(args)
            trace.activities.append(a)
            pending.append((a, corr))
        elif cat in LAUNCH_CATS:
            if corr is not None and any(w in name for w in LAUNCH_WORDS):
                launches.setdefault(corr, start)
        else:
            m = STEP_NAME.fullmatch(name)
            if m:
                spans.append((start, end, int(m.group(1))))

    # The step of an activity: the latest-starting span holding its launch.
    spans.sort()
    starts = [s[0] for s in spans]
    trace.without_launch = 0
    for a, corr in pending:
        if corr is None or corr not in launches:
            trace.without_launch += 1
            continue
        ts = launches[corr]
        best = None
        i = bisect.bisect_right(starts, ts)
        for s, e, n in spans[:i]:
            if e >= ts and (best is None or (s, n) > (best[0], best[2])):
                best = (s, e, n)
        if best is not None:
            a.step = best[2]
    return trace


# ----------------------------------------------------------------- intervals

def union(intervals):
    """Sorted, disjoint, non-empty [s, e) pieces covering the given ones."""
    out = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [tuple(p) for p in out]


def subtract(a, b):
    """a minus b; both sorted and disjoint (as union() gives them)."""
    out = []
    j = 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        k = j
        cur = s
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def length_in(pieces, lo, hi):
    """Length of (sorted disjoint pieces) ∩ [lo, hi)."""
    total = 0
    for s, e in pieces:
        if e <= lo:
            continue
        if s >= hi:
            break
        total += min(e, hi) - max(s, lo)
    return total


# ----------------------------------------------------------------- ranks

def order_traces(traces, ranks_from_files=False):
    """Device order and global ranks (see CHOICES)."""
    if ranks_from_files:
        missing = [t.path for t in traces if t.rank_in_file is None]
        if missing:
            raise TraceError(f"{missing[0]}: no distributedInfo.rank")
        seen = {}
        for t in traces:
            if t.rank_in_file in seen:
                raise TraceError(f"{seen[t.rank_in_file]} and {t.path}: both rank "
                                 f"{t.rank_in_file}")
            seen[t.rank_in_file] = t.path
    by_path = sorted(traces, key=lambda t: t.path)
    for place, t in enumerate(by_path):
        t.global_rank = t.rank_in_file if t.rank_in_file is not None else place
    if all(t.rank_in_file is not None for t in traces):
        ordered = sorted(traces, key=lambda t: (t.rank_in_file, t.path))
    else:
        ordered = by_path
    for device, t in enumerate(ordered):
        t.device = device
    return ordered


# ----------------------------------------------------------------- peers

def match_peers(traces):
    """Fills every communication kernel's peers (other ranks' kernels)."""
    device_of_rank = {}
    for t in traces:
        device_of_rank.setdefault(t.global_rank, t.device)
    comm = {t.device: sorted((a for a in t.activities if a.is_comm),
                             key=lambda a: (a.start, a.order)) for t in traces}
    by_id = {}
    collectives = {}    # (device, group, name) -> kernels in start order
    sends = {}          # (device, group, dst) -> sends in start order
    recvs = {}          # (device, group, src) -> recvs in start order
    place = {}          # id(kernel) -> its index in its list above
    for t in traces:
        for a in comm[t.device]:
            m = a.meta
            if "comms_id" in m:
                by_id.setdefault(m["comms_id"], []).append((t.device, a))
            if "collective" not in m or "group" not in m:
                continue
            if m["collective"] == SEND:
                key = (t.device, m["group"], m.get("dst")) if "dst" in m else None
                table = sends
            elif m["collective"] == RECV:
                key = (t.device, m["group"], m.get("src")) if "src" in m else None
                table = recvs
            else:
                key, table = (t.device, m["group"], m["collective"]), collectives
            if key is not None:
                lst = table.setdefault(key, [])
                place[id(a)] = len(lst)
                lst.append(a)

    for t in traces:
        me = t.global_rank
        for a in comm[t.device]:
            m = a.meta
            peers = []
            if "comms_id" in m:
                peers = [(d, b) for d, b in by_id[m["comms_id"]] if d != t.device]
            elif id(a) in place:
                k = place[id(a)]
                name, group = m["collective"], m["group"]
                if name == SEND:
                    d = device_of_rank.get(m["dst"])
                    lst = recvs.get((d, group, me), [])
                    if d is not None and d != t.device and k < len(lst):
                        peers = [(d, lst[k])]
                elif name == RECV:
                    d = device_of_rank.get(m["src"])
                    lst = sends.get((d, group, me), [])
                    if d is not None and d != t.device and k < len(lst):
                        peers = [(d, lst[k])]
                elif "ranks" in m:
                    for g in sorted(set(m["ranks"])):
                        d = device_of_rank.get(g)
                        if g == me or d is None or d == t.device:
                            continue
                        lst = collectives.get((d, group, name), [])
                        if k < len(lst):
                            peers.append((d, lst[k]))
            a.peers = peers
            if peers:
                latest = max(b.start for _, b in peers)
                a.cut = min(a.end, max(a.start, latest))
            else:
                a.cut = a.start


# ----------------------------------------------------------------- windows

def step_windows(traces):
    """[(N, complete, S, E)] in step order."""
    firsts = {}     # N -> {device: first start}
    lasts = {}      # N -> {device: last end}
    for t in traces:
        for a in t.activities:
            if a.step is None:
                continue
            f = firsts.setdefault(a.step, {})
            f[t.device] = min(f.get(t.device, a.start), a.start)
            e = lasts.setdefault(a.step, {})
            e[t.device] = max(e.get(t.device, a.end), a.end)
    if not firsts:
        acts = [a for t in traces for a in t.activities]
        if not acts:
            return [], False
        return [(0, True, min(a.start for a in acts), max(a.end for a in acts))], False
    windows = []
    prev_end = None
    for n in sorted(firsts):
        s = min(firsts[n].values())
        if prev_end is not None:
            s = max(s, prev_end)
        e = max(max(lasts[n].values()), s)
        windows.append((n, len(firsts[n]) == len(traces), s, e))
        prev_end = e
    return windows, True


def rank_figures(trace, windows, rank_of_device):
    compute = union((a.start, a.end) for a in trace.activities if not a.is_comm)
    comm = [a for a in trace.activities if a.is_comm]
    transfer = subtract(union((a.cut, a.end) for a in comm), compute)
    wait = subtract(subtract(union((a.start, a.cut) for a in comm), compute), transfer)
    steps = []
    totals = dict(window_ns=0, compute_ns=0, transfer_ns=0, wait_ns=0, idle_ns=0)
    blamed_total = {}
    for n, complete, s, e in windows:
        c = length_in(compute, s, e)
        x = length_in(transfer, s, e)
        w = length_in(wait, s, e)
        blamed = blame(comm, s, e, rank_of_device) if w else {}
        row = {"step": n, "complete": complete, "start_ns": s, "end_ns": e,
               "window_ns": e - s, "compute_ns": c, "transfer_ns": x, "wait_ns": w,
               "idle_ns": (e - s) - c - x - w,
               "most_waited_on": top_of(blamed)}
        steps.append(row)
        if complete:
            for key in totals:
                totals[key] += row[key]
            for g, v in blamed.items():
                blamed_total[g] = blamed_total.get(g, 0) + v
    # Over the complete steps: the peer blamed longest in the steps it waited in.
    totals["most_waited_on"] = top_of(blamed_total)
    return totals, steps


def top_of(blamed):
    """The rank blamed longest (ties: the lowest); None for none."""
    if not blamed:
        return None
    top = max(blamed.values())
    return min(g for g, v in blamed.items() if v == top)


def blame(comm, lo, hi, rank_of_device):
    """{peer rank: ns of r's raw wait parts in [lo, hi) that its late start caused}."""
    blamed = {}
    for a in comm:
        part = min(a.cut, hi) - max(a.start, lo)
        if part <= 0 or not a.peers:
            continue
        latest = max(b.start for _, b in a.peers)
        culprit = min(rank_of_device[d] for d, b in a.peers if b.start == latest)
        blamed[culprit] = blamed.get(culprit, 0) + part
    return blamed


# ----------------------------------------------------------------- the view

def ratio(num, den):
    return num / den if den else 0.0


def kernel_view(paths, ranks_from_files=False):
    """The `kernel_view` object of summary.json for the traces at `paths`."""
    traces = order_traces([read_trace(p) for p in paths], ranks_from_files)
    match_peers(traces)
    windows, from_spans = step_windows(traces)
    rank_of_device = {t.device: t.global_rank for t in traces}
    ranks = []
    sums = dict(window_ns=0, compute_ns=0, transfer_ns=0, wait_ns=0, idle_ns=0)
    for t in traces:
        totals, steps = rank_figures(t, windows, rank_of_device)
        ranks.append({"device": t.device, "global_rank": t.global_rank, "path": t.path,
                      **totals, "steps": steps})
        for key in sums:
            sums[key] += totals[key]
    comm = [a for t in traces for a in t.activities if a.is_comm]
    window = sums["window_ns"]
    return {
        "ranks": ranks,
        "steps": [{"step": n, "complete": c, "start_ns": s, "end_ns": e}
                  for n, c, s, e in windows],
        **sums,
        "bubble_ratio": ratio(window - sums["compute_ns"], window),
        "idle_share": ratio(sums["idle_ns"], window),
        "wait_share": ratio(sums["wait_ns"], window),
        "transfer_share": ratio(sums["transfer_ns"], window),
        "comm_kernels": len(comm),
        "comm_kernels_without_peers": sum(1 for a in comm if not a.peers),
        "gpu_activities": sum(len(t.activities) for t in traces),
        "without_launch": sum(t.without_launch for t in traces),
        "step_spans": from_spans,
    }


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Where the contract is silent:\n" + CHOICES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="Kineto trace files (.json or .json.gz), one per rank")
    p.add_argument("--ranks-from-files", action="store_true",
                   help="require every trace to carry distributedInfo.rank, all distinct "
                        "(else exit 2) instead of falling back on the path order")
    a = p.parse_args(argv)
    try:
        view = kernel_view(a.traces, a.ranks_from_files)
    except (OSError, TraceError) as e:
        print(f"kernel_reference: {e}", file=sys.stderr)
        return 2
    json.dump(view, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
