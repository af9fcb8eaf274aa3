#!/usr/bin/env python3
"""The exact oracle: every (file, line) with an executed instruction in a callgrind profile
(`--dump-instr=yes --dump-line=yes`), plus the crashing frames' current lines.

Reads the callgrind format with name compression (`fl=(3) name` defines id 3, `fl=(3)` refers
to it; fl/fi/fe/cfi/cfl/jfi share one table) and position compression (`+n`/`-n` relative to the
previous cost line's subposition, `*` the same). A cost line after `calls=` is the call site (its
inclusive cost): the call instruction ran, so its line counts. The target position on a `calls=`
line does not move the reference position (checked against `--compress-pos=no` output by
`--selftest`).

Usage: callgrind_lines.py [--root DIR] [--frames FRAMES.txt] [--vg-stderr FILE] callgrind.out
  -> JSON {"files": {file: [lines]}, "frames": [[fn, file, line]], "vg_frames": [...]} where a
  file under --root is written relative to it."""
import json
import os
import re
import sys

NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")
FILE_KEYS = ("fl", "fi", "fe", "cfi", "cfl", "jfi")
FN_KEYS = ("fn", "cfn", "jfn")
OB_KEYS = ("ob", "cob")


def normalize(path, root):
    if not path or path == "???":
        return path
    path = os.path.normpath(path)
    if root and path.startswith(root + "/"):
        return path[len(root) + 1:]
    return path


class Names:
    """One compression table (files, functions or objects)."""

    def __init__(self):
        self.by_id = {}

    def resolve(self, value):
        m = NAME.match(value)
        if not m:
            return value
        if m.group(2) is not None:
            self.by_id[m.group(1)] = m.group(2)
            return m.group(2)
        return self.by_id.get(m.group(1), "???")


def parse_position(tokens, last):
    """Decodes len(last) subpositions from tokens; returns the new absolute positions."""
    out = []
    for tok, prev in zip(tokens, last):
        if tok == "*":
            out.append(prev)
        elif tok[0] == "+":
            out.append(prev + int(tok[1:], 0))
        elif tok[0] == "-":
            out.append(prev - int(tok[1:], 0))
        else:
            out.append(int(tok, 0))
    return out


def executed_lines(path):
    files, fns, obs = Names(), Names(), Names()
    positions = ["line"]
    executed = {}
    cur_file = None
    fn_file = None
    last = None
    in_body = False
    with open(path, errors="replace") as f:
        for raw in f:
            ln = raw.rstrip("\n")
            if not ln or ln.startswith("#"):
                continue
            if not in_body:
                if ln.startswith("positions:"):
                    positions = ln.split(":", 1)[1].split()
                    continue
                if re.match(r"^[a-z]+:", ln) and not re.match(r"^(fl|fn|ob)=", ln):
                    continue
                in_body = True
                last = [0] * len(positions)
            key, eq, value = ln.partition("=")
            if eq and key in FILE_KEYS:
                name = files.resolve(value)
                if key == "fl":
                    cur_file = fn_file = name
                elif key in ("fi", "fe"):
                    cur_file = name
                continue
            if eq and key in FN_KEYS:
                fns.resolve(value)
                if key == "fn":
                    cur_file = fn_file
                continue
            if eq and key in OB_KEYS:
                obs.resolve(value)
                continue
            if eq and key in ("calls", "jump", "jcnd"):
                continue
            if ln.startswith(("totals:", "summary:")) or re.match(r"^[a-z]+:", ln):
                continue
            tokens = ln.split()
            if len(tokens) < len(positions):
                continue
            last = parse_position(tokens[: len(positions)], last)
            costs = [int(t) for t in tokens[len(positions):]]
            line = last[positions.index("line")] if "line" in positions else 0
            if line > 0 and any(costs) and cur_file:
                executed.setdefault(cur_file, set()).add(line)
    return executed


def read_frames(path):
    frames = []
    if path and os.path.exists(path):
        with open(path) as f:
            for ln in f:
                parts = ln.rstrip("\n").split("\t")
                if len(parts) == 3:
                    frames.append(parts)
    return frames


def selftest(compressed, uncompressed):
    a, b = executed_lines(compressed), executed_lines(uncompressed)
    if a != b:
        diff = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
        print("selftest FAILED: %d files differ, e.g. %s" % (len(diff), sorted(diff)[:3]))
        sys.exit(1)
    print("selftest ok: %d files, %d lines" % (len(a), sum(len(v) for v in a.values())))


def main():
    args = sys.argv[1:]
    opts = {}
    while args and args[0].startswith("--"):
        if args[0] == "--selftest":
            return selftest(args[1], args[2])
        opts[args[0]] = args[1]
        args = args[2:]
    root = os.path.normpath(opts["--root"]) if "--root" in opts else None
    executed = executed_lines(args[0])
    files = {}
    for name, lines in executed.items():
        files.setdefault(normalize(name, root), set()).update(lines)
    frames = read_frames(opts.get("--frames"))
    for fn, file, line in frames:
        if file and line:
            # gdb names the file as DWARF does; attribute it to the executed file it ends with.
            norm = normalize(file, root)
            match = [k for k in files if k == norm or k.endswith("/" + norm.lstrip("./"))]
            files.setdefault(match[0] if len(match) == 1 else norm, set()).add(int(line))
    vg = []
    if "--vg-stderr" in opts and os.path.exists(opts["--vg-stderr"]):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import btparse
        with open(opts["--vg-stderr"]) as f:
            vg = [list(x) for x in btparse.vg_frames(f.readlines())]
    json.dump({"files": {k: sorted(v) for k, v in sorted(files.items())},
               "frames": frames, "vg_frames": vg}, sys.stdout, indent=0)


if __name__ == "__main__":
    main()
