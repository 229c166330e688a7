#!/usr/bin/env bash
# Every output of two pipescope binaries, compared byte for byte on one corpus:
# the bundled samples, the real PyTorch traces, and simulated folders of every
# shape (each written once, by OLD's `simulate`, so both read the same bytes).
# Used by refactors whose outputs must not change: build the old commit, then
#
#   bash scripts/compare_outputs.sh OLD_BINARY NEW_BINARY [WORK_DIR]
#
# prints one line per output that differs (and a `diff` of its first lines),
# then "N outputs compared, N differ"; exits 1 when any differ. Outputs: stdout,
# stderr and exit status of each command; summary.json, trace.json,
# trace.pftrace, report.html, whatif.json; `check` and `diff` against a second
# run; `convert`'s .ivl files.
set -uo pipefail
old=$(readlink -f "$1") new=$(readlink -f "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${3:-$(mktemp -d)}
rm -rf "$work" && mkdir -p "$work/in"

# The corpus.
cp -r "$here"/testdata/{single,multi,edge,prologue,relaunch,kineto} "$work/in/"
i=0
while read -r config; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  "$old" simulate -o "$work/in/sim$i" --seed "$i" ${config//@IN@/$work/in} > /dev/null 2>&1 ||
    echo "warning: simulate $config failed" >&2
done <<'EOF'
--schedule fthenb --stages 4 --micro-batches 8 --steps 3
--schedule 1f1b --stages 3 --micro-batches 5 --steps 2 --machines 3 --shuffle --noise-per-job 5
--schedule vpp --stages 4 --micro-batches 8 --chunks 2 --steps 2 --machines 2 --chunk-names paren --ansi --comm
--schedule zbh1 --stages 4 --micro-batches 6 --steps 2 --crlf --comm --first-step 11
--schedule 1f1b --stages 2 --micro-batches 4 --steps 4 --slow-stage 1:1.7 --job-id counter
--schedule 1f1b --stages 4 --micro-batches 6 --steps 3 --comm --lr --jitter 0.2
--schedule 1f1b --stages 4 --micro-batches 8 --steps 3 --machines 2 --skew 1:3000
--schedule 1f1b --stages 4 --micro-batches 8 --steps 2 --devices-per-stage 2
--schedule fthenb --stages 3 --micro-batches 4 --steps 2 --lr --shuffle --machines 3
--schedule 1f1b --stages 4 --micro-batches 8 --steps 3 --format paddle-dygraph
--schedule torch-interleaved1f1b --stages 4 --micro-batches 8 --chunks 2 --steps 2 --format torch
--schedule torch-dualpipev --stages 4 --micro-batches 8 --steps 2 --format torch
--schedule 1f1b --stages 4 --micro-batches 8 --steps 2 --ivl @IN@/ivl
EOF

# Each command, run by both binaries into their own folders.
run_both() {  # NAME ARGS... (ARGS may use @OUT@ for the output folder)
  local name=$1 side bin
  shift
  for side in old new; do
    [ "$side" = old ] && bin=$old || bin=$new
    local out="$work/$side/$name"
    mkdir -p "$out"
    local args=("${@//@OUT@/$out/o}")
    (cd "$work/in" && "$bin" "${args[@]}" > "$out/stdout" 2> "$out/stderr")
    echo $? > "$out/status"
    # Paths printed differ between the two sides only by the side's folder.
    sed -i -e "s|$work/old/|WORK/|g" -e "s|$work/new/|WORK/|g" "$out/stdout" "$out/stderr"
  done
}

for d in "$work"/in/*/; do
  n=$(basename "$d")
  run_both "analyze-$n" analyze "$n" -o @OUT@ --perfetto --html @OUT@/report.html --flows
  run_both "analyze-j1-$n" analyze "$n" -o @OUT@ -j 1 --no-trace --stages auto
  run_both "whatif-$n" whatif "$n" -o @OUT@ -q
done
run_both check-sim check sim1 -b sim5 --allow-input-warnings --max-bubble-ratio 0.3 \
  --max-bubble-increase 100pp --markdown @OUT@/check.md --junit @OUT@/junit.xml
run_both check-summary check "$work/old/analyze-sim6/o/summary.json" -b sim6 --max-step-time-increase 5%
run_both diff-sim diff sim6 sim4 --json @OUT@/diff.json
run_both convert-sim convert sim2 -o @OUT@
run_both strict-edge analyze edge -o @OUT@ --strict --no-trace
run_both pattern-kineto analyze kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz -o @OUT@ \
  --job-pattern '## (?P<op>forward|backward) ##'
run_both pattern-bad analyze kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz -o @OUT@ \
  --job-pattern '(?P<op>forward'

total=0 differ=0
while IFS= read -r -d '' f; do
  rel=${f#"$work/old/"}
  total=$((total + 1))
  if ! cmp -s "$f" "$work/new/$rel"; then
    differ=$((differ + 1))
    echo "DIFFERS: $rel"
    diff <(head -c 4000 "$f") <(head -c 4000 "$work/new/$rel" 2> /dev/null) | head -8
  fi
done < <(find "$work/old" -type f -print0 | sort -z)
while IFS= read -r -d '' f; do
  rel=${f#"$work/new/"}
  [ -e "$work/old/$rel" ] || { differ=$((differ + 1)) && echo "ONLY NEW: $rel"; }
done < <(find "$work/new" -type f -print0 | sort -z)
echo "$total outputs compared, $differ differ ($work)"
[ "$differ" -eq 0 ]
