#!/usr/bin/env python3
"""Soundness of `csi triage` against the exact (callgrind) line coverage of the same runs.

For every crash of every bucket, the program built with plain clang -O0 was run on the same
input under callgrind (run.sh: OUT/oracle/<program>/<bug>/<n>/coverage.json, {file: {line:
1}} for every line that executed an instruction, plus the lines of the frames valgrind
printed at the fatal signal) — the exact oracle of fixtures/build.sh. A
must-in-all line must have a count > 0 in every crash of its bucket; a never-in-any line must
have count 0 (or no code) in every one. Prints the number of lines checked and every
violation; exits 1 on any.

With PASSING_DIR (the output of `csi triage --passing`): the passing runs were run under
callgrind too (OUT/oracle/passing-runs/<program>/<n>/coverage.json), and each bucket's
comparison is checked: a line "only failing" ran in no passing run of the program, a line
"only passing" ran in every one and in no crash of the bucket, and for every ranked line the
true number of crashes and of passing runs in which it ran lies in its [surely, possibly]
interval.

Usage: oracle.py TRIAGE.json CORES_DIR ORACLE_DIR [PASSING_DIR]"""
import json
import os
import subprocess
import sys

doc = json.load(open(sys.argv[1]))
cores = os.path.realpath(sys.argv[2])
oracle = os.path.realpath(sys.argv[3])
passing = os.path.realpath(sys.argv[4]) if len(sys.argv) > 4 else None


_code = {}


def has_code(prog, f, line):
    """Does the oracle's own binary (plain clang -O0) have machine code on this line? A line
    without any — a glibc header's inline body that -O2 expanded (atoi → strtol at
    stdlib.h:369) but -O0 calls out of line — cannot be checked by an instruction trace (as
    in the fixtures' soundness_oracle)."""
    if prog not in _code:
        exe = os.path.join(os.path.dirname(oracle), "bin", prog + ".exact")
        out = subprocess.run(["objdump", "--dwarf=decodedline", exe], capture_output=True,
                             text=True).stdout
        lines = set()
        for row in out.splitlines():
            parts = row.split()
            if len(parts) >= 3 and parts[1].isdigit() and parts[2].startswith("0x"):
                lines.add((os.path.basename(parts[0]), int(parts[1])))
        _code[prog] = lines
    return (os.path.basename(f), line) in _code[prog]


def load(path):
    cov = json.load(open(os.path.join(path, "coverage.json")))
    out = {}
    for f, lines in cov.items():
        out[f.lstrip("./")] = {int(l): c for l, c in lines.items()}
    return out


def counts(core):
    rel = os.path.relpath(os.path.dirname(os.path.realpath(core)), cores)
    return load(os.path.join(oracle, "cores", rel))


def ran(run, f, line):
    name = f.lstrip("./")
    return sum(v.get(line, 0) for k, v in run.items()
               if k == name or k.endswith("/" + name) or name.endswith("/" + k)) > 0


def crash_ran(run, c, f, line):
    # The line the core's pc is on ran (see below).
    return (c.get("site") and c["site"].rsplit(":", 1) == [f, str(line)]) or ran(run, f, line)


checked = violations = unchecked = 0
for b in doc["buckets"]:
    runs = [counts(c["core"]) for c in b["crashes"]]
    prog = os.path.basename(b["representative"]["executable"])
    for key, want_ran in (("must_in_all", True), ("never_in_any", False)):
        for f, lines in b[key].items():
            name = f.lstrip("./")
            for line in lines:
                if not has_code(prog, f, line):
                    unchecked += 1
                    continue
                checked += 1
                for run, c in zip(runs, b["crashes"]):
                    # llvm-cov names files absolutely, csi as DWARF does (./src/x.c).
                    # valgrind's crash frames name the base name only: merge every match.
                    # callgrind does not count the block whose instruction faulted (and
                    # valgrind's report of it can be a line off): the line the core's pc
                    # is on (DWARF, independent of the analysis) ran.
                    if c.get("site") and c["site"].rsplit(":", 1) == [f, str(line)]:
                        continue
                    n = sum(v.get(line, 0) for k, v in run.items()
                            if k == name or k.endswith("/" + name) or name.endswith("/" + k))
                    if (n > 0) != want_ran:
                        violations += 1
                        print(f"UNSOUND: {b['signature']}: {f}:{line} is {key} but ran {n} "
                              f"times in {c['core']}")
print(f"oracle: {checked} must-in-all / never-in-any lines checked over "
      f"{sum(len(b['crashes']) for b in doc['buckets'])} crashes, {violations} violations"
      f" ({unchecked} without code in the oracle's -O0 binary, not checkable)")

if passing:
    runs_of = {}
    for prog in sorted(os.listdir(os.path.join(oracle, "passing-runs"))):
        d = os.path.join(oracle, "passing-runs", prog)
        runs_of[prog] = [load(os.path.join(d, n)) for n in sorted(os.listdir(d))]
    pchecked = pviol = 0
    for b in doc["buckets"]:
        cmp = b.get("passing")
        if cmp is None:
            continue
        prog = os.path.basename(b["representative"]["executable"])
        pruns = runs_of.get(prog, [])
        if cmp["runs"] != len(pruns):
            pviol += 1
            print(f"UNSOUND: {b['signature']}: {cmp['runs']} passing runs matched, {len(pruns)} ran")
        crashes = [(counts(c["core"]), c) for c in b["crashes"]]
        for f, lines in cmp["failing_only"].items():
            for line in lines:
                if not has_code(prog, f, line):
                    continue
                pchecked += 1
                n = sum(ran(r, f, line) for r in pruns)
                if n:
                    pviol += 1
                    print(f"UNSOUND: {b['signature']}: {f}:{line} only failing, ran in {n} passing runs")
        for f, lines in cmp["passing_only"].items():
            for line in lines:
                if not has_code(prog, f, line):
                    continue
                pchecked += 1
                n = sum(ran(r, f, line) for r in pruns)
                m = sum(crash_ran(r, c, f, line) for r, c in crashes)
                if n != len(pruns) or m:
                    pviol += 1
                    print(f"UNSOUND: {b['signature']}: {f}:{line} only passing, ran in "
                          f"{n}/{len(pruns)} passing runs and {m} crashes")
        for s in cmp["suspicious"]:
            if not has_code(prog, s["file"], s["line"]):
                continue
            pchecked += 1
            n = sum(ran(r, s["file"], s["line"]) for r in pruns)
            m = sum(crash_ran(r, c, s["file"], s["line"]) for r, c in crashes)
            if not (s["passed"][0] <= n <= s["passed"][1] and s["failed"][0] <= m <= s["failed"][1]):
                pviol += 1
                print(f"UNSOUND: {b['signature']}: {s['file']}:{s['line']} passed {s['passed']} "
                      f"failed {s['failed']}, truly {n} and {m}")
    print(f"oracle (passing runs): {pchecked} claims checked over "
          f"{sum(len(v) for v in runs_of.values())} passing runs, {pviol} violations")
    violations += pviol
sys.exit(1 if violations else 0)
