#!/usr/bin/env python3
"""The kernel view of real and generated traces: the engine against independent figures, to the ns.

    check_kernel_view.py --cli build/cli/pipescope [--traces DIR]

For each real PyTorch profiler trace in DIR (default: shared/reference/kineto
beside the repository), runs `pipescope analyze TRACE -o OUT --quiet`, requires
exit 0, and compares OUT/summary.json's `kernel_view` with the independent
reference (kernel_reference.py) key by key: every *_ns figure and count equal to
the nanosecond, the ratios within 1e-9, null where the reference says null, the
step lists equal, `path` on its file name. One rank's trace gives no NCCL kernel a
peer: the three with NCCL kernels (UNKNOWN_SPLIT) must write transfer_ns,
wait_ns, wait_share and transfer_share null, in the totals and per rank, the
window, compute and idle still numbers; the other three a split in numbers. Then the multi-rank runs of kernel_run.py (Megatron-style traces without
labels: 1F1B and interleaved, data-parallel allreduce, two machines, with and
without `Comms Id`, two generations of NCCL kernel names): the engine against
the truth the generator computed from its own simulation (who waited for whom),
and against the reference on the files; and runs whose second machine's clock
reads ahead or behind (machineK/ folders), where the engine must find the
offset from the matched kernels and undo it. Then the same for the C++
simulator's runs (`pipescope simulate --format torch-kernels`, whose
expected.json the simulator computes from its own timeline): the engine
against expected.json and against the reference on the files, and with a
machine's --skew, the offset found and the figures against expected.json.
Prints one line per case; exits 1 when one differs (the real traces are
skipped, with a note, when their folder is not there).
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kernel_reference  # noqa: E402

# (name, kernel_run.py arguments): small, so that the suite stays quick.
GENERATED = [
    ("1f1b-pp4-dp2-2machines", ["--pp", "4", "--dp", "2", "--micro-batches", "8", "--steps", "3",
                                "--schedule", "1f1b", "--machines", "2"]),
    ("interleaved-pp4-dp2-v2", ["--pp", "4", "--dp", "2", "--micro-batches", "8", "--steps", "3",
                                "--schedule", "interleaved", "--chunks", "2", "--machines", "2"]),
    ("1f1b-no-comms-id-old-names", ["--pp", "4", "--dp", "2", "--micro-batches", "8",
                                    "--steps", "3", "--schedule", "1f1b", "--machines", "2",
                                    "--no-comms-id", "--nccl-names", "old"]),
    ("1f1b-machine-folders-same-clock", ["--pp", "4", "--dp", "2", "--micro-batches", "8",
                                         "--steps", "3", "--schedule", "1f1b", "--machines", "2",
                                         "--machine-folders"]),
    ("interleaved-pp2-dp3-gz-no-id", ["--pp", "2", "--dp", "3", "--micro-batches", "4",
                                      "--steps", "2", "--schedule", "interleaved", "--chunks", "3",
                                      "--no-comms-id", "--gz", "--seed", "5",
                                      "--first-step", "40"]),
    # No group descriptions: the layout from the point-to-point pattern, a chain
    # per pipeline (1F1B) and a ring per pipeline (interleaved).
    ("1f1b-pp4-dp2-no-descriptions", ["--pp", "4", "--dp", "2", "--micro-batches", "8",
                                      "--steps", "2", "--schedule", "1f1b",
                                      "--no-group-descriptions", "--seed", "7"]),
    ("interleaved-pp4-dp2-no-descriptions", ["--pp", "4", "--dp", "2", "--micro-batches", "8",
                                             "--steps", "2", "--schedule", "interleaved",
                                             "--chunks", "2", "--no-group-descriptions",
                                             "--no-comms-id"]),
]

DEFAULT_TRACES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "kineto"
# The real traces that are one rank of a multi-rank run with NCCL kernels in their
# steps: none of those kernels has a peer in the trace, so the NCCL time is not
# split (transfer_ns, wait_ns and the two shares null, in the totals and in every
# step where such a kernel runs beyond compute); the other three have no NCCL
# kernel and a split like any other.
UNKNOWN_SPLIT = {
    "rank-0-of-16.negative_queue_length.json.gz",
    "rank-0-of-2.nccl_data.json.gz",
    "rank-3-of-8.trace_diff_control.json.gz",
}
SPLIT_KEYS = ("transfer_ns", "wait_ns", "wait_share", "transfer_share")
RATIO_KEYS = {"bubble_ratio", "idle_share", "wait_share", "transfer_share"}
TOLERANCE = 1e-9


class Failure(Exception):
    pass


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def first_difference(actual, expected, where="kernel_view", extra=None):
    """The first key path where `actual` differs from `expected`, with both values;
    None when they agree. Keys only in `actual` are appended to `extra` (when
    given) as (path, value), to be reported once every value agrees."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return where, actual, expected
        for key in expected:
            if key not in actual:
                return f"{where}.{key}", "<missing>", expected[key]
            diff = first_difference(actual[key], expected[key], f"{where}.{key}", extra)
            if diff:
                return diff
        if extra is not None:
            extra.extend((f"{where}.{key}", actual[key]) for key in actual
                         if key not in expected)
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return where, actual, expected
        if len(actual) != len(expected):
            return f"{where} (length)", len(actual), len(expected)
        for i, (a, e) in enumerate(zip(actual, expected)):
            diff = first_difference(a, e, f"{where}[{i}]", extra)
            if diff:
                return diff
        return None
    key = where.rsplit(".", 1)[-1]
    if expected is None:
        ok = actual is None     # an unknown split: null, never a number
    elif key in RATIO_KEYS:
        ok = (isinstance(actual, (int, float)) and not isinstance(actual, bool)
              and abs(actual - expected) <= TOLERANCE)
    elif key == "path":
        ok = isinstance(actual, str) and Path(actual).name == Path(expected).name
    elif is_int(expected):
        ok = is_int(actual) and actual == expected   # ns and counts: exactly, as integers
    elif isinstance(expected, bool):
        ok = actual is expected
    else:
        ok = actual == expected
    return None if ok else (where, actual, expected)


def compare(actual, expected):
    """A value that differs first; else a key the contract's schema does not have."""
    extra = []
    diff = first_difference(actual, expected, extra=extra)
    if diff is None and extra:
        where, value = extra[0]
        diff = (where, value, "<not in the schema>")
    return diff


def check_trace(cli, trace, work):
    out = Path(work) / "out"
    r = subprocess.run([str(cli), "analyze", str(trace), "-o", str(out), "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"analyze exit {r.returncode}\n{(r.stderr or r.stdout)[-800:]}")
    summary_path = out / "summary.json"
    if not summary_path.exists():
        raise Failure("no summary.json")
    summary = json.loads(summary_path.read_text())
    actual = summary.get("kernel_view")
    if actual is None:
        raise Failure("summary.json has no kernel_view")
    # One rank's trace shows no pipeline: no layout, no stage.
    if "layout" in actual:
        raise Failure(f"a layout from one rank's trace: {actual['layout']}")
    for r in actual.get("ranks", []):
        if r.pop("stage", None) is not None:
            raise Failure("a stage from one rank's trace")
    check_unknown_split(trace.name, actual)
    expected = kernel_reference.kernel_view([str(trace)])
    return actual, expected, compare(actual, expected)


def check_unknown_split(name, view):
    """One rank's trace: no NCCL kernel has a peer; where they ran the split is
    null, never a number that looks measured (UNKNOWN_SPLIT)."""
    if view.get("comm_kernels_without_peers") != view.get("comm_kernels"):
        raise Failure(f"{view.get('comm_kernels')} NCCL kernels, "
                      f"{view.get('comm_kernels_without_peers')} without peers, in one "
                      f"rank's trace")
    unknown = name in UNKNOWN_SPLIT
    for key in SPLIT_KEYS:
        value = view.get(key)
        if unknown and value is not None:
            raise Failure(f"{key} {value}: NCCL kernels without peers, the split must be null")
        if not unknown and (value is None or isinstance(value, bool)):
            raise Failure(f"{key} {value}: no NCCL kernel, the split must be a number")
    if unknown:
        for r in view.get("ranks", []):
            if r.get("transfer_ns") is not None or r.get("wait_ns") is not None:
                raise Failure(f"rank {r.get('global_rank')}: transfer_ns "
                              f"{r.get('transfer_ns')}, wait_ns {r.get('wait_ns')}, "
                              f"the split must be null")
            for row in r.get("steps", []):
                for key in ("window_ns", "compute_ns", "idle_ns"):
                    if not is_int(row.get(key)):
                        raise Failure(f"step {row.get('step')}: {key} {row.get(key)}, "
                                      f"must stay a number")


def traces_in(folder):
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz")))


def short(value, limit=120):
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "..."


# (name, arguments, true offset of machine 1 in ns): machine 1's clock reads
# ahead; the engine must find the offset from the matched kernels' ends (to
# within their jitter of a few us) and undo it, leaving every figure within
# CLOCK_TOLERANCE of the window of the truth on the true clock.
OFFSET_RUNS = [
    ("1f1b-clock-offset-1.5ms", ["--pp", "4", "--dp", "2", "--micro-batches", "8", "--steps", "3",
                                 "--schedule", "1f1b", "--machines", "2", "--machine-folders",
                                 "--clock-offset-us", "1500.25"], 1_500_250),
    ("interleaved-clock-offset-back-0.3ms", ["--pp", "4", "--dp", "1", "--micro-batches", "8",
                                             "--steps", "3", "--schedule", "interleaved",
                                             "--chunks", "2", "--machines", "2",
                                             "--machine-folders", "--clock-offset-us", "-300",
                                             "--seed", "3"], -300_000),
]
CLOCK_TOLERANCE = 1e-4
OFFSET_ERROR_NS = 10_000

# (name, `pipescope simulate --format torch-kernels` arguments): Megatron-style
# runs from the C++ simulator's schedules and timing (1F1B, interleaved, ZB-V;
# pp 2 and 4; one to three data-parallel replicas; two machines; with and
# without Comms Id; both NCCL name generations).
SIMULATED = [
    ("sim-1f1b-pp4-dp2-2machines", ["--schedule", "1f1b", "--stages", "4", "--micro-batches", "8",
                                    "--devices-per-stage", "2", "--machines", "2"]),
    ("sim-vpp-pp4-dp2-v2", ["--schedule", "vpp", "--stages", "4", "--micro-batches", "8",
                            "--chunks", "2", "--devices-per-stage", "2", "--first-step", "12"]),
    ("sim-1f1b-pp2-dp3-no-id-old-names", ["--schedule", "1f1b", "--stages", "2",
                                          "--micro-batches", "4", "--devices-per-stage", "3",
                                          "--no-comms-id", "--nccl-names", "old", "--seed", "9"]),
    ("sim-vpp-pp2-v3-no-id", ["--schedule", "vpp", "--stages", "2", "--micro-batches", "4",
                              "--chunks", "3", "--no-comms-id", "--steps", "2"]),
    ("sim-zbv-pp4-dp2-ns", ["--schedule", "torch-zbvzerobubble", "--stages", "4",
                            "--micro-batches", "8", "--devices-per-stage", "2",
                            "--resolution", "ns", "--nccl-names", "old"]),
]
# (name, arguments, true offset of machine 1 in ns), as OFFSET_RUNS.
SIMULATED_OFFSET_RUNS = [
    ("sim-1f1b-clock-offset-1.5ms", ["--schedule", "1f1b", "--stages", "4", "--micro-batches",
                                     "8", "--devices-per-stage", "2", "--machines", "2",
                                     "--skew", "1:1500250"], 1_500_250),
    ("sim-vpp-clock-offset-back-0.3ms", ["--schedule", "vpp", "--stages", "4", "--micro-batches",
                                         "8", "--machines", "2", "--skew", "1:-300000",
                                         "--no-comms-id", "--nccl-names", "old"], -300_000),
]


def analyze_kernel_view(cli, run, out):
    """`analyze RUN -o OUT`: summary.json's kernel_view, with the run's own
    layout under "_run_layout" (check_layout takes it out)."""
    r = subprocess.run([str(cli), "analyze", str(run), "-o", str(out), "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"analyze exit {r.returncode}\n{(r.stderr or r.stdout)[-800:]}")
    summary = json.loads((out / "summary.json").read_text())
    actual = summary.get("kernel_view")
    if actual is None:
        raise Failure("summary.json has no kernel_view")
    actual["_run_layout"] = summary.get("layout")
    return actual


def generate_and_analyze(cli, name, args, work):
    run = work / name
    r = subprocess.run([sys.executable, str(HERE / "kernel_run.py"), "-o", str(run),
                        "--kernels-per-op", "12", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"kernel_run.py exit {r.returncode}: {(r.stderr or r.stdout)[-400:]}")
    actual = analyze_kernel_view(cli, run, work / (name + "-out"))
    truth = json.loads((run / "truth.json").read_text())
    files = sorted(str(p) for p in run.rglob("*.pt.trace.json*"))
    return truth["layout"], actual, truth["kernel_view"], files


def simulate_and_analyze(cli, name, args, work):
    """`pipescope simulate --format torch-kernels` then `analyze`: (layout,
    kernel_view, the simulator's expected kernel_view, trace files)."""
    run = work / name
    r = subprocess.run([str(cli), "simulate", "--format", "torch-kernels", "-o", str(run),
                        "--kernels-per-job", "12", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"simulate exit {r.returncode}: {(r.stderr or r.stdout)[-400:]}")
    actual = analyze_kernel_view(cli, run, work / (name + "-out"))
    expected = json.loads((run / "expected.json").read_text())
    files = sorted(str(p) for p in run.rglob("*.pt.trace.json*"))
    return expected["layout"], actual, expected["kernel_view"], files


def check_offset(cli, name, args, offset_ns, work, runner=generate_and_analyze):
    """An offset run: (figures line, failure or None)."""
    layout, actual, truth, _ = runner(cli, name, args, work)
    check_layout(layout, actual, args)
    clock = actual.pop("clock", None)
    if not clock or not clock.get("applied"):
        return None, f"clock not applied: {clock}"
    found = {m["machine"]: m["offset_ns"] for m in clock["machines"]}
    if abs(found.get(1, 0) - offset_ns) > OFFSET_ERROR_NS:
        return None, f"machine 1 offset {found.get(1)} ns, true {offset_ns} ns"
    window = truth["window_ns"]
    for key in ("window_ns", "compute_ns", "transfer_ns", "wait_ns", "idle_ns"):
        if abs(actual[key] - truth[key]) > CLOCK_TOLERANCE * window:
            return None, f"{key}: engine {actual[key]}, truth {truth[key]} (window {window})"
    for key in ("bubble_ratio", "wait_share", "transfer_share", "idle_share"):
        if abs(actual[key] - truth[key]) > CLOCK_TOLERANCE:
            return None, f"{key}: engine {actual[key]}, truth {truth[key]}"
    return (f"offset {found.get(1)} ns (true {offset_ns}), bubble {actual['bubble_ratio']:.6f} "
            f"(truth {truth['bubble_ratio']:.6f})"), None


def check_layout(layout, actual, args):
    """The layout the engine found from the NCCL kernels against the generator's
    (taken out of `actual`, which the reference does not compute): from the
    pipeline's process group where the traces describe their groups, else from
    who sends to whom."""
    found = actual.pop("layout", None)
    run_layout = actual.pop("_run_layout", None)
    # A trace without labels: the kernels' layout is the run's.
    if not run_layout or (run_layout.get("pp"), run_layout.get("dp"), run_layout.get("tp"),
                          run_layout.get("method")) != (layout["pp"], layout["dp"], 1,
                                                        "detected"):
        raise Failure(f"the run's layout {run_layout}, the generator's pp={layout['pp']} "
                      f"dp={layout['dp']}")
    source = "point_to_point" if "--no-group-descriptions" in args else "process_group"
    if found and found.get("source") != source:
        raise Failure(f"layout from {found.get('source')}, expected from {source}")
    stages = {r["global_rank"]: r.pop("stage", None) for r in actual["ranks"]}
    if not found or found.get("pp") != layout["pp"] or found.get("dp") != layout["dp"]:
        raise Failure(f"layout {found}, the generator's pp={layout['pp']} dp={layout['dp']}")
    for r in layout["ranks"]:
        if stages.get(r["global_rank"]) != r["stage"]:
            raise Failure(f"rank {r['global_rank']}: stage {stages.get(r['global_rank'])}, "
                          f"the generator's {r['stage']}")


def check_gate(cli, work):
    """`check` and `diff` on runs without labels: a run with half the micro-batches
    (a larger bubble, by the generator's truth) fails the gate, exit 1; the same
    run passes, exit 0; `diff` shows the split. Returns a failure or None."""
    base_args = ["--pp", "4", "--dp", "2", "--steps", "4", "--schedule", "1f1b"]
    _, _, base_truth, _ = generate_and_analyze(cli, "gate-base",
                                               base_args + ["--micro-batches", "8"], work)
    _, _, cur_truth, _ = generate_and_analyze(cli, "gate-current",
                                              base_args + ["--micro-batches", "4"], work)
    base, cur = work / "gate-base", work / "gate-current"
    if not cur_truth["bubble_ratio"] > base_truth["bubble_ratio"] + 0.05:
        return "the generator's runs do not differ enough to test the gate"
    r = subprocess.run([str(cli), "check", str(cur), "--baseline", str(base),
                        "--max-bubble-increase", "0.02"], capture_output=True, text=True)
    if r.returncode != 1 or "FAIL max-bubble-increase" not in r.stdout + r.stderr:
        return f"check on a larger bubble: exit {r.returncode}\n{r.stdout[-600:]}{r.stderr[-300:]}"
    r = subprocess.run([str(cli), "check", str(base), "--baseline", str(base),
                        "--max-bubble-increase", "0.02"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"check of a run against itself: exit {r.returncode}\n{r.stdout[-600:]}"
    r = subprocess.run([str(cli), "diff", str(base), str(cur)], capture_output=True, text=True)
    want = f"{100 * base_truth['wait_share']:.2f}%"
    if r.returncode != 0 or "NCCL wait" not in r.stdout or want not in r.stdout:
        return f"diff: exit {r.returncode}, no 'NCCL wait' row with {want}\n{r.stdout[:900]}"
    return None


def check_generated(cli, name, args, work, runner=generate_and_analyze):
    """One kernel_run.py (or simulate) case: (difference against the truth or
    None, against the reference)."""
    layout, actual, truth, files = runner(cli, name, args, work)
    # Machines on one clock: the offsets found stay within the noise, unapplied.
    clock = actual.pop("clock", None)
    if clock is not None and clock.get("applied"):
        raise Failure(f"clock offsets applied to machines on one clock: {clock}")
    check_layout(layout, actual, args)
    expected = kernel_reference.kernel_view(files)
    return actual, truth, compare(actual, truth), compare(actual, expected)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", required=True, help="the pipescope binary")
    p.add_argument("--traces", default=str(DEFAULT_TRACES),
                   help=f"folder of Kineto traces (default {DEFAULT_TRACES})")
    a = p.parse_args()
    folder = Path(a.traces)
    if folder.is_dir():
        traces = traces_in(folder)
        if not traces:
            print(f"FAIL  no .json or .json.gz trace in {folder}")
            return 1
    else:
        traces = []
        print(f"skipped: no trace folder at {folder} (the real Kineto traces are not "
              f"checked out beside the repository)")
    cli = Path(a.cli).resolve()
    failed = 0
    for trace in traces:
        work = Path(tempfile.mkdtemp(prefix="kernel-view-"))
        try:
            actual, expected, diff = check_trace(cli, trace, work)
            figures = (f"steps {[s['step'] for s in expected['steps']]} "
                       f"window {expected['window_ns']} compute {expected['compute_ns']}")
            if expected["wait_ns"] is None:
                figures += (f", split unknown ({expected['comm_kernels']} NCCL kernels "
                            f"without peers)")
            if diff:
                failed += 1
                where, got, want = diff
                print(f"FAIL  {trace.name}: {figures}: {where}: engine {short(got)}, "
                      f"reference {short(want)}")
            else:
                print(f"ok    {trace.name}: {figures}")
        except Failure as e:
            failed += 1
            print(f"FAIL  {trace.name}: {e}")
        except Exception as e:  # noqa: BLE001  (a broken case is a failure, not a crash)
            failed += 1
            print(f"FAIL  {trace.name}: {type(e).__name__}: {e}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="kernel-runs-"))
    try:
        cases = [(name, args, generate_and_analyze, "truth") for name, args in GENERATED]
        cases += [(name, args, simulate_and_analyze, "expected.json")
                  for name, args in SIMULATED]
        for name, args, runner, source in cases:
            try:
                actual, truth, against_truth, against_reference = check_generated(
                    cli, name, args, work, runner)
                figures = (f"{len(truth['ranks'])} ranks, bubble {truth['bubble_ratio']:.4f} "
                           f"(wait {truth['wait_share']:.4f}, transfer "
                           f"{truth['transfer_share']:.4f})")
                bad = [(what, d) for what, d in ((source, against_truth),
                                                 ("reference", against_reference)) if d]
                if bad:
                    failed += 1
                    what, (where, got, want) = bad[0]
                    print(f"FAIL  {name}: {figures}: {where}: engine {short(got)}, "
                          f"{what} {short(want)}")
                else:
                    print(f"ok    {name}: {figures}")
            except Failure as e:
                failed += 1
                print(f"FAIL  {name}: {e}")
        offset_cases = [(*case, generate_and_analyze) for case in OFFSET_RUNS]
        offset_cases += [(*case, simulate_and_analyze) for case in SIMULATED_OFFSET_RUNS]
        for name, args, offset_ns, runner in offset_cases:
            try:
                figures, failure = check_offset(cli, name, args, offset_ns, work, runner)
                if failure:
                    failed += 1
                    print(f"FAIL  {name}: {failure}")
                else:
                    print(f"ok    {name}: {figures}")
            except Failure as e:
                failed += 1
                print(f"FAIL  {name}: {e}")
        try:
            failure = check_gate(cli, work)
            if failure:
                failed += 1
                print(f"FAIL  check and diff: {failure}")
            else:
                print("ok    check and diff: half the micro-batches fails the gate, the same run "
                      "passes, diff shows the NCCL wait")
        except Failure as e:
            failed += 1
            print(f"FAIL  check and diff: {e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = (len(traces) + len(GENERATED) + len(SIMULATED) + len(OFFSET_RUNS)
             + len(SIMULATED_OFFSET_RUNS) + 1)
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
