#!/usr/bin/env bash
# Compressed-core benchmark: the core-load program (bench/bigcore.c, csi-cc -O2) touches
# MiB of memory (default 2048) and crashes; its core is compressed with zstd as
# systemd-coredump stores it (level 3, the zstd default), and `csi analyze --core core.zst`
# is timed: wall time to the first (whole) answer and max RSS from `/usr/bin/time -v`,
# the median of RUNS runs, next to the plain core's.
# FILL=random fills the memory with incompressible data (default: one byte value, which
# compresses ~25000:1 like untouched pages do).
# Usage: [FILL=random] bench/compressed-core-load.sh [MiB]   (needs csi-cc built; see README)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MIB="${1:-2048}"
RUNS="${RUNS:-3}"
CSI_CC="${CSI_CC:-${CARGO_TARGET_DIR:-$ROOT/crates/csi-cc/target}/release/csi-cc}"
CSI="${CARGO_TARGET_DIR:-$ROOT/target}/release/csi"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
[ -x "$CSI" ] || cargo build --release -q --manifest-path "$ROOT/Cargo.toml" -p csi-cli
cd "$W"
"$CSI_CC" -O2 -o bigcore "$ROOT/bench/bigcore.c"
( ulimit -c unlimited; ./bigcore "$MIB" "${FILL:-pattern}" >/dev/null 2>&1 || true )
[ -f core ] || { echo "no core written (ulimit/core_pattern?)"; exit 1; }
zstd -q -3 -T0 core -o core.zst
echo "core: $(du -h --apparent-size core | cut -f1) plain, $(du -h --apparent-size core.zst | cut -f1) zstd"
measure() { # $1 = core file; prints "median-seconds max-rss-KiB"
  : >times
  for _ in $(seq "$RUNS"); do
    sync; /usr/bin/time -v -o t.txt "$CSI" analyze --exe bigcore --core "$1" --format json >out.json
    grep -q '"global"' out.json || { echo "no analysis output for $1"; exit 1; }
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' t.txt)
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' t.txt)
    echo "$wall $rss" >>times
  done
  sort -n times | awk '{t[NR]=$1; r[NR]=$2} END {m=int((NR+1)/2); printf "%.2f s, max RSS %d KiB (%.0f MB)\n", t[m], r[m], r[m]*1024/1e6}'
}
echo "plain core: $(measure core)"
echo "zstd core:  $(measure core.zst)"
