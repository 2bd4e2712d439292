#!/bin/sh
# make run: start silt. With PG_HOST or DATABASE_URL set, use that database;
# otherwise run a private PostgreSQL cluster under ./var (created on first
# run) and stop it again when silt exits (Ctrl-C stops both).
set -e
bin="$1"
# Listen on loopback only unless HOST says otherwise (HOST=0.0.0.0 opens it):
# a development server, authentication off by default, is not for the network.
HOST="${HOST:-127.0.0.1}"
export HOST
if [ -n "${PG_HOST:-}" ] || [ -n "${DATABASE_URL:-}" ]; then
    exec "$bin" server
fi
dir="$(pwd)/var/pg"
port="${SILT_PG_PORT:-5433}"
scripts/pgcluster.sh start "$dir" "$port" || {
    status=$?
    [ "$status" = 3 ] && echo "make run: PostgreSQL's port $port is taken; choose another: SILT_PG_PORT=5434 make run" >&2
    exit "$status"
}
echo "silt: PostgreSQL running in $dir on port $port"
stop_cluster() { scripts/pgcluster.sh stop "$dir"; }
trap stop_cluster EXIT
# Ctrl-C reaches silt from the terminal already (the whole foreground process
# group gets it): forwarding it too would be a second signal. A TERM sent to
# this script alone is passed on.
trap ':' INT
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM
PG_HOST=127.0.0.1 PG_PORT="$port" PG_USER=postgres PG_DB=postgres "$bin" server &
pid=$!
# wait returns early when a trapped signal arrives; wait again for silt to drain.
wait "$pid" || true
wait "$pid" 2>/dev/null || true
