#!/usr/bin/env bash
# Nsight Systems exports' row of the benchmark table: `pipescope simulate
# --format nsys` writes a Megatron-style 1F1B run (P = 2, 16 micro-batches,
# KERNELS compute kernels per forward or backward, NCCL send/recv kernels,
# `PP:` NVTX ranges per job) as one export per rank, about SIZE MiB in all;
# then, on the same files from the page cache:
#  - `pipescope analyze --no-trace -q` (wall and CPU time, peak RssAnon sampled
#    every 10 ms as bench/peak_memory.sh does), its figures checked against
#    the simulator's expected.json (jobs and kernel view, to the ns);
#  - the sqlite3 shell running the reader's own SELECTs (the same columns of
#    the same tables: activities, runtime launches, NVTX events joined to
#    their strings, StringIds, metadata) into /dev/null, the exports one
#    after the other (CPU) and side by side (wall, as the reader reads them);
#  - the memory budget 64 MiB + 32 B per compute activity + 160 B per NCCL
#    kernel.
#
#   bash bench/nsys_export.sh [PIPESCOPE] [SIZE_MIB] [KERNELS]   (default: build/cli/pipescope 1024 100)
#   KEEP=DIR: write (or reuse) the exports in DIR instead of a temporary folder.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pipescope=${1:-$here/build/cli/pipescope}
mib=${2:-1024}
kernels=${3:-100}
if [ -n "${KEEP:-}" ]; then
  work=$KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
run=$work/run

# About 170 bytes of export per kernel (one kernel row, one runtime
# row, their share of the ranges) on each of the two ranks.
steps=$(( (mib << 20) / (2 * 2 * 16 * kernels * 84) + 1 ))
if [ ! -f "$run/expected.json" ]; then
  /usr/bin/time -f "simulate: %e s wall" "$pipescope" simulate --format nsys -o "$run" --force \
    --schedule 1f1b --stages 2 --micro-batches 16 --kernels-per-job "$kernels" --steps "$steps"
fi
bytes=$(cat "$run"/*.sqlite | wc -c)

# The reader's queries (engine/ingest/nsys_export.cc), those the tables of
# these exports answer.
queries="SELECT name, value FROM META_DATA_EXPORT;
SELECT utcEpochNs, systemClockNs FROM TARGET_INFO_SESSION_START_TIME;
SELECT globalVid, name, value FROM TARGET_INFO_SYSTEM_ENV;
SELECT name, value FROM META_DATA_CAPTURE;
SELECT domainId, schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS;
SELECT domainId, schemaId, idx, \"type\", name, \"offset\" FROM NVTX_PAYLOAD_SCHEMA_ENTRIES;
SELECT domainId, text FROM NVTX_EVENTS WHERE eventType = 75;
SELECT e.rowid, e.start, e.end, e.text, s.value, e.globalTid, e.domainId, e.binaryData FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId WHERE e.eventType IN (59, 60) AND e.end IS NOT NULL;
SELECT start, eventClass, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT id, value FROM StringIds WHERE substr(value, 1, 4) = 'nccl';
SELECT rowid, start, end, deviceId, correlationId, globalPid, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL;"

cat "$run"/*.sqlite > /dev/null  # the page cache
seconds() { python3 -c "import time; print(time.monotonic())"; }

# sqlite3, one export after the other: its CPU time (user + sys).
t0=$(seconds)
for f in "$run"/*.sqlite; do
  sqlite3 "$f" "$queries" > /dev/null
done
t1=$(seconds)
serial=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
# Side by side, as the reader reads them (one thread per export).
t0=$(seconds)
for f in "$run"/*.sqlite; do
  sqlite3 "$f" "$queries" > /dev/null &
done
wait
t1=$(seconds)
parallel=$(python3 -c "print(f'{$t1 - $t0:.2f}')")

# pipescope, with its peak anonymous memory.
out=$work/out
rm -rf "$out"
t0=$(seconds)
/usr/bin/time -f "%U %S" -o "$work/cpu" "$pipescope" analyze "$run" -o "$out" --no-trace -q &
pid=$!
peak=0
while kill -0 "$pid" 2> /dev/null; do
  inner=$(pgrep -P "$pid" || true)
  for p in $pid $inner; do
    anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$p/status" 2> /dev/null || echo 0)
    [ -n "$anon" ] && [ "$anon" -gt "$peak" ] && peak=$anon
  done
  sleep 0.01
done
wait "$pid"
t1=$(seconds)
wall=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
cpu=$(awk '{printf "%.2f", $1 + $2}' "$work/cpu")

python3 - "$run" "$out" "$bytes" "$wall" "$cpu" "$serial" "$parallel" "$peak" <<'PY'
import json, sys
run, out, size, wall, cpu, serial, parallel, peak_kb = sys.argv[1:]
size, wall, cpu, serial, parallel = int(size), float(wall), float(cpu), float(serial), float(parallel)
summary = json.load(open(f"{out}/summary.json"))
expected = json.load(open(f"{run}/expected.json"))
kv, ekv = summary["kernel_view"], expected["kernel_view"]
agree = all(kv[k] == ekv[k] for k in ("window_ns", "compute_ns", "transfer_ns", "wait_ns", "idle_ns",
                                      "gpu_activities", "comm_kernels")) and \
    summary["total_window_ns"] == expected["summary"]["total_window_ns"] and \
    [d["busy_ns"] for d in summary["devices"]] == [d["busy_ns"] for d in expected["summary"]["devices"]]
comm = kv["comm_kernels"]
compute = kv["gpu_activities"] - comm
peak = int(peak_kb) * 1024
budget = 64 * 2**20 + 32 * compute + 160 * comm
print(f"{size / 2**20:.0f} MiB in 2 exports: {kv['gpu_activities']} GPU activities ({comm} NCCL), "
      f"{summary['jobs']} jobs; figures equal to expected.json: {'yes' if agree else 'NO'}")
print(f"pipescope analyze: {wall:.2f} s wall, {cpu:.2f} s CPU ({size / wall / 1e9:.2f} GB/s)")
print(f"sqlite3 shell, same SELECTs: {serial:.2f} s one export after the other, "
      f"{parallel:.2f} s side by side")
print(f"ratio: {wall / parallel:.2f}x wall (side by side), {cpu / serial:.2f}x CPU (target <= 1.5x)")
print(f"peak RssAnon {peak / 2**20:.1f} MiB; budget 64 MiB + 32 B x {compute} + 160 B x {comm} = "
      f"{budget / 2**20:.1f} MiB: {'within' if peak <= budget else 'OVER'} "
      f"({(peak - 64 * 2**20) / max(1, kv['gpu_activities']):.1f} B per activity above 64 MiB)")
PY
