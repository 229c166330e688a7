#!/usr/bin/env python3
"""Validate pipescope's log-event pattern library (data/log_events.patterns).

Usage: check_patterns.py [FILE]

FILE defaults to ../../data/log_events.patterns relative to this script.
The file format is documented in the comment header of that file. This
checker parses it strictly and checks, for every entry:

  * the keys: no unknown key, no missing key, no duplicated single key,
    a unique lower_snake_case id, a known category and severity;
  * the regex: none of the constructs that Python re, RE2 and Hyperscan do not
    all accept (lookaround, backreferences, atomic groups, possessive or lazy
    quantifiers, \\Z, anchors, inline flags other than a leading (?i)),
    lower_snake_case capture names, no broad leading atom, a literal run of at
    least 5 characters, and that it compiles with Python re;
  * every example matches (re.search), no counter_example matches, and
    captures_expected holds on the first example;
  * overlaps: an example of one entry matched by an entry of a different
    category is reported as a warning; two such entries that match each
    other's examples in both directions are an error.

It prints one line per failure, warnings after them, and finally a line
"N passed, M failed" (N = entries without failure); it exits 1 on any
failure. Standard library only.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

CATEGORIES = (
    "checkpoint",
    "evaluation",
    "dataloader",
    "amp",
    "numerics",
    "memory",
    "compile",
    "restart",
    "collective",
    "distributed",
    "nccl",
    "cuda",
)
SEVERITIES = ("info", "warning", "error")
SINGLE_KEYS = ("category", "severity", "description", "regex", "source", "captures_expected")
MULTI_KEYS = ("example", "counter_example")
REQUIRED_KEYS = ("category", "severity", "description", "regex", "source", "example")
KNOWN_KEYS = SINGLE_KEYS + MULTI_KEYS
MIN_ENTRIES = 40
MIN_LITERAL_RUN = 5

ID_RE = re.compile(r"[a-z][a-z0-9_]*")
NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
HEADER_RE = re.compile(r"\[(.*)\]")
KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SOURCE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]* \S")
# captures_expected: "a=1, b=x, y" -> split only where ", name=" follows.
CAPTURE_SPLIT_RE = re.compile(r", (?=[a-z][a-z0-9_]*=)")

# Constructs that are not valid in all three engines (simple substring scan).
FORBIDDEN_SUBSTRINGS = (
    ("(?=", "lookahead"),
    ("(?!", "negative lookahead"),
    ("(?<=", "lookbehind"),
    ("(?<!", "negative lookbehind"),
    ("(?>", "atomic group"),
    ("(?P=", "named backreference"),
    ("(?#", "comment group"),
    ("*+", "possessive quantifier"),
    ("++", "possessive quantifier"),
    ("?+", "possessive quantifier"),
    ("}+", "possessive quantifier"),
    ("\\Z", "\\Z anchor"),
    ("\\z", "\\z anchor"),
    ("\\A", "\\A anchor"),
    ("\\G", "\\G anchor"),
) + tuple((f"\\{d}", "backreference") for d in "123456789")

BROAD_ESCAPES = set("dDsSwW")
ZERO_WIDTH_ESCAPES = set("bB")


@dataclass
class Entry:
    id: str
    line: int
    values: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    def one(self, key: str) -> str | None:
        vals = self.values.get(key)
        return vals[0][1] if vals else None

    def line_of(self, key: str) -> int:
        vals = self.values.get(key)
        return vals[0][0] if vals else self.line


class Report:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed: dict[str, list[tuple[int, str]]] = {}
        self.file_failures: list[str] = []
        self.warnings: list[str] = []

    def fail(self, line: int, entry_id: str | None, msg: str) -> None:
        where = f"{self.path}:{line}:"
        if entry_id is None:
            self.file_failures.append(f"{where} {msg}")
        else:
            self.failed.setdefault(entry_id, []).append((line, f"{where} [{entry_id}] {msg}"))

    def warn(self, line: int, entry_id: str, msg: str) -> None:
        self.warnings.append(f"{self.path}:{line}: warning: [{entry_id}] {msg}")


# --------------------------------------------------------------------------
# Parsing


def parse(path: Path, report: Report) -> list[Entry]:
    entries: list[Entry] = []
    seen_ids: dict[str, int] = {}
    current: Entry | None = None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        report.fail(0, None, f"cannot read file: {exc}")
        return entries
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip()
        if line != line.rstrip():
            report.fail(lineno, current.id if current else None, "line ends in a blank (trailing whitespace)")
        if not stripped or stripped.startswith("#"):
            continue
        header = HEADER_RE.fullmatch(stripped)
        if header and "=" not in stripped:
            entry_id = header.group(1)
            if not ID_RE.fullmatch(entry_id):
                report.fail(lineno, None, f"entry id {entry_id!r} is not lower_snake_case")
            if entry_id in seen_ids:
                # Keep parsing into a throwaway entry so the rest is still checked.
                current = Entry(entry_id + "#dup", lineno)
                report.fail(lineno, current.id, f"duplicate id (first defined on line {seen_ids[entry_id]})")
                entries.append(current)
                continue
            seen_ids[entry_id] = lineno
            current = Entry(entry_id, lineno)
            entries.append(current)
            continue
        if "=" not in line:
            report.fail(lineno, current.id if current else None, f"not a comment, header or 'key = value' line: {stripped[:60]!r}")
            continue
        key, value = line.split("=", 1)
        key = key.strip()
        value = value.strip()
        if current is None:
            report.fail(lineno, None, f"key {key!r} outside of any [id] entry")
            continue
        if not KEY_RE.fullmatch(key) or key not in KNOWN_KEYS:
            report.fail(lineno, current.id, f"unknown key {key!r}")
            continue
        if key in SINGLE_KEYS and key in current.values:
            report.fail(lineno, current.id, f"duplicate key {key!r} (first on line {current.line_of(key)})")
            continue
        if not value:
            report.fail(lineno, current.id, f"empty value for key {key!r}")
            continue
        current.values.setdefault(key, []).append((lineno, value))
    return entries


# --------------------------------------------------------------------------
# Regex structure scan


def scan_regex(regex: str) -> tuple[list[str], int, list[str]]:
    """Walk the regex once.

    Returns (problems, longest mandatory literal run, capture names).
    """
    problems: list[str] = []
    names: list[str] = []
    n = len(regex)
    i = 0
    run = 0
    best = 0
    stack: list[int] = []  # best value when the group opened
    first_atom: str | None = None

    def quantifier_at(j: int) -> tuple[str, int]:
        """Classify the quantifier starting at j: ('none'|'optional'|'required', length)."""
        if j >= n:
            return "none", 0
        ch = regex[j]
        if ch in "*?":
            length = 1
            kind = "optional"
        elif ch == "+":
            length = 1
            kind = "required"
        elif ch == "{":
            m = re.match(r"\{(\d*)(,?)(\d*)\}", regex[j:])
            if not m:
                return "none", 0
            length = m.end()
            kind = "optional" if (m.group(1) in ("", "0")) else "required"
        else:
            return "none", 0
        if j + length < n and regex[j + length] == "?":
            problems.append(f"lazy quantifier at offset {j}")
            length += 1
        return kind, length

    while i < n:
        c = regex[i]
        literal = False
        atom = ""
        if c == "\\":
            if i + 1 >= n:
                problems.append("trailing backslash")
                break
            e = regex[i + 1]
            atom = "\\" + e
            if e.isalnum():
                if e in BROAD_ESCAPES:
                    literal = False
                elif e in ZERO_WIDTH_ESCAPES:
                    i += 2
                    continue
                elif e in "tnrfv":
                    literal = True
                else:
                    literal = False  # \x.., \p.., \Q etc.: not counted as literal
            else:
                literal = True  # escaped punctuation
            i += 2
        elif c == "[":
            j = i + 1
            if j < n and regex[j] == "^":
                j += 1
            if j < n and regex[j] == "]":
                j += 1
            while j < n and regex[j] != "]":
                j += 2 if regex[j] == "\\" else 1
            if j >= n:
                problems.append("unterminated character class")
                break
            atom = regex[i : j + 1]
            i = j + 1
        elif c == "(":
            if regex.startswith("(?P<", i):
                end = regex.find(">", i)
                name = regex[i + 4 : end] if end > 0 else ""
                names.append(name)
                if not NAME_RE.fullmatch(name):
                    problems.append(f"capture name {name!r} is not lower_snake_case")
                i = end + 1 if end > 0 else n
            elif regex.startswith("(?:", i):
                i += 3
            elif regex.startswith("(?", i):
                m = re.match(r"\(\?([a-zA-Z]+)\)", regex[i:])
                if m and m.group(1) == "i" and i == 0:
                    i += m.end()
                    run = 0
                    continue
                if m:
                    problems.append(f"inline flag group {m.group(0)!r} (only a leading (?i) is allowed)")
                    i += m.end()
                    continue
                if regex.startswith("(?<", i):
                    problems.append("named group must be written (?P<name>...)")
                else:
                    problems.append(f"unsupported group construct at offset {i}")
                i += 2
            else:
                i += 1
                names.append("")  # unnamed capturing group
                problems.append("unnamed capturing group; use (?:...) or (?P<name>...)")
            stack.append(best)
            run = 0
            continue
        elif c == ")":
            opened_best = stack.pop() if stack else best
            kind, length = quantifier_at(i + 1)
            if kind == "optional":
                best = opened_best
            i += 1 + length
            run = 0
            continue
        elif c == "|":
            run = 0
            i += 1
            continue
        elif c in "^$":
            problems.append(f"anchor {c!r} at offset {i}")
            i += 1
            run = 0
            continue
        elif c == ".":
            atom = "."
            i += 1
        elif c == "{" and not re.match(r"\{\d*,?\d*\}", regex[i:]):
            literal = True  # a '{' that does not start a quantifier is literal
            atom = c
            i += 1
        elif c in "*+?{":
            # A quantifier not attached to an atom we consumed (e.g. at start).
            problems.append(f"dangling quantifier {c!r} at offset {i}")
            i += 1
            continue
        else:
            literal = True
            atom = c
            i += 1

        if first_atom is None:
            first_atom = atom
        kind, length = quantifier_at(i)
        i += length
        if literal and kind == "none":
            run += 1
            best = max(best, run)
        elif literal and kind == "required":
            run += 1
            best = max(best, run)
            run = 0
        else:
            run = 0

    # Leading atom: no '.', no negated or broad class, no broad escape.
    if first_atom is not None:
        if first_atom == "." or first_atom.startswith("[^") or (
            first_atom.startswith("\\") and len(first_atom) == 2 and first_atom[1] in BROAD_ESCAPES
        ):
            problems.append(f"regex starts with a broad atom {first_atom!r}")
    return problems, best, names


def check_regex(entry: Entry, report: Report) -> re.Pattern[str] | None:
    regex = entry.one("regex")
    if regex is None:
        return None
    line = entry.line_of("regex")
    for needle, what in FORBIDDEN_SUBSTRINGS:
        if needle in regex:
            report.fail(line, entry.id, f"regex uses a forbidden construct {needle!r} ({what})")
    if regex.startswith("^"):
        report.fail(line, entry.id, "regex starts with '^' (patterns are unanchored)")
    if regex.endswith("$") and not regex.endswith("\\$"):
        report.fail(line, entry.id, "regex ends with '$' (patterns are unanchored)")
    if regex.startswith(".*") or regex.startswith(".+"):
        report.fail(line, entry.id, "regex starts with '.*' / '.+'")
    problems, longest, names = scan_regex(regex)
    for problem in problems:
        report.fail(line, entry.id, f"regex: {problem}")
    if longest < MIN_LITERAL_RUN:
        report.fail(line, entry.id, f"regex has no literal run of >= {MIN_LITERAL_RUN} characters (longest {longest})")
    dup = sorted({n for n in names if n and names.count(n) > 1})
    if dup:
        report.fail(line, entry.id, f"duplicate capture names {dup}")
    try:
        compiled = re.compile(regex)
    except re.error as exc:
        report.fail(line, entry.id, f"regex does not compile: {exc}")
        return None
    return compiled


# --------------------------------------------------------------------------
# Entry checks


def check_entry(entry: Entry, report: Report) -> re.Pattern[str] | None:
    for key in REQUIRED_KEYS:
        if key not in entry.values:
            report.fail(entry.line, entry.id, f"missing key {key!r}")
    category = entry.one("category")
    if category is not None and category not in CATEGORIES:
        report.fail(entry.line_of("category"), entry.id, f"unknown category {category!r} (one of {', '.join(CATEGORIES)})")
    severity = entry.one("severity")
    if severity is not None and severity not in SEVERITIES:
        report.fail(entry.line_of("severity"), entry.id, f"unknown severity {severity!r} (one of {', '.join(SEVERITIES)})")
    source = entry.one("source")
    if source is not None and not SOURCE_RE.match(source):
        report.fail(entry.line_of("source"), entry.id, "source must start with 'owner/repo path'")

    compiled = check_regex(entry, report)
    if compiled is None:
        return None

    for lineno, example in entry.values.get("example", []):
        if not compiled.search(example):
            report.fail(lineno, entry.id, f"example does not match: {example[:100]!r}")
    for lineno, counter in entry.values.get("counter_example", []):
        if compiled.search(counter):
            report.fail(lineno, entry.id, f"counter_example matches: {counter[:100]!r}")

    expected = entry.one("captures_expected")
    if expected is not None:
        line = entry.line_of("captures_expected")
        wanted: dict[str, str] = {}
        for part in CAPTURE_SPLIT_RE.split(expected):
            if "=" not in part:
                report.fail(line, entry.id, f"captures_expected item {part!r} is not name=value")
                continue
            name, value = part.split("=", 1)
            wanted[name.strip()] = value
        unknown = sorted(set(wanted) - set(compiled.groupindex))
        if unknown:
            report.fail(line, entry.id, f"captures_expected names unknown captures {unknown}")
        examples = entry.values.get("example", [])
        if examples:
            m = compiled.search(examples[0][1])
            if m:
                for name, value in wanted.items():
                    if name not in compiled.groupindex:
                        continue
                    got = m.group(name)
                    got = "" if got is None else got
                    if got != value:
                        report.fail(line, entry.id, f"capture {name!r} is {got!r}, expected {value!r}")
    return compiled


def check_overlaps(entries: list[Entry], compiled: dict[str, re.Pattern[str]], report: Report) -> None:
    hits: dict[tuple[str, str], list[int]] = {}
    by_id = {e.id: e for e in entries}
    for a in entries:
        for b in entries:
            if a.id == b.id or b.id not in compiled:
                continue
            if a.one("category") == b.one("category"):
                continue
            lines = [ln for ln, ex in a.values.get("example", []) if compiled[b.id].search(ex)]
            if lines:
                hits[(a.id, b.id)] = lines
    for (a_id, b_id), lines in sorted(hits.items()):
        a, b = by_id[a_id], by_id[b_id]
        if (b_id, a_id) in hits:
            if a_id < b_id:
                report.fail(
                    lines[0],
                    a_id,
                    f"({a.one('category')}) and [{b_id}] ({b.one('category')}) match each other's examples",
                )
                report.fail(
                    hits[(b_id, a_id)][0],
                    b_id,
                    f"({b.one('category')}) and [{a_id}] ({a.one('category')}) match each other's examples",
                )
            continue
        report.warn(
            lines[0],
            a_id,
            f"example ({a.one('category')}) is also matched by [{b_id}] ({b.one('category')})",
        )


def main(argv: list[str]) -> int:
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip().splitlines()[2])
        return 2 if len(argv) > 2 else 0
    default = Path(__file__).resolve().parent.parent.parent / "data" / "log_events.patterns"
    path = Path(argv[1]) if len(argv) == 2 else default
    report = Report(path)
    entries = parse(path, report)

    compiled: dict[str, re.Pattern[str]] = {}
    for entry in entries:
        pattern = check_entry(entry, report)
        if pattern is not None:
            compiled[entry.id] = pattern
    check_overlaps(entries, compiled, report)

    real = [e for e in entries if not e.id.endswith("#dup")]
    if len(real) < MIN_ENTRIES:
        report.fail(0, None, f"only {len(real)} entries, at least {MIN_ENTRIES} are required")

    for entry in entries:
        for _, message in sorted(report.failed.get(entry.id, []), key=lambda item: item[0]):
            print(message)
    for message in report.file_failures:
        print(message)
    for message in report.warnings:
        print(message)

    failed_ids = {e.id for e in entries if e.id in report.failed}
    n_failed = len(failed_ids) + (1 if report.file_failures else 0)
    n_passed = len(entries) - len(failed_ids)
    print(f"{n_passed} passed, {n_failed} failed")
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
