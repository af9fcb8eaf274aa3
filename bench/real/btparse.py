#!/usr/bin/env python3
"""gdb `bt` output on stdin -> one frame per line, innermost first: function<TAB>file<TAB>line
(file and line empty when gdb names none). Valgrind's own stack report (`--vg`) is read the
same way, from its "Process terminating ... signal" block."""
import re
import sys

GDB = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*?\)(?: at (\S+):(\d+))?(?: from \S+)?$")
VG = re.compile(r"^==\d+==\s+(?:at|by) 0x[0-9A-F]+: (\S+)(?: \((?:in )?([^:)]+)(?::(\d+))?\))?")


def gdb_frames(lines):
    for ln in lines:
        m = GDB.match(ln.rstrip())
        if m:
            yield m.group(2), m.group(3) or "", m.group(4) or ""


def vg_frames(lines):
    on = False
    for ln in lines:
        if "Process terminating with default action of signal" in ln:
            on = True
            continue
        if on:
            m = VG.match(ln.rstrip())
            if not m:
                if re.match(r"^==\d+==\s+(at|by) ", ln):
                    continue
                break
            yield m.group(1), m.group(2) or "", m.group(3) or ""


def main():
    src = sys.stdin.readlines()
    frames = vg_frames(src) if "--vg" in sys.argv else gdb_frames(src)
    for f in frames:
        print("\t".join(f))


if __name__ == "__main__":
    main()
