#!/usr/bin/env python3
"""Scores `csi triage --format json` output against the known bug of every core.

The bug of a core is the directory under CORES_DIR/<program>/<bug>/... it was written to.
Purity: the share of crashes that are in a bucket whose majority bug is theirs (Σ over
buckets of the majority count / all crashes). Completeness: per bug, the share of its crashes
in its largest bucket; reported per bug and weighted by crashes.

Usage: score.py TRIAGE.json CORES_DIR [--quiet]"""
import collections
import json
import os
import sys

doc = json.load(open(sys.argv[1]))
root = os.path.realpath(sys.argv[2])
quiet = "--quiet" in sys.argv


def truth(core):
    rel = os.path.relpath(os.path.realpath(core), root).split(os.sep)
    return f"{rel[0]}/{rel[1]}"


total = 0
majority_sum = 0
per_bug = collections.defaultdict(collections.Counter)  # bug -> bucket index -> crashes
rows = []
for k, b in enumerate(doc["buckets"]):
    bugs = collections.Counter(truth(c["core"]) for c in b["crashes"])
    for bug, n in bugs.items():
        per_bug[bug][k] += n
    top, n = bugs.most_common(1)[0]
    total += sum(bugs.values())
    majority_sum += n
    rows.append((k, b["signature"], dict(bugs)))

purity = majority_sum / total if total else 0.0
complete = {bug: max(c.values()) / sum(c.values()) for bug, c in per_bug.items()}
weighted = sum(max(c.values()) for c in per_bug.values()) / total if total else 0.0
if not quiet:
    for k, sig, bugs in rows:
        print(f"  bucket {k + 1:>2}: {sig}")
        print(f"             {', '.join(f'{b} ×{n}' for b, n in sorted(bugs.items()))}")
    for bug in sorted(complete):
        print(f"  {bug:<32} completeness {complete[bug]:.2f} "
              f"({len(per_bug[bug])} bucket{'s' if len(per_bug[bug]) > 1 else ''})")
print(f"crashes {total}, bugs {len(per_bug)}, buckets {len(doc['buckets'])}, "
      f"skipped {len(doc.get('skipped', []))}")
print(f"purity {purity:.3f}  completeness {weighted:.3f} (weighted), "
      f"{sum(complete.values()) / max(len(complete), 1):.3f} (mean over bugs)")
