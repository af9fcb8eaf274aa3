#!/usr/bin/env python3
"""Soundness of `csi triage` against the exact (callgrind) line coverage of the same runs.

For every crash of every bucket, the program built with plain clang -O0 was run on the same
input under callgrind (run.sh: OUT/oracle/<program>/<bug>/<n>/coverage.json, {file: {line:
1}} for every line that executed an instruction, plus the lines of the frames valgrind
printed at the fatal signal) — the exact oracle of fixtures/build.sh. A
must-in-all line must have a count > 0 in every crash of its bucket; a never-in-any line must
have count 0 (or no code) in every one. Prints the number of lines checked and every
violation; exits 1 on any.

Usage: oracle.py TRIAGE.json CORES_DIR ORACLE_DIR"""
import json
import os
import sys

doc = json.load(open(sys.argv[1]))
cores = os.path.realpath(sys.argv[2])
oracle = os.path.realpath(sys.argv[3])


def counts(core):
    rel = os.path.relpath(os.path.dirname(os.path.realpath(core)), cores)
    cov = json.load(open(os.path.join(oracle, rel, "coverage.json")))
    out = {}
    for f, lines in cov.items():
        out[f.lstrip("./")] = {int(l): c for l, c in lines.items()}
    return out


checked = violations = 0
for b in doc["buckets"]:
    runs = [counts(c["core"]) for c in b["crashes"]]
    for key, want_ran in (("must_in_all", True), ("never_in_any", False)):
        for f, lines in b[key].items():
            name = f.lstrip("./")
            for line in lines:
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
      f"{sum(len(b['crashes']) for b in doc['buckets'])} crashes, {violations} violations")
sys.exit(1 if violations else 0)
