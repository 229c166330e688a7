#!/usr/bin/env python3
"""Every relative link of the project's markdown resolves.

    check_doc_links.py [ROOT]

Reads README.md, CONTRIBUTING.md and every other tracked-looking *.md under
ROOT (not build folders, not .git), and checks each inline link and image
`[text](target)` whose target is no URL: the file must exist (relative to
the linking file), and a `#anchor` must be a heading of the target file,
spelled as GitHub spells heading anchors (lowercase; every character that is
not a letter, a digit, a space, `-` or `_` dropped; spaces turned into `-`;
a repeated heading gets `-1`, `-2`, ...). Headings and links inside code
fences and code spans are not headings or links; a link's text may wrap
over lines. Prints every broken link
as `file:line: target: why` and exits 1 when there is one.
"""

import os
import re
import sys

SKIP_DIRS = {".git", "node_modules"}
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) or ![alt](target); the text may hold `code` and nested [..].
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s>]+(?:\([^()\s]*\))?)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# A code span may wrap onto the next line; it holds no backtick here.
MULTILINE_CODE_SPAN = re.compile(r"(`+)[^`]+?\1")


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith("build") and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def slug(heading):
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def lines_outside_fences(path):
    with open(path, encoding="utf-8") as f:
        fenced = False
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line.rstrip("\n")


def anchors_of(path, cache={}):
    if path not in cache:
        seen = {}
        anchors = set()
        for _, line in lines_outside_fences(path):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                anchors.add(base if n == 0 else f"{base}-{n}")
                seen[base] = n + 1
            for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                anchors.add(m.group(1))
        cache[path] = anchors
    return cache[path]


def text_outside_code(path):
    """The file's text with fenced lines and code spans blanked, newlines kept,
    so that a link wrapped over two lines is found and its line still counts."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fenced = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
            lines[i] = ""
        elif fenced:
            lines[i] = ""
    text = "\n".join(lines)
    return MULTILINE_CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def check(root):
    broken = []
    checked = 0
    for path in markdown_files(root):
        text = text_outside_code(path)
        for m in LINK.finditer(text):
            number = text.count("\n", 0, m.start()) + 1
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
                continue
            checked += 1
            file_part, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            rel = os.path.relpath(path, root)
            if not os.path.exists(where):
                broken.append(f"{rel}:{number}: {target}: no such file")
                continue
            if anchor:
                if not where.endswith(".md"):
                    broken.append(f"{rel}:{number}: {target}: an anchor into a file that is not markdown")
                elif anchor not in anchors_of(where):
                    broken.append(f"{rel}:{number}: {target}: no heading #{anchor} in "
                                  f"{os.path.relpath(where, root)}")
    return broken, checked


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    broken, checked = check(root)
    for b in broken:
        print(b)
    files = sum(1 for _ in markdown_files(root))
    print(f"{checked} relative links in {files} markdown files, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
