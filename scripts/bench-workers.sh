#!/bin/bash
# The workers' scenarios of make bench: no-op tasks drained end to end, from
# the first send to the last COMPLETED, by each kind of worker silt ships.
#   scripts/bench-workers.sh BINARY URL PGPORT
# Called by scripts/bench.sh against its server and cluster. One line each:
#   silt-worker:   `silt worker --concurrency 8 -- true`, a process per task
#   python-worker: clients/python's in-process worker (clients/python/bench/drain.py)
#   js-worker:     clients/js's in-process worker (clients/js/bench/drain.mjs)
# BENCH_PG_DB (the server's database, default postgres), BENCH_WORKER_TASKS
# (default 20000; the command worker does a quarter of it), BENCH_SILT_CONCURRENCY (the command worker's, default 8),
# BENCH_WORKER_CONCURRENCY (the libraries' concurrency, default 256)
# and BENCH_WORKERS (default "silt python js") tune it.
set -u
bin="$1"; url="$2"; pg_port="$3"
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
tasks="${BENCH_WORKER_TASKS:-20000}"
conc="${BENCH_WORKER_CONCURRENCY:-256}"
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"

now() { date +%s.%N; }

# Sends n no-op tasks to queue q in batches of 1,000.
send_tasks() {
    local q="$1" n="$2" batch body
    for ((sent = 0; sent < n; sent += 1000)); do
        batch=$(( n - sent < 1000 ? n - sent : 1000 ))
        body=$(awk -v q="$q" -v n="$batch" 'BEGIN { for (i = 0; i < n; i++) printf "%s{\"name\":\"noop\",\"queue\":\"%s\"}", i ? "," : "", q }')
        curl -sf -o /dev/null "$url/api/v1/tasks" -d "{\"tasks\":[$body]}" || return 1
    done
}

# Returns once queue q has no live task, watching from one PostgreSQL session
# (a psql started every few milliseconds would take a good share of a small
# machine's CPU from what is measured). Gives up after 10 minutes.
wait_drained() {
    PGOPTIONS="-c statement_timeout=600000" cluster_psql "$pg_port" -d "${BENCH_PG_DB:-postgres}" -c "DO \$\$ BEGIN
        LOOP
            EXIT WHEN NOT EXISTS (SELECT 1 FROM horsies_tasks WHERE queue_name = '$1');
            COMMIT;
            PERFORM pg_sleep(0.005);
        END LOOP;
    END \$\$"
}

# silt worker running `true` for each task, eight at once.
bench_silt_worker() {
    local q="bench_silt_$$" n=$(( tasks / 4 )) c="${BENCH_SILT_CONCURRENCY:-8}" t0 t1 w d ended rc
    t0=$(now)
    send_tasks "$q" "$n" || { echo "silt-worker: sending failed" >&2; return 1; }
    SILT_URL="$url" LOG_LEVEL=warn "$bin" worker --queue "$q" --concurrency "$c" -- true 2>/dev/null &
    w=$!
    wait_drained "$q" &
    d=$!
    wait -n -p ended "$d" "$w"
    rc=$?
    if [ "$ended" != "$d" ]; then
        kill "$d" 2>/dev/null
        echo "silt-worker: the worker died" >&2
        return 1
    fi
    [ "$rc" = 0 ] || { echo "silt-worker: the queue did not drain" >&2; kill -TERM "$w"; wait "$w"; return 1; }
    t1=$(now)
    kill -TERM "$w"; wait "$w"
    awk -v n="$n" -v a="$t0" -v b="$t1" -v c="$c" \
        'BEGIN { printf "silt-worker: %d tasks in %.2f s: %d tasks/s (send → COMPLETED, --concurrency %d -- true)\n", n, b - a, n / (b - a), c }'
}

for kind in ${BENCH_WORKERS:-silt python js}; do
    case "$kind" in
    silt)   bench_silt_worker ;;
    python) python3 "$root/clients/python/bench/drain.py" --url "$url" --tasks "$tasks" --concurrency "$conc" ;;
    js)     node "$root/clients/js/bench/drain.mjs" --url "$url" --tasks "$tasks" --concurrency "$conc" ;;
    *)      echo "bench-workers: unknown worker \"$kind\" (silt, python, js)" >&2; exit 2 ;;
    esac
done
