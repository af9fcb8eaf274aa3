#!/usr/bin/env bash
# Real-program soundness harness (issue 16, item 4): Debian's lua5.4, jq (+ oniguruma) and
# yaml-cpp, each built by its own build system four ways -- plain clang-19 at the project's
# -O2, csi-cc at -O0 and at -O2, and the oracle (clang-19 -O0 -gdwarf-4) -- the project's
# test suite compared between plain and csi builds, then deterministic crashes (crashshim.c:
# SIGSEGV at the N-th allocation) checked against an exact oracle: the oracle build crashed at
# the same N under callgrind, every executed (file, line) compared with `csi analyze`'s lines.
#
# Usage: bench/real/run.sh            (as root: it runs apt-get for sources and build deps)
# Env:   PROGRAMS="lua jq yaml-cpp"   which programs (also: sqlite — Debian's sqlite3, 250k lines;
#                                     gzip, bzip2, zstd — compressors crashed at the N-th read
#                                     inside their compression loops, crashshim's CRASH_ON=read)
#        OPTS="O0 O2"                 which csi builds to crash (O2: csi-cc's default, before
#                                     optimization since issue 17; also O2pre — the same,
#                                     explicit — and O2post: --csi-instrument=after-optimization;
#                                     bbO0, bbO2: --csi-scheme=bb at -O0 / -O2;
#                                     O2store, O2elideinner, O2elideentry, O2elideall,
#                                     O2contract: -O2 --csi-pt-loops=store,
#                                     elide-innermost, elide-after-entry, elide-all,
#                                     contract; O2 is `contract`, the
#                                     default when optimizing since session 26)
#        NS="..."                     allocation numbers to crash at (default: per program)
#        REAL_DIR=/work/scratch/real  scratch dir (sources, builds, runs)
#        CSI_CC, CSI_CXX, CSI         the tools (default: this tree's release builds)
#        TESTS=1                      run the test suites (0: skip)
#        REDO=1                       redo crash runs and analyses (builds are kept; delete
#                                     $REAL_DIR/build/<prog>/<config>* to rebuild one)
#        RECOMPARE=1                  only redo compare.py on existing analyses
#        REANALYZE=1                  redo csi analyze/show and compare.py on existing crashes
#        RESULTS=FILE                 where the Markdown report goes (default bench/real/RESULTS.md)
# Output: a table on stdout and in bench/real/RESULTS.md; per-crash details under
#         $REAL_DIR/runs/<program>/<config>/N<n>/ (core, analysis json, oracle lines, compare).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
W="${REAL_DIR:-/work/scratch/real}"
PROGRAMS="${PROGRAMS:-lua jq yaml-cpp}"
OPTS="${OPTS:-O0 O2}"
TESTS="${TESTS:-1}"
REDO="${REDO:-0}"
CSI_CC="${CSI_CC:-$ROOT/crates/csi-cc/target/release/csi-cc}"
CSI_CXX="${CSI_CXX:-$(dirname "$CSI_CC")/csi-c++}"
CSI="${CSI:-$ROOT/target/release/csi}"
SHIM="$W/crashshim.so"
PY="${PYTHON:-python3}"
JOBS="${JOBS:-2}"
# Debian's hardening flags minus -ffile-prefix-map (which would rename every source path).
PROJECT_FLAGS="-g -fstack-protector-strong -Wformat"
CLEAN_PATH=/usr/bin:/bin

log() { echo "== $*" >&2; }
die() { echo "run.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- set-up (idempotent)
setup_apt() {
    local f=/etc/apt/sources.list.d/debian.sources need=()
    if [ -f "$f" ] && ! grep -q '^Types:.*deb-src' "$f"; then
        sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
        apt-get update -qq
    fi
    for p in clang-19 llvm-19-dev valgrind gdb autoconf automake libtool cmake bison flex \
        libreadline-dev libgtest-dev libgmock-dev dpkg-dev time tcl; do
        dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
    done
    if [ ${#need[@]} -gt 0 ]; then
        log "apt-get install ${need[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
            die "apt-get install ${need[*]} failed"
    fi
}

# apt-get source PKG into $W/src; the newest version can be missing from the mirror (a
# security update listed but not served), so older listed versions are tried in turn.
fetch_source() {
    local pkg="$1" dirglob="$2" v
    mkdir -p "$W/src"
    ls -d "$W/src/"$dirglob >/dev/null 2>&1 && return 0
    (cd "$W/src" && apt-get source -qq "$pkg" >/dev/null 2>&1) && return 0
    for v in $(apt-cache showsrc "$pkg" | sed -n 's/^Version: //p' | sort -Vr); do
        (cd "$W/src" && apt-get source -qq "$pkg=$v" >/dev/null 2>&1) && return 0
    done
    die "apt-get source $pkg failed"
}

setup_tools() {
    if [ ! -x "$CSI_CC" ] && [ "$CSI_CC" = "$ROOT/crates/csi-cc/target/release/csi-cc" ]; then
        log "building csi-cc"
        (cd "$ROOT/crates/csi-cc" && LLVM_SYS_191_PREFIX=/usr/lib/llvm-19 cargo build --release -q) || die "csi-cc build failed"
    fi
    if [ ! -x "$CSI" ] && [ "$CSI" = "$ROOT/target/release/csi" ]; then
        log "building csi"
        (cd "$ROOT" && cargo build --release -q -p csi-cli) || die "csi build failed"
    fi
    [ -x "$CSI_CC" ] || die "no csi-cc at $CSI_CC"
    [ -x "$CSI" ] || die "no csi at $CSI"
    if [ ! -f "$SHIM" ] || [ "$HERE/crashshim.c" -nt "$SHIM" ]; then
        clang-19 -O2 -gdwarf-4 -fPIC -shared -o "$SHIM" "$HERE/crashshim.c" -ldl || die "shim build failed"
    fi
}

# ---------------------------------------------------------------- configurations
CSI_CONFIGS="$(for o in $OPTS; do printf 'csi-%s ' "$o"; done)"
CONFIGS="plain $CSI_CONFIGS oracle"
# cfg_cc CFG / cfg_cxx CFG / cfg_flags CFG: compiler and optimisation+debug flags.
cfg_cc() { case "$1" in csi-*) echo "$CSI_CC" ;; *) echo clang-19 ;; esac; }
cfg_cxx() { case "$1" in csi-*) echo "$CSI_CXX" ;; *) echo clang++-19 ;; esac; }
cfg_flags() {
    case "$1" in
    plain | csi-O2) echo "$PROJECT_FLAGS -O2" ;;
    csi-O2pre) echo "$PROJECT_FLAGS -O2 --csi-instrument=before-optimization" ;;
    csi-O2post) echo "$PROJECT_FLAGS -O2 --csi-instrument=after-optimization" ;;
    csi-O0) echo "$PROJECT_FLAGS -O0" ;;
    # which loops store a path per iteration (csi-cc --csi-pt-loops; `contract` is the default)
    csi-O2store) echo "$PROJECT_FLAGS -O2 --csi-pt-loops=store" ;;
    csi-O2elide) echo "$PROJECT_FLAGS -O2 --csi-pt-loops=elide" ;;
    csi-O2elideinner) echo "$PROJECT_FLAGS -O2 --csi-pt-loops=elide-innermost" ;;
    csi-O2elideentry) echo "$PROJECT_FLAGS -O2 --csi-pt-loops=elide-after-entry" ;;
    csi-O2elideall) echo "$PROJECT_FLAGS -O2 --csi-pt-loops=elide-all" ;;
    csi-O2contract) echo "$PROJECT_FLAGS -O2 --csi-pt-loops=contract" ;;
    # basic-block coverage (with its ch. 4 probe placement) instead of the default scheme
    csi-bbO0) echo "$PROJECT_FLAGS -O0 --csi-scheme=bb" ;;
    csi-bbO2) echo "$PROJECT_FLAGS -O2 --csi-scheme=bb" ;;
    oracle) echo "$PROJECT_FLAGS -O0 -gdwarf-4" ;;
    esac
}

# A fresh copy of the pristine source tree for an in-tree build.
copy_tree() {
    local src="$1" dst="$2"
    rm -rf "$dst" && mkdir -p "$(dirname "$dst")" && cp -a "$src" "$dst"
}

# new_warnings LOG PLAIN_LOG: the distinct warning messages (text after "warning: ") of a
# csi build's log that the plain clang build's log does not have — what csi-cc adds.
new_warnings() {
    comm -23 <(grep -o 'warning: .*' "$1" | sort -u) <(grep -o 'warning: .*' "$2" | sort -u)
}

# build PROG CFG: runs build_PROG in $W/build/PROG/CFG once; marks success or failure.
build() {
    local prog="$1" cfg="$2" b="$W/build/$1/$2"
    [ -f "$b.ok" ] && return 0
    [ -f "$b.failed" ] && return 1
    log "build $prog $cfg"
    mkdir -p "$W/build/$prog"
    if ( "build_${prog//-/_}" "$cfg" "$b" ) >"$b.log" 2>&1; then
        touch "$b.ok"
        if [ "$cfg" != plain ] && [ "$cfg" != oracle ] && [ -f "$W/build/$prog/plain.log" ]; then
            new_warnings "$b.log" "$W/build/$prog/plain.log" >"$b.new-warnings"
            log "$prog $cfg: $(wc -l <"$b.new-warnings") warning(s) the plain clang build does not print"
        fi
    else
        tail -5 "$b.log" | sed 's/^/    /' >&2
        touch "$b.failed"
        return 1
    fi
}

# ---------------------------------------------------------------- lua5.4
# Debian's way (debian/rules): libtool from debian/configure.ac, `make linux-readline`, which
# builds liblua5.4.so (+ a C++-compiled liblua5.4-c++.so) and links lua5.4 -static against the
# uninstalled liblua5.4.la (so the interpreter contains the library's code). Lua seeds its
# string hashes from addresses and time(); luai_makeseed is fixed to 0 in all builds so that
# every build and valgrind run hashes alike (same collision chains, same executed lines).
# luaS_new's cache of C strings is indexed by the string's address, which differs between
# builds (and, in a PIE, between runs): a miss in one build and a hit in another sent the
# same `lua_pushstring` into `internshrstr`'s "found" branch in one build only (bbO2 at N=100:
# lstring.c:198/200 "must" in the csi build, not run in the oracle's). Indexed by the
# string's hash instead, in every build alike, the runs take the same path.
build_lua() {
    local cfg="$1" b="$2" cxx
    copy_tree "$(ls -d "$W"/src/lua5.4-*/)" "$b"
    sed -i 's/unsigned int i = point2uint(str) % STRCACHE_N;/unsigned int i = luaS_hash(str, strlen(str), 0) % STRCACHE_N;/' \
        "$b/src/lstring.c"
    grep -q 'luaS_hash(str, strlen(str), 0) % STRCACHE_N' "$b/src/lstring.c" ||
        die "lstring.c: luaS_new's cache index not found"
    # Debian compiles llex/lparser/lcode with -Os after the other flags; an -O0 build (and the
    # exact oracle above all) keeps -O0 there too.
    case "$cfg" in csi-O0 | csi-bbO0 | oracle) sed -i 's/ -Os -c / -c /' "$b/src/Makefile" ;; esac
    cxx="$(cfg_cxx "$cfg")"
    # The C++ copy of the library is not part of the interpreter; without csi-c++ it is
    # built by plain clang++ so that the C build can be measured (recorded in RESULTS.md).
    [ -x "$cxx" ] || command -v "$cxx" >/dev/null || cxx=clang++-19
    mkdir -p "$b/debian/libtool" && cp "$b/debian/configure.ac" "$b/debian/libtool/"
    (cd "$b/debian/libtool" && LIBTOOLIZE='libtoolize -i' autoreconf -f -i &&
        ./configure CC="$(cfg_cc "$cfg")" CXX="$cxx") || return 1
    printf '#ifndef _LUA_DEB_MULTIARCH_\n#define _LUA_DEB_MULTIARCH_\n#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n#endif\n' \
        >"$b/src/lua5.4-deb-multiarch.h"
    # Lua's Makefile links both libraries by one two-target rule, which runs twice at once
    # under -j and races on .libs; the objects are built in parallel, the links after it.
    local j
    for j in "$JOBS" 1; do
        make -C "$b" -j"$j" linux-readline MYLIBS=-ldl LIBTOOL="$b/debian/libtool/libtool" \
            CC="$(cfg_cc "$cfg") -std=gnu99" CXX="$cxx" \
            MYCFLAGS="$(cfg_flags "$cfg") -DLUA_COMPAT_5_3 '-Dluai_makeseed(L)=0'" \
            MYCXXFLAGS="$(cfg_flags "$cfg")" MYLDFLAGS= && break
        [ "$j" = 1 ] && return 1
        rm -rf "$b/src/.libs/liblua5.4"*.a "$b/src/"*.la
    done
    [ -x "$b/src/lua5.4" ] && file "$b/src/lua5.4" | grep -q ELF
}

# `make test` (lua -v) is all the test suite Debian's source has; the harness adds its own
# workload scripts, whose output must equal the plain build's.
test_lua() {
    local b="$1"
    make -C "$b/src" test V=5.4 LIBTOOL="$b/debian/libtool/libtool" >/dev/null 2>&1 && echo "make-test PASS" || echo "make-test FAIL"
    # programs.lua from a copy in $W: its error messages name the script's path, which must
    # not depend on the checkout the harness runs from.
    cp -f "$ROOT"/crates/csi-cc/bench/lua/programs.lua "$W/programs.lua"
    for s in "$HERE"/workloads/*.lua "$W/programs.lua"; do
        # (programs.lua ends with os.exit(3): the exit code is part of the expected output)
        (cd "$(dirname "$s")" && env -i PATH=$CLEAN_PATH "$b/src/lua5.4" "$s") >"$b/out.$(basename "$s")" 2>&1
        echo "$(basename "$s") exit $? output $(md5sum <"$b/out.$(basename "$s")" | cut -c1-12)"
    done
}

# ---------------------------------------------------------------- jq + oniguruma
# Debian's oniguruma source built with the same compiler (installed into the build dir), then
# jq 1.6 with autotools against it. Debian configures jq with --disable-static; static archives
# are kept here so that a jq-static variant (libjq + libonig linked in) can be analysed today.
build_jq() {
    local cfg="$1" b="$2" cc flags
    cc="$(cfg_cc "$cfg")" flags="$(cfg_flags "$cfg")"
    rm -rf "$b" && mkdir -p "$b"
    cp -a "$(ls -d "$W"/src/libonig-*/)" "$b/onig" && cp -a "$(ls -d "$W"/src/jq-1*/)" "$b/jq" || return 1
    (cd "$b/onig" && { [ -x configure ] || autoreconf -fi; } &&
        ./configure -q --prefix="$b/onig-inst" CC="$cc" CFLAGS="$flags" &&
        make -j"$JOBS" && make install) || return 1
    (cd "$b/jq" && autoreconf -fi && ./configure -q --disable-docs --disable-maintainer-mode \
        --with-oniguruma="$b/onig-inst" CC="$cc" CFLAGS="$flags" &&
        make -j"$JOBS") || return 1
    # jq-static: main.o with libjq.a and libonig.a (the same objects, linked in).
    "$cc" $flags -o "$b/jq/jq-static" "$b/jq/src/main.o" "$b/jq/.libs/libjq.a" \
        "$b/onig-inst/lib/libonig.a" -lm
}

test_jq() {
    local b="$1"
    # jq's tests run under valgrind when it is installed; valgrind 3.19 cannot read clang-19's
    # DWARF 5 ("Possibly corrupted debuginfo file"), so every test would fail for that alone.
    (cd "$b/jq" && make -j"$JOBS" check NO_VALGRIND=1 >check.log 2>&1)
    grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR):' "$b/jq/check.log" | sort
    for f in "$b"/jq/tests/*.log; do grep -h -E '^[0-9]+ of [0-9]+ tests passed' "$f" | sed "s|^|$(basename "$f"): |"; done
}

# ---------------------------------------------------------------- yaml-cpp
# CMake as debian/rules configures it (shared build), tests on (Debian's libgtest/libgmock)
# except for the oracle, which only needs the library and util/parse. yaml-cpp-parse-static
# links parse.cpp's object with the library's objects, for an analysable variant today.
build_yaml_cpp() {
    local cfg="$1" b="$2" tests=ON
    [ "$cfg" = oracle ] && tests=OFF
    command -v "$(cfg_cxx "$cfg")" >/dev/null || { echo "error: no C++ compiler $(cfg_cxx "$cfg")"; return 1; }
    rm -rf "$b" && mkdir -p "$b"
    cmake -S "$(ls -d "$W"/src/yaml-cpp-*/)" -B "$b" -DCMAKE_BUILD_TYPE=None \
        -DCMAKE_C_COMPILER="$(cfg_cc "$cfg")" -DCMAKE_CXX_COMPILER="$(cfg_cxx "$cfg")" \
        -DCMAKE_C_FLAGS="$(cfg_flags "$cfg")" -DCMAKE_CXX_FLAGS="$(cfg_flags "$cfg")" \
        -DYAML_BUILD_SHARED_LIBS=ON -DYAML_CPP_BUILD_TOOLS=ON -DYAML_CPP_BUILD_TESTS=$tests \
        -DINSTALL_GTEST=OFF || return 1
    make -C "$b" -j"$JOBS" || return 1
    "$(cfg_cxx "$cfg")" $(cfg_flags "$cfg") -o "$b/util/yaml-cpp-parse-static" \
        "$b"/util/CMakeFiles/yaml-cpp-parse.dir/parse.cpp.o "$b"/CMakeFiles/yaml-cpp.dir/src/*.o \
        "$b"/CMakeFiles/yaml-cpp.dir/src/contrib/*.o
}

test_yaml_cpp() {
    local b="$1"
    (cd "$b" && ctest --output-on-failure >ctest.log 2>&1)
    grep -E 'tests passed|tests failed' "$b/ctest.log"
    "$b/test/yaml-cpp-tests" --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED) ' | sort | uniq
}

# ---------------------------------------------------------------- sqlite3
# Debian's sqlite3 the default way: configure (out of tree) and `make sqlite3`, which makes
# the 250k-line amalgamation (tclsh) and links the shell against libsqlite3.so. Its own test
# suite needs the Tcl extension; the harness compares the workload's output instead.
build_sqlite() {
    local cfg="$1" b="$2"
    rm -rf "$b" && mkdir -p "$b"
    (cd "$b" && "$(ls -d "$W"/src/sqlite3-*/)configure" CC="$(cfg_cc "$cfg")" \
        CFLAGS="$(cfg_flags "$cfg")" --disable-tcl --disable-readline) || return 1
    # (sqlite's Makefile reads OPTS, the harness's own variable: not passed on)
    env -u OPTS make -C "$b" -j"$JOBS" sqlite3
}
test_sqlite() {
    local b="$1"
    env -i PATH=$CLEAN_PATH LD_LIBRARY_PATH="$b/.libs" "$b/.libs/sqlite3" :memory: \
        <"$HERE/workloads/workload.sql" >"$b/out.workload" 2>&1
    echo "workload.sql exit $? output $(md5sum <"$b/out.workload" | cut -c1-12)"
}

# ---------------------------------------------------------------- compressors
# The programs of crates/csi-cc/bench/suite, whose hot loops issue 21's cost reductions work on
# (loop stores at exits, repeated paths stored once, probe placement), each built by its own
# build system. They allocate their buffers up front, so they are crashed at the N-th read
# (crashshim's CRASH_ON=read), inside the compression loop: gzip read()s, bzip2 and zstd fread().
build_gzip() {
    local cfg="$1" b="$2"
    copy_tree "$(ls -d "$W"/src/gzip-1*/)" "$b"
    (cd "$b" && ./configure -q CC="$(cfg_cc "$cfg")" CFLAGS="$(cfg_flags "$cfg")") || return 1
    make -C "$b/lib" -j"$JOBS" && make -C "$b" -j"$JOBS" version.h version.c gzip
}
build_bzip2() {
    local cfg="$1" b="$2"
    copy_tree "$(ls -d "$W"/src/bzip2-1*/)" "$b"
    make -C "$b" -j"$JOBS" bzip2 CC="$(cfg_cc "$cfg")" \
        CFLAGS="$(cfg_flags "$cfg") -D_FILE_OFFSET_BITS=64"
}
# zstd's Makefile sets -O3 in CFLAGS; the harness's flags replace it (-O2 like the others).
build_zstd() {
    local cfg="$1" b="$2"
    copy_tree "$(ls -d "$W"/src/libzstd-1*/)" "$b"
    make -C "$b/programs" -j"$JOBS" zstd CC="$(cfg_cc "$cfg")" CFLAGS="$(cfg_flags "$cfg")"
}
# A round trip of the workload's input at two levels: the compressed bytes and the
# decompressed check. The compressed bytes must equal the plain build's.
compress_test() {
    local exe="$1" in="$W/gen/input.dat" l
    for l in 1 9; do
        "$exe" -c -$l "$in" >"$exe.t$l" 2>&1
        echo "-$l exit $? compressed $(md5sum <"$exe.t$l" | cut -c1-12) $("$exe" -d -c <"$exe.t$l" | cmp -s - "$in" && echo round-trip-ok || echo round-trip-FAILED)"
    done
}
test_gzip() { compress_test "$1/gzip"; }
test_bzip2() { compress_test "$1/bzip2"; }
test_zstd() { compress_test "$1/programs/zstd"; }

# ---------------------------------------------------------------- workloads
# crash_targets PROG: "variant exe-relative-to-build-dir args..." one per line; stdin from
# $HERE/workloads when the variant names one.
crash_targets() {
    case "$1" in
    lua) echo "lua5.4 src/lua5.4 workload.lua" ;;
    jq)
        echo "jq-static jq/jq-static -f filter.jq data.json"
        echo "jq jq/.libs/jq -f filter.jq data.json"
        ;;
    sqlite) echo "sqlite3 .libs/sqlite3 :memory: STDIN=workload.sql" ;;
    gzip) echo "gzip gzip -c -9 input.dat" ;;
    bzip2) echo "bzip2 bzip2 -c -9 input.dat" ;;
    zstd) echo "zstd programs/zstd -c -9 --single-thread --no-asyncio input.dat" ;;
    yaml-cpp)
        echo "parse-static util/yaml-cpp-parse-static STDIN=data.yaml"
        echo "parse util/parse STDIN=data.yaml"
        ;;
    esac
}
default_ns() {
    case "$1" in
    lua) echo "100 700 1200 1500 2000 2400 2700" ;;
    jq) echo "200 2500 6000 9000 12000 15000 17500" ;;
    yaml-cpp) echo "100 1500 3500 5500 7500 9000 9900" ;;
    sqlite) echo "500 1500 3000 4500 5000 5200 5300" ;;
    gzip) echo "3 8 13 18 23 27 31" ;;
    bzip2) echo "5 40 80 120 160 190 209" ;;
    zstd) echo "2 3 4 5 6 7 8" ;;
    esac
}
# crash_on PROG: what crashshim counts (CRASH_ON): reads for the compressors, else allocations.
crash_on() { case "$1" in gzip | bzip2 | zstd) echo read ;; esac; }
# crash_signal PROG: the signal crashshim raises (CRASH_SIGNAL): bzip2 catches SIGSEGV (and
# SIGBUS, SIGINT, SIGTERM, SIGHUP) to remove its output file and exit, so it gets SIGABRT.
crash_signal() { case "$1" in bzip2) echo 6 ;; esac; }
lib_path() { # LD_LIBRARY_PATH for shared-library variants
    case "$1" in
    jq) echo "$2/jq/.libs:$2/onig-inst/lib" ;;
    yaml-cpp) echo "$2" ;;
    sqlite) echo "$2/.libs" ;;
    esac
}

# run_native PROG CFG EXE ARGS... : one native run with the shim at $N in $RUN_DIR.
# Every signal's disposition is reset (`env --default-signal`) here and in the oracle's run:
# a shell without job control starts background commands with SIGINT ignored, and gzip
# reads that (its `foreground` flag), so an oracle run from one shell and a crash from
# another took different paths through gzip's start-up (a "must" the oracle had not seen,
# though the core's `foreground` said the line ran).
run_native() {
    local prog="$1" cfg="$2" exe="$3"
    shift 3
    local b="$W/build/$prog/$cfg" stdin=/dev/null args=()
    for a in "$@"; do
        case "$a" in STDIN=*) stdin="$HERE/workloads/${a#STDIN=}" ;; *) args+=("$a") ;; esac
    done
    { (
        cd "$RUN_DIR" && rm -f core && ulimit -c unlimited
        cp -f "$HERE"/workloads/* "$W"/gen/* . 2>/dev/null
        exec env -i --default-signal PATH=$CLEAN_PATH LD_LIBRARY_PATH="$(lib_path "$prog" "$b")" \
            LD_PRELOAD="$SHIM" CRASH_N="$N" CRASH_COUNT=1 CRASH_ON="$(crash_on "$prog")" \
            CRASH_SIGNAL="$(crash_signal "$prog")" "$b/$exe" "${args[@]}" <"$stdin"
    ) >"$RUN_DIR/stdout" 2>"$RUN_DIR/stderr"; } 2>/dev/null
}

run_callgrind() {
    local prog="$1" exe="$2"
    shift 2
    local b="$W/build/$prog/oracle" stdin=/dev/null args=()
    for a in "$@"; do
        case "$a" in STDIN=*) stdin="$HERE/workloads/${a#STDIN=}" ;; *) args+=("$a") ;; esac
    done
    { (
        cd "$RUN_DIR" && ulimit -c 0
        exec env -i --default-signal PATH=$CLEAN_PATH LD_LIBRARY_PATH="$(lib_path "$prog" "$b")" \
            LD_PRELOAD="$SHIM" CRASH_N="$N" CRASH_COUNT=1 CRASH_ON="$(crash_on "$prog")" \
            CRASH_SIGNAL="$(crash_signal "$prog")" valgrind --tool=callgrind --dump-instr=yes --dump-line=yes --separate-threads=no \
            --num-callers=64 --callgrind-out-file="$RUN_DIR/callgrind.out" "$b/$exe" "${args[@]}" <"$stdin"
    ) >"$RUN_DIR/vg.stdout" 2>"$RUN_DIR/vg.stderr"; } 2>/dev/null
}

# gdb's backtrace of a core as "function file:line" lines (the frames' current lines).
gdb_frames() {
    gdb -batch -nx -ex 'set width 0' -ex bt "$1" "$2" 2>/dev/null | "$PY" "$HERE/btparse.py"
}

# ---------------------------------------------------------------- one crash
# oracle PROG VARIANT N EXE ARGS: oracle build crashed natively (core, gdb frames) and under
# callgrind (executed lines); result in $W/runs/PROG-VARIANT/oracle/N<n>/executed.json.
oracle() {
    local prog="$1" variant="$2"
    N="$3"
    shift 3
    local exe="$1"
    RUN_DIR="$W/runs/$prog-$variant/oracle/N$N"
    [ "$REDO" = 0 ] && [ -f "$RUN_DIR/executed.json" ] && return 0
    mkdir -p "$RUN_DIR"
    "$PY" "$HERE/code_lines.py" --root "$W/build/$prog/oracle" "$W/build/$prog/oracle/$exe" \
        >"$(dirname "$RUN_DIR")/code.json" || return 1
    run_native "$prog" oracle "$@"
    [ -f "$RUN_DIR/core" ] || { echo "no core (N beyond the run?)" >"$RUN_DIR/error"; return 1; }
    gdb_frames "$W/build/$prog/oracle/$exe" "$RUN_DIR/core" >"$RUN_DIR/frames.txt"
    run_callgrind "$prog" "$@"
    [ -f "$RUN_DIR/callgrind.out" ] || { echo "no callgrind output" >"$RUN_DIR/error"; return 1; }
    "$PY" "$HERE/callgrind_lines.py" --root "$W/build/$prog/oracle" --frames "$RUN_DIR/frames.txt" \
        --vg-stderr "$RUN_DIR/vg.stderr" "$RUN_DIR/callgrind.out" >"$RUN_DIR/executed.json" 2>"$RUN_DIR/parse.err" || return 1
}

# align_oracle PROG VARIANT CFG N EXE ARGS: the oracle's N for the csi run in $RUN_DIR. When a
# whole run allocates a different number of times in CFG than in the oracle (clang elides
# new/delete pairs at -O2: yaml-cpp), the oracle's allocation N' with the same program frames is
# searched for between N and N + the difference; prints it, or nothing when none matches.
align_oracle() {
    local prog="$1" variant="$2" cfg="$3" n="$4" counts="$W/runs/$1-$2/counts.txt" co cc d k
    shift 4
    co="$(sed -n 's/^oracle native: //p' "$counts")"
    cc="$(sed -n "s/^$cfg native: //p" "$counts")"
    if [ -z "$co" ] || [ "$co" = "$cc" ]; then echo "$n"; return; fi
    d=$((co > cc ? co - cc : cc - co))
    local keep_dir="$RUN_DIR" keep_n="$N" probe="$W/runs/$prog-$variant/oracle/probe"
    mkdir -p "$probe"
    for k in $(seq "$n" $((n + d))) $(seq $((n - 1)) -1 $((n > d ? n - d : 1))); do
        RUN_DIR="$probe" N="$k"
        run_native "$prog" oracle "$@"
        [ -f "$probe/core" ] || continue
        gdb_frames "$W/build/$prog/oracle/$1" "$probe/core" >"$probe/frames.txt"
        if "$PY" "$HERE/compare.py" --match "$keep_dir/frames.txt" "$probe/frames.txt"; then
            RUN_DIR="$keep_dir" N="$keep_n"
            echo "$k"
            return
        fi
    done
    RUN_DIR="$keep_dir" N="$keep_n"
}

# csi_crash PROG VARIANT CFG N EXE ARGS: the csi build crashed, analysed, compared.
# analyse_run PROG BUILD EXE ORACLE_DIR: csi analyze and show on $RUN_DIR's core, timed, and the
# comparison with the oracle's lines.
analyse_run() {
    local prog="$1" b="$2" exe="$3" orc="$4"
    /usr/bin/time -v -o "$RUN_DIR/analyze.time" "$CSI" analyze --exe "$b/$exe" --core "$RUN_DIR/core" \
        --format json >"$RUN_DIR/analyze.json" 2>"$RUN_DIR/analyze.err"
    echo $? >"$RUN_DIR/analyze.rc"
    /usr/bin/time -v -o "$RUN_DIR/show.time" "$CSI" show --exe "$b/$exe" --core "$RUN_DIR/core" \
        >"$RUN_DIR/show.txt" 2>"$RUN_DIR/show.err"
    "$PY" "$HERE/compare.py" --root "$b" --oracle "$orc" --run "$RUN_DIR" \
        --oracle-root "$W/build/$prog/oracle" --code "$(dirname "$orc")/code.json" >"$RUN_DIR/compare.json"
}

csi_crash() {
    local prog="$1" variant="$2" cfg="$3" b="$W/build/$1/$3" orc="$W/runs/$1-$2/oracle/N$4"
    N="$4"
    shift 4
    local exe="$1"
    RUN_DIR="$W/runs/$prog-$variant/$cfg/N$N"
    if [ "${REANALYZE:-0}" = 1 ] && [ -f "$RUN_DIR/core" ] && [ -f "$RUN_DIR/oracle_n" ]; then
        # The same crash and oracle, analysed again by this tree's csi.
        [ "$(cat "$RUN_DIR/oracle_n")" != none ] && orc="$W/runs/$prog-$variant/oracle/N$(cat "$RUN_DIR/oracle_n")"
        analyse_run "$prog" "$b" "$exe" "$orc"
        return
    fi
    if [ "${RECOMPARE:-0}" = 1 ] && [ -f "$RUN_DIR/analyze.json" ]; then
        [ -f "$RUN_DIR/oracle_n" ] && [ "$(cat "$RUN_DIR/oracle_n")" != none ] && orc="$W/runs/$prog-$variant/oracle/N$(cat "$RUN_DIR/oracle_n")"
        "$PY" "$HERE/compare.py" --root "$b" --oracle "$orc" --run "$RUN_DIR" \
            --oracle-root "$W/build/$prog/oracle" --code "$(dirname "$orc")/code.json" >"$RUN_DIR/compare.json"
        return
    fi
    if [ "$REDO" != 0 ] || [ ! -f "$RUN_DIR/compare.json" ]; then
        mkdir -p "$RUN_DIR"
        run_native "$prog" "$cfg" "$@"
        [ -f "$RUN_DIR/core" ] || { echo "no core" >"$RUN_DIR/error"; return 1; }
        gdb_frames "$b/$exe" "$RUN_DIR/core" >"$RUN_DIR/frames.txt"
        local on
        on="$(align_oracle "$prog" "$variant" "$cfg" "$N" "$@")"
        echo "${on:-none}" >"$RUN_DIR/oracle_n"
        if [ -n "$on" ] && [ "$on" != "$N" ]; then
            local here="$RUN_DIR" n0="$N"
            oracle "$prog" "$variant" "$on" "$@"
            RUN_DIR="$here" N="$n0"
        fi
        orc="$W/runs/$prog-$variant/oracle/N${on:-$N}"
        analyse_run "$prog" "$b" "$exe" "$orc"
    fi
}

# count_check PROG VARIANT EXE ARGS: allocations of a whole run (no crash) natively and under
# callgrind, per build -- N means the same program state only if these agree.
count_check() {
    local prog="$1" variant="$2" out="$W/runs/$1-$2/counts.txt" cfg
    shift 2
    [ "$REDO" = 0 ] && [ -f "$out" ] && return 0
    mkdir -p "$W/runs/$prog-$variant/count"
    RUN_DIR="$W/runs/$prog-$variant/count"
    N=0
    : >"$out"
    for cfg in oracle plain $CSI_CONFIGS; do
        [ -f "$W/build/$prog/$cfg.ok" ] || continue
        run_native "$prog" "$cfg" "$@"
        echo "$cfg native: $(grep -o 'crashshim: [0-9]*' "$RUN_DIR/stderr" | cut -d' ' -f2)" >>"$out"
    done
    if [ -f "$W/build/$prog/oracle.ok" ]; then
        run_callgrind "$prog" "$@"
        echo "oracle callgrind: $(grep -o 'crashshim: [0-9]*' "$RUN_DIR/vg.stderr" | cut -d' ' -f2)" >>"$out"
    fi
}

# ---------------------------------------------------------------- main
main() {
    mkdir -p "$W"
    setup_apt
    fetch_source lua5.4 'lua5.4-*/'
    fetch_source jq 'jq-1*/'
    fetch_source libonig 'libonig-*/'
    fetch_source yaml-cpp 'yaml-cpp-*/'
    case " $PROGRAMS " in *" sqlite "*) fetch_source sqlite3 'sqlite3-*/' ;; esac
    case " $PROGRAMS " in *" gzip "*) fetch_source gzip 'gzip-1*/' ;; esac
    case " $PROGRAMS " in *" bzip2 "*) fetch_source bzip2 'bzip2-1*/' ;; esac
    case " $PROGRAMS " in *" zstd "*) fetch_source libzstd 'libzstd-1*/' ;; esac
    setup_tools
    "$PY" "$HERE/workloads/make_data.py" "$HERE/workloads" "$W/gen"
    local prog cfg line variant exe n opt
    : >"$W/tests.txt"
    for prog in $PROGRAMS; do
        for cfg in $CONFIGS; do build "$prog" "$cfg"; done
        if [ "$TESTS" = 1 ]; then
            for cfg in plain $CSI_CONFIGS; do
                local b="$W/build/$prog/$cfg"
                if [ -f "$b.ok" ]; then
                    [ -f "$b.tests" ] || "test_${prog//-/_}" "$b" >"$b.tests" 2>&1
                else echo "BUILD FAILED: $(grep -m1 -E '^error|rror:|not found|No such' "$b.log" | cut -c1-160)" >"$b.tests"; fi
            done
        fi
        local targets target
        mapfile -t targets < <(crash_targets "$prog")
        for target in "${targets[@]}"; do
            read -r variant exe args <<<"$target"
            count_check "$prog" "$variant" "$exe" $args
            for n in ${NS:-$(default_ns "$prog")}; do
                [ -f "$W/build/$prog/oracle.ok" ] && oracle "$prog" "$variant" "$n" "$exe" $args
                for opt in $OPTS; do
                    [ -f "$W/build/$prog/csi-$opt.ok" ] || continue
                    csi_crash "$prog" "$variant" "csi-$opt" "$n" "$exe" $args
                done
            done
        done
    done
    "$PY" "$HERE/report.py" --work "$W" --programs "$PROGRAMS" --opts "$OPTS" \
        --csi-cc "$CSI_CC" --csi-cxx "$CSI_CXX" --out "${RESULTS:-$HERE/RESULTS.md}"
}

[ "${RUN_SH_SOURCE:-0}" = 1 ] || main "$@"
