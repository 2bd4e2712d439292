#!/bin/bash
# The cost of task-history partitions at scale (issue: retention of task
# records, point 8): 20 mapped queues and history_leaf_horizon_days = 14.
# Prints the start-up coverage time, the leaves made, the locks one
# coverage transaction holds, a steady pass's time, a pass dropping 20
# leaves, and the tasks scenario of `silt bench` with and without a
# partition pass forced every second beside it (alternated, ROUNDS each).
#   PG_PORT=25432 scripts/bench-partitions.sh BINARY [ROUNDS] [SECONDS]
# Needs a running PostgreSQL on 127.0.0.1:$PG_PORT (for figures worth
# recording, a durable one: scripts/pgcluster.sh start /tmp/pg 25432);
# creates and drops its own database.
set -u
bin="${1:?usage: PG_PORT=port scripts/bench-partitions.sh BINARY [ROUNDS] [SECONDS]}"
rounds="${2:-3}"; seconds="${3:-10}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
pg_port="${PG_PORT:?set PG_PORT}"; port=16698; db=silt_partitions
dir=$(mktemp -d /tmp/silt-bench-partitions.XXXXXX) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
sq() { cluster_psql "$pg_port" -d "$db" -Atc "$1"; }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
server=""; beside=""
cleanup() {
    [ -n "$beside" ] && kill "$beside" 2>/dev/null
    [ -n "$server" ] && kill "$server" 2>/dev/null
    wait 2>/dev/null
    cluster_psql "$pg_port" -d postgres -c "DROP DATABASE IF EXISTS $db" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
cluster_psql "$pg_port" -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" || exit 1

{ echo "[retention]"; echo "history_leaf_horizon_days = 14"
  for i in $(seq -w 0 19); do echo "queue_retention.q$i = $((10#$i + 2))d"; done; } >"$dir/silt.conf"
PG_HOST=127.0.0.1 PG_PORT=$pg_port PG_USER=postgres PG_DB=$db PORT=$port LOG_LEVEL=warn \
    "$bin" migrate >/dev/null || exit 1
t0=$(date +%s%N)
SILT_CONFIG="$dir/silt.conf" PG_HOST=127.0.0.1 PG_PORT=$pg_port PG_USER=postgres PG_DB=$db PORT=$port \
    LOG_LEVEL=warn "$bin" server >"$dir/server.log" 2>&1 & server=$!
for _ in $(seq 600); do curl -s "localhost:$port/health" >/dev/null && break; sleep 0.05; done
echo "start-up (registration and coverage of every class) until /health answers: $(ms "$t0") ms"
echo "classes: $(sq "SELECT count(*) FROM horsies_retention_classes WHERE duration_s IS NOT NULL AND class_key <> 'heartbeats'") finite;" \
     "leaves: $(sq "SELECT count(*) FROM horsies_task_history_leaf_catalog WHERE class_key NOT IN ('heartbeats', 'forever')") history," \
     "$(sq "SELECT count(*) FROM horsies_task_history_leaf_catalog WHERE class_key = 'heartbeats'") heartbeat"

# Locks: one more class covered in one transaction (its 15 leaves), counted
# before it commits; rolled back.
locks=$(cluster_psql "$pg_port" -d "$db" -At <<'SQL' | tail -n 1
BEGIN;
SELECT count(*) FROM tasks.register_classes(ARRAY['q_extra_7d'], ARRAY[604800]::bigint[], ARRAY['mapping'], true);
SELECT count(*) FROM tasks.partition_cover_class('q_extra_7d', 14);
SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid();
ROLLBACK;
SQL
)
echo "locks held by the coverage transaction of one new class (15 leaves): $locks"

pass_ms() { curl -s -o /dev/null -w '%{time_total}\n' -XPOST "localhost:$port/api/v1/system/task-retention/run" \
            | awk '{ printf "%d\n", $1 * 1000 }'; }
sleep 2   # the timer's first pass (1.5 s after start) is over
echo "steady pass (nothing to make or drop), median of 5: $(for _ in 1 2 3 4 5; do pass_ms; done | median) ms"
sq "SELECT count(*) FROM (SELECT tasks.history_leaf_ensure('q_q' || lpad(i::text, 2, '0') || '_' || (i + 2) || 'd',
                                                         (now() AT TIME ZONE 'UTC')::date - 40)
                         FROM generate_series(0, 19) i) made" >/dev/null
t0=$(date +%s%N)
report=$(curl -s -XPOST "localhost:$port/api/v1/system/task-retention/run")
echo "a pass dropping 20 leaves (one per class, each detached concurrently, then dropped): $(ms "$t0") ms;" \
     "dropped $(grep -o '_2[0-9_]*"' <<<"${report#*\"dropped\"}" | head -n 20 | wc -l), outcome" \
     "$(grep -o '"outcome":"[a-z]*"' <<<"$report")"

run_bench() {
    SILT_URL="http://127.0.0.1:$port" "$bin" bench --scenarios tasks --seconds "$seconds" 2>/dev/null \
        | awk '/tasks send->complete/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9,]+$/) { gsub(",", "", $i); print $i; exit } }'
}
# Each run starts after a checkpoint; the two kinds alternate in the order
# ABBA, so that a drift (tables growing, autovacuum) falls on both alike.
quiet_run() { sq "CHECKPOINT" >/dev/null; quiet+=("$(run_bench)"); }
busy_run() {
    sq "CHECKPOINT" >/dev/null
    ( while :; do curl -s -o /dev/null -XPOST "localhost:$port/api/v1/system/task-retention/run"; sleep 1; done ) &
    beside=$!
    busy+=("$(run_bench)")
    kill "$beside"; wait "$beside" 2>/dev/null; beside=""
}
run_bench >/dev/null   # a first run warms the server and the database up: not counted
quiet=(); busy=()
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then quiet_run; busy_run; else busy_run; quiet_run; fi
    echo "round $r: tasks/s without passes ${quiet[-1]}, with a pass every second ${busy[-1]}"
done
q=$(printf '%s\n' "${quiet[@]}" | median); b=$(printf '%s\n' "${busy[@]}" | median)
echo "median tasks/s: without passes $q, with a pass every second $b ($(awk -v q="$q" -v b="$b" 'BEGIN { printf "%.1f", (b - q) * 100 / q }')%)"
echo "passes run by the server: $(curl -s "localhost:$port/metrics/prometheus" | awk '/^silt_task_partition_passes_total/ { print $2 }')"
