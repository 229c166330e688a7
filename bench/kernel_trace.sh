#!/usr/bin/env bash
# The kernel view's rows of the benchmark table: one rank's PyTorch profiler
# trace of a Megatron-style run without labels (tests/reference/kernel_run.py:
# 1F1B, P=2, 120 kernels per forward or backward, NCCL send/recv kernels),
# its steps repeated (shifted in time, renumbered, new correlation ids) up to
# SIZE MiB in Kineto's order (every CPU event, then the runtime calls and GPU
# activities interleaved in time order, not sorted by kind), then, on the same
# file from the page cache: `pipescope analyze --no-trace -q` (wall and CPU
# time, GB/s, peak RssAnon by bench/peak_memory.sh, the GPU activities read)
# and Python's json.load of it, with the ratio.
#
#   bash bench/kernel_trace.sh [PIPESCOPE] [SIZE_MIB...]     (default: build/cli/pipescope 1024)
#   PYTHON_MAX_MIB=1024: json.load is skipped above this size (it needs ~8x the file in memory)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pipescope=${1:-$here/build/cli/pipescope}
shift || true
sizes=("${@:-1024}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 "$here/tests/reference/kernel_run.py" -o "$work/run" --pp 2 --dp 1 --micro-batches 8 \
  --steps 4 --schedule 1f1b --kernels-per-op 120 > /dev/null

make_trace() {  # make_trace MIB FILE
  python3 - "$work/run/rank0.pt.trace.json" "$1" "$2" <<'PY'
import json, re, sys
src, mib, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
doc = json.load(open(src))
events = doc.pop("traceEvents")
base = doc.pop("baseTimeNanoseconds", None)
timed = [e for e in events if "ts" in e and e.get("ph") == "X"]
span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - min(float(e["ts"]) for e in timed)
steps = len({e["name"] for e in timed if e["name"].startswith("ProfilerStep#")})
cpu = [e for e in timed if e.get("cat") in ("cpu_op", "user_annotation", "python_function")]
gpu = [e for e in timed if e.get("cat") not in ("cpu_op", "user_annotation", "python_function")]
meta = [e for e in events if e.get("ph") != "X"]
per_copy = sum(len(json.dumps(e)) + 2 for e in timed)
copies = max(1, -(-(mib << 20) // per_copy))
shift_us = int(span) + 1000
def shifted(e, r):
    e = dict(e)
    e["ts"] = f"{float(e['ts']) + r * shift_us:.3f}"
    name = e.get("name", "")
    if name.startswith("ProfilerStep#"):
        e["name"] = f"ProfilerStep#{int(name[13:]) + r * steps}"
    args = e.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for k in ("correlation", "External id"):
            if isinstance(args.get(k), int):
                args[k] += r * 100_000_000
        e["args"] = args
    return e
NUM = re.compile(r'"ts": "(-?[0-9]+\.[0-9]{3})"')
with open(out, "w") as f:
    f.write('{"schemaVersion": 1, "distributedInfo": ' + json.dumps(doc.get("distributedInfo")) +
            ', "traceEvents": [\n')
    first = True
    for section in (cpu, gpu):
        for r in range(copies):
            for e in section:
                f.write(("" if first else ",\n") + NUM.sub(r'"ts": \1', json.dumps(shifted(e, r))))
                first = False
    for e in meta:
        f.write(",\n" + json.dumps(e))
    f.write("\n]" + (f', "baseTimeNanoseconds": {base}' if base is not None else "") + "}\n")
PY
}

. "$here/bench/trace_reading.sh"
measure_trace_reading kernels "['kernel_view']['gpu_activities']"
