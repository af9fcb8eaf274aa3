#!/usr/bin/env bash
# Behaviour check for refactorings (issue 19): the same inputs through an old and a new build
# of csi-cc and csi must give byte-identical outputs. Not a CI test.
#
#   bench/refactor/compare.sh OLD_BIN_DIR NEW_BIN_DIR
#
# Each BIN_DIR holds `csi-cc` and `csi` (a `csi-c++` beside csi-cc is made in a scratch dir
# when missing). Compares:
#   1. the instrumenter: every fixture source (fixtures/src, C and C++) compiled with `-c` under
#      the schemes realistic, bb, all (SCHEMES) at -O0, -O2 and -O2
#      --csi-instrument=before-optimization, as fixtures/build.sh does (from inside fixtures/,
#      -g -fdebug-compilation-dir=.; -fPIC for shared-library sources): the object and the
#      instrumented bitcode kept by CSI_KEEP_TEMPS, byte for byte (on a difference, the
#      llvm-dis-19 text and `objdump -s` of the CSI sections are compared too, to say where);
#   2. the driver: whole programs linked (every fixture program, realistic -O0 and all -O2),
#      and -S, -MD, several sources with -c, -E: outputs byte for byte;
#   3. the analyses: `csi analyze --format json|text|csiclipse`, `csi slice --format json|text`
#      and `csi show` (text, sources resolved from the fixtures) on every crash of the fixture
#      matrix (CRASHES, default /work/main/fixtures/build: <program>/<build>/
#      {<program>,core}): stdout and exit status. FORMATS (default
#      "analyze:json slice:json analyze:text analyze:csiclipse slice:text show") picks them.
# Prints the number of files/outputs compared and every difference; exits 1 on any.
# JOBS (default 2) compiles / analyses run in parallel; ONLY (an extended regex) restricts
# sources, programs and crashes to the matching ones (a quick check); PARTS (default "1 2 3")
# which of the three run (`PARTS=3` when only csi changed: the instrumenter parts need
# csi-cc in both dirs).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_BIN_DIR NEW_BIN_DIR" >&2; exit 2; }
OLD="$(cd "$1" && pwd)"
NEW="$(cd "$2" && pwd)"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FIX="$ROOT/fixtures"
CRASHES="${CRASHES:-/work/main/fixtures/build}"
SCHEMES="${SCHEMES:-realistic bb all}"
JOBS="${JOBS:-2}"
WORK="$(mktemp -d /tmp/csi-compare.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
PARTS="${PARTS:-1 2 3}"
FORMATS="${FORMATS:-analyze:json slice:json analyze:text analyze:csiclipse slice:text show}"
export WORK FIX CRASHES
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# Bin dirs with csi-c++ next to csi-cc.
for side in old new; do
  src="$OLD"
  [ "$side" = new ] && src="$NEW"
  mkdir -p "$WORK/bin-$side"
  ln -s "$src/csi-cc" "$WORK/bin-$side/csi-cc"
  ln -s "$src/csi-cc" "$WORK/bin-$side/csi-c++"
  ln -s "$src/csi" "$WORK/bin-$side/csi"
done

DIFFS="$WORK/diffs"
: >"$DIFFS"

# ---- 1. instrumenter: per source, scheme, level --------------------------------------------
compile_one() { # side source scheme level
  local side="$1" src="$2" scheme="$3" level="$4" cc=csi-cc
  local tag="${src//\//_}.$scheme.$level"
  local out="$WORK/$side/c/$tag" flags=()
  case "$src" in *.cpp) cc=csi-c++ ;; esac
  case "$level" in
    O0) flags=(-O0) ;;
    O2) flags=(-O2 --csi-instrument=after-optimization) ;;
    O2pre) flags=(-O2 --csi-instrument=before-optimization) ;;
  esac
  case "$src" in src/shlib/walk.c | src/plugin/plugin.c | src/shlib_plain/shim.c) flags+=(-fPIC) ;; esac
  mkdir -p "$out/tmp"
  (cd "$FIX" && CSI_KEEP_TEMPS=1 TMPDIR="$out/tmp" "$WORK/bin-$side/$cc" --csi-scheme="$scheme" \
    "${flags[@]}" -g -fdebug-compilation-dir=. -c -o "$out/obj.o" "$src") \
    >"$out/stdout" 2>"$out/stderr" || echo "exit $?" >>"$out/stderr"
  # The instrumented bitcode, out of the per-process temp dir.
  local bc
  bc="$(find "$out/tmp" -name '*.csi.bc' | head -1)"
  [ -n "$bc" ] && mv "$bc" "$out/instrumented.bc"
  rm -rf "$out/tmp"
}
export -f compile_one

ONLY="${ONLY:-.}"
n_files=0
if part 1; then
SOURCES="$(cd "$FIX" && find src -name '*.c' -o -name '*.cpp' | sort | grep -E "$ONLY")"
: >"$WORK/jobs"
for src in $SOURCES; do
  for scheme in $SCHEMES; do
    for level in O0 O2 O2pre; do
      for side in old new; do
        echo "$side $src $scheme $level" >>"$WORK/jobs"
      done
    done
  done
done
xargs -P "$JOBS" -L 1 bash -c 'compile_one "$@"' _ <"$WORK/jobs"

n_units=0
for d in "$WORK"/old/c/*; do
  tag="$(basename "$d")"
  n_units=$((n_units + 1))
  for f in obj.o instrumented.bc stdout stderr; do
    a="$d/$f" b="$WORK/new/c/$tag/$f"
    if [ ! -e "$a" ] && [ ! -e "$b" ]; then continue; fi
    n_files=$((n_files + 1))
    if ! cmp -s "$a" "$b"; then
      echo "DIFF instrumenter $tag/$f" | tee -a "$DIFFS"
      case "$f" in
        instrumented.bc)
          diff <(llvm-dis-19 -o - "$a") <(llvm-dis-19 -o - "$b") | head -20 || true ;;
        obj.o)
          for s in .debug_CSI_CFG .debug_PT .debug_CC .debug_BBC .debug_FC; do
            cmp -s <(objdump -s -j "$s" "$a" 2>/dev/null | tail -n +3) \
              <(objdump -s -j "$s" "$b" 2>/dev/null | tail -n +3) || echo "  section $s differs"
          done ;;
        *) diff "$a" "$b" | head -20 || true ;;
      esac
    fi
  done
done
echo "instrumenter: $n_units compilations per side (sources x {$SCHEMES} x {O0,O2,O2pre}), $n_files files compared"
fi

# ---- 2. driver: linked programs and other command lines -------------------------------------
# program -> sources, as fixtures/build.sh (shared libraries linked in as sources: the driver's
# several-sources path).
declare -A PROGS=(
  [null_deref]="src/null_deref.c" [oob_write]="src/oob_write.c"
  [abort_assert]="src/abort_assert.c" [deep_recursion]="src/deep_recursion.c"
  [use_after_free]="src/use_after_free.c" [libc_crash]="src/libc_crash.c"
  [thread_crash]="src/thread_crash.c -pthread"
  [multifile]="src/multifile/main.c src/multifile/ops.c src/multifile/more.c"
  [mid_block]="src/mid_block.c" [slices]="src/slices.c" [branch_calls]="src/branch_calls.c"
  [fast_path]="src/fast_path.c" [inline_fold]="src/inline_fold.c"
  [header_static]="src/header_static/main.c src/header_static/other.c"
  [while_once]="src/while_once.c" [inline_vanish]="src/inline_vanish.c"
  [multiline_cond]="src/multiline_cond.c" [template_vanish]="src/template_vanish.cpp"
  [cxx_throw]="src/cxx_throw.cpp" [cxx_dtor]="src/cxx_dtor.cpp"
  [cxx_template]="src/cxx_template/main.cpp src/cxx_template/other.cpp"
  [cxx_uncaught]="src/cxx_uncaught.cpp" [shlib_crash]="src/shlib/main.c src/shlib/walk.c"
  [values]="src/values.c"
)
drive_one() { # side name cc args...
  local side="$1" name="$2" cc="$3"
  shift 3
  local out="$WORK/$side/d/$name"
  mkdir -p "$out/tmp"
  (cd "$out" && TMPDIR="$out/tmp" "$WORK/bin-$side/$cc" "$@") >"$out/stdout" 2>"$out/stderr" ||
    echo "exit $?" >>"$out/stderr"
  rmdir "$out/tmp" 2>/dev/null || echo "temp dir left" >>"$out/stderr"
}
n_cmds=0
if part 2; then
for side in old new; do
  for p in "${!PROGS[@]}"; do
    echo "$p" | grep -qE "$ONLY" || continue
    cc=csi-cc
    case "${PROGS[$p]}" in *.cpp*) cc=csi-c++ ;; esac
    srcs=()
    for s in ${PROGS[$p]}; do
      case "$s" in -*) srcs+=("$s") ;; *) srcs+=("$FIX/$s") ;; esac
    done
    for v in "realistic -O0" "all -O2"; do
      read -r scheme lvl pre <<<"$v"
      drive_one "$side" "link.$p.$scheme$lvl${pre:+.pre}" "$cc" --csi-scheme="$scheme" $lvl $pre -g \
        -fdebug-compilation-dir=. -o prog "${srcs[@]}"
    done
  done
  # (-fdebug-compilation-dir=.: the two sides run in different directories)
  dcd=-fdebug-compilation-dir=.
  drive_one "$side" asm csi-cc -O2 -g $dcd -S -o out.s "$FIX/src/null_deref.c"
  drive_one "$side" asm-default-name csi-cc -O0 -g $dcd -S "$FIX/src/null_deref.c"
  drive_one "$side" deps csi-cc -O0 -g $dcd -MD -c "$FIX/src/null_deref.c"
  drive_one "$side" multi-c csi-cc -O0 -g $dcd -c "$FIX/src/multifile/main.c" "$FIX/src/multifile/ops.c"
  drive_one "$side" preprocess csi-cc -E "$FIX/src/null_deref.c"
  drive_one "$side" schema-verbose csi-cc --csi-verbose --csi-scheme=pt --csi-pt-size=3 \
    --csi-cc-probes=all -O0 -g $dcd -c -o x.o "$FIX/src/deep_recursion.c"
  drive_one "$side" bad-option csi-cc --csi-scheme=nonsense -c "$FIX/src/null_deref.c"
  drive_one "$side" csi-help csi-cc --csi-help
done
for d in "$WORK"/old/d/*; do
  name="$(basename "$d")"
  n_cmds=$((n_cmds + 1))
  while IFS= read -r f; do
    n_files=$((n_files + 1))
    cmp -s "$d/$f" "$WORK/new/d/$name/$f" || echo "DIFF driver $name/$f" | tee -a "$DIFFS"
  done < <(cd "$d" && find . -type f | sort)
  [ "$(cd "$d" && find . -type f | sort)" = "$(cd "$WORK/new/d/$name" && find . -type f | sort)" ] ||
    echo "DIFF driver $name: different files" | tee -a "$DIFFS"
done
echo "driver: $n_cmds command lines per side, files compared so far: $n_files"
fi

# ---- 3. analyses on the fixture matrix --------------------------------------------------------
analyse_one() { # side program build command[:format]
  local side="$1" p="$2" b="$3" cmd="${4%%:*}" fmt=()
  local out="$WORK/$side/a/$p.$b.${4/:/.}"
  case "$4" in *:*) fmt=(--format "${4#*:}") ;; esac
  mkdir -p "$(dirname "$out")"
  local code=0
  (cd "$FIX" && "$WORK/bin-$side/csi" "$cmd" "${fmt[@]}" --exe "$CRASHES/$p/$b/$p" \
    --core "$CRASHES/$p/$b/core") >"$out.stdout" 2>"$out.stderr" || code=$?
  echo "$code" >"$out.exit"
}
export -f analyse_one
: >"$WORK/ajobs"
n_crashes=0
n_out=0
if part 3; then
for d in "$CRASHES"/*/*/; do
  b="$(basename "$d")"
  p="$(basename "$(dirname "$d")")"
  [ -f "$d/core" ] && [ -f "$d/$p" ] || continue
  echo "$p" | grep -qE "$ONLY" || continue
  n_crashes=$((n_crashes + 1))
  for cmd in $FORMATS; do
    for side in old new; do echo "$side $p $b $cmd" >>"$WORK/ajobs"; done
  done
done
xargs -P "$JOBS" -L 1 bash -c 'analyse_one "$@"' _ <"$WORK/ajobs"
for f in "$WORK"/old/a/*.stdout "$WORK"/old/a/*.exit; do
  n_out=$((n_out + 1))
  cmp -s "$f" "$WORK/new/a/$(basename "$f")" || echo "DIFF analysis $(basename "$f")" | tee -a "$DIFFS"
done
n_stderr_diff=0
for f in "$WORK"/old/a/*.stderr; do
  cmp -s "$f" "$WORK/new/a/$(basename "$f")" || n_stderr_diff=$((n_stderr_diff + 1))
done
n_empty=$(find "$WORK"/old/a -name '*.stdout' -empty | wc -l)
n_failed=$(grep -Lx 0 "$WORK"/old/a/*.exit | wc -l)
for f in $(grep -Lx 0 "$WORK"/old/a/*.exit); do
  echo "  nonzero exit (old side) $(basename "$f" .exit): $(cat "$f"): $(head -c 160 "${f%.exit}.stderr" | tr '\n' ' ')"
done
echo "analyses: $n_crashes crashes x {$FORMATS}: $n_out outputs compared (stdout + exit status; $n_empty empty stdouts, $n_failed nonzero exits), stderr differing: $n_stderr_diff"
fi

n_diff=$(wc -l <"$DIFFS")
echo "total: $((n_files + n_out)) files/outputs compared, $n_diff differences"
[ "$n_diff" -eq 0 ]
