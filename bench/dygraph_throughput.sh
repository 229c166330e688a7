#!/usr/bin/env bash
# Paddle dygraph records: `pipescope analyze --no-trace` against Python's json
# parsing of the same files (json.loads per line, the way Paddle's helper and
# Python tools read them), both from the page cache, median of REPS, ratio
# measured in this one run.
#   bash bench/dygraph_throughput.sh [STEPS] [REPS]     (STEPS=2000: ~190 MB)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pipescope=${PIPESCOPE:-$here/build/cli/pipescope}
steps=${1:-2000}
reps=${2:-3}
dir=${TMPDIR:-/tmp}/pipescope-dygraph-bench
rm -rf "$dir"
"$pipescope" simulate --format paddle-dygraph -o "$dir/recs" --schedule vpp --stages 8 \
  --micro-batches 16 --steps "$steps" --force >/dev/null
bytes=$(cat "$dir"/recs/profile_record_tmp_file_for_rank_* | wc -c)
cat "$dir"/recs/profile_record_tmp_file_for_rank_* >/dev/null  # warm the cache
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() {
  for _ in $(seq "$reps"); do
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
  done | median
}
ps_s=$(time_of "$pipescope" analyze "$dir/recs" -o "$dir/out" --no-trace -q)
py_s=$(time_of python3 -c '
import glob, json, sys
n = 0
for path in glob.glob(sys.argv[1] + "/profile_record_tmp_file_for_rank_*"):
    with open(path) as f:
        for line in f:
            json.loads(line); n += 1
' "$dir/recs")
printf '%-34s %10s %9s %9s\n' input command median_s GB/s
printf '%-34s %10s %9.3f %9.2f\n' "dygraph records $((bytes / 1000000)) MB" "analyze" "$ps_s" \
  "$(echo "$bytes / $ps_s / 1000000000" | bc -l)"
printf '%-34s %10s %9.3f %9.2f\n' "dygraph records $((bytes / 1000000)) MB" "python json" "$py_s" \
  "$(echo "$bytes / $py_s / 1000000000" | bc -l)"
printf 'analyze --no-trace is %.1fx faster than json.loads per line\n' "$(echo "$py_s / $ps_s" | bc -l)"
