#!/usr/bin/env bash
# What csi-cc's tracing costs on real programs (issue 21). Not a test; needs deb-src in the apt
# sources, clang-19, valgrind, python3, m4 (flex runs it), gdb only to re-derive the schemas.
#
# For each of Debian's source packages flex, grep, lua5.4, bzip2, zstd (libzstd) and gzip
# (instead of ccrypt: `apt-get source ccrypt` fails here, the Debian tarball is 404), in a scratch
# dir outside the repo (default /tmp/csi-suite):
#   * builds it with its own build system and the project's own optimisation flags, in
#     configurations
#       plain      CC="clang-19 -g"  (csi-cc forces -g, so plain has it too)
#       copy       the plain binary copied under another name: its ratios are the noise floor
#       cc pt realistic bb fc   CC="csi-cc --csi-scheme=S"; <S>post (e.g. bbpost): the same
#                  with --csi-instrument=after-optimization
#       sancov     CC="clang-19 -g -fsanitize-coverage=inline-bool-flag": clang's SanitizerCoverage
#                  (edge coverage: one flag per block or critical edge, set only while it reads
#                  0, placed in the optimized code) — what users would otherwise reach for; a
#                  stub supplies its init callback
#       fixed      CC="csi-cc --csi-scheme=cc --csi-schema=<prog>.fixed.schema": call-site
#                  coverage everywhere, path tracing only in the functions of a plausible crash
#                  stack of that program (the dissertation's "Realistic (fixed)"; lists below)
#       customoff customreal customcrash   CC="csi-cc --csi-scheme=custom", then `csi tracing`:
#                  every switch off / on in the `fixed` list's functions only / on in the
#                  functions on the stacks of CRASHES (default 4) crashes injected into the
#                  workload by bench/real's crash shim (crash_switch, below)
#       <C>elide   configuration C (realistic, pt, fixed, customoff, customreal) with
#                  --csi-pt-loops=elide: loops that some iteration goes round without a call
#                  store no path per iteration (csi-cc's default when optimizing in session
#                  25; session 24's `elide` is today's `elide-innermost`: <C>elideinner);
#                  <C>elideentry: with --csi-pt-loops=elide-after-entry; <C>elideall: with
#                  --csi-pt-loops=elide-all (every loop); <C>store: with --csi-pt-loops=store
#                  (every iteration stored, the default before session 25); <C>contract: with
#                  --csi-pt-loops=contract (elide's loops keep no part of the sum: the default
#                  when optimizing since session 26, so <C>contract = C)
#     flex, grep, gzip: ./configure once (with plain clang-19; CFLAGS default -g -O2), then
#     `make CC=...` in a copy of the configured tree per configuration; lua: the upstream
#     makefile `make linux` (-O2); bzip2: its Makefile (-O2 -g); zstd: `make -C programs zstd`
#     (libzstd.mk's default -O3). A configuration that fails to build is reported, not fatal.
#   * runs a CPU-bound workload per program and checks its output against plain's (and the
#     compressors' round trips against the input): flex -t on a generated scanner spec; grep -c
#     of several regexes over generated text; lua heavy.lua; bzip2 -9 / zstd -12 / gzip -9
#     compress + decompress of a generated file, round-tripped with cmp.
#   * measures: instructions under callgrind (the primary, deterministic metric; `perf stat -e
#     instructions` is "not supported" on this VM), summed over every process of the workload
#     (flex's m4 child excepted: it is not part of the program); CPU time (user + sys, bash's
#     `time`, all child processes) as the mean of the fastest quarter of SHORT_RUNS interleaved
#     rounds of a short workload, with `copy` as noise floor (as lua-check.sh); max RSS
#     (`/usr/bin/time -f %M`, the largest of the workload's processes) of the full run, the
#     median of RSS_RUNS interleaved runs (the first is the checked one), with address-space
#     randomization off (`setarch -R`, where permitted);
#     file size and code size (`size -A`'s `.text`, with `.csi.text`: a customizable
#     build's instrumented bodies).
#
# Usage: crates/csi-cc/bench/suite/run.sh [scratch-dir]
# Environment: PROGRAMS (default "flex grep lua bzip2 zstd gzip"), CONFIGS (default
#   "plain copy cc pt realistic bb fc fixed sancov"), SHORT_RUNS (default 12), RSS_RUNS (full
#   runs for max RSS, default 5), CALLGRIND=0 to
#   skip instruction counts (those of the run before are kept), BUILD=0 to reuse the builds,
#   EXTRA_CONFIGS="name=csi-cc flags;..." for configurations of your own (list them in
#   CONFIGS), JOBS (make -j, default 2), TABLE_ONLY=1 to print the table of the results
#   already in the scratch dir (<prog>/result.tsv, written per program, so a run with
#   PROGRAMS=grep replaces grep's rows only), TABLE_PROGRAMS (its rows).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BENCH="$(cd "$HERE/.." && pwd)"
CSI="${CSI_CC:-$BENCH/../target/release/csi-cc}"
CSI="$(cd "$(dirname "$CSI")" && pwd)/$(basename "$CSI")"
# csi (for `csi tracing`): this tree's release build.
CSI_BIN="${CSI_BIN:-$BENCH/../../../target/release/csi}"
W="${1:-/tmp/csi-suite}"
read -r -a PROGRAMS <<<"${PROGRAMS:-flex grep lua bzip2 zstd gzip}"
read -r -a CONFIGS <<<"${CONFIGS:-plain copy cc pt realistic bb fc fixed sancov}"
SHORT_RUNS="${SHORT_RUNS:-12}"
RSS_RUNS="${RSS_RUNS:-5}"
CALLGRIND="${CALLGRIND:-1}"
BUILD="${BUILD:-1}"
TABLE_ONLY="${TABLE_ONLY:-0}"
JOBS="${JOBS:-2}"
# Max RSS with the same address layout every run (`setarch -R`): with randomization, Lua's
# plain build ranges over 6,712–6,940 KiB (its heap follows the addresses), without it 6,840
# every run; gzip's over 1,716–1,844, without it 1,728 (its first run after a build 1,792).
# The differences between builds are then those of the builds.
NO_ASLR=""
setarch -R true 2>/dev/null && NO_ASLR="setarch -R"
mkdir -p "$W/src" && W="$(cd "$W" && pwd)"
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# ---------------------------------------------------------------------------------------------
# Crash-stack schemas ("fixed"): the frames gdb shows when the plain build, running this
# workload, is stopped in the program's hot routine (`gdb -batch -ex 'break F' -ex run -ex bt`,
# F = the hot leaf below; the bt's functions, minus frames inlined at -O2, which are no
# functions of their own after optimization and so cannot be listed), plus the driver above it.
schema() {
  case "$1" in
    # flex: main -> flex_main -> ntod (the DFA construction, here 2^k states) -> epsclosure,
    # symfollowset, sympartition, snstods, mkentry (table compression); and the spec's parse,
    # flex_main -> readin -> yyparse -> yylex.
    flex) printf '%s;{CC,PT}\n' main flex_main readin yyparse yylex ntod epsclosure symfollowset \
      sympartition snstods mkentry ;;
    # grep: main -> grepbuf -> EGexecute -> dfaexec_sb -> dfaexec_main (a tail call: a stop inside
    # the DFA loop shows dfaexec_main where dfaexec_sb was) / kwsexec -> bmexec (-E/-i), Fexecute
    # -> acexec (-F -f), fillbuf (-v -w) (grep_command_line_arg, grepdesc, grep: inlined into main).
    grep) printf '%s;{CC,PT}\n' main grepbuf fillbuf EGexecute Fexecute dfaexec_sb dfaexec_main \
      kwsexec bmexec acexec ;;
    # lua: as crates/csi-cc/bench/lua-check.sh (lua.c -> API -> VM -> tables).
    lua) printf '%s;{CC,PT}\n' main pmain docall lua_pcallk lua_getfield luaD_call \
      luaD_callnoyield luaD_precall luaV_execute luaV_finishget luaH_get luaH_getint \
      luaH_getshortstr ;;
    # bzip2: main -> compress -> BZ2_bzWrite -> BZ2_bzCompress -> handle_compress ->
    # BZ2_compressBlock -> BZ2_blockSort (mainSort, mainQSort3 inlined) / fallbackSort, and
    # (sendMTFValues, inlined) -> BZ2_hbMakeCodeLengths; decompress: main -> uncompress -> BZ2_bzRead ->
    # BZ2_bzDecompress -> BZ2_decompress (compressStream, uncompressStream inlined).
    bzip2) printf '%s;{CC,PT}\n' main compress BZ2_bzWrite BZ2_bzCompress handle_compress \
      BZ2_compressBlock BZ2_blockSort fallbackSort BZ2_hbMakeCodeLengths \
      uncompress BZ2_bzRead BZ2_bzDecompress BZ2_decompress ;;
    # zstd -12: main -> FIO_compressFilename -> ..._srcFile -> ..._dstFile -> ..._internal ->
    # FIO_compressZstdFrame -> ZSTD_compressStream2 -> ZSTD_compressStream_generic ->
    # ZSTD_compressContinue(_internal) -> ZSTD_compress_frameChunk -> ZSTD_compressBlock_internal
    # -> ZSTD_buildSeqStore -> ZSTD_compressBlock_lazy2_extDict_row ->
    # ZSTD_RowFindBestMatch_extDict_5_6 (-> ZSTD_count_2segments, inlined); decompress: main ->
    # FIO_decompressFilename -> FIO_decompressSrcFile -> FIO_decompressDstFile ->
    # FIO_decompressFrames -> FIO_decompressZstdFrame -> ZSTD_decompressStream ->
    # ZSTD_decompressContinueStream -> ZSTD_decompressContinue -> ZSTD_decompressBlock_internal
    # (FIO_compressFilename_dstFile/_internal, FIO_compressZstdFrame, ZSTD_compress_frameChunk,
    # FIO_decompressDstFile/Frames/ZstdFrame, ZSTD_decompressContinueStream: inlined at -O3).
    # The stack is the 20 MB run's; inputs smaller than the window (8 MB at -12: the timed rounds
    # and callgrind's) take the same path through the noDict twins of the last two functions.
    zstd) printf '%s;{CC,PT}\n' main FIO_compressFilename FIO_compressFilename_srcFile \
      ZSTD_compressStream2 ZSTD_compressStream_generic ZSTD_compressContinue \
      ZSTD_compressContinue_internal ZSTD_compressBlock_internal ZSTD_buildSeqStore \
      ZSTD_compressBlock_lazy2_extDict_row ZSTD_RowFindBestMatch_extDict_5_6 \
      ZSTD_compressBlock_lazy2_row ZSTD_RowFindBestMatch_noDict_5_6 \
      FIO_decompressFilename FIO_decompressSrcFile ZSTD_decompressStream \
      ZSTD_decompressContinue ZSTD_decompressBlock_internal ;;
    # gzip: main -> treat_stdin -> zip -> deflate -> longest_match; decompress: main ->
    # treat_stdin -> unzip -> inflate -> inflate_block -> inflate_dynamic -> inflate_codes
    # (inflate_block, inflate_dynamic: inlined).
    gzip) printf '%s;{CC,PT}\n' main treat_stdin zip deflate longest_match unzip inflate \
      inflate_codes ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# Per program: the Debian source package, the binary inside the build tree, the build, the
# workload. Workload sizes: FULL (the checked run, RSS), SHORT (timed rounds), CG (callgrind).
. "$HERE/programs.sh"  # pkg, bin_of, configure_once, make_prog
cc_for() {
  # Configurations named in EXTRA_CONFIGS ("name=csi-cc flags;name2=flags"), for experiments.
  local e; local -a extra; IFS=';' read -r -a extra <<<"${EXTRA_CONFIGS:-}"
  for e in "${extra[@]}"; do
    [ "${e%%=*}" = "$2" ] && { echo "$CSI ${e#*=}"; return; }
  done
  case "$2" in
    plain) echo "clang-19 -g" ;;
    # The stub is a linker input, unused (a warning) where the build compiles with -c.
    sancov) echo "clang-19 -g -fsanitize-coverage=inline-bool-flag $W/sancov-stub.o" ;;
    fixed) echo "$CSI --csi-scheme=cc --csi-schema=$W/$1.fixed.schema" ;;
    # basic-block coverage with a probe in every block (no ch. 4 placement)
    bball) echo "$CSI --csi-scheme=bb --csi-bb-probes=all" ;;
    # customizable tracing with every switch off (`csi tracing --set '*=off'` after the build)
    customoff) echo "$CSI --csi-scheme=custom" ;;
    # customizable tracing switched on in the crash stack's functions only (`fixed`'s list)
    customreal) echo "$CSI --csi-scheme=custom" ;;
    # customizable tracing switched on where injected crashes stopped the program (crash_switch)
    customcrash) echo "$CSI --csi-scheme=custom" ;;
    # call-site coverage with a probe at every call site (no placement)
    ccall) echo "$CSI --csi-scheme=cc --csi-cc-probes=all" ;;
    # <config>elide: the same with `--csi-pt-loops=elide` (loops with a call-free iteration
    # store no path per iteration), e.g. realisticelide, fixedelide, customrealelide;
    # <config>elideinner, elideentry, elideall, store: with `--csi-pt-loops=elide-innermost`,
    # `elide-after-entry`, `elide-all`, `store`
    *elide) echo "$(cc_for "$1" "${2%elide}") --csi-pt-loops=elide" ;;
    *elideinner) echo "$(cc_for "$1" "${2%elideinner}") --csi-pt-loops=elide-innermost" ;;
    *elideall) echo "$(cc_for "$1" "${2%elideall}") --csi-pt-loops=elide-all" ;;
    *store) echo "$(cc_for "$1" "${2%store}") --csi-pt-loops=store" ;;
    *elideentry) echo "$(cc_for "$1" "${2%elideentry}") --csi-pt-loops=elide-after-entry" ;;
    # <config>contract: `elide`'s loops contracted out of the running sum
    *contract) echo "$(cc_for "$1" "${2%contract}") --csi-pt-loops=contract" ;;
    # the same order as the table before issue 17 (probes placed in the optimized code)
    *post) echo "$CSI --csi-scheme=${2%post} --csi-instrument=after-optimization" ;;
    *) echo "$CSI --csi-scheme=$2" ;;
  esac
}
unpack() { # prog -> prints the unpacked source dir (upstream tarball inside the Debian source)
  local p="$1" d="$W/$1" t
  (cd "$W/src" && ls "$(pkg "$p")"_*.orig.tar.* >/dev/null 2>&1 ||
    apt-get source --download-only "$(pkg "$p")" >/dev/null 2>&1) || return 1
  t=$(ls "$W/src/$(pkg "$p")"_*.orig.tar.* | grep -v '\.asc$' | head -1)
  rm -rf "$d/o" && mkdir -p "$d/o" && tar xf "$t" -C "$d/o" && ls -d "$d"/o/*/ | head -1
}

# Workload inputs, generated deterministically (python3's seeded PRNG).
gen_inputs() { # prog
  local p="$1" d="$W/$1/data"
  mkdir -p "$d"
  case "$p" in
    flex) for n in FULL:14 SHORT:13 CG:12; do
        python3 - "$d/${n%%:*}.l" "${n#*:}" <<'PY'
import random, sys
random.seed(21)
path, k = sys.argv[1], int(sys.argv[2])
letters = "abcdefghijklmnopqrstuvwxyz_"
words = set()
while len(words) < 400:
    words.add("".join(random.choice(letters) for _ in range(random.randint(3, 14))))
with open(path, "w") as f:
    f.write("%option noyywrap nounput noinput\n%{\nint tok;\n%}\n")
    f.write('D [0-9]\nL [a-zA-Z_]\nH [a-fA-F0-9]\nE [Ee][+-]?{D}+\n%%\n')
    for i, w in enumerate(sorted(words)):
        f.write('"%s" { return %d; }\n' % (w, i + 1))
        if i % 40 == 0:
            f.write('"%s"{D}+"."{L}* { return %d; }\n' % (w, 1000 + i))
    # DFA blow-up: an 'a' (a 'b') k (k-3) places before the end needs 2^k states.
    f.write('[ab]*a[ab]{%d} { return -7; }\n[bc]*b[a-c]{%d}c { return -8; }\n' % (k, k - 3))
    f.write('0[xX]{H}+ { return -2; }\n{D}+{E}? { return -3; }\n{D}*"."{D}+({E})? { return -4; }\n')
    f.write('{L}({L}|{D})* { return -1; }\n\\"(\\\\.|[^\\\\"\\n])*\\" { return -5; }\n')
    f.write('"/*"([^*]|"*"+[^*/])*"*"+"/" { }\n[ \\t\\n]+ { }\n. { return -6; }\n%%\n')
PY
      done ;;
    grep) for n in FULL:40 SHORT:10 CG:2; do
        python3 - "$d/${n%%:*}.txt" "${n#*:}" <<'PY'
import random, sys
random.seed(21)
path, mb = sys.argv[1], int(sys.argv[2])
syll = ["ab", "cd", "ing", "er", "the", "qu", "ion", "st", "re", "al", "ou", "ent", "x", "zy"]
vocab = ["".join(random.choice(syll) for _ in range(random.randint(1, 4))) for _ in range(3000)]
vocab += ["error", "timeout", "warning", "connection", "refused", "user", "admin"]
out, size = [], 0
while size < mb * 1000000:
    w = random.choices(vocab, k=random.randint(4, 16))
    r = random.random()
    if r < 0.1:
        w.insert(random.randrange(len(w)), ".".join(str(random.randint(0, 300)) for _ in range(4)))
    elif r < 0.15:
        w.insert(random.randrange(len(w)), "%s@%s.com" % (random.choice(vocab), random.choice(vocab)))
    line = " ".join(w)
    out.append(line); size += len(line) + 1
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
with open(path + ".words", "w") as f:
    f.write("\n".join(random.sample(vocab, 60)) + "\n")
PY
      done ;;
    bzip2|zstd|gzip)
      local s; case "$p" in bzip2) s="FULL:20 SHORT:3 CG:1" ;; zstd) s="FULL:20 SHORT:3 CG:1" ;;
        gzip) s="FULL:30 SHORT:6 CG:2" ;; esac
      for n in $s; do
        [ -f "$W/gen-${n#*:}.dat" ] || python3 - "$W/gen-${n#*:}.dat" "${n#*:}" <<'PY'
import random, sys
# Log-like text with numbers and some incompressible bytes: neither trivial nor random.
random.seed(21)
path, mb = sys.argv[1], int(sys.argv[2])
words = ["".join(random.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(random.randint(2, 10)))
         for _ in range(4000)]
with open(path, "wb") as f:
    size = 0
    while size < mb * 1000000:
        line = "%08d %s %s %d %s\n" % (size % 99999989, random.choice(["INFO", "WARN", "DEBUG"]),
            " ".join(random.choices(words, k=random.randint(3, 12))), random.getrandbits(24),
            random.randbytes(random.randint(0, 6)).hex())
        b = line.encode()
        f.write(b); size += len(b)
PY
        ln -sf "$W/gen-${n#*:}.dat" "$d/${n%%:*}.dat"
      done ;;
  esac
}

# wl prog bin size outprefix: runs the workload; $RUN (empty, or a callgrind/time prefix) is put
# before every invocation of the program. Writes outprefix.out (compared to plain's).
RUN=""
wl() {
  local p="$1" b="$2" s="$3" o="$4" d="$W/$1/data" pat
  case "$p" in
    flex) $RUN "$b" -t "$d/$s.l" >"$o.out" ;;
    grep) : >"$o.out"; set -f
      for pat in '-E [a-z]+ing\b' '-i error.*timeout' '-E ([0-9]{1,3}\.){3}[0-9]{1,3}' \
        '-E [a-z]+@[a-z]+\.com' '-w -v the' '-E ^(ab|cd)+\s[a-z]+\s(ab|cd)+$'; do
        # shellcheck disable=SC2086
        LC_ALL=C $RUN "$b" -c $pat "$d/$s.txt" >>"$o.out"
      done
      LC_ALL=C $RUN "$b" -c -F -f "$d/$s.txt.words" "$d/$s.txt" >>"$o.out"
      LC_ALL=C.UTF-8 $RUN "$b" -c -i -E 'qu[a-z]*ion\b' "$d/$s.txt" >>"$o.out"; set +f ;;
    lua) local n; case "$s" in FULL) n=20 ;; SHORT) n=8 ;; CG) n=2 ;; esac
      $RUN "$b" "$BENCH/lua/heavy.lua" "$n" >"$o.out" ;;
    bzip2) $RUN "$b" -9 -c <"$d/$s.dat" >"$o.out" && $RUN "$b" -d -c <"$o.out" >"$o.dec" ;;
    zstd) $RUN "$b" -q -12 --single-thread -c <"$d/$s.dat" >"$o.out" &&
      $RUN "$b" -q -d -c <"$o.out" >"$o.dec" ;;
    gzip) $RUN "$b" -9 -n -c <"$d/$s.dat" >"$o.out" && $RUN "$b" -d -c <"$o.out" >"$o.dec" ;;
  esac
}
# customcrash: the switches a deployment sets after seeing crashes (the dissertation's ch. 3
# loop), rather than a stack chosen by hand. bench/real's crash shim stops one invocation of the
# workload (its first: flex on the spec, grep's first regex, heavy.lua, the compressors' -9/-12
# compression of SHORT) at its N-th allocation (flex, Lua) or input call (grep and the
# compressors, whose allocations are made up front) with SIGABRT (bzip2 catches SIGSEGV), at
# CRASHES (default 4) values of N spread evenly over a whole run's count; `csi tracing --core`
# with every core then switches on the functions on their stacks, inlined frames included, and
# everything else off.
crash_cmd() { # prog bin env-prefix...: the invocation the crashes stop
  local p="$1" b="$2" d="$W/$1/data"; shift 2
  case "$p" in
    flex) "$@" "$b" -t "$d/SHORT.l" ;;
    grep) LC_ALL=C "$@" "$b" -c -E '[a-z]+ing\b' "$d/SHORT.txt" ;;
    lua) "$@" "$b" "$BENCH/lua/heavy.lua" 8 ;;
    bzip2) "$@" "$b" -9 -c <"$d/SHORT.dat" ;;
    zstd) "$@" "$b" -q -12 --single-thread -c <"$d/SHORT.dat" ;;
    gzip) "$@" "$b" -9 -n -c <"$d/SHORT.dat" ;;
  esac
}
crash_switch() { # prog exe: crash it, then switch it by the cores (prints csi tracing's list)
  local p="$1" b="$2" d="$W/$1/crashes" on total i n k="${CRASHES:-4}"; local -a cores=()
  case "$p" in grep|bzip2|zstd|gzip) on=read ;; *) on=malloc ;; esac
  rm -rf "$d" && mkdir -p "$d"
  # (Output to a file: with stdout on /dev/null grep stops at the first match.)
  total=$(crash_cmd "$p" "$b" env LD_PRELOAD="$SHIM" CRASH_COUNT=1 CRASH_ON="$on" 2>&1 >"$d/out" |
    sed -n 's/^crashshim: \([0-9]*\) .*/\1/p' | tail -1)
  [ -n "$total" ] || { echo "crash_switch: the shim counted nothing"; return 1; }
  for ((i = 1; i <= k; i++)); do
    n=$(( total * i / (k + 1) )); [ "$n" -ge 1 ] || n=1
    mkdir -p "$d/$i"
    (cd "$d/$i" && ulimit -c unlimited &&
      crash_cmd "$p" "$b" env LD_PRELOAD="$SHIM" CRASH_N="$n" CRASH_ON="$on" CRASH_SIGNAL=6 \
        >out 2>&1)
    echo "crash $i: $on call $n of $total: $([ -f "$d/$i/core" ] && echo core || echo 'no core')"
    [ -f "$d/$i/core" ] && cores+=(--core "$d/$i/core")
  done
  [ ${#cores[@]} -gt 0 ] || { echo "crash_switch: no core (core_pattern: $(cat /proc/sys/kernel/core_pattern))"; return 1; }
  "$CSI_BIN" tracing --exe "$b" "${cores[@]}"
}
roundtrip() { case "$1" in bzip2|zstd|gzip) cmp -s "$W/$1/data/$2.dat" "$3.dec" ;; *) true ;; esac; }

# ---------------------------------------------------------------------------------------------
declare -A OK INSTR CPU RSS FSIZE TSIZE NOTE
configured() { [[ " ${CONFIGS[*]} " == *" $1 "* ]]; }
# SanitizerCoverage's module constructor calls this with its flags' bounds (libFuzzer's hook).
SHIM="$W/crashshim.so"
SHIM_SRC="$BENCH/../../../bench/real/crashshim.c"
if configured customcrash && { [ ! -f "$SHIM" ] || [ "$SHIM_SRC" -nt "$SHIM" ]; }; then
  clang-19 -O2 -gdwarf-4 -fPIC -shared -o "$SHIM" "$SHIM_SRC" -ldl
fi
if [ "$BUILD" = 1 ] && configured sancov; then
  printf 'void __sanitizer_cov_bool_flag_init(char *start, char *end) { (void)start; (void)end; }\n' |
    clang-19 -O2 -x c -c - -o "$W/sancov-stub.o"
fi
[ "$TABLE_ONLY" = 1 ] && PROGRAMS=()
for p in "${PROGRAMS[@]}"; do
  mkdir -p "$W/$p/runs"
  schema "$p" >"$W/$p.fixed.schema"
  if [ "$BUILD" = 1 ]; then
    log "$p: unpacking $(pkg "$p")"
    if ! src=$(unpack "$p"); then
      for v in "${CONFIGS[@]}"; do OK[$p,$v]="no source"; done; continue
    fi
    configure_once "$p" "$src" || log "$p: configure failed (see $W/$p/configure.log)"
    for v in "${CONFIGS[@]}"; do
      [ "$v" = copy ] && continue
      rm -rf "$W/$p/$v" && cp -a "$src" "$W/$p/$v"
      log "$p: building $v"
      t0=$(date +%s)
      if make_prog "$p" "$W/$p/$v" "$(cc_for "$p" "$v")" >"$W/$p/$v.build.log" 2>&1; then
        echo "$(( $(date +%s) - t0 ))" >"$W/$p/$v.build.secs"
        # The configuration without its loop-storing suffix (customrealelide -> customreal).
        base="${v%%elide*}"
        base="${base%store}"
        base="${base%contract}"
        [ "$base" = customoff ] && "$CSI_BIN" tracing --exe "$W/$p/$v/$(bin_of "$p")" --set '*=off' \
          >"$W/$p/$v.switches" 2>&1
        # Switched like the dissertation's Realistic: on in the functions of the crash stack
        # (the `fixed` schema's), off elsewhere.
        # (A schema function without a switch — inlined everywhere, or no definition of
        # this program's — is left out.)
        if [ "$base" = customreal ]; then
          exe="$W/$p/$v/$(bin_of "$p")"
          switchable="$("$CSI_BIN" tracing --exe "$exe" | sed 's/^[a-z]* *//')"
          on=()
          for fn in $(cut -d';' -f1 "$W/$p.fixed.schema"); do
            grep -qxF "$fn" <<<"$switchable" && on+=(--set "$fn=on")
          done
          "$CSI_BIN" tracing --exe "$exe" --set '*=off' "${on[@]}" >"$W/$p/$v.switches" 2>&1
        fi
      else
        log "$p: $v FAILED to build (see $W/$p/$v.build.log)"
      fi
    done
    # The copy: the plain build's binary under another name, timed like the others.
    rm -rf "$W/$p/copy" && mkdir -p "$W/$p/copy/$(dirname "$(bin_of "$p")")" &&
      cp "$W/$p/plain/$(bin_of "$p")" "$W/$p/copy/$(bin_of "$p")" 2>/dev/null
  fi
  gen_inputs "$p"
  # Switched as a deployment would after seeing crashes: `csi tracing --core` with the cores
  # of CRASHES injected crashes (crash_switch; after the inputs, which the crashed runs read).
  # With BUILD=0 only when the build was never switched (CRASHED=1 forces it).
  if configured customcrash && [ -x "$W/$p/customcrash/$(bin_of "$p")" ] &&
    { [ "$BUILD" = 1 ] || [ "${CRASHED:-0}" = 1 ] || ! grep -q '^on ' "$W/$p/customcrash.switches" 2>/dev/null; }; then
    crash_switch "$p" "$W/$p/customcrash/$(bin_of "$p")" >"$W/$p/customcrash.switches" 2>&1 ||
      log "$p: customcrash: $(tail -1 "$W/$p/customcrash.switches")"
  fi
  # Checked full run (+ max RSS of the workload's processes).
  for v in "${CONFIGS[@]}"; do
    b="$W/$p/$v/$(bin_of "$p")"
    rm -f "$W/$p/runs/$v.rss.rounds"
    if [ ! -x "$b" ]; then OK[$p,$v]="build failed"; continue; fi
    FSIZE[$p,$v]=$(stat -c %s "$b"); TSIZE[$p,$v]=$(size -A "$b" | awk '$1 == ".text" || $1 == ".csi.text" {t += $2} END {print t}')
    rm -f "$W/$p/runs/$v.rss"
    RUN="$NO_ASLR /usr/bin/time -f %M -a -o $W/$p/runs/$v.rss"
    if wl "$p" "$b" FULL "$W/$p/runs/$v.full" 2>"$W/$p/runs/$v.err" && roundtrip "$p" FULL "$W/$p/runs/$v.full"; then
      if [ "$v" = plain ] || cmp -s "$W/$p/runs/plain.full.out" "$W/$p/runs/$v.full.out"; then
        OK[$p,$v]=ok
      else OK[$p,$v]="output differs"; fi
    else OK[$p,$v]="workload failed"; fi
    RUN=""
    sort -n "$W/$p/runs/$v.rss" | tail -1 >"$W/$p/runs/$v.rss.rounds"
    log "$p: $v full run ${OK[$p,$v]} (max RSS $(cat "$W/$p/runs/$v.rss.rounds") KiB)"
  done
  # Max RSS varied from run to run by more than the difference it is to show (gzip's plain
  # build: 1,716–1,844 KiB, mostly libc pages that the kernel's fault-around maps differently
  # at each address layout); without randomization (NO_ASLR) the first run after a build can
  # still differ, so the full run is repeated RSS_RUNS times in all, interleaved, and the
  # median of the runs' maxima taken.
  for ((i = 2; i <= RSS_RUNS; i++)); do
    for v in "${CONFIGS[@]}"; do
      [ "${OK[$p,$v]}" = ok ] || continue
      rm -f "$W/$p/runs/$v.rss"
      RUN="$NO_ASLR /usr/bin/time -f %M -a -o $W/$p/runs/$v.rss"
      if wl "$p" "$W/$p/$v/$(bin_of "$p")" FULL "$W/$p/runs/$v.again" 2>/dev/null; then
        sort -n "$W/$p/runs/$v.rss" | tail -1 >>"$W/$p/runs/$v.rss.rounds"
      fi
      RUN=""
    done
  done
  for v in "${CONFIGS[@]}"; do
    [ -s "$W/$p/runs/$v.rss.rounds" ] || continue
    RSS[$p,$v]=$(sort -n "$W/$p/runs/$v.rss.rounds" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  done
  rm -f "$W/$p/runs/"*.full.dec "$W/$p/runs/"*.again.*
  # Interleaved short rounds: CPU time (user + sys) of the whole workload, bash's `time`.
  TIMEFORMAT='%3U %3S'
  for v in "${CONFIGS[@]}"; do : >"$W/$p/runs/$v.rounds"; done
  for i in $(seq "$SHORT_RUNS"); do
    for v in "${CONFIGS[@]}"; do
      [ "${OK[$p,$v]}" = ok ] || continue
      { time wl "$p" "$W/$p/$v/$(bin_of "$p")" SHORT "$W/$p/runs/$v.short" >/dev/null 2>&1; } 2>>"$W/$p/runs/$v.rounds.raw"
    done
  done
  for v in "${CONFIGS[@]}"; do
    [ -f "$W/$p/runs/$v.rounds.raw" ] || continue
    awk '{print $1 + $2}' "$W/$p/runs/$v.rounds.raw" >"$W/$p/runs/$v.rounds"; rm -f "$W/$p/runs/$v.rounds.raw"
    CPU[$p,$v]=$(sort -n "$W/$p/runs/$v.rounds" | awk '{a[NR]=$1} END {k=int(NR/4); if (k<1) k=1; for(i=1;i<=k;i++) s+=a[i]; if (NR) printf "%.4f", s/k}')
    if [ "$v" != plain ] && [ "${OK[$p,$v]}" = ok ] && ! cmp -s "$W/$p/runs/plain.short.out" "$W/$p/runs/$v.short.out"; then
      OK[$p,$v]="short output differs"; fi
  done
  rm -f "$W/$p/runs/"*.short.dec "$W/$p/runs/"*.short.out
  log "$p: rounds done"
  # Instructions under callgrind, summed over the workload's processes (valgrind 3.19 cannot read
  # clang-19's DWARF 5: the symbol table of a --strip-debug copy is enough for the counts).
  if [ "$CALLGRIND" = 1 ]; then
    rm -f "$W/$p/probes.tsv"
    for v in "${CONFIGS[@]}"; do
      [ "$v" = copy ] || [ "${OK[$p,$v]}" != ok ] && continue
      rm -rf "$W/$p/cg/$v" && mkdir -p "$W/$p/cg/$v"
      objcopy --strip-debug "$W/$p/$v/$(bin_of "$p")" "$W/$p/cg/$v/$(basename "$(bin_of "$p")")"
      RUN="valgrind -q --tool=callgrind --dump-instr=yes --callgrind-out-file=$W/$p/cg/$v/callgrind.%p"
      wl "$p" "$W/$p/cg/$v/$(basename "$(bin_of "$p")")" CG "$W/$p/cg/$v/run" 2>"$W/$p/cg/$v/err" ||
        log "$p: $v callgrind run failed"
      RUN=""
      INSTR[$p,$v]=$(cat "$W/$p/cg/$v"/callgrind.* | awk '/^summary:/ {s += $2} END {printf "%.0f\n", s}')
      rm -f "$W/$p/cg/$v/run.dec"
      log "$p: $v ${INSTR[$p,$v]} instructions"
      # Basic-block coverage probes, static and executed (probes.py; ch. 4's placement).
      # and call-site coverage probes of the cc configurations.
      case "$v" in
        bb*) printf '%s\t%s\n' "$v" "$("$HERE/probes.py" "$W/$p/$v/$(bin_of "$p")" "$W/$p/cg/$v")" \
               >>"$W/$p/probes.tsv" ;;
        cc*) printf '%s\t%s\n' "$v" "$("$HERE/probes.py" "$W/$p/$v/$(bin_of "$p")" "$W/$p/cg/$v" __CC_arr_)" \
               >>"$W/$p/probes.tsv" ;;
      esac
    done
  fi
  # Without callgrind, the instruction counts of the run before stay (timing rounds on an idle
  # machine after a run that built and counted).
  if [ "$CALLGRIND" != 1 ] && [ -f "$W/$p/result.tsv" ]; then
    while IFS=$'\t' read -r v _ i _; do
      [ "$i" = - ] || INSTR[$p,$v]=$i
    done <"$W/$p/result.tsv"
  fi
  # Per-program results, so that a later run of some programs (PROGRAMS=...) updates their rows.
  for v in "${CONFIGS[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "${OK[$p,$v]:-?}" "${INSTR[$p,$v]:--}" \
      "${CPU[$p,$v]:--}" "${RSS[$p,$v]:--}" "${FSIZE[$p,$v]:--}" "${TSIZE[$p,$v]:--}"
  done >"$W/$p/result.tsv"
  date -u '+%Y-%m-%d %H:%M UTC' >"$W/$p/result.date"
done

# ---------------------------------------------------------------------------------------------
# The table, from every program's result.tsv in the scratch dir (TABLE_PROGRAMS).
read -r -a TABLE_PROGRAMS <<<"${TABLE_PROGRAMS:-flex grep lua bzip2 zstd gzip}"
for p in "${TABLE_PROGRAMS[@]}"; do
  [ -f "$W/$p/result.tsv" ] || continue
  while IFS=$'\t' read -r v st i c r f t; do
    OK[$p,$v]=$st
    for x in INSTR:$i CPU:$c RSS:$r FSIZE:$f TSIZE:$t; do
      val=${x#*:}; [ "$val" = - ] && val=""; declare "${x%%:*}[$p,$v]=$val"
    done
  done <"$W/$p/result.tsv"
done
ratio() { if [ -z "$1" ] || [ -z "$2" ] || [ "$2" = 0 ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; fi; }
# The rounds the results came from (plain's rounds file per program; a later TABLE_ONLY=1 or
# PROGRAMS=... run may have had another SHORT_RUNS).
ROUNDS=$(for p in "${TABLE_PROGRAMS[@]}"; do
  [ -s "$W/$p/runs/plain.rounds" ] && wc -l <"$W/$p/runs/plain.rounds"; done | sort -un | paste -sd/)
{
echo "ratios to plain (clang-19 -g, the project's own -O level); instr: callgrind, summed over"
echo "the workload's processes; cpu: mean of the fastest quarter of ${ROUNDS:-the} interleaved rounds"
echo "(user+sys) — the machine may be shared, read it against the copy row; rss: median of the full"
echo "runs' max RSS (RSS_RUNS of them, default 5); size: file size / .text size"
printf '%-6s %-10s %-8s %8s %8s %8s %8s  %s\n' prog config instr cpu rss file .text status
for p in "${TABLE_PROGRAMS[@]}"; do
  [ -f "$W/$p/result.tsv" ] || { echo "$p: no results"; continue; }
  for v in "${CONFIGS[@]}"; do
    ir=$(ratio "${INSTR[$p,$v]:-}" "${INSTR[$p,plain]:-}"); cr=$(ratio "${CPU[$p,$v]:-}" "${CPU[$p,plain]:-}")
    rr=$(ratio "${RSS[$p,$v]:-}" "${RSS[$p,plain]:-}"); fr=$(ratio "${FSIZE[$p,$v]:-}" "${FSIZE[$p,plain]:-}")
    tr=$(ratio "${TSIZE[$p,$v]:-}" "${TSIZE[$p,plain]:-}")
    [ "$v" = copy ] && ir=-
    abs=""; [ "$v" = plain ] && abs="($(cat "$W/$p/result.date"): ${INSTR[$p,plain]:-?} instr, ${CPU[$p,plain]:-?} s/round, ${RSS[$p,plain]:-?} KiB, .text ${TSIZE[$p,plain]:-?} B)"
    printf '%-6s %-10s %-8s %8s %8s %8s %8s  %s %s\n' "$p" "$v" "$ir" "$cr" "$rr" "$fr" "$tr" "${OK[$p,$v]:-?}" "$abs"
    echo "$p $v $ir $cr $rr $fr $tr" >>"$W/ratios.tmp"
  done
done
echo
echo "geometric means (and the largest ratio) over the programs with both builds (n = programs)"
printf '%-10s %8s %8s %8s %8s %8s\n' config instr cpu rss file .text
for v in "${CONFIGS[@]}"; do
  awk -v v="$v" '$2 == v {for (i = 3; i <= 7; i++) if ($i != "-") {s[i] += log($i); n[i]++}}
    END {printf "%-10s", v; for (i = 3; i <= 7; i++) printf " %8s", n[i] ? sprintf("%.3f", exp(s[i] / n[i])) : "-";
         printf "   (n=%d)\n", n[3]}' "$W/ratios.tmp"
  [ "$v" = plain ] || [ "$v" = copy ] ||
    sort -k3,3gr "$W/ratios.tmp" | awk -v v="$v" '$2 == v && $3 != "-" {printf "%-10s %8s  max instr: %s\n", "", $3, $1; exit}' 
done
echo
echo "The dissertation (Ohmann 2017), clang -O3, for comparison (time overheads, its test suites):"
echo "  ch. 2 (Fig. 2.6 text): \"For the 'Realistic (fixed)' configuration with optimization, average"
echo "    overhead increases to just 1.1% across all larger applications, with a maximum overhead of"
echo "    3.0% (for gzip).\"                                      -> compare: fixed"
echo "  ch. 3 (Fig. 3.2 text): customizable \"Realistic\" with -O3: \"overhead decreases to an average"
echo "    of just 1.6% across all larger applications, with a maximum overhead of 4.5% (for gzip).\""
echo "    (its PT set is fixed's, plus the replica switch)         -> compare: fixed"
echo "  ch. 2 (Fig. 2.6, unoptimized): \"The maximum overhead for call-site coverage among our test"
echo "    subjects was 2.0% (for gcc)\"                             -> compare: cc"
if configured sancov; then
  echo "Not the dissertation's: sancov is clang's SanitizerCoverage (inline-bool-flag: one flag per"
  echo "  edge, set while it reads 0, in the optimized code; no per-frame bits, no crash-time"
  echo "  ordering)                                                  -> compare: bb, bbpost"
fi
echo
echo "Coverage probes (probes.py: stores into the __BBC_arr_* globals for bb*, __CC_arr_* for cc*;"
echo "static = in the binary, dynamic = executed in the callgrind run), per configuration; the"
echo "dissertation's ch. 4 dominator-based placement removed over 40 % of the static and at least"
echo "60 % of the dynamic statement-coverage probes (Figs. 4.8a, 4.9a), 15 % of the static"
echo "call-site coverage probes on average (Fig. 4.8b):"
printf '%-6s %-10s %10s %14s\n' prog config static dynamic
for p in "${TABLE_PROGRAMS[@]}"; do
  [ -f "$W/$p/probes.tsv" ] || continue
  awk -v p="$p" -F'\t' '{split($2, a, " "); printf "%-6s %-10s %10s %14s\n", p, $1, a[1], a[2]}' "$W/$p/probes.tsv"
done
} | tee "$W/table.txt"
# Where the extra instructions go: the largest instruction ratio overall and of `fixed`
# (callgrind profiles of the program's own code, mapped to source lines; where.py).
{
  for pick in "$(awk '$3 != "-" && $2 != "plain"' "$W/ratios.tmp" | sort -k3,3gr | head -1)" \
    "$(awk '$3 != "-" && $2 == "fixed"' "$W/ratios.tmp" | sort -k3,3gr | head -1)"; do
    read -r p v ir _ <<<"$pick"; [ -n "${p:-}" ] || continue
    [ -d "$W/$p/cg/$v" ] || continue
    echo; echo "== $p $v (instructions ×$ir): where.py"
    python3 "$HERE/where.py" "$W/$p/plain/$(bin_of "$p")" "$W/$p/cg/plain" "$W/$p/$v/$(bin_of "$p")" \
      "$W/$p/cg/$v" 12 "$W/$p/plain" "$W/$p/$v"
  done
} | tee "$W/where.txt"
rm -f "$W/ratios.tmp"
