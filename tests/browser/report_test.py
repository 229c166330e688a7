#!/usr/bin/python3
"""The HTML report's interactive timeline in a real browser: Debian's headless
chromium driven through the DevTools protocol (cdp.py), on a simulated run
(VPP, P = 4, M = 8, V = 2, stage 2 slowed, send/recv jobs, 2 machines).

    report_test.py PIPESCOPE WORK_DIR [--screenshots DIR]

Every expected figure comes from what `analyze` wrote beside the report
(summary.json and trace.json, written by other code than the report), never
from the report's own data:

  - the page loads without a console message; the default step is the
    median-duration step of summary.json, drawn whole (its window);
  - the wheel zooms about the pointer, a drag zooms to the dragged range,
    shift+drag pans, a double-click shows the whole step again;
  - a click on a row of the step table, the step picker, and the arrow
    keys on the timeline draw that step: its window, and the bubbles of
    trace.json shaded where trace.json has them;
  - hovering a job shows its type, micro-batch, start, duration and stage
    (trace.json); a comm job its wait and transfer, the peer named being the
    send of trace.json whose start ends the wait; a bubble its kind, length,
    inherent and excess parts and what it waits for;
  - the critical path of summary.json is highlighted, and the bottleneck
    stage's rows are shaded and can be unshaded;
  - with scripts off, the figures and the static timelines show.

Screenshots of each state go to --screenshots (docs/ keeps them) or WORK_DIR.
Exit 77 (skipped) only when chromium cannot start, or PIPESCOPE_NO_BROWSER=1;
a missing python3-websocket is a failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SKIP = 77
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print(f"FAIL: {message}", flush=True)
    return condition


def format_duration(ns):
    """numeric/units.h format_duration, from its definition."""
    sign = "-" if ns < 0 else ""
    a = abs(ns)

    def fixed3(m, unit):
        th = (m + unit // 2000) // (unit // 1000)
        return f"{th // 1000}.{th % 1000:03d}"

    if a < 1000:
        return f"{sign}{a} ns"
    if a < 1_000_000:
        return f"{sign}{fixed3(a, 1000)} us"
    if (a + 500) // 1000 < 1_000_000:
        return f"{sign}{fixed3(a, 1_000_000)} ms"
    return f"{sign}{fixed3(a, 1_000_000_000)} s"


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({result.returncode}): {result.stdout}{result.stderr}")
    return result


def load_trace(path):
    """Jobs and bubbles of trace.json, times in epoch ns (exact)."""
    with open(path) as f:
        trace = json.load(f, parse_float=Decimal)
    origin = int(trace["otherData"]["origin_ns"])
    lanes, bubble_lanes = {}, {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            m = re.match(r"GPU (\d+) ", e["args"]["name"])
            if m:
                (bubble_lanes if "bubbles" in e["args"]["name"] else lanes)[(e["pid"], e["tid"])] = int(m[1])
    jobs, bubbles = [], []
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        start = origin + int(Decimal(e["ts"]) * 1000)
        key = (e["pid"], e["tid"])
        args = e.get("args", {})
        if key in lanes and "micro_batch" in args:
            jobs.append({"device": lanes[key], "type": e["name"].rsplit(" mb", 1)[0], "mb": int(args["micro_batch"]),
                         "step": args["step"], "start": start, "dur": int(args["duration_ns"])})
        elif key in bubble_lanes and e.get("cat") == "bubble":
            bubbles.append({"device": bubble_lanes[key], "kind": e["name"], "step": args["step"],
                            "start": start, "length": int(args["length_ns"])})
    return jobs, bubbles


def make_nccl_traces(src, dst):
    """PyTorch traces with PP: labels whose send/recv kernels become NCCL
    kernels (matched across the two ranks by Comms Id), so the run has the
    kernel view beside its jobs. Returns every NCCL kernel written:
    rank, start, end (epoch ns), comms id."""
    os.makedirs(dst, exist_ok=True)
    kernels = []
    for rank in (0, 1):
        with open(f"{src}/rank{rank}.pt.trace.json") as f:
            trace = json.load(f, parse_float=Decimal)
        base = int(trace["baseTimeNanoseconds"])
        labels = {e["args"]["External id"]: e["name"][3:] for e in trace["traceEvents"]
                  if e.get("cat") == "user_annotation" and e["name"].startswith("PP:")}
        for e in trace["traceEvents"]:
            m = re.match(r"\d+(SEND|RECV)_([FB])(\d+)$", labels.get(e.get("args", {}).get("External id"), ""))
            if e.get("cat") != "kernel" or not m:
                continue
            send = m[1] == "SEND"
            comms_id = 1000 + 2 * int(m[3]) + (m[2] == "B")
            e["name"] = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
            e["args"].update({"Collective name": "send" if send else "recv", "Process Group Name": "3",
                              "Process Group Description": "PIPELINE_MODEL_PARALLEL_GROUP",
                              "Process Group Ranks": "[0, 1]", ("Dst Rank" if send else "Src Rank"): 1 - rank,
                              "Comms Id": comms_id})
            start = base + int(Decimal(e["ts"]) * 1000)
            kernels.append({"rank": rank, "start": start, "end": start + int(Decimal(e["dur"]) * 1000),
                            "id": comms_id, "op": "send" if send else "recv"})
        def plain(v):  # Decimals back to JSON numbers (they hold whole nanoseconds)
            if isinstance(v, dict):
                return {k: plain(x) for k, x in v.items()}
            if isinstance(v, list):
                return [plain(x) for x in v]
            return float(v) if isinstance(v, Decimal) else v

        with open(f"{dst}/rank{rank}.pt.trace.json", "w") as f:
            json.dump(plain(trace), f)
    return kernels


class Report:
    """The page, through the hooks its script exposes (window.pipescopeReport)."""

    def __init__(self, page):
        self.page = page

    def drawn(self, timeout_ms=10000):
        """Whether the page's script drew the timeline (its performance mark)."""
        return self.page.evaluate(
            "new Promise((done) => { const t0 = performance.now(); const wait = () => "
            "performance.getEntriesByName('pipescope-drawn').length ? done(true) : "
            f"performance.now() - t0 > {timeout_ms} ? done(false) : setTimeout(wait, 20); wait(); }})")

    def view(self):
        return self.page.evaluate("window.pipescopeReport.view()")

    def x(self, t):
        return self.page.evaluate(f"window.pipescopeReport.xOf({t})")

    def y(self, device_position, nccl=False):
        return self.page.evaluate(f"window.pipescopeReport.yOf({device_position}, {'true' if nccl else 'false'})")

    def text(self, selector):
        return self.page.evaluate(f"document.querySelector({json.dumps(selector)}).textContent")

    def tip(self):
        return self.page.evaluate(
            "(() => { const t = document.getElementById('tip');"
            " return {hidden: t.hidden, text: t.innerText, data: Object.assign({}, t.dataset)}; })()")

    def pixel(self, x, y):
        """The canvas's colour at page point (x, y) over the page's white, as (r, g, b)."""
        return tuple(self.page.evaluate(
            "(() => { const c = document.getElementById('timeline-canvas');"
            " const r = c.getBoundingClientRect(), s = c.width / r.width;"
            " const probe = document.createElement('canvas'); probe.width = probe.height = 1;"
            " const p = probe.getContext('2d', {willReadFrequently: true});"
            " p.fillStyle = '#fff'; p.fillRect(0, 0, 1, 1);"
            f" p.drawImage(c, Math.floor(({x} - r.left) * s), Math.floor(({y} - r.top) * s), 1, 1, 0, 0, 1, 1);"
            " const d = p.getImageData(0, 0, 1, 1).data; return [d[0], d[1], d[2]]; })()"))

    def hover(self, x, y):
        self.page.mouse("mouseMoved", x, y)
        return self.tip()

    def drag(self, x0, y0, x1, y1, modifiers=0):
        self.page.mouse("mouseMoved", x0, y0, modifiers=modifiers)
        self.page.mouse("mousePressed", x0, y0, button="left", clickCount=1, modifiers=modifiers)
        for i in range(1, 6):
            self.page.mouse("mouseMoved", x0 + (x1 - x0) * i / 5, y0 + (y1 - y0) * i / 5, button="left",
                            modifiers=modifiers)
        self.page.mouse("mouseReleased", x1, y1, button="left", clickCount=1, modifiers=modifiers)

    def explorer_clip(self):
        """The interactive frame's area, and the tooltip's when it shows."""
        r = self.page.evaluate(
            "(() => { const u = (a, b) => ({left: Math.min(a.left, b.left), top: Math.min(a.top, b.top),"
            " right: Math.max(a.right, b.right), bottom: Math.max(a.bottom, b.bottom)});"
            " let r = document.getElementById('explorer').getBoundingClientRect();"
            " const tip = document.getElementById('tip'); if (!tip.hidden) r = u(r, tip.getBoundingClientRect());"
            " return {x: r.left + scrollX, y: r.top + scrollY, width: r.right - r.left, height: r.bottom - r.top}; })()")
        return {"x": max(0, r["x"] - 8), "y": max(0, r["y"] - 8), "width": r["width"] + 16,
                "height": r["height"] + 16}

    def click_step_row(self, label):
        """Clicks the step table's row of step `label`, as a person would."""
        self.scroll_to("#step-table")
        x, y = self.page.evaluate(
            "(() => { const tr = Array.from(document.querySelectorAll('#step-table tr[data-e]')).find("
            f"(tr) => tr.cells[0].textContent === {json.dumps(str(label))}); tr.scrollIntoView({{block: 'nearest'}});"
            " const b = tr.getBoundingClientRect(); return [b.left + 10, b.top + b.height / 2]; })()")
        self.page.click(x, y)
        self.scroll_to("#explorer")

    def scroll_to(self, selector):
        self.page.evaluate(f"document.querySelector({json.dumps(selector)}).scrollIntoView({{block: 'start'}})")


def median_step(steps):
    """html_report.h's default: the lower middle of the complete steps by duration."""
    complete = [s for s in steps if s["complete"]] or steps
    order = sorted(complete, key=lambda s: s["duration_ns"])  # stable: the earlier of equal ones
    return order[(len(order) - 1) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipescope")
    parser.add_argument("work")
    parser.add_argument("--screenshots")
    args = parser.parse_args()
    if os.environ.get("PIPESCOPE_NO_BROWSER") == "1":
        print("SKIPPED: PIPESCOPE_NO_BROWSER=1")
        return SKIP
    try:
        import websocket  # noqa: F401
    except ImportError:
        print("FAIL: Debian's python3-websocket is not installed (scripts/dev.sh installs it); "
              "this test drives chromium through it")
        return 1
    import cdp

    work = os.path.abspath(args.work)
    shots = os.path.abspath(args.screenshots or work)
    os.makedirs(shots, exist_ok=True)
    logs, out, html = f"{work}/logs", f"{work}/out", f"{work}/report.html"
    run([args.pipescope, "simulate", "-o", logs, "--force", "--schedule", "vpp", "--stages", "4",
         "--micro-batches", "8", "--chunks", "2", "--slow-stage", "2:1.5", "--steps", "6", "--comm",
         "--machines", "2"])
    run([args.pipescope, "analyze", "-q", logs, "-o", out, "--html", html])
    with open(f"{out}/summary.json") as f:
        summary = json.load(f)
    jobs, bubbles = load_trace(f"{out}/trace.json")
    steps = summary["steps"]
    stage_of = {}
    for stage in summary["stages"]["list"]:
        for d in stage["devices"]:
            stage_of[d] = stage["stage"]
    position = {d["device"]: i for i, d in enumerate(summary["devices"])}

    try:
        browser = cdp.Browser(f"{work}/profile", width=1280, height=1000).__enter__()
    except cdp.CannotStart as e:
        print(f"SKIPPED: chromium cannot start here: {e}")
        return SKIP
    try:
        page = browser.page()
        page.navigate("file://" + html)
        r = Report(page)
        check(page.console == [], f"console messages: {page.console}")
        if not r.drawn():
            check(False, f"the timeline was not drawn within 10 s; console: {page.console}")
            return 1

        # The default step, whole.
        median = median_step(steps)
        v = r.view()
        check(v["step"] == str(median["step"]), f"default step {v['step']}, summary's median {median['step']}")
        check(v["t0"] == 0 and v["t1"] == median["duration_ns"],
              f"default range {v['t0']}..{v['t1']}, the window is 0..{median['duration_ns']}")
        painted = page.evaluate(
            "(() => { const c = document.getElementById('timeline-canvas');"
            " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;"
            " for (let i = 0; i < d.length; i += 4) if (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250) ++n;"
            " return n / (d.length / 4); })()")
        check(painted > 0.3, f"the canvas is mostly blank ({painted:.2f} painted)")
        r.scroll_to("#explorer")
        page.screenshot(f"{shots}/report-explorer.png", r.explorer_clip())

        # Wheel: zoom about the pointer.
        window = median["duration_ns"]
        at = window // 2
        x, y = r.x(at), r.y(0)
        page.mouse("mouseWheel", x, y, deltaX=0, deltaY=-600)
        v = r.view()
        span = v["t1"] - v["t0"]
        check(span < 0.5 * window, f"the wheel did not zoom in: {v}")
        check(abs((at - v["t0"]) / span - 0.5) < 0.01, f"the wheel's zoom moved the time under the pointer: {v}")
        check("zoomed" in r.text("#range"), f"range text {r.text('#range')!r}")

        # Drag: zoom to the dragged range.
        ta, tb = v["t0"] + 0.25 * span, v["t0"] + 0.5 * span
        px = span / (r.x(v["t1"]) - r.x(v["t0"]))  # ns per pixel
        r.drag(r.x(ta), r.y(1), r.x(tb), r.y(1))
        v = r.view()
        check(abs(v["t0"] - ta) <= 2 * px and abs(v["t1"] - tb) <= 2 * px,
              f"drag {ta:.0f}..{tb:.0f} gave {v['t0']:.0f}..{v['t1']:.0f}")
        page.mouse("mouseMoved", r.x((v["t0"] + v["t1"]) / 2), r.y(2))
        page.screenshot(f"{shots}/report-zoomed.png", r.explorer_clip())

        # Shift+drag: pan, same span.
        before = v
        px = (v["t1"] - v["t0"]) / (r.x(v["t1"]) - r.x(v["t0"]))
        x0 = r.x((v["t0"] + v["t1"]) / 2)
        r.drag(x0, r.y(1), x0 + 100, r.y(1), modifiers=8)
        v = r.view()
        check(abs((v["t1"] - v["t0"]) - (before["t1"] - before["t0"])) < 1, f"panning changed the span: {before} {v}")
        check(abs((before["t0"] - v["t0"]) - 100 * px) <= 2 * px, f"pan by 100 px: {before} -> {v}")

        # Double-click: the whole step again.
        page.send("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=r.y(1), button="left", clickCount=2)
        page.send("Input.dispatchMouseEvent", type="mouseReleased", x=x0, y=r.y(1), button="left", clickCount=2)
        v = r.view()
        check(v["t0"] == 0 and v["t1"] == window, f"double-click: {v}")

        # A click on a row of the step table picks that step.
        chosen = [s for s in steps if s["complete"] and s["step"] != median["step"]][-1]
        r.click_step_row(chosen["step"])
        v = r.view()
        check(v["step"] == str(chosen["step"]) and v["t0"] == 0 and v["t1"] == chosen["duration_ns"],
              f"clicking step {chosen['step']}'s row drew {v}")
        check(page.evaluate("document.querySelector('#step-table tr.selected').cells[0].textContent") ==
              str(chosen["step"]), "the picked step's row is not marked")
        check(page.evaluate("document.getElementById('step-pick').selectedOptions[0].textContent")
              .startswith(f"step {chosen['step']} "), "the picker does not show the picked step")

        # The picker (keyboard on the focused select) picks the next step.
        page.evaluate("document.getElementById('step-pick').focus()")
        page.send("Input.dispatchKeyEvent", type="keyDown", key="ArrowUp", code="ArrowUp", windowsVirtualKeyCode=38)
        page.send("Input.dispatchKeyEvent", type="keyUp", key="ArrowUp", code="ArrowUp", windowsVirtualKeyCode=38)
        v = r.view()
        previous = steps[steps.index(chosen) - 1]
        check(v["step"] == str(previous["step"]) and v["t1"] == previous["duration_ns"],
              f"the picker's ArrowUp from step {chosen['step']} drew {v}")
        # A click on the timeline, then ->: the next step, the chosen one again.
        page.evaluate("document.activeElement.blur()")
        page.click(r.x(previous["duration_ns"] // 2), r.y(0))
        page.send("Input.dispatchKeyEvent", type="keyDown", key="ArrowRight", code="ArrowRight",
                  windowsVirtualKeyCode=39)
        page.send("Input.dispatchKeyEvent", type="keyUp", key="ArrowRight", code="ArrowRight",
                  windowsVirtualKeyCode=39)
        check(r.view()["step"] == str(chosen["step"]), f"-> on the timeline from step {previous['step']}: "
              f"{r.view()}")
        r.click_step_row(chosen["step"])
        check(r.view()["step"] == str(chosen["step"]), "back to the chosen step")

        # The chosen step is what is drawn: its bubbles (trace.json) are shaded
        # where no job covers them, its jobs are painted.
        step_start = chosen["start_ns"]
        step_end = chosen["end_ns"]

        def inside(start, length):  # its middle lies in the window
            return step_start <= start + length // 2 < step_end

        step_jobs = [j for j in jobs if j["step"] == chosen["step"] and inside(j["start"], j["dur"])]
        idle = (0xF6, 0xC9, 0xC4)
        shaded = checked = 0
        for b in (b for b in bubbles if b["step"] == chosen["step"]):
            mid = b["start"] + b["length"] // 2
            if r.x(b["start"] + b["length"] - step_start) - r.x(b["start"] - step_start) < 4:
                continue
            if any(j["device"] == b["device"] and j["start"] <= mid <= j["start"] + j["dur"]
                   for j in jobs):
                continue
            checked += 1
            shaded += r.pixel(r.x(mid - step_start), r.y(position[b["device"]])) == idle
        check(checked >= 3 and shaded == checked, f"bubbles shaded: {shaded} of {checked}")
        painted_jobs = 0
        wide = [j for j in step_jobs if r.x(j["start"] + j["dur"] - step_start) - r.x(j["start"] - step_start) >= 4]
        for j in wide:
            colour = r.pixel(r.x(j["start"] + j["dur"] // 2 - step_start), r.y(position[j["device"]]) + 6)
            painted_jobs += colour not in (idle, (255, 255, 255), (0xFF, 0xF3, 0xC4))
        check(wide and painted_jobs == len(wide), f"jobs painted: {painted_jobs} of {len(wide)}")

        # Hover a job: its figures.
        job = max((j for j in step_jobs if j["device"] == 2 and j["type"].startswith("forward")),
                  key=lambda j: j["dur"])
        tip = r.hover(r.x(job["start"] + job["dur"] // 2 - step_start), r.y(position[2]))
        data = tip["data"]
        check(not tip["hidden"] and data.get("kind") == "job", f"hovering a job: {tip}")
        check(data.get("type") == job["type"] and data.get("mb") == str(job["mb"]) and
              data.get("dur") == str(job["dur"]) and data.get("start") == str(job["start"] - step_start) and
              data.get("stage") == str(stage_of[2]), f"job tip {data} for {job}")
        for text in (job["type"], f"micro-batch {job['mb']}", format_duration(job["dur"]),
                     f"stage {stage_of[2]}", f"+{format_duration(job['start'] - step_start)}"):
            check(text in tip["text"], f"{text!r} not in the job tip {tip['text']!r}")
        page.screenshot(f"{shots}/report-hover.png", r.explorer_clip())

        # Hover a recv that waited: wait + transfer, the peer that ended the wait.
        recvs = [j for j in step_jobs if j["type"].startswith("recv") and j["dur"] > 0]
        recv = max(recvs, key=lambda j: j["dur"])
        tip = r.hover(r.x(recv["start"] + recv["dur"] // 2 - step_start), r.y(position[recv["device"]]))
        data = tip["data"]
        check(data.get("kind") == "job" and data.get("type") == recv["type"], f"hovering a recv: {tip}")
        wait, transfer = int(data.get("wait", -1)), int(data.get("transfer", -1))
        check(wait + transfer == recv["dur"], f"wait {wait} + transfer {transfer} != {recv['dur']}")
        check(f"wait {format_duration(wait)}, transfer {format_duration(transfer)}" in tip["text"],
              f"recv tip {tip['text']!r}")
        peer = [j for j in jobs if "peer_device" in data and j["device"] == int(data["peer_device"]) and
                j["start"] - step_start == int(data["peer_start"])]
        check(len(peer) == 1 and peer[0]["type"].startswith("send"), f"the recv's peer {data} in trace.json: {peer}")
        if peer:
            expected = min(max(peer[0]["start"] - recv["start"], 0), recv["dur"])
            check(wait == expected, f"the recv waits until its peer starts: {wait} != {expected}")
            check(f"peer: {peer[0]['type']} mb{peer[0]['mb']} on GPU {peer[0]['device']}" in tip["text"],
                  f"the peer is not named: {tip['text']!r}")

        # Hover a bubble: kind, length, inherent/excess, what it waits for.
        free = [b for b in bubbles if b["step"] == chosen["step"] and inside(b["start"], b["length"]) and
                not any(j["device"] == b["device"] and j["start"] <= b["start"] + b["length"] // 2 <= j["start"] + j["dur"]
                        for j in jobs)]
        bubble = max(free, key=lambda b: (b["kind"] == "interior", b["length"]))
        tip = r.hover(r.x(bubble["start"] + bubble["length"] // 2 - step_start), r.y(position[bubble["device"]]))
        data = tip["data"]
        check(data.get("kind") == "bubble" and data.get("bubble") == bubble["kind"] and
              data.get("dur") == str(bubble["length"]), f"bubble tip {data} for {bubble}")
        inherent = int(data.get("inherent", -1))
        check(0 <= inherent <= bubble["length"], f"a complete step of VPP has the split: {data}")
        for text in (f"{bubble['kind']} bubble", format_duration(bubble["length"]),
                     f"inherent {format_duration(inherent)}, excess {format_duration(bubble['length'] - inherent)}",
                     "waits for " if bubble["kind"] != "drain" else "after "):
            check(text in tip["text"], f"{text!r} not in the bubble tip {tip['text']!r}")

        # The critical path of the longest step (summary.json), highlighted.
        path = summary["critical_path"].get("longest_step", {})
        longest = next(s for s in steps if s["step"] == path.get("step"))
        on_path = path.get("jobs", [])
        check(on_path, f"summary.json has no critical path jobs: {list(summary['critical_path'])}")
        r.click_step_row(longest["step"])
        box = page.evaluate("(() => { const b = document.getElementById('show-critical').getBoundingClientRect();"
                            " return [b.left + b.width / 2, b.top + b.height / 2]; })()")
        page.click(*box)
        check(page.evaluate("document.getElementById('show-critical').checked"), "the critical path box is not ticked")
        start = longest["start_ns"]
        first = max((j for j in on_path if start <= (j["start_ns"] + j["end_ns"]) // 2 < longest["end_ns"]),
                    key=lambda j: j["end_ns"] - j["start_ns"])
        tip = r.hover(r.x((first["start_ns"] + first["end_ns"]) // 2 - start), r.y(position[first["device"]]))
        check("on the critical path" in tip["text"], f"a job of the path: {tip['text']!r}")
        keys = {(j["device"], j["start_ns"]) for j in on_path}
        off = next(j for j in jobs if j["step"] == longest["step"] and (j["device"], j["start"]) not in keys and
                   r.x(j["start"] + j["dur"] - start) - r.x(j["start"] - start) > 6 and
                   start <= j["start"] + j["dur"] // 2 < longest["end_ns"])
        tip = r.hover(r.x(off["start"] + off["dur"] // 2 - start), r.y(position[off["device"]]))
        check(tip["data"].get("start") == str(off["start"] - start) and "on the critical path" not in tip["text"],
              f"a job off the path: {tip}")
        page.mouse("mouseMoved", 5, 5)
        page.screenshot(f"{shots}/report-critical.png", r.explorer_clip())

        # The bottleneck stage's rows, shaded, and not when unticked.
        slow = summary["bottleneck"]["slowest_stage"]
        device = next(d for d, s in stage_of.items() if s == slow)
        label_x = page.evaluate("document.getElementById('timeline-canvas').getBoundingClientRect().left") + 4
        check(r.pixel(label_x, r.y(position[device]) - 8) == (0xFF, 0xF3, 0xC4),
              f"the bottleneck row is not shaded: {r.pixel(label_x, r.y(position[device]) - 8)}")
        box = page.evaluate("(() => { const b = document.getElementById('show-bottleneck').getBoundingClientRect();"
                            " return [b.left + b.width / 2, b.top + b.height / 2]; })()")
        page.click(*box)
        check(not page.evaluate("document.getElementById('show-bottleneck').checked"), f"not unticked {box}")
        check(r.pixel(label_x, r.y(position[device]) - 8) == (255, 255, 255),
              f"unticked, the row is still shaded: {r.pixel(label_x, r.y(position[device]) - 8)}")
        check(page.console == [], f"console messages: {page.console}")
        page.close()

        # NCCL kernels of a labelled PyTorch trace (the kernel view beside the
        # jobs): each under its device's jobs, its wait ending when its peer
        # (the kernel of the other rank with its Comms Id) starts.
        run([args.pipescope, "simulate", "--format", "torch", "-o", f"{work}/torch", "--force", "--stages", "2",
             "--micro-batches", "4", "--steps", "2", "--comm"])
        kernels = make_nccl_traces(f"{work}/torch", f"{work}/nccl/logs")
        run([args.pipescope, "analyze", "-q", f"{work}/nccl/logs", "-o", f"{work}/nccl/out", "--html",
             f"{work}/nccl/report.html"])
        with open(f"{work}/nccl/out/summary.json") as f:
            nccl_summary = json.load(f)
        check(nccl_summary.get("kernel_view", {}).get("comm_kernels") == len(kernels),
              f"the kernel view has {nccl_summary.get('kernel_view', {}).get('comm_kernels')} NCCL kernels, "
              f"{len(kernels)} written")
        page = browser.page()
        page.navigate(f"file://{work}/nccl/report.html")
        r = Report(page)
        check(r.drawn(), f"the NCCL run's timeline was not drawn; console: {page.console}")
        nccl_position = {d["device"]: i for i, d in enumerate(nccl_summary["devices"])}
        waited = []
        for k in kernels:
            peer = next((p for p in kernels if p["id"] == k["id"] and p["rank"] != k["rank"]), None)
            step = next((s for s in nccl_summary["steps"] if s["start_ns"] <= k["start"] < s["end_ns"]), None)
            if peer and step and peer["start"] > k["start"]:
                waited.append((k["end"] - k["start"], k, peer, step))
        check(waited, "no NCCL kernel waits for its peer in the fixture")
        _, kernel, peer, step = max(waited, key=lambda w: w[0])
        r.click_step_row(step["step"])
        start = step["start_ns"]
        mid = (kernel["start"] + kernel["end"]) // 2 - start
        tip = r.hover(r.x(mid), r.y(nccl_position[kernel["rank"]], nccl=True))
        data = tip["data"]
        wait = min(peer["start"], kernel["end"]) - kernel["start"]
        check(data.get("kind") == "nccl" and data.get("start") == str(kernel["start"] - start) and
              data.get("wait") == str(wait) and data.get("transfer") == str(kernel["end"] - kernel["start"] - wait) and
              data.get("waited_on") == str(peer["rank"]), f"NCCL tip {data}, want wait {wait} on rank {peer['rank']}")
        check(f"wait {format_duration(wait)} (for rank {peer['rank']})" in tip["text"] and kernel["op"] in tip["text"],
              f"NCCL tip {tip['text']!r}")
        page.screenshot(f"{shots}/report-nccl.png", r.explorer_clip())
        check(page.console == [], f"console messages: {page.console}")
        page.close()

        # Without scripts: the figures and the static timelines.
        page = browser.page()
        page.send("Emulation.setScriptExecutionDisabled", value=True)
        page.navigate("file://" + html)
        check(page.evaluate("document.getElementById('fig-jobs').textContent") == str(summary["jobs"]),
              "no-script: the job count")
        timelines = page.evaluate("document.querySelectorAll('svg.timeline').length")
        check(timelines == 2, f"no-script: {timelines} static timelines, want the median and the slowest step")
        check(page.evaluate("document.querySelectorAll('svg.timeline rect.job').length") > 100,
              "no-script: the static timelines have no boxes")
        check(page.evaluate("document.getElementById('explorer').getBoundingClientRect().height") == 0,
              "no-script: the interactive frame shows")
        clip = page.evaluate(
            "(() => { const r = document.querySelector('svg.timeline').closest('section').getBoundingClientRect();"
            " return {x: r.left + scrollX - 8, y: r.top + scrollY - 8, width: r.width + 16, height: r.height + 16};"
            " })()")
        page.screenshot(f"{shots}/report-noscript.png", clip)
        page.close()
    finally:
        browser.__exit__(None, None, None)

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print(f"all checks passed; screenshots in {shots}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
