#!/usr/bin/env bash
# Runs every fuzz target for a bounded time on the stable toolchain (cargo-fuzz with
# RUSTC_BOOTSTRAP=1, no sanitizer: the readers are safe Rust, so a panic, an overflow — debug
# assertions are on — or a timeout is what is looked for). Seeds come from the fixtures
# (cores, csi-cc sections, debug files, compressed cores) and examples/fig6-1; inputs that
# once crashed a target are kept in fuzz/regressions/<target>/ and are run first.
#   fuzz/run.sh [seconds per target]     (default 20; FUZZ_TARGETS to choose targets)
# Prints per target: executions and wall time. Exits non-zero when a target crashes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
secs=${1:-20}
targets=${FUZZ_TARGETS:-"core compressed_core minidump debug_file sections graphml grissom_json coverage_file"}
export RUSTC_BOOTSTRAP=1
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --version =0.13.1 --locked
fi
cd "$here"
cargo fuzz build -O -a -s none >/dev/null
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
small_cores=$(ls -S "$root"/fixtures/crashes/*/realistic-O0/core | tail -4)
exes=$(for c in $small_cores; do d=$(dirname "$c"); p=$(basename "$(dirname "$d")"); echo "$d/$p"; done)
mkdir -p "$seeds"/{core,compressed_core,minidump,debug_file,sections,graphml,grissom_json,coverage_file}
for c in $small_cores; do
  n=$(basename "$(dirname "$(dirname "$c")")")
  cp "$c" "$seeds/core/$n"
  # The target prepends each magic number itself: the seeds are the streams after it.
  zstd -q -c "$c" | tail -c +5 >"$seeds/compressed_core/$n.zst"
  lz4 -q -c "$c" | tail -c +5 >"$seeds/compressed_core/$n.lz4"
done
for e in $exes; do
  n=$(basename "$e")
  objcopy --only-keep-debug "$e" "$seeds/debug_file/$n.debug"
  for s in .debug_CSI_CFG .debug_PT .debug_CC .debug_BBC .debug_FC; do
    # --dump-section: `-O binary --only-section` writes nothing for a non-allocated section.
    objcopy --dump-section "$s=$seeds/sections/$n$s" "$e" "$seeds/objcopy.out" 2>/dev/null || true
    [ -s "$seeds/sections/$n$s" ] || rm -f "$seeds/sections/$n$s"
  done
done
# The same sections as csi-cc writes them now: compressed pieces (crates/csi-model/src/sections/
# frame.rs: magic, version, compressed and uncompressed length, zstd frame), two per file.
for f in "$seeds"/sections/*; do
  [ -f "$f" ] || continue
  python3 - "$f" <<'PY'
import struct, subprocess, sys
text = open(sys.argv[1], "rb").read()
cut = text.rfind(b"\n#", 0, len(text) // 2) + 1 or text.rfind(b"\n", 0, len(text) // 2) + 1
out = b""
for piece in (text[:cut], text[cut:]):
    z = subprocess.run(["zstd", "-q", "-c", "-3"], input=piece, capture_output=True, check=True).stdout
    out += b"\xffCSZ\x01" + struct.pack("<QQ", len(z), len(piece)) + z + b"\0\0"
open(sys.argv[1] + ".zst", "wb").write(out)
PY
done
cp "$root/examples/fig6-1/example.graphml" "$seeds/graphml/"
cp "$root/examples/fig6-1/report.json" "$seeds/grissom_json/"
# Coverage files as csi-cc's runtime writes them (crates/csi-cc/runtime/coverage_out.c).
python3 - "$seeds/coverage_file" <<'PY'
import struct, sys
for k, (bid, path, body) in enumerate([(bytes(range(20)), b"/usr/bin/app", bytes([0, 1, 1, 0, 1])),
                                       (b"", b"", b""), (b"\x01" * 8, b"/lib/x.so", b"\x01" * 300)]):
    head = b"CSICOV01" + struct.pack("<QQIIII", 0x4000 + k, len(body), 42, k % 2, len(bid), len(path))
    open(f"{sys.argv[1]}/seed{k}.csicov", "wb").write(head + bid + path + body)
    # Version 2: load bias, thread count and the exit stack's return addresses.
    stack = [0x7f0000001000 + 16 * j for j in range(k + 1)]
    head = b"CSICOV02" + struct.pack("<QQIIIIQII", 0x4000 + k, len(body), 42, 0, len(bid), len(path),
                                      0x7f0000000000, 1 + k % 2, len(stack))
    open(f"{sys.argv[1]}/seed{k}v2.csicov", "wb").write(
        head + bid + path + b"".join(struct.pack("<Q", a) for a in stack) + body)
PY
status=0
for t in $targets; do
  corpus="$seeds/$t"
  if [ -d "$here/regressions/$t" ]; then
    # Inputs that once crashed: each must now run clean.
    for r in "$here"/regressions/"$t"/*; do
      [ -f "$r" ] || continue
      if ! cargo fuzz run -O -a -s none "$t" "$r" >/dev/null 2>&1; then
        echo "fuzz $t: regression input $(basename "$r") crashes again" >&2
        status=1
      fi
    done
  fi
  start=$(date +%s%N)
  log="$seeds/$t.log"
  if cargo fuzz run -O -a -s none "$t" "$corpus" -- -max_total_time="$secs" -max_len=1048576 \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    printf 'fuzz %-15s %8s executions in %s s, no crash\n' "$t" "$runs" "$(( ($(date +%s%N) - start) / 1000000000 ))"
  else
    echo "fuzz $t: CRASH (input under fuzz/artifacts/$t/)" >&2
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -8 >&2
    status=1
  fi
done
exit $status
