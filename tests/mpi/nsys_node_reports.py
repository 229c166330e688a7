#!/usr/bin/env python3
"""Merges per-rank Nsight Systems exports (`pipescope simulate --format nsys`)
into one export per host, as `nsys profile` of a node's process tree
(torchrun) and `nsys export` leave it: every GPU process of the node in one
file, without the ranks' environment (a process tree's report holds the
launcher's, not each rank's), so that the ranks come from NCCL's payloads or
the CUDA devices.

    nsys_node_reports.py IN_DIR OUT_DIR NAME_OF_HOST...

NAME_OF_HOST is HOST=FILE (node0=b.sqlite): the report of each host and its
file name, so that a test can name the files against their hosts' order.
"""
import glob
import os
import sqlite3
import sys

# Columns holding a StringIds id, by table.
STRING_COLUMNS = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ("demangledName", "shortName"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("nameId",),
    "NVTX_EVENTS": ("textId",),
}
# Tables every rank's export holds alike: the first one's rows.
ONCE = {"META_DATA_EXPORT", "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_SYSTEM_ENV",
        "NVTX_PAYLOAD_SCHEMAS", "NVTX_PAYLOAD_SCHEMA_ENTRIES"}
DROPPED = {"META_DATA_CAPTURE"}


def host_of(path):
    db = sqlite3.connect(path)
    (host,) = db.execute(
        "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'").fetchone()
    db.close()
    return host


def merge(paths, out_path):
    if os.path.exists(out_path):
        os.remove(out_path)
    out = sqlite3.connect(out_path)
    first = sqlite3.connect(paths[0])
    tables = [row for row in first.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    first.close()
    for _, sql in tables:
        out.execute(sql)
    ids = {}  # string -> id in the merged StringIds
    for k, path in enumerate(paths):
        src = sqlite3.connect(path)
        remap = {}
        for sid, value in src.execute("SELECT id, value FROM StringIds"):
            if value not in ids:
                ids[value] = len(ids) + 1
                out.execute("INSERT INTO StringIds VALUES (?, ?)", (ids[value], value))
            remap[sid] = ids[value]
        for name, _ in tables:
            if name == "StringIds" or name in DROPPED or (name in ONCE and k > 0):
                continue
            cursor = src.execute(f'SELECT * FROM "{name}"')
            columns = [d[0] for d in cursor.description]
            mapped = [columns.index(c) for c in STRING_COLUMNS.get(name, ()) if c in columns]
            marks = ", ".join("?" * len(columns))
            for row in cursor:
                row = list(row)
                for i in mapped:
                    if row[i] is not None:
                        row[i] = remap[row[i]]
                out.execute(f'INSERT INTO "{name}" VALUES ({marks})', row)
        src.close()
    out.commit()
    out.close()


def main():
    in_dir, out_dir = sys.argv[1], sys.argv[2]
    names = dict(arg.split("=", 1) for arg in sys.argv[3:])
    by_host = {}
    for path in sorted(glob.glob(os.path.join(in_dir, "*.sqlite"))):
        by_host.setdefault(host_of(path), []).append(path)
    os.makedirs(out_dir, exist_ok=True)
    for host, paths in by_host.items():
        merge(paths, os.path.join(out_dir, names.get(host, host + ".sqlite")))


if __name__ == "__main__":
    main()
