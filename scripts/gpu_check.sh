#!/usr/bin/env bash
# The job timer's checks on a machine with a GPU (a driver; no CUDA toolkit
# needed): builds tests/gpu (timer, C ABI library, Python module, tests, cost
# benchmark) and runs them. Needs CMake, a C++20 compiler and python3; GoogleTest is taken from
# GTEST_SOURCE_DIR (default /usr/src/googletest, else an installed GTest).
# Logs go to LOG_DIR when set.
#
#   bash scripts/gpu_check.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build-gpu}
gtest=${GTEST_SOURCE_DIR:-/usr/src/googletest}
[ -d "$gtest" ] || gtest=""
log_dir=${LOG_DIR:-$build}
mkdir -p "$log_dir"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
cmake -S "$here/tests/gpu" -B "$build" -DGTEST_SOURCE_DIR="$gtest" >"$log_dir/configure.log"
cmake --build "$build" -j "$(nproc)" >"$log_dir/build.log" 2>&1 || { tail -50 "$log_dir/build.log"; exit 1; }
"$build/pipescope_timer_tests" --gtest_color=no 2>&1 | tee "$log_dir/tests.log"
PYTHONPATH="$build/python" IVL_DUMP="$build/ivl_dump" python3 "$here/tests/gpu/python_cuda_test.py" 2>&1 |
  tee -a "$log_dir/tests.log"
PYTHONPATH="$build/python" python3 "$here/bench/python_timer_cost.py" "$build/cuda_timer_cost" 2>&1 |
  tee -a "$log_dir/cost.log"
"$build/cuda_timer_cost" 1000 50 2>&1 | tee "$log_dir/cost.log"
"$build/cuda_timer_cost" 100 200 2>&1 | tee -a "$log_dir/cost.log"
