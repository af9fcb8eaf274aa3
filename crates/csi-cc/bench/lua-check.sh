#!/usr/bin/env bash
# Builds Lua 5.4 (Debian's lua5.4 source, upstream tarball inside it) three ways — plain clang-19,
# csi-cc realistic, csi-cc bb — in a scratch dir outside the repo, checks that bench/lua/programs.lua
# prints the same and exits the same, then runs the overhead benchmark (bench/lua/heavy.lua,
# medians of RUNS runs, ratios to plain, max RSS).
# Usage: crates/csi-cc/bench/lua-check.sh [scratch-dir]   (needs deb-src in apt sources)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CSI="${CSI_CC:-$HERE/../target/release/csi-cc}"
W="${1:-/tmp/csi-lua}"
RUNS="${RUNS:-5}"
mkdir -p "$W" && cd "$W"
[ -f lua5.4_*.orig.tar.gz ] || apt-get source --download-only lua5.4 >/dev/null
rm -rf o plain realistic bb && mkdir o && tar xzf lua5.4_*.orig.tar.gz -C o
SRC=$(ls -d o/*/)
for v in plain realistic bb; do cp -r "$SRC" "$v"; done
(cd plain/src && make -s -j2 linux CC="clang-19 -g" >/dev/null)
(cd realistic/src && make -s -j2 linux CC="$CSI --csi-scheme=realistic" >/dev/null)
(cd bb/src && make -s -j2 linux CC="$CSI --csi-scheme=bb" >/dev/null)
status=0
for v in plain realistic bb; do
  set +e; "./$v/src/lua" "$HERE/lua/programs.lua" >"$v.out" 2>&1; echo "exit=$?" >>"$v.out"; set -e
done
for v in realistic bb; do
  if cmp -s plain.out "$v.out"; then echo "lua programs: $v output identical to plain"; else echo "lua programs: $v DIFFERS"; diff plain.out "$v.out" || true; status=1; fi
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A T R
for v in plain realistic bb; do
  : >"$v.times"; : >"$v.rss"
  for i in $(seq "$RUNS"); do
    /usr/bin/env time -f "%e %M" -o t.txt "./$v/src/lua" "$HERE/lua/heavy.lua" >/dev/null 2>&1 || \
      { s=$(date +%s.%N); "./$v/src/lua" "$HERE/lua/heavy.lua" >/dev/null; e=$(date +%s.%N); echo "$(echo "$e - $s" | bc) 0" >t.txt; }
    awk '{print $1}' t.txt >>"$v.times"; awk '{print $2}' t.txt >>"$v.rss"
  done
  T[$v]=$(median <"$v.times"); R[$v]=$(median <"$v.rss")
done
for v in plain realistic bb; do
  echo "$v: median ${T[$v]} s, max RSS ${R[$v]} KiB, time ratio $(echo "scale=3; ${T[$v]} / ${T[plain]}" | bc)"
done
exit $status
