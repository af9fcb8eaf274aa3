#!/usr/bin/env bash
# Analysis speed on a large program (issue 17): Debian's sqlite3 (the 250k-line amalgamation,
# its shell linked against libsqlite3.so — the default build) built by its own configure/make
# with csi-cc at -O0 and -O2, crashed deep in the engine at the N-th allocation (the
# bench/real LD_PRELOAD shim) while running a SQL workload, then `csi analyze` timed with
# /usr/bin/time (wall, max RSS), best of 3.
#
# Usage: bench/sqlite/run.sh           (as root the first time: apt-get source, tcl)
# Env:   SQLITE_DIR=/work/scratch/sqlite  scratch dir
#        OPTS="O0 O2"  (also O2post: after optimization)  NS="1000 2000 4000 6000 8000" (the workload makes ~8,200 allocations)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
W="${SQLITE_DIR:-/work/scratch/sqlite}"
OPTS="${OPTS:-O0 O2}"
export -n OPTS NS  # sqlite's Makefile reads $(OPTS) from the environment
NS="${NS:-1000 2000 4000 6000 8000}"
CSI_CC="${CSI_CC:-$ROOT/crates/csi-cc/target/release/csi-cc}"
CSI="${CSI:-$ROOT/target/release/csi}"
SHIM="$W/crashshim.so"
die() { echo "sqlite/run.sh: $*" >&2; exit 1; }
mkdir -p "$W" && cd "$W" || die "no $W"
command -v tclsh >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcl >/dev/null ||
    die "tclsh (Debian tcl) is needed to make the amalgamation"
src=$(ls -d "$W"/sqlite3-*/ 2>/dev/null | head -1)
if [ -z "$src" ]; then
    apt-get source sqlite3 >/dev/null 2>&1 || die "apt-get source sqlite3 failed (deb-src enabled?)"
    src=$(ls -d "$W"/sqlite3-*/ | head -1)
fi
[ -f "$SHIM" ] && [ "$SHIM" -nt "$ROOT/bench/real/crashshim.c" ] ||
    clang-19 -O2 -gdwarf-4 -fPIC -shared -o "$SHIM" "$ROOT/bench/real/crashshim.c" -ldl || die "shim"
# The workload (shared with bench/real): tables, an index, joins, aggregates, a recursive CTE.
cp "$ROOT/bench/real/workloads/workload.sql" "$W/workload.sql"
# opt_flags OPT: O0, O2 (csi-cc's default: instrumented before optimization), O2post
# (--csi-instrument=after-optimization, the default before issue 17).
opt_flags() {
    case "$1" in
    O2post) echo "-O2 --csi-instrument=after-optimization" ;;
    O2pre) echo "-O2 --csi-instrument=before-optimization" ;;
    *) echo "-$1" ;;
    esac
}
for opt in $OPTS; do
    b="$W/build-$opt"
    if [ ! -f "$b/.ok" ]; then
        rm -rf "$b" && mkdir -p "$b"
        echo "== build sqlite3 csi-$opt (configure && make sqlite3)" >&2
        ( cd "$b" && "$src/configure" CC="$CSI_CC" CFLAGS="-g $(opt_flags "$opt")" --disable-tcl \
            --disable-readline >configure.log 2>&1 && /usr/bin/time -v make -j2 sqlite3 >make.log 2>&1 ) ||
            die "build $opt failed: see $b/configure.log, $b/make.log"
        touch "$b/.ok"
    fi
    exe="$b/.libs/sqlite3"; [ -x "$exe" ] || exe="$b/sqlite3"
    for n in $NS; do
        r="$W/runs/$opt/N$n"; mkdir -p "$r"; rm -f "$r/core"
        ( cd "$r" && ulimit -c unlimited && env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$b/.libs" \
            LD_PRELOAD="$SHIM" CRASH_N="$n" "$exe" :memory: <"$W/workload.sql" >stdout 2>stderr )
        [ -f "$r/core" ] || { echo "| $opt | $n | no crash (fewer allocations?) |"; continue; }
        best=""; rss=""
        for k in 1 2 3; do
            /usr/bin/time -f "%e %M" -o "$r/time" "$CSI" analyze --exe "$exe" --core "$r/core" \
                --format json >"$r/analyze.json" 2>"$r/analyze.err"
            read -r t m <"$r/time"
            if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; rss=$m; fi
        done
        frames=$(python3 -c "import json;d=json.load(open('$r/analyze.json'));t=d.get('threads',[{}])[0];print(len(t.get('frames',[])))" 2>/dev/null)
        echo "| $opt | $n | ${best} s | $((rss / 1024)) MB | $frames frames |"
    done
done
