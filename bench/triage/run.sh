#!/usr/bin/env bash
# The triage corpus (issue 22): builds bench/triage/src/*.c with csi-cc, runs every input of
# inputs.py — crashing ones leave one core each, in a directory named after the seeded bug
# (the ground truth, which `csi triage` never looks at) — then triages all cores and scores
# the buckets against the known bugs (score.py).
#
#   bench/triage/run.sh [OUT]     (default bench/triage/out, git-ignored)
#   CRASHES_PER_BUG=12 PASSING=50 OPT=O0 SCHEME=realistic bench/triage/run.sh
#
# Output: OUT/bin/<program>, OUT/cores/<program>/<bug>/<n>/core, OUT/triage.json, scores.
# Needs csi-cc (built if missing), clang-19, valgrind (the exact oracle), python3, gdb only
# when the kernel writes no core itself.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$(mkdir -p "${1:-$HERE/out}" && cd "${1:-$HERE/out}" && pwd)"
CSI_CC="${CSI_CC:-${CARGO_TARGET_DIR:-$ROOT/crates/csi-cc/target}/release/csi-cc}"
CSI="${CSI:-${CARGO_TARGET_DIR:-$ROOT/target}/release/csi}"
OPT="${OPT:-O0}"
# csi-cc's scheme: realistic (its default: path traces + call-site coverage), bb (basic-block
# coverage: what ran is known block by block, in crashes and passing runs alike), ...
SCHEME="${SCHEME:-realistic}"
# More csi-cc options, e.g. CSI_CC_FLAGS=--csi-instrument=before-optimization with OPT=O2.
if [ ! -x "$CSI_CC" ]; then
  (cd "$ROOT/crates/csi-cc" && LLVM_SYS_191_PREFIX=/usr/lib/llvm-19 cargo build --release -q)
fi
[ -x "$CSI" ] || (cd "$ROOT" && cargo build --release -q -p csi-cli)

mkdir -p "$OUT/bin"
for p in calc inventory config; do
  # Relative source paths and -fdebug-compilation-dir=. keep DWARF and metadata relative
  # (src/calc.c), as the fixtures do.
  (cd "$HERE" && "$CSI_CC" "--csi-scheme=$SCHEME" ${CSI_CC_FLAGS:-} "-$OPT" -g -fdebug-compilation-dir=. -o "$OUT/bin/$p" "src/$p.c")
done

# Runs OUT/bin/$1 with argument $2 in the current directory; a crash leaves `core` here, a
# passing run its coverage (`*.csicov`, csi-cc's CSI_COVERAGE_OUT).
run_one() {
  rm -f core core.* ./*.csicov
  set +e
  # A clean environment: the core keeps it.
  # (The shell's own "core dumped" message goes to /dev/null with the program's stderr kept.)
  { ( ulimit -c unlimited; exec env -i PATH=/usr/bin:/bin LC_ALL=C CSI_COVERAGE_OUT="$PWD" "$OUT/bin/$1" "$2" ) >stdout 2>stderr; } 2>/dev/null
  echo $? >exit
  set -e
  local status; status="$(cat exit)"
  if [ "$status" -ge 128 ] && [ ! -f core ]; then
    # The kernel wrote no core (core_pattern pipes elsewhere): let gdb write one.
    gdb -batch -nx -ex run -ex "generate-core-file core" -ex kill --args "$OUT/bin/$1" "$2" \
      >/dev/null 2>&1 || true
  fi
}

rm -rf "$OUT/cores" "$OUT/passing-runs"
declare -A seen=()
unexpected=0
while IFS=$'\t' read -r prog label input; do
  key="$prog/$label"
  n="${seen[$key]:-0}"
  seen[$key]=$((n + 1))
  if [ "$label" = pass ]; then
    d="$OUT/passing-runs/$prog/$(printf %03d "$n")"
  else
    d="$OUT/cores/$prog/$label/$(printf %03d "$n")"
  fi
  mkdir -p "$d"
  printf '%s\n' "$input" >"$d/input"
  (cd "$d" && run_one "$prog" "$input")
  status="$(cat "$d/exit")"
  if [ "$label" = pass ] && [ "$status" != 0 ]; then
    echo "corpus: passing input of $prog exited $status: $input" >&2; unexpected=1
  elif [ "$label" = pass ] && ! ls "$d"/*.csicov >/dev/null 2>&1; then
    echo "corpus: passing run of $prog wrote no coverage file: $input" >&2; unexpected=1
  elif [ "$label" != pass ] && [ ! -f "$d/core" ]; then
    echo "corpus: $prog/$label input left no core (exit $status): $input" >&2; unexpected=1
  fi
done < <(python3 "$HERE/inputs.py" "${CRASHES_PER_BUG:-12}" "${PASSING:-50}")
[ "$unexpected" = 0 ] || { echo "corpus: inputs did not behave as labelled" >&2; exit 1; }

# The exact oracle (as fixtures/build.sh makes it): the same programs built with plain clang
# -O0, each crashing input run under callgrind, whose per-line instruction counts say which
# lines ran; the frames valgrind prints at the fatal signal add the lines stopped in.
CLANG="${CSI_CLANG:-clang-19}"
for p in calc inventory config; do
  (cd "$HERE" && "$CLANG" -O0 -gdwarf-4 -fdebug-compilation-dir=. -o "$OUT/bin/$p.exact" "src/$p.c")
done
rm -rf "$OUT/oracle"
# Crashing runs (OUT/cores/...) and passing runs (OUT/passing-runs/...) alike.
for d in $( (cd "$OUT" && find cores passing-runs -name input) | sed 's|/input$||' | sort); do
  prog="${d#*/}"; prog="${prog%%/*}"
  o="$OUT/oracle/$d"
  mkdir -p "$o"
  (
    cd "$o"
    { ( ulimit -c 0; exec env -i PATH=/usr/bin:/bin LC_ALL=C valgrind --tool=callgrind \
        --dump-instr=yes --dump-line=yes --callgrind-out-file=callgrind.out \
        "$OUT/bin/$prog.exact" "$(cat "$OUT/$d/input")" ) >/dev/null 2>vg.stderr; } 2>/dev/null || true
    python3 "$ROOT/bench/real/callgrind_lines.py" --root "$HERE" callgrind.out >exact-raw.json
    python3 - exact-raw.json >coverage.json <<'PY'
import json, re, sys
out = {f: set(l) for f, l in json.load(open(sys.argv[1]))["files"].items()}
on = False
for ln in open("vg.stderr"):
    if "Process terminating with default action of signal" in ln:
        on = True
        continue
    m = re.search(r"(?:at|by) 0x[0-9A-Fa-f]+: .* \(([^():]+):(\d+)\)$", ln.rstrip()) if on else None
    if m:
        out.setdefault(m.group(1), set()).add(int(m.group(2)))
json.dump({f: {str(l): 1 for l in sorted(ls)} for f, ls in out.items()}, sys.stdout)
PY
  )
done

cores=$(find "$OUT/cores" -name core | wc -l)
echo "corpus: $cores cores of $(ls "$OUT/cores" | wc -l) programs in $OUT/cores"
/usr/bin/time -f "triage: %e s wall, %M KB max RSS" \
  "$CSI" triage --format json "$OUT/cores" >"$OUT/triage.json"
echo "passing: $(find "$OUT/passing-runs" -name '*.csicov' | wc -l) coverage files"
/usr/bin/time -f "triage --passing: %e s wall, %M KB max RSS" \
  "$CSI" triage --format json --passing "$OUT/passing-runs" --suspicious 100000 "$OUT/cores" >"$OUT/triage-passing.json"
python3 "$HERE/rank.py" "$OUT/triage-passing.json" "$OUT/cores" "$HERE/src"
python3 "$HERE/score.py" "$OUT/triage.json" "$OUT/cores"
for k in 0 1 2 3; do
  "$CSI" triage --format json --refine-frames "$k" "$OUT/cores" >"$OUT/triage-k$k.json"
  echo "--refine-frames $k: $(python3 "$HERE/score.py" "$OUT/triage-k$k.json" "$OUT/cores" --quiet | tail -1)"
done
python3 "$HERE/oracle.py" "$OUT/triage.json" "$OUT/cores" "$OUT/oracle"
python3 "$HERE/oracle.py" "$OUT/triage-passing.json" "$OUT/cores" "$OUT/oracle" "$OUT/passing-runs"
