#!/bin/bash
# bench-wrk: holds `silt bench` against an independent load generator, wrk
# with the Lua scripts in bench/ (issue 15, point 6). One throwaway durable
# cluster and one server; for every round and scenario, silt bench and wrk
# run one after the other with the same connections and seconds, the order
# swapped every round so that neither always meets the box first. Prints,
# per scenario, the medians over the rounds, their ratio (wrk / silt), the
# median of each round's own ratio, and each client's CPU per request.
#   scripts/bench-wrk.sh BINARY
# Environment: BENCH_WRK_ROUNDS (3), BENCH_WRK_SECONDS (6, measured, after a
# 1 s warm-up for both), BENCH_WRK_SCENARIOS ("push1 push10 push100
# push100-1p popack health tasks"), BENCH_WRK_PRELOAD (1500000 messages
# before each popack run: at 300000 both ran dry halfway, and wrk, which
# then divided by the whole run, read a third of silt bench's rate).
# wrk is Debian's package, installed (scripts/deps.sh bench) when missing.
set -u
bin="${1:?usage: scripts/bench-wrk.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
[ -x "$bin" ] || { echo "bench-wrk: $bin is not executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
command -v wrk >/dev/null || "$here/deps.sh" bench || exit 1
rounds=${BENCH_WRK_ROUNDS:-3}
secs=${BENCH_WRK_SECONDS:-6}
scenarios=${BENCH_WRK_SCENARIOS:-push1 push10 push100 push100-1p popack health tasks}
preload=${BENCH_WRK_PRELOAD:-1500000}
conns=50 consumers=10 partitions=10   # silt bench's defaults, passed to both
export LUA_PATH="$here/../bench/?.lua;;"   # the scripts require common.lua
dir=$(mktemp -d /tmp/silt-bench-wrk.XXXXXX) || exit 1
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

pg_port=$(cluster_start "$dir") || { echo "bench-wrk: could not start PostgreSQL" >&2; exit 1; }
server_start bench-wrk "$bin" "$pg_port" "$dir/server.log" || exit 1
url="http://127.0.0.1:$http_port"

# A name no earlier run used, so that no run reads another's messages.
fresh_queue() {
    echo "wrk-$1-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
}

drop_queue() {
    curl -s -o /dev/null -X DELETE "$url/api/v1/resources/queues/$1"
}

# Runs a command with its output in $dir/out and prints the CPU seconds
# (user + system) it used: on two cores shared with the server and
# PostgreSQL, what the load generator burns is taken from them.
with_cpu() {
    local TIMEFORMAT='%3U %3S' t
    t=$( { time "$@" >"$dir/out" 2>>"$dir/tools.err"; } 2>&1 )
    awk '{ print $1 + $2 }' <<<"$t"
}

# silt bench's "RATE P50 ERRORS REQUESTS CPU" for one scenario. Its CPU
# covers the warm-up (and popack's preload) too.
run_silt() {
    local cpu
    cpu=$(with_cpu env SILT_URL="$url" "$bin" bench --scenarios "$1" --seconds "$secs" \
          --connections "$conns" --consumers "$consumers" --partitions "$partitions" \
          --preload "$preload" --json)
    awk -F': *' -v cpu="$cpu" '/"msgPerSec"/ { r = $2 } /"p50Ms"/ { p = $2 }
                 /"requests"/ { n = $2 } /^  "errors"/ { e = $2 }
                 END { gsub(/,/, "", r); gsub(/,/, "", p); gsub(/,/, "", n); printf "%s %s %s %s %s\n", r, p, e, n, cpu }' "$dir/out"
    sed -n 's/^ *"note": *"\(.*\)",*$/bench-wrk: silt bench '"$1"': \1/p' "$dir/out" >&2
}

# Pushes PRELOAD messages into queue $1 the way silt bench's preload does
# (1,000 items per request over the partitions, as many requests at once as
# push connections), with curl: not measured, but its shape matters, since
# concurrent pushes are fused into one segment per partition and flush, and
# a pop reads whole segments.
preload_queue() {
    awk -v q="$1" -v p="$partitions" 'BEGIN { printf "{\"items\":[";
        for (i = 0; i < 1000; i++) printf "%s{\"queue\":\"%s\",\"partition\":\"p%d\",\"payload\":{\"n\":%d,\"s\":\"abcdefghij\"}}",
            i ? "," : "", q, i % p, 10000 + i; printf "]}" }' >"$dir/preload.json"
    local failed
    failed=$(seq $(((preload + 999) / 1000)) | xargs -P "$conns" -I{} curl -s -o /dev/null -w '%{http_code}\n' \
        -H 'Content-Type: application/json' --data-binary @"$dir/preload.json" "$url/api/v1/push" \
        | grep -vc '^201$')
    [ "$failed" = 0 ] || echo "bench-wrk: $failed preload pushes failed" >&2
}

# wrk's "RATE P50 ERRORS REQUESTS CPU" for one scenario. Push and health
# get a separate 1 s run first (the warm-up, uncounted, nor in CPU);
# popack and tasks count from 1 s on inside their one run (popack.lua
# says why), with one connection per thread. silt bench's tasks scenario
# runs 8 producers and 8 workers.
run_wrk() {
    local q="" cpu s="$here/../bench"
    case $1 in
        push*) q=$(fresh_queue push)
               # pushN, or pushN-1p: each request's items into one partition
               local batch=${1#push} spread=""
               case $batch in *-1p) batch=${batch%-1p}; spread=1p ;; esac
               wrk -t1 -c"$conns" -d1s --timeout 60s -s "$s/push.lua" "$url" -- "$q" "$batch" "$partitions" $spread >/dev/null
               cpu=$(with_cpu wrk -t1 -c"$conns" -d"${secs}s" --timeout 60s -s "$s/push.lua" "$url" -- "$q" "$batch" "$partitions" $spread) ;;
        health) wrk -t1 -c"$conns" -d1s --timeout 60s -s "$s/health.lua" "$url" >/dev/null
                cpu=$(with_cpu wrk -t1 -c"$conns" -d"${secs}s" --timeout 60s -s "$s/health.lua" "$url") ;;
        popack) q=$(fresh_queue pop)
                preload_queue "$q"
                cpu=$(with_cpu wrk -t"$consumers" -c"$consumers" -d"$((secs + 1))s" --timeout 60s -s "$s/popack.lua" "$url" -- "$q" 1) ;;
        tasks) q=$(fresh_queue tasks)
               cpu=$(with_cpu wrk -t16 -c16 -d"$((secs + 1))s" --timeout 60s -s "$s/tasks.lua" "$url" -- "$q" 1) ;;
        *) echo "bench-wrk: no wrk script for $1" >&2; return 1 ;;
    esac
    [ -z "$q" ] || [ "$1" = tasks ] || drop_queue "$q"   # a task queue is no resource to delete
    grep '^wrk-result' "$dir/out" >>"$dir/wrk.log"
    awk -v cpu="$cpu" '/^wrk-result/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                                       printf "%s %s %s %s %s\n", v["rate"], v["p50ms"], v["errors"], v["requests"], cpu }' "$dir/out"
}

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start" >&2
for r in $(seq 1 "$rounds"); do
    for s in $scenarios; do
        if [ $((r % 2)) = 1 ]; then order="silt wrk"; else order="wrk silt"; fi
        for tool in $order; do
            if [ "$tool" = silt ]; then res=$(run_silt "$s"); else res=$(run_wrk "$s"); fi
            echo "$s $r $tool $res" | tee -a "$dir/results" >&2
        done
    done
done
echo "machine: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2

# The column $2 of scenario $1's rounds for tool $3, one a line.
column() {
    awk -v s="$1" -v t="$3" -v c="$2" '$1 == s && $3 == t { print $c }' "$dir/results"
}

# The table: medians over the rounds. "pairs" is the median of each
# round's own ratio: the two runs of a round sit next to each other, so it
# is less exposed than the ratio of medians to a box whose load moves.
# CPU: the client's, microseconds per request; silt bench's includes its
# warm-up second (and popack's preload), so it is only comparable for push
# and health.
printf '%-8s %12s %10s %8s %8s %8s %8s %9s %8s  %s\n' scenario "silt bench/s" "wrk/s" "wrk/silt" "pairs" \
    "silt p50" "wrk p50" "silt µs/r" "wrk µs/r" "rounds (silt / wrk msg/s)"
for s in $scenarios; do
    ms=$(column "$s" 4 silt | median); mw=$(column "$s" 4 wrk | median)
    ps=$(column "$s" 5 silt | median); pw=$(column "$s" 5 wrk | median)
    pr=$(awk -v s="$s" '$1 == s { v[$2, $3] = $4 } END { for (k in v) { split(k, p, SUBSEP)
            if (p[2] == "wrk" && v[p[1], "silt"] > 0) print v[k] / v[p[1], "silt"] } }' "$dir/results" | median)
    cs=$(awk -v s="$s" -v w="$secs" '$1 == s && $3 == "silt" && $7 > 0 { print $8 / ($7 * (w + 1) / w) * 1e6 }' "$dir/results" | median)
    cw=$(awk -v s="$s" '$1 == s && $3 == "wrk" && $7 > 0 { print $8 / $7 * 1e6 }' "$dir/results" | median)
    each=$(awk -v s="$s" '$1 == s { v[$2, $3] = $4; if ($2 > n) n = $2 }
        END { for (i = 1; i <= n; i++) printf "%s%.0f / %.0f", (i > 1 ? ", " : ""), v[i, "silt"], v[i, "wrk"] }' "$dir/results")
    awk -v s="$s" -v a="$ms" -v b="$mw" -v r="$pr" -v c="$ps" -v d="$pw" -v x="$cs" -v y="$cw" -v e="$each" \
        'BEGIN { printf "%-8s %12.0f %10.0f %8.2f %8.2f %8.2f %8.2f %9.0f %8.0f  %s\n", s, a, b, (a > 0 ? b / a : 0), r, c, d, x, y, e }'
done
errs=$(awk '$6 != "" && $6 != 0 { n++ } END { print n + 0 }' "$dir/results")
[ "$errs" = 0 ] || echo "bench-wrk: $errs runs had failed requests (see above)" >&2
awk '/ dry_after=/ { for (i = 2; i <= NF; i++) if ($i ~ /^dry_after=/)
    print "bench-wrk: a wrk popack run ran its queue dry after " substr($i, 11) " s (its rate covers that time): raise BENCH_WRK_PRELOAD" }' "$dir/wrk.log" >&2
status=0
[ "$errs" = 0 ] || status=1
exit "$status"
