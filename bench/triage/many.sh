#!/usr/bin/env bash
# Triage throughput on a Lua-sized program (issue 22: 1,000 cores in < 60 s on 2 CPUs): the
# crash of bench/shlib/lua-shlib.sh (Debian's Lua 5.4 as a csi-cc -O2 liblua.so, 13.6k graph
# nodes, a host crashing inside it), N copies (hard links) of its core, `csi triage` with the
# default jobs and with one. Prints wall time, cores/s and max RSS. Not a test; needs deb-src.
#
#   bench/triage/many.sh [N=1000] [scratch-dir]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
N="${1:-1000}"
W="${2:-/tmp/csi-lua-shlib}"
CSI="${CSI:-${CARGO_TARGET_DIR:-$ROOT/target}/release/csi}"
[ -f "$W/core" ] && [ -x "$W/host" ] || "$ROOT/bench/shlib/lua-shlib.sh" "$W" >/dev/null
[ -x "$CSI" ] || (cd "$ROOT" && cargo build --release -q -p csi-cli)
rm -rf "$W/many"
for i in $(seq 1 "$N"); do mkdir -p "$W/many/$i"; ln "$W/core" "$W/many/$i/core"; done
for jobs in "" 1; do
  /usr/bin/time -f "  %e s wall, %U s user, %M KB max RSS" \
    "$CSI" triage ${jobs:+--jobs $jobs} "$W/many" | head -1
done
