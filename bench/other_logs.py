#!/usr/bin/env python3
"""Writes benchmark folders of PaddlePaddle worker logs, apart from `pipescope simulate`.

    other_logs.py -o DIR --shape sparse|dense --target-bytes 1G
                  [--ranks 8] [--stages 4] [--order dp,pp] [--micro-batches 8]
                  [--noise-per-job 49] [--first-step 1] [--seed 1] [--steps N] [--force]

The second family of `bench/throughput.sh` folders. It shares no code and no
assumption it can avoid with the engine's simulator (engine/simulate/), so that one
generator's quirks cannot flatter the figures. Python 3 standard library only.

Layout. RANKS = STAGES x DP ranks of one machine, `workerlog.N` each. `--order dp,pp`
(Paddle fleet's topology, the default): rank = replica * STAGES + stage; `pp,dp`
(Megatron's): rank = stage * DP + replica.

Jobs. Paddle's static 1F1B plan, as its 2023 passes log it: every step of every rank is
`lr`, then the stage's 1F1B order (STAGES - 1 - stage warm-up forwards, then forward /
backward pairs, then the cool-down backwards), then `optimizer`. Job ids are the job's
index in the step's plan (lr 0, optimizer 2M+1); lr and optimizer have micro-batch 0.

Timing, in integer nanoseconds throughout (printed as ms with 6 decimals, exactly).
Each stage has its own forward cost (its layers; stage 0 also the embedding, the last
stage the head and the loss), backward = 2.05 x forward, its own optimizer cost. Every
job's cost is multiplied by a lognormal jitter (sigma 0.07) drawn per job, with rare
stragglers (0.4% of jobs 1.3-2.2x slower); each replica's GPUs run a few per cent
faster or slower. A job starts when its device is free plus a launch gap (6-45 us)
and, for a forward, when the previous stage's forward of the micro-batch ended plus a
send/recv latency (lognormal around 140 us, sigma 0.35), for a backward, the next
stage's backward of the micro-batch plus that latency. The optimizer of a stage waits
for the last backward of that stage on every replica plus a gradient all-reduce
(per stage, jittered) and starts within 33 us on each replica. A step's `lr` starts a
host gap (data loading, logging: 250 us + lognormal) after the device's optimizer.

Lines. Paddle prints a step's job lines together once the step's jobs ran: after the
device's optimizer, a `profiler.cc` line `Profiler Info: cuda events collected = N`, then
the step's job lines, GLOG time = the job's end plus a flush delay, never earlier.
`--shape sparse`: before them, the step's other output, about NOISE-PER-JOB lines per
job line (1 job line in 50 by default), stamped across the step: GLOG lines of many
sources and severities (I/W/E), PaddleNLP logging (loss, lr), NCCL INFO lines, Python
warnings and tracebacks, short and long lines (from blank to about 400 bytes), with many
capitalised words and `P`s (`Place(gpu:0)`, `Pipeline`, `PPNCCL`, `Profiler`) to keep a
search for `Profiler Info: Job` busy. No noise line contains `Profiler Info: Job`; the
only other lines with `Profiler Info` are the cuda-events lines, one per rank and step
(`rg -c 'Profiler Info'` counts them too: expected.json gives both counts).
`--shape dense`: the job lines and the cuda-events lines only, after a short start-up
banner. Both shapes open with the banner (flags, NCCL's init, `Schedule Profiler start
at step FIRST_STEP`); lines a run prints once, such as NCCL's `Init COMPLETE` (a log
event), are in the banner only, so the noise of the steps matches no log event.

Size: steps are added until the folder holds at least `--target-bytes` (K/M/G/T,
powers of 1024, as numfmt --from=iec), or exactly `--steps`. Every step is whole, so
every step is complete.

expected.json: what the generator knows from its own job list, by the metric contract
of docs/guide.md ("Metrics"): per rank its stage, replica, jobs (by type), steps, lines,
bytes, lines holding `Profiler Info`, busy and idle ns; the step count, first step,
total window, bubble ratio; the same per replica (its own windows); and, for at most 64
steps, every step's window and per-rank busy time.
"""

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

BASE_NS = 1_697_793_300 * 1_000_000_000  # 2023-10-20 09:15:00 UTC
TYPES = ("lr", "forward", "backward", "optimizer")
FLUSH_BYTES = 4 << 20
DETAIL_STEPS = 64


def parse_size(text):
    """'1G', '256M', '1.5K', '4096' -> bytes (powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    value = text.strip().upper()
    for suffix in ("IB", "B"):
        if len(value) > len(suffix) and value.endswith(suffix) and value[-len(suffix) - 1] in "KMGT":
            value = value[: -len(suffix)]
    unit = value[-1] if value and value[-1] in "KMGT" else ""
    number = value[: len(value) - len(unit)]
    try:
        size = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512K, 256M, 1G)")
    if size <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive: {text!r}")
    return int(size)


# ---------------------------------------------------------------------------
# Timing model


def one_f_one_b(stages, stage, micro_batches):
    """Paddle's 1F1B order of one stage: [(is_backward, micro_batch), ...]."""
    warmup = min(stages - 1 - stage, micro_batches)
    order = [(0, m) for m in range(warmup)]
    for i in range(micro_batches - warmup):
        order.append((0, warmup + i))
        order.append((1, i))
    order.extend((1, m) for m in range(micro_batches - warmup, micro_batches))
    return order


class Pipeline:
    """The run's costs and its step-by-step schedule, in integer ns."""

    def __init__(self, rng, stages, replicas, micro_batches):
        self.rng = rng
        self.P, self.R, self.M = stages, replicas, micro_batches
        # A model of 32 decoder layers split over the stages; stage 0 also runs the
        # embedding, the last stage the head and the loss.
        layers = [max(1, 32 // stages + (1 if s < 32 % stages else 0)) for s in range(stages)]
        per_layer_us = 190 + rng.randrange(0, 40)
        fwd_us = [layers[s] * per_layer_us for s in range(stages)]
        fwd_us[0] += 250
        fwd_us[-1] += 500
        opt_us = [380 * layers[s] // 2 + 300 for s in range(stages)]
        opt_us[0] += 700
        opt_us[-1] += 700
        speed = [1.0 + 0.02 * rng.gauss(0.0, 1.0) for _ in range(replicas)]
        # Per replica and stage, in ns.
        self.fwd = [[int(fwd_us[s] * 1000 * speed[r]) for s in range(stages)] for r in range(replicas)]
        self.bwd = [[int(self.fwd[r][s] * 2.05) for s in range(stages)] for r in range(replicas)]
        self.opt = [[int(opt_us[s] * 1000 * speed[r]) for s in range(stages)] for r in range(replicas)]
        self.allreduce = [int((600 + 900 * layers[s] / max(layers)) * 1000) for s in range(stages)]
        self.lr = 35_000
        # Tables drawn once from their distributions, indexed by random bits per job.
        # Jitter is a factor x 2^16.
        sigma = 0.07
        jitter = []
        for _ in range(1 << 13):
            factor = rng.lognormvariate(-sigma * sigma / 2, sigma)
            if rng.random() < 0.004:
                factor *= rng.uniform(1.3, 2.2)
            jitter.append(int(factor * 65536))
        self.jitter = jitter
        self.latency = [int(rng.lognormvariate(math.log(140_000), 0.35)) for _ in range(1 << 12)]
        self.gap = [rng.randrange(6_000, 45_000) for _ in range(1 << 8)]
        self.host_gap = [250_000 + int(rng.lognormvariate(math.log(180_000), 0.6)) for _ in range(1 << 10)]
        self.orders = [one_f_one_b(stages, s, micro_batches) for s in range(stages)]
        # When each device (replica, stage) may start its next step's lr.
        self.next_lr = [[BASE_NS + 2_000_000 + rng.randrange(0, 3_000_000) for _ in range(stages)]
                        for _ in range(replicas)]

    def step(self):
        """Runs one step; returns per replica and stage its jobs [(type, mb, start, end)]."""
        P, M = self.P, self.M
        bits = self.rng.getrandbits
        jitter, latency, gap = self.jitter, self.latency, self.gap
        out = []
        free_after = []
        for r in range(self.R):
            fwd, bwd = self.fwd[r], self.bwd[r]
            jobs = [[] for _ in range(P)]
            free = [0] * P
            for s in range(P):
                start = self.next_lr[r][s]
                end = start + self.lr * jitter[bits(13)] // 65536
                jobs[s].append(("lr", 0, start, end))
                free[s] = end
            fend = [[-1] * M for _ in range(P)]
            bend = [[-1] * M for _ in range(P)]
            ptr = [0] * P
            left = P
            total = 2 * M
            while left:
                for s in range(P):
                    p = ptr[s]
                    if p == total:
                        continue
                    order = self.orders[s]
                    mine = jobs[s]
                    t = free[s]
                    while p < total:
                        backward, m = order[p]
                        if backward:
                            if s < P - 1:
                                dep = bend[s + 1][m]
                                if dep < 0:
                                    break
                                ready = dep + latency[bits(12)]
                            else:
                                ready = 0
                            cost = bwd[s] * jitter[bits(13)] >> 16
                        else:
                            if s > 0:
                                dep = fend[s - 1][m]
                                if dep < 0:
                                    break
                                ready = dep + latency[bits(12)]
                            else:
                                ready = 0
                            cost = fwd[s] * jitter[bits(13)] >> 16
                        start = t + gap[bits(8)]
                        if ready > start:
                            start = ready
                        t = start + cost
                        if backward:
                            bend[s][m] = t
                            mine.append(("backward", m, start, t))
                        else:
                            fend[s][m] = t
                            mine.append(("forward", m, start, t))
                        p += 1
                    ptr[s] = p
                    free[s] = t
                    if p == total:
                        left -= 1
            out.append(jobs)
            free_after.append(free)
        # The gradient all-reduce of each stage across the replicas, then the optimizer.
        for s in range(P):
            synced = max(free_after[r][s] for r in range(self.R))
            synced += self.allreduce[s] * jitter[bits(13)] // 65536
            for r in range(self.R):
                start = max(free_after[r][s] + gap[bits(8)], synced + bits(15))
                end = start + self.opt[r][s] * jitter[bits(13)] // 65536
                out[r][s].append(("optimizer", 0, start, end))
                self.next_lr[r][s] = end + self.host_gap[bits(10)]
        return out


# ---------------------------------------------------------------------------
# The metric contract on the generator's own jobs (docs/guide.md, "Metrics")


class ContractSums:
    """Step windows, busy and idle of a set of devices, one step at a time.

    Every job of this generator is a compute job (no comm), and a device runs one job
    at a time, so busy(d, k) is the sum of d's job intervals clipped to [S_k, E_k).
    Jobs of step k+1 may start inside window k; those of step k+2 may not (checked).
    """

    def __init__(self, devices, detail):
        self.devices = devices
        self.busy = {d: 0 for d in devices}
        self.idle = {d: 0 for d in devices}
        self.total_window = 0
        self.steps = 0
        self.prev_end = None
        self.pending = None  # (step jobs per device) of the step whose window is open
        self.detail = [] if detail else None

    def add(self, step_jobs):
        """step_jobs: {device: [(start, end), ...]} of the next step."""
        if self.prev_end is not None and min(iv[0][0] for iv in step_jobs.values()) < self.prev_end:
            raise AssertionError("a job starts inside the window of the step two steps before it")
        if self.pending is not None:
            self._close(self.pending, step_jobs)
        self.pending = step_jobs

    def finish(self):
        if self.pending is not None:
            self._close(self.pending, {})
            self.pending = None

    def _close(self, jobs, later):
        first = min(iv[0][0] for iv in jobs.values())
        last = max(iv[-1][1] for iv in jobs.values())
        start = first if self.prev_end is None else max(first, self.prev_end)
        end = max(last, start)
        width = end - start
        row = {}
        for d in self.devices:
            busy = 0
            for source in (jobs.get(d, ()), later.get(d, ())):
                for a, b in source:
                    if a < start:
                        a = start
                    if b > end:
                        b = end
                    if b > a:
                        busy += b - a
            self.busy[d] += busy
            self.idle[d] += width - busy
            row[d] = busy
        self.total_window += width
        self.steps += 1
        if self.detail is not None:
            self.detail.append((start, end, row))
            if len(self.detail) > DETAIL_STEPS:
                self.detail = None
        self.prev_end = end

    def bubble_ratio(self):
        denominator = len(self.devices) * self.total_window
        return sum(self.idle.values()) / denominator if denominator else 0.0


# ---------------------------------------------------------------------------
# Lines


class Clock:
    """Cached text of GLOG and Python logging times (UTC), per second."""

    def __init__(self):
        self.glog_cache = {}
        self.py_cache = {}

    def glog(self, sec):
        text = self.glog_cache.get(sec)
        if text is None:
            t = time.gmtime(sec)
            text = "%02d%02d %02d:%02d:%02d" % (t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
            self.glog_cache[sec] = text
        return text

    def py(self, sec):
        text = self.py_cache.get(sec)
        if text is None:
            text = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec))
            self.py_cache[sec] = text
        return text


GLOG, PYLOG, PLAIN = 0, 1, 2

OPS = ("matmul_v2", "fused_gemm_epilogue", "c_allreduce_sum", "softmax_with_cross_entropy",
       "flash_attn", "layer_norm", "fused_rotary_position_embedding", "PartialSend",
       "PartialRecv", "p_send", "p_recv", "c_embedding", "Pool2D", "elementwise_add",
       "PutAlongAxis", "PRelu", "Pad3D", "p_norm", "Print")
VARS = ("Pipeline@GRAD", "linear_12.w_0", "PP_STAGE_OUT", "Param_embedding_0.w_0",
        "Partial@RENAME@block0", "tmp_3", "PositionIds", "Placeholder_4",
        "create_parameter_7.w_0@GRAD", "PPNCCL_Buffer", "layer_norm_3.tmp_2")
PY_PATHS = ("paddle/distributed/fleet/meta_parallel/pp_utils/p2p_communication.py",
            "paddle/distributed/auto_parallel/static/engine.py",
            "paddle/io/dataloader/dataloader_iter.py",
            "paddlenlp/trainer/auto_trainer.py",
            "paddle/distributed/passes/pipeline_scheduler_pass/pipeline_1f1b.py")


def noise_pool(rng, rank, stage, replica, stages, replicas, tid, size=1 << 13):
    """`size` rendered noise entries for one rank: (kind, severity, text).

    kind GLOG: line = severity + time + text; PYLOG: line = "[" + time + "] " + text;
    PLAIN: line = text. Text ends with '\\n' and may hold several lines.
    """
    gpu = rank % 8
    peer_next = (stage + 1) % stages
    peer_prev = (stage - 1) % stages
    host = "pp-node0:%d:%d [%d] NCCL INFO " % (tid, tid + 173 + gpu, gpu)
    t = " %d " % tid

    def glog(severity, source, message):
        return (GLOG, severity, "%s%s] %s\n" % (t, source, message))

    def tensors(n):
        return ", ".join("%s[%d,%d]" % (rng.choice(VARS), rng.choice((1, 2, 4, 8)), rng.choice((1024, 4096, 11008)))
                         for _ in range(n))

    makers = [
        # (weight, maker)
        (9, lambda: glog("I", "program_interpreter.cc:212", "New Executor is Running.")),
        (5, lambda: glog("I", "pir_interpreter.cc:1524", "PIR Program Running on Place(gpu:%d), %d Ops, Prepared in %d us."
                         % (gpu, rng.randrange(200, 4000), rng.randrange(50, 900)))),
        (7, lambda: glog("I", "nccl_comm_context.cc:94", "Send tensor numel=%d to peer %d on ring_id %d"
                         % (rng.choice((4194304, 8388608, 2097152)), peer_next, rng.randrange(1, 5)))),
        (7, lambda: glog("I", "nccl_comm_context.cc:111", "Recv tensor numel=%d from peer %d on ring_id %d"
                         % (rng.choice((4194304, 8388608, 2097152)), peer_prev, rng.randrange(1, 5)))),
        (6, lambda: glog("I", "stream_safe_cuda_allocator.cc:289", "Free %d bytes, current reserved %.2f GB"
                         % (rng.randrange(1, 64) << 20, rng.uniform(6.0, 31.0)))),
        (6, lambda: glog("I", "auto_growth_best_fit_allocator.cc:166",
                         "Pool Allocator: Place(gpu:%d) Allocate %d Bytes, Pool Size %d, Peak %d, Pinned P%d"
                         % (gpu, rng.randrange(1, 1 << 26), rng.randrange(1 << 30, 1 << 34),
                            rng.randrange(1 << 30, 1 << 34), stage))),
        (6, lambda: glog("I", "operator.cc:%d" % rng.choice((1002, 2048, 2312)),
                         "Place(gpu:%d) Op(%s), Inputs:{X[%s]}, Outputs:{Out[%s]}."
                         % (gpu, rng.choice(OPS), tensors(rng.randrange(1, 6)), tensors(rng.randrange(1, 4))))),
        (4, lambda: glog("I", "comm_context_manager.cc:87",
                         "Create PPNCCL Comm Context: Ring %d, Peers [P%d, P%d], Place(gpu:%d), Pipeline Parallel Group %d"
                         % (rng.randrange(1, 9), peer_prev, peer_next, gpu, replica))),
        (3, lambda: glog("I", "process_group_nccl.cc:%d" % rng.choice((129, 513, 767)),
                         "ProcessGroupNCCL Pipeline P2P %s Peer P%d Payload Prepared" % (rng.choice(("Send", "Recv")), peer_next))),
        (3, lambda: glog("I", "pipeline_scheduler_pass.cc:88", "Pipeline Plan: %d Programs, %s Pass Prepared" %
                         (rng.randrange(3, 9), rng.choice(("FThenB", "1F1B", "Eager1F1B", "VPP"))))),
        (2, lambda: glog("I", "interpreter_util.cc:651", "Standalone Executor is Used.")),
        (5, lambda: glog("I", "profiler.cc:%d" % rng.choice((88, 143, 201)),
                         "Profiler Init: Place(gpu:%d), Pipeline Tracer Prepared, %d Ops Profiled"
                         % (gpu, rng.randrange(100, 5000)))),
        (3, lambda: glog("I", "event_python.cc:%d" % rng.randrange(40, 90),
                         "[Profiler] Job %d of Pipeline Stage P%d Recorded: %d Events"
                         % (rng.randrange(0, 40), stage, rng.randrange(10, 900)))),
        (4, lambda: glog("W", "dygraph_functions.cc:52427",
                         "got different data type, run type promotion automatically, this may cause data type been changed.")),
        (2, lambda: glog("W", "amp_auto_cast.cc:%d" % rng.choice((203, 318)),
                         "Paddle AMP: Op(%s) Promoted to FP32 in Pipeline Stage P%d (Place(gpu:%d))"
                         % (rng.choice(OPS), stage, gpu))),
        (2, lambda: glog("W", "gpu_resources.cc:164", "device: %d, cuDNN Version: 8.9." % gpu)),
        (1, lambda: glog("E", "nccl_tools.cc:62",
                         "PPNCCL Pending P2P Op with Peer P%d Passed %d ms; Pipeline Progress Polled, Proceeding"
                         % (peer_next, rng.randrange(100, 3000)))),
        (1, lambda: glog("E", "collective_helper.cc:%d" % rng.randrange(90, 400), "Peer P%d Paused" % peer_prev)),
        (2, lambda: glog("I", "executor_statistics.cc:%d" % rng.randrange(500, 700),
                         "Paddle Profiler Summary Pending: Place(gpu:%d) Pipeline Phase %s"
                         % (gpu, rng.choice(("Prepare", "Process", "Post"))))),
        (6, lambda: (PYLOG, "", "[    INFO] - loss: %.8f, learning_rate: %.3e, global_step: %d, current_memory_allocated: "
                     "%.4f GB, current_memory_reserved: %.4f GB, max_memory_allocated: %.4f GB, interval_runtime: "
                     "%.4f, interval_samples_per_second: %.4f, interval_tokens_per_second_per_device: %.4f, "
                     "interval_steps_per_second: %.4f, progress_or_epoch: %.4f\n"
                     % (rng.uniform(2.0, 9.0), rng.uniform(1e-5, 3e-4), rng.randrange(1, 90000),
                        rng.uniform(8, 30), rng.uniform(20, 40), rng.uniform(20, 40), rng.uniform(0.5, 5),
                        rng.uniform(5, 60), rng.uniform(500, 4000), rng.uniform(0.2, 2), rng.uniform(0, 3)))),
        (3, lambda: (PYLOG, "", "[    INFO] - Pipeline Parallel Peak Memory P%d: %.2f GB, Params %d, Place(gpu:%d)\n"
                     % (stage, rng.uniform(8, 60), rng.randrange(10 ** 8, 10 ** 10), gpu))),
        (1, lambda: (PYLOG, "", "[ WARNING] - Pipeline Profiler Paused: Prefetch Pending on P%d\n" % peer_prev)),
        (2, lambda: (PYLOG, "", "[    INFO] - ProfilerInfo(Pipeline P%d): Step %d, Peak %d MB\n"
                     % (stage, rng.randrange(1, 90000), rng.randrange(8000, 70000)))),
        (5, lambda: (PLAIN, "", host + "Channel %02d/%d : %s\n"
                     % (rng.randrange(0, 32), 32, " ".join("%3d" % i for i in range(rng.choice((2, 4, 8, 16))))))),
        (3, lambda: (PLAIN, "", host + "Channel %02d/1 : %d[%d] -> %d[%d] via P2P/IPC/read\n"
                     % (rng.randrange(0, 4), stage, gpu, peer_next, (gpu + 1) % 8))),
        (2, lambda: (PLAIN, "", host + "P2P Chunksize set to %d\n" % rng.choice((131072, 524288)))),
        (3, lambda: (PLAIN, "", "/usr/local/lib/python3.10/dist-packages/%s:%d: UserWarning: Pipeline P2P Partial "
                     "Send/Recv Padding is Disabled; Peer Payload Passed as a Plain Tensor (P%d -> P%d).\n  warnings.warn(\n"
                     % (rng.choice(PY_PATHS), rng.randrange(100, 2000), stage, peer_next))),
        (1, lambda: (PLAIN, "", "Traceback (most recent call last):\n"
                     "  File \"/usr/local/lib/python3.10/dist-packages/paddle/io/dataloader/worker.py\", line %d, in _worker_loop\n"
                     "    batch = fetcher.fetch(indices)\n"
                     "  File \"/usr/local/lib/python3.10/dist-packages/paddlenlp/data/causal_dataset.py\", line %d, in __getitem__\n"
                     "    sample = self.indexed_dataset.get(doc_idx, offset=offset, length=length)\n"
                     "PermissionError: [Errno 13] Permission denied: '/data/Pile/pile_%02d_text_document.bin' (Prefetch Retried)\n"
                     % (rng.randrange(300, 400), rng.randrange(500, 700), rng.randrange(0, 30)))),
        (2, lambda: (PLAIN, "", rng.choice(("", "P", "-" * rng.randrange(10, 80), "  warnings.warn(",
                                            "Pipeline Paused.", "PP", "PPNCCL Ready")) + "\n")),
        (1, lambda: (PLAIN, "", "FLAGS(name='FLAGS_%s', current_value=%s, default_value=%s)\n"
                     % (rng.choice(("enable_pir_in_executor", "embedding_deterministic", "cudnn_deterministic",
                                    "pipeline_parallel_profiler", "allocator_strategy")),
                        rng.choice(("True", "1", "'auto_growth'")), rng.choice(("False", "0", "'naive_best_fit'"))))),
    ]
    weights = [w for w, _ in makers]
    chosen = rng.choices(range(len(makers)), weights=weights, k=size)
    pool = [makers[i][1]() for i in chosen]
    for entry in pool:
        assert "Profiler Info" not in entry[2] and "Schedule Profiler" not in entry[2], entry
    return pool


def banner(rank, stage, replica, stages, replicas, micro_batches, tid, first_step, t_ns, clock):
    sec, sub = divmod(t_ns, 1_000_000_000)
    py = "[%s,%03d]" % (clock.py(sec), sub // 1_000_000)
    g = "%s.%06d %d" % (clock.glog(sec), sub // 1000, tid)
    nccl = "pp-node0:%d:%d [%d] NCCL INFO " % (tid, tid + 173 + rank % 8, rank % 8)
    return "".join((
        "LAUNCH INFO %s Run Pod: pp%dxdp%d, Job: pretrain, Rank %d\n" % (py[1:-1], stages, replicas, rank),
        "======================= Modified FLAGS detected =======================\n",
        "FLAGS(name='FLAGS_enable_pir_in_executor', current_value=True, default_value=False)\n",
        "=======================================================================\n",
        "I%s tcp_utils.cc:181] The server starts to listen on IP_ANY:%d\n" % (g, 44311 + rank),
        "W%s gpu_resources.cc:119] Please NOTE: device: %d, GPU Compute Capability: 9.0, Driver API Version: 12.4, "
        "Runtime API Version: 12.3\n" % (g, rank % 8),
        "%s [    INFO] - Pipeline parallel degree = %d, data parallel degree = %d, stage P%d of replica %d\n"
        % (py, stages, replicas, stage, replica),
        "%s [    INFO] - Gradient Accumulation steps = %d\n" % (py, micro_batches),
        "%sBootstrap : Using eth0:10.10.0.1<0>\n" % nccl,
        "%scudaDriverVersion 12040\n" % nccl,
        "%scomm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %x commId 0x%x - Init COMPLETE\n"
        % (nccl, 0x55d0c8f00000 + rank * 0x1000, rank, stages * replicas, rank % 8, rank % 8, 0x18000 + rank * 0x10000,
           0x9e3779b97f4a7c15 ^ rank),
        "I%s interpreter_util.cc:651] Standalone Executor is Used.\n" % g,
        "%s [    INFO] - Schedule Profiler start at step %d\n" % (py, first_step),
    ))


JOB_FORMAT = ("I%s.%06d %d standalone_executor.cc:217] Profiler Info: Job (%d), type = %s, micro_batch_id = %d, "
              "job_start_time = %d.%06d, job_end_time = %d.%06d\n")
EVENTS_FORMAT = "I%s.%06d %d profiler.cc:117] Profiler Info: cuda events collected = %d\n"


class RankWriter:
    """One rank's workerlog: lines buffered and written in large blocks."""

    def __init__(self, path, tid, pool, rng, noise_per_job, clock):
        self.file = open(path, "w", encoding="ascii", newline="\n")
        self.tid = tid
        self.pool = pool
        self.rng = rng
        self.noise_per_job = noise_per_job
        self.clock = clock
        self.parts = []
        self.buffered = 0
        self.bytes = 0
        self.lines = 0
        self.profiler_info_lines = 0
        self.last_ns = 0

    def add(self, text):
        self.parts.append(text)
        self.buffered += len(text)
        if self.buffered >= FLUSH_BYTES:
            self.flush()

    def flush(self):
        if self.parts:
            block = "".join(self.parts)
            self.file.write(block)
            self.bytes += len(block)
            self.lines += block.count("\n")
            self.parts = []
            self.buffered = 0

    def close(self):
        self.flush()
        self.file.close()

    def step(self, jobs):
        """jobs: [(type, mb, start, end)] of one step, in the device's order."""
        glog = self.clock.glog
        py = self.clock.py
        parts = []
        last_end = jobs[-1][3]
        if self.noise_per_job:
            # The step's other output, stamped across the step.
            begin = max(self.last_ns, jobs[0][2])
            count = self.noise_per_job * len(jobs) - 1
            count += self.rng.randrange(-len(jobs), len(jobs) + 1)
            step_ns = max(1, (last_end - begin) // max(1, count))
            pool = self.pool
            bits = self.rng.getrandbits
            t = begin
            made = 0
            while made < count:
                kind, severity, text = pool[bits(13)]
                t += step_ns
                sec, sub = divmod(t, 1_000_000_000)
                if kind == GLOG:
                    parts.append("%s%s.%06d%s" % (severity, glog(sec), sub // 1000, text))
                    made += 1
                elif kind == PYLOG:
                    parts.append("[%s,%03d] %s" % (py(sec), sub // 1_000_000, text))
                    made += 1
                else:
                    parts.append(text)
                    made += text.count("\n")
        # The profiler's output once the step ran.
        t = max(last_end, self.last_ns) + 150_000 + self.rng.getrandbits(19)
        sec, sub = divmod(t, 1_000_000_000)
        parts.append(EVENTS_FORMAT % (glog(sec), sub // 1000, self.tid, 20 + self.rng.getrandbits(6)))
        tid = self.tid
        for index, (job_type, mb, start, end) in enumerate(jobs):
            t += 3_000 + (index & 3) * 1_000
            if t < end:
                t = end + 1_000
            sec, sub = divmod(t, 1_000_000_000)
            s_ms, s_frac = divmod(start, 1_000_000)
            e_ms, e_frac = divmod(end, 1_000_000)
            parts.append(JOB_FORMAT % (glog(sec), sub // 1000, tid, index, job_type, mb, s_ms, s_frac, e_ms, e_frac))
        self.last_ns = t
        self.profiler_info_lines += 1 + len(jobs)
        self.add("".join(parts))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("-o", "--out", required=True, help="folder to write (workerlog.N, expected.json)")
    parser.add_argument("--shape", choices=("sparse", "dense"), default="sparse")
    parser.add_argument("--target-bytes", type=parse_size, default=parse_size("64M"),
                        help="write steps until the folder holds this many bytes (K/M/G; default 64M)")
    parser.add_argument("--steps", type=int, help="exactly this many steps (instead of --target-bytes)")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--order", choices=("dp,pp", "pp,dp"), default="dp,pp",
                        help="rank order of the mesh, outermost axis first (default: Paddle fleet's dp,pp)")
    parser.add_argument("--micro-batches", type=int, default=8)
    parser.add_argument("--noise-per-job", type=int, default=49,
                        help="noise lines per job line of the sparse shape (default 49: 1 job line in 50)")
    parser.add_argument("--first-step", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--force", action="store_true", help="replace the logs of a folder that has some")
    args = parser.parse_args(argv)

    if args.stages < 1 or args.ranks < args.stages or args.ranks % args.stages:
        parser.error("--ranks must be a multiple of --stages")
    if args.micro_batches < 1:
        parser.error("--micro-batches must be at least 1")
    if args.steps is not None and args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.noise_per_job < 1 and args.shape == "sparse":
        parser.error("--noise-per-job must be at least 1 for the sparse shape")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    existing = [p for p in out.iterdir()]
    if existing:
        if not args.force:
            parser.error(f"{out} is not empty (--force replaces its workerlog.* and expected.json)")
        for p in existing:
            if p.name.startswith("workerlog.") or p.name == "expected.json":
                p.unlink()

    began = time.monotonic()
    stages, ranks = args.stages, args.ranks
    replicas = ranks // stages
    rng = random.Random(args.seed)
    pipeline = Pipeline(rng, stages, replicas, args.micro_batches)

    def rank_of(replica, stage):
        return replica * stages + stage if args.order == "dp,pp" else stage * replicas + replica

    clock = Clock()
    noise = args.noise_per_job if args.shape == "sparse" else 0
    writers = {}
    placement = {}
    for replica in range(replicas):
        for stage in range(stages):
            rank = rank_of(replica, stage)
            tid = 22317 + 6 * rank
            placement[rank] = (stage, replica)
            pool = noise_pool(random.Random(args.seed * 1000 + rank), rank, stage, replica, stages, replicas,
                              tid) if noise else None
            writers[rank] = RankWriter(out / f"workerlog.{rank}", tid, pool,
                                       random.Random(args.seed * 7919 + rank), noise, clock)
            started = BASE_NS + rank * 50_000
            writers[rank].add(banner(rank, stage, replica, stages, replicas, args.micro_batches, tid,
                                     args.first_step, started, clock))
            writers[rank].last_ns = started
    for writer in writers.values():
        writer.flush()

    ordered = sorted(writers)
    run = ContractSums(ordered, True)
    replica_sums = [ContractSums([rank_of(r, s) for s in range(stages)], False) for r in range(replicas)]
    jobs_by_type = {rank: {t: 0 for t in TYPES} for rank in ordered}
    steps = 0
    while True:
        result = pipeline.step()
        step_jobs = {}
        for replica in range(replicas):
            for stage in range(stages):
                rank = rank_of(replica, stage)
                jobs = result[replica][stage]
                writers[rank].step(jobs)
                counts = jobs_by_type[rank]
                for job in jobs:
                    counts[job[0]] += 1
                step_jobs[rank] = [(j[2], j[3]) for j in jobs]
        run.add(step_jobs)
        for sums in replica_sums:
            sums.add({d: step_jobs[d] for d in sums.devices})
        steps += 1
        if args.steps is not None:
            if steps == args.steps:
                break
        elif sum(w.bytes + w.buffered for w in writers.values()) >= args.target_bytes:
            break
    run.finish()
    for sums in replica_sums:
        sums.finish()
    for writer in writers.values():
        writer.close()
        seconds = time.monotonic() - began

    total_bytes = sum(w.bytes for w in writers.values())
    per_rank = []
    for rank in ordered:
        w = writers[rank]
        stage, replica = placement[rank]
        per_rank.append({
            "rank": rank, "path": f"workerlog.{rank}", "stage": stage, "replica": replica,
            "jobs": sum(jobs_by_type[rank].values()), "jobs_by_type": jobs_by_type[rank],
            "steps": steps, "lines": w.lines, "bytes": w.bytes, "profiler_info_lines": w.profiler_info_lines,
            "busy_ns": run.busy[rank], "idle_ns": run.idle[rank],
        })
    expected = {
        "generator": "bench/other_logs.py",
        "shape": args.shape,
        "seed": args.seed,
        "ranks": ranks, "pp": stages, "dp": replicas, "order": args.order,
        "micro_batches": args.micro_batches,
        "noise_per_job": noise,
        "schedule": "1F1B",
        "bytes": total_bytes,
        "jobs": sum(r["jobs"] for r in per_rank),
        "job_types": {t: sum(jobs_by_type[r][t] for r in ordered) for t in TYPES},
        "profiler_info_lines": sum(r["profiler_info_lines"] for r in per_rank),
        "first_step": args.first_step,
        "steps": steps,
        "incomplete_steps": 0,
        "total_window_ns": run.total_window,
        "bubble_ratio": run.bubble_ratio(),
        "devices": per_rank,
        "replicas": [{"replica": r, "devices": sums.devices, "total_window_ns": sums.total_window,
                      "bubble_ratio": sums.bubble_ratio()} for r, sums in enumerate(replica_sums)],
    }
    if run.detail is not None:
        expected["step_windows"] = [
            {"step": args.first_step + k, "start_ns": s, "end_ns": e,
             "busy_ns": [row[d] for d in ordered]}
            for k, (s, e, row) in enumerate(run.detail)]
    with open(out / "expected.json", "w", encoding="ascii") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print("%s: %d ranks, %d steps, %d jobs, %d bytes in %.1f s (%.0f MB/s), bubble ratio %.4f"
          % (out, ranks, steps, expected["jobs"], total_bytes, seconds, total_bytes / 1e6 / max(seconds, 1e-9),
             expected["bubble_ratio"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
