#!/usr/bin/env python3
"""Nsight Systems SQLite exports of a multi-rank pipeline run, with its truth.

    nsys_run.py -o DIR --case NAME [--pp N --dp N --micro-batches N --steps N]
                [--gpus-per-machine N] [--skew NS] [--seed N] [--list]

Runs field_traces.py's physical model of a Megatron-style 1F1B pipeline (its
event model is reused: per-rank host programs and GPU streams, a kernel
starting when its launch has returned, its stream is free and what it
depends on has ended, matched NCCL kernels ending together) and writes what
`nsys profile --trace=cuda,nvtx` then `nsys export --type sqlite
--include-blobs=true` would leave of it, in the table shapes of the real
exports of ../shared/reference/nsys (schema 3.25.0: META_DATA_EXPORT,
META_DATA_CAPTURE, TARGET_INFO_SESSION_START_TIME with systemClockNs,
NVTX_EVENTS.binaryData and the payload schema tables; schema 2.9.1:
EXPORT_META_DATA, the environment in TARGET_INFO_SYSTEM_ENV's
DeviceEnvironment, NUL-separated, no payloads). Only the tables and columns
a reader needs are written, plus the metadata tables; in 3.25 a table exists
only when it has rows (2.9.1 creates the tables it writes whether or not
they have rows, as nsys 2022 did).

What each report holds, read from the real exports and from NCCL's source
(src/include/nvtx.h, nvtx_payload_schemas.h, collectives.cc, group.cc):
- times: stored t, the session's utcEpochNs and (3.25) systemClockNs, such
  that the absolute time is utcEpochNs + t - systemClockNs (2.9.1:
  utcEpochNs + t); every report has its own session start, and a skewed
  host's wall clock moves its utcEpochNs, never the true times.
- processes: globalPid = (1 << 48) | pid << 24, globalTid = globalPid | tid;
  correlation ids count per process from the same base, so they repeat
  across the processes of one report; backward kernels are launched from a
  second thread (autograd's), forward, optimizer and NCCL calls from the
  main one.
- NCCL: every call is a push/pop range in NCCL's domain (id 1) named by a
  registered string (textId): Megatron's batch_isend_irecv is
  ncclCommCount, ncclGroupStart, ncclSend/ncclRecv per op (payload:
  communicator id, bytes, peer's rank in the pipeline group's
  communicator), ncclGroupEnd holding the SendRecv kernel's cuLaunchKernelEx
  (driver, eventClass 1) after cudaEventRecord/cudaStreamWaitEvent; a
  separate isend/irecv is one ncclSend/ncclRecv holding its launch on
  PyTorch's two-rank communicator of the pair (comm rank 0: the lower global
  rank); a collective is ncclAllReduce holding its launch. Communicators are
  initialised by ncclCommInitRankConfig ranges at the start of the report
  (payload: communicator id, No. of ranks, Rank, CUDA device), except where
  the capture began after them (`-c cudaProfilerApi`). binaryData is a
  32-byte header (domainId, schemaId, payloadSize, size with header; u64
  little-endian) and the payload struct NCCL declares.
- steps: `ProfilerStep#N` push/pop ranges on the main thread (the 2.9.1
  cases write emit_nvtx's form, "ProfilerStep#N, op_id = K"), or
  "iteration N" start/end ranges (the --step-range case), or none;
  per-micro-batch ranges `forward_mb<M>`/`backward_mb<M>` and `optimizer`
  around each job's launches on its launching thread (the pp-labels case:
  `PP:<stage>F<M>`/`PP:<stage>B<M>` with emit_nvtx's ", op_id = K", and no
  range around the optimizer), `aten::` ranges around
  each compute launch; the first forward kernel of stage 0 is a host-to-device
  memcpy and the first optimizer kernel a memset.

truth.json has field_traces.py's shape (its truth() on the model: per rank
and step the window, compute, transfer, wait, idle and most-waited-on peer;
one window over everything where the case writes no step range), plus what
the reader must find: each rank's rank_source, host and pid, the machines in
order, the skew, the --step-range to pass, whether peers can be told apart
(`cannot_tell`), and every job's GPU interval for the job-pattern analysis.
`job_analysis` gives what the job analysis of those ranges must find (the
job pattern to pass, if any; per step its window; per rank its jobs and the
time its jobs cover in the steps; the bubble ratio), from the model's jobs
alone: a job is the span of its own kernels, a step's window runs from its
first job's start (not before the previous window's end) to its last job's
end, a rank's busy time is the union of its jobs inside the windows.
Standard library only; deterministic for a --seed.
"""

import argparse
import json
import random
import sqlite3
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import field_traces as ft  # noqa: E402

US = 1000
NCCL_DOMAIN = 1
SCHEMA_STATIC_START = 1 << 24
SID = {"ncclCommInitRankConfig": 11, "ncclSend": 9, "ncclRecv": 10, "ncclAllReduce": 5}
REDOP_TYPE = SCHEMA_STATIC_START + 16      # NCCL 2.25's registered reduction-op enum
UINT64, INT, SIZE = 18, 5, 22

CASES = {
    # name: (schema, layout of reports, p2p, init payloads, steps, extra, description)
    "rank-reports": dict(schema="3.25.0", reports="rank", p2p="batched", init=True, steps="profiler",
                         pp=4, dp=1, gpm=2, skew=1_500_250, domain_row=True,
                         desc="one report per rank (-o rank_%q{RANK}), RANK in the environment, "
                              "Megatron's batched exchanges, second host 1.500250 ms ahead"),
    "rank-reports-dp2": dict(schema="3.25.0", reports="rank", p2p="batched", init=True, steps="iteration",
                             pp=2, dp=2, gpm=2, skew=-300_000, domain_row=True,
                             desc="pp 2 x dp 2, data-parallel all-reduce, 'iteration N' start/end "
                                  "ranges read with --step-range, second host 0.3 ms behind"),
    "node-reports": dict(schema="3.25.0", reports="node", p2p="separate", init=True, steps="profiler",
                         pp=4, dp=1, gpm=2, skew=1_500_250, domain_row=False,
                         desc="one report per node holding its GPU processes (nsys launching "
                              "torchrun: no RANK), ranks from NCCL's payloads, separate "
                              "isend/irecv on two-rank communicators"),
    "capture-range": dict(schema="3.25.0", reports="node", p2p="separate", init=False, steps="profiler",
                          pp=4, dp=1, gpm=2, skew=1_500_250, domain_row=False, cuda_device_table=True,
                          desc="node reports captured after NCCL's initialisation (-c cudaProfilerApi): "
                               "ranks from the CUDA devices, peers of point-to-point from the "
                               "two-rank communicators, the all-reduce's members unknown"),
    "pp-labels": dict(schema="3.25.0", reports="rank", p2p="batched", init=True, steps="profiler",
                      pp=4, dp=1, gpm=2, skew=0, domain_row=True, jobs="pp",
                      desc="per-micro-batch ranges as torch.distributed.pipelining names them under "
                           "emit_nvtx ('PP:2F1, op_id = K', the backward's on autograd's thread): "
                           "the job analysis with no option, its figures against the truth"),
    "one-window": dict(schema="3.25.0", reports="node", p2p="separate", init=True, steps="none",
                       pp=2, dp=1, gpm=2, skew=0, domain_row=True,
                       desc="no step range at all: one window"),
    "schema-2.9": dict(schema="2.9.1", reports="rank", p2p="batched", init=False, steps="emit_nvtx",
                       pp=2, dp=1, gpm=2, skew=0, domain_row=True,
                       desc="schema 2.9.1 (nsys 2022): PMI_RANK/PMI_SIZE in DeviceEnvironment, no "
                            "payloads; a world of two fixes the peers"),
    "schema-2.9-pp4": dict(schema="2.9.1", reports="rank", p2p="batched", init=False, steps="emit_nvtx",
                           pp=4, dp=1, gpm=4, skew=0, domain_row=True,
                           desc="schema 2.9.1, pp 4: nothing names a peer, the split is unknown"),
}


# --------------------------------------------------------------------------
# Tables: the columns a reader needs, declared as the real exports declare them.
# --------------------------------------------------------------------------
def cols(text):
    return [c.strip() for c in text.split(",")]


TABLES_325 = {
    "META_DATA_EXPORT": cols("name TEXT NOT NULL, value TEXT"),
    "META_DATA_CAPTURE": cols("name TEXT NOT NULL, value TEXT"),
    "TARGET_INFO_SESSION_START_TIME": cols("utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, "
                                           "systemClockNs INTEGER"),
    "ANALYSIS_DETAILS": cols("globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, "
                             "startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL"),
    "TARGET_INFO_SYSTEM_ENV": cols("globalVid INTEGER, devStateName TEXT NOT NULL, name TEXT NOT NULL, "
                                   "nameEnum INTEGER NOT NULL, value TEXT NOT NULL"),
    "StringIds": cols("id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL"),
    "PROCESSES": cols("globalPid INTEGER, pid INTEGER, name TEXT"),
    "ThreadNames": cols("nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER"),
    "CUPTI_ACTIVITY_KIND_KERNEL": cols(
        "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
        "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
        "globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": cols(
        "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
        "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
        "globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL"),
    "CUPTI_ACTIVITY_KIND_MEMSET": cols(
        "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
        "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
        "globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": cols(
        "start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, "
        "globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
        "returnValue INTEGER NOT NULL"),
    "NVTX_EVENTS": cols(
        "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, "
        "text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, "
        "jsonText TEXT, binaryData TEXT"),
    "NVTX_PAYLOAD_SCHEMAS": cols(
        "domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER, flags INTEGER, "
        "numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER"),
    "NVTX_PAYLOAD_SCHEMA_ENTRIES": cols(
        "domainId INTEGER NOT NULL, schemaId INTEGER NOT NULL, idx INTEGER NOT NULL, flags INTEGER, "
        "type INTEGER, name TEXT, description TEXT, arrayOrUnionDetail INTEGER, offset INTEGER"),
    # The shape third-party readers of newer exports use; neither real 3.25
    # export holds it. Written by the capture-range case only.
    "TARGET_INFO_CUDA_DEVICE": cols("gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT, "
                                    "numMultiprocessors INTEGER"),
}
TABLES_291 = {
    "EXPORT_META_DATA": cols("name TEXT NOT NULL, value TEXT"),
    "TARGET_INFO_SESSION_START_TIME": cols("utcEpochNs INTEGER, utcTime TEXT, localTime TEXT"),
    "ANALYSIS_DETAILS": TABLES_325["ANALYSIS_DETAILS"],
    "TARGET_INFO_SYSTEM_ENV": cols("globalVid INTEGER NOT NULL, devStateName TEXT NOT NULL, "
                                   "name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL"),
    "StringIds": TABLES_325["StringIds"],
    "PROCESSES": TABLES_325["PROCESSES"],
    "ThreadNames": TABLES_325["ThreadNames"],
    "TARGET_INFO_GPU": cols("vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, uuid TEXT, "
                            "cuDevice INTEGER"),
    "CUPTI_ACTIVITY_KIND_KERNEL": TABLES_325["CUPTI_ACTIVITY_KIND_KERNEL"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": TABLES_325["CUPTI_ACTIVITY_KIND_MEMCPY"],
    "CUPTI_ACTIVITY_KIND_MEMSET": TABLES_325["CUPTI_ACTIVITY_KIND_MEMSET"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": TABLES_325["CUPTI_ACTIVITY_KIND_RUNTIME"],
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": cols("start INTEGER NOT NULL, end INTEGER NOT NULL, "
                                                "deviceId INTEGER NOT NULL, globalPid INTEGER"),
    "NVTX_EVENTS": cols(
        "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, "
        "text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, "
        "jsonText TEXT"),
}


class Report:
    """The rows of one export, written at the end."""

    def __init__(self, schema):
        self.schema = schema
        self.tables = TABLES_325 if schema.startswith("3.") else TABLES_291
        self.rows = {name: [] for name in self.tables}
        self.strings = {}

    def sid(self, text):
        if text not in self.strings:
            self.strings[text] = len(self.strings) + 1
        return self.strings[text]

    def add(self, table, **values):
        self.rows[table].append(values)

    def write(self, path):
        for text, i in self.strings.items():
            self.add("StringIds", id=i, value=text)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        db = sqlite3.connect(str(path))
        for name, decls in self.tables.items():
            rows = self.rows[name]
            if not rows and self.schema.startswith("3."):
                continue
            db.execute(f"CREATE TABLE {name} ({', '.join(decls)})")
            names = [d.split()[0] for d in decls]
            db.executemany(f"INSERT INTO {name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                           [tuple(r.get(n) for n in names) for r in rows])
        db.commit()
        db.close()


# --------------------------------------------------------------------------
# The model, with its jobs recorded.
# --------------------------------------------------------------------------
class JobModel(ft.Model):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.jobs = []          # (rank, step, kind F/B/O, [kernels])

    def compute_job(self, r, step, kind, count, lo, hi, waits=()):
        first = len(self.kernels)
        super().compute_job(r, step, kind, count, lo, hi, waits)
        self.jobs.append((r, step, kind, self.kernels[first:]))


def build_model(cfg):
    saved = ft.Model
    ft.Model = JobModel
    try:
        return ft.build(cfg)
    finally:
        ft.Model = saved


def configure(args):
    spec = CASES[args.case]
    ns = argparse.Namespace(
        case="batched" if spec["p2p"] == "batched" else "host-args", torch="2.5", p2p=spec["p2p"],
        kernel_args="none", seed=args.seed, pp=args.pp or spec["pp"], dp=args.dp or spec["dp"], tp=1,
        micro_batches=args.micro_batches or 4, steps=args.steps or 3,
        gpus_per_machine=args.gpus_per_machine or spec["gpm"], first_step=args.first_step,
        skew=["none"])
    cfg, _ = ft.configure(ns)
    cfg.spec = spec
    cfg.nsys_case = args.case
    n_machines = (cfg.world + cfg.gpus_per_machine - 1) // cfg.gpus_per_machine
    # Host names whose natural order differs from their text order.
    cfg.hosts = [f"gpu{9 + i}" for i in range(n_machines)]
    cfg.host_name = lambda r: cfg.hosts[r // cfg.gpus_per_machine]
    skew = spec["skew"] if args.skew is None else args.skew
    cfg.host_skew = {h: (skew if i == 1 else 0) for i, h in enumerate(cfg.hosts)}
    cfg.kernel_recorded = lambda k: True
    return cfg


# --------------------------------------------------------------------------
# Communicators: NCCL's view of the process groups.
# --------------------------------------------------------------------------
def comm_hash(ranks, salt):
    """A 64-bit communicator id, the same on every member (NCCL's commHash is
    derived from the unique id all members share); some above 2**63."""
    h = 0xCBF29CE484222325 ^ salt
    for r in ranks:
        h = ((h ^ (r + 1)) * 0x100000001B3) % (1 << 64)
    return h


class Comms:
    def __init__(self, m, cfg):
        self.by_key = {}
        g = m.groups
        self.world = self.add(("world",), g["world"].ranks)
        self.pp = {r: self.add(("pp", g["pp"][r].name), g["pp"][r].ranks) for r in range(cfg.world)}
        self.dp = {r: self.add(("dp", g["dp"][r].name), g["dp"][r].ranks) for r in range(cfg.world)}

    def add(self, key, ranks):
        if key not in self.by_key:
            self.by_key[key] = (comm_hash(ranks, len(self.by_key) * 7919), list(ranks))
        return self.by_key[key]

    def pair(self, a, b):
        lo, hi = min(a, b), max(a, b)
        return self.add(("p2p", lo, hi), [lo, hi])

    def of_rank(self, r):
        return [(h, ranks) for h, ranks in self.by_key.values() if r in ranks]


def payload_blob(sid, fields):
    """binaryData: the 32-byte header, then the payload struct."""
    payload = b"".join(fields)
    return struct.pack("<QQQQ", NCCL_DOMAIN, SCHEMA_STATIC_START + sid, len(payload),
                       32 + len(payload)) + payload


def send_recv_payload(comm, nbytes, peer):
    return struct.pack("<QQi", comm, nbytes, peer) + b"\x00" * 4


def init_payload(comm, nranks, rank, dev):
    return struct.pack("<Qiii", comm, nranks, rank, dev) + b"\x00" * 4


def allreduce_payload(comm, nbytes):
    return struct.pack("<QQi", comm, nbytes, 0) + b"\x00" * 4


SCHEMA_ENTRIES = {
    "ncclCommInitRankConfig": [(UINT64, "NCCL communicator ID", None), (INT, "No. of ranks", 8),
                               (INT, "Rank", 12), (INT, "CUDA device", 16)],
    "ncclSend": [(UINT64, "NCCL communicator ID", None), (SIZE, "Message size [bytes]", 8),
                 (INT, "Peer rank", 16)],
    "ncclRecv": [(UINT64, "NCCL communicator ID", None), (SIZE, "Message size [bytes]", 8),
                 (INT, "Peer rank", 16)],
    "ncclAllReduce": [(UINT64, "NCCL communicator ID", None), (SIZE, "Message size [bytes]", 8),
                      (REDOP_TYPE, "Reduction operation", 16)],
}


# --------------------------------------------------------------------------
# Writing one process's events into a report.
# --------------------------------------------------------------------------
class ProcessWriter:
    def __init__(self, rep, cfg, m, comms, r, session, pid):
        self.rep, self.cfg, self.m, self.comms, self.r = rep, cfg, m, comms, r
        self.session = session      # (true start ns, stored value at that instant)
        self.pid = pid
        self.gpid = (1 << 48) | (pid << 24)
        self.main = self.gpid | pid
        self.autograd = self.gpid | (pid + 3)
        self.corr = 1000
        self.op_id = 100
        self.spec = cfg.spec
        self.new = rep.schema.startswith("3.")
        self.local = r % cfg.gpus_per_machine
        self.device = self.local + (10 if self.spec.get("cuda_device_table") else 0)

    def t(self, true_ns):
        start, stored = self.session
        return true_ns - start + stored

    def next_corr(self):
        self.corr += 1
        return self.corr

    def nvtx(self, start, end, name, tid=None, domain=0, registered=False, blob=None, event=59):
        row = dict(start=self.t(start), end=self.t(end), eventType=event, globalTid=tid or self.main,
                   domainId=domain)
        if registered:
            row["textId"] = self.rep.sid(name)
        else:
            row["text"] = name
        if event == 60:
            row["rangeId"] = self.next_corr()
            row["endGlobalTid"] = tid or self.main
        if blob is not None and self.new:
            row["binaryData"] = blob
        self.rep.add("NVTX_EVENTS", **row)

    def runtime(self, start, end, name, corr, cls=0, tid=None):
        self.rep.add("CUPTI_ACTIVITY_KIND_RUNTIME", start=self.t(start), end=self.t(end), eventClass=cls,
                     globalTid=tid or self.main, correlationId=corr, nameId=self.rep.sid(name),
                     returnValue=0)
        if not self.new and cls == 0:
            # nsys 2022 writes a CUDA backtrace row with the same correlation.
            self.rep.add("CUPTI_ACTIVITY_KIND_RUNTIME", start=self.t(start) - 300, end=self.t(end) + 100,
                         eventClass=67, globalTid=tid or self.main, correlationId=corr,
                         nameId=self.rep.sid(name.split("_v")[0]), returnValue=0)

    def kernel(self, k, corr, kind):
        base = dict(start=self.t(k.start), end=self.t(k.end), deviceId=self.device, contextId=1,
                    streamId=k.stream, correlationId=corr, globalPid=self.gpid)
        if kind == "memcpy":
            self.rep.add("CUPTI_ACTIVITY_KIND_MEMCPY", bytes=4 << 20, copyKind=1, **base)
        elif kind == "memset":
            self.rep.add("CUPTI_ACTIVITY_KIND_MEMSET", value=0, bytes=1 << 20, **base)
        else:
            name = self.kernel_name(k)
            short = name.split("(")[0].split("<")[0].replace("void ", "")
            self.rep.add("CUPTI_ACTIVITY_KIND_KERNEL", demangledName=self.rep.sid(name),
                         shortName=self.rep.sid(short), **base)

    def kernel_name(self, k):
        if not k.nccl:
            return k.name
        if k.coll == "allreduce":
            return ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)" if self.new
                    else "ncclKernel_AllReduce_RING_LL_Sum_bfloat16(ncclDevComm*, unsigned long, ncclWork*)")
        return ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)" if self.new
                else "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)")

    def payloads(self):
        return self.new and self.spec["schema"].startswith("3.")

    def p2p_payload(self, k, kind, peer):
        nbytes = 2 * (k.nelems or 0)
        if self.cfg.p2p == "batched":
            comm, ranks = self.comms.pp[self.r]
            value = ranks.index(peer)
        else:
            comm, ranks = self.comms.pair(self.r, peer)
            value = ranks.index(peer)
        name = "ncclSend" if kind == "send" else "ncclRecv"
        return name, payload_blob(SID[name], [send_recv_payload(comm, nbytes, value)])

    def write_schemas(self):
        for name, entries in SCHEMA_ENTRIES.items():
            sid = SCHEMA_STATIC_START + SID[name]
            self.rep.add("NVTX_PAYLOAD_SCHEMAS", domainId=NCCL_DOMAIN, schemaId=sid, type=1,
                         numEntries=len(entries), payloadSize=24)
            for idx, (typ, label, offset) in enumerate(entries):
                self.rep.add("NVTX_PAYLOAD_SCHEMA_ENTRIES", domainId=NCCL_DOMAIN, schemaId=sid, idx=idx,
                             type=typ, name=label, offset=offset)

    def write(self, first_true, step_marks):
        rep, m, r = self.rep, self.m, self.r
        rep.add("PROCESSES", globalPid=self.gpid, pid=self.pid, name="python3")
        rep.add("ThreadNames", nameId=rep.sid("python3"), priority=0, globalTid=self.main)
        rep.add("ThreadNames", nameId=rep.sid("pt_autograd_0"), priority=0, globalTid=self.autograd)
        if self.payloads():
            self.write_schemas()
        if self.spec["domain_row"]:
            rep.add("NVTX_EVENTS", start=self.t(first_true - 900 * US), eventType=75, text="NCCL",
                    globalTid=self.main, domainId=NCCL_DOMAIN)
        if self.spec["init"]:
            # ncclCommInitRankConfig per communicator of this rank, before step 0.
            at = first_true - 800 * US
            for comm, ranks in self.comms.of_rank(r):
                blob = payload_blob(SID["ncclCommInitRankConfig"],
                                    [init_payload(comm, len(ranks), ranks.index(r), self.local)])
                self.nvtx(at, at + 40 * US, "ncclCommInitRankConfig", domain=NCCL_DOMAIN,
                          registered=True, blob=blob if self.payloads() else None)
                at += 50 * US
        self.write_steps(step_marks)
        # Each compute kernel's job (kind, micro-batch, kernels), keyed by kernel
        # id; job_of keys the first kernel of each job only.
        mb, jobs, job_of = {}, {}, {}
        for rr, step, kind, ks in m.jobs:
            if rr != r:
                continue
            n = mb.get((step, kind), 0)
            mb[(step, kind)] = n + 1
            job_of[ks[0].kid] = (kind, n, ks)
            for k in ks:
                jobs[k.kid] = (kind, n, ks)
        launch_at = {}
        for item in m.host_log[r]:
            if item[0] == "launch":
                launch_at[item[3].kid] = (item[1], item[2])
        first_of_batch = set()
        for item in m.host_log[r]:
            if item[0] == "hostop":
                _, t, cost, k, kind, peer = item
                first = k.kid not in first_of_batch
                if first:
                    first_of_batch.add(k.kid)
                    self.group_start(t)
                self.hostop(t, cost, k, kind, peer, first)
            elif item[0] == "launch":
                _, t, cost, k = item
                if k.kid in job_of:
                    kind, n, ks = job_of[k.kid]
                    self.job_range(kind, n, ks, launch_at)
                self.launch(t, cost, k, jobs)

    def write_steps(self, step_marks):
        style = self.spec["steps"]
        if style == "none":
            return
        for i, (step, t, _) in enumerate(step_marks):
            end = step_marks[i + 1][1] if i + 1 < len(step_marks) else step_marks[i][2]
            if style == "profiler":
                self.nvtx(t, end, f"ProfilerStep#{step}")
            elif style == "emit_nvtx":
                self.op_id += 1
                self.nvtx(t, end, f"ProfilerStep#{step}, op_id = {self.op_id}")
            elif style == "iteration":
                self.nvtx(t, end, f"iteration {step}", event=60)

    def group_start(self, t):
        self.nvtx(t, t + US, "ncclCommCount", domain=NCCL_DOMAIN, registered=True)
        self.nvtx(t + US, t + 2 * US, "ncclGroupStart", domain=NCCL_DOMAIN, registered=True)

    def hostop(self, t, cost, k, kind, peer, first):
        name, blob = self.p2p_payload(k, kind, peer)
        lo = t + 3 * US if first else t + US
        self.nvtx(lo, t + cost - US, name, domain=NCCL_DOMAIN, registered=True,
                  blob=blob if self.payloads() else None)

    def job_range(self, kind, n, ks, launch_at):
        t0 = launch_at[ks[0].kid][0]
        t1, c1 = launch_at[ks[-1].kid]
        if self.spec.get("jobs") == "pp":
            if kind == "O":
                return  # torch's pipelining labels no optimizer step
            self.op_id += 1
            stage = ft.coords(self.cfg, self.r)[0]
            name = f"PP:{stage}{kind}{n}, op_id = {self.op_id}"
        else:
            name = {"F": f"forward_mb{n}", "B": f"backward_mb{n}", "O": "optimizer"}[kind]
        self.nvtx(t0, t1 + c1, name, tid=self.autograd if kind == "B" else self.main)

    def launch(self, t, cost, k, jobs):
        corr = self.next_corr()
        k.corr = corr
        if not k.nccl:
            kind, _, ks = jobs[k.kid]
            tid = self.autograd if kind == "B" else self.main
            self.op_id += 1
            self.nvtx(t, t + cost - US, f"{k.host_ops[0]}, op_id = {self.op_id}", tid=tid)
            activity = "kernel"
            stage = ft.coords(self.cfg, self.r)[0]
            if k is ks[0] and kind == "O":
                activity = "memset"
            elif k is ks[0] and kind == "F" and stage == 0 and self.is_first_forward(k):
                activity = "memcpy"
            name = {"kernel": "cudaLaunchKernel_v7000", "memcpy": "cudaMemcpyAsync_v3020",
                    "memset": "cudaMemsetAsync_v3020"}[activity]
            self.runtime(k.launch, k.launch + k.rt_dur, name, corr, tid=tid)
            self.kernel(k, corr, activity)
            return
        if k.coll == "batch":
            self.nvtx(t + US, t + cost - US, "ncclGroupEnd", domain=NCCL_DOMAIN, registered=True)
            self.runtime(t + 2 * US, t + 3 * US, "cudaEventRecord_v3020", self.next_corr())
            self.runtime(t + 3 * US, t + 4 * US, "cudaStreamWaitEvent_v3020", self.next_corr())
        elif k.coll in ("send", "recv"):
            name, blob = self.p2p_payload(k, k.coll, k.ops[0][1])
            self.nvtx(t + 2 * US, t + cost - 2 * US, name, domain=NCCL_DOMAIN, registered=True,
                      blob=blob if self.payloads() else None)
        else:
            comm, _ = self.comms.world if k.group.desc == "default_pg" else self.comms.dp[self.r]
            blob = payload_blob(SID["ncclAllReduce"], [allreduce_payload(comm, 2 * (k.nelems or 1))])
            self.nvtx(t + 2 * US, t + cost - 2 * US, "ncclAllReduce", domain=NCCL_DOMAIN, registered=True,
                      blob=blob if self.payloads() else None)
        if self.new:
            self.runtime(k.launch, k.launch + k.rt_dur, "cuLaunchKernelEx", corr, cls=1)
        else:
            self.runtime(k.launch, k.launch + k.rt_dur, "cudaLaunchKernel_v7000", corr)
        self.kernel(k, corr, "kernel")

    def is_first_forward(self, k):
        for rr, step, kind, ks in self.m.jobs:
            if rr == self.r and step == k.step and kind == "F":
                return ks[0] is k
        return False


# --------------------------------------------------------------------------
# Reports, sessions, metadata.
# --------------------------------------------------------------------------
def write_reports(cfg, m, out):
    spec = cfg.spec
    rng = random.Random(cfg.seed * 131 + 7)
    comms = Comms(m, cfg)
    first_true = min(k.launch for k in m.kernels)
    last_true = max(k.end for k in m.kernels)
    marks = {}
    for r in range(cfg.world):
        log = m.host_log[r]
        starts = [(it[2][1], it[1]) for it in log if it[0] == "mark" and it[2][0] == "step"]
        ends = {it[2][1]: it[1] for it in log if it[0] == "mark" and it[2][0] == "step_end"}
        marks[r] = [(s, t, ends[s] + 20 * US) for s, t in starts]
    pids = rng.sample(range(3000, 400000), cfg.world)
    if spec["reports"] == "rank":
        groups = [(f"rank_{r}.sqlite", [r]) for r in range(cfg.world)]
    else:
        groups = [(f"{h}.sqlite", [r for r in range(cfg.world) if cfg.host_name(r) == h]) for h in cfg.hosts]
    paths = {}
    boot = {h: rng.randrange(30, 90) * 10**9 + rng.randrange(10**9) for h in cfg.hosts}
    for name, ranks in groups:
        host = cfg.host_name(ranks[0])
        rep = Report(spec["schema"])
        session_true = first_true - rng.randrange(900 * US + 2 * 10**9, 900 * US + 4 * 10**9)
        skew = cfg.host_skew[host]
        sysclock = session_true - ft.ORIGIN_NS + boot[host]
        stored0 = sysclock if rep.schema.startswith("3.") else 0
        for r in ranks:
            w = ProcessWriter(rep, cfg, m, comms, r, (session_true, stored0), pids[r])
            w.write(first_true, marks[r])
            if spec.get("cuda_device_table"):
                rep.add("TARGET_INFO_CUDA_DEVICE", gpuId=w.device, cudaId=w.local, pid=pids[r],
                        uuid=f"GPU-{r:08x}-0000-0000-0000-000000000000", numMultiprocessors=132)
            if not rep.schema.startswith("3."):
                rep.add("TARGET_INFO_GPU", vmId=1 << 48, id=w.device, name="NVIDIA H100 80GB HBM3",
                        uuid=f"GPU-{r:08x}", cuDevice=w.local)
        write_metadata(rep, cfg, host, ranks, session_true + skew, sysclock,
                       last_true - session_true + 50 * US)
        path = out / name
        rep.write(path)
        for r in ranks:
            paths[r] = name
    return paths, pids


def write_metadata(rep, cfg, host, ranks, utc, sysclock, duration):
    new = rep.schema.startswith("3.")
    meta = "META_DATA_EXPORT" if new else "EXPORT_META_DATA"
    major, minor, micro = rep.schema.split(".")
    for k, v in [("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
                 ("EXPORT_PRODUCT_VERSION", "2026.2.1.210" if new else "2022.2.1.31"),
                 ("EXPORT_SCHEMA_VERSION", rep.schema), ("EXPORT_SCHEMA_VERSION_MAJOR", major),
                 ("EXPORT_SCHEMA_VERSION_MINOR", minor), ("EXPORT_SCHEMA_VERSION_MICRO", micro)] + \
            ([("EXPORT_PARAM_INCLUDE_BLOBS", "true")] if new else []):
        rep.add(meta, name=k, value=v)
    secs = utc // 10**9
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    if new:
        rep.add("TARGET_INFO_SESSION_START_TIME", utcEpochNs=utc, utcTime=stamp, localTime=stamp,
                systemClockNs=sysclock)
        rep.add("ANALYSIS_DETAILS", globalVid=1 << 48, duration=duration, startTime=sysclock,
                stopTime=sysclock + duration)
    else:
        rep.add("TARGET_INFO_SESSION_START_TIME", utcEpochNs=utc, utcTime=stamp, localTime=stamp)
        rep.add("ANALYSIS_DETAILS", globalVid=1 << 48, duration=duration, startTime=0, stopTime=duration)
    per_rank = cfg.spec["reports"] == "rank"
    r = ranks[0]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "NCCL_VERSION": "2.25.1-1",
           "NVIDIA_REQUIRE_CUDA": "cuda>=12.8 brand=tesla,driver>=535,driver<536"}
    if per_rank:
        if new:
            env.update({"RANK": str(r), "LOCAL_RANK": str(r % cfg.gpus_per_machine),
                        "WORLD_SIZE": str(cfg.world), "MASTER_ADDR": cfg.hosts[0], "MASTER_PORT": "29500"})
        else:
            env.update({"PMI_RANK": str(r), "PMI_SIZE": str(cfg.world), "PMI_LOCAL_RANK":
                        str(r % cfg.gpus_per_machine), "SLURM_PROCID": str(r),
                        "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(cfg.gpus_per_machine))})
    items = [f"{k}={v}" for k, v in env.items()]
    rows = [("Hostname", 619, host),
            ("DeviceEnvironment", 610, ("\x00" if not new else ";").join(items)),
            ("CpuCores", 1, "64")]
    for name, enum, value in rows:
        rep.add("TARGET_INFO_SYSTEM_ENV", globalVid=1 << 48, devStateName="Local (CLI)", name=name,
                nameEnum=enum, value=value)
    if new:
        cmd = ["python3", "pretrain_gpt.py"] if per_rank else \
            ["torchrun", f"--nproc_per_node={cfg.gpus_per_machine}", "pretrain_gpt.py"]
        rep.add("META_DATA_CAPTURE", name="DEVICE_DISPLAY_NAME", value=host)
        rep.add("META_DATA_CAPTURE", name="CUDA_TRACE_SCOPE", value="ProcessTree")
        rep.add("META_DATA_CAPTURE", name="PROCESS_0:COMMAND", value=cmd[0])
        for i, a in enumerate(cmd[1:]):
            rep.add("META_DATA_CAPTURE", name=f"PROCESS_0:ARGUMENT_{i}", value=a)
        for k, v in env.items():
            rep.add("META_DATA_CAPTURE", name="PROCESS_0:ENVIRONMENT_VARIABLE", value=f'{k}="{v}"')
        if not per_rank:
            # The launcher: a process of the tree without GPU work.
            rep.add("PROCESSES", globalPid=(1 << 48) | (2 << 24), pid=2, name="torchrun")


# --------------------------------------------------------------------------
# Truth
# --------------------------------------------------------------------------
def one_window_truth(m, cfg):
    s = min(k.start for k in m.kernels)
    e = max(k.end for k in m.kernels)
    ranks = []
    for r in range(cfg.world):
        comp, trans, waits = [], [], []
        for k in m.kernels:
            if k.rank != r:
                continue
            if not k.nccl:
                comp.append((k.start, k.end))
                continue
            latest = max([k.start] + [p.start for p in k.peers])
            wend = min(latest, k.end)
            if wend > k.start:
                waits.append((k.start, wend, min(p.rank for p in k.peers if p.start == latest)))
            trans.append((max(k.start, wend), k.end))
        fig, blame = ft.split_window(s, e, comp, trans, waits)
        tot = dict(fig, most_waited_on=ft.most(blame))
        ranks.append(dict(global_rank=r, machine=cfg.machine_of(r), host=cfg.host_name(r),
                          path=cfg.paths.get(r, []),
                          steps=[dict(step=0, start_ns=s, end_ns=e, **fig, most_waited_on=ft.most(blame))],
                          totals=tot))
    return ranks, [(0, s, e)]


def job_truth(m, cfg, r):
    out = []
    mb = {}
    for rr, step, kind, ks in m.jobs:
        if rr != r:
            continue
        n = mb.get((step, kind), 0)
        mb[(step, kind)] = n + 1
        out.append(dict(step=step, op={"F": "forward", "B": "backward", "O": "optimizer"}[kind],
                        mb=None if kind == "O" else n, start_ns=min(k.start for k in ks),
                        end_ns=max(k.end for k in ks)))
    return out


def covered(intervals, lo, hi):
    """ns of [lo, hi) that the union of `intervals` covers."""
    total, reach = 0, lo
    for a, b in sorted(intervals):
        a, b = max(a, reach), min(b, hi)
        if b > a:
            total += b - a
            reach = b
    return total


JOB_PATTERN = r"^(?P<op>forward|backward|optimizer)(?:_mb(?P<mb>[0-9]+))?$"


def job_analysis(m, cfg):
    """The job analysis's figures, from the model's jobs (see the module doc)."""
    labels = cfg.spec.get("jobs") == "pp"
    kinds = ("F", "B") if labels else ("F", "B", "O")
    jobs = {r: [] for r in range(cfg.world)}
    for r, step, kind, ks in m.jobs:
        if kind in kinds:
            jobs[r].append((step, min(k.start for k in ks), max(k.end for k in ks)))
    steps = sorted({s for js in jobs.values() for s, _, _ in js})
    windows, previous = [], None
    for s in steps:
        firsts = [min(a for st, a, _ in js if st == s) for js in jobs.values() if any(st == s for st, _, _ in js)]
        lasts = [max(b for st, _, b in js if st == s) for js in jobs.values() if any(st == s for st, _, _ in js)]
        start = min(firsts) if previous is None else max(min(firsts), previous)
        end = max(max(lasts), start)
        windows.append((s, start, end))
        previous = end
    total = sum(e - a for _, a, e in windows)
    ranks, idle = [], 0
    for r in range(cfg.world):
        spans = [(a, b) for _, a, b in jobs[r]]
        busy = sum(covered(spans, a, e) for _, a, e in windows)
        idle += total - busy
        ranks.append(dict(global_rank=r, jobs=len(jobs[r]), busy_ns=busy))
    return dict(job_pattern=None if labels else JOB_PATTERN,
                steps=[dict(step=s, start_ns=a, end_ns=e) for s, a, e in windows],
                total_window_ns=total, ranks=ranks,
                bubble_idle_ns=idle, bubble_ratio=idle / (cfg.world * total) if total else 0.0)


def generate(cfg, out):
    m = build_model(cfg)
    t0 = ft.ORIGIN_NS + random.Random(cfg.seed).randrange(10**9)
    m.run(t0)
    out.mkdir(parents=True, exist_ok=True)
    paths, pids = write_reports(cfg, m, out)
    cfg.paths = {r: [p] for r, p in paths.items()}
    spec = cfg.spec
    if spec["steps"] == "none":
        ranks, windows = one_window_truth(m, cfg)
    else:
        ranks, windows = ft.truth(m, cfg)
    source = ("environment" if spec["reports"] == "rank" else "nccl" if spec["init"] else "device")
    for row in ranks:
        r = row["global_rank"]
        row["rank_source"] = source
        row["pid"] = pids[r]
        row["jobs"] = job_truth(m, cfg, r)
    # Exact where the payloads name every communicator's members, or where a
    # world of two (its size in the environment) fixes every peer.
    payloads = spec["schema"].startswith("3.")
    world_of_two = cfg.world == 2 and spec["reports"] == "rank"
    cannot_tell = not ((payloads and spec["init"]) or world_of_two)
    doc = dict(case=cfg.nsys_case, schema=spec["schema"], reports=spec["reports"], p2p=cfg.p2p,
               pp=cfg.pp, dp=cfg.dp, tp=cfg.tp, micro_batches=cfg.micro_batches, world_size=cfg.world,
               gpus_per_machine=cfg.gpus_per_machine, seed=cfg.seed,
               machines=cfg.hosts, skews_ns={h: v for h, v in cfg.host_skew.items() if v},
               step_range=r"iteration ([0-9]+)" if spec["steps"] == "iteration" else None,
               one_window=spec["steps"] == "none", cannot_tell=cannot_tell,
               notes=[spec["desc"], "truth from field_traces.py's physical model; skews move what a host "
                      "writes, never the truth"],
               steps=[dict(step=s, start_ns=a, end_ns=b) for s, a, b in windows], ranks=ranks,
               job_analysis=job_analysis(m, cfg))
    (out / "truth.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out")
    ap.add_argument("--case", default="rank-reports")
    ap.add_argument("--pp", type=int)
    ap.add_argument("--dp", type=int)
    ap.add_argument("--micro-batches", type=int)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--first-step", type=int)
    ap.add_argument("--gpus-per-machine", type=int)
    ap.add_argument("--skew", type=int, help="ns the second host's clock is ahead (default: the case's)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    if a.list:
        for name, spec in CASES.items():
            print(f"{name:16s} {spec['schema']:6s} {spec['desc']}")
        return 0
    if not a.out:
        ap.error("-o/--out is required")
    if a.case not in CASES:
        ap.error(f"unknown case {a.case!r}; --list names them")
    generate(configure(a), Path(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
