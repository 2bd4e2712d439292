#!/bin/bash
# Retention under load: push throughput into 10,000 partitions with and
# without retention deleting, and whether the deletable backlog keeps still.
#   scripts/bench-retention.sh BINARY
# A throwaway cluster (durable defaults) and a server with a retention pass
# every INTERVAL_MS (default 30000); queue "ret-off" has no retention, "ret-on"
# has retentionSeconds=WINDOW (default 30), so once passes run it should hold
# between WINDOW and WINDOW + INTERVAL seconds of pushes, not a growing log.
set -u
bin="${1:?usage: scripts/bench-retention.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
dir=$(mktemp -d /tmp/silt-bench-ret.XXXXXX) && chmod 755 "$dir"
seconds="${SECONDS_PER_RUN:-120}"
window="${WINDOW:-30}"
interval="${INTERVAL_MS:-30000}"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; "$here/pgcluster.sh" stop "$dir"; rm -rf "$dir"; }
trap cleanup EXIT
pgport=$(cluster_start "$dir") || exit 1
port=$(cluster_free_port) || exit 1
PG_HOST=127.0.0.1 PG_PORT=$pgport PORT=$port LOG_LEVEL=warn RETENTION_INTERVAL_MS=$interval "$bin" server 2>"$dir/server.log" &
pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -sf "$url/health" >/dev/null && break; sleep 0.1; done
curl -sf "$url/api/v1/configure" -d "{\"queue\":\"ret-on\",\"options\":{\"retentionEnabled\":true,\"retentionSeconds\":$window}}" >/dev/null
curl -sf "$url/api/v1/configure" -d '{"queue":"ret-off"}' >/dev/null
rate="${RATE:-15000}"   # a steady load: msg/s offered, the same in both runs
run() { SILT_URL="$url" "$bin" bench --scenarios push100 --partitions 10000 --seconds "$seconds" --rate "$rate" --queue "$1" 2>/dev/null | grep "push batch=100"; }
retained() { curl -sf "$url/api/v1/resources/queues/$1" | sed -n 's/.*"total": *\([0-9]*\).*/\1/p'; }
echo "steady load: $rate msg/s offered, batch 100, 10,000 partitions, 50 connections"
echo "without retention (ret-off):"; run ret-off
echo "with retention deleting (ret-on, retentionSeconds=$window, a pass every $((interval / 1000)) s):"
( for i in $(seq 1 $((seconds / 15 + 1))); do sleep 15; echo "  retained in ret-on after ~$((i * 15)) s: $(retained ret-on)"; done ) &
sampler=$!
run ret-on
wait "$sampler"
sleep $((window + interval / 1000 + 5))
echo "  retained in ret-on $((window + interval / 1000 + 5)) s after the load stopped: $(retained ret-on)"
curl -sf "$url/metrics/prometheus" | grep -E '^silt_retention_(passes|offsets_deleted)'
