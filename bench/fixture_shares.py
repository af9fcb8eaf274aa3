#!/usr/bin/env python3
"""Decided share per fixture crash: (must + never) / lines `csi analyze` lists (files outside
/usr), and the mean per build (scheme-level). A quick look, not the soundness test: its "viol"
column compares with exact.json by base name and without the oracle-code filter, so it also
counts crash lines and lines without code (crates/csi-dump/tests/soundness_oracle.rs decides).
usage: bench/fixture_shares.py target/release/csi fixtures/build [O0 O2 O2pre ...]"""
import json, os, subprocess, sys
csi, root = sys.argv[1], sys.argv[2]
levels = sys.argv[3:] or None
tot = {}
for p in sorted(os.listdir(root)):
    pd = os.path.join(root, p)
    if not os.path.isdir(pd): continue
    for v in sorted(os.listdir(pd)):
        d = os.path.join(pd, v)
        if v.startswith(("oracle", "exact")) or not os.path.isfile(os.path.join(d, "core")): continue
        lvl = v.rsplit("-", 1)[1]
        if levels and lvl not in levels: continue
        exe = os.path.join(d, p)
        r = subprocess.run([csi, "analyze", "--exe", exe, "--core", os.path.join(d, "core"), "--format", "json"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{p}/{v}: analyze failed: {r.stderr.strip()[:200]}"); continue
        an = json.loads(r.stdout)
        ex_path = os.path.join(pd, "oracle-" + lvl, "exact.json")
        ex = json.load(open(ex_path)) if os.path.exists(ex_path) else {}
        exb = {}
        for f, ls in ex.items(): exb.setdefault(os.path.basename(f), set()).update(ls)
        c = {"must": 0, "may": 0, "never": 0}; viol = []
        for f, st in an.get("lines", {}).items():
            if f.startswith("/usr"): continue
            ran = exb.get(os.path.basename(f), set())
            for k in c: c[k] += len(st.get(k, []))
            viol += [f"{f}:{l} never" for l in st.get("never", []) if l in ran]
            viol += [f"{f}:{l} must" for l in st.get("must", []) if ex and l not in ran]
        t = sum(c.values())
        share = (c["must"] + c["never"]) / t if t else 0
        key = v
        tot.setdefault(key, []).append(share)
        print(f"{p:16} {v:14} must {c['must']:3} may {c['may']:3} never {c['never']:3} decided {100*share:5.1f}%  viol {len(viol)} {' '.join(viol[:4])}")
for k, s in sorted(tot.items()):
    print(f"== {k}: mean decided {100*sum(s)/len(s):.1f}% over {len(s)}")
