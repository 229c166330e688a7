#!/usr/bin/env bash
# The kernel view's reading of a trace whose activities are not in time
# order: one rank's PyTorch profiler trace of a labelled 1F1B run (1,920
# jobs of 120 kernels on two compute streams), each job's host span followed
# by its launches and its first stream's kernels, the second stream's kernels
# of the whole step after the step's jobs (Kineto writes per buffer and
# stream, not in global time order: that buffer goes back a whole step in
# time), and each step's ProfilerStep#N span after its jobs (the host spans
# among the kernels make the reader hold the kernels it joined to their
# launches and place them in their spans at the end of the file, instead of
# placing them chunk by chunk). Then, on the same file from the page cache:
# `pipescope analyze --no-trace -q` and Python's json.load, as
# bench/trace_reading.sh times them. Quadratic merging read 48 MB in 4.8 s on
# 2 cores; the goal is the in-order rate (at most 65 ms wall for 48 MB).
#
#   bash bench/kernel_order.sh [PIPESCOPE] [SIZE_MIB...]     (default: build/cli/pipescope 48)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pipescope=${1:-$here/build/cli/pipescope}
shift || true
sizes=("${@:-48}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_trace() {  # make_trace MIB FILE: jobs until the file holds MIB MiB
  python3 - "$1" "$2" <<'PY'
import sys
mib, out = int(sys.argv[1]), sys.argv[2]
limit = mib << 20
KERNELS, MICRO = 120, 60  # per job; micro-batches per step (120 jobs a step)
def ev(cat, name, ts_ns, dur_ns, args, tid=7, pid=1):
    return ('{"ph": "X", "cat": "%s", "name": "%s", "pid": %d, "tid": %d, "ts": %d.%03d, '
            '"dur": %d.%03d, "args": {%s}}' % (cat, name, pid, tid, ts_ns // 1000, ts_ns % 1000,
                                               dur_ns // 1000, dur_ns % 1000, args))
with open(out, "w") as f:
    f.write('{"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 4}, '
            '"traceEvents": [\n')
    size, first, t, corr, step, job = 0, True, 1_000_000, 1, 0, 0
    def put(line):
        global size, first
        f.write(("" if first else ",\n") + line)
        size += len(line) + 2
        first = False
    while size < limit:
        jobs = [("F", m) for m in range(MICRO)] + [("B", m) for m in range(MICRO)]
        step_start = t
        late_stream = []  # the second stream's buffer, written after the step's jobs
        blocks = []
        for kind, mb in jobs:
            host = t
            gpu = t + 40_000
            events = [ev("user_annotation", "PP:0%s%d" % (kind, mb), host, 30_000,
                         '"External id": %d' % corr)]
            launches, streams = [], {13: [], 21: []}
            for k in range(KERNELS):
                stream = 13 if k % 2 == 0 else 21
                start = gpu + k * 3_000
                launches.append(ev("cuda_runtime", "cudaLaunchKernel", host + 100 + k * 200, 150,
                                   '"correlation": %d, "External id": %d' % (corr + 1 + k, corr)))
                streams[stream].append(ev("kernel", "sm90_xmma_gemm_%d" % k, start, 4_000,
                                          '"correlation": %d, "stream": %d' % (corr + 1 + k, stream),
                                          tid=stream, pid=0))
            for line in events + launches + streams[13]:
                put(line)
            late_stream.extend(streams[21])
            corr += KERNELS + 1
            t = gpu + KERNELS * 3_000 + 10_000
            job += 1
        for line in late_stream:
            put(line)
        put(ev("user_annotation", "ProfilerStep#%d" % step, step_start - 1_000,
               t - step_start + 2_000, '"External id": %d' % corr))
        corr += 1
        step += 1
    f.write('\n], "baseTimeNanoseconds": 1700000000000000000}\n')
PY
}

. "$here/bench/trace_reading.sh"
measure_trace_reading kernels "['kernel_view']['gpu_activities']"
