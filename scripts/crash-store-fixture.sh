#!/usr/bin/env bash
# A real crash store for the editor tests (server/tests/crash_store.rs, the VS Code
# extension's protocol test, editors/nvim/tests/test_crashes.lua): builds the triage corpus
# program bench/triage/src/calc.c with csi-cc (basic-block coverage), crashes it on four
# inputs (three bugs: division by zero twice, modulo by zero, stack underflow), runs it on
# four passing inputs with CSI_COVERAGE_OUT, then `csi triage --store OUT/crashes.db
# --passing OUT/passing OUT/cores`. Cores come from the kernel (`ulimit -c`), or from gdb's
# generate-core-file when core_pattern sends them elsewhere.
#
#   scripts/crash-store-fixture.sh OUT
#   env: CSI (default target/release/csi, built when missing), CSI_CC (default
#   crates/csi-cc/target/release/csi-cc, built when missing)
#
# Leaves OUT/crashes.db, OUT/bin/calc, OUT/cores/<bug>/<k>/core. Fails loudly (exit 1) when a
# step fails or a tool is missing.
set -euo pipefail
out=${1:?usage: crash-store-fixture.sh OUT}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
csi=${CSI:-$target/release/csi}
csi_cc=${CSI_CC:-$root/crates/csi-cc/target/release/csi-cc}

die() { echo "crash-store-fixture: $*" >&2; exit 1; }

if [ ! -x "$csi" ]; then
  cargo build --release -q -p csi-cli --manifest-path "$root/Cargo.toml" || die "building csi failed"
  csi=$target/release/csi
fi
if [ ! -x "$csi_cc" ]; then
  (cd "$root" && env -u CARGO_TARGET_DIR LLVM_SYS_191_PREFIX=/usr/lib/llvm-19 \
    cargo build --release -q --manifest-path crates/csi-cc/Cargo.toml) || die "building csi-cc failed"
fi
command -v gdb >/dev/null || [ "$(cat /proc/sys/kernel/core_pattern 2>/dev/null)" = core ] ||
  die "no gdb, and the kernel writes cores elsewhere ($(cat /proc/sys/kernel/core_pattern))"

rm -rf "$out"
mkdir -p "$out/bin"
out=$(cd "$out" && pwd)
(cd "$root/bench/triage" &&
  "$csi_cc" -O0 -g -fdebug-compilation-dir=. --csi-scheme=bb -o "$out/bin/calc" src/calc.c) ||
  die "csi-cc failed"

crash() { # bug k input
  local dir=$out/cores/$1/$2
  mkdir -p "$dir"
  # (the braces keep the shell's "Floating point exception (core dumped)" off stderr)
  if { (cd "$dir" && ulimit -c unlimited && exec "$out/bin/calc" "$3") >/dev/null 2>&1; } 2>/dev/null; then
    die "calc '$3' did not crash"
  fi
  if [ ! -f "$dir/core" ]; then
    (cd "$dir" && gdb -batch -nx -ex run -ex 'generate-core-file core' -ex kill \
      --args "$out/bin/calc" "$3") >/dev/null 2>&1 || true
  fi
  [ -f "$dir/core" ] || die "no core for calc '$3' in $dir"
}
crash div 0 '6 0 /'
crash div 1 'x 3 + 5 5 - /'
crash mod 2 '9 0 %'
crash underflow 3 '+'

k=0
for input in '1 2 +' '6 3 /' 'x 2 *' '9 4 %'; do
  mkdir -p "$out/passing/$k"
  (cd "$out/passing/$k" && CSI_COVERAGE_OUT=. "$out/bin/calc" "$input" >/dev/null) ||
    die "calc '$input' failed"
  k=$((k + 1))
done

"$csi" triage --store "$out/crashes.db" --passing "$out/passing" --suspicious 50 "$out/cores" \
  >"$out/triage.txt" 2>"$out/triage.err" || die "csi triage failed: $(cat "$out/triage.err")"
[ -s "$out/crashes.db" ] || die "csi triage made no store"
