#!/usr/bin/env python3
"""Damaged and ambiguous inputs, the way real runs leave them: exact or refused.

    check_damaged.py --cli build/cli/pipescope [--keep DIR] [-k NAME]

Each case writes its inputs with the independent generators (kineto_run.py for
PyTorch traces in Kineto's write order, hybrid_run.py for worker logs), runs
`pipescope analyze` (and `check`), and compares with the truth the generator
computed from the true times by the metric contract (pipescope_reference.py):
every figure the engine reports is the truth over the steps it calls complete,
or the engine refuses (exit 2) naming the file. Prints one line per case; exits 1
when a case fails.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import hybrid_run  # noqa: E402
import kineto_run  # noqa: E402


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def run(cmd, env=None):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)


def analyze(cli, inputs, out, *options):
    out = Path(out)
    r = run([cli, "analyze", *inputs, "-o", out, "--quiet", *options])
    summary = None
    if (out / "summary.json").exists() and r.returncode == 0:
        summary = json.loads((out / "summary.json").read_text())
    return r, summary


def truth_over(truth, steps, devices=None):
    """The contract's figures over the true steps `steps` (step numbers)."""
    chosen = [s for s in truth["steps"] if s["step"] in steps]
    window = sum(s["duration_ns"] for s in chosen)
    idle = sum(d["idle_ns"] for s in chosen for d in s["devices"])
    n = len(chosen[0]["devices"]) if chosen else 0
    busy = {}
    for s in chosen:
        for d in s["devices"]:
            busy[d["device"]] = busy.get(d["device"], 0) + d["busy_ns"]
    return {"total_window_ns": window, "bubble_ratio": idle / (n * window) if window else 0.0,
            "busy": busy, "windows": {s["step"]: (s["start_ns"], s["end_ns"]) for s in chosen}}


def check_figures(summary, truth, base_ns):
    """Engine figures == the truth over the engine's complete steps."""
    complete = [s["step"] for s in summary["steps"] if s["complete"]]
    t = truth_over(truth, set(complete))
    expect(summary["total_window_ns"] == t["total_window_ns"],
           f"total_window_ns {summary['total_window_ns']} != truth {t['total_window_ns']} "
           f"over steps {complete}")
    expect(abs(summary["bubble_ratio"] - t["bubble_ratio"]) < 1e-9,
           f"bubble_ratio {summary['bubble_ratio']} != truth {t['bubble_ratio']}")
    for d in summary["devices"]:
        expect(d["busy_ns"] == t["busy"][d["device"]],
               f"device {d['device']} busy {d['busy_ns']} != truth {t['busy'][d['device']]}")
    for s in summary["steps"]:
        if s["complete"]:
            lo, hi = t["windows"][s["step"]]
            expect((s["start_ns"] + base_ns, s["end_ns"] + base_ns) == (lo, hi) or
                   (s["start_ns"], s["end_ns"]) == (lo, hi),
                   f"step {s['step']} window differs from the truth")
    return complete


def warning(summary, code):
    return [w for w in summary.get("warnings", []) if w["code"] == code]


# ---------------------------------------------------------------- cases

def kineto(work, *args):
    out = Path(work) / "run"
    kineto_run.main(["-o", str(out), *args])
    return out, json.loads((out / "truth.json").read_text())


def cut_file(truth):
    return next(f for f in truth["files"] if "cut_section" in f)


def case_cut_base_lost(cli, work):
    """Kineto's order: the cut loses baseTimeNanoseconds; the others have theirs."""
    run_dir, truth = kineto(work, "--cut", "2:gpu:0.5")
    r, _ = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 2, f"exit {r.returncode}, expected 2\n{r.stderr[-800:]}")
    expect("rank2.pt.trace.json" in r.stderr and "baseTimeNanoseconds" in r.stderr,
           f"the refusal does not name the file and the base time:\n{r.stderr[-800:]}")


def cut_case(cli, work, *args, min_lost=1):
    run_dir, truth = kineto(work, *args)
    f = cut_file(truth)
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-800:]}")
    complete = check_figures(summary, truth, truth["base_ns"])
    survived = f["survived_steps"]
    expect(set(complete) <= set(survived),
           f"complete steps {complete} include steps whose kernels were lost "
           f"(survived: {survived})")
    expect(len(complete) >= len(survived) - 1,
           f"only {complete} complete of the {survived} that survived")
    cut = warning(summary, "trace_cut")
    expect(len(cut) == 1, f"{len(cut)} trace_cut warnings")
    expect(f["path"] in cut[0]["message"] and f"byte {f['surviving_bytes']}" in cut[0]["message"],
           f"trace_cut does not name the file and byte {f['surviving_bytes']}: "
           f"{cut[0]['message']}")
    expect(not warning(summary, "host_timed_jobs"),
           "host_timed_jobs blames the profiler's set-up for the cut")
    # The gate refuses it, naming the file.
    base_out = Path(work) / "base"
    full_dir = Path(work) / "full"
    kineto_run.main(["-o", str(full_dir), *[a for a in args if not a.startswith("--cut")
                                             and ":" not in a]])
    r0, _ = analyze(cli, [full_dir], base_out)
    expect(r0.returncode == 0, f"the uncut run: exit {r0.returncode}\n{r0.stderr[-400:]}")
    g = run([cli, "check", Path(work) / "out" / "summary.json", "--baseline",
             base_out / "summary.json", "--max-bubble-increase", "2pp"])
    expect(g.returncode == 2 and f["path"] in (g.stdout + g.stderr),
           f"check: exit {g.returncode}, expected 2 naming {f['path']}\n"
           f"{(g.stdout + g.stderr)[-800:]}")
    return complete, survived


def case_cut_gpu_base_first(cli, work):
    """Base written first (intact): the kernels after the cut are lost."""
    cut_case(cli, work, "--base", "first", "--cut", "1:gpu:0.6")


def case_cut_gpu_old_traces(cli, work):
    """No trace has a base (older traces, absolute times): taken as written."""
    cut_case(cli, work, "--base", "none", "--cut", "3:gpu:0.3")


def case_cut_gz(cli, work):
    """A gzip trace whose compressed stream broke off in the kernels."""
    cut_case(cli, work, "--gz", "--base", "first", "--cut", "0:gpu:0.7")


def case_cut_annotations(cli, work):
    """Only GPU annotations lost: the kernels give every job's interval."""
    complete, survived = cut_case(cli, work, "--base", "first", "--cut", "2:annotations:0.5")
    expect(len(complete) >= len(survived) - 1, "steps lost")


def case_cut_cpu(cli, work):
    """Cut among the CPU events: no GPU activity survived; no step can be complete."""
    run_dir, truth = kineto(work, "--base", "first", "--cut", "1:cpu:0.5")
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-800:]}")
    expect(all(not s["complete"] for s in summary["steps"]), "a step counted complete")
    expect(warning(summary, "no_complete_step"), "no no_complete_step warning")
    cut = warning(summary, "trace_cut")
    expect(cut and "every GPU activity" in cut[0]["message"], f"trace_cut: {cut}")


def case_cut_tail(cli, work):
    """Cut after the events array (only the base lost), others have a base: refused."""
    run_dir, truth = kineto(work, "--cut", "0:tail:0.5")
    r, _ = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 2 and "rank0.pt.trace.json" in r.stderr,
           f"exit {r.returncode}, expected 2 naming rank0\n{r.stderr[-600:]}")


def hybrid(work, name, *args):
    out = Path(work) / name
    hybrid_run.generate(hybrid_run.parser().parse_args(["-o", str(out), *args]))
    return out, json.loads((out / "truth.json").read_text())


def case_folder_backup_copy(cli, work):
    """A backup copy of a machine folder beside the real ones: exit 2, both named."""
    run_dir, _ = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4")
    shutil.copytree(run_dir / "machine1", run_dir / "machine1.bak")
    r, _ = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 2, f"exit {r.returncode}, expected 2\n{r.stderr[-600:]}")
    expect("machine1.bak/workerlog." in r.stderr and "machine1/workerlog." in r.stderr,
           f"the refusal does not name both copies:\n{r.stderr[-600:]}")


def case_folder_older_run(cli, work):
    """An older run's logs in previous/ (read as a machine): exit 2, both runs named."""
    run_dir, truth = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4")
    old_dir, _ = hybrid(work, "old", "--pp", "4", "--gpus-per-machine", "4", "--seed", "9",
                        "--skew", "0:-3600000000000")
    shutil.copytree(old_dir / "machine0", run_dir / "previous")
    r, _ = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 2, f"exit {r.returncode}, expected 2\n{r.stderr[-600:]}")
    expect("previous" in r.stderr and "machine0" in r.stderr and "two runs" in r.stderr,
           f"the refusal does not name both runs:\n{r.stderr[-600:]}")
    # Each run alone, as the message says to pass it: the true figures.
    r, summary = analyze(cli, [run_dir / "machine0", run_dir / "machine1"], Path(work) / "out1")
    expect(r.returncode == 0, f"the run alone: exit {r.returncode}\n{r.stderr[-400:]}")
    expect(abs(summary["bubble_ratio"] - truth["expected"]["bubble_ratio"]) < 1e-9,
           f"bubble {summary['bubble_ratio']} != truth {truth['expected']['bubble_ratio']}")


def case_folder_top_level_and_node(cli, work):
    """Worker logs at the top plus node1/ with the other machine's: exit 2 with the paths."""
    run_dir, _ = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4")
    top = Path(work) / "top"
    shutil.copytree(run_dir / "machine0", top)
    shutil.copytree(run_dir / "machine1", top / "node1")
    r, _ = analyze(cli, [top], Path(work) / "out")
    expect(r.returncode == 2 and "node1" in r.stderr and "workerlog.*" in r.stderr,
           f"exit {r.returncode}, expected 2 with the paths to pass\n{r.stderr[-600:]}")


def case_folder_skipped_named(cli, work):
    """Folders not read are named; a link to a machine folder is read once."""
    run_dir, truth = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4")
    old_dir, _ = hybrid(work, "old", "--pp", "4", "--gpus-per-machine", "4", "--seed", "9")
    (run_dir / "previous").mkdir()
    shutil.copytree(old_dir / "machine0", run_dir / "previous" / "machine0")
    (run_dir / "checkpoints").mkdir()
    os.symlink("machine1", run_dir / "machine1-latest")
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    notes = [w["message"] for w in warning(summary, "folder_skipped")]
    expect(any("previous" in m and "4 input files" in m for m in notes), f"previous/: {notes}")
    expect(any("checkpoints" in m for m in notes), f"checkpoints/: {notes}")
    expect(any("machine1-latest" in m and "link" in m for m in notes), f"the link: {notes}")
    expect(len(summary["devices"]) == 8, f"{len(summary['devices'])} devices, expected 8")
    expect(abs(summary["bubble_ratio"] - truth["expected"]["bubble_ratio"]) < 1e-9,
           f"bubble {summary['bubble_ratio']} != truth {truth['expected']['bubble_ratio']}")


def clock_step_case(cli, work, size_ns):
    """One machine's clock steps by size_ns mid-run: found within 1 ms, undone, figures near
    the truth, the layout right."""
    run_dir, truth = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4",
                            "--steps", "12", "--forward-us", "5000",
                            "--clock-step", f"1:40000:{size_ns}")
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    steps = warning(summary, "clock_step")
    direction = "back" if size_ns < 0 else "forward"
    expect(len(steps) == 1 and "machine1" in steps[0]["message"] and
           f"jumped {direction}" in steps[0]["message"], f"clock_step: {steps}")
    pieces = summary["clock"]["machines"][1].get("pieces", [])
    expect(len(pieces) == 2, f"machine1's clock pieces: {pieces}")
    size = pieces[1]["offset_ns"] - pieces[0]["offset_ns"]
    # Estimated from the jobs: within 1 ms of the true step.
    expect(abs(size - size_ns) < 1_000_000, f"step size {size}, true {size_ns}")
    expect(summary["layout"]["pp"] == 4 and summary["layout"]["dp"] == 2,
           f"layout {summary['layout']}")
    expect(summary["incomplete_steps"] == truth["expected"]["incomplete_steps"],
           f"{summary['incomplete_steps']} incomplete steps (true: "
           f"{truth['expected']['incomplete_steps']})")
    # A job a step back cuts in two ends before it starts and is lost (one per
    # device busy at the step): the bubble is within half a point of the truth.
    expect(abs(summary["bubble_ratio"] - truth["expected"]["bubble_ratio"]) < 0.005,
           f"bubble {summary['bubble_ratio']} vs truth {truth['expected']['bubble_ratio']}")


def case_clock_stepped_back(cli, work):
    """NTP steps one machine's clock back 150 ms mid-run."""
    clock_step_case(cli, work, -150_000_000)


def case_clock_stepped_forward(cli, work):
    """A machine's clock steps forward 150 ms: its steps begin later for good."""
    clock_step_case(cli, work, 150_000_000)


def case_epoch_zero_job(cli, work):
    """One job stamped at epoch 0: left out, counted; the figures are those without it."""
    import re
    import pipescope_reference
    run_dir, _ = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4")
    log = run_dir / "machine0" / "workerlog.1"
    lines = log.read_text().split("\n")
    jobs = [i for i, line in enumerate(lines) if "Profiler Info: Job (" in line]
    victim = jobs[10]
    without = Path(work) / "without"
    shutil.copytree(run_dir, without)
    (without / "machine0" / "workerlog.1").write_text(
        "\n".join(line for i, line in enumerate(lines) if i != victim))
    lines[victim] = re.sub(r"job_start_time = [0-9.]+, job_end_time = [0-9.]+",
                           "job_start_time = 0.000000, job_end_time = 4.125000", lines[victim])
    log.write_text("\n".join(lines))
    truth = pipescope_reference.analyse([str(without)])
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    bad = warning(summary, "bad_timestamp")
    expect(len(bad) == 1 and f"workerlog.1:{victim + 1}" in bad[0]["message"],
           f"bad_timestamp: {bad}")
    expect(not warning(summary, "relaunch"), "read as a relaunch")
    expect(summary["total_window_ns"] == truth["total_window_ns"],
           f"window {summary['total_window_ns']} != truth {truth['total_window_ns']}")
    expect(abs(summary["bubble_ratio"] - truth["bubble_ratio"]) < 1e-9,
           f"bubble {summary['bubble_ratio']} != truth {truth['bubble_ratio']}")


def case_log_begins_mid_run(cli, work):
    """A rank's log lost its head (copytruncate) inside step 5: steps line up by time."""
    import pipescope_reference
    run_dir, truth = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4",
                            "--steps", "12")
    log = run_dir / "machine0" / "workerlog.1"
    lines = log.read_text().split("\n")
    jobs = [i for i, line in enumerate(lines) if "Profiler Info: Job (" in line]
    per_step = len(jobs) // 12
    # The first backward of step 5: the log now begins inside that step.
    victim = next(i for i in jobs[5 * per_step:6 * per_step] if "type = backward" in lines[i])
    log.write_text("\n".join(lines[victim:]))
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    numbers = [s["step"] for s in summary["steps"]]
    expect(numbers == list(range(12)), f"steps {numbers}, expected 0..11")
    complete = check_figures(summary, truth["expected"], 0)
    true_complete = [s["step"] for s in truth["expected"]["steps"] if s["complete"]]
    expect(complete == [k for k in true_complete if k >= 6],
           f"complete steps {complete}, expected the true ones from 6 on")
    missing = warning(summary, "missing_steps")
    expect(len(missing) == 1 and "begins inside step 5" in missing[0]["message"],
           f"missing_steps: {missing}")
    # The reference reads the cut folder by the same rule.
    ref = pipescope_reference.analyse([str(run_dir)])
    expect(abs(summary["bubble_ratio"] - ref["bubble_ratio"]) < 1e-12,
           f"bubble {summary['bubble_ratio']} != reference {ref['bubble_ratio']}")


def case_pir_untimed_jobs(cli, work):
    """PIR's comm-only jobs logged with start and end 0: left out, counted, exact figures."""
    import re
    import pipescope_reference
    run_dir, truth = hybrid(work, "run", "--pp", "4", "--gpus-per-machine", "4", "--steps", "8")
    inserted = 0
    job = re.compile(r"^(.*Profiler Info: Job \()(\d+)(\), type = )(forward|backward)"
                     r"(, micro_batch_id = )(\d+)(, job_start_time = ).*$")
    for rank in range(4):
        log = run_dir / "machine0" / f"workerlog.{rank}"
        out = []
        for line in log.read_text().split("\n"):
            m = job.match(line)
            # As PIR prints them: recv_forward before a later stage's forward,
            # send_backward after a backward of every stage but the first.
            if m and m.group(4) == "forward" and rank > 0:
                out.append(f"{m.group(1)}{m.group(2)}{m.group(3)}recv_forward{m.group(5)}"
                           f"{m.group(6)}{m.group(7)}0.000000, job_end_time = 0.000000")
                inserted += 1
            out.append(line)
            if m and m.group(4) == "backward" and rank > 0:
                out.append(f"{m.group(1)}{m.group(2)}{m.group(3)}send_backward{m.group(5)}"
                           f"{m.group(6)}{m.group(7)}0.000000, job_end_time = 0.000000")
                inserted += 1
        log.write_text("\n".join(out))
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    untimed = warning(summary, "untimed_jobs")
    expect(len(untimed) == 1 and untimed[0]["count"] == inserted and
           "recv_forward" in untimed[0]["message"] and "send_backward" in untimed[0]["message"],
           f"untimed_jobs: {untimed} (inserted {inserted})")
    for code in ("relaunch", "bad_timestamp", "short_device", "job_count_mismatch",
                 "missing_steps", "no_complete_step"):
        expect(not warning(summary, code), f"{code}: {warning(summary, code)}")
    complete = check_figures(summary, truth["expected"], 0)
    true_complete = [s["step"] for s in truth["expected"]["steps"] if s["complete"]]
    expect(complete == true_complete, f"complete steps {complete}, true {true_complete}")
    ref = pipescope_reference.analyse([str(run_dir)])
    expect(abs(summary["bubble_ratio"] - ref["bubble_ratio"]) < 1e-12,
           f"bubble {summary['bubble_ratio']} != reference {ref['bubble_ratio']}")


def case_labelled_trace_without_rank(cli, work):
    """Rank 0's labelled trace lacks distributedInfo and its name sorts last: still rank 0."""
    import re
    run_dir, truth = kineto(work, "--base", "first")
    old = run_dir / "rank0.pt.trace.json"
    text = re.sub(r'\s*"distributedInfo": \{[^}]*\},', "", old.read_text(), count=1)
    expect("distributedInfo" not in text, "distributedInfo still there")
    (run_dir / "zz_last.pt.trace.json").write_text(text)
    old.unlink()
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    paths = [Path(d["path"]).name for d in summary["devices"]]
    expect(paths == ["zz_last.pt.trace.json", "rank1.pt.trace.json", "rank2.pt.trace.json",
                     "rank3.pt.trace.json"], f"devices in the order {paths}")
    expect(not warning(summary, "layout_not_found"), "no layout found")
    check_figures(summary, truth, truth["base_ns"])
    ranks = summary["kernel_view"]["ranks"]
    by_path = {Path(k["path"]).name: k for k in ranks}
    expect(by_path["zz_last.pt.trace.json"]["global_rank"] == 0 and
           by_path["zz_last.pt.trace.json"]["rank_source"] == "device" and
           by_path["zz_last.pt.trace.json"]["device"] == 0,
           f"kernel view: {by_path['zz_last.pt.trace.json']}")


def case_profiler_windows(cli, work):
    """schedule(wait=1, warmup=1, active=2, repeat=2): two traces per rank, each window exact."""
    run_dir, truth = kineto(work, "--repeat", "2", "--steps", "8", "--wait", "1", "--warmup",
                            "1", "--active", "2")
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    windows = sorted({k for f in truth["files"] for k in f["steps"]})
    expect([s["step"] for s in summary["steps"]] == windows,
           f"steps {[s['step'] for s in summary['steps']]}, expected the windows' {windows}")
    complete = check_figures(summary, truth, truth["base_ns"])
    expect(complete == windows, f"complete steps {complete}")
    expect(len(summary["segments"]) == 2 and summary["segments"][1]["found_by"] == "profiler_window",
           f"segments {summary.get('segments')}")
    expect(warning(summary, "profiler_windows") and not warning(summary, "relaunch"),
           "said to be a relaunch, or the windows not said")


def case_slow_replica_is_no_clock_step(cli, work):
    """A slower replica makes the other wait at the all-reduce every step: no clock step."""
    run_dir, truth = hybrid(work, "run", "--pp", "4", "--dp", "2", "--gpus-per-machine", "4",
                            "--steps", "12", "--forward-us", "5000", "--slow-replica", "1:1.3")
    r, summary = analyze(cli, [run_dir], Path(work) / "out")
    expect(r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-600:]}")
    expect(not warning(summary, "clock_step"), f"clock_step: {warning(summary, 'clock_step')}")
    expect(abs(summary["bubble_ratio"] - truth["expected"]["bubble_ratio"]) < 1e-9,
           f"bubble {summary['bubble_ratio']} != truth {truth['expected']['bubble_ratio']}")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", required=True)
    p.add_argument("--keep", help="keep each case's files under this folder")
    p.add_argument("-k", dest="only", action="append", help="run only these cases")
    a = p.parse_args()
    failed = ran = 0
    for name, fn in CASES.items():
        if a.only and name not in a.only:
            continue
        ran += 1
        work = Path(a.keep) / name if a.keep else Path(tempfile.mkdtemp(prefix="damaged-"))
        if work.exists() and a.keep:
            shutil.rmtree(work)
        work.mkdir(parents=True, exist_ok=True)
        try:
            fn(Path(a.cli).resolve(), work)
            print(f"ok    {name}")
        except Failure as e:
            failed += 1
            print(f"FAIL  {name}: {e}")
        except Exception:  # noqa: BLE001  (a broken case is a failure, not a crash)
            failed += 1
            print(f"FAIL  {name}: {traceback.format_exc()}")
        finally:
            if not a.keep:
                shutil.rmtree(work, ignore_errors=True)
    print(f"{ran - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
