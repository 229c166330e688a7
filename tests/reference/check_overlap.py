#!/usr/bin/env python3
"""Schedules whose actions overlap a forward and a backward, as the frameworks
label them (overlap_run.py, written apart from the engine): named as the
framework names them, compared by `check`, replayed by `whatif`, and every
what-if scenario that extrapolates marked.

    check_overlap.py --cli build/cli/pipescope [--keep DIR]

Prints one line per case; exits 1 when a case fails.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def run(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def generate(out, *options):
    r = run([sys.executable, HERE / "overlap_run.py", "-o", out, *options])
    expect(r.returncode == 0, f"overlap_run.py {options}: {r.stderr}")
    return json.loads((Path(out) / "truth.json").read_text())


def analyze(cli, folder, out):
    r = run([cli, "analyze", folder, "-o", out, "--quiet"])
    expect(r.returncode == 0, f"analyze {folder}: exit {r.returncode}: {r.stderr}")
    return json.loads((Path(out) / "summary.json").read_text())


def whatif(cli, folder, out, *options):
    r = run([cli, "whatif", folder, "-o", out, *options])
    expect(r.returncode == 0, f"whatif {folder}: exit {r.returncode}: {r.stderr}")
    return json.loads((Path(out) / "whatif.json").read_text()), r


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def notes_of(summary):
    d = summary.get("diagnostics")
    return " ".join(x["message"] for x in d) if isinstance(d, list) else json.dumps(d)


def trace_jobs(out):
    """The jobs of an analyze output's trace.json: {(device, name): [(start_ns, end_ns), ...]}
    in time order (one a step), times from the trace's origin in ns."""
    doc = json.loads((Path(out) / "trace.json").read_text())
    # Each device's lane: the thread named "GPU N (...)", N its device index.
    lanes = {(e["pid"], e["tid"]): int(e["args"]["name"].split()[1])
             for e in doc["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"
             and e["args"]["name"].startswith("GPU ") and "·" not in e["args"]["name"]}
    jobs = {}
    for e in doc["traceEvents"]:
        lane = lanes.get((e.get("pid"), e.get("tid")))
        if e.get("ph") != "X" or lane is None:
            continue
        start = round(e["ts"] * 1000)
        jobs.setdefault((lane, e["name"]), []).append((start, start + e["args"]["duration_ns"]))
    for spans in jobs.values():
        spans.sort()
    return jobs, doc["otherData"]["origin_ns"]


def check_boundaries(truth, out, p):
    """Every OVERLAP_F_B action's two jobs against the model's sub-ops: the forward from
    its first kernel to its last, the backward from its first kernel to its last. The last
    stage's backward begins with the loss gradient's fill kernel, launched from the range's
    own thread as torch launches it: that one (2 us) is taken for the forward's. Returns the
    largest error (ns) and how many actions were compared."""
    jobs, origin = trace_jobs(out)
    base = 1_700_000_000_000_000_000
    worst, compared = 0, 0
    for r, actions in truth["actions"].items():
        pid = int(r)  # device r: the traces are ordered by rank
        stages = sorted({sub["stage"] for a in actions for sub in a["subs"]})
        for a in actions:
            if not a["name"].endswith("OVERLAP_F_B"):
                continue
            f, b = a["subs"]
            for sub, typ in ((f, "forward"), (b, "backward")):
                name = f"{typ}{stages.index(sub['stage'])}(overlap) mb{sub['mb']}"
                spans = jobs.get((pid, name), [])
                expect(len(spans) == len(truth["steps"]), f"rank {r}: {len(spans)} jobs {name}")
                start, end = spans[a["step"]]
                s0, e0 = sub["start_ns"] + base - origin, sub["end_ns"] + base - origin
                err = max(abs(start - s0), abs(end - e0))
                limit = 2_000 if 2 * p - 1 in (f["stage"], b["stage"]) else 0
                expect(err <= limit, f"rank {r} {a['name']}: {name} [{start}, {end}] against "
                       f"[{s0}, {e0}]")
                worst = max(worst, err)
            compared += 1
    return worst, compared


def case_dualpipev(cli, work):
    """DualPipeV with OVERLAP_F_B ranges, traced as torch traces them: named DualPipeV,
    each range's forward and backward timed from its kernels, replayed within 3%."""
    for p, m, seed in ((4, 10, 1), (3, 8, 2), (2, 6, 3)):
        d = work / f"dualpipev_{p}_{m}"
        truth = generate(d, "--schedule", "dualpipev", "--pp", p, "--micro-batches", m,
                         "--steps", 5, "--seed", seed)
        s = analyze(cli, d, work / f"dualpipev_{p}_{m}.out")
        sched = s["schedule"]
        expect(sched["name"] == "DualPipeV" and sched["exact"],
               f"P={p} M={m}: schedule {sched['name']} exact={sched['exact']}")
        expect((sched["stages"], sched["micro_batches"], sched["chunks"]) == (p, m, 2),
               f"P={p} M={m}: shape {sched['stages']} {sched['micro_batches']} {sched['chunks']}")
        notes = notes_of(s)
        expect("timed apart by the range's kernels" in notes and "F+B job" not in notes,
               f"P={p} M={m}: not timed by the kernels: {notes}")
        worst, compared = check_boundaries(truth, work / f"dualpipev_{p}_{m}.out", p)
        w, _ = whatif(cli, d, work / f"dualpipev_{p}_{m}.whatif")
        e = w["model_error"]
        expect(e["available"], f"P={p} M={m}: model error not measured")
        expect(abs(e["step_error"]) <= 0.03 and abs(e["bubble_error"]) <= 0.01,
               f"P={p} M={m}: measured schedule replayed {e['step_error']:+.2%} off, "
               f"{e['bubble_error'] * 100:+.2f} points")
        # The run's step time against the generator's own (median of the
        # inner steps: the first and the last have no neighbour on one side).
        true_step = median([t["end_ns"] - t["start_ns"] for t in truth["steps"][1:-1]])
        measured = w["measured"]["step_ns"]
        expect(abs(measured - true_step) / true_step <= 0.01,
               f"P={p} M={m}: step {measured / 1e6:.3f} ms, truth {true_step / 1e6:.3f} ms")
        print(f"     DualPipeV P={p} M={m}: {compared} ranges within {worst} ns of "
              f"the model's sub-ops; replayed {e['step_error']:+.2%}, "
              f"{e['bubble_error'] * 100:+.2f} points")
        # Each sub-action an action of its own: the same schedule, replayed
        # with each output sent at its own end.
        d2 = work / f"dualpipev_{p}_{m}_split"
        generate(d2, "--schedule", "dualpipev", "--pp", p, "--micro-batches", m, "--steps", 5,
                 "--seed", seed, "--split-labels")
        w2, _ = whatif(cli, d2, work / f"dualpipev_{p}_{m}_split.whatif")
        e2 = w2["model_error"]
        expect(abs(e2["step_error"]) <= 0.03 and abs(e2["bubble_error"]) <= 0.01,
               f"P={p} M={m}: split labels replayed {e2['step_error']:+.2%}, "
               f"{e2['bubble_error'] * 100:+.2f} points")
        print(f"     DualPipeV P={p} M={m}, actions of their own: replayed "
              f"{e2['step_error']:+.2%}, {e2['bubble_error'] * 100:+.2f} points")


def case_dualpipev_without_boundary(cli, work):
    """Traces whose OVERLAP_F_B ranges show no boundary (a CPU-only run; every kernel
    launched from the range's thread): each range one F+B job, said so, no duration given
    to either op alone; DualPipeV replays such an action whole."""
    for trace, why in (("cpu", "with no kernel joined to the range"),
                       ("one-thread", "with its kernels launched from one thread only")):
        p, m = 4, 10
        d = work / f"dualpipev_{trace}"
        truth = generate(d, "--schedule", "dualpipev", "--pp", p, "--micro-batches", m,
                         "--steps", 5, "--trace", trace)
        out = work / f"dualpipev_{trace}.out"
        s = analyze(cli, d, out)
        sched = s["schedule"]
        expect(sched["name"] == "DualPipeV" and sched["exact"],
               f"{trace}: schedule {sched['name']} exact={sched['exact']}")
        notes = notes_of(s)
        expect("one F+B job each" in notes and why in notes, f"{trace}: {notes}")
        expect("timed apart" not in notes, f"{trace}: {notes}")
        jobs, _ = trace_jobs(out)
        joined = [n for _, n in jobs if "(F+B)" in n]
        expect(joined and not any("(overlap)" in n for _, n in jobs),
               f"{trace}: {len(joined)} F+B jobs")
        expect("jobs overlap an earlier job" not in json.dumps(s.get("warnings")),
               f"{trace}: an overlap warning for the F+B jobs")
        w, r = whatif(cli, d, work / f"dualpipev_{trace}.whatif")
        e = w["model_error"]
        expect(e["available"], f"{trace}: model error not measured")
        expect("one F+B job each" in r.stdout, f"{trace}: no note: {r.stdout}")
        true_step = median([t["end_ns"] - t["start_ns"] for t in truth["steps"][1:-1]])
        expect(abs(w["measured"]["step_ns"] - true_step) / true_step <= 0.01,
               f"{trace}: step {w['measured']['step_ns']} truth {true_step}")
        expect(abs(e["step_error"]) <= 0.03 and abs(e["bubble_error"]) <= 0.01,
               f"{trace}: replayed {e['step_error']:+.2%}, {e['bubble_error'] * 100:+.2f} points")
        print(f"     DualPipeV P={p} M={m}, {trace} trace (one F+B job a range): replayed "
              f"{e['step_error']:+.2%}, {e['bubble_error'] * 100:+.2f} points")


def case_paddle_pieces(cli, work):
    """Paddle 1F1B with backward-forward overlap: 1F1B, M micro-batches, and
    `check` against the same run without the overlap compares (no refusal)."""
    on, off = work / "paddle_on", work / "paddle_off"
    generate(on, "--schedule", "paddle-1f1b", "--pp", 4, "--micro-batches", 8, "--pieces", 2)
    generate(off, "--schedule", "paddle-1f1b", "--pp", 4, "--micro-batches", 8, "--pieces", 0)
    s_on = analyze(cli, on, work / "paddle_on.out")
    s_off = analyze(cli, off, work / "paddle_off.out")
    for s, what in ((s_on, "overlap on"), (s_off, "overlap off")):
        sched = s["schedule"]
        expect(sched["name"] == "1F1B" and sched["exact"],
               f"{what}: schedule {sched['name']} exact={sched['exact']}")
        expect((sched["micro_batches"], sched["chunks"]) == (8, 1),
               f"{what}: M={sched['micro_batches']} V={sched['chunks']}")
    # A forward's mean is the sum of its pieces: within 10% of the whole ones.
    f_on, f_off = s_on["schedule"]["mean_forward_ns"], s_off["schedule"]["mean_forward_ns"]
    expect(abs(f_on - f_off) / f_off < 0.1, f"mean forward {f_on} against {f_off}")
    r = run([cli, "check", on, "--baseline", off, "--max-step-time-increase", "50%",
             "--max-bubble-increase", "50pp"])
    expect(r.returncode == 0, f"check on vs off: exit {r.returncode}: {r.stdout}{r.stderr}")
    expect("family" not in r.stdout + r.stderr, f"check refused: {r.stdout}{r.stderr}")
    # 1F1B runs each steady-phase (backward, forward) pair as its pieces,
    # interleaved as the run ran them: the measured schedule and 2M are the
    # model's own runs of them within the limits (each op run whole, the
    # replay missed the run by -20.3% and -14.3 points).
    w, r = whatif(cli, on, work / "paddle_on.whatif")
    e = w["model_error"]
    expect(e["available"], "overlap on: model error not measured")
    expect("pieces run interleaved" in r.stdout, f"overlap on: no note: {r.stdout}")
    expect(abs(e["step_error"]) <= 0.03 and abs(e["bubble_error"]) <= 0.01,
           f"overlap on: replayed {e['step_error']:+.2%}, {e['bubble_error'] * 100:+.2f} points")
    expect("whatif_model_error" not in json.dumps(w["warnings"]), "overlap on: model error warned")
    print(f"     Paddle 1F1B with overlap pieces, M=8: replayed {e['step_error']:+.2%}, "
          f"{e['bubble_error'] * 100:+.2f} points")
    on16 = work / "paddle_on_16"
    generate(on16, "--schedule", "paddle-1f1b", "--pp", 4, "--micro-batches", 16, "--pieces", 2,
             "--seed", 7)
    t16, _ = whatif(cli, on16, work / "paddle_on_16.whatif", "-q")
    s16 = next(s for s in w["scenarios"] if s["schedule"] == "1f1b" and s["micro_batches"] == 16)
    step_err = s16["step_ns"] / t16["measured"]["step_ns"] - 1
    bubble_err = s16["bubble_ratio"] - t16["measured"]["bubble_ratio"]
    expect(abs(step_err) <= 0.03 and abs(bubble_err) <= 0.02,
           f"overlap on, M=16: {step_err:+.2%}, {bubble_err * 100:+.2f} points")
    print(f"     Paddle 1F1B with overlap pieces, M=16: step {step_err:+.2%}, "
          f"bubble {bubble_err * 100:+.2f} points")
    w_off, _ = whatif(cli, off, work / "paddle_off.whatif")
    expect(abs(w_off["model_error"]["step_error"]) <= 0.03, "overlap off: replay off")


def case_extrapolation(cli, work):
    """Every scenario with another V, or a split backward from an unsplit run,
    says so; the others do not."""
    d = work / "paddle_off"
    if not d.exists():
        generate(d, "--schedule", "paddle-1f1b", "--pp", 4, "--micro-batches", 8, "--pieces", 0)
    w, r = whatif(cli, d, work / "extrapolation.whatif")
    split = {"zbh1", "torch-interleavedzerobubble", "torch-zbvzerobubble", "torch-dualpipev",
             "vpp-split-backward"}
    expect(len(w["scenarios"]) > 10, "too few scenarios")
    for s in w["scenarios"]:
        want = (["V"] if s["chunks"] != 1 else []) + (
            ["split backward"] if s["schedule"] in split else [])
        expect(s["extrapolates"] == want,
               f"{s['schedule']} M={s['micro_batches']} V={s['chunks']}: {s['extrapolates']}")
    expect("extrapolates" in r.stdout, "the table has no extrapolates column")


def case_micro_batch_pattern(cli, work):
    """Micro-batch 3 long on every stage (a sequence length), a fixed cost per
    op, the optimizer starting before the last backward ends: the replay keeps the micro-batch's pattern on every stage, and every
    one-chunk scenario at M and 2M is the generator's own run of it within 3%
    of step time and 2 points of bubble ratio. Without a pattern the stages'
    costs are drawn apart."""
    pattern = "1,1,1,1.8,1,1,1,1"
    common = ["--pp", 4, "--jitter", 0.02, "--op-fixed-us", 300, "--pieces", 0, "--steps", 6,
              "--opt-overlap-us", 3000]
    d = work / "pattern"
    generate(d, "--schedule", "paddle-1f1b", "--micro-batches", 8, "--mb-pattern", pattern,
             *common)
    w, _ = whatif(cli, d, work / "pattern.whatif", "-q")
    expect(w["measured"]["cost_draws"] == "per_micro_batch",
           f"cost draws {w['measured']['cost_draws']}, correlation "
           f"{w['measured']['micro_batch_correlation']}")
    checked = 0
    generators = {"1f1b": "paddle-1f1b", "fthenb": "paddle-fthenb",
                  "eager1f1b": "paddle-eager1f1b", "zbh1": "paddle-zbh1",
                  "torch-interleavedzerobubble": "torch-interleavedzerobubble"}
    for s in w["scenarios"]:
        if s["chunks"] != 1 or s["micro_batches"] not in (8, 16):
            continue
        name = generators.get(s["schedule"])
        expect(name is not None, f"no model run for the V=1 scenario {s['schedule']}")
        t = work / f"truth_{s['schedule']}_{s['micro_batches']}"
        generate(t, "--schedule", name, "--micro-batches", s["micro_batches"], "--mb-pattern",
                 pattern, "--seed", 7, *common)
        tw, _ = whatif(cli, t, work / f"truth_{s['schedule']}_{s['micro_batches']}.whatif",
                       "--schedule", "fthenb", "-q")
        truth_step, truth_bubble = tw["measured"]["step_ns"], tw["measured"]["bubble_ratio"]
        step_err = s["step_ns"] / truth_step - 1
        bubble_err = s["bubble_ratio"] - truth_bubble
        expect(abs(step_err) <= 0.03 and abs(bubble_err) <= 0.02,
               f"{s['schedule']} M={s['micro_batches']}: step {step_err:+.2%}, "
               f"bubble {bubble_err * 100:+.2f} points")
        print(f"     {s['schedule']:<28} M={s['micro_batches']:<3} step {step_err:+.2%}, "
              f"bubble {bubble_err * 100:+.2f} points  extrapolates: "
              f"{', '.join(s['extrapolates']) or '-'}")
        checked += 1
    expect(checked == 2 * len(generators), f"{checked} scenarios checked")
    plain = work / "no_pattern"
    generate(plain, "--schedule", "paddle-1f1b", "--micro-batches", 8, "--jitter", 0.1,
             *common[:2], "--pieces", 0, "--steps", 6)
    w, _ = whatif(cli, plain, work / "no_pattern.whatif", "--schedule", "fthenb", "-q")
    expect(w["measured"]["cost_draws"] == "per_stage",
           f"no pattern: cost draws {w['measured']['cost_draws']}")


CASES = [case_dualpipev, case_dualpipev_without_boundary, case_paddle_pieces, case_extrapolation,
         case_micro_batch_pattern]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="overlap_"))
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for case in CASES:
        try:
            case(args.cli, work)
            print(f"ok   {case.__name__}")
        except Failure as e:
            failed += 1
            print(f"FAIL {case.__name__}: {e}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
