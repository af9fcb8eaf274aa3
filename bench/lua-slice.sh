#!/usr/bin/env bash
# Restricted slicing on a real program: builds Lua 5.4 (Debian's lua5.4 source) with csi-cc
# (-O2, realistic scheme) into a scratch dir, embeds it in bench/lua/crash_host.c (a C function
# that forgets lua_tostring can return NULL), crashes it, then prints `csi slice --stats`
# (the dissertation's Figs. 5.12-5.13 numbers) and the phase timings of slice_timing.
#
# Usage: bench/lua-slice.sh [scratch-dir]   (needs deb-src in the apt sources, LLVM 19)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
W="${1:-/tmp/csi-lua-slice}"
T="${CARGO_TARGET_DIR:-$ROOT/target}"
CSI_CC="${CSI_CC:-${CARGO_TARGET_DIR:-$ROOT/crates/csi-cc/target}/release/csi-cc}"
[ -x "$CSI_CC" ] || (cd "$ROOT/crates/csi-cc" && LLVM_SYS_191_PREFIX=/usr/lib/llvm-19 cargo build --release -q)
(cd "$ROOT" && cargo build --release -q -p csi-cli && cargo build --release -q -p csi-dump --example slice_timing)
mkdir -p "$W" && cd "$W"
[ -f lua5.4_*.orig.tar.gz ] || apt-get source --download-only lua5.4 >/dev/null
rm -rf o && mkdir o && tar xzf lua5.4_*.orig.tar.gz -C o
SRC=$(ls -d "$W"/o/*/)
make -C "$SRC/src" a CC="$CSI_CC -std=gnu99" MYCFLAGS="-DLUA_USE_LINUX" -j2 >build.log 2>&1
"$CSI_CC" -O2 -I"$SRC/src" "$ROOT/bench/lua/crash_host.c" "$SRC/src/liblua.a" -lm -ldl -o host 2>>build.log
rm -f core core.*
( ulimit -c unlimited; exec env -i PATH=/usr/bin:/bin ./host ) >stdout 2>stderr || true
[ -f core ] || gdb -batch -nx -ex run -ex "generate-core-file core" -ex kill ./host >/dev/null 2>&1 || true
[ -f core ] || { echo "no core in $W" >&2; exit 1; }
"$T/release/csi" slice --exe host --core core --stats | sed -n '1,2p;/slice sizes/,$p'
"$T/release/examples/slice_timing" host core
/usr/bin/time -f "csi slice end to end: %e s, max RSS %M KB" "$T/release/csi" slice --exe host --core core --format json >/dev/null
