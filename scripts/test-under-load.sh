#!/bin/bash
# Hunts flaky tests: runs `make test` N times in a row (default 10) while
# `make bench`'s load (its own PostgreSQL cluster and server, pushes and
# pops as fast as they go) keeps both cores busy beside it.
#   scripts/test-under-load.sh [N]
# Prints one line per run and, last, "N green of N"; exits non-zero unless
# every run was green. Each run's output is kept in $LOGDIR (default a
# fresh directory under /tmp) for the failures.
set -u
runs="${1:-10}"
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 2
logdir="${LOGDIR:-$(mktemp -d /tmp/silt-under-load.XXXXXX)}"
mkdir -p "$logdir" || exit 2
make --no-print-directory build/silt >/dev/null || exit 2

# The load runs in a session of its own, so stopping it stops every
# process it started (bench.sh cleans its cluster up on TERM).
setsid bash -c "while :; do BENCH_ARGS='--seconds 30 --preload 200000' scripts/bench.sh build/silt >/dev/null 2>&1; done" &
load=$!
stop_load() { kill -TERM -- "-$load" 2>/dev/null; wait "$load" 2>/dev/null; }
trap 'stop_load; exit 130' INT TERM

green=0
for i in $(seq 1 "$runs"); do
    start=$(date +%s)
    make --no-print-directory test >"$logdir/run-$i.log" 2>&1
    rc=$?
    summary=$(tail -n 1 "$logdir/run-$i.log")
    [ "$rc" -eq 0 ] && green=$((green + 1))
    echo "run $i: $summary ($(($(date +%s) - start)) s)$([ "$rc" -eq 0 ] || echo "  FAILED: $(grep -a '^FAIL' "$logdir/run-$i.log" | tr '\n' ' ')")"
done
stop_load
echo "$green green of $runs (logs in $logdir)"
[ "$green" -eq "$runs" ]
