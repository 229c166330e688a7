#!/usr/bin/env python3
"""Log event times across daylight-saving changes and written UTC offsets.

    check_event_times.py --cli build/cli/pipescope [--keep DIR] [-k NAME]

Writes small PaddlePaddle worker logs itself (nothing of `pipescope simulate`), with
the lines real sources print, each at a true UTC time this script knows:

- GLOG lines (`I0310 01:59:03.200125 4242 standalone_executor.cc:217] Profiler Info:
  Job (0), ...` job lines, a `comm_task_manager.cc` timeout warning), in the zone's
  local time, as glog's localtime_r prints them;
- Python `logging` lines (`[%(asctime)s] [    INFO] - Saving model checkpoint to ...`,
  PaddleNLP's format), local time to the millisecond;
- ISO 8601 lines that carry their own offset, as `datetime.isoformat()` prints them
  (`2024-03-10T12:31:00.125+05:30`), as a `%z` date format prints them (`+0530`), and
  UTC with `Z` (`2024-03-10T07:01:00.125Z`);
- an NCCL WARN line, which prints no time (it takes the time of the dated line
  before it and is marked approximate).

The local time comes from Python's `zoneinfo` (the system's tz database), so a run that
crosses America/New_York's spring forward (2024-03-10 02:00 EST -> 03:00 EDT) or fall
back (2024-11-03 02:00 EDT -> 01:00 EST, the hour 01:00-02:00 printed twice) prints
what a cluster there prints. Jobs are stamped in epoch milliseconds (UTC) whatever the
zone. A stall in some steps after the change makes them slow, with an event inside.

Checked, for every case: `pipescope analyze` lists every event line (by path and
line) with its true UTC time to the nanosecond (an approximate one: the true time of
the dated line before it), none unplaced; each slow step's outlier names at least
one event; `pipescope watch` over the same folder reports each step's events at the
offsets analyze gives.

The rule pipescope follows (docs/guide.md, "Log events"): a written offset is obeyed;
a local time takes the offset of the nearest stamped job line before it in its file.
An event printed after a change but before the next job line would be an hour off by
that rule, so the cases print none there, and this script checks that it printed
none (the guide says so).

Exit 77 (skipped) where the tz database lacks America/New_York. Standard library only.
"""
import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
except ImportError:  # Python < 3.9
    ZoneInfo = None

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
MS = 1_000_000
SEC = 1_000_000_000
STEP_PERIOD = 60 * SEC


class Failure(Exception):
    pass


class Skipped(Exception):
    pass


def utc_ns(y, mo, d, h, mi, s):
    return ((dt.datetime(y, mo, d, h, mi, s, tzinfo=UTC) - EPOCH) // dt.timedelta(seconds=1)) * SEC


def local(ns, zone):
    """The wall clock of `zone` at epoch ns (microseconds kept, the rest dropped)."""
    return (EPOCH + dt.timedelta(microseconds=ns // 1000)).astimezone(zone)


def glog(ns, zone, severity, tid, source, message):
    t = local(ns, zone)
    return f"{severity}{t:%m%d %H:%M:%S}.{t.microsecond:06d} {tid} {source}] {message}"


def pylog(ns, zone, message):
    t = local(ns, zone)
    return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [    INFO] - {message}"


def iso_isoformat(ns, zone, message):
    """`datetime.isoformat()`: `2024-03-10T12:31:00.125000+05:30`."""
    return f"{local(ns, zone).isoformat()} INFO {message}"


def iso_percent_z(ns, zone, message):
    """logging with datefmt `%Y-%m-%dT%H:%M:%S%z` (no fraction): `...T12:31:00+0530`."""
    return f"{local(ns, zone):%Y-%m-%dT%H:%M:%S%z} | INFO | {message}"


def iso_z(ns, message):
    """UTC with `Z`, milliseconds (Go's, JavaScript's toISOString)."""
    t = local(ns, UTC)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z INFO {message}"


def job_line(ns, zone, tid, index, job_type, mb, start, end):
    head = glog(ns, zone, "I", tid, "standalone_executor.cc:217", "")
    return (f"{head}Profiler Info: Job ({index}), type = {job_type}, micro_batch_id = {mb}, "
            f"job_start_time = {start // MS}.{start % MS:06d}, "
            f"job_end_time = {end // MS}.{end % MS:06d}")


def step_jobs(t0, stall_ns):
    """Two stages, two micro-batches, F-then-B: [(stage, type, mb, start, end)]."""
    f, b, o, lat = 20 * MS, 40 * MS, 10 * MS, 1 * MS
    jobs = []
    s0_f = [(t0, t0 + f), (t0 + f, t0 + 2 * f)]
    s1_f0 = (s0_f[0][1] + lat, s0_f[0][1] + lat + f)
    s1_f1 = (max(s1_f0[1], s0_f[1][1] + lat), max(s1_f0[1], s0_f[1][1] + lat) + f)
    s1_b0 = (s1_f1[1], s1_f1[1] + b)
    s1_b1 = (s1_b0[1], s1_b0[1] + b)
    s0_b0 = (s1_b0[1] + lat + stall_ns, s1_b0[1] + lat + stall_ns + b)
    s0_b1 = (max(s0_b0[1], s1_b1[1] + lat), max(s0_b0[1], s1_b1[1] + lat) + b)
    jobs += [(0, "forward", 0, *s0_f[0]), (0, "forward", 1, *s0_f[1]),
             (0, "backward", 0, *s0_b0), (0, "backward", 1, *s0_b1),
             (0, "optimizer", 0, s0_b1[1], s0_b1[1] + o)]
    jobs += [(1, "forward", 0, *s1_f0), (1, "forward", 1, *s1_f1),
             (1, "backward", 0, *s1_b0), (1, "backward", 1, *s1_b1),
             (1, "optimizer", 0, s1_b1[1], s1_b1[1] + o)]
    return jobs


class Log:
    """One rank's lines, each at its true time; events with their truth."""

    def __init__(self, name):
        self.name = name
        self.lines = []  # (ns, seq, text, event id or None, kind)

    def add(self, ns, text, event=None, kind="other", unit=1000):
        """unit: what the line's stamp prints (GLOG and isoformat: 1 us; Python
        logging: 1 ms; `%z`: 1 s); None: no stamp."""
        printed = None if unit is None else ns - ns % unit
        self.lines.append((ns, len(self.lines), text, event, kind, printed))


def write_case(case, run):
    """Writes the case's logs; returns {(file name, line, id): (true ns, approximate)}."""
    zone = ZoneInfo(case["zone"])
    logs = [Log("workerlog.0"), Log("workerlog.1")]
    t_first = case["start"]
    for rank, log in enumerate(logs):
        tid = 4242 + rank
        t = t_first - 30 * SEC
        log.add(t, pylog(t, zone, "Pipeline parallel degree = 2, stage P%d" % rank), unit=MS)
        t += 500 * MS
        log.add(t, glog(t, zone, "I", tid, "process_group_nccl.cc:129",
                        "ProcessGroupNCCL pg_timeout_ 1800000"), "paddle_process_group_nccl_created")
        t += 1 * SEC
        log.add(t, pylog(t, zone, "Schedule Profiler start at step 0"), unit=MS)
    for k in range(case["steps"]):
        t0 = t_first + k * STEP_PERIOD
        stall = case["stalls"].get(k, 0)
        jobs = step_jobs(t0, stall)
        for rank, log in enumerate(logs):
            tid = 4242 + rank
            mine = [j for j in jobs if j[0] == rank]
            if rank == 0 and k in case["checkpoints"]:
                t = t0 - 5 * SEC
                log.add(t, pylog(t, zone, f"Saving model checkpoint to checkpoint/checkpoint-{k}"),
                        "paddlenlp_saving_checkpoint", unit=MS)
            if rank == 0 and stall:
                t = t0 + 60 * MS
                log.add(t, glog(t, zone, "W", tid, "comm_task_manager.cc:158",
                                "Find timeout start but not finish task:group_key:group_0,"
                                "group_ranks:[0, 1],global_rank:0,local_rank:0,comm_count:%d,"
                                "op:AllReduce,started:1,completed:0,numel:4194304,nranks:2" % k),
                        "paddle_comm_task_timeout")
                log.add(t + 1000, "pp-node0:%d:%d [0] misc/ibvwrap.cc:153 NCCL WARN Call to "
                        "ibv_reg_mr failed with error Cannot allocate memory" % (tid, tid + 9),
                        "nccl_warn", unit=None)
            for when, form in case["offset_lines"].get((rank, k), []):
                t = t0 + when
                msg = f"Saving model checkpoint to ckpt/{form}-{k}"
                written = ZoneInfo(case["written_zone"]) if "written_zone" in case else UTC
                if form == "isoformat":
                    text, unit = iso_isoformat(t, written, msg), 1000
                elif form == "percent_z":
                    text, unit = iso_percent_z(t, written, msg), SEC
                else:
                    text, unit = iso_z(t, msg), MS
                log.add(t, text, "paddlenlp_saving_checkpoint", kind="written", unit=unit)
            # The step's job lines once its jobs ran (Paddle prints them together).
            t = max(j[4] for j in mine) + 300_000
            for index, (_, job_type, mb, start, end) in enumerate(mine):
                t += 7_000
                log.add(t, job_line(t, zone, tid, index, job_type, mb, start, end), kind="job")
    truth = {}
    for log in logs:
        log.lines.sort()
        last_dated = None  # the printed time of the last dated line
        last_job_offset = None
        text = []
        for number, (ns, _, line, event, kind, printed) in enumerate(log.lines, start=1):
            text.append(line + "\n")
            if kind == "job":
                last_job_offset = local(ns, zone).utcoffset()
            if event is not None:
                if printed is None:
                    truth[(log.name, number, event)] = (last_dated, True)
                else:
                    truth[(log.name, number, event)] = (printed, False)
                if kind != "written" and last_job_offset is not None and \
                        local(ns, zone).utcoffset() != last_job_offset:
                    raise Failure(f"generator: {log.name}:{number} lies between an offset "
                                  "change and the next job line")
            if printed is not None:
                last_dated = printed
        (run / log.name).write_text("".join(text))
    return truth


CASES = {
    # 2024-03-10 07:00 UTC: 02:00 EST becomes 03:00 EDT. Steps every minute from
    # 01:40:03 EST to 03:19:03 EDT; the change falls in the gap before step 20,
    # stalls (with an event inside) in steps 22 and 31.
    "spring-forward": dict(zone="America/New_York", start=utc_ns(2024, 3, 10, 6, 40, 3), steps=40,
                           stalls={22: 300 * MS, 31: 250 * MS}, checkpoints={10, 20, 30},
                           offset_lines={}),
    # 2024-11-03 06:00 UTC: 02:00 EDT becomes 01:00 EST; local 01:00-02:00 twice.
    "fall-back": dict(zone="America/New_York", start=utc_ns(2024, 11, 3, 5, 40, 3), steps=40,
                      stalls={22: 300 * MS, 31: 250 * MS}, checkpoints={10, 20, 30},
                      offset_lines={}),
    # A +05:30 log (Asia/Kolkata) whose other logger writes UTC with `Z`, its own
    # zone with `+05:30` and `+0530`, and another zone's `-07:00`.
    "written-offsets": dict(zone="Asia/Kolkata", start=utc_ns(2024, 3, 10, 9, 50, 3), steps=16,
                            stalls={6: 300 * MS, 12: 250 * MS}, checkpoints={4},
                            written_zone="Asia/Kolkata",
                            offset_lines={(0, 6): [(125 * MS, "z")],
                                          (1, 6): [(90 * MS, "isoformat")],
                                          (0, 9): [(-2 * SEC, "percent_z")],
                                          (1, 12): [(70 * MS, "z")]}),
    "written-offsets-elsewhere": dict(zone="Asia/Kolkata", start=utc_ns(2024, 3, 10, 9, 50, 3),
                                      steps=16, stalls={6: 300 * MS, 12: 250 * MS},
                                      checkpoints={4}, written_zone="America/Los_Angeles",
                                      offset_lines={(0, 6): [(125 * MS, "isoformat")],
                                                    (1, 9): [(-3 * SEC, "percent_z")],
                                                    (1, 12): [(70 * MS, "isoformat")]}),
}


def listed_events(summary):
    """{(file name, line, id): (time_ns, approximate)} of summary.json's events (a line
    two library entries match is two events)."""
    out = {}
    events = summary["events"]
    for s in events.get("steps", []):
        if s.get("more"):
            raise Failure(f"step {s['step']}: {s['more']} events not listed")
        for e in s.get("before", []) + s.get("events", []):
            out[(Path(e["path"]).name, e["line"], e["id"])] = (e["time_ns"],
                                                               bool(e.get("approximate", False)))
    for e in events.get("after_last", []):
        out[(Path(e["path"]).name, e["line"], e["id"])] = (e["time_ns"],
                                                           bool(e.get("approximate", False)))
    return out


def check_case(cli, name, case, work):
    run, out = work / name, work / (name + "-out")
    run.mkdir(parents=True)
    truth = write_case(case, run)
    subprocess.run([cli, "analyze", str(run), "-o", str(out), "--no-trace", "-q"], check=True,
                   capture_output=True)
    summary = json.loads((out / "summary.json").read_text())
    events = summary["events"]
    if "off" in events:
        raise Skipped(f"log events are off: {events['off']}")
    if events.get("unplaced", 0) != 0:
        raise Failure(f"{events['unplaced']} events unplaced")
    got = listed_events(summary)
    for key in sorted(set(got) | set(truth)):
        if got.get(key) != truth.get(key):
            want = truth.get(key)
            off = (f" ({(got[key][0] - want[0]) / 3.6e12:+.3f} h)"
                   if key in got and want and want[0] is not None else "")
            raise Failure(f"{key[0]}:{key[1]}: analyze {got.get(key)}, truth {want}{off}")
    stalled = sorted(case["stalls"])
    outliers = {o["step"]: o for o in events.get("outliers", [])}
    for k in stalled:
        o = outliers.get(k)
        if o is None or not o["slow"] or o["events"] < 1:
            raise Failure(f"step {k} (stalled): outlier {o}")
    # watch: the same events at the same offsets from their steps' windows.
    want = sorted((s["step"], e["device"], e["id"], e["offset_ns"])
                  for s in events.get("steps", []) for e in s.get("before", []) + s.get("events", []))
    jsonl = work / (name + ".jsonl")
    subprocess.run([cli, "watch", str(run), "--interval", "0.05", "--until-idle", "0.2",
                    "--no-trace", "-o", str(work / (name + "-watch")), "--jsonl", str(jsonl)],
                   check=True, capture_output=True)
    live = sorted((json.loads(line)["step"], e["device"], e["id"], e["offset_ns"])
                  for line in jsonl.read_text().splitlines()
                  for e in json.loads(line).get("events", []))
    if not want:
        raise Failure("analyze lists no event in a step")
    if live != want:
        raise Failure(f"watch {[x for x in live if x not in want][:3]}, "
                      f"analyze {[x for x in want if x not in live][:3]}")
    return f"{len(truth)} events exact, outliers {stalled} explained, watch agrees"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", required=True)
    p.add_argument("--keep", help="write the cases here and keep them")
    p.add_argument("-k", dest="only", help="run the cases whose name holds this")
    a = p.parse_args()
    if ZoneInfo is None:
        print("skipped: no zoneinfo module")
        return 77
    try:
        ZoneInfo("America/New_York")
        ZoneInfo("Asia/Kolkata")
        ZoneInfo("America/Los_Angeles")
    except ZoneInfoNotFoundError:
        print("skipped: the tz database is not installed")
        return 77
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="event-times-"))
    failed = ran = 0
    try:
        for name, case in CASES.items():
            if a.only and a.only not in name:
                continue
            ran += 1
            try:
                print(f"ok    {name}: {check_case(a.cli, name, case, work)}")
            except Skipped as e:
                print(f"skipped: {e}")
                return 77
            except (Failure, subprocess.CalledProcessError) as e:
                failed += 1
                detail = getattr(e, "stderr", None)
                print(f"FAIL  {name}: {e}" + (f"\n{detail.decode()[-2000:]}" if detail else ""))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{ran - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
