#!/bin/sh
# Golden end-to-end check of one sample folder: the engine's summary.json must
# agree with the hand-worked expected.json and with the independent Python
# reference implementation run on the same logs.
#   check_sample.sh PIPESCOPE_BINARY SAMPLE_DIR WORK_DIR
set -eu
cli=$1 sample=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
"$cli" analyze "$sample" -o "$work/out" --quiet
python3 "$here/compare_summary.py" "$work/out/summary.json" "$sample/expected.json"
python3 "$here/pipescope_reference.py" "$sample" > "$work/reference.json"
python3 "$here/compare_summary.py" "$work/out/summary.json" "$work/reference.json"
