#!/bin/bash
# make bench-peers: silt beside graphile-worker and pg-boss, the same
# scenarios for each, on one throwaway PostgreSQL cluster (durable settings
# and warmed WAL, as scripts/bench.sh makes it).
#   scripts/bench-peers.sh BINARY
# Each round runs every system in turn, the order rotated from one round to
# the next, each on a fresh database of the cluster (silt through a server
# of BINARY started on it); the table at the end gives each figure's median
# over the rounds, with the rounds' values. The scenarios and the CPU
# accounting are bench/peers/*.mjs (run.mjs lists the size settings).
#
# The peers come from npm, at pinned versions, into a scratch folder outside
# the tree (nothing from npm is committed or vendored): BENCH_PEERS_NPM_DIR,
# default $XDG_CACHE_HOME/silt-bench-peers/<versions>, kept between runs so a
# second run does not download again; BENCH_PEERS_NPM_DIR=tmp uses a
# temporary folder removed on exit. Their own dependencies are resolved by
# npm at install time; the versions used are printed.
#
#   BENCH_PEERS_ROUNDS      rounds (default 3; 1 with BENCH_PEERS_QUICK=1)
#   BENCH_PEERS_QUICK=1     the small sizes: a 5,000 backlog, 5 × 1,000, 4 s windows
#   BENCH_PEERS_SYSTEMS     default "silt graphile-worker pg-boss"
#   BENCH_PEERS_GRAPHILE_WORKER, BENCH_PEERS_PG_BOSS   versions (0.17.3, 10.4.2)
#   BENCH_PEERS_RESULTS=FILE  also appends each scenario's JSON line there
#                           (report.mjs makes the table of several runs' lines)
# Everything it starts is stopped and its directories removed on any exit,
# Ctrl-C included.
set -u
bin="${1:-}"
if [ -z "$bin" ] || [ $# -ne 1 ]; then
    echo "usage: scripts/bench-peers.sh BINARY" >&2
    exit 2
fi
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
[ -x "$bin" ] || { echo "bench-peers: $bin is not executable" >&2; exit 2; }
for tool in node npm psql; do
    command -v "$tool" >/dev/null || { echo "bench-peers: $tool is needed and not installed" >&2; exit 2; }
done
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"

# graphile-worker 0.17.3 asks for Node 14 or newer, pg-boss 10.4.2 for 20
# or newer: both the versions the issue measured, both run on Node 20.
gw_version="${BENCH_PEERS_GRAPHILE_WORKER:-0.17.3}"
boss_version="${BENCH_PEERS_PG_BOSS:-10.4.2}"
quick="${BENCH_PEERS_QUICK:-0}"
rounds="${BENCH_PEERS_ROUNDS:-$([ "$quick" = 1 ] && echo 1 || echo 3)}"
systems="${BENCH_PEERS_SYSTEMS:-silt graphile-worker pg-boss}"
case "$rounds" in ''|*[!0-9]*|0) echo "bench-peers: BENCH_PEERS_ROUNDS must be a positive integer" >&2; exit 2 ;; esac
for s in $systems; do
    case "$s" in silt|graphile-worker|pg-boss) ;; *)
        echo "bench-peers: unknown system \"$s\" (silt, graphile-worker, pg-boss)" >&2; exit 2 ;;
    esac
done

dir=$(mktemp -d /tmp/silt-bench-peers.XXXXXX) && chmod 755 "$dir" || exit 1
npm_dir="${BENCH_PEERS_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/silt-bench-peers/gw-$gw_version-boss-$boss_version}"
[ "$npm_dir" = tmp ] && npm_dir="$dir/npm"
server_pid=""

# shellcheck disable=SC2317  # reached through the EXIT trap
stop_server() {
    server_stop "$server_pid"
    server_pid=""
}

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    [ -n "${client_pid:-}" ] && kill "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null
    stop_server
    "$here/pgcluster.sh" stop "$dir" >/dev/null 2>&1
    rm -rf "$dir"
}
trap 'cleanup; exit "${status:-1}"' EXIT
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM
status=1

# The peers at their pinned versions; an install that already has them is
# used as it is.
install_peers() {
    local have
    have=$(cd "$npm_dir" 2>/dev/null && node -p \
        'require("graphile-worker/package.json").version + " " + require("pg-boss/package.json").version' 2>/dev/null)
    [ "$have" = "$gw_version $boss_version" ] && return 0
    mkdir -p "$npm_dir" || return 1
    echo "bench-peers: installing graphile-worker@$gw_version pg-boss@$boss_version into $npm_dir" >&2
    printf '{"name":"silt-bench-peers","private":true}\n' >"$npm_dir/package.json"
    (cd "$npm_dir" && npm install --no-audit --no-fund --loglevel=error --save-exact \
        "graphile-worker@$gw_version" "pg-boss@$boss_version" >&2)
}

# One system's round on a database of its own, dropped afterwards (the next
# round's is new; the cluster stays small).
run_round() {
    local system=$1 round=$2 db rc
    db="peers_${system//-/_}_$round"
    cluster_psql "$pg_port" -d postgres -c "CREATE DATABASE $db" || return 1
    local args=(--system "$system" --round "$round" --postmaster "$(head -n 1 "$dir/data/postmaster.pid")")
    if [ "$system" = silt ]; then
        server_start bench-peers "$bin" "$pg_port" "$dir/server.log" PG_DB="$db" || return 1
        args+=(--silt-url "http://127.0.0.1:$http_port" --server-pid "$server_pid")
    else
        args+=(--pg "postgres://postgres@127.0.0.1:$pg_port/$db" --modules "$npm_dir")
    fi
    # In the scratch folder: graphile-worker looks for its config and crontab
    # files in the working directory, and finds none there.
    (cd "$npm_dir" && BENCH_PEERS_CLK_TCK=$(getconf CLK_TCK) exec node "$root/bench/peers/run.mjs" "${args[@]}") \
        >>"$dir/results.jsonl" &
    client_pid=$!
    wait "$client_pid"
    rc=$?
    client_pid=""
    stop_server
    cluster_psql "$pg_port" -d postgres -c "DROP DATABASE $db" || return 1
    return "$rc"
}

install_peers || { echo "bench-peers: npm install failed" >&2; exit 1; }
pg_port=$(cluster_start "$dir") || { echo "bench-peers: could not start PostgreSQL" >&2; exit 1; }
cluster_warm_wal "$pg_port" || { echo "bench-peers: could not warm the cluster's WAL" >&2; exit 1; }
{
    echo "machine:    $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "postgresql: $(cluster_psql "$pg_port" -d postgres -Atc "SELECT split_part(version(), ' ', 2) || ' fsync=' ||
        current_setting('fsync') || ' synchronous_commit=' || current_setting('synchronous_commit')")"
    echo "silt:       $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "peers:      node $(node --version), $(cd "$npm_dir" && node -p '["graphile-worker", "pg-boss", "pg"].map(p => p + " " + require(p + "/package.json").version).join(", ")')"
    echo "sizes:      rounds=$rounds quick=$quick systems=\"$systems\""
    echo
} >&2

read -r -a order <<<"$systems"
for ((r = 1; r <= rounds; r++)); do
    # Rotated each round: no system always runs first, or always right
    # after another on the same cluster.
    for ((i = 0; i < ${#order[@]}; i++)); do
        s=${order[$(( (i + r - 1) % ${#order[@]} ))]}
        echo "== round $r: $s" >&2
        run_round "$s" "$r" || { echo "bench-peers: $s failed in round $r" >&2; tail -n 20 "$dir/server.log" >&2 2>/dev/null; exit 1; }
    done
done
echo >&2
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[ -z "${BENCH_PEERS_RESULTS:-}" ] || cat "$dir/results.jsonl" >>"$BENCH_PEERS_RESULTS"
node "$root/bench/peers/report.mjs" "$dir/results.jsonl" "${order[@]}"
status=$?
exit "$status"
