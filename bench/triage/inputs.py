#!/usr/bin/env python3
"""Inputs of the triage corpus: `program<TAB>label<TAB>input` lines on stdout, where label is
the seeded bug the input triggers (see bugs.md) or `pass` for a run that exits normally.
Deterministic (fixed seed). Usage: inputs.py [CRASHES_PER_BUG] [PASSING_PER_PROGRAM]"""
import random
import sys

per_bug = int(sys.argv[1]) if len(sys.argv) > 1 else 12
passing = int(sys.argv[2]) if len(sys.argv) > 2 else 50
rng = random.Random(22)
out = []


def emit(prog, label, text):
    assert "\t" not in text and "\n" not in text
    out.append(f"{prog}\t{label}\t{text}")


# ---- calc ---------------------------------------------------------------------------------
def num():
    return str(rng.randint(1, 99))


def operand():
    # Known variables appear in crashing and passing inputs alike.
    return rng.choice([num(), num(), "x", "y", "z"])


def calc_prefix():
    """A well-formed expression leaving exactly one value on the stack."""
    toks = [operand()]
    for _ in range(rng.randint(0, 3)):
        toks += [operand(), rng.choice("+-*")]
    return toks


for i in range(per_bug):
    # The divisor becomes zero directly or by arithmetic; `/` and `%` crash in different
    # functions (same bad state, two crash sites).
    zero = rng.choice([["0"], ["x", "x", "-"], ["5", "5", "-"]])
    emit("calc", "zero-divisor", " ".join(calc_prefix() + zero + [rng.choice("/%")]))
for i in range(per_bug):
    # An operator with fewer than two operands on the stack.
    toks = calc_prefix() if rng.random() < 0.5 else []
    toks += [rng.choice("+-*/%")] * (1 if toks else rng.randint(1, 2))
    emit("calc", "underflow", " ".join(toks))
for i in range(per_bug):
    # An unknown variable (pushed as NULL) used by an operator: same line as underflow.
    unknown = rng.choice(["w", "count", "k", "total", "n"])
    toks = calc_prefix() + [unknown, rng.choice("+-*")]
    emit("calc", "unknown-var", " ".join(toks))
for i in range(passing):
    toks = calc_prefix()
    if rng.random() < 0.4:
        toks += [num(), rng.choice("/%")]
    emit("calc", "pass", " ".join(toks))

# ---- inventory ----------------------------------------------------------------------------
NAMES = ["bolt", "nut", "gear", "axle", "spring", "cog", "pin", "rivet"]


def adds(k):
    names = rng.sample(NAMES, k)
    return [f"add {n} {rng.randint(1, 50)}" for n in names], names


for i in range(per_bug):
    # A deleted item's slot (NULL name) is read: by find (get/add/del of a later item) or
    # by sum (two crash sites, one bad state).
    cmds, names = adds(rng.randint(2, 5))
    victim = names[0]
    cmds.append(f"del {victim}")
    later = [n for n in names if n != victim]
    cmds.append(rng.choice([f"get {rng.choice(later)}", "sum", f"add {rng.choice(later)} 3"]))
    emit("inventory", "deleted-slot", ";".join(cmds))
for i in range(per_bug):
    cmds, names = adds(rng.randint(1, 4))
    missing = rng.choice([n for n in NAMES if n not in names])
    if rng.random() < 0.5:
        cmds.append("max")
    cmds.append(f"get {missing}")
    emit("inventory", "missing-item", ";".join(cmds))
for i in range(per_bug):
    # max with no live item: nothing added (or only unknown commands) before it.
    cmds = rng.choice([[], ["list"], ["help"], ["get"]])
    cmds = [c for c in cmds if c != "get"]
    cmds.append("max")
    emit("inventory", "empty-max", ";".join(cmds))
for i in range(per_bug):
    cmds, names = adds(rng.randint(0, 3))
    if rng.random() < 0.5 and names:
        cmds.append(f"get {names[0]}")
    cmds.append(f"add {rng.choice(NAMES)}")
    emit("inventory", "no-qty", ";".join(cmds))
for i in range(passing):
    cmds, names = adds(rng.randint(1, 5))
    for n in rng.sample(names, rng.randint(0, len(names))):
        cmds.append(rng.choice([f"get {n}", "max", f"add {n} {rng.randint(1, 9)}"]))
    if rng.random() < 0.5:
        cmds.append("sum")
    tail = cmds[len(names):]
    rng.shuffle(tail)
    cmds[len(names):] = tail
    if rng.random() < 0.3:
        # Deleting is fine as long as nothing reads the table afterwards.
        cmds.append(f"del {rng.choice(names)}")
    emit("inventory", "pass", ";".join(cmds))

# ---- config -------------------------------------------------------------------------------
KEYS = ["port", "retries", "size", "name", "mode", "level"]


def section(name, entries):
    lines = [f"[{name}]"]
    for _ in range(entries):
        v = rng.choice([str(rng.randint(0, 999)), "fast", '"quoted text"', "on"])
        lines.append(f"{rng.choice(KEYS)} = {v}")
    return lines


def sec_name():
    return rng.choice(["net", "disk", "ui", "log", "db"])


for i in range(per_bug):
    lines = section(sec_name(), rng.randint(0, 2))
    if not lines[1:]:
        lines.append("port = 1")
    lines.append(f'{rng.choice(KEYS)} = "unterminated {rng.randint(1, 9)}')
    emit("config", "unterminated-quote", "|".join(lines))
for i in range(per_bug):
    lines = section(sec_name(), rng.randint(1, 2)) if rng.random() < 0.5 else []
    lines += section(".".join(sec_name() for _ in range(rng.randint(4, 5))), 1)
    emit("config", "too-deep", "|".join(lines))
for i in range(per_bug):
    lines = section(sec_name(), rng.randint(1, 3))
    lines += section(sec_name(), 0)
    if rng.random() < 0.5:
        lines += section(sec_name(), 1)
    emit("config", "empty-section", "|".join(lines))
for i in range(passing):
    lines = []
    for _ in range(rng.randint(1, 3)):
        depth = rng.randint(1, 3)
        lines += section(".".join(sec_name() for _ in range(depth)), rng.randint(1, 3))
    if rng.random() < 0.3:
        lines.insert(rng.randint(0, len(lines)), "# comment")
    emit("config", "pass", "|".join(lines))

print("\n".join(out))
