#!/usr/bin/env bash
# The crash store's benchmark (not a CI test): fills a SQLite store and a PostgreSQL store
# (a server of its own from Debian's package, on loopback, default settings) with synthetic
# crash records through the real API (crates/csi-triage/examples/store_bench.rs), and prints
# the ingest rate and the latency of the bucket-list and bucket-crashes queries (median of
# 20). Numbers: docs/triage.md, "The crash store".
#
#   bench/store/run.sh            # 100,000 crashes, 200 groups, ingests of 1,000 over 10 groups
#   CRASHES=20000 bench/store/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
CRASHES=${CRASHES:-100000}
STORE_GROUPS=${STORE_GROUPS:-200}
BATCH=${BATCH:-1000}
GROUPS_PER_BATCH=${GROUPS_PER_BATCH:-10}
ARGS=("$CRASHES" "$STORE_GROUPS" "$BATCH" "$GROUPS_PER_BATCH")

cargo build --release -q -p csi-triage --example store_bench
BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/release/examples/store_bench"
TMP=$(mktemp -d /tmp/csi-store-bench.XXXXXX)
chmod 755 "$TMP"

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
RUN=()
stop() {
  if [ -n "$PGBIN" ] && [ -f "$TMP/pg/postmaster.pid" ]; then
    "${RUN[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$TMP"
}
trap stop EXIT

echo "== SQLite ($(uname -m), $(nproc) CPUs)"
"$BIN" "$TMP/crashes.db" "${ARGS[@]}"
echo "  file: $(du -sh "$TMP/crashes.db" | cut -f1)"

if [ -z "$PGBIN" ]; then
  echo "== PostgreSQL: no server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)"
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  # initdb refuses root: the server runs as Debian's postgres user (or nobody).
  if id postgres >/dev/null 2>&1; then U=postgres; else U=nobody; fi
  RUN=(runuser -u "$U" --)
  chown "$U" "$TMP"
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${RUN[@]}" "$PGBIN/initdb" -D "$TMP/pg" -U csi -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
"${RUN[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg" -l "$TMP/pg.log" -w \
  -o "-k $TMP -p $PORT -c listen_addresses=127.0.0.1" start >/dev/null
echo "== PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') (loopback, default settings)"
"$BIN" "postgres://csi@127.0.0.1:$PORT/postgres" "${ARGS[@]}"
echo "  database: $(psql -h 127.0.0.1 -p "$PORT" -U csi -d postgres -Atc "SELECT pg_size_pretty(pg_database_size('postgres'))")"
