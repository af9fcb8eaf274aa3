#!/usr/bin/env bash
# The "Metadata size" table of README.md: each program of a run.sh scratch dir built again with
# csi-cc in both metadata formats, `--csi-metadata=text` (what csi-cc wrote before: five text
# sections) and `--csi-metadata=zstd` (the default: compressed .debug_CSI_CFG), and their file
# sizes against run.sh's plain build. Not a test.
#
#   crates/csi-cc/bench/suite/metadata_size.sh [scratch-dir]      (default /tmp/csi-suite)
#
# Needs a scratch dir run.sh has built (the unpacked, configured sources in <prog>/o/ and the
# plain builds). Environment: PROGRAMS (default "flex grep lua bzip2 zstd gzip"), CONFIGS
# (default "realistic fixed"), CSI_CC, JOBS (make -j, default 2). Builds go to
# <scratch>/metadata/<prog>/<config>-<format>; each build's CPU time (user + sys of the whole
# make) is printed with it.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CSI="${CSI_CC:-$HERE/../../target/release/csi-cc}"
CSI="$(cd "$(dirname "$CSI")" && pwd)/$(basename "$CSI")"
W="$(cd "${1:-/tmp/csi-suite}" && pwd)"
O="$W/metadata"
read -r -a PROGRAMS <<<"${PROGRAMS:-flex grep lua bzip2 zstd gzip}"
read -r -a CONFIGS <<<"${CONFIGS:-realistic fixed}"
JOBS="${JOBS:-2}"
mkdir -p "$O"

. "$HERE/programs.sh"  # bin_of, make_prog: as run.sh builds

: >"$O/builds.tsv"
for p in "${PROGRAMS[@]}"; do
  src=$(ls -d "$W/$p"/o/*/ 2>/dev/null | head -1)
  [ -n "$src" ] && [ -x "$W/$p/plain/$(bin_of "$p")" ] || { echo "$p: run run.sh first" >&2; continue; }
  for v in "${CONFIGS[@]}"; do
    for m in text zstd; do
      d="$O/$p/$v-$m"
      rm -rf "$d" && mkdir -p "$O/$p" && cp -a "$src" "$d"
      case "$v" in
        fixed) c="$CSI --csi-metadata=$m --csi-scheme=cc --csi-schema=$W/$p.fixed.schema" ;;
        *) c="$CSI --csi-metadata=$m --csi-scheme=$v" ;;
      esac
      TIMEFORMAT='%U %S'
      cpu=$({ time make_prog "$p" "$d" "$c" >"$d.log" 2>&1; } 2>&1) || { echo "$p $v $m: build failed ($d.log)" >&2; continue; }
      echo "$p $v $m cpu $(echo "$cpu" | awk '{print $1 + $2}') s" >&2
      printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$v" "$m" "$W/$p/plain/$(bin_of "$p")" "$d/$(bin_of "$p")" >>"$O/builds.tsv"
    done
  done
done

python3 - "$O/builds.tsv" <<'PY'
import os, subprocess, sys
CSI = {".debug_PT", ".debug_CC", ".debug_BBC", ".debug_FC", ".debug_CSI_CFG"}
def csi_bytes(f):
    out = subprocess.run(["size", "-A", f], capture_output=True, text=True).stdout
    return sum(int(l.split()[1]) for l in out.splitlines() if l.split()[:1] and l.split()[0] in CSI)
builds = {}
for line in open(sys.argv[1]):
    p, v, m, plain, exe = line.rstrip("\n").split("\t")
    builds[(p, v, m)] = (plain, exe)
print("| program | config | plain | text | ×plain | zstd | ×plain | CSI sections, text → zstd "
      "| zstd without CSI sections | plain + zstd CSI sections |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (p, v, m), (plain, ft) in builds.items():
    if m != "text" or (p, v, "zstd") not in builds:
        continue
    fz = builds[(p, v, "zstd")][1]
    pl, t, z = os.path.getsize(plain), os.path.getsize(ft), os.path.getsize(fz)
    st, sz = csi_bytes(ft), csi_bytes(fz)
    print(f"| {p} | {v} | {pl/1e3:.0f} KB | {t/1e3:.0f} KB | ×{t/pl:.2f} | {z/1e3:.0f} KB | "
          f"×{z/pl:.2f} | {st/1e3:.0f} → {sz/1e3:.0f} KB (÷{st/sz:.1f}) | ×{(z-sz)/pl:.2f} | "
          f"×{(pl+sz)/pl:.2f} |")
PY
