#!/bin/bash
# What a task costs PostgreSQL, counted: sends N no-op tasks and drains them
# with the peers benchmark's silt workers (bench/peers/run.mjs, scenario
# drain: 8 loops claiming 100 with start, one finish a batch), on a durable
# throwaway cluster with pg_stat_statements loaded, and prints per task:
# the WAL records by type and their bytes (pg_waldump), the rows inserted,
# updated (heap-only) and deleted per table and the index scans
# (pg_stat_user_tables, pg_stat_user_indexes), and every statement's calls
# and plans per 1,000 tasks and wall time per task (pg_stat_statements,
# nested ones too: a function's time includes its statements').
#   scripts/bench-task-writes.sh BINARY [N]      (N: 20000)
# The counts cover the send and the drain; the server is stopped before
# the second reading so that its backends have reported their statistics.
# BENCH_TASK_WRITES_SCENARIO=e2e counts the peers' end-to-end scenario
# instead (producers sending 25 a call beside the workers for
# BENCH_PEERS_WINDOW_S, run.mjs's 10 s unless set), per task it finished
# (N is read from horsies_task_history): its sends, claims and finishes
# come in smaller batches, and its claims that find nothing park and look
# for the next delayed task.
# The CPU figures are bench-peers.sh's (pg_stat_statements costs CPU).
set -u
bin="${1:-}"
n="${2:-20000}"
[ -n "$bin" ] && [ -x "$bin" ] || { echo "usage: scripts/bench-task-writes.sh BINARY [N]" >&2; exit 2; }
scenario="${BENCH_TASK_WRITES_SCENARIO:-drain}"
case "$scenario" in drain|e2e) ;; *) echo "bench-task-writes: BENCH_TASK_WRITES_SCENARIO is drain or e2e" >&2; exit 2 ;; esac
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
dir=$(mktemp -d /tmp/silt-task-writes.XXXXXX) && chmod 755 "$dir" || exit 1
server_pid=""
cleanup() {
    server_stop "$server_pid"
    "$here/pgcluster.sh" stop "$dir" >/dev/null 2>&1
    rm -rf "$dir"
}
trap cleanup EXIT

port=$(cluster_start "$dir") || exit 1
printf "shared_preload_libraries='pg_stat_statements'\npg_stat_statements.track=all\npg_stat_statements.track_planning=on\n" \
    >>"$dir/data/postgresql.conf"
"$here/pgcluster.sh" stop "$dir" >/dev/null && "$here/pgcluster.sh" start "$dir" "$port" >/dev/null || exit 1
psql_() { cluster_psql "$port" -d writes "$@"; }
cluster_psql "$port" -d postgres -c "CREATE DATABASE writes" && psql_ -c "CREATE EXTENSION pg_stat_statements" || exit 1

start_server() { server_start bench-task-writes "$bin" "$port" "$dir/server.log" PG_DB=writes || exit 1; }
stop_server() { server_stop "$server_pid"; server_pid=""; }
reading() {   # reading NAME: the counters now, kept in tables of the database
    psql_ -q -c "CREATE TABLE r_tables_$1 AS SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables" \
        -c "CREATE TABLE r_indexes_$1 AS SELECT relname, indexrelname, idx_scan FROM pg_stat_user_indexes"
    psql_ -Atc "SELECT pg_current_wal_insert_lsn()"
}

start_server   # the schema, the classes and their leaves; then counting starts
stop_server
lsn_a=$(reading a)
psql_ -q -c "SELECT pg_stat_statements_reset()" >/dev/null
start_server
(cd "$dir" && BENCH_PEERS_SCENARIOS="$scenario" BENCH_PEERS_BACKLOG="$n" BENCH_PEERS_CLK_TCK=$(getconf CLK_TCK) \
    node "$root/bench/peers/run.mjs" --system silt --silt-url "http://127.0.0.1:$http_port" --server-pid "$server_pid" \
    --postmaster "$(head -n 1 "$dir/data/postmaster.pid")" >/dev/null) || exit 1
stop_server
lsn_b=$(reading b)
if [ "$scenario" = e2e ]; then
    n=$(psql_ -Atc "SELECT count(*) FROM horsies_task_history")
    echo "== the e2e window finished $n tasks: figures per finished task"
    [ "${n:-0}" -gt 0 ] || { echo "bench-task-writes: no task finished; nothing to divide by" >&2; exit 1; }
fi

echo "== WAL per task, by record type (pg_waldump --stats=record)"
"$pgbin/pg_waldump" --stats=record -p "$dir/data/pg_wal" -s "$lsn_a" -e "$lsn_b" 2>/dev/null | awk -v n="$n" '
    { gsub(/[()%\[\]]/, " ") }
    $1 != "Total" && $2 ~ /^[0-9]+$/ && $2 > n / 50 { printf "  %-22s %6.2f records %7.1f bytes (%.1f of them full pages)\n", $1, $2 / n, $8 / n, $6 / n }
    $1 == "Total" { printf "  %-22s %6.2f records %7.1f bytes\n", "total", $2 / n, $7 / n }'
echo "== rows per task"
psql_ -c "SELECT b.relname AS table, round((b.n_tup_ins - a.n_tup_ins)::numeric / $n, 2) AS inserted,
                 round((b.n_tup_upd - a.n_tup_upd)::numeric / $n, 2) AS updated,
                 round((b.n_tup_hot_upd - a.n_tup_hot_upd)::numeric / $n, 2) AS heap_only,
                 round((b.n_tup_del - a.n_tup_del)::numeric / $n, 2) AS deleted
            FROM r_tables_b b JOIN r_tables_a a USING (relname)
           WHERE b.n_tup_ins + b.n_tup_upd + b.n_tup_del - a.n_tup_ins - a.n_tup_upd - a.n_tup_del > $n / 100 ORDER BY 1"
echo "== index scans per task"
psql_ -c "SELECT b.indexrelname AS index, round((b.idx_scan - a.idx_scan)::numeric / $n, 2) AS scans
            FROM r_indexes_b b JOIN r_indexes_a a USING (relname, indexrelname)
           WHERE b.idx_scan - a.idx_scan >= $n / 100 ORDER BY 1"
echo "== statements per 1,000 tasks (nested ones indented)"
psql_ -c "SELECT round(calls * 1000.0 / $n, 1) AS calls, round(plans * 1000.0 / $n, 1) AS plans,
                 round(rows * 1000.0 / $n) AS rows, round(wal_bytes / $n) AS wal_bytes_a_task,
                 round((total_exec_time * 1000 / $n)::numeric, 2) AS us_a_task,
                 CASE WHEN toplevel THEN '' ELSE '  ' END || left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS statement
            FROM pg_stat_statements
           WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'writes') AND calls * 1000 >= $n
           ORDER BY toplevel DESC, calls DESC"
