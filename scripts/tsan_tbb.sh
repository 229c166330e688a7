#!/usr/bin/env bash
# Builds oneTBB's core library (libtbb only: no tests, no tbbmalloc, no
# tbbbind) with -fsanitize=thread, for the ThreadSanitizer build
# (dev.sh sanitize tsan). Debian's libtbb is not instrumented, so TSan cannot
# see the synchronisation inside it and reports false races at every task
# hand-off; with this build it sees every happens-before edge.
#
# The source is the exact upstream release Debian 12 ships (libtbb-dev
# 2021.8.0-2+deb12u1): Debian's orig tarball, checked against a pinned
# sha256. (Debian's patches only touch other architectures, tests and
# warning flags, so the x86-64 library code is the same.) It is built once
# and installed into a cache folder that later runs reuse; prints the folder
# to pass as TBB_DIR (its lib/cmake/TBB) as the last line of stdout.
#
#   bash scripts/tsan_tbb.sh          -> .../tbb-tsan-2021.8.0/lib/cmake/TBB
#
# Environment: TSAN_TBB_CACHE (install folder; default
# ${XDG_CACHE_HOME:-$HOME/.cache}/pipescope/tbb-tsan-2021.8.0),
# TSAN_TBB_TARBALL (a local copy of the tarball, for machines without
# network; still checked), CXX (compiler; default c++, which must be the one
# the project is built with: TSan runtimes of different compilers do not mix),
# JOBS (build jobs; default: number of cores).
set -euo pipefail

version=2021.8.0
tarball=onetbb_${version}.orig.tar.xz
url=https://deb.debian.org/debian/pool/main/o/onetbb/$tarball
sha256=7e9111b8bb59c8800bf6d0b06afe7b0891937443d2dae1ee1101c8e2ede6a7ef

prefix=${TSAN_TBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pipescope/tbb-tsan-$version}
cxx=${CXX:-c++}
jobs=${JOBS:-$(nproc)}
flags="-fsanitize=thread"
# What the install was built with: a different compiler means a rebuild.
stamp="oneTBB $version $sha256 $($cxx --version | head -n 1) $flags"

built() { [ -f "$prefix/.built" ] && [ "$(cat "$prefix/.built")" = "$stamp" ]; }
if built; then
  echo "$prefix/lib/cmake/TBB"
  exit 0
fi
# One build at a time per cache folder; a run that waited finds it done.
mkdir -p "$(dirname "$prefix")"
exec 9>"$prefix.lock"
flock 9
if built; then
  echo "$prefix/lib/cmake/TBB"
  exit 0
fi

echo "building oneTBB $version with $flags into $prefix (once; a few minutes)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${TSAN_TBB_TARBALL:-}" ]; then
  cp "$TSAN_TBB_TARBALL" "$work/$tarball"
elif ! curl -fsSL --retry 3 -o "$work/$tarball" "$url"; then
  echo "error: cannot download $url" >&2
  echo "  (set TSAN_TBB_TARBALL to a local copy, or TSAN_TBB_DIR to an instrumented oneTBB)" >&2
  exit 1
fi
if ! echo "$sha256  $work/$tarball" | sha256sum --check --quiet --strict; then
  echo "error: $tarball does not have the expected sha256 $sha256" >&2
  exit 1
fi
tar -xJf "$work/$tarball" -C "$work"

# TBB_SANITIZE=thread adds -fsanitize=thread to the compile and (for tests)
# link flags and turns IPO off (GCC does not instrument LTO code). The shared
# library links the TSan runtime too, so it is never loaded without it.
# RelWithDebInfo: TSan reports name the frames inside the library.
# -Wno-tsan: GCC warns ~50 times that TSan does not model
# atomic_thread_fence. oneTBB's fences are seq_cst store-load barriers
# (its sleep/wake-up protocol in concurrent_monitor.h and arena.h, the
# owner/thief handshake on a task pool in arena_slot.cpp); the tasks and
# their data are handed over through acquire/release atomics, compare-exchange
# and mutexes, which TSan does see. (oneTBB runs its own tests under TSan.)
cmake -S "$work/oneTBB-$version" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="-Wno-tsan" -DTBB_SANITIZE=thread \
  -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
  -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF -DTBB_STRICT=OFF \
  -DTBBMALLOC_BUILD=OFF -DTBBMALLOC_PROXY_BUILD=OFF -DTBB_DISABLE_HWLOC_AUTOMATIC_SEARCH=ON \
  -DCMAKE_INSTALL_PREFIX="$prefix.tmp" -DCMAKE_INSTALL_LIBDIR=lib >&2
cmake --build "$work/build" -j "$jobs" >&2
rm -rf "$prefix.tmp"
cmake --install "$work/build" >&2
# Installed under a temporary name and renamed: an interrupted build never
# leaves a half-installed folder that a later run would take as done.
echo "$stamp" > "$prefix.tmp/.built"
rm -rf "$prefix"
mv "$prefix.tmp" "$prefix"
echo "$prefix/lib/cmake/TBB"
