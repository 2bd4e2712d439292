# shellcheck shell=bash
# cluster_lib: what the bench and chaos scripts share to run a throwaway
# PostgreSQL cluster (scripts/pgcluster.sh) and a silt server on it. Sourced,
# not run:
#   here=$(cd "$(dirname "$0")" && pwd); . "$here/cluster_lib.sh"
# It also holds what those scripts compute from their readings (CPU ticks
# from /proc, medians). Functions only: it sets no options and no traps (each script owns its
# cleanup), and every function is told its directory, port or process.

cluster_lib_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# A TCP port nothing listens on, picked below the kernel's ephemeral range so
# that no outgoing connection can be holding it. Random, so parallel runs
# differ; drawn from /dev/urandom rather than $RANDOM so that a caller's
# seeded RANDOM (chaos.sh's reproducible kill schedule) neither picks the
# port (two runs with one seed would collide) nor is consumed by it.
# CLUSTER_PORTS="FIRST LAST" narrows the choice: the chaos integration test
# keeps its cluster's and server's ports (which it leaves while it stops
# them) apart from those the tests beside it pick.
cluster_free_port() {
    local p lo first
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    [ "${lo:-0}" -gt 11000 ] || lo=32768
    first=10000
    # shellcheck disable=SC2086  # two words on purpose
    [ -z "${CLUSTER_PORTS:-}" ] || set -- $CLUSTER_PORTS
    [ -z "${CLUSTER_PORTS:-}" ] || { first=$1; lo=$(($2 + 1)); }
    for _ in $(seq 1 200); do
        p=$((first + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - first)))
        { : <>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null || { echo "$p"; return 0; }
    done
    return 1
}

# cluster_start DIR [fast]: starts the cluster in DIR on a free port and
# prints the port. A few tries: another process may take the port between
# the probe and the bind. On failure, pgcluster.sh's last reason goes to
# stderr.
cluster_start() {
    local port err=""
    for _ in 1 2 3; do
        port=$(cluster_free_port) || break
        # the mode is one word or none: left unquoted on purpose
        # shellcheck disable=SC2086
        err=$("$cluster_lib_here/pgcluster.sh" start "$1" "$port" ${2:-} 2>&1 >/dev/null) \
            && { echo "$port"; return 0; }
    done
    [ -z "$err" ] || echo "$err" >&2
    return 1
}

# cluster_psql PORT ARGS...: psql as postgres on 127.0.0.1:PORT, quiet, no
# ~/.psqlrc.
cluster_psql() {
    local port=$1
    shift
    psql -X -q -h 127.0.0.1 -p "$port" -U postgres "$@"
}

# server_healthy PORT: 0 when GET /health on 127.0.0.1:PORT answers 200.
server_healthy() {
    local line
    { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
    printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    IFS= read -r -t 2 line <&3
    exec 3<&- 3>&-
    case "$line" in "HTTP/1."?" 200"*) return 0 ;; esac
    return 1
}

# server_wait_healthy PORT PID WHO: waits until the server PID on PORT is
# healthy. Bounded: 60 s (a loaded machine, an ASan build, crash recovery);
# fails at once when PID has exited. WHO prefixes the messages ("bench").
server_wait_healthy() {
    for _ in $(seq 1 600); do
        server_healthy "$1" && return 0
        kill -0 "$2" 2>/dev/null || { echo "$3: the server exited" >&2; return 1; }
        sleep 0.1
    done
    echo "$3: the server did not become healthy within 60 s" >&2
    return 1
}

# server_start WHO BINARY PG_PORT LOG [VAR=value ...]: starts BINARY's
# server on a free port (set in http_port) against the cluster on PG_PORT,
# its output appended to LOG and the VARs added to its environment, and
# waits until it is healthy. Sets server_pid; on a failure shows the log's
# tail and returns 1. Not in a subshell: the two variables are the caller's.
server_start() {
    local who="$1" bin="$2" pg_port="$3" log="$4"
    shift 4
    http_port=$(cluster_free_port) || { echo "$who: no free port for the server" >&2; return 1; }
    env PG_HOST=127.0.0.1 PG_PORT="$pg_port" PORT="$http_port" LOG_LEVEL=warn "$@" "$bin" server >>"$log" 2>&1 &
    server_pid=$!
    server_wait_healthy "$http_port" "$server_pid" "$who" || { tail -n 20 "$log" >&2; return 1; }
}

# cluster_warm_wal PORT: gives the cluster on PORT the WAL files a cluster in
# service has. A new cluster has none to recycle: it makes each 16 MB one
# when the WAL reaches it and, with wal_init_zero on (the default), writes it
# full of zeros first, about 40 ms that a commit waits for every second or so
# at 50,000 msg/s. A cluster in service does not: each checkpoint renames the
# files it no longer needs into the next ones, as many as its WAL rate asks
# for (up to max_wal_size). ~900 MB of WAL written and dropped, then a
# checkpoint, leaves ~55 files ready (docs/performance.md, "How to measure").
# BENCH_COLD_WAL=1 skips it, for the first minutes of a new cluster.
cluster_warm_wal() {
    [ "${BENCH_COLD_WAL:-0}" = 1 ] && return 0
    cluster_psql "$1" -d postgres \
        -c "CREATE TABLE bench_wal_warm AS SELECT g, repeat('w', 200) AS pad FROM generate_series(1, 3500000) g" \
        -c "DROP TABLE bench_wal_warm" -c "CHECKPOINT"
}

# proc_ticks PID...: the CPU ticks (user + system) of the processes given,
# summed (one that has exited counts 0).
proc_ticks() {
    local p
    for p in "$@"; do awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null; done | awk '{ s += $1 } END { print s + 0 }'
}

# cluster_ticks DIR: the CPU ticks of the cluster in DIR, not another
# cluster's on the same machine: the postmaster's own and those of the
# children it has reaped (cutime and cstime: autovacuum workers come and
# go), and its live children's (a server's backends among them).
cluster_ticks() {
    local pm p
    pm=$(head -1 "$1/data/postmaster.pid")
    { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
      for p in $(pgrep -P "$pm"); do awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null; done
    } | awk '{ s += $1 } END { print s + 0 }'
}

# server_stop PID: SIGTERM (a server drains), SIGKILL after 10 s, reaped.
# Nothing when PID is empty or already gone.
server_stop() {
    [ -n "$1" ] && kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 1 100); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# median: of the numbers on stdin, one a line (the mean of the middle two
# for an even count).
median() {
    sort -g | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
