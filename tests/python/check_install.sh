#!/bin/sh
# The job timer installed by `cmake --install`: the library, the header, the
# pkg-config file and the Python module, which must import from the prefix
# and load the library installed beside it (not the build tree's).
#
#   check_install.sh BUILD_DIR PREFIX PYTHON
set -eu
build=$1 prefix=$2 python=$3
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
module=$(find "$prefix" -name pipescope_timer.py)
pc=$(find "$prefix" -name pipescope_timer.pc)
test -n "$module" || { echo "FAIL: no pipescope_timer.py under $prefix"; exit 1; }
test -n "$pc" || { echo "FAIL: no pipescope_timer.pc under $prefix"; exit 1; }
test -f "$prefix/include/pipescope_timer.h" || { echo "FAIL: no include/pipescope_timer.h"; exit 1; }
# pkg-config finds the prefix from the file's own folder.
libs=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --libs pipescope_timer)
cflags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags pipescope_timer)
include_dir=$(echo "$cflags" | sed 's/^ *-I//; s/ *$//')
test "$(cd "$include_dir" && pwd -P)" = "$(cd "$prefix/include" && pwd -P)" ||
  { echo "FAIL: pkg-config --cflags: $cflags"; exit 1; }
# A C program built with the pkg-config flags, run against the installed library.
cc $cflags "$(dirname "$0")/use_timer.c" -o "$prefix/use" $libs
LD_LIBRARY_PATH=$(dirname "$(find "$prefix" -name 'libpipescope_timer.so.1')") "$prefix/use" "$prefix/c.ivl"
test -s "$prefix/c.ivl" || { echo "FAIL: the C program wrote nothing"; exit 1; }
# The module, from the prefix only (cd away from the build tree).
cd "$prefix"
PYTHONPATH=$(dirname "$module") "$python" -c "
import os, sys, pipescope_timer as p
lib = p.library_path()
assert p.__file__.startswith('$prefix'), p.__file__
assert lib.startswith('$prefix') and os.path.exists(lib), lib
t = p.JobTimer('$prefix/py.ivl', backend='host')
with t.job('forward', 0):
    pass
t.close()
assert t.jobs_recorded == 1
print('installed module', p.__file__, 'loads', lib)
"
