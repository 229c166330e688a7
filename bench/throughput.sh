#!/usr/bin/env bash
# End-to-end throughput: pipescope vs `rg -c 'Profiler Info'` on the same
# simulated log folders, from page cache, in one run, median of N repetitions.
#
#   bash bench/throughput.sh [SIZE] [REPS]     e.g. bash bench/throughput.sh 1G 5
#
# Also: one file of the folder with 1 and 2 threads (range splitting, ratio
# to rg on that file), the folder gzip-compressed (GB/s of decompressed
# text), the Perfetto trace, `grep -c` and, on a PYTHON_MB slice of one file (default 16 MB:
# it runs at about 1 MB/s), bench/paddle_baseline.py, the approach of
# PaddlePaddle's helper script; its ratio is computed from throughputs.
#
# Needs a Release build in build/ (bash scripts/dev.sh build) and ripgrep.
# Folders are generated once under ${BENCH_DIR:-/tmp/pipescope-bench}.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=${PIPESCOPE:-$here/build/cli/pipescope}
size=${1:-1G}
reps=${2:-5}
work=${BENCH_DIR:-/tmp/pipescope-bench}
command -v rg > /dev/null || { echo "ripgrep (rg) is needed: apt-get install ripgrep" >&2; exit 2; }
mkdir -p "$work"

# name, simulate options: sparse = 1 job line in 50 (realistic), dense = job lines only.
declare -A shapes=(
  [sparse]="--noise-per-job 49"
  [dense]="--noise-per-job 0"
)

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Seconds of wall time of one run of "$@", output discarded.
seconds() {
  local start end
  start=$(date +%s.%N)
  # Not /dev/null: GNU grep notices it and stops at the first match.
  "$@" > "$work/command.out" 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}

printf '%-7s %8s  %-28s %9s %9s %8s\n' shape size command median_s GB/s vs_rg
for shape in sparse dense; do
  dir=$work/$shape-$size
  if [ ! -f "$dir/expected.json" ]; then
    # shellcheck disable=SC2086
    "$cli" simulate -o "$dir" --force --stages 8 --micro-batches 16 --seed 7 \
      --target-bytes "$size" ${shapes[$shape]} > /dev/null
  fi
  bytes=$(cat "$dir"/workerlog.* | wc -c)
  cat "$dir"/workerlog.* > /dev/null  # into page cache
  declare -A times=()
  # One file of the folder (one rank): split into byte ranges across threads.
  single=$dir/workerlog.0
  single_bytes=$(wc -c < "$single")
  # The folder compressed (once): decompression runs one file per task.
  gz=$work/$shape-$size-gz
  if [ ! -f "$gz/workerlog.0.gz" ]; then
    mkdir -p "$gz"
    for f in "$dir"/workerlog.*; do gzip -1 -c "$f" > "$gz/$(basename "$f").gz"; done
  fi
  cat "$gz"/* > /dev/null
  for cmd in rg grep notrace trace notrace1 perfetto single1 single2 rgsingle gz; do
    samples=()
    for _ in $(seq "$reps"); do
      case $cmd in
        rg) samples+=("$(seconds rg -c 'Profiler Info' "$dir")") ;;
        grep) samples+=("$(seconds grep -c 'Profiler Info' -r "$dir")") ;;
        notrace) samples+=("$(seconds "$cli" analyze "$dir" -o "$work/out" --no-trace -q)") ;;
        notrace1) samples+=("$(seconds "$cli" analyze "$dir" -o "$work/out" --no-trace -q -j 1)") ;;
        trace) samples+=("$(seconds "$cli" analyze "$dir" -o "$work/out" -q)") ;;
        perfetto) samples+=("$(seconds "$cli" analyze "$dir" -o "$work/out" -q --no-trace --perfetto)") ;;
        single1) samples+=("$(seconds "$cli" analyze "$single" -o "$work/out" --no-trace -q -j 1)") ;;
        single2) samples+=("$(seconds "$cli" analyze "$single" -o "$work/out" --no-trace -q -j 2)") ;;
        rgsingle) samples+=("$(seconds rg -c 'Profiler Info' "$single")") ;;
        gz) samples+=("$(seconds "$cli" analyze "$gz" -o "$work/out" --no-trace -q)") ;;
      esac
    done
    times[$cmd]=$(printf '%s\n' "${samples[@]}" | median)
  done
  for cmd in rg grep notrace notrace1 trace perfetto gz rgsingle single1 single2; do
    input=$bytes
    base=${times[rg]}
    case $cmd in
      rg) label="rg -c 'Profiler Info'" ;;
      grep) label="grep -c 'Profiler Info'" ;;
      notrace) label="analyze --no-trace" ;;
      notrace1) label="analyze --no-trace -j 1" ;;
      trace) label="analyze (with trace.json)" ;;
      perfetto) label="analyze --perfetto (pftrace)" ;;
      gz) label="analyze --no-trace, .gz (text)" ;;
      rgsingle) label="rg -c, one file"; input=$single_bytes; base=${times[rgsingle]} ;;
      single1) label="one file, -j 1"; input=$single_bytes; base=${times[rgsingle]} ;;
      single2) label="one file, -j 2"; input=$single_bytes; base=${times[rgsingle]} ;;
    esac
    t=${times[$cmd]}
    printf '%-7s %8s  %-28s %9.3f %9.2f %8.2f\n' "$shape" "$size" "$label" "$t" \
      "$(echo "$input / $t / 1000000000" | bc -l)" "$(echo "$t / $base" | bc -l)"
  done
  # The Python baseline on a slice (one run: it is slow and its noise is small).
  slice=$work/$shape-python-slice
  head -c "$((${PYTHON_MB:-16} * 1000000))" "$dir/workerlog.0" > "$slice"
  t=$(seconds python3 "$here/bench/paddle_baseline.py" "$slice")
  slice_bytes=$(wc -c < "$slice")
  py_rate=$(echo "$slice_bytes / $t" | bc -l)
  ps_rate=$(echo "$bytes / ${times[notrace]}" | bc -l)
  printf '%-7s %8s  %-28s %9.3f %9.4f %8s   (analyze --no-trace is %.0fx faster)\n' "$shape" \
    "$((slice_bytes / 1000000))M" "python baseline (slice)" "$t" \
    "$(echo "$py_rate / 1000000000" | bc -l)" "-" "$(echo "$ps_rate / $py_rate" | bc -l)"
done
