#!/usr/bin/env bash
# Builds oneTBB's core library (libtbb only: no tests, no tbbmalloc, no
# tbbbind) with -fsanitize=thread, for the ThreadSanitizer build
# (dev.sh sanitize tsan). Debian's libtbb is not instrumented, so TSan cannot
# see the synchronisation inside it and reports false races at every task
# hand-off; with this build it sees every happens-before edge.
#
# The source is the exact upstream release Debian 12 ships (libtbb-dev
# 2021.8.0-2+deb12u1, source package onetbb): its orig tarball, fetched with
# apt-get source through the package sources apt is configured with, and
# checked against a pinned sha256. (Debian's patches only touch other
# architectures, tests and warning flags, so the x86-64 library code is the
# same; they are not applied.) It is built once and installed into a cache
# folder that later runs reuse; prints the folder to pass as TBB_DIR (its
# lib/cmake/TBB) as the last line of stdout.
#
#   bash scripts/tsan_tbb.sh          -> .../tbb-tsan-2021.8.0/lib/cmake/TBB
#
# Environment: TSAN_TBB_CACHE (install folder; default
# ${XDG_CACHE_HOME:-$HOME/.cache}/pipescope/tbb-tsan-2021.8.0),
# TSAN_TBB_TARBALL (a local copy of the tarball, for machines without
# network; still checked), CXX (compiler; default c++, which must be the one
# the project is built with: TSan runtimes of different compilers do not mix;
# dev.sh passes the tsan preset's clang++-14),
# JOBS (build jobs; default: number of cores).
set -euo pipefail

version=2021.8.0
source_package=onetbb
tarball=${source_package}_${version}.orig.tar.xz
sha256=7e9111b8bb59c8800bf6d0b06afe7b0891937443d2dae1ee1101c8e2ede6a7ef

prefix=${TSAN_TBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pipescope/tbb-tsan-$version}
cxx=${CXX:-c++}
jobs=${JOBS:-$(nproc)}
flags="-fsanitize=thread"
# What the install was built with: a different compiler means a rebuild.
stamp="oneTBB $version $sha256 $($cxx --version | sed -n 1p) $flags"

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

# fetch_source: downloads the source package of upstream $version into
# $work with apt-get source. apt runs with a private source list and private
# index folders, so the system's apt configuration and package lists are left
# as they are and no root is needed: the private list holds every deb entry
# apt is configured with, turned into deb-src (so only the Sources indices
# are fetched, signed like the rest of the archive and checked by apt with
# the system's keys). Any Debian revision of $version will do: they share
# the orig tarball, whose sha256 is checked below.
# (It runs as a condition, where set -e is off: every step that can fail
# says so.)
fetch_source() {
  local apt=$work/apt list parts f
  mkdir -p "$apt/sources.list.d" "$apt/lists/partial" "$apt/cache/archives/partial" "$work/src" || return 1
  eval "$(apt-config shell list Dir::Etc::SourceList/f parts Dir::Etc::SourceParts/d)"
  : > "$apt/sources.list"
  # One-line format: "deb [options] URI SUITE COMPONENT..." -> deb-src.
  for f in "$list" "$parts"*.list; do
    if [ -f "$f" ]; then sed -nE 's/^[[:space:]]*deb[[:space:]]+/deb-src /p' "$f" >> "$apt/sources.list"; fi
  done
  # deb822 format: every stanza's Types becomes deb-src (Enabled: no stays).
  for f in "$parts"*.sources; do
    if [ -f "$f" ]; then sed -E 's/^(types:).*$/\1 deb-src/I' "$f" > "$apt/sources.list.d/$(basename "$f")"; fi
  done
  local opts=(-o Dir::Etc::SourceList="$apt/sources.list"
    -o Dir::Etc::SourceParts="$apt/sources.list.d" -o Dir::State::Lists="$apt/lists"
    -o Dir::Cache="$apt/cache")
  # As root, apt downloads as the unprivileged _apt user: let it write there.
  chmod 755 "$work"
  if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$apt/lists/partial" "$apt/cache/archives/partial" "$work/src"
  fi
  apt-get "${opts[@]}" -qq update >&2 || return 1
  # The newest Debian revision of the pinned upstream version.
  local deb_version
  deb_version=$(apt-cache "${opts[@]}" showsrc "$source_package" 2>/dev/null |
    awk -v v="$version-" '$1 == "Version:" && index($2, v) == 1 {print $2}' | sort -V | tail -n 1)
  if [ -z "$deb_version" ]; then
    echo "error: no source package $source_package $version-* in apt's configured sources" >&2
    return 1
  fi
  echo "fetching $source_package $deb_version with apt-get source" >&2
  (cd "$work/src" && apt-get "${opts[@]}" -qq source --download-only "$source_package=$deb_version" >&2) ||
    return 1
  mv "$work/src/$tarball" "$work/$tarball" || return 1
}

if [ -n "${TSAN_TBB_TARBALL:-}" ]; then
  cp "$TSAN_TBB_TARBALL" "$work/$tarball"
elif ! fetch_source; then
  echo "error: cannot fetch $tarball through apt's configured sources" >&2
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
# library needs the TSan runtime (GCC links it in; with clang the instrumented
# executable carries it), so it is never loaded without it.
# RelWithDebInfo: TSan reports name the frames inside the library.
# -Wno-tsan (GCC only; clang does not know it): GCC warns ~50 times that TSan does not model
# atomic_thread_fence. oneTBB's fences are seq_cst store-load barriers
# (its sleep/wake-up protocol in concurrent_monitor.h and arena.h, the
# owner/thief handshake on a task pool in arena_slot.cpp); the tasks and
# their data are handed over through acquire/release atomics, compare-exchange
# and mutexes, which TSan does see. (oneTBB runs its own tests under TSan.)
warnings=-Wno-tsan
case "$($cxx --version | sed -n 1p)" in *clang*) warnings= ;; esac
cmake -S "$work/oneTBB-$version" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$warnings" -DTBB_SANITIZE=thread \
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
