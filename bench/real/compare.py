#!/usr/bin/env python3
"""Soundness of one `csi analyze` result against the exact oracle of the same crash.

Usage: compare.py --root CSI_BUILD_DIR --oracle ORACLE_RUN_DIR --run CSI_RUN_DIR > compare.json

The oracle (callgrind_lines.py, executed.json) lists every (file, line) with an executed
instruction in the oracle build's run (-O0 -gdwarf-4, same source, same input, same crash N).
csi's `lines` (file -> must/may/never) are checked: a `never` line that ran and a `must` line
that did not are violations. csi names files as DWARF does (often relative to the compile
directory), so each name is matched to the unique path under the build directory that ends
with it, and both sides are compared relative to their build directories."""
import json
import os
import re
import sys

SOURCE_EXT = (".c", ".h", ".cpp", ".hpp", ".cc", ".hh", ".cxx", ".inc", ".y", ".l")


def args():
    a, out = sys.argv[1:], {}
    while a:
        out[a[0]] = a[1]
        a = a[2:]
    return out


def source_index(root):
    """basename -> paths (relative to root) of source files under root."""
    idx = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(SOURCE_EXT):
                rel = os.path.relpath(os.path.join(d, n), root)
                idx.setdefault(n, []).append(rel)
    return idx


def resolve(name, root, idx):
    """A DWARF file name of the csi build -> the path relative to its build dir (or absolute)."""
    p = os.path.normpath(name)
    if os.path.isabs(p):
        return p[len(root) + 1:] if p.startswith(root + "/") else p
    cands = [c for c in idx.get(os.path.basename(p), []) if c == p or c.endswith("/" + p)]
    if len(cands) == 1:
        return cands[0]
    # Ambiguous (same relative name in several directories): prefer the shortest, which is the
    # one a compile in the top directory would name. Reported in `unresolved` when none.
    return sorted(cands, key=len)[0] if cands else p


def time_stats(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for ln in f:
            if "Elapsed (wall clock)" in ln:
                t = ln.rsplit(" ", 1)[1].strip().split(":")
                out["wall_s"] = sum(float(x) * 60 ** i for i, x in enumerate(reversed(t)))
            elif "User time (seconds)" in ln or "System time (seconds)" in ln:
                out["cpu_s"] = out.get("cpu_s", 0.0) + float(ln.rsplit(" ", 1)[1])
            elif "Maximum resident set size" in ln:
                out["rss_kb"] = int(ln.rsplit(" ", 1)[1])
            elif "Exit status" in ln:
                out["exit"] = int(ln.rsplit(" ", 1)[1])
    return out


def frames_of(path, root_hint):
    """Program frames (with a source file) of a frames.txt, as (function, basename, line)."""
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for ln in f:
                p = ln.rstrip("\n").split("\t")
                if len(p) == 3 and p[1] and not p[1].startswith("/usr/") and "crashshim" not in p[1] \
                        and not re.search(r"(^|/)(sysdeps|nptl|signal|malloc)/", p[1]):
                    out.append((p[0], os.path.basename(p[1]), p[2]))
    return out


def frames_match(csi_frames, oracle_frames):
    """Same program state: the innermost program frame is the same function and the csi build's
    functions are the oracle's in order (tail calls at -O2 may drop some)."""
    fc, fo = frames_of(csi_frames, None), frames_of(oracle_frames, None)
    return bool(fc) and bool(fo) and fc[0][0] == fo[0][0] and is_subsequence([f[0] for f in fc], [f[0] for f in fo])


def main():
    if sys.argv[1:2] == ["--match"]:
        sys.exit(0 if frames_match(sys.argv[2], sys.argv[3]) else 1)
    o = args()
    root = os.path.normpath(o["--root"])
    run, orc = o["--run"], o["--oracle"]
    res = {"run": run, "oracle": orc}
    res["analyze"] = time_stats(os.path.join(run, "analyze.time"))
    res["show"] = time_stats(os.path.join(run, "show.time"))
    # Same program state at the crash: the csi build's and the oracle's program frames.
    fc, fo = frames_of(os.path.join(run, "frames.txt"), root), frames_of(os.path.join(orc, "frames.txt"), None)
    # At -O2 tail calls drop frames (l_alloc -> realloc, f_call -> luaD_callnoyield): the csi
    # build's functions must be the oracle's in order, some possibly missing.
    res["frames_same_functions"] = bool(fc) and is_subsequence([f[0] for f in fc], [f[0] for f in fo])
    res["frames_same_lines"] = fc == fo
    res["frames_csi"], res["frames_oracle"] = fc, fo
    try:
        with open(os.path.join(orc, "executed.json")) as f:
            ex = json.load(f)
    except (OSError, ValueError) as e:
        res["error"] = "no oracle: %s" % e
        json.dump(res, sys.stdout, indent=1)
        return
    vgf = [f[0] for f in ex.get("vg_frames", [])]
    res["valgrind_same_stack"] = bool(vgf) and [f[0] for f in frames_of_list(ex.get("frames", []))] == \
        [f for f in vgf if f in {g[0] for g in frames_of_list(ex.get("frames", []))}]
    try:
        with open(os.path.join(run, "analyze.json")) as f:
            an = json.load(f)
    except (OSError, ValueError) as e:
        res["error"] = "csi analyze failed: %s" % open(os.path.join(run, "analyze.err")).read().strip()[:300]
        json.dump(res, sys.stdout, indent=1)
        return
    executed = {k: set(v) for k, v in ex["files"].items()}
    idx = source_index(root)
    # Lines with an instruction in the oracle binary; a csi line outside them (a statement that
    # compiles to nothing, e.g. Lua's api_check) cannot be checked by an instruction trace.
    oroot = os.path.normpath(o["--oracle-root"])
    oidx = source_index(oroot)
    with open(o["--code"]) as f:
        code = {}
        for k, v in json.load(f).items():
            code.setdefault(resolve(k, oroot, oidx), set()).update(v)
    counts = {"must": 0, "may": 0, "never": 0}
    nocode = {"must": 0, "may": 0, "never": 0}
    violations = []
    unresolved = set()
    for name, st in an.get("lines", {}).items():
        rel = resolve(name, root, idx)
        ran = executed.get(rel)
        if ran is None and not os.path.isabs(rel) and not os.path.exists(os.path.join(root, rel)):
            unresolved.add(name)
        ran = ran or set()
        has_code = code.get(rel, set())
        for kind in counts:
            lines = st.get(kind, [])
            counts[kind] += sum(1 for ln in lines if ln in has_code)
            nocode[kind] += sum(1 for ln in lines if ln not in has_code)
        for ln in st.get("never", []):
            if ln in ran:
                violations.append({"file": rel, "line": ln, "csi": "never", "oracle": "ran"})
        for ln in st.get("must", []):
            if ln not in ran and ln in has_code:
                violations.append({"file": rel, "line": ln, "csi": "must", "oracle": "did not run"})
    total = sum(counts.values())
    res["lines_without_oracle_code"] = nocode
    th = (an.get("threads") or [{}])[0]
    res.update({
        "lines": counts, "lines_total": total,
        "decided_share": (counts["must"] + counts["never"]) / total if total else None,
        "violations": len(violations), "violation_list": violations[:200],
        "unresolved_files": sorted(unresolved),
        "frames_analysed": len(an.get("frames", [])),
        "stack_frames": len(th.get("frames", [])),
        "notices": an.get("notices", []),
    })
    json.dump(res, sys.stdout, indent=1)


def is_subsequence(a, b):
    it = iter(b)
    return all(x in it for x in a)


def frames_of_list(frames):
    return [(f[0], os.path.basename(f[1]), f[2]) for f in frames
            if len(f) == 3 and f[1] and not f[1].startswith("/usr/") and "crashshim" not in f[1]
            and not re.search(r"(^|/)(sysdeps|nptl|signal|malloc)/", f[1])]


if __name__ == "__main__":
    main()
