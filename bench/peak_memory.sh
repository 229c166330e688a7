#!/usr/bin/env bash
# Peak memory of one pipescope command, as the issue defines it: anonymous
# memory (RssAnon: heap, job vectors, buffers), not the file pages of the
# binary and its libraries. The kernel keeps only the peak of the total RSS
# (VmHWM), so RssAnon is sampled every 10 ms while the command runs; both
# are printed, with the job count read from the summary it wrote.
#
#   bash bench/peak_memory.sh OUT_DIR pipescope analyze LOGS -o OUT_DIR --no-trace -q
#
# Prints: peak_rss_anon_mb  vm_hwm_mb  jobs  bytes_per_job_over_64mb  budget_mb
set -euo pipefail
out_dir=$1
shift
"$@" &
pid=$!
peak_anon=0
hwm=0
while kill -0 "$pid" 2> /dev/null; do
  if status=$(cat "/proc/$pid/status" 2> /dev/null); then
    anon=$(awk '/^RssAnon:/ {print $2}' <<< "$status")
    h=$(awk '/^VmHWM:/ {print $2}' <<< "$status")
    [ -n "$anon" ] && [ "$anon" -gt "$peak_anon" ] && peak_anon=$anon
    [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
  fi
  sleep 0.01
done
wait "$pid"
jobs=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(sum(i['matched'] for i in s['inputs']))" "$out_dir/summary.json")
python3 - "$peak_anon" "$hwm" "$jobs" <<'PY'
import sys
anon_kb, hwm_kb, jobs = (int(x) for x in sys.argv[1:])
anon = anon_kb * 1024
budget = 64 * 2**20 + 48 * jobs
per_job = (anon - 64 * 2**20) / jobs if jobs else float("nan")
print(f"peak RssAnon {anon / 2**20:.1f} MiB, VmHWM {hwm_kb / 1024:.1f} MiB, {jobs} jobs; "
      f"budget 64 MiB + 48 B/job = {budget / 2**20:.1f} MiB: "
      f"{'within' if anon <= budget else 'OVER'} ({per_job:.1f} B/job above 64 MiB)")
PY
