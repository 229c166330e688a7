#!/usr/bin/env bash
# Set-up, build, demo and tests in one place, for a fresh Debian 12 machine
# (run as root, or with sudo available for the package install).
#
#   bash scripts/dev.sh demo   install what is missing, build, analyse testdata/multi
#   bash scripts/dev.sh test   install what is missing, build, run the whole test suite
#   bash scripts/dev.sh build  install what is missing and build only
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
jobs=${JOBS:-$(nproc)}

# Every package the project builds, tests and benchmarks with (Debian 12).
packages=(
  build-essential cmake pkg-config python3
  libhyperscan-dev libtbb-dev libfmt-dev libsimdjson-dev libcli11-dev
  libgtest-dev libbenchmark-dev zlib1g-dev libzstd-dev
  chromium  # headless, renders the HTML report in its tests
)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# build [TARGET]: configure and build everything, or one target.
build() {
  cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build_dir" -j "$jobs" ${1:+--target "$1"}
}

case "${1:-}" in
  demo)
    install_missing
    build pipescope
    "$build_dir/cli/pipescope" analyze "$here/testdata/multi" -o "$here/pipescope-out"
    echo
    echo "Open $here/pipescope-out/trace.json in https://ui.perfetto.dev or chrome://tracing."
    ;;
  test)
    install_missing
    build
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
    ;;
  build)
    install_missing
    build
    ;;
  *)
    echo "usage: bash scripts/dev.sh demo|test|build" >&2
    exit 2
    ;;
esac
