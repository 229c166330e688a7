#!/usr/bin/env bash
# What `pipescope watch` costs while it follows a run (docs/guide.md,
# "Watching a running job"): its RssAnon after following a simulated run of
# 100 and of 10,000 steps appended in 16 KiB pieces, every file in turn (sampled once every step
# was reported, before the final pass), and its CPU time over 20 s of a
# folder that does not change (the 100-step run).
#
#   bash bench/watch_cost.sh [build/cli/pipescope]
#   FORMAT=ivl bash bench/watch_cost.sh           # or paddle-dygraph, gzip (worker logs .gz)
#
# FORMAT: what is followed (default worker-log). An .ivl file gets its first
# piece (its header) before watch starts, as the job timer writes it at open.
set -euo pipefail
cli=${1:-build/cli/pipescope}
format=${FORMAT:-worker-log}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rss_after() {  # steps
  local steps=$1 src="$work/src$1" live="$work/live$1"
  local first=0
  case $format in
    worker-log) "$cli" simulate -o "$src" --steps "$steps" --stages 2 --micro-batches 4 --seed 1 > /dev/null ;;
    paddle-dygraph) "$cli" simulate -o "$src" --steps "$steps" --stages 2 --micro-batches 4 --seed 1 \
                      --format paddle-dygraph > /dev/null ;;
    ivl) "$cli" simulate -o "$src.log" --steps "$steps" --stages 2 --micro-batches 4 --seed 1 \
           --ivl "$src" > /dev/null
         first=1 ;;
    gzip) "$cli" simulate -o "$src.log" --steps "$steps" --stages 2 --micro-batches 4 --seed 1 > /dev/null
          mkdir -p "$src"
          for f in "$src.log"/workerlog.*; do gzip -c "$f" > "$src/$(basename "$f").gz"; done ;;
    *) echo "FORMAT: worker-log, paddle-dygraph, ivl or gzip" >&2; exit 2 ;;
  esac
  rm -f "$src/expected.json" "$src/simulation.json"
  mkdir -p "$live"
  for f in "$src"/*; do
    head -c $((first * 16 * 1024)) "$f" > "$live/$(basename "$f")"
  done
  "$cli" watch "$live" --interval 0.2 --until-idle 4 --no-trace -o "$work/out$1" > "$work/lines$1" &
  local pid=$!
  local piece=$((16 * 1024)) more=1 offset=$((first * 16 * 1024))
  while [ $more = 1 ]; do
    more=0
    for f in "$src"/*; do
      local size; size=$(stat -c %s "$f")
      if [ $offset -lt "$size" ]; then
        dd if="$f" iflag=skip_bytes,count_bytes skip=$offset count=$piece status=none >> "$live/$(basename "$f")"
        more=1
      fi
    done
    offset=$((offset + piece))
  done
  # Every step but the last reported (the last waits for --until-idle).
  while [ "$(wc -l < "$work/lines$1")" -lt $((steps - 1)) ]; do sleep 0.1; done
  echo "$format, $steps steps ($(du -sh "$src" | cut -f1) of input): $(grep RssAnon /proc/$pid/status | tr -s ' \t' ' ')"
  wait $pid
}

rss_after 100
rss_after 10000

# Idle: a folder of FORMAT that does not change (the 100-step run), 20 s.
"$cli" watch "$work/src100" -o "$work/idle-out" > /dev/null &
pid=$!
sleep 1
t0=$(awk '{print $14 + $15}' /proc/$pid/stat)
sleep 20
t1=$(awk '{print $14 + $15}' /proc/$pid/stat)
kill -TERM $pid
wait $pid
ticks=$(getconf CLK_TCK)
echo "$format idle: $((t1 - t0)) clock ticks of CPU in 20 s ($(awk -v t=$((t1 - t0)) -v hz="$ticks" 'BEGIN{printf "%.3f", 100 * t / hz / 20}')% of a core)"
