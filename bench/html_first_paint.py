#!/usr/bin/python3
"""First paint of the HTML report's interactive timeline on a big run, in
headless chromium (tests/browser/cdp.py).

    bench/html_first_paint.py PIPESCOPE WORK_DIR [--stages 16] [--micro-batches 64]
                              [--steps 49] [--reps 5] [--max-ms MS]

Simulates a 1F1B run (default 16 stages x 64 micro-batches x 49 steps:
101,136 jobs), analyses it with --html, then loads the report REPS times,
each in a fresh page, and prints per load: the time from navigation start to
the timeline's first draw (the page's performance mark `pipescope-drawn`,
set in the frame after its first canvas draw) and to the first contentful
paint, then the medians and the report's size. --max-ms: exit 1 when the
median first draw is slower. Exit 77 (skipped) when chromium cannot start,
or PIPESCOPE_NO_BROWSER=1.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
import cdp  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipescope")
    parser.add_argument("work")
    parser.add_argument("--stages", type=int, default=16)
    parser.add_argument("--micro-batches", type=int, default=64)
    parser.add_argument("--steps", type=int, default=49)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--max-ms", type=float)
    args = parser.parse_args()
    if os.environ.get("PIPESCOPE_NO_BROWSER") == "1":
        print("SKIPPED: PIPESCOPE_NO_BROWSER=1")
        return 77
    work = os.path.abspath(args.work)
    logs, html = f"{work}/logs", f"{work}/report.html"
    subprocess.run([args.pipescope, "simulate", "-o", logs, "--force", "--schedule", "1f1b", "--stages",
                    str(args.stages), "--micro-batches", str(args.micro_batches), "--steps", str(args.steps)],
                   check=True, capture_output=True)
    started = time.time()
    subprocess.run([args.pipescope, "analyze", "-q", "--no-trace", logs, "-o", f"{work}/out", "--html", html],
                   check=True)
    analyze_s = time.time() - started
    with open(f"{work}/out/summary.json") as f:
        summary = json.load(f)
    with open(html, encoding="utf-8") as f:
        page_text = f.read()
    embedded = page_text.count("can be picked")
    print(f"run: {summary['jobs']} jobs, {len(summary['steps'])} steps, {len(summary['devices'])} devices; "
          f"analyze --html {analyze_s:.2f} s; report {os.path.getsize(html) / 1e6:.2f} MB"
          f"{'' if embedded else ' (no interactive timeline!)'}")
    draws, paints = [], []
    try:
        browser = cdp.Browser(f"{work}/profile", width=1280, height=900).__enter__()
    except cdp.CannotStart as e:
        print(f"SKIPPED: chromium cannot start here: {e}")
        return 77
    try:
        for rep in range(args.reps):
            page = browser.page()
            page.navigate("about:blank")
            page.navigate("file://" + html)
            drawn = page.evaluate(
                "new Promise((done) => { const wait = () => { const m = performance.getEntriesByName("
                "'pipescope-drawn'); m.length ? done(m[0].startTime) : setTimeout(wait, 10); }; wait(); })")
            paint = page.evaluate(
                "(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime")
            if page.console:
                print(f"console: {page.console}")
            draws.append(drawn)
            paints.append(paint)
            print(f"load {rep + 1}: first draw {drawn:.0f} ms, first contentful paint {paint:.0f} ms")
            page.close()
    finally:
        browser.__exit__(None, None, None)
    median = statistics.median(draws)
    print(f"median of {len(draws)}: first draw {median:.0f} ms, first contentful paint "
          f"{statistics.median(paints):.0f} ms")
    if args.max_ms is not None and median > args.max_ms:
        print(f"FAIL: the median first draw {median:.0f} ms is over {args.max_ms:.0f} ms")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
