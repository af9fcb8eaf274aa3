#!/usr/bin/env python3
"""Where the extra instructions of an instrumented build come from.

Usage: where.py PLAIN_BIN PLAIN_CG_DIR CONF_BIN CONF_CG_DIR [N [PLAIN_ROOT CONF_ROOT]]

Reads every callgrind.* profile (made with --dump-instr=yes on a --strip-debug copy of the
binary) in each directory, sums self Ir per instruction address of the program's own object,
maps addresses to function and source line with addr2line on the unstripped binary (the
stripped copy has the same addresses), and prints the N functions and N source lines whose self
Ir grew most from plain to the configuration. Instrumentation code carries the debug location
of the code it is placed in, so a line whose count grew is where the probes ran: for path
tracing, the loop whose back edge stores a path."""
import collections
import glob
import os
import subprocess
import sys


def self_ir(cg_dir, binary):
    """{address: self Ir} over all profiles in cg_dir, for the object named like binary."""
    base = os.path.basename(binary)
    out = collections.Counter()
    for path in glob.glob(os.path.join(cg_dir, "callgrind.*")):
        names, ob, last, after_calls = {}, None, 0, False
        for line in open(path, errors="replace"):
            line = line.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isalpha():
                key, _, val = line.partition("=")
                if key in ("ob", "cob"):  # one name table for both
                    ref, _, name = val.partition(" ")
                    if name:
                        names[ref] = name
                    if key == "ob":
                        ob = names.get(ref, name)
                elif key == "calls":
                    after_calls = True
                continue
            if c not in "0123456789+-*":
                continue
            parts = line.split()
            pos = parts[0]
            if pos.startswith("0x"):
                addr = int(pos, 16)
            elif pos[0] == "+":
                addr = last + int(pos[1:], 16 if pos[1:].startswith("0x") else 10)
            elif pos[0] == "-":
                addr = last - int(pos[1:], 16 if pos[1:].startswith("0x") else 10)
            elif pos == "*":
                addr = last
            else:
                addr = int(pos)
            last = addr
            if after_calls:  # the inclusive cost of a call: not this instruction's own
                after_calls = False
                continue
            if ob and os.path.basename(ob) == base and len(parts) >= 3:
                out[addr] += int(parts[-1])
    return out


def symbolize(binary, addrs, root):
    addrs = sorted(addrs)
    if not addrs:
        return {}
    r = subprocess.run(["addr2line", "-f", "-C", "-e", binary], input="\n".join(map(hex, addrs)),
                       capture_output=True, text=True, check=True).stdout.splitlines()
    res = {}
    for i, a in enumerate(addrs):
        fn, loc = r[2 * i], r[2 * i + 1]
        loc = loc.split(" (")[0]
        if loc.startswith(root + "/"):  # the build tree's name (plain, pt, …) is not the key
            loc = loc[len(root) + 1:]
        res[a] = (fn, loc)
    return res


def main():
    pbin, pdir, cbin, cdir = sys.argv[1:5]
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 12
    # The build trees' roots, stripped from source paths (default: the binaries' directories).
    roots = sys.argv[6:8] if len(sys.argv) > 7 else [os.path.dirname(pbin), os.path.dirname(cbin)]
    roots = [os.path.abspath(r) for r in roots]
    tot = {}
    fns, lines = {}, {}
    where = collections.defaultdict(collections.Counter)  # line -> {function (addr2line): Ir}
    for tag, b, d, root in (("plain", pbin, pdir, roots[0]), ("conf", cbin, cdir, roots[1])):
        ir = self_ir(d, b)
        sym = symbolize(b, ir, root)
        tot[tag] = sum(ir.values())
        f, l = collections.Counter(), collections.Counter()
        for a, v in ir.items():
            fn, loc = sym[a]
            f[fn] += v
            l[loc] += v
            where[loc][fn] += v
        fns[tag], lines[tag] = f, l
    extra = tot["conf"] - tot["plain"]
    print(f"self Ir in the program's own code: plain {tot['plain']:,}, configuration "
          f"{tot['conf']:,}, extra {extra:,} ({100.0 * extra / max(tot['plain'], 1):+.1f} %)")
    for title, d in (("function", fns), ("source line (functions addr2line names for it)", lines)):
        diff = collections.Counter({k: d["conf"][k] - d["plain"].get(k, 0)
                                    for k in set(d["conf"]) | set(d["plain"])})
        print(f"\ntop {n} by extra Ir — {title}: extra, share of all extra, plain -> conf")
        for k, v in diff.most_common(n):
            name = k if d is fns else f"{k} ({', '.join(f for f, _ in where[k].most_common(2))})"
            print(f"  {v:>14,} {100.0 * v / max(extra, 1):6.1f} %  {d['plain'].get(k, 0):>14,} -> "
                  f"{d['conf'].get(k, 0):>14,}  {name}")


if __name__ == "__main__":
    main()
