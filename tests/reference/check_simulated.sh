#!/bin/sh
# The engine against the independent Python reference on simulated runs of
# every schedule (logs the engine's authors did not write by hand).
#   check_simulated.sh PIPESCOPE_BINARY WORK_DIR
set -eu
cli=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
i=0
for config in \
  "--schedule fthenb --stages 4 --micro-batches 8 --steps 3" \
  "--schedule 1f1b --stages 3 --micro-batches 5 --steps 2 --machines 3 --shuffle --noise-per-job 5" \
  "--schedule vpp --stages 4 --micro-batches 8 --chunks 2 --steps 2 --machines 2 --chunk-names paren --ansi" \
  "--schedule zbh1 --stages 4 --micro-batches 6 --steps 2 --crlf --comm --first-step 11" \
  "--schedule 1f1b --stages 2 --micro-batches 4 --steps 4 --slow-stage 1:1.7 --job-id counter" \
  "--schedule 1f1b --stages 4 --micro-batches 6 --steps 3 --comm --lr" \
  "--schedule fthenb --stages 3 --micro-batches 4 --steps 2 --lr --shuffle --machines 3"
do
  i=$((i + 1))
  # shellcheck disable=SC2086
  "$cli" simulate -o "$work/run$i" --seed "$i" $config > /dev/null
  "$cli" analyze "$work/run$i" -o "$work/out$i" --quiet
  python3 "$here/pipescope_reference.py" "$work/run$i" > "$work/reference$i.json"
  echo "run$i: $config"
  python3 "$here/compare_summary.py" "$work/out$i/summary.json" "$work/reference$i.json"
done
