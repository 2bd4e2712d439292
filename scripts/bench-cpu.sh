#!/bin/bash
# Where one scenario's CPU goes: msg/s, then the cores the load generator,
# the server and PostgreSQL each kept busy over a window in the middle of
# the run, and PostgreSQL's CPU per message. For A/B rounds of two builds
# (run them alternately; timings here are noisy). Give it one scenario: the
# window is timed from the start of the run, whatever runs first.
#   scripts/bench-cpu.sh BINARY [silt bench options]
#     default options: --seconds 8 --connections 128 --scenarios push1
#   WINDOW=4        measured seconds
#   SKIP=2          seconds into the run before the window opens (for
#                   popack, counted from the end of its preload)
#   PRE_SQL="..."   run once the server has migrated, before the load
#   LOADGEN=PATH    the silt binary whose `silt bench` drives the load
#                   (default BINARY): an older server measured under
#                   today's load generator, the same for both sides of an A/B
#   any setting of the server's environment passes through (PUSH_MAX_FLUSHES=1 …)
# A throwaway cluster with PostgreSQL's durable defaults; one server.
set -u
bin="${1:?usage: scripts/bench-cpu.sh BINARY [silt bench options]}"
shift
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
loadgen="${LOADGEN:-$bin}"
case "$loadgen" in /*) ;; *) loadgen="$PWD/$loadgen" ;; esac
[ $# -gt 0 ] || set -- --seconds 8 --connections 128 --scenarios push1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
dir=$(mktemp -d /tmp/silt-bench-cpu.XXXXXX) && chmod 755 "$dir" || exit 1
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    [ -n "${load:-}" ] && kill "$load" 2>/dev/null && wait "$load" 2>/dev/null
    server_stop "${server_pid:-}"
    "$here/pgcluster.sh" stop "$dir" >/dev/null; rm -rf "$dir"
}
trap cleanup EXIT
pgport=$(cluster_start "$dir") || exit 1
server_start bench-cpu "$bin" "$pgport" "$dir/server.log" || exit 1
[ -z "${PRE_SQL:-}" ] || cluster_psql "$pgport" -qc "$PRE_SQL" || exit 1

SILT_URL="http://127.0.0.1:$http_port" "$loadgen" bench "$@" >"$dir/bench.out" 2>&1 &
load=$!
if grep -q -- popack <<<"$*"; then
    until grep -q preloaded "$dir/bench.out" || ! kill -0 "$load" 2>/dev/null; do sleep 0.05; done
fi
sleep "${SKIP:-2}"
p0=$(cluster_ticks "$dir"); s0=$(proc_ticks "$server_pid"); b0=$(proc_ticks "$load"); t0=$(date +%s.%N)
sleep "${WINDOW:-4}"
p1=$(cluster_ticks "$dir"); s1=$(proc_ticks "$server_pid"); b1=$(proc_ticks "$load"); t1=$(date +%s.%N)
if ! kill -0 "$load" 2>/dev/null; then
    echo "bench-cpu: the load ended before the window closed (a shorter SKIP + WINDOW, or more --seconds):" >&2
    cat "$dir/bench.out" >&2
    exit 1
fi
wait "$load" || { echo "bench-cpu: silt bench failed:" >&2; cat "$dir/bench.out" >&2; load=; exit 1; }
load=
grep -E '^(push|pop|GET|tasks|note)' "$dir/bench.out"
rate=$(grep -E '^(push|pop)' "$dir/bench.out" | tail -1 | awk '{ print $(NF-3) }')
hz=$(getconf CLK_TCK)
awk -v p=$((p1 - p0)) -v s=$((s1 - s0)) -v b=$((b1 - b0)) -v t0="$t0" -v t1="$t1" -v r="${rate:-0}" -v hz="$hz" 'BEGIN {
    w = t1 - t0
    printf "cores busy: postgres %.2f  server %.2f  load generator %.2f  (of %d)\n", p/hz/w, s/hz/w, b/hz/w, '"$(nproc)"'
    if (r > 0) printf "postgres %.1f us/msg  server %.1f us/msg (the last row'"'"'s msg/s)\n", p/hz/w/r*1e6, s/hz/w/r*1e6
}'
