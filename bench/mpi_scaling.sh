#!/usr/bin/env bash
# Scaling of `analyze --mpi` (the analysis partitioned by step ranges) over 1,
# 2 and 4 MPI ranks on this machine, on the simulated logs of
# bench/throughput.sh (same generator and folders), from page cache, median of
# REPS runs; every rank's peak anonymous memory against the bound; then a model
# of a 1 TB, 1024-rank run from the measured per-rank rates, memory per job and
# summary size.
#
#   bash bench/mpi_scaling.sh [SIZE] [REPS]      e.g. bash bench/mpi_scaling.sh 1G 3
#
# Environment: PIPESCOPE (binary, default build/cli/pipescope, built with MPI),
# RANKS (default "1 2 4"; each rank gets cores/ranks scan threads), STAGES
# (files in the generated folder, default 8), SHAPE (sparse: 1 job line in 50, the default; dense:
# job lines only), BENCH_DIR (default /tmp/pipescope-bench), ANALYSIS_SIZE (the
# .ivl run that measures the analysis per job, default 256M). The model's
# assumptions: LINK_GBPS (a node's network bandwidth, default 12.5 GB/s = 100
# Gb/s), ALLTOALL_MS (one all-to-all over 1024 ranks, default 2 ms), DISK_GBPS
# (rank 0's write of summary.json, default 1 GB/s).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=${PIPESCOPE:-$here/build/cli/pipescope}
size=${1:-1G}
reps=${2:-3}
ranks=${RANKS:-1 2 4}
shape=${SHAPE:-sparse}
link_gbps=${LINK_GBPS:-12.5}
work=${BENCH_DIR:-/tmp/pipescope-bench}
command -v mpirun > /dev/null || { echo "mpirun is needed: apt-get install openmpi-bin" >&2; exit 2; }
mkdir -p "$work"

case $shape in
  sparse) noise=49 ;;
  dense) noise=0 ;;
  *) echo "SHAPE is sparse or dense" >&2; exit 2 ;;
esac
dir=$work/$shape-$size
if [ ! -f "$dir/expected.json" ]; then
  "$cli" simulate -o "$dir" --force --stages "${STAGES:-8}" --micro-batches 16 --seed 7 \
    --target-bytes "$size" --noise-per-job "$noise" > /dev/null
fi
bytes=$(cat "$dir"/workerlog.* | wc -c)
cat "$dir"/workerlog.* > /dev/null  # into page cache
cores=$(nproc)

launch=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)

calc() { awk "BEGIN { printf \"%.6f\", $* }"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" > "$work/command.out" 2>&1 || { cat "$work/command.out" >&2; exit 1; }
  end=$(date +%s.%N)
  calc "$end - $start"
}
timed() {  # timed COMMAND...: median seconds of REPS runs
  local samples=()
  for _ in $(seq "$reps"); do samples+=("$(seconds "$@")"); done
  printf '%s\n' "${samples[@]}" | median
}

# rank_peaks COMMAND...: runs the command once, sampling every 10 ms the
# RssAnon of each process named pipescope (the ranks; run no other pipescope
# meanwhile; the kernel keeps no peak of anonymous memory), and prints each
# rank's peak in KiB, largest first.
rank_peaks() {
  "$@" > "$work/command.out" 2>&1 &
  local launcher=$! peaks
  declare -A peaks=()
  while kill -0 "$launcher" 2> /dev/null; do
    for pid in $(pgrep -x pipescope || true); do
      anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)
      [ -n "$anon" ] || continue
      if [ -z "${peaks[$pid]:-}" ] || [ "$anon" -gt "${peaks[$pid]}" ]; then peaks[$pid]=$anon; fi
    done
    sleep 0.01
  done
  wait "$launcher" || { cat "$work/command.out" >&2; exit 1; }
  for pid in "${!peaks[@]}"; do echo "${peaks[$pid]}"; done | sort -rn
}

out=$work/mpi-out
echo "input: $dir ($bytes bytes, $(ls "$dir"/workerlog.* | wc -l) files), $cores cores, median of $reps"
printf '%-26s %6s %9s %8s %8s %12s\n' run ranks seconds GB/s speedup GB/s/rank
single=$(timed "$cli" analyze "$dir" -o "$out" --no-trace -q)
printf '%-26s %6s %9.3f %8.2f %8s %12s\n' "single process (no MPI)" - "$single" \
  "$(calc "$bytes / $single / 1000000000")" - -
t1=""
for np in $ranks; do
  # The node's cores shared among the ranks (each rank's scan pool would
  # otherwise take every core and the ranks oversubscribe the node).
  threads=$((cores / np > 0 ? cores / np : 1))
  t=$(timed "${launch[@]}" -np "$np" "$cli" analyze --mpi "$dir" -o "$out" --no-trace -q -j "$threads")
  [ -z "$t1" ] && t1=$t
  printf '%-26s %6s %9.3f %8.2f %8.2f %12.2f\n' "analyze --mpi" "$np" "$t" \
    "$(calc "$bytes / $t / 1000000000")" "$(calc "$t1 / $t")" \
    "$(calc "$bytes / $t / $np / 1000000000")"
done
# Peak anonymous memory of every rank, against the bound of the partitioned
# analysis: 64 MiB + 48 B x (jobs / ranks) x 1.25 on each rank.
run_jobs=$(python3 -c 'import json,sys; print(sum(d["jobs"] for d in json.load(open(sys.argv[1]))["devices"]))' "$out/summary.json")
echo
printf '%-6s %14s %14s %14s %10s\n' ranks "largest MiB" "smallest MiB" "bound MiB" "B/job*"
mem_per_job=0
files=$(ls "$dir"/workerlog.* | wc -l)
for np in $ranks; do
  threads=$((cores / np > 0 ? cores / np : 1))
  mapfile -t kib < <(rank_peaks "${launch[@]}" -np "$np" "$cli" analyze --mpi "$dir" -o "$out" --no-trace -q -j "$threads")
  largest=${kib[0]:-0}
  smallest=${kib[${#kib[@]}-1]:-0}
  printf '%-6s %14.1f %14.1f %14.1f %10.1f\n' "$np" "$(calc "$largest / 1024")" \
    "$(calc "$smallest / 1024")" "$(calc "(64 * 1048576 + 48 * $run_jobs / $np * 1.25) / 1048576")" \
    "$(calc "($largest * 1024 - 64 * 1048576) / ($run_jobs / $np)")"
  # A file is read whole by one rank: where the files do not divide evenly,
  # a rank reads more than its share, and holds that before the jobs travel.
  if [ $((files % np)) -eq 0 ]; then
    mem_per_job=$(calc "(($largest * 1024 - 64 * 1048576) / ($run_jobs / $np) > $mem_per_job) ? ($largest * 1024 - 64 * 1048576) / ($run_jobs / $np) : $mem_per_job")
  else
    echo "       (uneven: $files files over $np ranks, the largest rank reads $(( (files + np - 1) / np )) of them)"
  fi
done
echo "* the largest rank's peak above 64 MiB, per job of its share (jobs / ranks); the bound is 60 B/job"

# One rank, one scan thread: the per-core rate a rank gets on a full node.
t=$(timed "${launch[@]}" -np 1 "$cli" analyze --mpi "$dir" -o "$out" --no-trace -q -j 1)
printf '%-26s %6s %9.3f %8.2f %8s %12.2f\n' "analyze --mpi -j 1" 1 "$t" \
  "$(calc "$bytes / $t / 1000000000")" - "$(calc "$bytes / $t / 1000000000")"
per_core=$(calc "$bytes / $t")

# Records: jobs found per input byte (from the summary above). The analysis's
# cost per job, a dense run given as .ivl records (no text to scan), a large
# one minus a small one so that the start-up cost drops out: in one process,
# and partitioned on one rank (every job through the exchange to its part).
jobs=$(python3 -c 'import json,sys; print(sum(d["jobs"] for d in json.load(open(sys.argv[1]))["devices"]))' "$out/summary.json")
summary_bytes=$(wc -c < "$out/summary.json")
for kind in small large; do
  d=$work/analysis-$kind
  if [ ! -d "$d/ivl" ]; then
    rm -rf "$d"
    if [ $kind = small ]; then extra=(--steps 1); else extra=(--target-bytes "${ANALYSIS_SIZE:-256M}"); fi
    "$cli" simulate -o "$d/logs" --stages 8 --micro-batches 16 --seed 7 --noise-per-job 0 \
      --ivl "$d/ivl" "${extra[@]}" > /dev/null
  fi
  t=$(timed "$cli" analyze "$d/ivl" -o "$out" --no-trace -q)
  tp=$(timed "${launch[@]}" -np 1 "$cli" analyze --mpi "$d/ivl" -o "$out" --no-trace -q -j 1)
  n=$(python3 -c 'import json,sys; print(sum(d["jobs"] for d in json.load(open(sys.argv[1]))["devices"]))' "$out/summary.json")
  eval "t_$kind=$t tp_$kind=$tp n_$kind=$n"
done
t_ivl=$(calc "($t_large - $t_small) / ($n_large - $n_small) * $jobs")
t_part=$(calc "($tp_large - $tp_small) / ($n_large - $n_small) * $jobs")

echo
python3 - "$bytes" "$jobs" "$per_core" "$t_ivl" "$t_part" "$link_gbps" "$cores" \
  "$summary_bytes" "$mem_per_job" "${ALLTOALL_MS:-2}" "${DISK_GBPS:-1}" <<'EOF2'
import sys
(bytes_, jobs, per_core, t_ivl, t_part, link_gbps, cores, summary_bytes, mem_per_job,
 alltoall_ms, disk_gbps) = map(float, sys.argv[1:])
tb, ranks, per_node = 1e12, 1024, 16
nodes = ranks / per_node
per_rank = tb / ranks
jobs_tb = jobs / bytes_ * tb
jobs_rank = jobs_tb / ranks
held = 48                                  # bytes of a job as it travels (job, index, step)
print(f"measured: {jobs:.0f} jobs in {bytes_/1e9:.2f} GB = one job per {bytes_/jobs:.0f} input bytes; "
      f"{per_core/1e9:.2f} GB/s per rank with one scan thread; the analysis of .ivl records "
      f"(start-up cost left out) {jobs/t_ivl/1e6:.2f} M jobs/s in one process, "
      f"{jobs/t_part/1e6:.2f} M jobs/s partitioned on one rank; the largest rank's peak at most "
      f"{mem_per_job:.1f} B per job of its share over 64 MiB; summary.json "
      f"{summary_bytes/jobs:.1f} B per job")
print(f"estimate, 1 TB over {ranks} ranks ({nodes:.0f} nodes of {per_node} cores, one rank a core; "
      f"{per_rank/1e9:.2f} GB and {jobs_rank/1e6:.2f} M jobs per rank):")
scan = per_rank / per_core
wire = per_node * jobs_rank * held * (ranks - 1) / ranks
exchange = wire / (link_gbps * 1e9)
rounds = jobs_rank * held / (4 << 20)
analysis = t_part / jobs * jobs_rank
summary = summary_bytes / jobs * jobs_tb
pieces = summary / (4 << 20)               # the step lists' pieces, about 4 MiB of text each
collectives = (rounds + pieces) * alltoall_ms / 1000
write = summary / (disk_gbps * 1e9)
print(f"  scan          {scan:8.1f} s   (each rank at {per_core/1e9:.2f} GB/s, in parallel)")
print(f"  exchange      {exchange:8.1f} s   each job once: {wire/1e9:.2f} GB out of each node at "
      f"{link_gbps:g} GB/s ({rounds:.0f} rounds of 4 MiB a rank)")
print(f"  analysis      {analysis:8.1f} s   each rank its {jobs_rank/1e6:.2f} M jobs at the one-rank "
      f"rate (the exchange to itself included)")
print(f"  collectives   {collectives:8.1f} s   {rounds + pieces:.0f} all-to-alls (job rounds and "
      f"summary pieces) at {alltoall_ms:g} ms each over {ranks} ranks, plus ~100 small gathers")
print(f"  summary.json  {write:8.1f} s   {summary/1e9:.1f} GB written by rank 0 at {disk_gbps:g} GB/s "
      f"(its step lists hold a row per step)")
print(f"  total         {scan + exchange + analysis + collectives + write:8.1f} s   (no overlap)")
print(f"  memory        {(64 * 2**20 + mem_per_job * jobs_rank)/2**20:8.0f} MiB per rank "
      f"(64 MiB + {mem_per_job:.1f} B x {jobs_rank/1e6:.2f} M jobs; the bound: "
      f"{(64 * 2**20 + 60 * jobs_rank)/2**20:.0f} MiB)")
print(f"  the gather to one node instead: {jobs_tb*40/1e9:.0f} GB of jobs on rank 0 and "
      f"{t_ivl/jobs*jobs_tb:.0f} s of single-node analysis")
EOF2
