#!/usr/bin/env python3
"""Static and dynamic coverage-probe counts of a build (dissertation Figs. 4.8-4.9).

Usage: probes.py BIN CG_DIR [ARRAY_PREFIX]

A probe of the global coverage arrays is one store into a `__BBC_arr_*` global (ARRAY_PREFIX,
default `__BBC_arr_`; `__CC_arr_` for call-site coverage) in the program's code: static = how
many such store instructions `objdump -d` finds in BIN, dynamic = how often they ran, from the
callgrind profiles in CG_DIR (made with --dump-instr=yes on a --strip-debug copy of BIN, as
run.sh's; an instruction's Ir is its execution count). Prints `static dynamic`. Every probe
stores into the global array and, for a frame's own array, into the stack next to it, so the
global stores count the probes once each."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from where import self_ir  # noqa: E402


def probe_addresses(binary, prefix):
    """Addresses of the instructions that store into a global array named prefix*."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
    pat = re.compile(r"^\s*([0-9a-f]+):\s+mov[bwlq]?\s+\$0x1,.*<" + re.escape(prefix))
    return {int(m.group(1), 16) for m in map(pat.match, out.splitlines()) if m}


def main():
    binary, cg_dir = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) > 3 else "__BBC_arr_"
    addrs = probe_addresses(binary, prefix)
    ir = self_ir(cg_dir, binary)
    print(len(addrs), sum(ir.get(a, 0) for a in addrs))


if __name__ == "__main__":
    main()
