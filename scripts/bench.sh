#!/bin/bash
# make bench: measures BINARY against a throwaway PostgreSQL cluster.
#   scripts/bench.sh BINARY          (BENCH_ARGS="--seconds 5 ..." passes options on)
# The cluster runs with PostgreSQL's durable defaults (fsync on,
# synchronous_commit on): the numbers are for commits that survive a crash.
# Its WAL is warmed first, as a cluster in service has it (cluster_warm_wal).
# Everything it starts is stopped and its directory removed on any exit,
# Ctrl-C included. Exits with the status of `BINARY bench`.
set -u
bin="${1:?usage: scripts/bench.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
[ -x "$bin" ] || { echo "bench: $bin is not executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
dir=$(mktemp -d /tmp/silt-bench.XXXXXX) || exit 1
server_pid=""

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    server_stop "$server_pid"
    "$here/pgcluster.sh" stop "$dir" >/dev/null 2>&1
    rm -rf "$dir"
}
trap 'cleanup; exit "${status:-1}"' EXIT
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM

describe_machine() {
    local pgbin model
    pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    echo "machine:    $(nproc) CPUs, ${model:-unknown model}, $(uname -sr)"
    echo "memory:     $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "postgresql: $("$pgbin/postgres" --version 2>/dev/null | sed 's/^postgres (PostgreSQL) //')" \
         "$(cluster_psql "$pg_port" -d postgres -Atc \
            "SELECT 'fsync=' || current_setting('fsync') || ' synchronous_commit=' ||
                    current_setting('synchronous_commit') || ' wal_init_zero=' ||
                    current_setting('wal_init_zero')" 2>/dev/null)" \
         "recycled_wal_files=$(recycled_wal_files 2>/dev/null)"
    echo
}

# WAL files ready for reuse, for the machine line: the files past the one
# being written.
recycled_wal_files() {
    cluster_psql "$pg_port" -d postgres -Atc \
        "SELECT count(*) FROM pg_ls_waldir() WHERE name > pg_walfile_name(pg_current_wal_lsn())"
}

# BENCH_PG_SETTINGS="name=value ...": PostgreSQL settings for this run, over
# the defaults (ALTER SYSTEM, then a reload).
apply_pg_settings() {
    local kv
    [ -n "${BENCH_PG_SETTINGS:-}" ] || return 0
    for kv in $BENCH_PG_SETTINGS; do
        cluster_psql "$pg_port" -d postgres -qc "ALTER SYSTEM SET ${kv%%=*} = '${kv#*=}'" || return 1
    done
    cluster_psql "$pg_port" -d postgres -qAtc "SELECT pg_reload_conf()" >/dev/null
}

status=1
pg_port=$(cluster_start "$dir") || { echo "bench: could not start PostgreSQL" >&2; exit 1; }
apply_pg_settings || { echo "bench: could not apply BENCH_PG_SETTINGS" >&2; exit 1; }
cluster_warm_wal "$pg_port" || { echo "bench: could not warm the cluster's WAL" >&2; exit 1; }
server_start bench "$bin" "$pg_port" "$dir/server.log" || exit 1
describe_machine >&2   # stderr: stdout is the bench's alone (e.g. --json)
# BENCH_ARGS is split into words on purpose: it is a list of options.
# shellcheck disable=SC2086
SILT_URL="http://127.0.0.1:$http_port" "$bin" bench ${BENCH_ARGS:-}
status=$?
# The workers' scenarios (scripts/bench-workers.sh); BENCH_WORKERS="" skips them.
if [ "$status" = 0 ] && [ -n "${BENCH_WORKERS-silt python js}" ]; then
    "$here/bench-workers.sh" "$bin" "http://127.0.0.1:$http_port" "$pg_port"
    status=$?
fi
if [ -s "$dir/server.log" ]; then
    { echo; echo "server log (last 20 lines):"; tail -n 20 "$dir/server.log"; } >&2
fi
exit "$status"
