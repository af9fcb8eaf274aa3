#!/usr/bin/env bash
# A real program split into an executable and an instrumented shared library: Debian's Lua 5.4
# built with csi-cc as liblua.so (-O2 -fPIC -shared), a csi-cc-built host (lua-host.c) linked
# with -llua and rpath $ORIGIN, crashing inside the library (lua_getfield with a NULL key →
# luaS_new → strcmp). Prints how many frames have a source line, are analysed and have a
# decoded path, csi show's time and csi-lsp's open time. Not a test; needs deb-src.
#
#   bench/shlib/lua-shlib.sh [scratch-dir]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
W="$(mkdir -p "${1:-/tmp/csi-lua-shlib}" && cd "${1:-/tmp/csi-lua-shlib}" && pwd)"
CSI_CC="${CSI_CC:-$ROOT/crates/csi-cc/target/release/csi-cc}"
cd "$W"
[ -d lua5.4-*/src ] || apt-get source -q lua5.4 >/dev/null
SRC="$(echo "$W"/lua5.4-*/src)"
echo '#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"' >"$SRC/lua5.4-deb-multiarch.h"
(cd "$SRC" && "$CSI_CC" -O2 -g -fPIC -shared -DLUA_USE_LINUX -o "$W/liblua.so" \
  $(ls ./*.c | grep -v -e '/lua\.c$' -e '/luac\.c$') -lm -ldl 2>/dev/null)
"$CSI_CC" -O2 -g -I "$SRC" -o host "$HERE/lua-host.c" -L. -llua -Wl,-rpath,'$ORIGIN' 2>/dev/null
rm -f core core.*
( ulimit -c unlimited; ./host >/dev/null 2>&1 ) || true
[ -f core ] || gdb -batch -nx -ex run -ex "generate-core-file core" -ex kill ./host >/dev/null 2>&1
(cd "$ROOT" && cargo build --release -q -p csi-cli -p csi-lsp --examples)
start=$(date +%s.%N)
"$ROOT/target/release/csi" analyze --exe host --core core --format json >analyze.json
echo "csi analyze: $(echo "$(date +%s.%N) - $start" | bc) s"
python3 - analyze.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fr = d["threads"][0]["frames"]
lib = [f for f in fr if f["module"].endswith("liblua.so")]
print(f"{len(fr)} frames ({len(lib)} in liblua.so): "
      f"{sum(1 for f in fr if f['line'])} with a source line, "
      f"{sum(1 for f in fr if f['report_frame'] is not None)} analysed "
      f"({sum(1 for f in lib if f['report_frame'] is not None)} in the library), "
      f"{sum(1 for f in fr if f['path'])} with a decoded path; notices: {d.get('notices')}")
PY
echo "gdb: $(gdb -batch -nx -ex bt ./host core 2>/dev/null | grep '^#' | sort -u | grep -c ' at .*:[0-9]*$') frames with a source line (inlined calls counted as frames)"
"$ROOT/target/release/examples/latency" "$W/host" "$W/core" "$SRC/lvm.c"
