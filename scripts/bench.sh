#!/bin/bash
# make bench: measures BINARY against a throwaway PostgreSQL cluster.
#   scripts/bench.sh BINARY          (BENCH_ARGS="--seconds 5 ..." passes options on)
# The cluster runs with PostgreSQL's durable defaults (fsync on,
# synchronous_commit on): the numbers are for commits that survive a crash.
# Everything it starts is stopped and its directory removed on any exit,
# Ctrl-C included. Exits with the status of `BINARY bench`.
set -u
bin="${1:?usage: scripts/bench.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
[ -x "$bin" ] || { echo "bench: $bin is not executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/silt-bench.XXXXXX) || exit 1
server_pid=""

# SIGTERM lets the server drain; one that has not exited after 10 s is killed.
# shellcheck disable=SC2317  # reached through the EXIT trap
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM "$server_pid" 2>/dev/null || return 0
    for _ in $(seq 1 100); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
}

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    stop_server
    "$here/pgcluster.sh" stop "$dir" >/dev/null 2>&1
    rm -rf "$dir"
}
trap 'cleanup; exit "${status:-1}"' EXIT
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM

# A TCP port nothing listens on, picked below the kernel's ephemeral range so
# that no outgoing connection can be holding it (random: parallel runs differ).
free_port() {
    local p lo
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    [ "${lo:-0}" -gt 11000 ] || lo=32768
    for _ in $(seq 1 200); do
        p=$((10000 + RANDOM % (lo - 10000)))
        { : <>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null || { echo "$p"; return 0; }
    done
    return 1
}

# Starts the cluster on a free port (a few tries: another process may take
# the port between the probe and the bind). Sets pg_port.
start_cluster() {
    for _ in 1 2 3; do
        pg_port=$(free_port) || break
        "$here/pgcluster.sh" start "$dir" "$pg_port" 2>"$dir/pgcluster.err" && return 0
    done
    cat "$dir/pgcluster.err" >&2
    return 1
}

# 0 when GET /health on port $1 answers 200.
healthy() {
    local line
    { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
    printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    IFS= read -r -t 2 line <&3
    exec 3<&- 3>&-
    case "$line" in "HTTP/1."?" 200"*) return 0 ;; esac
    return 1
}

wait_healthy() {
    for _ in $(seq 1 600); do
        healthy "$1" && return 0
        kill -0 "$server_pid" 2>/dev/null || { echo "bench: the server exited" >&2; return 1; }
        sleep 0.1
    done
    echo "bench: the server did not become healthy within 60 s" >&2
    return 1
}

describe_machine() {
    local pgbin model
    pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    echo "machine:    $(nproc) CPUs, ${model:-unknown model}, $(uname -sr)"
    echo "memory:     $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "postgresql: $("$pgbin/postgres" --version 2>/dev/null | sed 's/^postgres (PostgreSQL) //')" \
         "$(psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -Atc \
            "SELECT 'fsync=' || current_setting('fsync') || ' synchronous_commit=' ||
                    current_setting('synchronous_commit')" 2>/dev/null)"
    echo
}

status=1
pg_port=""
start_cluster || { echo "bench: could not start PostgreSQL" >&2; exit 1; }
http_port=$(free_port) || { echo "bench: no free port for the server" >&2; exit 1; }
PG_HOST=127.0.0.1 PG_PORT="$pg_port" PORT="$http_port" LOG_LEVEL=warn \
    "$bin" server >"$dir/server.log" 2>&1 &
server_pid=$!
wait_healthy "$http_port" || { tail -n 20 "$dir/server.log" >&2; exit 1; }
describe_machine >&2   # stderr: stdout is the bench's alone (e.g. --json)
# BENCH_ARGS is split into words on purpose: it is a list of options.
# shellcheck disable=SC2086
SILT_URL="http://127.0.0.1:$http_port" "$bin" bench ${BENCH_ARGS:-}
status=$?
if [ -s "$dir/server.log" ]; then
    { echo; echo "server log (last 20 lines):"; tail -n 20 "$dir/server.log"; } >&2
fi
exit "$status"
