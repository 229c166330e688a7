#!/usr/bin/env python3
"""The engine against runs of hybrid layouts (data x pipeline x tensor
parallelism) written by hybrid_run.py, whose truth.json holds the layout, the
clock skews and the contract's figures of the true times.

    check_hybrid.py PIPESCOPE WORK_DIR [--only a,b,c,d] [--list] [-j N] [--keep]

Check groups (each case runs some of them on one generated run):
  a  no skew: `analyze DIR` equals `analyze DIR --no-clock-fix` in every field but
     clock.method, and so does `analyze DIR --stages LIST` (the truth's stage map),
     which also finds no violated dependency and warns of nothing (but, with dp > 1,
     that a stage's replicas do not run in step); machine folders
     given in reverse order change nothing; the contract figures equal the truth's
     (integers exactly, ratios within 1e-12)
  b  layout: summary.json "layout" has the truth's pp, dp, tp (method "detected")
     and an order that puts every rank where the truth does; "stages" lists the
     truth's device set of each stage
  c  skew: the estimated offset of each machine is exactly its skew and the
     figures equal the truth's (from the true times); each replica analysed alone
     (`--devices`) finds its machines' skews and its own figures; a skew no
     dependency inside a replica can see is left alone (figures as written)
  d  replicas: each replica analysed alone (`--devices`, its stage map given) has
     the truth's figures of that replica; summary.json "replicas" has one entry
     per data-parallel replica with the truth's devices and bubble ratio, and the
     one marked slowest has the longest total step time
A missing key is a failure, not a skip. Prints one line per case, then a
summary; exit 1 on any failure, 2 on a usage or setup error.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import compare_summary  # noqa: E402
from hybrid_run import Layout  # noqa: E402

GROUPS = "abcd"
REPLICA_TOLERANCE = 1e-9
MISSING = object()


# ---------------------------------------------------------------- the cases

class Case:
    def __init__(self, name, args, groups, skew=None, seen=True):
        self.name, self.args, self.groups = name, args, groups
        self.skew = skew or {}  # machine -> ns
        # c: whether the pipeline dependencies inside the replicas can see the
        # skews (False: the no-correction case, expected as written).
        self.seen = seen


def layout_name(pp, dp, tp, order, gpm):
    return f"{pp}x{dp}x{tp}.{order.replace(',', '')}.g{gpm}"


def cases():
    out = []
    small = [(4, 1, 1, "dp,pp,tp", 4), (4, 1, 1, "dp,pp,tp", 2), (4, 1, 1, "pp,dp,tp", 1),
             (2, 4, 1, "dp,pp,tp", 4), (2, 4, 1, "pp,dp,tp", 4),
             (4, 2, 1, "dp,pp,tp", 4), (4, 2, 1, "pp,dp,tp", 4), (4, 2, 1, "dp,pp,tp", 2)]
    small += [(2, 2, 2, order, 4) for order in
              ("dp,pp,tp", "dp,tp,pp", "pp,dp,tp", "pp,tp,dp", "tp,dp,pp", "tp,pp,dp")]
    small += [(4, 2, 2, "dp,pp,tp", 8), (4, 2, 2, "pp,dp,tp", 4),
              (8, 2, 1, "dp,pp,tp", 8), (8, 2, 1, "pp,dp,tp", 4),
              (4, 8, 1, "dp,pp,tp", 8), (4, 8, 1, "pp,dp,tp", 8)]
    for pp, dp, tp, order, gpm in small:
        for seed in range(1, 7):
            schedule = "fthenb" if seed % 2 else "1f1b"
            jitter = "independent" if seed in (1, 4, 5) else "shared"
            m = [8, pp, 2 * pp + 1, 8, max(pp, 6), 12][seed - 1]
            steps = 2 if seed == 3 else 3
            args = ["--pp", pp, "--dp", dp, "--tp", tp, "--order", order,
                    "--gpus-per-machine", gpm, "--schedule", schedule,
                    "--micro-batches", m, "--steps", steps, "--seed", seed,
                    "--replica-jitter", jitter]
            if dp > 1 and seed in (4, 5):
                args += ["--slow-replica", f"{seed % dp}:1.15"]
            groups = "ab" + ("d" if dp > 1 else "")
            out.append(Case(f"{layout_name(pp, dp, tp, order, gpm)}.s{seed}.{schedule}.{jitter}",
                            args, groups))
    # 256 ranks on 32 machines of 8 GPUs.
    for order, seed, schedule, jitter in (("dp,pp,tp", 1, "1f1b", "independent"),
                                          ("pp,dp,tp", 2, "fthenb", "independent")):
        args = ["--pp", 4, "--dp", 8, "--tp", 8, "--order", order, "--gpus-per-machine", 8,
                "--schedule", schedule, "--micro-batches", 8, "--steps", 3 if seed == 1 else 2,
                "--seed", seed, "--replica-jitter", jitter, "--slow-replica", "5:1.1"]
        out.append(Case(f"{layout_name(4, 8, 8, order, 8)}.s{seed}.{schedule}.{jitter}",
                        args, "abd"))
    # Clock skew, symmetric constant latency: the estimate must be exact.
    skewed = [
        # The pipeline crosses from machine 0 to 1 between stages 1 and 2, in both replicas.
        (4, 2, 1, "pp,dp,tp", 4, "1f1b", 1, {1: 5_000_000}, True),
        (4, 2, 1, "pp,dp,tp", 4, "fthenb", 2, {1: -3_000_000}, True),
        # Each replica spans two machines of its own.
        (4, 2, 1, "dp,pp,tp", 2, "1f1b", 3, {1: 5_000_000, 3: -2_000_000}, True),
        (4, 2, 2, "dp,pp,tp", 4, "1f1b", 4, {1: 5_000_000, 3: 1_500_000}, True),
        # Two machines, three replicas: replica 1 spans both, 0 and 2 one each.
        (4, 3, 1, "dp,pp,tp", 6, "1f1b", 5, {1: 5_000_000}, True),
        # Each replica on a machine of its own: no pipeline dependency crosses
        # machines, so nothing can (or may) be corrected.
        (4, 2, 1, "dp,pp,tp", 4, "1f1b", 6, {1: 5_000_000}, False),
    ]
    for pp, dp, tp, order, gpm, schedule, seed, skew, seen in skewed:
        args = ["--pp", pp, "--dp", dp, "--tp", tp, "--order", order, "--gpus-per-machine", gpm,
                "--schedule", schedule, "--micro-batches", 8, "--steps", 3, "--seed", seed,
                "--symmetric-latency"]
        for machine, ns in sorted(skew.items()):
            args += ["--skew", f"{machine}:{ns}"]
        what = ",".join(f"m{m}{ns:+d}" for m, ns in sorted(skew.items()))
        out.append(Case(f"skew.{layout_name(pp, dp, tp, order, gpm)}.s{seed}.{schedule}.{what}",
                        args, "cbd", skew, seen))
    return out


# ---------------------------------------------------------------- helpers

class Failure(Exception):
    pass


class Checker:
    def __init__(self, case):
        self.case = case
        self.failures = []  # (group, message)

    def fail(self, group, message):
        self.failures.append((group, message))

    def failures_for(self, group):
        return [m for g, m in self.failures if g == group]

    def get(self, tree, *keys):
        for key in keys:
            if isinstance(tree, dict) and key in tree:
                tree = tree[key]
            elif isinstance(tree, list) and isinstance(key, int) and key < len(tree):
                tree = tree[key]
            else:
                return MISSING
        return tree


def run(cmd, what):
    proc = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise Failure(f"{what} exited {proc.returncode}: {' '.join(map(str, cmd))}\n"
                      f"{proc.stderr.strip()[-2000:]}")
    return proc


def load(path):
    try:
        return json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise Failure(f"{path}: cannot read JSON: {e}")


def analyze(cli, inputs, out, *options):
    run([cli, "analyze", *inputs, "-o", out, "--quiet", *options], f"analyze {' '.join(options)}")
    return load(Path(out) / "summary.json")


def tree_diff(a, b, where="", out=None, limit=6):
    """Paths where two JSON trees differ (exactly: same types, same values)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            child = f"{where}.{key}" if where else key
            if key not in a or key not in b:
                out.append(f"{child}: only in {'the first' if key in a else 'the second'}")
            else:
                tree_diff(a[key], b[key], child, out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} vs {len(b)} elements")
        for i, (x, y) in enumerate(zip(a, b)):
            tree_diff(x, y, f"{where}[{i}]", out, limit)
    elif type(a) is not type(b) or a != b:
        out.append(f"{where}: {json.dumps(a)[:120]} vs {json.dumps(b)[:120]}")
    return out[:limit]


def without_method(summary):
    """The summary less clock.method, the one field a correction that changes
    nothing may change."""
    copy = json.loads(json.dumps(summary))
    if isinstance(copy.get("clock"), dict):
        copy["clock"].pop("method", None)
    return copy


def contract_diff(actual, expected):
    c = compare_summary.Comparison()
    c.compare("", expected, actual)
    return c.differences


def ambiguous(truth):
    """With shared jitter every replica of a stage runs the same times, as tp
    peers do: when dp sits inside pp in the mesh order (pp,dp,tp; pp,tp,dp;
    tp,pp,dp) the replicas of a stage are neighbours like tp peers, and with tp > 1
    (whatever the order) the tp peers differ from one another only by their launch
    jitter, the replicas not at all. Timing then cannot tell dp from tp: only pp,
    dp*tp and the stages' device sets are determined."""
    lay = truth["layout"]
    order = lay["order"].split(",")
    if truth["replica_jitter"] == "shared" and lay["dp"] > 1 and (
            order.index("dp") > order.index("pp") or lay["tp"] > 1):
        return True
    # The engine looks for tp peers among consecutive ranks only (tp is the
    # fastest axis in every framework's order: Paddle fleet, Megatron-LM,
    # DeepSpeed, torchtitan); peers laid out elsewhere are found as replicas
    # (docs/guide.md, "Layout"): pp, dp*tp and the stages still hold.
    return lay["tp"] > 1 and order[-1] != "tp"


def rank_map(pp, dp, tp, order, gpm):
    lay = Layout(pp, dp, tp, order, gpm)
    return {lay.rank(d, s, t): (d, s, t) for d, s, t in lay.coords()}


# ---------------------------------------------------------------- the checks

def check_a(ck, truth, full, plain, reversed_summary, given, given_plain):
    if not ck.case.skew:
        # The figures of the clocks as written are the contract's of the true times...
        for line in contract_diff(plain, truth["expected"])[:6]:
            ck.fail("a", f"--no-clock-fix vs truth: {line}")
        # ...and a run without skew must come out of the correction unchanged.
        for line in tree_diff(without_method(full), without_method(plain)):
            ck.fail("a", f"analyze vs analyze --no-clock-fix: {line}")
        # The same with the truth's stage map given: then no dependency may be
        # violated and nothing is worth a warning (a clean run).
        for line in contract_diff(given, truth["expected"])[:6]:
            ck.fail("a", f"--stages LIST vs truth: {line}")
        for line in tree_diff(without_method(given), without_method(given_plain)):
            ck.fail("a", f"--stages LIST vs --stages LIST --no-clock-fix: {line}")
        violations = ck.get(given, "clock", "violations_before")
        if violations != 0:
            ck.fail("a", f"--stages LIST: clock.violations_before: expected 0, got "
                    f"{'missing' if violations is MISSING else violations}")
        codes = [w.get("code") for w in ck.get(given, "warnings") or [] if isinstance(w, dict)]
        if truth["layout"]["dp"] > 1:
            # The list makes all replicas of a stage one stage, whose devices the
            # engine expects to run in step (tp peers): a slow replica does not.
            codes = [c for c in codes if c != "stage_map_contradicted"]
        if codes:
            ck.fail("a", f"--stages LIST: warnings: expected none, got {', '.join(map(str, codes))}")
    if reversed_summary is not None:
        for line in tree_diff(full, reversed_summary):
            ck.fail("a", f"machine folders in reverse order: {line}")


def check_b(ck, truth, summary):
    lay = truth["layout"]
    got = ck.get(summary, "layout")
    if got is MISSING or not isinstance(got, dict):
        ck.fail("b", "layout: missing")
    else:
        values = {k: got.get(k, MISSING) for k in ("pp", "dp", "tp", "order", "method")}
        for key in ("pp", "dp", "tp", "order", "method"):
            if values[key] is MISSING:
                ck.fail("b", f"layout.{key}: missing")
        if values["method"] is not MISSING and values["method"] != "detected":
            ck.fail("b", f"layout.method: expected \"detected\", got {json.dumps(values['method'])}")
        relaxed = ambiguous(truth)
        if values["pp"] is not MISSING and values["pp"] != lay["pp"]:
            ck.fail("b", f"layout.pp: expected {lay['pp']}, got {values['pp']}")
        if relaxed:
            # dp and tp cannot be told apart here (see ambiguous()): their product only.
            if (isinstance(values["dp"], int) and isinstance(values["tp"], int)
                    and values["dp"] * values["tp"] != lay["dp"] * lay["tp"]):
                ck.fail("b", f"layout.dp*tp: expected {lay['dp'] * lay['tp']}, got "
                        f"{values['dp']}*{values['tp']}")
        else:
            for key in ("dp", "tp"):
                if values[key] is not MISSING and values[key] != lay[key]:
                    ck.fail("b", f"layout.{key}: expected {lay[key]}, got {values[key]}")
        # An order that differs (an axis of size 1 makes several equivalent) must
        # put every rank at the truth's (replica, stage, tp index).
        if (not relaxed and all(values[k] is not MISSING for k in ("pp", "dp", "tp", "order"))
                and values["order"] != lay["order"] and not ck.failures_for("b")):
            try:
                mine = rank_map(values["pp"], values["dp"], values["tp"], values["order"],
                                lay["gpus_per_machine"])
            except (ValueError, TypeError) as e:
                ck.fail("b", f"layout.order: {json.dumps(values['order'])}: {e}")
            else:
                want = {r["rank"]: (r["replica"], r["stage"], r["tp"]) for r in lay["ranks"]}
                wrong = [r for r in sorted(want) if mine.get(r) != want[r]]
                if wrong:
                    r = wrong[0]
                    ck.fail("b", f"layout.order: expected {lay['order']} (or an equivalent), got "
                            f"{values['order']}: rank {r} is (dp, pp, tp) {want[r]}, the order "
                            f"makes it {mine.get(r)}")
    stages = ck.get(summary, "stages", "list")
    if stages is MISSING or not isinstance(stages, list):
        ck.fail("b", "stages.list: missing")
        return
    want = [s["devices"] for s in lay["stages"]]
    got_sets = [sorted(s.get("devices", [])) for s in stages if isinstance(s, dict)]
    if len(got_sets) != len(want):
        ck.fail("b", f"stages.list: expected {len(want)} stages, got {len(got_sets)} "
                f"(stages.source {json.dumps(ck.get(summary, 'stages', 'source'))})")
        return
    for s, (w, g) in enumerate(zip(want, got_sets)):
        if w != g:
            ck.fail("b", f"stages.list[{s}].devices: expected {compact(w)}, got {compact(g)}")
            return


def check_c(ck, truth, summary, cli, run_dir, out_dir):
    clock = ck.get(summary, "clock")
    skews = {m["machine"]: m["skew_ns"] for m in truth["skews"]}
    if clock is MISSING:
        ck.fail("c", "clock: missing")
        return
    method = clock.get("method", MISSING)
    entries = {m.get("machine"): m for m in clock.get("machines", []) if isinstance(m, dict)}
    if ck.case.seen:
        if method != "estimated":
            ck.fail("c", f"clock.method: expected \"estimated\", got {json.dumps(method, default=str)}")
        for machine, ns in sorted(skews.items()):
            got = entries.get(machine, {}).get("offset_ns", MISSING)
            if got is MISSING or got != ns:
                ck.fail("c", f"clock.machines[{machine}].offset_ns: expected {ns}, got "
                        f"{'missing' if got is MISSING else got}")
        for line in contract_diff(summary, truth["expected"])[:6]:
            ck.fail("c", f"figures vs truth (true times): {line}")
    else:
        # No dependency inside a replica crosses machines: the skew is invisible
        # to the rule (only the replicas' gradient all-reduce spans the machines,
        # and it is no pipeline dependency), so nothing may be corrected.
        if method in ("estimated", "imposed", "rejected", MISSING):
            ck.fail("c", f"clock.method: expected no estimate (consistent), got "
                    f"{json.dumps(method, default=str)}")
        for machine in sorted(skews):
            got = entries.get(machine, {}).get("offset_ns", MISSING)
            if got != 0:
                ck.fail("c", f"clock.machines[{machine}].offset_ns: expected 0, got "
                        f"{'missing' if got is MISSING else got}")
        for line in contract_diff(summary, truth["as_written"])[:6]:
            ck.fail("c", f"figures vs truth (times as written): {line}")
    # Each replica alone: a plain pipeline (its stages given with --stages).
    lay = truth["layout"]
    machines_of = {r["rank"]: r["machine"] for r in lay["ranks"]}
    for rep in truth["replicas"] or [{"replica": 0, "devices": list(range(len(lay["ranks"]))),
                                      "figures": truth["expected"]}]:
        spanned = sorted({machines_of[d] for d in rep["devices"]})
        if len(spanned) < 2 or not ck.case.seen:
            continue
        options = replica_options(lay, rep)
        alone = analyze(cli, [run_dir], Path(out_dir) / f"replica{rep['replica']}", *options)
        where = f"replica {rep['replica']} alone ({' '.join(options)})"
        got_method = ck.get(alone, "clock", "method")
        if got_method != "estimated":
            ck.fail("c", f"{where}: clock.method: expected \"estimated\", got "
                    f"{json.dumps(got_method, default=str)}")
        entries = {m.get("machine"): m for m in ck.get(alone, "clock", "machines") or []
                   if isinstance(m, dict)}
        base = skews.get(spanned[0], 0)
        for machine in spanned[1:]:
            want = skews.get(machine, 0) - base
            got = entries.get(machine, {}).get("offset_ns", MISSING)
            if got != want:
                ck.fail("c", f"{where}: clock.machines[{machine}].offset_ns: expected {want}, "
                        f"got {'missing' if got is MISSING else got}")
        if base == 0:
            for line in contract_diff(alone, rep["figures"])[:6]:
                ck.fail("c", f"{where}: figures vs truth: {line}")


def replica_options(lay, rep):
    """`analyze` options for one replica alone: its devices, its stage map."""
    mine = set(rep["devices"])
    stages = ",".join("+".join(str(d) for d in st["devices"] if d in mine)
                      for st in lay["stages"])
    return ["--devices", compact(rep["devices"]), "--stages", stages]


def check_d_alone(ck, truth, cli, run_dir, out_dir):
    """Each replica alone (`--devices`, its stage map given) has the truth's
    figures of that replica and no violated dependency."""
    for rep in truth["replicas"]:
        options = replica_options(truth["layout"], rep)
        alone = analyze(cli, [run_dir], Path(out_dir) / f"replica{rep['replica']}", *options)
        where = f"replica {rep['replica']} alone ({' '.join(options)})"
        for line in contract_diff(alone, rep["figures"])[:6]:
            ck.fail("d", f"{where}: figures vs truth: {line}")
        violations = ck.get(alone, "clock", "violations_before")
        if violations != 0:
            ck.fail("d", f"{where}: clock.violations_before: expected 0, got "
                    f"{'missing' if violations is MISSING else violations}")


def check_d(ck, truth, summary):
    lay = truth["layout"]
    want = truth["replicas"]
    got = ck.get(summary, "replicas")
    engine_dp = ck.get(summary, "layout", "dp")
    if ambiguous(truth) and isinstance(engine_dp, int):
        # dp and tp cannot be told apart (see ambiguous()): replicas that are
        # not the truth's must still be as many as layout.dp says and split the
        # devices evenly.
        truth_sets = sorted(tuple(r["devices"]) for r in want)
        got_sets = sorted(tuple(sorted(r.get("devices", []))) for r in got
                          if isinstance(r, dict)) if isinstance(got, list) else None
        if engine_dp == 1 and got is MISSING:
            return
        if got_sets is not None and got_sets != truth_sets:
            every = sorted(d for g in got_sets for d in g)
            if len(got_sets) != engine_dp or every != list(range(len(lay["ranks"]))) or \
                    len({len(g) for g in got_sets}) != 1:
                ck.fail("d", f"replicas: {len(got_sets)} entries ({'; '.join(map(compact, got_sets))}) "
                        f"do not split the devices into layout.dp = {engine_dp} replicas")
            return
    if got is MISSING or not isinstance(got, list):
        ck.fail("d", "replicas: missing")
        return
    if len(got) != len(want):
        ck.fail("d", f"replicas: expected {len(want)} entries, got {len(got)}")
        return
    by_devices = {tuple(r["devices"]): r for r in want}
    longest = max(r["total_window_ns"] for r in want)
    slowest = []
    for i, entry in enumerate(got):
        if not isinstance(entry, dict):
            ck.fail("d", f"replicas[{i}]: not an object")
            continue
        for key in ("replica", "devices", "step_ns", "bubble_ratio", "slowest"):
            if key not in entry:
                ck.fail("d", f"replicas[{i}].{key}: missing")
        devices = tuple(sorted(entry.get("devices", [])))
        truth_rep = by_devices.get(devices)
        if truth_rep is None:
            ck.fail("d", f"replicas[{i}].devices: {compact(devices)} is no replica of the "
                    f"truth ({'; '.join(compact(r['devices']) for r in want)})")
            continue
        if entry.get("replica", MISSING) != truth_rep["replica"]:
            ck.fail("d", f"replicas[{i}].replica: expected {truth_rep['replica']} for devices "
                    f"{compact(devices)}, got {entry.get('replica', 'missing')}")
        ratio = entry.get("bubble_ratio", MISSING)
        if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or \
                abs(ratio - truth_rep["bubble_ratio"]) > REPLICA_TOLERANCE:
            ck.fail("d", f"replicas[{i}].bubble_ratio: expected {truth_rep['bubble_ratio']!r}, "
                    f"got {ratio if ratio is not MISSING else 'missing'}")
        if entry.get("slowest") is True:
            slowest.append(truth_rep)
    if len(slowest) != 1:
        ck.fail("d", f"replicas: expected exactly one marked slowest, got {len(slowest)}")
    elif slowest[0]["total_window_ns"] != longest:
        ck.fail("d", f"replicas: replica {slowest[0]['replica']} marked slowest, its total step "
                f"time {slowest[0]['total_window_ns']} ns is not the longest ({longest} ns, "
                f"replica {[r['replica'] for r in want if r['total_window_ns'] == longest]})")


def compact(devices):
    """0,1,2,3,8 -> '0-3,8'."""
    out, devices = [], sorted(devices)
    i = 0
    while i < len(devices):
        j = i
        while j + 1 < len(devices) and devices[j + 1] == devices[j] + 1:
            j += 1
        out.append(str(devices[i]) if i == j else f"{devices[i]}-{devices[j]}")
        i = j + 1
    return ",".join(out)


# ---------------------------------------------------------------- running

def run_case(case, groups, cli, work, keep):
    ck = Checker(case)
    run_dir, out_dir = work / case.name, work / (case.name + ".out")
    started = time.monotonic()
    try:
        run([sys.executable, HERE / "hybrid_run.py", "-o", run_dir, *case.args], "hybrid_run.py")
        truth = load(run_dir / "truth.json")
        full = analyze(cli, [run_dir], out_dir / "fixed")
        if "a" in groups:
            plain = analyze(cli, [run_dir], out_dir / "plain", "--no-clock-fix")
            reversed_summary = None
            machines = truth["layout"]["machines"]
            if machines > 1:
                folders = [run_dir / f"machine{m}" for m in reversed(range(machines))]
                reversed_summary = analyze(cli, folders, out_dir / "reversed")
            stage_list = ",".join("+".join(map(str, st["devices"]))
                                  for st in truth["layout"]["stages"])
            given = analyze(cli, [run_dir], out_dir / "given", "--stages", stage_list)
            given_plain = analyze(cli, [run_dir], out_dir / "given_plain", "--stages", stage_list,
                                  "--no-clock-fix")
            check_a(ck, truth, full, plain, reversed_summary, given, given_plain)
        if "b" in groups:
            check_b(ck, truth, full)
        if "c" in groups:
            check_c(ck, truth, full, cli, run_dir, out_dir)
        if "d" in groups:
            if not case.skew:
                check_d_alone(ck, truth, cli, run_dir, out_dir)
            check_d(ck, truth, full)
    except Failure as e:
        ck.fail("setup", str(e))
    if not ck.failures and not keep:
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(out_dir, ignore_errors=True)
    return ck, time.monotonic() - started


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("pipescope", nargs="?")
    p.add_argument("work_dir", nargs="?")
    p.add_argument("--only", help="check groups to run, e.g. a or b,d (default: all)")
    p.add_argument("--case", help="only cases whose name contains this text")
    p.add_argument("--list", action="store_true", help="print the cases and exit")
    p.add_argument("-j", "--jobs", type=int, default=0,
                   help="cases run at once (default: the number of cores, at most 4)")
    p.add_argument("--keep", action="store_true", help="keep every case's folders")
    args = p.parse_args()
    groups = set(GROUPS)
    if args.only:
        groups = {g.strip() for g in args.only.split(",") if g.strip()}
        if not groups <= set(GROUPS):
            p.error(f"--only: groups are {','.join(GROUPS)}")
    selected = []
    for case in cases():
        mine = "".join(g for g in GROUPS if g in case.groups and g in groups)
        if mine and (not args.case or args.case in case.name):
            selected.append((case, mine))
    if args.list:
        for case, mine in selected:
            print(f"{case.name}  [{mine}]  hybrid_run.py {' '.join(map(str, case.args))}")
        print(f"{len(selected)} cases")
        return 0
    if not args.pipescope or not args.work_dir:
        p.error("PIPESCOPE and WORK_DIR are required (or --list)")
    cli = Path(args.pipescope).resolve()
    if not cli.is_file():
        print(f"check_hybrid.py: {cli}: no such program", file=sys.stderr)
        return 2
    work = Path(args.work_dir).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    jobs = args.jobs or min(4, os.cpu_count() or 2)
    started = time.monotonic()
    failed, by_group = [], {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [(case, mine, pool.submit(run_case, case, mine, cli, work, args.keep))
                   for case, mine in selected]
        for case, mine, future in futures:
            ck, seconds = future.result()
            status = "ok  " if not ck.failures else "FAIL"
            print(f"{status} {case.name} [{mine}] {seconds:.1f}s", flush=True)
            for group, message in ck.failures:
                print(f"     [{group}] {case.name}: {message}", flush=True)
                by_group[group] = by_group.get(group, 0) + 1
            if ck.failures:
                failed.append(case.name)
    elapsed = time.monotonic() - started
    if failed:
        counts = ", ".join(f"{g}: {n}" for g, n in sorted(by_group.items()))
        print(f"{len(failed)} of {len(selected)} cases failed ({counts} findings), "
              f"{elapsed:.0f} s; folders kept under {work}")
        return 1
    print(f"{len(selected)} cases passed ({''.join(sorted(groups))}), {elapsed:.0f} s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
