#!/bin/sh
# pipescope.1.gz from the binary's own help: help2man writes the name,
# synopsis, options and version from `pipescope --help` and `--version`; the
# COMMANDS section holds each subcommand's whole `--help`, one subsection
# each, for every subcommand `pipescope --help` lists (a new one is never left
# out); FILES names the shared data that is installed with it.
#
#   man_page.sh PIPESCOPE HELP2MAN DATADIR OUT.1.gz
set -eu
cli=$1 help2man=$2 datadir=$3 out=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "  analyze, analyse   Analyse ..." under "Subcommands:"; continuation lines
# are indented further.
commands=$("$cli" --help | sed -n '/^Subcommands:/,$ s/^  \([a-z][a-z-]*\).*/\1/p')
[ -n "$commands" ] || { echo "man_page.sh: $cli --help lists no subcommands" >&2; exit 1; }

# Help text as roff lines kept as they are (.nf): backslashes and minus signs
# escaped, a line that starts with a control character made text.
roff() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

{
  cat <<'ROFF'
[COMMANDS]
Each command's options, as \fBpipescope \fICOMMAND\fB \-\-help\fR prints them.
ROFF
  for c in $commands; do
    printf '.SS "pipescope %s"\n.nf\n' "$c"
    "$cli" "$c" --help | roff
    printf '.fi\n'
  done
  share=$(printf '%s' "$datadir/pipescope" | roff)
  cat <<ROFF
[FILES]
.TP
.I $share/log_events.patterns
The log event library compiled into the binary, its format described at the top:
the reference and template for
.BR \\-\\-patterns ,
whose entries are added to the library or replace the entry with the same id.
.TP
.I $share/examples/multi/
A two\\-machine interleaved (VPP) run of four devices and its hand\\-worked figures
.RI ( EXPECTED.md ", " expected.json ):
.B pipescope analyze $share/examples/multi \\-o out
[SEE ALSO]
The user guide, the file formats and the job timer (libpipescope_timer, the Python
module pipescope_timer, \\fBpkg\\-config pipescope_timer\\fR): docs/guide.md,
docs/formats.md and docs/timer.md in pipescope's source.
ROFF
} >"$work/commands.h2m"

# help2man reads the top-level --help without its list of subcommands, which
# COMMANDS gives in full, and the first line of --version only (the second
# names the building machine's literal-search kernel).
cat >"$work/pipescope" <<SH
#!/bin/sh
if [ "\$*" = --help ]; then "$cli" --help | sed '/^Subcommands:/,\$d'
elif [ "\$*" = --version ]; then "$cli" --version | sed -n 1p
else exec "$cli" "\$@"; fi
SH
chmod +x "$work/pipescope"
"$help2man" --no-info --section 1 --name 'pipeline-parallel training timeline analysis' \
  --include "$work/commands.h2m" --output "$work/pipescope.1" "$work/pipescope"
gzip -9n <"$work/pipescope.1" >"$out.tmp"
mv "$out.tmp" "$out"
