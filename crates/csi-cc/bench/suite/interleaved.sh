#!/usr/bin/env bash
# CPU time of two or more builds, measured in interleaved rounds of one long workload (the
# method behind the suite README's zstd sets, sessions 19 and 20): round k runs every build
# once, in the given order, so drifts of a shared machine hit all alike. Per build: median and
# fastest round (user + sys, s); per build after the first: rounds it was faster than the
# first. Not a test.
#
# Usage: interleaved.sh ROUNDS NAME=COMMAND NAME=COMMAND...   (the command's output is dropped)
#   W=/tmp/csi-suite; Z="-q -12 --single-thread -c <$W/zstd/data/FULL.dat"  (zstd skips
#   a symbolic link given by name; run.sh's data files are links)
#   crates/csi-cc/bench/suite/interleaved.sh 15 "bb=$W/zstd/bb/programs/zstd $Z" \
#       "bbcalls=$W/zstd/bbcalls/programs/zstd $Z"
set -euo pipefail
[ $# -ge 3 ] || { sed -n '8,12p' "$0" >&2; exit 2; }
rounds="$1"
shift
names=()
for b in "$@"; do names+=("${b%%=*}"); done
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for r in $(seq "$rounds"); do
  for b in "$@"; do
    if ! t=$({ /usr/bin/time -f "%U %S" sh -c "${b#*=} >/dev/null"; } 2>&1); then
      echo "interleaved.sh: ${b%%=*} failed (${t%%$'\n'*})" >&2
      exit 1
    fi
    echo "$r ${b%%=*} ${t##*$'\n'}" >>"$out"
  done
done
python3 - "$out" "${names[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
names = sys.argv[2:]
times = {n: [float(u) + float(s) for _, m, u, s in rows if m == n] for n in names}
first = times[names[0]]
for n in names:
    t = times[n]
    line = f"{n:12} rounds {len(t):3}  median {statistics.median(t):.2f} s  fastest {min(t):.2f} s"
    if n != names[0]:
        wins = sum(1 for a, b in zip(first, t) if b < a)
        line += f"  faster than {names[0]} in {wins} of {len(t)}"
    print(line)
PY
