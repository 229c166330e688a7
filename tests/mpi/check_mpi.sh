#!/bin/sh
# `analyze --mpi` under mpirun with 1 to 4 ranks on one machine must write the
# summary.json, trace.json and trace.pftrace of a single-process run, byte for
# byte (the analysis runs by step ranges across the ranks), and its HTML report
# where it draws every step (the --mpi report embeds the drawn steps only).
#
#   sh check_mpi.sh PIPESCOPE MPIRUN WORKDIR CASE
#
# CASE: single | multi (the bundled samples), simulated (a generated
# two-machine run, sent in tiny messages so every file takes many batches),
# local (per-node folders read with --local; PIPESCOPE_NODE places the ranks
# on two "nodes", and a template without {node} is one shared folder read
# once), failure (an unreadable file: exit 2 naming it, as a single process;
# with --allow-missing a warning and the single-process figures, --strict:
# exit 2; a missing node folder: exit 2, with --allow-missing the other
# nodes' figures), hang (a rank blocked on a FIFO: abort, no hang), nsys
# (Nsight Systems exports of two hosts, read where they are shared out and
# joined on rank 0: one export a rank, then one report a host holding its
# every GPU process, named against the hosts' order; a report without its
# export: exit 2).
set -eu
cli=$1
mpirun=$2
work=$3
case=$4
testdata=$(cd "$(dirname "$0")/../../testdata" && pwd)

rm -rf "$work"
mkdir -p "$work"
launch="$mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && launch="$launch --allow-run-as-root"
fail() { echo "FAIL: $*" >&2; exit 1; }

# reference OUT PATH...: the single-process run.
reference() {
  out=$1
  shift
  "$cli" analyze "$@" -o "$out" -q --allow-output-in-input 2> "$out.err" || fail "single-process run failed: $(cat "$out.err")"
}

# same_as REF OUT: the MPI run wrote the same files.
same_as() {
  cmp "$1/summary.json" "$2/summary.json" || fail "$2/summary.json differs from $1/summary.json"
  cmp "$1/trace.json" "$2/trace.json" || fail "$2/trace.json differs from $1/trace.json"
  if [ -e "$1/trace.pftrace" ]; then
    cmp "$1/trace.pftrace" "$2/trace.pftrace" || fail "$2/trace.pftrace differs from $1/trace.pftrace"
  fi
}

# all_steps OUT: every step of the run OUT/summary.json describes, as
# --html-steps lists them.
all_steps() {
  python3 -c 'import json, sys; print(",".join(str(s["step"]) for s in json.load(open(sys.argv[1]))["steps"]))' \
    "$1/summary.json"
}

# mpi NP OUT ARGS...: analyze --mpi under mpirun (60 s at most).
mpi() {
  np=$1
  out=$2
  shift 2
  timeout 60 $launch -np "$np" "$cli" analyze --mpi -o "$out" -q --allow-output-in-input "$@" \
    > "$out.log" 2>&1
}

# on_nodes NODES NP OUT ARGS...: like mpi, rank r on node (r * NODES / NP).
on_nodes() {
  nodes=$1
  np=$2
  out=$3
  shift 3
  timeout 60 $launch -np "$np" sh -c 'n=$0 p=$1; shift; PIPESCOPE_NODE=$((OMPI_COMM_WORLD_RANK * n / p)) exec "$@"' \
    "$nodes" "$np" "$cli" analyze --mpi -o "$out" -q --allow-output-in-input "$@" > "$out.log" 2>&1
}

case $case in
  single | multi)
    reference "$work/ref" "$testdata/$case" --perfetto --flows
    # The HTML report drawing every step: the steps it embeds are the single
    # process's too, so the files are the same.
    steps=$(all_steps "$work/ref")
    reference "$work/ref-html" "$testdata/$case" --html "$work/ref.html" --html-steps "$steps"
    for np in 1 2 3 4; do
      mpi $np "$work/np$np" "$testdata/$case" --perfetto --flows --html "$work/np$np.html" \
        --html-steps "$steps" || fail "np $np: $(cat "$work/np$np.log")"
      same_as "$work/ref" "$work/np$np"
      cmp "$work/ref.html" "$work/np$np.html" || fail "np $np: the HTML report differs"
    done
    ;;
  simulated)
    "$cli" simulate -o "$work/run" --schedule vpp --stages 4 --micro-batches 8 --machines 2 \
      --steps 4 --noise-per-job 3 --comm --seed 5 > /dev/null
    gzip "$work/run/machine1/workerlog.1"  # one compressed input among plain ones
    reference "$work/ref" "$work/run" --perfetto
    steps=$(all_steps "$work/ref")
    reference "$work/ref-html" "$work/run" --html "$work/ref.html" --html-steps "$steps"
    for np in 1 2 3 4; do
      PIPESCOPE_MPI_MESSAGE_BYTES=4096 mpi $np "$work/np$np" "$work/run" --perfetto \
        --html "$work/np$np.html" --html-steps "$steps" || fail "np $np: $(cat "$work/np$np.log")"
      same_as "$work/ref" "$work/np$np"
      cmp "$work/ref.html" "$work/np$np.html" || fail "np $np: the HTML report differs"
    done
    # Two machines, one reading 3 ms ahead (the offset is estimated from every
    # range's evidence and the windows move), tensor-parallel pairs, lr and comm
    # jobs and log events.
    "$cli" simulate -o "$work/skew" --schedule 1f1b --stages 4 --micro-batches 8 --machines 2 \
      --devices-per-stage 2 --steps 6 --skew 1:3000000 --lr --comm --events --seed 9 > /dev/null
    reference "$work/ref-skew" "$work/skew" --perfetto
    for np in 2 3 4; do
      mpi $np "$work/skew$np" "$work/skew" --perfetto --html "$work/skew$np.html" ||
        fail "skew, np $np: $(cat "$work/skew$np.log")"
      same_as "$work/ref-skew" "$work/skew$np"
      # The default steps (median and slowest): the same report at every rank count.
      [ $np -eq 2 ] || cmp "$work/skew2.html" "$work/skew$np.html" ||
        fail "skew, np $np: the HTML report differs from np 2's"
    done
    grep -q 'embeds only the steps it draws' "$work/skew2.html" ||
      fail "the --mpi report does not say which steps it embeds"
    # Machine 1's clock stepped back 150 ms halfway through its logs: undone
    # by the ranks that read its files, from gathered parts.
    "$cli" simulate -o "$work/stepped" --schedule 1f1b --stages 4 --micro-batches 8 --machines 2 \
      --steps 8 --seed 11 > /dev/null
    python3 - "$work/stepped"/machine1/workerlog.* <<'PY'
import re, sys
from decimal import Decimal
for path in sys.argv[1:]:
    lines = open(path).read().splitlines(keepends=True)
    half = len(lines) // 2
    def back(m):
        return f"{m.group(1)}{Decimal(m.group(2)) - 150:.6f}"
    for i in range(half, len(lines)):
        lines[i] = re.sub(r"(job_(?:start|end)_time = )([0-9.]+)", back, lines[i])
    open(path, "w").write("".join(lines))
PY
    reference "$work/ref-step" "$work/stepped" --perfetto
    grep -q '"clock_step"' "$work/ref-step/summary.json" || fail "the stepped folder has no clock step"
    for np in 1 2 3 4; do
      mpi $np "$work/step$np" "$work/stepped" --perfetto ||
        fail "clock step, np $np: $(cat "$work/step$np.log")"
      same_as "$work/ref-step" "$work/step$np"
    done
    # A --devices selection keeps global indices the same way.
    reference "$work/ref-sel" "$work/run" --devices 0,2-3
    mpi 4 "$work/sel" "$work/run" --devices 0,2-3 || fail "--devices: $(cat "$work/sel.log")"
    same_as "$work/ref-sel" "$work/sel"
    ;;
  local)
    # Two "nodes", each with its own folder: local/machine0, local/machine1.
    "$cli" simulate -o "$work/local" --schedule 1f1b --stages 4 --micro-batches 8 --machines 2 \
      --noise-per-job 2 --seed 9 > /dev/null
    reference "$work/ref1" "$work/local/machine0"
    reference "$work/ref2" "$work/local/machine0" "$work/local/machine1"
    on_nodes 1 1 "$work/np1" --local "$work/local/machine{node}" || fail "np 1: $(cat "$work/np1.log")"
    same_as "$work/ref1" "$work/np1"
    for np in 2 4; do
      on_nodes 2 $np "$work/np$np" --local "$work/local/machine{node}" ||
        fail "np $np: $(cat "$work/np$np.log")"
      same_as "$work/ref2" "$work/np$np"
    done
    # Without {node} every node names the same folder: its files are read once.
    reference "$work/ref-shared" "$work/local"
    on_nodes 2 4 "$work/shared" --local "$work/local" || fail "shared: $(cat "$work/shared.log")"
    same_as "$work/ref-shared" "$work/shared"
    ;;
  failure)
    cp -r "$testdata/multi" "$work/logs"
    rm "$work/logs/machine1/workerlog.1"
    ln -s "$work/nowhere" "$work/logs/machine1/workerlog.1"  # listed, cannot be opened
    status=0
    mpi 2 "$work/refused" "$work/logs" || status=$?
    [ "$status" -eq 2 ] || fail "unreadable file: exit status $status, expected 2: $(cat "$work/refused.log")"
    grep -q "$work/logs/machine1/workerlog.1" "$work/refused.log" ||
      fail "no error naming the file: $(cat "$work/refused.log")"
    [ ! -e "$work/refused/summary.json" ] || fail "unreadable file: summary.json written"
    reference "$work/ref" "$work/logs" --allow-missing
    mpi 2 "$work/warn" "$work/logs" --allow-missing ||
      fail "--allow-missing should not fail: $(cat "$work/warn.log")"
    same_as "$work/ref" "$work/warn"
    grep -q "could not read $work/logs/machine1/workerlog.1" "$work/warn.log" ||
      fail "no warning naming the file: $(cat "$work/warn.log")"
    status=0
    mpi 2 "$work/strict" "$work/logs" --strict --allow-missing || status=$?
    [ "$status" -eq 2 ] || fail "--strict: exit status $status, expected 2: $(cat "$work/strict.log")"
    # A node whose --local folder is missing: exit 2; with --allow-missing a
    # warning and the other nodes' figures.
    status=0
    on_nodes 3 3 "$work/nodes-refused" --local "$testdata/multi/machine{node}" || status=$?
    [ "$status" -eq 2 ] || fail "missing node folder: exit status $status, expected 2: $(cat "$work/nodes-refused.log")"
    reference "$work/ref-nodes" "$testdata/multi/machine0" "$testdata/multi/machine1"
    on_nodes 3 3 "$work/nodes" --local "$testdata/multi/machine{node}" --allow-missing ||
      fail "missing node folder with --allow-missing should not fail: $(cat "$work/nodes.log")"
    same_as "$work/ref-nodes" "$work/nodes"
    grep -q "node 2) could not list its --local folder" "$work/nodes.log" ||
      fail "no warning naming node 2: $(cat "$work/nodes.log")"
    ;;
  nsys)
    # One export a rank: ranks from each export's environment.
    "$cli" simulate --format nsys -o "$work/exports" --schedule 1f1b --stages 4 --micro-batches 8 \
      --machines 2 --steps 3 --kernels-per-job 4 --skew 1:2000000 --seed 5 > /dev/null
    reference "$work/ref" "$work/exports" --perfetto
    grep -q '"kernel_view"' "$work/ref/summary.json" || fail "no kernel view in $work/ref/summary.json"
    for np in 1 2 3 4; do
      PIPESCOPE_MPI_MESSAGE_BYTES=4096 mpi $np "$work/np$np" "$work/exports" --perfetto ||
        fail "np $np: $(cat "$work/np$np.log")"
      same_as "$work/ref" "$work/np$np"
    done
    # One report a host, every GPU process of it, without the ranks'
    # environment (ranks from NCCL's payloads or the CUDA devices); host
    # node1's report named first, so that discovery's devices of one report
    # hold the processes of the other.
    python3 "$(dirname "$0")/nsys_node_reports.py" "$work/exports" "$work/nodes" \
      node0=b.sqlite node1=a.sqlite
    reference "$work/ref-nodes" "$work/nodes"
    for np in 1 2 3; do
      mpi $np "$work/nodes$np" "$work/nodes" || fail "node reports, np $np: $(cat "$work/nodes$np.log")"
      same_as "$work/ref-nodes" "$work/nodes$np"
    done
    # A report whose export is not given: refused on rank 0, exit 2.
    cp "$work/exports/rank_0.sqlite" "$work/lone.sqlite"
    : > "$work/lone2.nsys-rep"
    status=0
    mpi 2 "$work/refused" "$work/lone.sqlite" "$work/lone2.nsys-rep" || status=$?
    [ "$status" -eq 2 ] || fail "a report without its export: exit status $status: $(cat "$work/refused.log")"
    grep -q "nsys export --type sqlite" "$work/refused.log" ||
      fail "no export command in the message: $(cat "$work/refused.log")"
    ;;
  hang)
    # Rank 1 gets the FIFO (smaller than the log) and blocks opening it.
    cp "$testdata/single/workerlog.0" "$work/workerlog.0"
    mkfifo "$work/workerlog.1"
    start=$(date +%s)
    status=0
    mpi 2 "$work/out" "$work/workerlog.0" "$work/workerlog.1" --mpi-timeout 2 || status=$?
    [ "$status" -ne 0 ] || fail "a hung rank should abort the run"
    [ "$status" -ne 124 ] || fail "the run hung: $(cat "$work/out.log")"
    grep -q "no progress from rank 1" "$work/out.log" || fail "no message naming rank 1: $(cat "$work/out.log")"
    [ $(($(date +%s) - start)) -lt 30 ] || fail "took too long to abort"
    ;;
  *)
    fail "unknown case $case"
    ;;
esac
echo "ok: $case"
