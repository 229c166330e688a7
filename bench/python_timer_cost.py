#!/usr/bin/env python3
"""What a begin/end pair costs from Python, next to the C++ figure.

    PYTHONPATH=build/python python3 bench/python_timer_cost.py [CUDA_TIMER_COST]

Times N begin/end pairs on the host backend (flush every 1000 jobs, not
counted), as `timer.begin(kind, mb); timer.end()` and as `with
timer.job(kind, mb): pass`, and prints the median of 7 repetitions in ns per
pair. With the path of bench's cuda_timer_cost (build/bench/cuda_timer_cost)
it runs it too, for the C++ API's figure on the same machine.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pipescope_timer

JOBS_PER_STEP = 1000
STEPS = 50


def measure(style):
    with tempfile.TemporaryDirectory() as tmp:
        timer = pipescope_timer.JobTimer(os.path.join(tmp, "t.ivl"), backend="host",
                                         marks_per_step=2 * JOBS_PER_STEP)
        begin, end, job = timer.begin, timer.end, timer.job
        per_pair = []
        for step in range(STEPS):
            t0 = time.perf_counter_ns()
            if style == "begin/end":
                for mb in range(JOBS_PER_STEP):
                    begin("forward", mb)
                    end()
            else:
                for mb in range(JOBS_PER_STEP):
                    with job("forward", mb):
                        pass
            t1 = time.perf_counter_ns()
            timer.flush()
            if step > 0:
                per_pair.append((t1 - t0) / JOBS_PER_STEP)
        timer.close()
        return statistics.median(per_pair)


def main():
    print(f"Python {sys.version.split()[0]} ({sys.executable}), host backend, "
          f"{JOBS_PER_STEP} jobs per step, median of {STEPS - 1} steps")
    for style in ("begin/end", "with job()"):
        runs = sorted(measure(style) for _ in range(7))
        print(f"{style:>12}: {runs[3]:7.0f} ns per pair (min {runs[0]:.0f}, max {runs[-1]:.0f})")
    if len(sys.argv) > 1:
        print("C++ API (cuda_timer_cost):")
        sys.stdout.flush()
        subprocess.run([sys.argv[1], str(JOBS_PER_STEP), str(STEPS)], check=True)


if __name__ == "__main__":
    main()
