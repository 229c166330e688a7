#!/usr/bin/env bash
# The cost of the log events, paired per round: each round runs `analyze --no-trace`
# with --no-events, then with the events on (and, with REFERENCE=/path/to/pipescope,
# that earlier build with the events on), one right after the other, so that a noisy
# neighbour slows the runs of a round alike; the ratio to the --no-events run is taken
# per round. Prints the median ratio over ROUNDS with its range and quartiles, by wall
# time and by CPU time (user + system: reading from the page cache is system time).
#
#   bash bench/event_cost.sh [ROUNDS] [FOLDER]     e.g. bash bench/event_cost.sh 21
#
# FOLDER defaults to the sparse folder of bench/throughput.sh 1G (generate it first).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=${PIPESCOPE:-$here/build/cli/pipescope}
rounds=${1:-21}
folder=${2:-${BENCH_DIR:-/tmp/pipescope-bench}/sparse-1G}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -d "$folder" ] || { echo "no folder $folder: run bash bench/throughput.sh 1G first" >&2; exit 2; }
cat "$folder"/workerlog.* > /dev/null  # warms the page cache

# "wall_s cpu_s" of one run of "$@", output discarded.
measure() {
  local TIMEFORMAT='%3R %3U %3S' t
  t=$( { time "$@" > /dev/null 2>&1; } 2>&1 )
  awk '{printf "%s %.3f\n", $1, $2 + $3}' <<< "$t"
}

on_wall=() on_cpu=() ref_wall=() ref_cpu=()
for _ in $(seq "$rounds"); do
  read -r w0 c0 < <(measure "$cli" analyze "$folder" -o "$out" --no-trace -q --no-events)
  read -r w1 c1 < <(measure "$cli" analyze "$folder" -o "$out" --no-trace -q)
  on_wall+=("$(echo "$w1 / $w0" | bc -l)") on_cpu+=("$(echo "$c1 / $c0" | bc -l)")
  if [ -n "${REFERENCE:-}" ]; then
    read -r w2 c2 < <(measure "$REFERENCE" analyze "$folder" -o "$out" --no-trace -q)
    ref_wall+=("$(echo "$w2 / $w0" | bc -l)") ref_cpu+=("$(echo "$c2 / $c0" | bc -l)")
  fi
done

summary() {  # median (min-max, quartiles q1-q3) of the arguments
  printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1}
    END {printf "%.2fx (%.2f-%.2f, quartiles %.2f-%.2f)", a[int((NR + 1) / 2)], a[1], a[NR],
                a[int(NR / 4) + 1], a[int(3 * NR / 4) + 1]}'
}
echo "$("$cli" --version | head -1), $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $rounds paired rounds on $folder"
"$cli" --version | sed -n 2p  # which kernel runs the log events' literal search
echo "events on / off:  wall $(summary "${on_wall[@]}"), cpu $(summary "${on_cpu[@]}")"
if [ -n "${REFERENCE:-}" ]; then
  echo "$REFERENCE on / this build off:  wall $(summary "${ref_wall[@]}"), cpu $(summary "${ref_cpu[@]}")"
fi
