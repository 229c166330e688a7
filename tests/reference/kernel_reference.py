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
- Operations (what a NCCL kernel does, with whom), in this order: (1) its host
  calls, the `record_param_comms` cpu_ops and `nccl:<op>` spans (cpu_op or
  user_annotation) on the thread of its launch: a point-to-point kernel's ops
  are the send/recv calls that began after the previous NCCL launch on that
  thread and by its own, in start order (a call inside the previous one with
  the same op counts once); a collective's, the innermost call holding its
  launch that names a collective, else the call whose External id the kernel
  carries (only when that id is not the launch's correlation, as PyTorch 2.2
  and older write it); (2) the kernel's own args; (3) its name: SendRecv,
  _Send or _Recv is point-to-point, anything else a collective, peers unknown.
- A "Process Group Ranks" ending in "..." is no list: the members are Global
  rank start/stride/Group size of the same event, else the full list of that
  group name elsewhere, else the ranks whose collectives use the name when they
  are as many as its Group size.
- Peers: by Comms Id; else a collective's k-th call of that name in its group
  (name, else ranks) on every other member, all of them needed; else each
  point-to-point op on its own, the k-th send from a to b with b's k-th recv
  from a (counted in kernel start order, ops in issue order, any group); calls
  and ops are counted within each step (the ProfilerStep#N of the launch);
  without Dst/Src Rank a send's `Rank` is the peer's place in its group; a
  point-to-point kernel has peers only when every op found its other end.
- A kernel without peers counts as transfer; a rank-step where such a kernel
  runs beyond compute has no known split: transfer_ns and wait_ns are null
  there, in the rank's totals when a complete step is, in the view's totals
  (and wait_share, transfer_share) when a rank's is.
- Most waited-on (null where the split is unknown): each instant of wait left
  after precedence goes to one peer:
  among the kernels whose wait part [start, cut) holds it, the one whose wait
  ends latest (ties: the lowest ender), and of that kernel the peer with the
  latest start (ties: the lowest rank); per step and over the complete steps,
  the peer with the most ns (ties: the lowest), null for none.

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
CALL_CATS = {"cpu_op", "user_annotation"}
STEP_NAME = re.compile(r"ProfilerStep#([0-9]+)")
P2P_NAME_WORDS = ("SendRecv", "_Send", "_Recv")
SEND, RECV = "send", "recv"
UNKNOWN_KIND = "send or recv"  # an op whose direction no trace names (order rules)
NOT_COLLECTIVES = {SEND, RECV, "coalesced"}
FIGURE_KEYS = ("window_ns", "compute_ns", "transfer_ns", "wait_ns", "idle_ns")
SPLIT_KEYS = ("transfer_ns", "wait_ns")

CHOICES = """\
- Two step spans holding a launch and starting at the same instant: the larger N.
- Two launch records with the same correlation in one file: the first one read.
- A time with digits below the nanosecond: an error (the contract reads exact ns).
- `step_spans` is true when at least one activity has a step (the windows come
  from ProfilerStep spans), false for the one-window case.
- `gpu_activities`, `comm_kernels` and `comm_kernels_without_peers` count every
  activity of every rank, whatever step (or none) it belongs to.
- Host calls are those on the launch's thread (`tid`); a kernel without a launch
  record has none. A call holds a launch when the launch's start lies in it (both
  ends included); the innermost is the latest-starting (ties: the later in the file).
- Global rank start/stride/Group size give the members wherever no full "Process
  Group Ranks" is written (cut short, or absent as in PyTorch 2.2), start >= 0 and
  stride >= 1 (PyTorch writes -1 for groups that are no stride).
- A send/recv call without its "Dst Rank"/"Src Rank" is an op with an unknown
  peer (its kernel has no peers); Comms Id is read from the kernel's own args, and
  a kernel that carries one is matched by it alone.
- Peers are looked for on the other files (ranks), never on the kernel's own file.
  Collectives are counted per (group, collective name) in kernel start order
  (ties: file order), whether or not they carry a Comms Id.
- The full list of a group name is taken from any host call or NCCL kernel of any
  trace that writes it uncut.
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
    """"[0, 1]" (or a JSON list) -> ([0, 1], cut); ranks None when absent or
    unreadable, cut True for a list PyTorch cut short ("[0, 1, ...]")."""
    if isinstance(value, list):
        ranks = [exact_int(v) for v in value]
        return (ranks if all(r is not None for r in ranks) else None), False
    if isinstance(value, str):
        if "..." in value:
            return None, True
        return [int(x) for x in re.findall(r"-?[0-9]+", value)], False
    return None, False


class Group:
    """A process group as one event writes it."""

    __slots__ = ("name", "ranks", "cut", "size")

    def __init__(self, args):
        name = args.get("Process Group Name")
        self.name = str(name) if name is not None else None
        self.ranks, self.cut = parse_ranks_list(args.get("Process Group Ranks"))
        self.size = exact_int(args.get("Group size"))
        if self.ranks is None:      # cut short, or not written (PyTorch 2.2)
            start = exact_int(args.get("Global rank start"))
            stride = exact_int(args.get("Global rank stride"))
            if (start is not None and start >= 0 and stride is not None and stride >= 1
                    and self.size is not None and self.size >= 1):
                self.ranks = [start + i * stride for i in range(self.size)]

    def key(self):
        """What tells this group apart: its name, else its ranks; None for neither."""
        if self.name is not None:
            return ("name", self.name)
        if self.ranks:
            return ("ranks", tuple(self.ranks))
        return None


def collective_name(args):
    name = args.get("Collective name")
    return name if isinstance(name, str) and name else None


def p2p_op(args):
    """(kind, peer, pair) of a send/recv's args (peer None when not written); else
    None. Without Dst/Src Rank (PyTorch 2.3), `Rank` is the peer's place in the
    group. pair: where no peer is written and the group has two members, those
    two (the order rules take the other one); else None."""
    name = collective_name(args)
    if name not in (SEND, RECV):
        return None
    peer = exact_int(args.get("Dst Rank" if name == SEND else "Src Rank"))
    members = Group(args).ranks
    if peer is None:
        place = exact_int(args.get("Rank"))
        if place is not None and members and 0 <= place < len(members):
            peer = members[place]
    pair = tuple(members) if peer is None and members and len(members) == 2 else None
    return (name, peer, pair)


def apply_order_rules(traces):
    """The guide's order rules: a send/recv whose peer no trace names takes the
    other member of its group of two; in a world of two ranks (both traces
    given, their world_size 2 where written and written at least once) every
    unnamed peer is the other rank, a point-to-point kernel naming nothing is
    one op with it of unknown direction, and a collective of no known group is
    both ranks'. Returns how many kernels it completed."""
    sizes = [t.world_size for t in traces]
    two = (len(traces) == 2 and all(w in (None, 2) for w in sizes) and 2 in sizes)
    fixed = 0
    for i, t in enumerate(traces):
        me = t.global_rank
        other_rank = traces[1 - i].global_rank if two else None
        for a in t.activities:
            if not a.is_comm:
                continue
            if a.p2p:
                if not a.ops:
                    if two:
                        a.ops = [(UNKNOWN_KIND, other_rank, None)]
                        fixed += 1
                    continue
                if all(peer is not None for _, peer, _ in a.ops):
                    continue
                new = []
                for kind, peer, pair in a.ops:
                    if peer is None:
                        if pair is not None and me in pair and pair[0] != pair[1]:
                            peer = pair[1] if pair[0] == me else pair[0]
                        elif two:
                            peer = other_rank
                    new.append((kind, peer, pair))
                if all(peer is not None for _, peer, _ in new):
                    a.ops = new
                    fixed += 1
            elif two and (a.group is None or a.group.key() is None):
                if a.coll is None:
                    a.coll = ""
                a.group = Group({"Process Group Ranks": sorted([me, other_rank])})
                fixed += 1
    return fixed


def comms_id(args):
    cid = args.get("Comms Id")
    if isinstance(cid, str):
        text = cid.strip()
        try:
            return int(text, 0) if text else None
        except ValueError:
            return None
    return exact_int(cid)    # a Python int: exact for any 64-bit value


class Activity:
    """One GPU activity of one rank, times in absolute ns."""

    __slots__ = ("start", "end", "name", "is_comm", "step", "order", "args", "corr",
                 "ext", "p2p", "ops", "coll", "group", "comms_id", "peers", "cut",
                 "ender")

    def __init__(self, start, end, name, is_comm, order):
        self.start = start
        self.end = end
        self.name = name
        self.is_comm = is_comm
        self.step = None
        self.order = order      # place in the file, to break start-order ties
        self.args = {}
        self.corr = None
        self.ext = None
        self.p2p = False        # point-to-point (ops) or collective (coll, group)
        self.ops = []           # [(kind, peer global rank or None)] in issue order
        self.coll = None        # collective name
        self.group = None       # its Group
        self.comms_id = None
        self.peers = []         # [(device, Activity)]
        self.cut = start        # the end of the wait part, start of transfer
        self.ender = None       # the peer (global rank) whose start ends the wait


class HostCall:
    """A record_param_comms cpu_op or a nccl:<op> span."""

    __slots__ = ("start", "end", "name", "args", "ext", "order")

    def __init__(self, start, end, name, args, order):
        self.start, self.end, self.name, self.args, self.order = start, end, name, args, order
        self.ext = exact_int(args.get("External id"))


class Trace:
    def __init__(self, path):
        self.path = path
        self.rank_in_file = None
        self.world_size = None  # distributedInfo.world_size where written
        self.activities = []
        self.device = None
        self.global_rank = None
        self.without_launch = 0
        self.launches = {}      # correlation -> (start ns, tid)
        self.calls = {}         # tid -> [HostCall] in start order
        self.partial_step = None  # the step it began inside (before its first span)
        self.gpu = None         # the CUDA device of its first kernel (args.device)
        self.rank_source = None


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
            size = exact_int(info.get("world_size"))
            trace.world_size = size if size else None
    elif isinstance(data, list):
        events, base = data, 0
    else:
        raise TraceError(f"{path}: not a Chrome trace")
    if not isinstance(events, list):
        raise TraceError(f"{path}: traceEvents is not a list")

    spans = []          # (start ns, end ns, N)
    for order, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        name = e.get("name")
        name = name if isinstance(name, str) else ""
        is_call = ((cat == "cpu_op" and name == "record_param_comms")
                   or (cat in CALL_CATS and name.startswith("nccl:")))
        if (cat not in GPU_CATS and cat not in LAUNCH_CATS and cat != "user_annotation"
                and not is_call):
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
            a.corr = corr
            if trace.gpu is None:
                trace.gpu = exact_int(args.get("device"))
            if is_comm:
                a.args = args
                a.ext = exact_int(args.get("External id"))
            trace.activities.append(a)
        elif cat in LAUNCH_CATS:
            if corr is not None and any(w in name for w in LAUNCH_WORDS):
                trace.launches.setdefault(corr, (start, e.get("tid")))
        elif is_call:
            trace.calls.setdefault(e.get("tid"), []).append(
                HostCall(start, end, name, args, order))
        else:
            m = STEP_NAME.fullmatch(name)
            if m:
                spans.append((start, end, int(m.group(1))))
    for calls in trace.calls.values():
        calls.sort(key=lambda c: (c.start, c.order))

    assign_steps(trace, spans)
    read_operations(trace)
    return trace


def assign_steps(trace, spans):
    """The step of every activity of the trace: the N of the latest-starting
    span (start ns, end ns, N) holding its launch (trace.launches[corr][0]);
    launched before the first span: N-1 of it, a step begun before the trace
    (a profiler started mid-step), never complete. Counts the activities
    without a launch record. Other readers (nsys_reference.py) call it too."""
    spans = sorted(spans)
    starts = [s[0] for s in spans]
    for a in trace.activities:
        if a.corr is None or a.corr not in trace.launches:
            trace.without_launch += 1
            continue
        ts = trace.launches[a.corr][0]
        if spans and ts < spans[0][0]:
            # Launched before the first span: step N-1 of it, begun before the
            # trace (a profiler started mid-step), never complete.
            a.step = spans[0][2] - 1
            trace.partial_step = a.step
            continue
        best = None
        i = bisect.bisect_right(starts, ts)
        for s, e, n in spans[:i]:
            if e >= ts and (best is None or (s, n) > (best[0], best[2])):
                best = (s, e, n)
        if best is not None:
            a.step = best[2]


# ----------------------------------------------------------------- operations

def read_operations(trace):
    """What every communication kernel of the trace does, and with whom as far as
    the trace says: its host calls, else its own args, else its name."""
    comm = [a for a in trace.activities if a.is_comm]
    # NCCL launch starts per thread, for "after the previous NCCL kernel's launch".
    nccl_launches = {}
    for a in comm:
        launch = trace.launches.get(a.corr) if a.corr is not None else None
        if launch is not None:
            nccl_launches.setdefault(launch[1], []).append(launch[0])
    for starts in nccl_launches.values():
        starts.sort()

    for a in comm:
        a.comms_id = comms_id(a.args)
        launch = trace.launches.get(a.corr) if a.corr is not None else None
        calls, holding, window = [], [], []
        if launch is not None:
            t, tid = launch
            calls = trace.calls.get(tid, [])
            holding = [c for c in calls if c.start <= t <= c.end]   # in start order
            starts = nccl_launches.get(tid, [])
            i = bisect.bisect_left(starts, t)
            prev = starts[i - 1] if i > 0 else None
            window = [c for c in calls if (prev is None or c.start > prev) and c.start <= t
                      and p2p_op(c.args) is not None]
        # The collective call: the innermost holding call naming a collective, else
        # the call whose External id the kernel carries (not its correlation).
        coll_call = None
        for c in reversed(holding):
            name = collective_name(c.args)
            if name is not None and name not in NOT_COLLECTIVES:
                coll_call = c
                break
        if coll_call is None and a.ext is not None and a.ext != a.corr:
            for c in calls:
                name = collective_name(c.args)
                if c.ext == a.ext and name is not None and name not in NOT_COLLECTIVES:
                    coll_call = c
                    break
        # The point-to-point calls, a nested duplicate counted once.
        ops = []
        prev_call = None
        for c in window:
            op = p2p_op(c.args)
            if (prev_call is not None and prev_call.start <= c.start and c.end <= prev_call.end
                    and p2p_op(prev_call.args) == op):
                prev_call = c
                continue
            ops.append(op)
            prev_call = c
        own_op = p2p_op(a.args)
        a.p2p = (any(w in a.name for w in P2P_NAME_WORDS)
                 or any(c.name.startswith(("nccl:send", "nccl:recv")) for c in holding)
                 or (coll_call is None and bool(ops))
                 or (coll_call is None and not ops and own_op is not None))
        if a.p2p:
            if ops:
                a.ops = ops
            elif own_op is not None:
                a.ops = [own_op]
            else:
                a.ops = []      # peers unknown
        elif coll_call is not None:
            a.coll = collective_name(coll_call.args)
            a.group = Group(coll_call.args)
        else:
            name = collective_name(a.args)
            if name is not None and name not in NOT_COLLECTIVES:
                a.coll = name
                a.group = Group(a.args)
            else:
                a.coll = None   # a collective of an unknown group
                a.group = None


def resolve_cut_groups(traces):
    """Members of the groups whose ranks list was cut short: the full list of the
    same group name elsewhere, else the ranks using the name when they are as many
    as its Group size."""
    full = {}
    users = {}
    for t in traces:
        events = [c.args for calls in t.calls.values() for c in calls]
        events += [a.args for a in t.activities if a.is_comm]
        for args in events:
            name = args.get("Process Group Name")
            ranks, cut = parse_ranks_list(args.get("Process Group Ranks"))
            if name is not None and ranks and not cut:
                full.setdefault(str(name), ranks)
        for a in t.activities:
            if a.is_comm and not a.p2p and a.coll is not None and a.group is not None \
                    and a.group.name is not None:
                users.setdefault(a.group.name, set()).add(t.global_rank)
    for t in traces:
        for a in t.activities:
            g = a.group if a.is_comm and not a.p2p else None
            if g is None or not g.cut or g.ranks is not None or g.name is None:
                continue
            if g.name in full:
                g.ranks = list(full[g.name])
            elif g.size is not None and len(users.get(g.name, ())) == g.size:
                g.ranks = sorted(users[g.name])


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


def intersect(a, b):
    """a ∩ b; both sorted and disjoint."""
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
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

def comm_rank(trace):
    """The global rank a trace's collectives give (their group's member at their
    `Rank`, on the host call or the kernel); None for none; raises on two."""
    found = set()
    for calls in trace.calls.values():
        for c in calls:
            name = collective_name(c.args)
            if name is None or name in NOT_COLLECTIVES or name in (SEND, RECV):
                continue
            place = exact_int(c.args.get("Rank"))
            members = Group(c.args).ranks
            if place is not None and members and 0 <= place < len(members):
                found.add(members[place])
    if len(found) > 1:
        raise TraceError(f"{trace.path}: its collectives give ranks {sorted(found)}")
    return found.pop() if found else None


def order_traces(traces, ranks_from_files=False):
    """Device order and global ranks: distributedInfo.rank, else the collectives'
    args, else the CUDA device after the traces of the folders before (a folder
    is a machine), else the first free rank in path order; each trace's
    rank_source says which. Two traces of one rank are an error."""
    if ranks_from_files:
        missing = [t.path for t in traces if t.rank_in_file is None]
        if missing:
            raise TraceError(f"{missing[0]}: no distributedInfo.rank")
    folders = sorted({str(Path(t.path).parent) for t in traces})
    before = {}
    count = 0
    for f in folders:
        before[f] = count
        count += sum(1 for t in traces if str(Path(t.path).parent) == f)
    taken = {}
    for t in sorted(traces, key=lambda t: t.path):
        by_args = comm_rank(t)
        if t.rank_in_file is not None:
            if by_args is not None and by_args != t.rank_in_file:
                raise TraceError(f"{t.path}: distributedInfo {t.rank_in_file}, args {by_args}")
            t.global_rank, t.rank_source = t.rank_in_file, "distributed_info"
        elif by_args is not None:
            t.global_rank, t.rank_source = by_args, "communication"
    for level in ("distributed_info", "communication"):
        for t in sorted(traces, key=lambda t: t.path):
            if t.rank_source != level:
                continue
            if t.global_rank in taken:
                raise TraceError(f"{taken[t.global_rank]} and {t.path}: both rank {t.global_rank}")
            taken[t.global_rank] = t.path
    for t in sorted(traces, key=lambda t: t.path):
        if t.rank_source is None and t.gpu is not None:
            r = before[str(Path(t.path).parent)] + t.gpu
            if r not in taken:
                t.global_rank, t.rank_source = r, "device"
                taken[r] = t.path
    free = 0
    for t in sorted(traces, key=lambda t: t.path):
        if t.rank_source is None:
            while free in taken:
                free += 1
            t.global_rank, t.rank_source = free, "order"
            taken[free] = t.path
    ordered = sorted(traces, key=lambda t: (t.global_rank, t.path))
    for device, t in enumerate(ordered):
        t.device = device
    return ordered


# ----------------------------------------------------------------- peers

def match_peers(traces):
    """Fills every communication kernel's peers (other ranks' kernels), its cut
    (end of its wait) and the rank whose start ends its wait."""
    device_of_rank = {}
    for t in traces:
        device_of_rank.setdefault(t.global_rank, t.device)
    rank_of_device = {t.device: t.global_rank for t in traces}
    comm = {t.device: sorted((a for a in t.activities if a.is_comm),
                             key=lambda a: (a.start, a.order)) for t in traces}
    by_id = {}
    collectives = {}    # (device, group key, name) -> kernels in start order
    ops = {}            # (device, kind, src, dst, k) -> kernel
    coll_place = {}     # id(kernel) -> its index among its (group, name)
    op_keys = {}        # id(kernel) -> [(kind, src, dst, k) or None] per op
    for t in traces:
        me = t.global_rank
        counts = {}
        for a in comm[t.device]:
            if a.comms_id is not None:
                by_id.setdefault(a.comms_id, []).append((t.device, a))
            if a.p2p:
                keys = []
                for kind, peer, _ in a.ops:
                    if peer is None:
                        keys.append(None)
                        continue
                    # Counted within the step (the guide: a mid-step start
                    # shifts that step's counts only).
                    src, dst = (me, peer) if kind == SEND else (peer, me)
                    if kind == UNKNOWN_KIND:
                        src, dst = min(me, peer), max(me, peer)
                    k = counts.get((kind, src, dst, a.step), 0)
                    counts[(kind, src, dst, a.step)] = k + 1
                    ops[(t.device, kind, src, dst, (a.step, k))] = a
                    keys.append((kind, src, dst, (a.step, k)))
                op_keys[id(a)] = keys
            elif a.coll is not None and a.group is not None and a.group.key() is not None:
                lst = collectives.setdefault((t.device, a.group.key(), a.coll, a.step), [])
                coll_place[id(a)] = len(lst)
                lst.append(a)

    for t in traces:
        me = t.global_rank
        for a in comm[t.device]:
            peers = []
            if a.comms_id is not None:
                peers = [(d, b) for d, b in by_id[a.comms_id] if d != t.device]
            elif a.p2p:
                keys = op_keys.get(id(a), [])
                found = []
                for key in keys:
                    if key is None:
                        found = None
                        break
                    kind, src, dst, k = key
                    other = dst if kind == SEND else src
                    if kind == UNKNOWN_KIND:
                        other = dst if src == me else src
                    d = device_of_rank.get(other)
                    match = (UNKNOWN_KIND if kind == UNKNOWN_KIND
                             else RECV if kind == SEND else SEND)
                    b = ops.get((d, match, src, dst, k))
                    if d is None or d == t.device or b is None:
                        found = None
                        break
                    found.append((d, b))
                if found:
                    seen = set()
                    for d, b in found:
                        if id(b) not in seen:
                            seen.add(id(b))
                            peers.append((d, b))
            elif id(a) in coll_place:
                k = coll_place[id(a)]
                key = a.group.key()
                members = a.group.ranks
                if members:
                    for g in sorted(set(members)):
                        if g == me:
                            continue
                        d = device_of_rank.get(g)
                        lst = (collectives.get((d, key, a.coll, a.step), [])
                               if d is not None else [])
                        if d is None or d == t.device or k >= len(lst):
                            peers = []
                            break
                        peers.append((d, lst[k]))
            a.peers = peers
            if peers:
                latest = max(b.start for _, b in peers)
                a.cut = min(a.end, max(a.start, latest))
                a.ender = min(rank_of_device[d] for d, b in peers if b.start == latest)
            else:
                a.cut = a.start
                a.ender = None


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
    partial = {t.partial_step for t in traces if t.partial_step is not None}
    steps = sorted(firsts)
    for i, n in enumerate(steps):
        s = min(firsts[n].values())
        if prev_end is not None:
            s = max(s, prev_end)
        e = max(max(lasts[n].values()), s)
        if n in partial and i + 1 < len(steps):
            # A step begun before the trace ends where the next one's begin.
            e = max(s, min(e, min(firsts[steps[i + 1]].values())))
        windows.append((n, len(firsts[n]) == len(traces) and n not in partial, s, e))
        prev_end = e
    return windows, True


def blamed_pieces(comm, wait):
    """[(s, e, peer)]: the wait left after precedence (sorted disjoint pieces
    `wait`), each piece on the peer it is blamed on. At each instant, among the
    kernels whose wait part [start, cut) holds it, the one whose wait ends latest
    (ties: the lowest ender) names its ender."""
    parts = sorted((a.start, a.cut, a.ender) for a in comm if a.cut > a.start)
    bounds = sorted({x for s, e, _ in parts for x in (s, e)})
    out = []
    active = []         # (cut, ender) of the parts holding the current segment
    i = j = 0
    for lo, hi in zip(bounds, bounds[1:]):
        active = [(c, g) for c, g in active if c > lo]
        while i < len(parts) and parts[i][0] <= lo:
            if parts[i][1] > lo:
                active.append((parts[i][1], parts[i][2]))
            i += 1
        if not active:
            continue
        latest = max(c for c, _ in active)
        peer = min(g for c, g in active if c == latest)
        while j < len(wait) and wait[j][1] <= lo:
            j += 1
        k = j
        pieces = []
        while k < len(wait) and wait[k][0] < hi:
            pieces.append(wait[k])
            k += 1
        for s, e in intersect([(lo, hi)], pieces):
            if out and out[-1][1] == s and out[-1][2] == peer:
                out[-1] = (out[-1][0], e, peer)
            else:
                out.append((s, e, peer))
    return out


def rank_figures(trace, windows):
    compute = union((a.start, a.end) for a in trace.activities if not a.is_comm)
    comm = [a for a in trace.activities if a.is_comm]
    transfer = subtract(union((a.cut, a.end) for a in comm), compute)
    wait = subtract(subtract(union((a.start, a.cut) for a in comm), compute), transfer)
    # Time of kernels without peers beyond compute: where it falls, the split is unknown.
    unknown = subtract(union((a.start, a.end) for a in comm if not a.peers), compute)
    blamed = blamed_pieces(comm, wait)
    steps = []
    totals = dict.fromkeys(FIGURE_KEYS, 0)
    split_known = True
    blamed_total = {}
    for n, complete, s, e in windows:
        c = length_in(compute, s, e)
        x = length_in(transfer, s, e)
        w = length_in(wait, s, e)
        step_blame = {}
        for bs, be, peer in blamed:
            if be <= s or bs >= e:
                continue
            step_blame[peer] = step_blame.get(peer, 0) + min(be, e) - max(bs, s)
        known = length_in(unknown, s, e) == 0
        row = {"step": n, "complete": complete, "start_ns": s, "end_ns": e,
               "window_ns": e - s, "compute_ns": c,
               "transfer_ns": x if known else None, "wait_ns": w if known else None,
               "idle_ns": (e - s) - c - x - w,
               "most_waited_on": top_of(step_blame) if known else None}
        steps.append(row)
        if complete:
            totals["window_ns"] += e - s
            totals["compute_ns"] += c
            totals["transfer_ns"] += x
            totals["wait_ns"] += w
            totals["idle_ns"] += row["idle_ns"]
            split_known = split_known and known
            for g, v in step_blame.items():
                blamed_total[g] = blamed_total.get(g, 0) + v
    if not split_known:
        for key in SPLIT_KEYS:
            totals[key] = None
    # Over the complete steps: the peer blamed longest (unknown with the split).
    totals["most_waited_on"] = top_of(blamed_total) if split_known else None
    return totals, steps


def top_of(blamed):
    """The rank blamed longest (ties: the lowest); None for none."""
    blamed = {g: v for g, v in blamed.items() if v > 0}
    if not blamed:
        return None
    top = max(blamed.values())
    return min(g for g, v in blamed.items() if v == top)


# ----------------------------------------------------------------- the view

def ratio(num, den):
    return num / den if den else 0.0


def kernel_view(paths, ranks_from_files=False):
    """The `kernel_view` object of summary.json for the traces at `paths`."""
    traces = order_traces([read_trace(p) for p in paths], ranks_from_files)
    find_peers(traces)
    return figures(traces)


def find_peers(traces):
    """Groups cut short, the order rules, then every communication kernel's
    peers, on traces already placed (global_rank, device, in device order).
    Returns how many kernels the order rules completed."""
    resolve_cut_groups(traces)
    fixed = apply_order_rules(traces)
    match_peers(traces)
    return fixed


def figures(traces):
    """The `kernel_view` object of traces whose peers are found (find_peers)."""
    windows, from_spans = step_windows(traces)
    ranks = []
    sums = dict.fromkeys(FIGURE_KEYS, 0)
    for t in traces:
        totals, steps = rank_figures(t, windows)
        ranks.append({"device": t.device, "global_rank": t.global_rank,
                      "rank_source": t.rank_source, "path": t.path,
                      **totals, "steps": steps})
        for key in sums:
            if sums[key] is None or totals[key] is None:
                sums[key] = None
            else:
                sums[key] += totals[key]
    comm = [a for t in traces for a in t.activities if a.is_comm]
    window = sums["window_ns"]
    known = sums["wait_ns"] is not None
    return {
        "ranks": ranks,
        "steps": [{"step": n, "complete": c, "start_ns": s, "end_ns": e}
                  for n, c, s, e in windows],
        **sums,
        "bubble_ratio": ratio(window - sums["compute_ns"], window),
        "idle_share": ratio(sums["idle_ns"], window),
        "wait_share": ratio(sums["wait_ns"], window) if known else None,
        "transfer_share": ratio(sums["transfer_ns"], window) if known else None,
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
