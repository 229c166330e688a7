#!/usr/bin/env python3
"""Independent reference reader of Nsight Systems SQLite exports for the kernel view.

    nsys_reference.py EXPORT.sqlite|FOLDER... [--step-range REGEX] [--no-clock-fix]

Reads `nsys export --type sqlite` files (schemas 2.x with EXPORT_META_DATA and
3.x with META_DATA_EXPORT) with the standard library's sqlite3, read-only and
immutable (the file is never written), places every GPU process as a rank,
and prints the `kernel_view` object of summary.json as kernel_reference.py
computes it (its analysis is reused: this script builds its Trace and
Activity objects and calls find_peers() and figures()), plus what only
exports have: each rank's process, host and machine, the inputs, and the
clock estimate across machines. Written apart from the engine; standard
library only; written for clarity, not speed.

What it reads, table by table (absent or empty tables have no rows):
- META_DATA_EXPORT (3.x) or EXPORT_META_DATA (2.x): EXPORT_SCHEMA_VERSION.
- TARGET_INFO_SESSION_START_TIME: utcEpochNs, and systemClockNs where the
  column exists (3.x). A stored time t is the absolute ns
  utcEpochNs + t - systemClockNs (3.x: systemClockNs is "the target system
  clock timestamp at start of the capture", the clock the events are
  stamped on; ANALYSIS_DETAILS.startTime equals it in both real 3.25
  exports), utcEpochNs + t where the column is absent (2.x). Python ints
  throughout, never float.
- StringIds(id, value): the names behind demangledName, nameId, textId.
- TARGET_INFO_SYSTEM_ENV(globalVid, name, value): Hostname per VM (a
  process's VM is globalPid >> 48 << 48); DeviceEnvironment, the CLI's
  environment (NUL-separated in 2.x, ';'-separated in 3.x), where
  META_DATA_CAPTURE holds no process environment.
- META_DATA_CAPTURE(name, value): PROCESS_<n>:ENVIRONMENT_VARIABLE rows,
  KEY="VALUE", the launched program's environment.
- CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId,
  globalPid, demangledName), _MEMCPY and _MEMSET (the same less the name):
  the GPU activities; a kernel whose name starts with "nccl" is a
  communication kernel, every other activity compute.
- CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid,
  correlationId, nameId): an activity's launch is the row with its process
  (globalTid >> 24 == globalPid >> 24: correlation ids are per process and
  repeat across the processes of one report) and correlationId; of several
  (2.x writes a CUDA backtrace row, eventClass 67, beside the runtime row),
  the runtime/driver one (eventClass 0 or 1), earliest start first.
- NVTX_EVENTS (start, end, eventType, text, textId, globalTid, domainId,
  binaryData where the column exists): ranges are eventType 59 (push/pop)
  and 60 (start/end) with an end; the name is text, else StringIds[textId];
  eventType 75 names a domain (text) for its domainId.
- NVTX_PAYLOAD_SCHEMAS / NVTX_PAYLOAD_SCHEMA_ENTRIES: the layout of NCCL's
  payloads (domainId, schemaId, payloadSize; entries idx, type, name,
  offset; a NULL offset is 0 for the first entry).
- TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid), else TARGET_INFO_GPU(id,
  cuDevice): a process's CUDA device ordinal; else its deviceId.

Placement (one rank per GPU process, a process being globalPid >> 24 of the
activities): the environment's RANK, PMI_RANK or OMPI_COMM_WORLD_RANK where
the report holds exactly one GPU process (a report of a process tree holds
its launcher's environment, which names no worker); else the `Rank` of the
NCCL communicators with the most ranks (from the inputs' communicator
payloads: ncclCommInitRank*, ncclCommSplit, ... with `No. of ranks` and
`Rank`; they must have at least as many ranks as there are GPU processes,
and give the process one Rank); else the CUDA device after the GPU processes of the machines before;
else the first rank no process claims. Machines are the hosts, ordered by
name with numbers compared as numbers. Two processes claiming one rank, or an
environment and a payload that disagree: an error (exit 2).

NCCL operations (the kernel view's rule 1, "its host calls"): NCCL's own
NVTX ranges (domain "NCCL", else any non-default domain; names starting
with "nccl") on the thread of the kernel's launch: ncclSend/ncclRecv are the
point-to-point calls (the calls since the previous NCCL launch on that
thread, up to the launch: a grouped SendRecv kernel is launched in
ncclGroupEnd after them), ncclAllReduce & co. the collectives (the innermost
call holding the launch). Their payloads (binaryData) give the communicator
(`NCCL communicator ID`, the same on every member) and the peer (`Peer
rank`, its rank in that communicator). A communicator rank is a global rank
through the membership payloads (`Rank` of every member process); else, for
a communicator exactly two input processes use, each naming one peer value
and the two values differing (PyTorch's two-rank point-to-point
communicators), the other process. A collective's group is its communicator
with the members' global ranks when every member is known. Without payloads
the peers are unknown (the kernel view's order rules still apply: a world of
two ranks where its size is known, from WORLD_SIZE, PMI_SIZE,
OMPI_COMM_WORLD_SIZE or the largest communicator's `No. of ranks`).

Steps: NVTX ranges of the process (any thread) whose name matches the step
expression entirely, the first group (or the group named `step`) being N:
by default torch's `ProfilerStep#N` as its profiler and emit_nvtx write it
(emit_nvtx appends ", op_id = ..." or ", seq = ..."); `--step-range REGEX`
for others (Megatron-LM writes no numbered iteration range: its
--nvtx-ranges ranges are `<module>.<function>.warmup|steady|cooldown|misc`).
No step range anywhere: one window (step_spans false).

Clocks: ranks of one machine share a clock. Across machines the offset of
machine b against machine a is the median (the lower middle value of an even
count) of end_b - end_a over their matched kernels, each matched pair once;
machine 0 (the first host) is the reference and a machine reached through
another adds up along the pairs with the most samples (ties: the lower
machine); the noise is twice the 95th percentile (nearest rank) of
|end_b - end_a| between matched kernels of one machine, at least 2000 ns; the
offsets are applied (every time of a machine minus its offset, before the
windows) when one is beyond the noise, unless --no-clock-fix.

Two runs: after the clocks, each rank's span is its first activity's start to
its last activity's end; when the spans, in time order, leave a gap of 60 s or
more that no rank's span crosses, the exports are of two runs and refused
(TwoRunsError, exit 2).
"""

import argparse
import json
import math
import os
import re
import sqlite3
import struct
import sys
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_reference as kr  # noqa: E402

DEFAULT_STEP_RANGE = r"ProfilerStep#([0-9]+)(?:, .*)?"
RANGE_TYPES = (59, 60)        # NvtxPushPopRange, NvtxStartEndRange
DOMAIN_CREATE = 75            # NvtxDomainCreate: text names domainId
RUNTIME_CLASSES = (0, 1)      # CUDA runtime, CUDA driver (67: backtrace)
ENV_RANK_KEYS = ("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK")
ENV_SIZE_KEYS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
ACTIVITY_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                   "CUPTI_ACTIVITY_KIND_MEMSET")
P2P_CALLS = {"ncclSend": kr.SEND, "ncclRecv": kr.RECV}
COLLECTIVE_CALLS = {"ncclAllReduce": "allreduce", "ncclAllGather": "allgather",
                    "ncclReduceScatter": "reduce_scatter", "ncclBroadcast": "broadcast",
                    "ncclBcast": "broadcast", "ncclReduce": "reduce",
                    "ncclAlltoAll": "all_to_all", "ncclGather": "gather",
                    "ncclScatter": "scatter"}
# NCCL's static payload schema ids (src/include/nvtx.h: NVTX_SID_*, offset by
# NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START), for a payload stored
# without the export's header.
SCHEMA_STATIC_START = 1 << 24
NCCL_SCHEMA_OF_CALL = {
    "ncclCommInitRank": 0, "ncclCommInitAll": 1, "ncclCommDestroy": 2, "ncclCommAbort": 3,
    "ncclAllGather": 4, "ncclAllReduce": 5, "ncclBroadcast": 6, "ncclReduceScatter": 7,
    "ncclReduce": 8, "ncclSend": 9, "ncclRecv": 10, "ncclCommInitRankConfig": 11,
    "ncclCommInitRankScalable": 12, "ncclCommSplit": 13, "ncclCommFinalize": 14,
    "ncclCommShrink": 15, "ncclAlltoAll": 16, "ncclGather": 17, "ncclScatter": 18,
    "ncclCommRevoke": 19, "ncclCommGrow": 20,
}
PAYLOAD_HEADER = struct.Struct("<QQQQ")   # domainId, schemaId, payloadSize, size with header
# NVTX payload entry types (nvToolsExtPayload.h): size in bytes, signed.
ENTRY_TYPES = {1: (1, True), 2: (1, False), 3: (2, True), 4: (2, False), 5: (4, True),
               6: (4, False), 7: (8, True), 8: (8, False), 9: (8, True), 10: (8, False),
               11: (1, True), 12: (1, False), 13: (2, True), 14: (2, False), 15: (4, True),
               16: (4, False), 17: (8, True), 18: (8, False), 22: (8, False), 23: (8, False)}
COMM_FIELD, PEER_FIELD, RANK_FIELD, NRANKS_FIELD = (
    "NCCL communicator ID", "Peer rank", "Rank", "No. of ranks")

CHOICES = """\
- A process's device is the deviceId most of its activities ran on (ties: the
  lowest); a process with activities on several devices is one rank.
- Activities are ordered, for start-order ties, by (start, end, table: kernel,
  memcpy, memset, rowid).
- Of several launch rows of one (process, correlationId): runtime/driver rows
  (eventClass 0 or 1) first, then the earliest start, then the first row.
- An NVTX range with a NULL end is no range; a NCCL call's thread is the
  range's globalTid.
- A payload in binaryData: the 32-byte header (domainId, schemaId,
  payloadSize, size with header; little-endian u64) when the schemaId is one
  of the domain's schemas and the payload fits; else the bare payload when its
  length is the payloadSize of the schema NCCL uses for that call's name.
  Entry types other than the integer ones are not decoded.
- The environment of a report: META_DATA_CAPTURE's PROCESS_<n>:
  ENVIRONMENT_VARIABLE rows, else TARGET_INFO_SYSTEM_ENV's DeviceEnvironment.
- A report without a Hostname names its host by its folder's name.
- `path` of a rank is its export; `pid` its process id.
- A collective call whose payload names no communicator (no payload
  exported) is a call of no known group and carries no collective name:
  the kernel view's order rule for "a collective of no known group" in a
  world of two then applies (kernel_reference.py applies it only to
  kernels whose calls name no collective).
"""


class ExportError(Exception):
    """An input that is no Nsight Systems export this reader can read."""


class TwoRunsError(ExportError):
    """Exports whose ranks fall into two groups in time: two runs."""


SEPARATE_RUNS_GAP_NS = 60 * 10**9


def refuse_two_runs(traces):
    spans = sorted(((min(a.start for a in t.activities), max(a.end for a in t.activities), t)
                    for t in traces if t.activities), key=lambda span: span[:2])
    reach = None
    for first, last, t in spans:
        if reach is not None and first - reach >= SEPARATE_RUNS_GAP_NS:
            raise TwoRunsError(f"the exports hold two runs: {t.path} begins "
                               f"{(first - reach) / 1e9:.1f} s after every rank before it ended")
        reach = last if reach is None else max(reach, last)


def natural_key(text):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"([0-9]+)", text) if p]


def decode(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


# ----------------------------------------------------------------- one export

class Process:
    """A GPU process of one export: one rank."""

    def __init__(self, export, key):
        self.export = export
        self.key = key                  # globalPid >> 24
        self.pid = key & 0xFFFFFF
        self.rows = []                  # (start, end, name, is_comm, corr, device, table, rowid)
        self.launches = {}              # corr -> (abs start ns, globalTid)
        self.calls = {}                 # globalTid -> [NcclCall]
        self.spans = []                 # (abs start, abs end, N)
        self.members = []               # (comm, nranks, rank) from its membership payloads
        self.device = None
        self.cuda_device = None
        self.host = None
        self.env_rank = None
        self.world_size = None
        self.global_rank = None
        self.rank_source = None


class NcclCall:
    def __init__(self, start, end, name, payload, order):
        self.start, self.end, self.name, self.payload, self.order = start, end, name, payload, order


class Export:
    def __init__(self, path):
        self.path = path
        self.schema = None
        self.utc = None
        self.system_clock = None
        self.hosts = {}                 # globalVid -> host name
        self.env = {}
        self.processes = {}             # key -> Process


def connect(path):
    with open(path, "rb") as f:
        head = f.read(16)
    if head != b"SQLite format 3\x00":
        if str(path).endswith((".nsys-rep", ".qdrep")):
            raise ExportError(f"{path}: a report, not an export; export it with "
                              f"`nsys export --type sqlite --include-blobs=true {path}`")
        raise ExportError(f"{path}: not an SQLite database")
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro&immutable=1"
    db = sqlite3.connect(uri, uri=True)
    db.text_factory = bytes
    return db


def table_columns(db):
    out = {}
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        name = decode(name)
        out[name] = [decode(r[1]) for r in db.execute(f'PRAGMA table_info("{name}")')]
    return out


def parse_env_pairs(items):
    env = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            continue
        if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
            value = value[1:-1]
        env.setdefault(key, value)
    return env


def split_device_environment(text):
    """DeviceEnvironment: NUL-separated (2.x) or ';'-separated (3.x); a piece
    that is no KEY=... continues the previous value (a ';' inside a value)."""
    if "\x00" in text:
        return [p for p in text.split("\x00") if p]
    items = []
    for piece in text.split(";"):
        if items and not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", piece):
            items[-1] += ";" + piece
        else:
            items.append(piece)
    return items


def env_int(env, keys):
    for key in keys:
        value = env.get(key)
        if value is not None and re.fullmatch(r"\s*[0-9]+\s*", value):
            return int(value)
    return None


def read_schemas(db, tables):
    """(domainId, schemaId) -> (payloadSize, [(name, offset, type)])."""
    schemas = {}
    if "NVTX_PAYLOAD_SCHEMAS" in tables:
        for dom, sid, size in db.execute(
                "SELECT domainId, schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS"):
            if dom is not None and sid is not None:
                schemas.setdefault((dom, sid), [size, {}])
    if "NVTX_PAYLOAD_SCHEMA_ENTRIES" in tables:
        for dom, sid, idx, typ, name, offset in db.execute(
                'SELECT domainId, schemaId, idx, "type", name, "offset" '
                "FROM NVTX_PAYLOAD_SCHEMA_ENTRIES"):
            if (dom, sid) in schemas and idx is not None:
                schemas[(dom, sid)][1].setdefault(idx, (decode(name), offset, typ))
    out = {}
    for key, (size, entries) in schemas.items():
        fields = []
        at = 0
        for idx in sorted(entries):
            name, offset, typ = entries[idx]
            width = ENTRY_TYPES.get(typ, (None, False))[0]
            if offset is None:
                offset = at
                if width:
                    offset = -(-offset // width) * width
            fields.append((name, offset, typ))
            at = offset + (width or 0)
        out[key] = (size, fields)
    return out


def decode_payload(blob, domain, call_name, schemas):
    """{entry name: int} of a NCCL range's binaryData; {} when none or unreadable."""
    if not isinstance(blob, (bytes, bytearray)) or not blob:
        return {}
    layout = payload = None
    if len(blob) >= PAYLOAD_HEADER.size:
        _, sid, size, _ = PAYLOAD_HEADER.unpack_from(blob, 0)
        if (domain, sid) in schemas and PAYLOAD_HEADER.size + size <= len(blob):
            layout = schemas[(domain, sid)]
            payload = blob[PAYLOAD_HEADER.size:PAYLOAD_HEADER.size + size]
    if layout is None and call_name in NCCL_SCHEMA_OF_CALL:
        sid = SCHEMA_STATIC_START + NCCL_SCHEMA_OF_CALL[call_name]
        if (domain, sid) in schemas and schemas[(domain, sid)][0] == len(blob):
            layout, payload = schemas[(domain, sid)], bytes(blob)
    if layout is None:
        return {}
    out = {}
    for name, offset, typ in layout[1]:
        if typ not in ENTRY_TYPES or name is None:
            continue
        width, signed = ENTRY_TYPES[typ]
        if offset + width <= len(payload):
            out[name] = int.from_bytes(payload[offset:offset + width], "little", signed=signed)
    return out


def read_export(path, step_re):
    db = connect(path)
    try:
        return _read_export(db, str(path), step_re)
    except sqlite3.DatabaseError as e:
        raise ExportError(f"{path}: unreadable database ({e})") from None
    finally:
        db.close()


def _read_export(db, path, step_re):
    tables = table_columns(db)
    meta_table = ("META_DATA_EXPORT" if "META_DATA_EXPORT" in tables
                  else "EXPORT_META_DATA" if "EXPORT_META_DATA" in tables else None)
    missing = [t for t in ("StringIds", "TARGET_INFO_SESSION_START_TIME") if t not in tables]
    if meta_table is None:
        missing.append("META_DATA_EXPORT (or EXPORT_META_DATA)")
    if missing:
        raise ExportError(f"{path}: not an Nsight Systems export (lacks {', '.join(missing)})")
    ex = Export(path)
    for name, value in db.execute(f"SELECT name, value FROM {meta_table}"):
        if decode(name) == "EXPORT_SCHEMA_VERSION":
            ex.schema = decode(value)
    session_cols = tables["TARGET_INFO_SESSION_START_TIME"]
    row = db.execute("SELECT utcEpochNs" + (", systemClockNs" if "systemClockNs" in session_cols else "")
                     + " FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    if row is None or not isinstance(row[0], int):
        raise ExportError(f"{path}: TARGET_INFO_SESSION_START_TIME holds no utcEpochNs")
    ex.utc = row[0]
    ex.system_clock = row[1] if len(row) > 1 and isinstance(row[1], int) else 0

    def when(t):
        return ex.utc + t - ex.system_clock

    strings = {i: decode(v) for i, v in db.execute("SELECT id, value FROM StringIds")}

    # Hosts and environment.
    device_env = None
    if "TARGET_INFO_SYSTEM_ENV" in tables:
        for vid, name, value in db.execute("SELECT globalVid, name, value FROM TARGET_INFO_SYSTEM_ENV"):
            name, value = decode(name), decode(value)
            if name == "Hostname" and value:
                ex.hosts.setdefault(vid, value)
            elif name == "DeviceEnvironment" and value and device_env is None:
                device_env = value
    if "META_DATA_CAPTURE" in tables:
        items = [decode(v) for n, v in db.execute("SELECT name, value FROM META_DATA_CAPTURE")
                 if re.fullmatch(r"PROCESS_[0-9]+:ENVIRONMENT_VARIABLE", decode(n) or "") and v]
        ex.env = parse_env_pairs(items)
    if not ex.env and device_env:
        ex.env = parse_env_pairs(split_device_environment(device_env))

    # GPU activities, by process.
    for ti, table in enumerate(ACTIVITY_TABLES):
        if table not in tables:
            continue
        cols = tables[table]
        name_col = ("demangledName" if "demangledName" in cols else
                    "shortName" if "shortName" in cols else None)
        query = ("SELECT rowid, start, end, deviceId, correlationId, globalPid"
                 + (f", {name_col}" if name_col else "") + f" FROM {table}")
        for r in db.execute(query):
            rowid, start, end, device, corr, gpid = r[:6]
            if not isinstance(start, int) or not isinstance(end, int) or gpid is None:
                continue
            if name_col:
                name = strings.get(r[6], "")
            else:
                name = "memcpy" if ti == 1 else "memset"
            key = gpid >> 24
            p = ex.processes.get(key)
            if p is None:
                p = ex.processes[key] = Process(ex, key)
            is_comm = ti == 0 and name.startswith("nccl")
            p.rows.append((when(start), when(end), name, is_comm, corr, device, ti, rowid))

    # Launches: the row of the process with the activity's correlation.
    wanted = {(p.key, r[4]) for p in ex.processes.values() for r in p.rows if r[4] is not None}
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        best = {}
        for rowid, start, cls, gtid, corr in db.execute(
                "SELECT rowid, start, eventClass, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            if gtid is None or corr is None or not isinstance(start, int):
                continue
            k = (gtid >> 24, corr)
            if k not in wanted:
                continue
            rank_key = (cls not in RUNTIME_CLASSES, start, rowid)
            if k not in best or rank_key < best[k][0]:
                best[k] = (rank_key, when(start), gtid)
        for (key, corr), (_, t, gtid) in best.items():
            ex.processes[key].launches[corr] = (t, gtid)

    # NVTX: steps, NCCL calls and their payloads.
    if "NVTX_EVENTS" in tables:
        cols = tables["NVTX_EVENTS"]
        schemas = read_schemas(db, tables)
        has_blob = "binaryData" in cols
        domains = {}
        for dom, text in db.execute(
                f"SELECT domainId, text FROM NVTX_EVENTS WHERE eventType = {DOMAIN_CREATE}"):
            if dom is not None and text is not None:
                domains[dom] = decode(text)
        named = [d for d, n in domains.items() if n == "NCCL"]

        def nccl_domain(dom):
            if named:
                return dom in named
            return dom is not None and dom != 0

        query = ("SELECT rowid, start, end, text, textId, globalTid, domainId"
                 + (", binaryData" if has_blob else "")
                 + f" FROM NVTX_EVENTS WHERE eventType IN {RANGE_TYPES} AND end IS NOT NULL")
        for r in db.execute(query):
            rowid, start, end, text, text_id, gtid, dom = r[:7]
            if gtid is None or not isinstance(start, int) or not isinstance(end, int):
                continue
            name = decode(text) if text is not None else strings.get(text_id)
            if name is None:
                continue
            key = gtid >> 24
            m = step_re.fullmatch(name)
            if m:
                n = m.group("step") if "step" in step_re.groupindex else m.group(1)
                if n is not None and n.isdigit():
                    ex.processes.setdefault(key, Process(ex, key)).spans.append(
                        (when(start), when(end), int(n)))
                continue
            if name.startswith("nccl") and nccl_domain(dom):
                payload = decode_payload(r[7] if has_blob else None, dom, name, schemas)
                p = ex.processes.setdefault(key, Process(ex, key))
                p.calls.setdefault(gtid, []).append(NcclCall(when(start), when(end), name, payload, rowid))
                if all(f in payload for f in (COMM_FIELD, NRANKS_FIELD, RANK_FIELD)):
                    p.members.append((payload[COMM_FIELD], payload[NRANKS_FIELD], payload[RANK_FIELD]))

    # Only processes with GPU activities are ranks.
    ex.processes = {k: p for k, p in ex.processes.items() if p.rows}

    # Devices, CUDA ordinals, hosts.
    cuda_of = {}
    if "TARGET_INFO_CUDA_DEVICE" in tables and {"gpuId", "cudaId", "pid"} <= set(tables["TARGET_INFO_CUDA_DEVICE"]):
        for gpu, cuda, pid in db.execute("SELECT gpuId, cudaId, pid FROM TARGET_INFO_CUDA_DEVICE"):
            cuda_of[(pid, gpu)] = cuda
    gpu_cuda = {}
    if "TARGET_INFO_GPU" in tables and "cuDevice" in tables["TARGET_INFO_GPU"]:
        for gpu, cuda in db.execute("SELECT id, cuDevice FROM TARGET_INFO_GPU"):
            gpu_cuda.setdefault(gpu, cuda)
    for p in ex.processes.values():
        counts = {}
        for r in p.rows:
            if r[5] is not None:
                counts[r[5]] = counts.get(r[5], 0) + 1
        if counts:
            top = max(counts.values())
            p.device = min(d for d, c in counts.items() if c == top)
            if (p.pid, p.device) in cuda_of:
                p.cuda_device = cuda_of[(p.pid, p.device)]
            elif not cuda_of and p.device in gpu_cuda:
                p.cuda_device = gpu_cuda[p.device]
            else:
                p.cuda_device = p.device
        vid = (p.key >> 24) << 48
        p.host = ex.hosts.get(vid) or (next(iter(ex.hosts.values())) if len(ex.hosts) == 1 else None)
        if p.host is None:
            p.host = Path(path).resolve().parent.name
    if len(ex.processes) == 1:
        only = next(iter(ex.processes.values()))
        only.env_rank = env_int(ex.env, ENV_RANK_KEYS)
        only.world_size = env_int(ex.env, ENV_SIZE_KEYS)
    return ex


# ----------------------------------------------------------------- placement

def place(processes):
    """Global ranks and machines; returns (machines, comm membership)."""
    machines = sorted({p.host for p in processes}, key=natural_key)
    machine_of = {h: i for i, h in enumerate(machines)}
    # Communicators: comm -> nranks, comm -> {comm rank: process}.
    nranks, members = {}, {}
    for p in processes:
        for comm, n, r in p.members:
            nranks.setdefault(comm, n)
            members.setdefault(comm, {}).setdefault(r, p)
    # The world: the communicators of the most ranks, when they are at least
    # as many as the GPU processes given (two data-parallel groups of two are
    # no world of four); a process's rank is its Rank there, when they agree.
    worlds = []
    if nranks:
        top = max(nranks.values())
        if top >= len(processes):
            worlds = [c for c, n in nranks.items() if n == top]
    for p in processes:
        found = {r for c in worlds for r, q in members[c].items() if q is p}
        nccl_rank = found.pop() if len(found) == 1 else None
        if nccl_rank is not None and p.world_size is None:
            p.world_size = nranks[worlds[0]]
        if p.env_rank is not None:
            if nccl_rank is not None and nccl_rank != p.env_rank:
                raise ExportError(f"{p.export.path} (pid {p.pid}): environment rank {p.env_rank}, "
                                  f"NCCL payload rank {nccl_rank}")
            p.global_rank, p.rank_source = p.env_rank, "environment"
        elif nccl_rank is not None:
            p.global_rank, p.rank_source = nccl_rank, "nccl"

    def where(p):
        return f"{p.export.path} (pid {p.pid})"

    ordered = sorted(processes, key=lambda p: (machine_of[p.host], p.export.path, p.pid))
    taken = {}
    for level in ("environment", "nccl"):
        for p in ordered:
            if p.rank_source == level:
                if p.global_rank in taken:
                    raise ExportError(f"{taken[p.global_rank]} and {where(p)}: both rank {p.global_rank}")
                taken[p.global_rank] = where(p)
    before = {}
    count = 0
    for h in machines:
        before[h] = count
        count += sum(1 for p in processes if p.host == h)
    for p in ordered:
        if p.rank_source is None and p.cuda_device is not None:
            r = before[p.host] + p.cuda_device
            if r not in taken:
                p.global_rank, p.rank_source = r, "device"
                taken[r] = where(p)
    free = 0
    for p in ordered:
        if p.rank_source is None:
            while free in taken:
                free += 1
            p.global_rank, p.rank_source = free, "order"
            taken[free] = where(p)
    return machines, nranks, members


# ----------------------------------------------------------------- traces

def peer_tables(processes, nranks, members):
    """comm -> {comm rank: global rank} where known, and the two-process rule:
    (comm, process key) -> the other process's global rank."""
    comm_rank = {c: {r: p.global_rank for r, p in m.items()} for c, m in members.items()}
    users = {}      # comm -> {process: set of peer values named}
    for p in processes:
        for calls in p.calls.values():
            for c in calls:
                if c.name in P2P_CALLS and COMM_FIELD in c.payload and PEER_FIELD in c.payload:
                    users.setdefault(c.payload[COMM_FIELD], {}).setdefault(p, set()).add(
                        c.payload[PEER_FIELD])
    pair_rule = {}
    for comm, used in users.items():
        if len(used) != 2 or nranks.get(comm, 2) != 2:
            continue
        (a, va), (b, vb) = sorted(used.items(), key=lambda x: x[0].global_rank)
        if len(va) == 1 and len(vb) == 1 and va != vb:
            pair_rule[(comm, id(a))] = b.global_rank
            pair_rule[(comm, id(b))] = a.global_rank
    return comm_rank, pair_rule


def call_args(p, c, comm_rank, nranks, pair_rule):
    """kernel_reference's host-call args (PyTorch's record_param_comms
    vocabulary) for one NCCL call of process p."""
    comm = c.payload.get(COMM_FIELD)
    args = {}
    if c.name in P2P_CALLS:
        kind = P2P_CALLS[c.name]
        args["Collective name"] = kind
        peer = None
        value = c.payload.get(PEER_FIELD)
        if comm is not None and value is not None:
            peer = comm_rank.get(comm, {}).get(value)
            if peer is None:
                peer = pair_rule.get((comm, id(p)))
        if peer is not None:
            args["Dst Rank" if kind == kr.SEND else "Src Rank"] = peer
    elif comm is not None:
        args["Collective name"] = COLLECTIVE_CALLS[c.name]
    if comm is not None:
        args["Process Group Name"] = f"nccl:{comm:016x}"
        known = comm_rank.get(comm, {})
        n = nranks.get(comm)
        if n is not None and len(known) == n and set(known) == set(range(n)):
            args["Process Group Ranks"] = [known[r] for r in range(n)]
    return args


def build_trace(p, comm_rank, nranks, pair_rule):
    t = kr.Trace(p.export.path)
    t.global_rank, t.rank_source = p.global_rank, p.rank_source
    t.world_size = p.world_size
    t.gpu = p.cuda_device
    rows = sorted(p.rows, key=lambda r: (r[0], r[1], r[6], r[7]))
    for order, (start, end, name, is_comm, corr, _, _, _) in enumerate(rows):
        a = kr.Activity(start, end, name, is_comm, order)
        a.corr = corr
        t.activities.append(a)
    t.launches = dict(p.launches)
    order = 0
    for gtid, calls in sorted(p.calls.items()):
        hcs = []
        for c in sorted(calls, key=lambda c: (c.start, c.order)):
            if c.name not in P2P_CALLS and c.name not in COLLECTIVE_CALLS:
                continue
            title = ("nccl:" + P2P_CALLS[c.name]) if c.name in P2P_CALLS else \
                ("nccl:" + COLLECTIVE_CALLS[c.name])
            hcs.append(kr.HostCall(c.start, c.end, title, call_args(p, c, comm_rank, nranks, pair_rule),
                                   order))
            order += 1
        if hcs:
            t.calls[gtid] = hcs
    kr.assign_steps(t, p.spans)
    kr.read_operations(t)
    return t


# ----------------------------------------------------------------- clocks

def lower_median(values):
    values = sorted(values)
    return values[(len(values) - 1) // 2]


def estimate_clock(traces, machine_of_device, n_machines):
    """Offsets of the machines against machine 0 from matched kernels' ends."""
    samples, intra, seen = {}, [], set()
    for t in traces:
        for a in t.activities:
            if not a.is_comm:
                continue
            for d, b in a.peers:
                pair = (min(id(a), id(b)), max(id(a), id(b)))
                if pair in seen:
                    continue
                seen.add(pair)
                ma, mb = machine_of_device[t.device], machine_of_device[d]
                if ma == mb:
                    intra.append(abs(b.end - a.end))
                elif ma < mb:
                    samples.setdefault((ma, mb), []).append(b.end - a.end)
                else:
                    samples.setdefault((mb, ma), []).append(a.end - b.end)
    noise = 2000
    if intra:
        intra.sort()
        p95 = intra[max(0, math.ceil(0.95 * len(intra)) - 1)]
        noise = max(noise, 2 * p95)
    # Directed medians: med[(a, b)] is the offset of b against a.
    med = {}
    for (i, j), s in samples.items():
        med[(i, j)] = (lower_median(s), len(s))
        med[(j, i)] = (lower_median([-x for x in s]), len(s))
    offsets = {0: 0}
    pairs = {0: 0}
    while True:
        best = None
        for (a, b), (off, n) in med.items():
            if a in offsets and b not in offsets:
                cand = (-n, b, a)
                if best is None or cand < best[0]:
                    best = (cand, a, b, off, n)
        if best is None:
            break
        _, a, b, off, n = best
        offsets[b] = offsets[a] + off
        pairs[b] = pairs[a] + n   # the matched pairs along its path from machine 0
    machines = [{"machine": m, "offset_ns": offsets.get(m, 0), "pairs": pairs.get(m, 0)}
                for m in range(n_machines)]
    applied = any(abs(x["offset_ns"]) > noise for x in machines)
    return {"applied": applied, "noise_ns": noise, "machines": machines}


def shift(traces, machine_of_device, offsets):
    for t in traces:
        off = offsets[machine_of_device[t.device]]
        if off:
            for a in t.activities:
                a.start -= off
                a.end -= off


# ----------------------------------------------------------------- the view

def collect_paths(inputs):
    paths = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            paths.extend(sorted((str(x) for x in p.rglob("*.sqlite")), key=natural_key))
        else:
            paths.append(str(p))
    if not paths:
        raise ExportError("no export among the inputs")
    return paths


def nsys_view(inputs, step_range=None, clock_fix=True):
    """The kernel view of the exports (files, or folders searched for *.sqlite)."""
    try:
        step_re = re.compile(step_range or DEFAULT_STEP_RANGE)
    except re.error as e:
        raise ExportError(f"--step-range: {e}") from None
    if step_range and step_re.groups < 1:
        raise ExportError("--step-range needs a group for the step number")
    exports = [read_export(path, step_re) for path in collect_paths(inputs)]
    processes = [p for ex in exports for p in ex.processes.values()]
    if not processes:
        raise ExportError("no GPU activity in the exports")
    machines, nranks, members = place(processes)
    comm_rank, pair_rule = peer_tables(processes, nranks, members)
    placed = sorted(processes, key=lambda p: (p.global_rank, p.export.path, p.pid))
    traces = []
    for device, p in enumerate(placed):
        t = build_trace(p, comm_rank, nranks, pair_rule)
        t.device = device
        traces.append(t)
    by_order = kr.find_peers(traces)
    machine_of = {h: i for i, h in enumerate(machines)}
    machine_of_device = {t.device: machine_of[p.host] for t, p in zip(traces, placed)}
    clock = estimate_clock(traces, machine_of_device, len(machines))
    if clock["applied"] and clock_fix:
        shift(traces, machine_of_device, {m["machine"]: m["offset_ns"] for m in clock["machines"]})
        kr.match_peers(traces)
    else:
        clock["applied"] = False
    refuse_two_runs(traces)
    view = kr.figures(traces)
    for row, p in zip(view["ranks"], placed):
        row["pid"] = p.pid
        row["host"] = p.host
        row["machine"] = machine_of[p.host]
    for m in clock["machines"]:
        m["host"] = machines[m["machine"]]
    view["clock"] = clock
    view["comm_peers_by_order"] = by_order
    view["inputs"] = [{"path": ex.path, "schema_version": ex.schema,
                       "hosts": sorted(set(ex.hosts.values()), key=natural_key),
                       "gpu_processes": len(ex.processes)} for ex in exports]
    return view


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Where the contract is silent:\n" + CHOICES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exports", nargs="+", metavar="EXPORT",
                    help="nsys SQLite exports, or folders holding them (*.sqlite)")
    ap.add_argument("--step-range", metavar="REGEX",
                    help="NVTX range names that are steps (whole name; first group, or the "
                         f"group named step, is N); default {DEFAULT_STEP_RANGE!r}")
    ap.add_argument("--no-clock-fix", action="store_true",
                    help="estimate the machines' clock offsets without applying them")
    a = ap.parse_args(argv)
    try:
        view = nsys_view(a.exports, a.step_range, not a.no_clock_fix)
    except (OSError, ExportError, kr.TraceError) as e:
        print(f"nsys_reference: {e}", file=sys.stderr)
        return 2
    json.dump(view, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
