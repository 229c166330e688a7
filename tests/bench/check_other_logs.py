#!/usr/bin/env python3
"""The second family of benchmark folders against `pipescope analyze`.

    check_other_logs.py PIPESCOPE WORK_DIR

Writes small folders with bench/other_logs.py (the generator written apart from
`pipescope simulate`, see its docstring), runs `pipescope analyze --no-trace` on each
and checks summary.json against the generator's expected.json, which it computed from
its own job list by the metric contract (docs/guide.md, "Metrics"): jobs per device and
per type, steps (all complete), first step, every input's lines and job lines (none
malformed), busy and idle ns per device, the total window, the bubble ratio, every
step's window and busy times (short runs), the layout's pp and dp, and each replica's
bubble ratio. It also counts the lines holding `Profiler Info` itself (what
`rg -c 'Profiler Info'` reports on the folder) against expected.json. Exit 1 on any
difference, naming it.
"""

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENERATOR = HERE.parent.parent / "bench" / "other_logs.py"

# (name, generator options): both shapes, both mesh orders, a run long enough to
# leave the per-step rows and one cut by --target-bytes.
CASES = [
    ("sparse-dp-pp", ["--shape", "sparse", "--steps", "12", "--seed", "3"]),
    ("dense-pp-dp", ["--shape", "dense", "--steps", "40", "--seed", "4", "--order", "pp,dp",
                     "--ranks", "6", "--stages", "3", "--micro-batches", "6", "--first-step", "20"]),
    ("dense-target", ["--shape", "dense", "--target-bytes", "3M", "--seed", "5", "--ranks", "8",
                      "--stages", "8", "--micro-batches", "16"]),
    ("sparse-target", ["--shape", "sparse", "--target-bytes", "2M", "--seed", "6", "--ranks", "16",
                       "--stages", "4", "--noise-per-job", "20"]),
]


class Checker:
    def __init__(self, case):
        self.case = case
        self.failures = []

    def equal(self, what, actual, expected):
        if actual != expected:
            self.failures.append(f"{self.case}: {what}: pipescope {actual!r}, generator {expected!r}")

    def close(self, what, actual, expected, tolerance=1e-12):
        if not isinstance(actual, (int, float)) or abs(actual - expected) > tolerance:
            self.failures.append(f"{self.case}: {what}: pipescope {actual!r}, generator {expected!r}")


def profiler_info_lines(folder):
    count = 0
    for log in folder.glob("workerlog.*"):
        with open(log, "rb") as f:
            count += sum(1 for line in f if b"Profiler Info" in line)
    return count


def check(cli, work, name, options):
    folder, out = work / name, work / (name + "-out")
    subprocess.run([sys.executable, str(GENERATOR), "-o", str(folder), "--force", *options],
                   check=True, stderr=subprocess.DEVNULL)
    subprocess.run([cli, "analyze", str(folder), "-o", str(out), "--no-trace", "-q"], check=True)
    expected = json.loads((folder / "expected.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    c = Checker(name)

    c.equal("profiler_info_lines (counted here)", profiler_info_lines(folder),
            expected["profiler_info_lines"])
    c.equal("jobs", summary["jobs"], expected["jobs"])
    c.equal("first_step", summary["first_step"], expected["first_step"])
    c.equal("steps", len(summary["steps"]), expected["steps"])
    c.equal("incomplete_steps", summary["incomplete_steps"], expected["incomplete_steps"])
    c.equal("total_window_ns", summary["total_window_ns"], expected["total_window_ns"])
    c.close("bubble_ratio", summary["bubble_ratio"], expected["bubble_ratio"])
    c.equal("job_types", {t["type"]: t["jobs"] for t in summary["job_types"]},
            {t: n for t, n in expected["job_types"].items() if n})
    c.equal("warnings", [w["code"] for w in summary["warnings"]], [])

    inputs = {Path(i["path"]).name: i for i in summary["inputs"]}
    devices = {d["rank"]: d for d in summary["devices"]}
    c.equal("devices", sorted(devices), [d["rank"] for d in expected["devices"]])
    for want in expected["devices"]:
        rank = want["rank"]
        got = devices.get(rank, {})
        for field in ("jobs", "steps", "busy_ns", "idle_ns"):
            c.equal(f"rank {rank} {field}", got.get(field), want[field])
        source = inputs.get(want["path"], {})
        c.equal(f"{want['path']} lines", source.get("lines"), want["lines"])
        c.equal(f"{want['path']} bytes", source.get("bytes"), want["bytes"])
        c.equal(f"{want['path']} matched", source.get("matched"), want["jobs"])
        c.equal(f"{want['path']} malformed", source.get("malformed"), 0)

    if "step_windows" in expected:
        device_of = {d["rank"]: d["device"] for d in summary["devices"]}
        for want, got in zip(expected["step_windows"], summary["steps"]):
            step = want["step"]
            c.equal(f"step {step} number", got["step"], step)
            c.equal(f"step {step} window", (got["start_ns"], got["end_ns"]),
                    (want["start_ns"], want["end_ns"]))
            busy = {d["device"]: d["busy_ns"] for d in got["devices"]}
            c.equal(f"step {step} busy_ns",
                    [busy.get(device_of.get(d["rank"])) for d in expected["devices"]], want["busy_ns"])

    layout = summary.get("layout", {})
    c.equal("layout pp, dp", (layout.get("pp"), layout.get("dp")), (expected["pp"], expected["dp"]))
    if expected["dp"] > 1:
        got_replicas = sorted((sorted(r["devices"]), r) for r in summary.get("replicas", []))
        want_replicas = sorted((sorted(r["devices"]), r) for r in expected["replicas"])
        c.equal("replicas' devices", [g[0] for g in got_replicas], [w[0] for w in want_replicas])
        for (devs, got), (_, want) in zip(got_replicas, want_replicas):
            c.equal(f"replica {devs} total_window_ns", got.get("total_window_ns"), want["total_window_ns"])
            c.close(f"replica {devs} bubble_ratio", got.get("bubble_ratio"), want["bubble_ratio"])
    c.equal("schedule", summary["schedule"]["name"], expected["schedule"])

    status = "ok" if not c.failures else f"{len(c.failures)} differences"
    print(f"{name}: {expected['ranks']} ranks, {expected['steps']} steps, {expected['jobs']} jobs, "
          f"{expected['bytes']} bytes, bubble {expected['bubble_ratio']:.6f}: {status}")
    return c.failures


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    cli, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    failures = []
    for name, options in CASES:
        failures += check(cli, work, name, options)
    for failure in failures[:50]:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
