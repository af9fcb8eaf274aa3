#!/usr/bin/env bash
# What tracing costs when threads run the same code (issue 21): zstd compressing with two
# worker threads (`-T2`), each running the same match finder over its own part of the input,
# with the zstd builds run.sh made. Not a test.
#
# Every coverage probe writes a byte of its function's global array; two threads running the
# same functions write the same cache lines, and with plain stores every write takes the line
# from the other core. Checked stores (`--csi-probe-stores=checked`, the default) write a byte
# only while it is 0, so the lines stay shared once set. This measures both.
#
# First a microbenchmark (contention.c: THREADS threads calling the same two small functions),
# built here with CSI_CC (default: this tree's csi-cc) per scheme with checked and plain
# stores, timed with one thread and with THREADS; then zstd.
#
# Usage: crates/csi-cc/bench/suite/threads.sh SCRATCH_DIR   (run.sh's, with zstd built)
# Environment: CONFIGS (default: those of run.sh's configurations that were built, from
#   "plain copy cc ccp bb bbp realistic"), ROUNDS (default 8), INPUT (default gen-20.dat, the
#   20 MB file run.sh generated), THREADS (default 2).
# Prints per configuration: CPU (user + sys) and wall time, each the mean of the fastest
# quarter of ROUNDS interleaved rounds, and their ratios to plain's.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
W="${1:?usage: threads.sh SCRATCH_DIR}"
CSI="${CSI_CC:-$HERE/../../target/release/csi-cc}"
ROUNDS="${ROUNDS:-8}"
THREADS="${THREADS:-2}"
INPUT="$W/${INPUT:-gen-20.dat}"
[ -f "$INPUT" ] || { echo "threads.sh: no $INPUT (run run.sh with zstd first)" >&2; exit 1; }
read -r -a CONFIGS <<<"${CONFIGS:-plain copy cc ccp bb bbp realistic}"
built=()
for v in "${CONFIGS[@]}"; do
  [ -x "$W/zstd/$v/programs/zstd" ] && built+=("$v")
done
[ "${built[0]:-}" = plain ] || { echo "threads.sh: no plain zstd build in $W/zstd" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# The microbenchmark: wall time of 1 and THREADS threads (each thread does the same work, so
# on THREADS idle cores plain code takes as long with THREADS as with 1), best of 3.
clang-19 -O2 -g "$HERE/contention.c" -o "$out/c-plain" -lpthread
for s in cc bb fc; do
  for st in checked plain; do
    "$CSI" --csi-scheme=$s --csi-probe-stores=$st -O2 "$HERE/contention.c" -o "$out/c-$s-$st" -lpthread
  done
done
printf 'contention.c, 10^8 calls per thread: wall seconds (best of 3) with 1 and %s threads\n' "$THREADS"
printf '%-12s %8s %8s %8s\n' build 1 "$THREADS" ratio
# best BUILD THREADS: the fastest of three wall times.
best() { for _ in 1 2 3; do /usr/bin/time -f %e "$out/c-$1" "$2" 100000000 2>&1 >/dev/null; done | sort -n | head -1; }
for b in plain cc-checked cc-plain bb-checked bb-plain fc-checked fc-plain; do
  one=$(best "$b" 1); many=$(best "$b" "$THREADS")
  printf '%-12s %8s %8s %8.2f\n' "$b" "$one" "$many" "$(echo "$many / $one" | bc -l)"
done
echo
# The output must round-trip (and equal plain's: the compressed bytes do not depend on timing
# with a fixed number of workers).
for v in "${built[@]}"; do
  b="$W/zstd/$v/programs/zstd"
  "$b" -q -12 -T"$THREADS" -c <"$INPUT" >"$out/$v.zst" &&
    "$b" -q -d -c <"$out/$v.zst" | cmp -s - "$INPUT" ||
    { echo "threads.sh: $v does not round-trip" >&2; exit 1; }
  cmp -s "$out/plain.zst" "$out/$v.zst" || echo "note: $v's output differs from plain's" >&2
done
TIMEFORMAT='%3R %3U %3S'
for i in $(seq "$ROUNDS"); do
  for v in "${built[@]}"; do
    { time "$W/zstd/$v/programs/zstd" -q -12 -T"$THREADS" -c <"$INPUT" >/dev/null; } 2>>"$out/$v.t"
  done
done
fastest() { sort -n | awk '{a[NR]=$1} END {k=int(NR/4); if (k<1) k=1; for(i=1;i<=k;i++) s+=a[i]; printf "%.4f", s/k}'; }
printf 'zstd -12 -T%s, %s, %s rounds: CPU (user+sys) and wall, fastest quarter\n' \
  "$THREADS" "$(basename "$INPUT")" "$ROUNDS"
printf '%-12s %9s %9s %7s %7s\n' config cpu_s wall_s cpu wall
for v in "${built[@]}"; do
  cpu=$(awk '{print $2 + $3}' "$out/$v.t" | fastest)
  wall=$(awk '{print $1}' "$out/$v.t" | fastest)
  [ "$v" = plain ] && { pc=$cpu; pw=$wall; }
  printf '%-12s %9s %9s %7.3f %7.3f\n' "$v" "$cpu" "$wall" \
    "$(echo "$cpu / $pc" | bc -l)" "$(echo "$wall / $pw" | bc -l)"
done
