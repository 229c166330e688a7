#!/usr/bin/env bash
# Builds the libFuzzer targets (build-asan/, the `asan` preset of
# CMakePresets.json: clang-14 with ASan+UBSan, whose test suite is dev.sh's
# ASan suite, so after it nothing is compiled again) and runs each for SECONDS
# (default 15), after replaying the checked-in crash regressions
# (fuzz/regressions/TARGET/). Seeds come from testdata (logs, and .ivl files,
# summary.json and gzip/zstd files made from them); the growing corpus is kept
# in build-asan/corpus/TARGET, crashes in build-asan/artifacts/.
#
#   bash fuzz/run.sh [SECONDS] [TARGET...]      e.g. bash fuzz/run.sh 600 fuzz_ivl_reader
#
# Environment: FUZZ_BUILD_DIR (default build-asan), JOBS (build jobs),
# PIPESCOPE (a pipescope binary to make the seeds; default build/cli/pipescope,
# else the one built here). Exit status 1 when a target crashed, hung or leaked.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$here/build-asan}
seconds=${1:-15}
shift || true
all=(fuzz_job_line_parser fuzz_line_readers fuzz_ivl_reader fuzz_summary_reader fuzz_decompress
  fuzz_dygraph_reader
  fuzz_torch_trace fuzz_log_events fuzz_nsys_reader)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

cmake -S "$here" -B "$build" --preset asan >/dev/null
pipescope=${PIPESCOPE:-$here/build/cli/pipescope}
build_targets=("${targets[@]}")
[ -x "$pipescope" ] || { build_targets+=(pipescope); pipescope=$build/cli/pipescope; }
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${build_targets[@]}"

# Seeds, made once per build folder.
seeds=$build/seeds
make_seeds() {
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$seeds"/{fuzz_job_line_parser,fuzz_line_readers,fuzz_ivl_reader,fuzz_summary_reader,fuzz_decompress,fuzz_dygraph_reader,fuzz_torch_trace,fuzz_log_events,fuzz_nsys_reader}
  # Job lines (and step lines) of every sample, one per seed.
  # awk reads to the end: a reader that stops early (head) would kill grep with
  # SIGPIPE, which pipefail turns into a failed script once the samples outgrow
  # the pipe buffer.
  grep -h -e 'Profiler' "$here"/testdata/*/workerlog.* "$here"/testdata/*/*/workerlog.* 2>/dev/null |
    awk -v dir="$seeds/fuzz_job_line_parser" \
      'NR <= 300 { f = dir "/line" NR; printf "%s", $0 > f; close(f) }'
  # Log text with reader parameters in front (chunk u16, range u16, line limit).
  for f in "$here"/testdata/single/workerlog.* "$here"/testdata/edge/workerlog.*; do
    [ -f "$f" ] || continue
    { printf '\x07\x00\x40\x00\x50'; head -c 6000 "$f"; } > "$seeds/fuzz_line_readers/$(basename "$f")"
    { printf '\x00\x10\x01\x00\xff'; head -c 6000 "$f"; } > "$seeds/fuzz_line_readers/$(basename "$f").big"
  done
  # Compressed logs (first byte: 0 gzip, 1 zstd).
  local log=$here/testdata/single/workerlog.0
  { printf '\x00'; gzip -c "$log"; } > "$seeds/fuzz_decompress/log.gz"
  { printf '\x01'; zstd -q -c "$log"; } > "$seeds/fuzz_decompress/log.zst"
  { printf '\x01'; head -c 3000 "$log" | zstd -q -c; head -c 2000 "$log" | zstd -q -c; } \
    > "$seeds/fuzz_decompress/frames.zst"
  # .ivl files (first byte 1: the target fixes checksums after mutation).
  "$pipescope" simulate -o "$tmp/sim" --ivl "$tmp/ivl" --steps 2 --stages 2 --micro-batches 2 \
    --force >/dev/null
  for f in $(find "$tmp/ivl" -name '*.ivl' | sort | awk 'NR <= 4'); do
    { printf '\x01'; cat "$f"; } > "$seeds/fuzz_ivl_reader/$(basename "$f")"
    { printf '\x00'; cat "$f"; } > "$seeds/fuzz_ivl_reader/$(basename "$f").raw"
  done
  # Paddle dygraph records (first byte 0: one rank's file; 1: the concatenation).
  "$pipescope" simulate --format paddle-dygraph -o "$tmp/dy" --concatenation "$tmp/dycat" \
    --schedule vpp --stages 4 --micro-batches 8 --steps 1 --force >/dev/null
  { printf '\x00'; head -c 4000 "$tmp/dy/profile_record_tmp_file_for_rank_1"; } \
    > "$seeds/fuzz_dygraph_reader/rank1"
  { printf '\x01'; head -c 4000 "$tmp/dycat/pipeline_profile.json"; } \
    > "$seeds/fuzz_dygraph_reader/concatenation"
  # PyTorch profiler traces (first byte: chunk size; even: with a job pattern).
  "$pipescope" simulate --format torch -o "$tmp/torch" --schedule torch-interleaved1f1b \
    --stages 2 --micro-batches 2 --steps 1 --comm --force >/dev/null
  for f in "$tmp"/torch/rank*.pt.trace.json; do
    { printf '\x07'; cat "$f"; } > "$seeds/fuzz_torch_trace/$(basename "$f")"
    { printf '\x10'; head -c 3000 "$f"; } > "$seeds/fuzz_torch_trace/$(basename "$f").cut"
  done
  { printf '\x03'; gzip -dc "$here"/testdata/kineto/mi250_minitoy_train_ROCm6_2_kineto.json.gz; } \
    > "$seeds/fuzz_torch_trace/mi250.json"
  # Summaries and check configs.
  "$pipescope" analyze "$here/testdata/single" -o "$tmp/out" -q --no-trace >/dev/null
  cp "$tmp/out/summary.json" "$seeds/fuzz_summary_reader/summary.json"
  printf '{"max_bubble_increase": "2%%", "max_step_time_increase": 0.05, "skip_steps": 1}' \
    > "$seeds/fuzz_summary_reader/config.json"
  printf '{"max_bubble_ratio": 0.5, "max_utilization_drop": "3 %%"}' > "$seeds/fuzz_summary_reader/config2.json"
  # Log events: the library, its example lines, and a simulated log with events.
  cp "$here/data/log_events.patterns" "$seeds/fuzz_log_events/library.patterns"
  sed -n 's/^example = //p' "$here/data/log_events.patterns" |
    awk -v dir="$seeds/fuzz_log_events" 'NR <= 60 { f = dir "/example" NR; print > f; close(f) }'
  "$pipescope" simulate -o "$tmp/ev" --events --stall 2:1:50 --stages 2 --micro-batches 2 \
    --steps 6 --utc-offset +05:45 --noise-per-job 3 --force >/dev/null
  head -c 8000 "$tmp/ev/workerlog.1" > "$seeds/fuzz_log_events/workerlog.1"
  # Nsight Systems exports: both schema generations, small runs.
  for case in one-window schema-2.9; do
    python3 "$here/tests/reference/nsys_run.py" -o "$tmp/nsys-$case" --case "$case" \
      --micro-batches 2 --steps 1 >/dev/null
    for f in "$tmp/nsys-$case"/*.sqlite; do
      cp "$f" "$seeds/fuzz_nsys_reader/$case-$(basename "$f")"
    done
  done
}
# Again when a target has none yet (one added since the folder's seeds were made).
for t in "${all[@]}"; do
  if [ ! -d "$seeds/$t" ]; then
    make_seeds
    break
  fi
done

status=0
export TMPDIR=${TMPDIR:-/tmp}
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  artifacts=$build/artifacts/$t
  regressions=$here/fuzz/regressions/$t
  mkdir -p "$corpus" "$artifacts"
  if compgen -G "$regressions/*" >/dev/null; then
    echo "== $t: replaying $(ls "$regressions" | wc -l) regression inputs"
    "$build/fuzz/$t" -rss_limit_mb=2048 "$regressions"/* >"$build/$t.replay.log" 2>&1 ||
      { echo "== $t: a regression input fails again"; tail -n 30 "$build/$t.replay.log"; status=1; continue; }
  fi
  echo "== $t: fuzzing for ${seconds}s"
  log=$build/$t.log
  if "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds/$t" >"$log" 2>&1; then
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "== $t: ok, $execs executions, corpus $(ls "$corpus" | wc -l) inputs"
  else
    echo "== $t: FAILED (log $log, inputs in $artifacts)"
    grep -m1 -A 25 -e 'ERROR' -e 'runtime error' -e '==ABORT' -e 'deadly signal' "$log" || tail -n 30 "$log"
    status=1
  fi
done
exit $status
