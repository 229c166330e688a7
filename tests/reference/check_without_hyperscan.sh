#!/usr/bin/env bash
# A build without Hyperscan reads the same jobs and gives the same figures as
# a build with it; only the log events differ, and it says they are off.
#
#   bash tests/reference/check_without_hyperscan.sh WITH WITHOUT
#
# WITH and WITHOUT are the two pipescope binaries (scripts/dev.sh test builds
# the second with -DPIPESCOPE_HYPERSCAN=OFF in build-nohs/). Every bundled
# sample and a simulated run with events (and noise lines) are analysed by
# both; their summary.json must be equal with the `events` key taken out, the
# build without Hyperscan's `events` must be `{"off": ...}` naming Hyperscan,
# and its text report must say so. Prints `N passed, M failed`.
set -euo pipefail
with=$1
without=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$with" simulate -o "$work/events" --events --stall 6:3:300 --steps 12 --noise-per-job 9 \
  --utc-offset +08:00 > /dev/null
inputs=("$here/testdata/multi" "$here/testdata/single" "$here/testdata/relaunch"
        "$here/testdata/prologue" "$work/events")
passed=0
failed=0
for input in "${inputs[@]}"; do
  name=$(basename "$input")
  "$with" analyze "$input" -o "$work/with-$name" --no-trace -q > /dev/null 2>&1 || true
  "$without" analyze "$input" -o "$work/without-$name" --no-trace > "$work/report-$name" 2>&1 || true
  if python3 - "$work/with-$name/summary.json" "$work/without-$name/summary.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ea, eb = a.pop("events", None), b.pop("events", None)
for s in (a, b):
    s.pop("tool", None)
if a != b:
    keys = [k for k in set(a) | set(b) if a.get(k) != b.get(k)]
    print(f"  figures differ in {sorted(keys)}")
    sys.exit(1)
if not eb or list(eb) != ["off"] or "Hyperscan" not in eb["off"]:
    print(f"  events of the build without Hyperscan: {eb}")
    sys.exit(1)
PY
  then
    if grep -q "Log events: off: this pipescope was built without Hyperscan" \
      "$work/report-$name"; then
      echo "ok    $name: the same figures; events off, and said"
      passed=$((passed + 1))
    else
      echo "FAIL  $name: the report does not say events are off"
      failed=$((failed + 1))
    fi
  else
    echo "FAIL  $name"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
