#!/bin/bash
# A 100,000-partition queue beside small ones (issue 15, point 2): push
# batch 1 and pop+ack on small queues, measured before the wide queue exists
# and again right after it is made (before autovacuum can have analyzed
# its rows), then pop+ack on the wide queue itself.
#   scripts/bench-isolation.sh BINARY        (SECONDS_PER_RUN, default 6)
# A throwaway cluster with PostgreSQL's durable defaults; one server.
set -u
bin="${1:?usage: scripts/bench-isolation.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
dir=$(mktemp -d /tmp/silt-bench-iso.XXXXXX) && chmod 755 "$dir"
seconds="${SECONDS_PER_RUN:-6}"
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; "$here/pgcluster.sh" stop "$dir" >/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
pgport=$(cluster_start "$dir") || exit 1
port=$(cluster_free_port) || exit 1
PG_HOST=127.0.0.1 PG_PORT=$pgport PORT=$port LOG_LEVEL=warn "$bin" server 2>"$dir/server.log" &
pid=$!
server_wait_healthy "$port" "$pid" bench-isolation || exit 1
bench() { SILT_URL="http://127.0.0.1:$port" "$bin" bench --seconds "$seconds" --preload 200000 "$@" 2>/dev/null; }
rows() { grep -E "^(push|pop)"; }
echo "small queues, nothing else in the database:"
bench --scenarios push1,popack | rows
echo "the 100,000-partition queue made (200,000 messages), then at once:"
bench --scenarios popack-100k --keep | rows
bench --scenarios push1,popack | rows
echo "last analyze of queen.log_partitions: $(cluster_psql "$pgport" -Atc \
    "SELECT coalesce(greatest(last_analyze, last_autoanalyze)::text, 'never') FROM pg_stat_user_tables
      WHERE schemaname = 'queen' AND relname = 'log_partitions'")"
