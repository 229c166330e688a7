#!/usr/bin/env python3
"""What PaddlePaddle's profiler helper does, kept as the speed baseline.

Reads each whole file, runs its regex with re.findall, builds a dict per
event and json.dumps the list, as python/paddle/distributed/auto_parallel/
static/profiler_helper_static.py does (timings only: no metric is computed).
Usage: paddle_baseline.py FILE... > trace.json
"""
import json
import re
import sys

PATTERN = (r".*?Profiler Info: Job \((\d+)\), type = (\w+), micro_batch_id = (\d+), "
           r"job_start_time = (\d+.\d+), job_end_time = (\d+.\d+)")


def main(paths):
    events = []
    for pid, path in enumerate(paths):
        with open(path, "r", errors="replace") as f:
            text = f.read()
        for job_id, job_type, micro_batch, start, end in re.findall(PATTERN, text):
            events.append({
                "name": f"{job_type}{micro_batch}",
                "cat": job_type,
                "ph": "X",
                "pid": pid,
                "tid": pid,
                "ts": float(start) * 1000,
                "dur": (float(end) - float(start)) * 1000,
                "args": {"job_id": int(job_id)},
            })
    sys.stdout.write(json.dumps({"traceEvents": events}))


if __name__ == "__main__":
    main(sys.argv[1:])
