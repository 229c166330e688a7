#!/usr/bin/env python3
"""Compares a summary.json against expected figures.

    compare_summary.py ACTUAL.json EXPECTED.json

Every field present in EXPECTED must be present and equal in ACTUAL (fields
only in ACTUAL are ignored): integers exactly, floats within 1e-12 (relative
or absolute), strings exactly, arrays element by element (same length).
Fields named "path" (and the items of "files" lists) are compared on their
last two components only (parent folder and file name), or fewer when
EXPECTED gives fewer, so expected files need not know where the samples were
checked out.

Prints one `field.path: expected X, got Y` line per difference and exits 1,
or prints `N fields compared, all equal` and exits 0. Exit 2: unreadable input.
"""

import json
import math
import sys

TOLERANCE = 1e-12


def path_tail(text, parts):
    pieces = [p for p in str(text).replace("\\", "/").split("/") if p]
    return pieces[-parts:] if parts else []


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return is_int(value) or isinstance(value, float)


class Comparison:
    def __init__(self):
        self.compared = 0
        self.differences = []

    def differ(self, where, expected, actual):
        self.differences.append(
            f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}")

    def compare(self, where, expected, actual, key=None):
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                self.compared += 1
                self.differ(where, expected, actual)
                return
            for name, value in expected.items():
                child = f"{where}.{name}" if where else name
                if name not in actual:
                    self.compared += 1
                    self.differences.append(f"{child}: expected {json.dumps(value)}, missing")
                else:
                    self.compare(child, value, actual[name], key=name)
            return
        if isinstance(expected, list):
            if not isinstance(actual, list):
                self.compared += 1
                self.differ(where, expected, actual)
                return
            if len(expected) != len(actual):
                self.compared += 1
                self.differences.append(
                    f"{where}: expected {len(expected)} elements, got {len(actual)}")
            for i, value in enumerate(expected[:len(actual)]):
                self.compare(f"{where}[{i}]", value, actual[i], key=key)
            return

        self.compared += 1
        if key in ("path", "files") and isinstance(expected, str) and isinstance(actual, str):
            wanted = path_tail(expected, 2)
            if wanted != path_tail(actual, len(wanted)):
                self.differ(where, expected, actual)
        elif is_int(expected):
            # Integers (ns, counts) must be printed as integers and be exact.
            if not is_int(actual) or actual != expected:
                self.differ(where, expected, actual)
        elif isinstance(expected, float):
            if not is_number(actual) or not close(expected, float(actual)):
                self.differ(where, expected, actual)
        elif type(expected) is not type(actual) or expected != actual:
            self.differ(where, expected, actual)


def close(expected, actual):
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    diff = abs(expected - actual)
    return diff <= TOLERANCE or diff <= TOLERANCE * max(abs(expected), abs(actual))


def load(path):
    try:
        with open(path, "rb") as f:
            # Strict UTF-8: a summary with invalid UTF-8 is not valid JSON.
            return json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"{path}: cannot read JSON: {e}", file=sys.stderr)
        sys.exit(2)


def main():
    if len(sys.argv) != 3:
        print("usage: compare_summary.py ACTUAL.json EXPECTED.json", file=sys.stderr)
        return 2
    actual, expected = load(sys.argv[1]), load(sys.argv[2])
    comparison = Comparison()
    comparison.compare("", expected, actual)
    for line in comparison.differences:
        print(line)
    if comparison.differences:
        print(f"{len(comparison.differences)} of {comparison.compared} fields differ")
        return 1
    print(f"{comparison.compared} fields compared, all equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
