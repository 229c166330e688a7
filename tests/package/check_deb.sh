#!/bin/sh
# The Debian package as `bash scripts/dev.sh package` builds it, unpacked
# into a scratch root (dpkg-deb -x, what dpkg -x does) and used from there:
# its control fields, that it holds every file where Debian looks for it,
# that its Depends name the package of every shared library its ELF files
# need (dpkg-shlibdeps: so MPI and Hyperscan where the build has them), that
# nothing in it names the source or build tree or carries an RPATH, and that
# the installed binary analyses the installed sample, pkg-config gives the
# installed header and library (a C program builds and runs with them),
# python3 imports the installed module, which loads the installed library, and
# the man page covers every subcommand.
#
#   check_deb.sh SOURCE_DIR PACKAGE_BUILD_DIR VERSION WORK_DIR
#
# Skipped (exit 77) when PACKAGE_BUILD_DIR holds no package: `dev.sh test`
# builds it before running the suite.
set -eu
src=$1 pkg_build=$2 version=$3 work=$4
fail() { echo "FAIL: $*"; exit 1; }

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
deb=$pkg_build/pipescope_${version}_${arch}.deb
if [ ! -f "$deb" ]; then
  echo "skipped: no $deb (bash scripts/dev.sh package builds it)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
root=$work/root
dpkg-deb -x "$deb" "$root"
echo "checking $deb ($(du -k "$deb" | cut -f1) KiB)"

# Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
test "$(field Package)" = pipescope || fail "Package: $(field Package)"
test "$(field Version)" = "$version" || fail "Version: $(field Version), not $version"
test "$(field Architecture)" = "$arch" || fail "Architecture: $(field Architecture)"
# The shared library's ldconfig runs from dpkg's trigger.
dpkg-deb -I "$deb" triggers 2>/dev/null | grep -qx 'activate-noawait ldconfig' ||
  fail "no ldconfig trigger in the control archive"
depends=$(field Depends)
echo "Depends: $depends"
# The package names in Depends, alternatives included, without versions.
dep_names=$(printf '%s\n' "$depends" | tr ',|' '\n\n' | sed 's/^ *//; s/[ (].*//')

# Every file where Debian's tools look for it, and nothing outside /usr.
usr=$root/usr
lib=$usr/lib/$multiarch
share=$usr/share/pipescope
python_dir=$usr/lib/python3/dist-packages
for f in "$usr/bin/pipescope" "$lib/libpipescope_timer.so.1" "$lib/libpipescope_timer.so" \
         "$usr/include/pipescope_timer.h" "$lib/pkgconfig/pipescope_timer.pc" \
         "$python_dir/pipescope_timer.py" "$share/log_events.patterns" \
         "$share/examples/multi/expected.json" "$usr/share/man/man1/pipescope.1.gz"; do
  test -e "$f" || fail "no ${f#"$root"} in the package"
done
zcat "$usr/share/doc/pipescope/changelog.gz" | head -n 1 | grep -q "^pipescope ($version) " ||
  fail "share/doc/pipescope/changelog.gz is not the changelog of $version"
test "$(ls -A "$root")" = usr || fail "the package installs outside /usr: $(ls -A "$root")"
test "$(find "$root" -name pipescope_timer.py | wc -l)" = 1 ||
  fail "more than one pipescope_timer.py: $(find "$root" -name pipescope_timer.py)"
# Debian's python3 (python3 on PATH may be another) imports from that folder.
debian_python=/usr/bin/python3
"$debian_python" -c "import sys; sys.exit('/usr/lib/python3/dist-packages' not in sys.path)" ||
  fail "/usr/lib/python3/dist-packages is not on $debian_python's sys.path"
cmp "$share/log_events.patterns" "$src/data/log_events.patterns" ||
  fail "the installed log_events.patterns is not data/log_events.patterns"
diff -r "$share/examples/multi" "$src/testdata/multi" >/dev/null ||
  fail "the installed examples/multi is not testdata/multi"

# The ELF files: no RPATH or RUNPATH (the build tree's), and a package in
# Depends for each library they need, found the way the loader finds it.
elfs="$usr/bin/pipescope $lib/libpipescope_timer.so.1"
for elf in $elfs; do
  if readelf -d "$elf" | grep -E '\((RPATH|RUNPATH)\)'; then
    fail "${elf#"$root"} has an RPATH or RUNPATH"
  fi
  for needed in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    # "libc.so.6 => /lib/.../libc.so.6 (0x...)", or the loader, "/lib64/ld-linux-x86-64.so.2 (0x...)".
    path=$(LD_LIBRARY_PATH=$lib ldd "$elf" | awk -v n="$needed" '
      $1 == n { print $3 }
      substr($1, length($1) - length(n)) == "/" n { print $1 }')
    case "$path" in
      "$root"/*) continue ;;  # in this package
      /*) ;;
      *) fail "${elf#"$root"} needs $needed, which ldd does not find" ;;
    esac
    # dpkg's database names a library by the path its package ships (/lib or
    # /usr/lib, whichever: merged /usr).
    owner=$( (dpkg-query -S "$path" || dpkg-query -S "${path#/usr}" || dpkg-query -S "/usr$path") \
      2>/dev/null | head -n 1 | cut -d: -f1)
    test -n "$owner" || fail "no package owns $path (${elf#"$root"} needs $needed)"
    printf '%s\n' "$dep_names" | grep -qx "$owner" ||
      fail "${elf#"$root"} needs $needed from $owner, which Depends does not name"
    echo "  ${elf#"$usr"/} needs $needed: $owner"
  done
done
# Nothing names the source tree, the package's build tree or ccache.
for needle in "$src" "$pkg_build" ccache; do
  hits=$(grep -rlaF "$needle" "$root" || true)
  test -z "$hits" || fail "these files name $needle: $hits"
done

# The installed binary on the installed sample: the hand-worked figures.
export LD_LIBRARY_PATH="$lib"
pipescope=$usr/bin/pipescope
# (Its second line says which kernel runs the log events' literal search here.)
test "$("$pipescope" --version | head -n 1)" = "pipescope $version" || fail "--version: $("$pipescope" --version)"
"$pipescope" --version | sed -n 2p | grep -q "^log events: " || fail "--version: $("$pipescope" --version)"
"$pipescope" analyze "$share/examples/multi" -o "$work/out" >"$work/analyze.txt" ||
  fail "analyze of the installed sample: exit $?"
python3 "$src/tests/reference/compare_summary.py" "$work/out/summary.json" \
  "$share/examples/multi/expected.json"
# Log events are on in a build with Hyperscan, and the installed pattern file
# is a valid --patterns file (its entries replace the compiled-in ones, the
# same); a build without says they are off.
if readelf -d "$pipescope" | grep -q '\[libhs\.so'; then
  grep -q '^Log events: [0-9]' "$work/analyze.txt" || fail "analyze found no log events"
  "$pipescope" analyze "$share/examples/multi" -o "$work/out-patterns" --quiet \
    --patterns "$share/log_events.patterns" || fail "analyze --patterns the installed file: exit $?"
  python3 "$src/tests/reference/compare_summary.py" "$work/out-patterns/summary.json" \
    "$share/examples/multi/expected.json"
else
  grep -q 'built without Hyperscan' "$work/analyze.txt" ||
    fail "a build without Hyperscan must say its log events are off"
fi

# pkg-config from the package: the installed header and library (the .pc
# finds its prefix from its own folder), and a C program built with them.
pc() { PKG_CONFIG_PATH=$lib/pkgconfig pkg-config "$@" pipescope_timer; }
cflags=$(pc --cflags) libs=$(pc --libs)
include_dir=$(printf '%s' "$cflags" | sed 's/^ *-I//; s/ *$//')
test "$(cd "$include_dir" && pwd -P)" = "$(cd "$usr/include" && pwd -P)" ||
  fail "pkg-config --cflags pipescope_timer: $cflags, not $usr/include"
lib_dir=$(printf '%s' "$libs" | sed 's/^ *-L//; s/ .*//')
test "$(cd "$lib_dir" && pwd -P)" = "$(cd "$lib" && pwd -P)" ||
  fail "pkg-config --libs pipescope_timer: $libs, not -L$lib"
cc $cflags "$src/tests/python/use_timer.c" -o "$work/use_timer" $libs
"$work/use_timer" "$work/c.ivl"
test -s "$work/c.ivl" || fail "the C program wrote no record"

# The Python module from the package, loading the package's library.
cd "$work"
PYTHONPATH=$python_dir "$debian_python" -c "
import os, pipescope_timer as p
assert p.__file__ == '$python_dir/pipescope_timer.py', p.__file__
lib = p.library_path()
assert lib == os.path.normpath('$lib/libpipescope_timer.so.1'), lib
t = p.JobTimer('$work/py.ivl', backend='host')
with t.job('forward', 0):
    pass
t.close()
assert t.jobs_recorded == 1, t.jobs_recorded
" || fail "import pipescope_timer from the package"

# The man page: one subsection per subcommand that --help lists, with its
# options.
man=$usr/share/man/man1/pipescope.1.gz
gzip -t "$man" || fail "pipescope.1.gz is no gzip file"
zcat "$man" >"$work/pipescope.1"
grep -q '^\.TH PIPESCOPE "1"' "$work/pipescope.1" || fail "pipescope.1 has no .TH PIPESCOPE 1"
commands=$("$pipescope" --help | sed -n '/^Subcommands:/,$ s/^  \([a-z][a-z-]*\).*/\1/p')
test "$(printf '%s\n' "$commands" | wc -l)" -ge 7 || fail "--help lists these subcommands: $commands"
for c in $commands; do
  grep -qF ".SS \"pipescope $c\"" "$work/pipescope.1" || fail "pipescope.1 has no section for $c"
  grep -qF "Usage: pipescope $c [OPTIONS]" "$work/pipescope.1" ||
    fail "pipescope.1 lacks the options of $c"
done
if command -v groff >/dev/null; then
  warnings=$(groff -man -ww -z "$work/pipescope.1" 2>&1)
  test -z "$warnings" || fail "groff warns on pipescope.1: $warnings"
fi
echo "package OK: $(basename "$deb"), Depends: $depends"
