#!/usr/bin/env bash
# The JSON rows of the benchmark table: a PyTorch profiler trace made of the
# bundled ResNet trace's events (testdata/kineto/, 68,692 events, 15 MB)
# repeated, shifted in time, up to SIZE MiB in Kineto's order (all CPU events,
# then the runtime calls and GPU activities), then, in one run on the same
# file: `pipescope analyze --job-pattern '## (?P<op>forward|backward) ##'`
# (wall time, GB/s, peak RssAnon sampled by bench/peak_memory.sh) and
# Python's json.load of it (the way Python tools such as Holistic Trace
# Analysis start), with the ratio.
#
#   bash bench/trace_json.sh [PIPESCOPE] [SIZE_MIB...]     (default: build/cli/pipescope 1024)
#   PYTHON_MAX_MIB=1024: json.load is skipped above this size (it needs ~8x the file in memory)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pipescope=${1:-$here/build/cli/pipescope}
shift || true
sizes=("${@:-1024}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_trace() {  # make_trace MIB FILE
  python3 - "$here/testdata/kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz" "$1" "$2" <<'PY'
import gzip, json, sys
src, mib, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
doc = json.load(gzip.open(src))
events = doc.pop("traceEvents")
span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(e["ts"] for e in events if "ts" in e)
# Kineto's order: the CPU events of the whole window, then the runtime calls and
# GPU activities in time order. Copy r of the ResNet window is shifted by r spans,
# with its own correlation and External ids, and each section keeps that order.
cpu = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation", "fwdbwd", "python_function")]
gpu = [e for e in events if e.get("cat") not in ("cpu_op", "user_annotation", "fwdbwd", "python_function")]
per_copy = sum(len(json.dumps(e)) + 2 for e in events)
copies = max(1, -(-(mib << 20) // per_copy))
def shifted(e, r):
    if "ts" not in e:
        return e
    e = dict(e)
    e["ts"] = e["ts"] + r * (span + 1000)
    args = e.get("args")
    if isinstance(args, dict) and ("correlation" in args or "External id" in args):
        args = dict(args)
        for k in ("correlation", "External id"):
            if isinstance(args.get(k), int):
                args[k] += r * 10_000_000
        e["args"] = args
    return e
with open(out, "w") as f:
    f.write(json.dumps(doc)[:-1] + ', "traceEvents": [\n')
    first = True
    for section in (cpu, gpu):
        for r in range(copies):
            for e in section:
                f.write(("" if first else ",\n") + json.dumps(shifted(e, r)))
                first = False
    f.write("\n]}\n")
PY
}

. "$here/bench/trace_reading.sh"
measure_trace_reading jobs "['jobs']" --job-pattern '## (?P<op>forward|backward) ##'
