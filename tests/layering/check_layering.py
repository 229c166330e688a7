#!/usr/bin/env python3
"""Checks every engine #include against the layer graph CMake builds.

    check_layering.py ENGINE_DIR LAYERS_TXT

LAYERS_TXT (written by engine/CMakeLists.txt) has one line per engine folder,
"name: lower layers it links". A file of engine/NAME/ may include headers of
NAME itself and of every layer NAME links, directly or through another layer;
anything else is a wrong include, reported as file:line, and the test fails.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main() -> int:
    engine, layers_txt = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    direct = {}
    for line in layers_txt.read_text().splitlines():
        if ":" in line:
            name, deps = line.split(":", 1)
            direct[name.strip()] = deps.split()

    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for dep in direct.get(name, []):
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    folders = sorted(p.name for p in engine.iterdir() if p.is_dir() and any(p.glob("*.cc")))
    errors = [f"engine/{f}/ has no library in {layers_txt}" for f in folders if f not in direct]
    checked = 0
    for name in sorted(direct):
        allowed = closure(name) | {name}
        for path in sorted((engine / name).glob("*")):
            if path.suffix not in (".h", ".cc", ".in"):
                continue
            for number, text in enumerate(path.read_text().splitlines(), 1):
                match = INCLUDE.match(text)
                if not match:
                    continue
                checked += 1
                layer = match.group(1)
                if layer in direct and layer not in allowed:
                    errors.append(
                        f"engine/{name}/{path.name}:{number}: includes {layer}/, which "
                        f"{name} does not link (it links: {' '.join(sorted(allowed - {name})) or 'nothing'})")
    for error in errors:
        print(error)
    print(f"{checked} includes in {len(direct)} layers checked, {len(errors)} wrong")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
