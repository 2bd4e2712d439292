#!/bin/bash
# bench-pgq: silt's message log beside PgQ (Skype's queue inside
# PostgreSQL, Debian's postgresql-NN-pgq3), on one throwaway durable
# cluster, each in a database of its own, alternating, BENCH_PGQ_ROUNDS
# rounds, medians (issue 33, point 5). Three phases a round per system:
#   produce  PRODUCERS connections for SECONDS, 100 messages a transaction
#            (PgQ: pgbench, pgq.insert_event x 100; silt: wrk bench/push.lua,
#            one partition of 16 a request, no transactionId)
#   consume  the backlog produce left, drained to the last message (PgQ:
#            one consumer, next_batch / get_batch_events / finish_batch as
#            its design reads a queue; silt: CONSUMERS wrk bench/popack.lua
#            connections, pop 100 + ack batch)
#   e2e      both at once for SECONDS: produced, consumed, backlog growth
# with PostgreSQL's CPU (and silt's server's) per message from /proc. PgQ's
# ticker (pgq.ticker(), what pgqd calls) runs 10 times a second through
# every phase; a batch holds the events between two ticks.
#   scripts/bench-pgq.sh BINARY
# Environment: BENCH_PGQ_ROUNDS (3), BENCH_PGQ_SECONDS (8),
# BENCH_PGQ_PRODUCERS (16), BENCH_PGQ_CONSUMERS (10, silt's),
# BENCH_PGQ_SYSTEMS ("pgq silt", swapped every other round; one for a
# quick look).
set -u
bin="${1:?usage: scripts/bench-pgq.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
[ -x "$bin" ] || { echo "bench-pgq: $bin is not executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
"$here/deps.sh" pgq || exit 1
rounds=${BENCH_PGQ_ROUNDS:-3}
secs=${BENCH_PGQ_SECONDS:-8}
producers=${BENCH_PGQ_PRODUCERS:-16}
consumers=${BENCH_PGQ_CONSUMERS:-10}
partitions=16
export LUA_PATH="$here/../bench/?.lua;;"
dir=$(mktemp -d /tmp/silt-bench-pgq.XXXXXX) && chmod 755 "$dir" || exit 1
server_pid="" ticker_pid="" hz=$(getconf CLK_TCK)

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    [ -z "$ticker_pid" ] || kill "$ticker_pid" 2>/dev/null
    server_stop "$server_pid"
    "$here/pgcluster.sh" stop "$dir" >/dev/null 2>&1
    rm -rf "$dir"
}
trap 'cleanup; exit "${status:-1}"' EXIT
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM

pg_port=$(cluster_start "$dir") || { echo "bench-pgq: could not start PostgreSQL" >&2; exit 1; }
cluster_psql "$pg_port" -c "CREATE DATABASE silt" -c "CREATE DATABASE pgq" || exit 1
cluster_psql "$pg_port" -d pgq -c "CREATE EXTENSION pgq" || exit 1
server_start bench-pgq "$bin" "$pg_port" "$dir/server.log" PG_DB=silt || exit 1
url="http://127.0.0.1:$http_port"

pgq_sql() { cluster_psql "$pg_port" -d pgq -Atc "$1"; }
pgbench_run() { PGHOST=127.0.0.1 PGPORT=$pg_port PGUSER=postgres pgbench -n -d pgq "$@"; }

# The PgQ scripts: a producer's transaction of 100 events, the payload
# silt's push.lua sends; a consumer's turn (a batch read whole and
# finished; when no batch is ready it waits 10 ms, as a consumer sleeps).
cat >"$dir/produce.sql" <<'SQL'
BEGIN;
SELECT pgq.insert_event('bench', 'msg', format('{"n":%s,"s":"abcdefghij"}', 10000 + g)) FROM generate_series(1, 100) g;
COMMIT;
SQL
cat >"$dir/consume.sql" <<'SQL'
SELECT coalesce(pgq.next_batch('bench', 'c'), 0) AS b \gset
\if :b > 0
SELECT ev_id, ev_type, ev_data FROM pgq.get_batch_events(:b);
SELECT pgq.finish_batch(:b);
\else
\sleep 10 ms
\endif
SQL
echo 'SELECT pgq.ticker();' >"$dir/tick.sql"

# The events the consumer has finished: the event sequence at its last tick.
pgq_consumed() {
    pgq_sql "SELECT t.tick_event_seq FROM pgq.subscription s JOIN pgq.consumer c ON c.co_id = s.sub_consumer
               JOIN pgq.tick t ON t.tick_queue = s.sub_queue AND t.tick_id = s.sub_last_tick WHERE c.co_name = 'c'"
}
pgq_produced() { pgq_sql "SELECT last_value FROM pgq.seq_getval((SELECT queue_event_seq FROM pgq.queue WHERE queue_name = 'bench')) last_value"; }

# The messages of silt's queue $1 that no pop has acknowledged yet: the
# lag of the group that reads it (queue mode's), or, before any pop made
# that group, every message it holds.
silt_backlog() {
    local page pending
    page=$(curl -s "$url/api/v1/resources/queues?search=$1")
    pending=$(grep -o '"pending":{"[^"]*":[0-9]*' <<<"$page" | grep -o '[0-9]*$')
    [ -n "$pending" ] && { echo "$pending"; return; }
    grep -o '"total":[0-9]*' <<<"$page" | grep -o '[0-9]*$'
}

# Producers for $secs into the system $1 (queue $2 for silt), in the
# background; the pid is $load.
start_producers() {
    if [ "$1" = pgq ]; then
        pgbench_run -c "$producers" -j 2 -T "$secs" -f "$dir/produce.sql" >"$dir/produce.out" 2>&1 &
    else
        wrk -t1 -c"$producers" -d"${secs}s" --timeout 60s -s "$here/../bench/push.lua" "$url" \
            -- "$2" 100 "$partitions" 1p >"$dir/produce.out" 2>&1 &
    fi
    load=$!
}

# Consumers of system $1 (queue $2), running until stopped; pid $drain.
start_consumers() {
    if [ "$1" = pgq ]; then
        pgbench_run -c 1 -T 3600 -f "$dir/consume.sql" >"$dir/consume.out" 2>&1 &
    else
        wrk -t"$consumers" -c"$consumers" -d3600s --timeout 60s -s "$here/../bench/popack.lua" "$url" \
            -- "$2" 0 >"$dir/consume.out" 2>&1 &
    fi
    drain=$!
}

stop_consumers() { kill "$drain" 2>/dev/null; wait "$drain" 2>/dev/null; }

# Messages the producers of system $1 committed (from their own report).
produced_count() {
    if [ "$1" = pgq ]; then
        awk '/number of transactions actually processed/ { split($NF, a, "/"); print a[1] * 100 }' "$dir/produce.out"
    else
        awk '/^wrk-result/ { for (i = 2; i <= NF; i++) if ($i ~ /^msgs=/) print substr($i, 6) }' "$dir/produce.out"
    fi
}

# What system $1 still holds unconsumed (queue $2).
backlog() {
    if [ "$1" = pgq ]; then echo $(( $(pgq_produced) - $(pgq_consumed) )); else silt_backlog "$2"; fi
}

cpu_mark() { pg0=$(cluster_ticks "$dir"); sv0=$(proc_ticks "$server_pid"); t0=$(date +%s.%N); }

# "RATE PG_US SERVER_US" for N messages since cpu_mark.
cpu_line() {
    awk -v n="$1" -v p=$(($(cluster_ticks "$dir") - pg0)) -v s=$(($(proc_ticks "$server_pid") - sv0)) \
        -v t0="$t0" -v t1="$(date +%s.%N)" -v hz="$hz" \
        'BEGIN { n = n > 0 ? n : 1; printf "%.0f %.2f %.2f\n", n / (t1 - t0), p / hz / n * 1e6, s / hz / n * 1e6 }'
}

# One round of system $1: prints "PHASE SYSTEM RATE PG_US SERVER_US [EXTRA]".
round() {
    local sys=$1 q="" n left deadline
    if [ "$sys" = pgq ]; then
        pgq_sql "SELECT pgq.create_queue('bench'), pgq.register_consumer('bench', 'c')" >/dev/null
        pgbench_run -c 1 -R 10 -T 100000 -f "$dir/tick.sql" >/dev/null 2>&1 &
        ticker_pid=$!
    else
        q="pgq-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
    fi
    cpu_mark; start_producers "$sys" "$q"; wait "$load"
    n=$(produced_count "$sys")
    echo "produce $sys $(cpu_line "$n")"
    # the backlog: PgQ's last events wait for the next tick
    deadline=$((SECONDS + 10))
    while [ "$SECONDS" -lt "$deadline" ] && [ "$(backlog "$sys" "$q")" -lt "$n" ]; do sleep 0.05; done
    left=$(backlog "$sys" "$q")
    cpu_mark; start_consumers "$sys" "$q"
    deadline=$((SECONDS + 300))
    while [ "$SECONDS" -lt "$deadline" ] && [ "$(backlog "$sys" "$q")" -gt 0 ]; do sleep 0.05; done
    echo "consume $sys $(cpu_line "$((left - $(backlog "$sys" "$q")))") backlog=$left"
    cpu_mark; start_producers "$sys" "$q"; wait "$load"
    n=$(produced_count "$sys")
    left=$(backlog "$sys" "$q")
    echo "e2e $sys $(cpu_line "$((n - left))") produced=$n grew=$left"
    stop_consumers
    if [ "$sys" = pgq ]; then
        kill "$ticker_pid" 2>/dev/null; wait "$ticker_pid" 2>/dev/null; ticker_pid=""
        pgq_sql "SELECT pgq.unregister_consumer('bench', 'c'), pgq.drop_queue('bench')" >/dev/null
    else
        curl -s -o /dev/null -X DELETE "$url/api/v1/resources/queues/$q"
    fi
}

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start; PgQ $(pgq_sql "SELECT pgq.version()")" >&2
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then order="pgq silt"; else order="silt pgq"; fi
    [ -z "${BENCH_PGQ_SYSTEMS:-}" ] || order=$BENCH_PGQ_SYSTEMS
    for sys in $order; do round "$sys" | tee -a "$dir/results" >&2; done
done
echo "machine: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2

col() { awk -v p="$1" -v s="$2" -v c="$3" '$1 == p && $2 == s { print $c }' "$dir/results" | median; }
printf '%-8s %-5s %12s %10s %10s\n' phase system "msg/s" "PG µs/msg" "silt µs/msg"
for phase in produce consume e2e; do
    for sys in pgq silt; do
        printf '%-8s %-5s %12.0f %10.2f %10.2f\n' "$phase" "$sys" "$(col $phase $sys 3)" "$(col $phase $sys 4)" "$(col $phase $sys 5)"
    done
done
for sys in pgq silt; do
    echo "e2e $sys: backlog grew by $(awk -v s="$sys" '$1 == "e2e" && $2 == s { sub(/grew=/, "", $NF); print $NF }' "$dir/results" | median) messages in ${secs} s (median)"
done
status=0
