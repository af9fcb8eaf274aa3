#!/usr/bin/env python3
"""Where each seeded bug's faulty line ranks among a bucket's suspicious lines.

The faulty line of a bug is the source line marked `// fault: BUG` (bugs.md). A bug's bucket
is the one holding most of its crashes; its rank is pessimistic: the number of ranked lines
whose ranking key (Ochiai's lower bound, its upper bound, crashes with the line on the stack:
what `csi triage` sorts by) is at least the faulty line's (ties count against it). Prints one
row per bug and the share of bugs whose faulty line ranks in the top 5.

Usage: rank.py TRIAGE.json CORES_DIR SRC_DIR   (TRIAGE from `csi triage --passing`)"""
import collections
import json
import os
import re
import sys

doc = json.load(open(sys.argv[1]))
root = os.path.realpath(sys.argv[2])
src = sys.argv[3]

faults = {}
for name in sorted(os.listdir(src)):
    for k, text in enumerate(open(os.path.join(src, name)), 1):
        m = re.search(r"// fault: (\S+)", text)
        if m:
            faults[f"{name[:-2]}/{m.group(1)}"] = (name, k)


def truth(core):
    rel = os.path.relpath(os.path.realpath(core), root).split(os.sep)
    return f"{rel[0]}/{rel[1]}"


where = collections.defaultdict(collections.Counter)
for k, b in enumerate(doc["buckets"]):
    for c in b["crashes"]:
        where[truth(c["core"])][k] += 1

top5 = 0
print(f"{'bug':<32} {'faulty line':<20} rank  ochiai      bucket")
for bug in sorted(faults):
    file, line = faults[bug]
    k = where[bug].most_common(1)[0][0] if where[bug] else None
    rank, lo = None, None
    if k is not None:
        sus = doc["buckets"][k].get("passing", {}).get("suspicious", [])
        mine = [s for s in sus if s["line"] == line and s["file"].endswith("/" + file)]
        if mine:
            lo = mine[0]["ochiai"]
            key = lambda s: (s["ochiai"][0], s["ochiai"][1], s["on_stack"])
            rank = sum(1 for s in sus if key(s) >= key(mine[0]))
    top5 += rank is not None and rank <= 5
    shown = "-" if rank is None else str(rank)
    och = "-" if lo is None else f"{lo[0]:.2f}-{lo[1]:.2f}"
    print(f"{bug:<32} {file}:{line:<14} {shown:>4}  {och:<11} #{(k or 0) + 1}")
print(f"faulty line in the top 5: {top5}/{len(faults)} bugs ({100 * top5 / max(len(faults), 1):.0f} %)")
