#!/usr/bin/env python3
"""Lines with machine code in an ELF's DWARF line table (`llvm-dwarfdump-19 --debug-line`):
JSON {file: [lines]} with files under --root written relative to it. Used to tell a `must`
line that did not run from a `must` line that has no instruction at all in the oracle build.

Usage: code_lines.py [--root DIR] ELF > code.json"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_lines import normalize  # noqa: E402

ROW = re.compile(r"^0x[0-9a-f]+\s+(\d+)\s+\d+\s+(\d+)\s.*?(end_sequence)?\s*$")


def code_lines(elf, root):
    out = subprocess.run(["llvm-dwarfdump-19", "--debug-line", elf], capture_output=True, text=True,
                         check=True).stdout
    lines = {}
    comp_dir, dirs, files, cur = "", {}, {}, None
    for ln in out.splitlines():
        s = ln.strip()
        m = re.match(r'^include_directories\[\s*(\d+)\] = "(.*)"$', s)
        if m:
            dirs[int(m.group(1))] = m.group(2)
            if int(m.group(1)) == 0:
                comp_dir = m.group(2)
            continue
        m = re.match(r"^file_names\[\s*(\d+)\]:$", s)
        if m:
            cur = int(m.group(1))
            files[cur] = ["", 0]
            continue
        m = re.match(r'^name: "(.*)"$', s)
        if m and cur is not None:
            files[cur][0] = m.group(1)
            continue
        m = re.match(r"^dir_index: (\d+)$", s)
        if m and cur is not None:
            files[cur][1] = int(m.group(1))
            continue
        if s.startswith("debug_line["):
            comp_dir, dirs, files, cur = "", {}, {}, None
            continue
        m = ROW.match(s)
        if m and not m.group(3) and int(m.group(1)) > 0:
            name, di = files.get(int(m.group(2)), ("", 0))
            d = dirs.get(di, "")
            if d and not os.path.isabs(d):
                d = os.path.join(comp_dir, d)
            path = name if os.path.isabs(name) else os.path.join(d or comp_dir, name)
            lines.setdefault(normalize(path, root), set()).add(int(m.group(1)))
    return lines


def main():
    a = sys.argv[1:]
    root = None
    if a[0] == "--root":
        root, a = os.path.normpath(a[1]), a[2:]
    json.dump({k: sorted(v) for k, v in sorted(code_lines(a[0], root).items())}, sys.stdout, indent=0)


if __name__ == "__main__":
    main()
