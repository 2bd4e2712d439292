#!/bin/bash
# Retention under load: push throughput into 10,000 partitions with and
# without retention deleting, and whether the deletable backlog keeps still.
#   scripts/bench-retention.sh BINARY
# A throwaway cluster (durable defaults) and a server with
# RETENTION_INTERVAL_MS=1000; queue "ret-off" has no retention, "ret-on" has
# retentionSeconds=5, so at steady state it should hold about 5 s of pushes.
set -u
bin="${1:?usage: scripts/bench-retention.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/silt-bench-ret.XXXXXX) && chmod 755 "$dir"
pgport=$((15000 + RANDOM % 15000)); port=$((15000 + RANDOM % 15000))
seconds="${SECONDS_PER_RUN:-20}"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; "$here/pgcluster.sh" stop "$dir"; rm -rf "$dir"; }
trap cleanup EXIT
"$here/pgcluster.sh" start "$dir" "$pgport" || exit 1
PG_HOST=127.0.0.1 PG_PORT=$pgport PORT=$port LOG_LEVEL=warn RETENTION_INTERVAL_MS=1000 "$bin" server 2>"$dir/server.log" &
pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -sf "$url/health" >/dev/null && break; sleep 0.1; done
curl -sf "$url/api/v1/configure" -d '{"queue":"ret-on","options":{"retentionEnabled":true,"retentionSeconds":5}}' >/dev/null
curl -sf "$url/api/v1/configure" -d '{"queue":"ret-off"}' >/dev/null
run() { SILT_URL="$url" "$bin" bench --scenarios push100 --partitions 10000 --seconds "$seconds" --queue "$1" 2>/dev/null | grep "push batch=100"; }
retained() { curl -sf "$url/api/v1/resources/queues/$1" | sed -n 's/.*"total": \([0-9]*\).*/\1/p'; }
echo "without retention (ret-off):"; run ret-off
echo "with retention deleting (ret-on, retentionSeconds=5, a pass every second):"
( for i in $(seq 1 $((seconds / 4 + 1))); do sleep 4; echo "  retained in ret-on after ~$((i * 4)) s: $(retained ret-on)"; done ) &
sampler=$!
run ret-on
wait "$sampler"
sleep 7
echo "  retained in ret-on 7 s after the load stopped: $(retained ret-on)"
curl -sf "$url/metrics/prometheus" | grep -E '^silt_retention_(passes|offsets_deleted)'
