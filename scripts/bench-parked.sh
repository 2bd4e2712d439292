#!/bin/bash
# The cost of commits with many parked long-polls: N long-poll pops (curl,
# queue mode, autoAck) park on one queue, then P single-message pushes run
# one after another. Prints the database transactions of 3 idle seconds with
# the pops parked, then the pushes' time, the server's CPU ticks and the
# database transactions they caused (pg_stat_database, which a backend
# updates up to a second late: read the idle figure as a rate).
#   PG_PORT=25432 scripts/bench-parked.sh BINARY [N] [P]
# Needs a running PostgreSQL on 127.0.0.1:$PG_PORT (e.g. scripts/pgcluster.sh
# start /tmp/pg 25432 fast); creates and drops its own database.
set -u
bin="${1:?usage: PG_PORT=port scripts/bench-parked.sh BINARY [N] [P]}"; n="${2:-1000}"; p="${3:-20}"
pg_port="${PG_PORT:?set PG_PORT}"; port="${HTTP_PORT:-16697}"; db=silt_parked
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
cluster_psql "$pg_port" -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" || exit 1
PG_HOST=127.0.0.1 PG_PORT=$pg_port PG_USER=postgres PG_DB=$db PORT=$port LOG_LEVEL=warn "$bin" server & server=$!
pops=()
cleanup() { kill "$server" "${pops[@]}" 2>/dev/null; wait 2>/dev/null
            cluster_psql "$pg_port" -d postgres -c "DROP DATABASE IF EXISTS $db" 2>/dev/null; }
trap cleanup EXIT
for _ in $(seq 100); do curl -s "localhost:$port/health" >/dev/null && break; sleep 0.1; done
for _ in $(seq "$n"); do
    curl -s -o /dev/null "localhost:$port/api/v1/pop/queue/parked?wait=true&timeout=120000&autoAck=true" &
    pops+=($!)
done
parked=0
for _ in $(seq 600); do
    parked=$(curl -s "localhost:$port/metrics/prometheus" | awk '/^silt_long_polls_parked/ { print $2 }')
    [ "${parked:-0}" -ge "$n" ] && break
    sleep 0.2
done
xacts() { cluster_psql "$pg_port" -d "$db" -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'"; }
ticks() { proc_ticks "$server"; }
i0=$(xacts); sleep 3; i1=$(xacts)
c0=$(ticks); x0=$(xacts); t0=$(date +%s%N)
for i in $(seq "$p"); do curl -s -o /dev/null "localhost:$port/api/v1/push" -d "{\"items\":[{\"queue\":\"parked\",\"payload\":$i}]}"; done
t1=$(date +%s%N); c1=$(ticks); x1=$(xacts)
echo "parked $parked; idle 3 s: database transactions $((i1 - i0)); $p pushes in $(( (t1 - t0) / 1000000 )) ms; server CPU $((c1 - c0)) ticks; database transactions $((x1 - x0))"
