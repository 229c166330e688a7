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
python_max=${PYTHON_MAX_MIB:-1024}
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

# Wall and CPU (user + sys) seconds: on a shared machine the CPU time is the steadier figure.
printf '%-6s %-22s %-9s %-6s %-22s %-14s %s\n' "MiB" "pipescope wall/cpu" "GB/s" "jobs" \
  "json.load wall/cpu" "ratio wall/cpu" "peak RssAnon"
for mib in "${sizes[@]}"; do
  trace=$work/big.pt.trace.json
  make_trace "$mib" "$trace"
  bytes=$(stat -c %s "$trace")
  cat "$trace" > /dev/null  # both readers start from the page cache
  args=(analyze "$trace" -o "$work/out" -q --no-trace --job-pattern '## (?P<op>forward|backward) ##')
  /usr/bin/time -f "%e %U %S" -o "$work/ps.time" "$pipescope" "${args[@]}"
  read -r ps_wall ps_user ps_sys < "$work/ps.time"
  ps_cpu=$(python3 -c "print(f'{$ps_user + $ps_sys:.2f}')")
  mem=$(bash "$here/bench/peak_memory.sh" "$work/out" "$pipescope" "${args[@]}")
  jobs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['jobs'])" "$work/out/summary.json")
  anon=$(grep -o 'peak RssAnon [0-9.]* MiB' <<< "$mem" | grep -o '[0-9.]* MiB')
  gbs=$(python3 -c "print(f'{$bytes / $ps_wall / 1e9:.2f}')")
  if [ "$mib" -le "$python_max" ]; then
    /usr/bin/time -f "%e %U %S" -o "$work/py.time" \
      python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$trace"
    read -r py_wall py_user py_sys < "$work/py.time"
    py_cpu=$(python3 -c "print(f'{$py_user + $py_sys:.2f}')")
    py="${py_wall}/${py_cpu}s"
    ratio=$(python3 -c "print(f'{$py_wall / $ps_wall:.1f}x/{$py_cpu / $ps_cpu:.1f}x')")
  else
    py="-"; ratio="-"
  fi
  printf '%-6s %-22s %-9s %-6s %-22s %-14s %s\n' "$mib" "${ps_wall}/${ps_cpu}s" "$gbs" "$jobs" \
    "$py" "$ratio" "$anon"
  rm -f "$trace"
done
