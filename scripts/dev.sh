#!/usr/bin/env bash
# Set-up, build, demo and tests in one place, for a fresh Debian 12 machine
# (run as root, or with sudo available for the package install).
#
#   bash scripts/dev.sh demo   install what is missing, build, analyse testdata/multi
#   bash scripts/dev.sh test   install what is missing, build (and the package), run the whole test suite
#   bash scripts/dev.sh build  install what is missing and build only
#   bash scripts/dev.sh package  build the Debian package (BUILD_DIR-deb/pipescope_VERSION_ARCH.deb)
#   bash scripts/dev.sh sanitize [asan|tsan]  test suite under ASan+UBSan / TSan (CMakePresets.json)
#   bash scripts/dev.sh fuzz [SECONDS [TARGET...]]  libFuzzer targets (fuzz/run.sh; build-asan/)
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores),
# PIPESCOPE_NO_CCACHE=1 to compile without ccache (used when installed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
jobs=${JOBS:-$(nproc)}

# Every package the project builds with (Debian 12): all `demo` installs.
packages=(
  build-essential cmake pkg-config python3
  ccache  # CI builds the engine four times (release, ASan, TSan, fuzz): a warm cache makes a rerun minutes
  libtbb-dev libfmt-dev libsimdjson-dev libcli11-dev
  libgtest-dev libbenchmark-dev zlib1g-dev libzstd-dev
  libsqlite3-dev  # Nsight Systems exports (.sqlite), read with SQLite itself
  libre2-dev  # --job-pattern and log events' captures: linear-time regular expressions
  libprotobuf-dev protobuf-compiler  # trace.pftrace (Perfetto protobuf)
)
# What the other commands add: the tests', the benchmarks' and the package's.
full_packages=(
  libopenmpi-dev openmpi-bin  # analyze --mpi and its mpirun tests
  chromium  # headless, renders the HTML report in its tests
  python3-websocket  # drives chromium through the DevTools protocol (tests/browser/)
  ripgrep bc  # bench/throughput.sh: the `rg -c` baseline, and its arithmetic
  help2man dpkg-dev file  # the .deb (dev.sh package): its man page, and its Depends (dpkg-shlibdeps, file)
)
# Log events: the event library matched in the scan's pass. Debian builds
# Hyperscan for amd64 only; elsewhere pipescope builds without it (events off).
if [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ]; then
  packages+=(libhyperscan-dev)
fi
# Installed by `test` when missing, without failing it when they cannot be:
# the test that needs them then says it was skipped and why.
optional_test_packages=(
  python3-torch  # the job timer's real PyTorch pipeline test (gloo, CPU; ~1 minute to install)
)

# Compiles go through ccache when it is there. The base dir and the unhashed
# working directory let a fresh clone elsewhere (CI's) hit what an earlier
# clone compiled; debug info then names the clone that filled the cache.
# Called again once the packages are installed: on a new machine ccache comes
# with them, and the first build (the one that fills the cache) must use it.
use_ccache() {
  if command -v ccache >/dev/null 2>&1 && [ -z "${PIPESCOPE_NO_CCACHE:-}" ]; then
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$here} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
    export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
    export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-ccache}
  fi
}
use_ccache

# configure DIR ARGS...: cmake for DIR from this tree. A DIR whose cache
# names another source tree (a build folder copied with the tree) is
# configured afresh, said once, rather than stopping on CMake's error.
configure() {
  local dir=$1
  shift
  if [ -f "$dir/CMakeCache.txt" ]; then
    local home
    home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/CMakeCache.txt")
    if [ -n "$home" ] && [ "$(cd "$home" 2>/dev/null && pwd -P)" != "$(cd "$here" && pwd -P)" ]; then
      echo "note: $dir was configured for $home; configuring it afresh for $here" >&2
      rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
    fi
  fi
  cmake -S "$here" -B "$dir" "$@"
}

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
  use_ccache
}

install_optional() {
  local missing=()
  for p in "${optional_test_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    echo "warning: cannot install ${missing[*]}; the tests that need them will be skipped" >&2
}

# without_hyperscan: the CLI built without Hyperscan (build-nohs/) reads the
# same jobs and gives the same figures as the main build, and says events are
# off (tests/reference/check_without_hyperscan.sh). Only where the main build
# has Hyperscan: elsewhere both builds are the same.
without_hyperscan() {
  dpkg-query -W -f='${Status}' libhyperscan-dev 2>/dev/null | grep -q "install ok installed" ||
    return 0
  local nohs=${build_dir}-nohs
  configure "$nohs" -DCMAKE_BUILD_TYPE=Release -DPIPESCOPE_HYPERSCAN=OFF \
    -DPIPESCOPE_BUILD_TESTS=OFF -DPIPESCOPE_BUILD_BENCH=OFF > /dev/null
  cmake --build "$nohs" -j "$jobs" --target pipescope
  bash "$here/tests/reference/check_without_hyperscan.sh" "$build_dir/cli/pipescope" \
    "$nohs/cli/pipescope"
}

# package: the Debian package (packaging/CMakeLists.txt), from a build of its
# own configured for /usr (Debian's layout: the library in lib/<multiarch>/)
# without the tests and benchmarks, its objects from ccache after the main
# build: ${build_dir}-deb/pipescope_VERSION_ARCH.deb. The suite's package.deb
# test installs it into a scratch root and uses it from there.
package() {
  local deb_dir=${build_dir}-deb
  configure "$deb_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DPIPESCOPE_BUILD_TESTS=OFF -DPIPESCOPE_BUILD_BENCH=OFF -DPIPESCOPE_MAN_PAGE=ON > /dev/null
  cmake --build "$deb_dir" -j "$jobs"
  rm -f "$deb_dir"/pipescope_*.deb
  (cd "$deb_dir" && cpack -G DEB)
}

# build [TARGET]: configure and build everything, or one target.
build() {
  configure "$build_dir" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build_dir" -j "$jobs" ${1:+--target "$1"}
}

# sanitize [asan|tsan]: the test suite under sanitizers, each in its own build
# folder, configured by the preset of its name (CMakePresets.json: clang 14,
# -O1 with line tables, unity builds, the test files at -O0; the Python
# module's tests are left out: an instrumented library cannot be loaded into
# an uninstrumented Python; so is MPI, whose allocations that outlive
# MPI_Finalize would be leak reports; the distributed engine's pure parts are
# still tested).
#
# asan (build-asan): AddressSanitizer + UndefinedBehaviorSanitizer over the
# whole suite. It is also the fuzz build (PIPESCOPE_FUZZ: the engine carries
# the fuzzers' coverage, and the fuzz targets are built with the tests), so
# `fuzz` after it compiles nothing more.
#
# tsan (build-tsan): ThreadSanitizer over the parallel scanner/pipeline tests
# (and the trace reader's, the parallel analysis's and the parallel trace
# writers'): the preset compiles only their test files
# (PIPESCOPE_PARALLEL_TEST_SOURCES in tests/CMakeLists.txt), and TSAN_FILTER
# (a gtest filter) picks their suites, each of which must match a test. They
# include wild_* tests with many files, many threads and tiny chunks, files
# that change while read, and 1000 files under a 64-descriptor limit through
# the (also instrumented) CLI. TSan needs a oneTBB built with -fsanitize=thread
# by the same compiler: with Debian's libtbb it cannot see the hand-offs
# inside the library and reports false races. The step builds one with
# scripts/tsan_tbb.sh (once, into ~/.cache/pipescope/; a few minutes) unless
# TSAN_TBB_DIR names one (its lib/cmake/TBB folder).
tsan_filter=${TSAN_FILTER:-LogScanner*:LineReaders*:ChunkScanner*:CompressedInput*:Wild*Parallel*:RecordImport*:WildInputs.File*:WildLimits.LowOpenFile*:TorchTraceReader*:TraceEventTokenizer*:ParallelAnalysis*:TraceParallel*}

sanitize_one() {
  local kind=$1 dir=$here/build-$1 tbb=()
  if [ "$kind" = tsan ]; then
    tbb=("-DTBB_DIR=${TSAN_TBB_DIR:-$(CXX=clang++-14 JOBS=$jobs bash "$here/scripts/tsan_tbb.sh" | tail -n 1)}")
  fi
  configure "$dir" --preset "$kind" "${tbb[@]}"
  local start=$SECONDS
  if [ "$kind" = asan ]; then
    cmake --build "$dir" -j "$jobs" --target pipescope_tests fuzz_targets
  else
    cmake --build "$dir" -j "$jobs" --target pipescope_tests
  fi
  echo "sanitize $kind: the build took $((SECONDS - start)) s"
  start=$SECONDS
  if [ "$kind" = asan ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PIPESCOPE_NO_BROWSER=1 \
      ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900
  else
    # The libtbb the tests load must be the instrumented one (the build's
    # rpath points at it), or every report would be a false race.
    local lib pattern
    lib=$(ldd "$dir/tests/pipescope_tests" | awk '/libtbb/ {print $3}')
    nm -D "$lib" | grep ' U __tsan_' >/dev/null ||
      { echo "error: tests load $lib, which is not built with -fsanitize=thread" >&2; exit 1; }
    # A suite of the filter that no compiled file holds would pass unseen.
    for pattern in ${tsan_filter//:/ }; do
      "$dir/tests/pipescope_tests" --gtest_list_tests --gtest_filter="$pattern" | grep -q '^  ' ||
        { echo "error: no TSan test matches $pattern (PIPESCOPE_PARALLEL_TEST_SOURCES)" >&2; exit 1; }
    done
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$here/scripts/tsan.supp" \
      "$dir/tests/pipescope_tests" --gtest_filter="$tsan_filter"
  fi
  echo "sanitize $kind: tests took $((SECONDS - start)) s"
}

case "${1:-}" in
  demo)
    install_missing  # the build's packages only: no browser, MPI or packaging tools
    build pipescope
    "$build_dir/cli/pipescope" analyze "$here/testdata/multi" -o "$here/pipescope-out"
    echo
    echo "Open $here/pipescope-out/trace.json in https://ui.perfetto.dev or chrome://tracing."
    ;;
  test)
    packages+=("${full_packages[@]}")
    install_missing
    install_optional
    build
    package
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
    without_hyperscan
    ;;
  build)
    packages+=("${full_packages[@]}")
    install_missing
    build
    ;;
  package)
    packages+=("${full_packages[@]}")
    install_missing
    package
    ;;
  sanitize)
    # scripts/tsan_tbb.sh fetches oneTBB's source with apt-get source (from https
    # sources too) and unpacks its .tar.xz.
    packages+=("${full_packages[@]}" ca-certificates xz-utils clang-14 libclang-rt-14-dev)
    install_missing
    for kind in ${2:-asan tsan}; do sanitize_one "$kind"; done
    ;;
  fuzz)  # fuzz [SECONDS [TARGET...]]: fuzz/run.sh (libFuzzer needs clang and its runtime)
    packages+=(clang-14 libclang-rt-14-dev)
    export FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$here/build-asan}
    install_missing
    shift
    bash "$here/fuzz/run.sh" "$@"
    ;;
  *)
    echo "usage: bash scripts/dev.sh demo|test|build|package|sanitize [asan|tsan]|fuzz [SECONDS]" >&2
    exit 2
    ;;
esac
