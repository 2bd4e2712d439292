#!/bin/sh
# A private PostgreSQL cluster for make run, make test and make bench.
#   pgcluster.sh start DIR PORT [fast]   initialise on first use, then start
#   pgcluster.sh stop DIR [immediate]    stop (fast shutdown; immediate: no
#                                        shutdown checkpoint, crash recovery at
#                                        the next start, as scripts/chaos.sh uses)
#   pgcluster.sh standby DIR PORT FROM_PORT
#                                        a streaming standby of the cluster on
#                                        FROM_PORT (pg_basebackup into an empty
#                                        DIR), started; the primary then waits
#                                        for it at every commit (synchronous
#                                        replication)
#   pgcluster.sh promote DIR             the standby becomes a primary
# PostgreSQL refuses to run as root, so as root the cluster belongs to the
# postgres user. "fast" turns fsync off: for throwaway test clusters only.
# Exit status: 0 started, 3 the port is in use, 4 postgres cannot reach DIR,
# 1 anything else (PostgreSQL's log is shown).
set -e
cmd="$1"; dir="$2"; port="$3"; mode="$4"
[ "$cmd" = stop ] && { mode="$3"; port=""; }
[ "$cmd" = standby ] && { from_port="$4"; mode=""; }
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "pgcluster: no PostgreSQL server found (apt-get install postgresql)" >&2; exit 1; }

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# As root the cluster runs as postgres, which must be able to reach DIR: a
# checkout under a home directory only its owner may enter (0700) is not.
check_reachable() {
    [ "$(id -u)" = 0 ] || return 0
    as_owner test -w "$dir" && as_owner test -x "$dir" && return 0
    echo "pgcluster: the postgres user cannot reach $dir (PostgreSQL refuses to run as root," >&2
    echo "so the cluster runs as postgres). A parent directory is closed to other users:" >&2
    echo "work from a checkout outside it (e.g. under /srv or /tmp), or open its parents with chmod o+x." >&2
    exit 4
}

# pg_ctl only says the server did not start; its log says why.
explain_failure() {
    if grep -q "Address already in use" "$dir/postgres.log" 2>/dev/null; then
        echo "pgcluster: port $port is already in use on 127.0.0.1; choose another port" >&2
        exit 3
    fi
    tail -20 "$dir/postgres.log" >&2
    exit 1
}

start() {
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    check_reachable
    start_existing_or_new
}

start_existing_or_new() {
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    opts="-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=512MB"
    [ "$mode" = fast ] && opts="$opts -c fsync=off -c full_page_writes=off"
    [ ! -f "$dir/postgres.log" ] || : >"$dir/postgres.log"   # this start's reasons only
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -o "$opts" -w -t 60 start >/dev/null 2>&1 \
        || explain_failure
}

# -R writes the connection to the primary and standby.signal; the primary
# is then told to wait for any one standby at each commit, so that a commit
# it acknowledged is on the standby too (what a failover must not lose).
standby() {
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    check_reachable
    [ ! -e "$dir/data" ] || { echo "pgcluster: $dir/data exists: a standby starts from an empty directory" >&2; exit 1; }
    as_owner "$bin/pg_basebackup" -h 127.0.0.1 -p "$from_port" -U postgres -D "$dir/data" -R -X stream -c fast \
        --no-sync >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
    start_existing_or_new
    psql -X -q -h 127.0.0.1 -p "$from_port" -U postgres -d postgres \
        -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
}

promote() {
    as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null
}

stop() {
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_owner "$bin/pg_ctl" -D "$dir/data" -m "${mode:-fast}" -w stop >/dev/null 2>&1 || true
}

case "$cmd" in
    start) start ;;
    standby) standby ;;
    promote) promote ;;
    stop)  case "${mode:-fast}" in fast|immediate) stop ;; *) echo "pgcluster: stop mode is fast or immediate" >&2; exit 2 ;; esac ;;
    *) echo "usage: pgcluster.sh start DIR PORT [fast] | stop DIR [immediate] | standby DIR PORT FROM_PORT | promote DIR" >&2; exit 2 ;;
esac
