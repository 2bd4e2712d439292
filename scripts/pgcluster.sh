#!/bin/sh
# A private PostgreSQL cluster for make run, make test and make bench.
#   pgcluster.sh start DIR PORT [fast]   initialise on first use, then start
#   pgcluster.sh stop DIR                stop (fast shutdown)
# PostgreSQL refuses to run as root, so as root the cluster belongs to the
# postgres user. "fast" turns fsync off: for throwaway test clusters only.
set -e
cmd="$1"; dir="$2"; port="$3"; mode="$4"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "pgcluster: no PostgreSQL server found (apt-get install postgresql)" >&2; exit 1; }

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    opts="-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=512MB"
    [ "$mode" = fast ] && opts="$opts -c fsync=off -c full_page_writes=off"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -o "$opts" -w -t 60 start >/dev/null \
        || { tail -20 "$dir/postgres.log" >&2; exit 1; }
}

stop() {
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

case "$cmd" in
    start) start ;;
    stop)  stop ;;
    *) echo "usage: pgcluster.sh start DIR PORT [fast] | stop DIR" >&2; exit 2 ;;
esac
