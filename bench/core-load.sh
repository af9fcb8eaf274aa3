#!/usr/bin/env bash
# Core-load benchmark: a csi-cc-built program that maps and touches ~1 GiB, then crashes.
# Prints the core size, the median wall time of `csi analyze --exe --core --format json`
# over RUNS runs, and its max RSS. Target: < 0.5 s (the core is read lazily via mmap).
# Usage: bench/core-load.sh [MiB]   (needs csi-cc built; see README)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MIB="${1:-1024}"
RUNS="${RUNS:-5}"
CSI_CC="${CSI_CC:-${CARGO_TARGET_DIR:-$ROOT/crates/csi-cc/target}/release/csi-cc}"
CSI="${CARGO_TARGET_DIR:-$ROOT/target}/release/csi"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
[ -x "$CSI" ] || cargo build --release -q --manifest-path "$ROOT/Cargo.toml" -p csi-cli
cd "$W"
"$CSI_CC" -O2 -o bigcore "$ROOT/bench/bigcore.c"
( ulimit -c unlimited; ./bigcore "$MIB" >/dev/null 2>&1 || true )
[ -f core ] || { echo "no core written (ulimit/core_pattern?)"; exit 1; }
echo "core: $(du -h --apparent-size core | cut -f1) (apparent), $(du -h core | cut -f1) on disk"
: >times
for _ in $(seq "$RUNS"); do
  /usr/bin/env time -f "%e %M" -o t.txt "$CSI" analyze --exe bigcore --core core --format json >out.json
  cat t.txt >>times
done
# %e has 10 ms resolution; also time with date for sub-10 ms runs.
s=$(date +%s%N); "$CSI" analyze --exe bigcore --core core --format json >out.json; e=$(date +%s%N)
sort -n times | awk -v runs="$RUNS" -v one="$(( (e - s) / 1000 ))" '{t[NR]=$1; r[NR]=$2} END {m=int((NR+1)/2); printf "csi analyze: median %.2f s over %d runs (one run: %d us), max RSS %d KiB\n", t[m], runs, one, r[m]}'
grep -q '"global"' out.json && echo "analysis output ok"
