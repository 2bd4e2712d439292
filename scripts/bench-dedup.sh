#!/bin/bash
# Dedup at depth (issue 14): the cost of a 20-item flush as its partition
# fills. Fills one partition with ROUNDS x 500 flushes of 20 messages
# (queen.push_flush, the statement a push sends, called by pgbench on one
# connection, each flush its own transaction) and prints the mean latency of
# each round of 500 with the messages the partition held before it: once
# with client-chosen transactionIds (the duplicate check runs, dedup window
# 3600 s) and once with generated ones (no check: what the sidecar's upkeep
# costs alone). HTTP, JSON and compression are left out: they do not grow
# with the partition.
#   scripts/bench-dedup.sh BINARY [ROUNDS]     (default 6: 60,000 messages)
# Runs a throwaway durable cluster (fsync on) migrated by BINARY, removed on
# any exit.
set -u
bin="${1:?usage: scripts/bench-dedup.sh BINARY [ROUNDS]}"; rounds="${2:-6}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
here=$(cd "$(dirname "$0")" && pwd)
pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
dir=$(mktemp -d /tmp/silt-dedup.XXXXXX) || exit 1
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
trap '"$here/pgcluster.sh" stop "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT

port=$(cluster_start "$dir") || exit 1
PG_HOST=127.0.0.1 PG_PORT=$port PG_USER=postgres PG_DB=postgres "$bin" migrate >"$dir/migrate.log" 2>&1 || { cat "$dir/migrate.log" >&2; exit 1; }

# One flush of 20 random hashes and message ids to queue $1; :probe says
# whether the transactionIds were the client's (the check runs) or generated.
flush_sql() {
    cat <<EOF
SELECT count(*) FROM queen.push_flush(ARRAY['$1'], ARRAY['p'], ARRAY[20], '\x00'::bytea, ARRAY[1],
  (SELECT string_agg(decode(md5(random()::text || g), 'hex'), ''::bytea) FROM generate_series(1, 20) g),
  (SELECT string_agg(decode(md5(random()::text || g || 'id'), 'hex'), ''::bytea) FROM generate_series(1, 20) g),
  ARRAY[:probe], ARRAY[false]);
EOF
}
for probe in true false; do
    flush_sql "dedup_$probe" >"$dir/flush.sql"
    echo "transactionIds $([ $probe = true ] && echo client-chosen || echo generated):"
    start=$(date +%s%N)
    for r in $(seq 0 $((rounds - 1))); do
        lat=$("$pgbin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -f "$dir/flush.sql" -c 1 -t 500 \
              -D probe=$probe postgres 2>&1 | sed -n 's/^latency average = //p')
        printf '  %6d messages before: mean flush %s\n' $((r * 10000)) "$lat"
    done
    echo "  total $(( ($(date +%s%N) - start) / 1000000 )) ms for $((rounds * 10000)) messages"
done
