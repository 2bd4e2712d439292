#!/bin/bash
# make chaos: crash safety under kill -9 of the server and immediate stops
# of PostgreSQL (docs/reliability.md).
#   scripts/chaos.sh BINARY
# Starts a private PostgreSQL cluster and a server, runs `BINARY chaos` (the
# workload and the checks) against it, and meanwhile, at random moments,
# either kill -9s the server and starts it again or stops PostgreSQL with
# `pg_ctl stop -m immediate` (no shutdown checkpoint: crash recovery at the
# next start) and starts it again. Events never overlap: each one ends with
# the server answering /health again. Settings (environment):
#   CHAOS_SECONDS   workload seconds (default 120)
#   CHAOS_KILLS     kill/stop events, alternating server and PostgreSQL
#                   from a random first one (default 12)
#   CHAOS_MESSAGES  messages pushed at most (default 1000000)
#   CHAOS_FAST      1: PostgreSQL with fsync off (a process crash loses
#                   nothing either way; only an OS crash would tell them
#                   apart). Default 0: durable defaults.
#   CHAOS_SEED      seed of the kill schedule (default: random, printed)
#   CHAOS_ARGS      more options for `silt chaos`, e.g. "--producers 8"
#   CHAOS_SERVERS   silt servers on the one database (default 2): producers
#                   and tasks go to the first, consumers and task workers to
#                   the last, so wake-ups cross servers; a kill picks one
#   CHAOS_TASKS     tasks sent beside the messages (default 2000; 0: none),
#                   run by two `silt worker --concurrency 4` processes this
#                   script starts (never killed: the server and PostgreSQL
#                   are), whose command appends "<id> <attempt>" to a file
#                   silt chaos checks (no task lost, unfinished, FAILED,
#                   completed twice or run twice)
#   CHAOS_WORKFLOWS workflows started beside them (default 200; 0: none),
#                   diamonds of four nodes run by the same workers and by
#                   silt chaos's HTTP worker (each COMPLETED, every node once)
#   CHAOS_SCHEDULE  1 (default): silt.conf declares a schedule firing every
#                   minute, which both servers race for; silt chaos checks
#                   every slot fired once and its task run once
#   CHAOS_FAILOVER  1: PostgreSQL is a primary with a synchronous streaming
#                   standby, both in the server's PG_HOST/PG_PORT, and every
#                   event is a failover instead: the primary is stopped
#                   -m immediate, the standby promoted, the time to the first
#                   push it takes reported, and the old primary rebuilt as a
#                   standby of the new one. The server is never restarted.
# Only processes this script started are ever signalled (by their PID).
# Everything is stopped and its directory removed on any exit. Exit status:
# that of `silt chaos` (0: every check held), or 1 when the harness itself
# failed (the server exited by itself, a restart did not become healthy).
set -u
bin="${1:?usage: scripts/chaos.sh BINARY}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
[ -x "$bin" ] || { echo "chaos: $bin is not executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/cluster_lib.sh
. "$here/cluster_lib.sh"
seconds=${CHAOS_SECONDS:-120}
kills=${CHAOS_KILLS:-12}
messages=${CHAOS_MESSAGES:-1000000}
seed=${CHAOS_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
RANDOM=$seed
pgmode=""
[ "${CHAOS_FAST:-0}" = 1 ] && pgmode=fast
failover=${CHAOS_FAILOVER:-0}
tasks=${CHAOS_TASKS:-2000}
workflows=${CHAOS_WORKFLOWS:-200}
schedule=${CHAOS_SCHEDULE:-1}
worker_pids=""
takeovers=""   # ms from each promotion to the first push served
dir=$(mktemp -d /tmp/silt-chaos.XXXXXX) || exit 1
chmod 755 "$dir"
nservers=${CHAOS_SERVERS:-2}
server_pids=()
http_ports=()
driver_pid=""
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
t0=$(now_ms)

say() { local ms=$(($(now_ms) - t0)); printf 'chaos: %4d.%d s  %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"; }

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    [ -n "$driver_pid" ] && kill -TERM "$driver_pid" 2>/dev/null
    for w in $worker_pids; do kill -KILL "$w" 2>/dev/null; done
    for s in "${server_pids[@]}"; do kill -KILL "$s" 2>/dev/null; wait "$s" 2>/dev/null; done
    wait 2>/dev/null
    "$here/pgcluster.sh" stop "$dir/pg" >/dev/null 2>&1
    "$here/pgcluster.sh" stop "$dir/pg_standby" >/dev/null 2>&1
    if [ "${status:-1}" != 0 ] && [ -s "$dir/server.log" ]; then
        { echo "server log (last 30 lines):"; tail -n 30 "$dir/server.log"; } >&2
    fi
    rm -rf "$dir"
}
trap 'cleanup; exit "${status:-1}"' EXIT
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM

# start_server K: server K on its port, logging to server.log.
start_server() {
    local k=$1 hosts=127.0.0.1 ports="$pg_port"
    [ "$failover" = 1 ] && { hosts=127.0.0.1,127.0.0.1; ports="$pg_port,$standby_port"; }
    SILT_CONFIG="$dir/silt.conf" PG_HOST="$hosts" PG_PORT="$ports" PORT="${http_ports[k]}" LOG_LEVEL=warn \
        "$bin" server >>"$dir/server.log" 2>&1 &
    server_pids[k]=$!
    server_wait_healthy "${http_ports[k]}" "${server_pids[k]}" chaos
}

# A server died without being told to: a crash, which fails the run.
server_alive() {
    local k
    for k in "${!server_pids[@]}"; do
        kill -0 "${server_pids[k]}" 2>/dev/null && continue
        echo "chaos: server $k exited by itself" >&2
        return 1
    done
}

all_healthy() {
    local k
    for k in "${!server_pids[@]}"; do server_wait_healthy "${http_ports[k]}" "${server_pids[k]}" chaos || return 1; done
}

kill_server() {
    server_alive || return 1
    local k=$((RANDOM % nservers))
    kill -KILL "${server_pids[k]}"
    wait "${server_pids[k]}" 2>/dev/null
    say "kill -9 server $k (pid ${server_pids[k]})"
    sleep "0.$((RANDOM % 10))"
    start_server "$k" && say "server $k restarted (pid ${server_pids[k]})"
}

stop_postgres() {
    server_alive || return 1
    "$here/pgcluster.sh" stop "$dir/pg" immediate
    say "PostgreSQL stopped (-m immediate)"
    sleep "$((RANDOM % 2)).$((RANDOM % 10))"
    "$here/pgcluster.sh" start "$dir/pg" "$pg_port" $pgmode 2>"$dir/pgcluster.err" \
        || { cat "$dir/pgcluster.err" >&2; return 1; }
    all_healthy && say "PostgreSQL restarted, servers healthy"
}

# Recovery quick enough that an attempt lost with a claim's answer (the
# server killed between the claim's commit and its reply) is retried well
# within the drain, and slow enough that a worker cut off by an event is
# not taken for dead. The claimer settings matter to the HTTP worker, which
# claims without starting. The schedule fires every minute (cron's finest).
write_conf() {
    {
        printf '[recovery]\nrunner_heartbeat_interval_ms = 1000\nrunning_stale_after_ms = 10000\n'
        printf 'claimer_heartbeat_interval_ms = 1000\nclaimed_stale_after_ms = 10000\ncheck_interval_ms = 1000\n'
        [ "$schedule" = 1 ] && printf '[schedule.chaos]\ncron = * * * * *\ntask = chaos-slot\nqueue = %s\n' "$sched_queue"
    } >"$dir/silt.conf"
}

# The task workers: each run of their command leaves a line in task_runs.
start_workers() {
    local k
    for k in 1 2; do
        SILT_URL="http://127.0.0.1:${http_ports[nservers - 1]}" LOG_LEVEL=warn "$bin" worker --queue "$task_queue" \
            --queue "$wf_queue" --concurrency 4 -- sh -c 'cat >/dev/null; echo "$SILT_TASK_ID $SILT_TASK_ATTEMPT" >>"$0"; echo null' \
            "$dir/task_runs" >>"$dir/worker.log" 2>&1 &
        worker_pids="$worker_pids $!"
    done
}

stop_workers() {
    local w
    for w in $worker_pids; do kill -TERM "$w" 2>/dev/null; done
    for w in $worker_pids; do wait "$w" 2>/dev/null; done
    worker_pids=""
}

# One push to a queue of its own, answered 201 within 2 s.
probe_push() {
    [ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 -H 'Content-Type: application/json' \
        -d '{"items":[{"queue":"chaos_failover_probe","payload":{"probe":true}}]}' \
        "http://127.0.0.1:${http_ports[0]}/api/v1/push")" = 201 ]
}

# The primary dies, the standby takes over, the server finds it by itself;
# then the dead primary's directory becomes a standby of the new primary,
# so that the next failover has one (and commits wait for it again).
fail_over() {
    server_alive || return 1
    "$here/pgcluster.sh" stop "$dir/$primary" immediate
    say "primary $primary (port $pg_port) stopped -m immediate"
    "$here/pgcluster.sh" promote "$dir/$standby" || { echo "chaos: promotion failed" >&2; return 1; }
    local promoted tries
    promoted=$(now_ms)
    for tries in $(seq 1 600); do probe_push && break; sleep 0.1; done
    [ "$tries" -lt 600 ] || { echo "chaos: no push served within 60 s of the promotion" >&2; return 1; }
    takeovers="$takeovers $(($(now_ms) - promoted))"
    say "standby $standby (port $standby_port) promoted; first push served $(($(now_ms) - promoted)) ms later"
    rm -rf "${dir:?}/$primary"
    "$here/pgcluster.sh" standby "$dir/$primary" "$pg_port" "$standby_port" 2>"$dir/pgcluster.err" \
        || { cat "$dir/pgcluster.err" >&2; return 1; }
    say "old primary $primary rebuilt as the standby of $standby"
    local d=$primary p=$pg_port
    primary=$standby; pg_port=$standby_port
    standby=$d; standby_port=$p
}

# Event k of n fires at a random moment in the k-th of n equal slices of the
# first 85% of the workload (the rest lets the last restart settle).
killer() {
    local k at now kind=$((RANDOM % 2))
    local span=$((seconds * 850 / (kills > 0 ? kills : 1)))   # ms per slice
    for k in $(seq 0 $((kills - 1))); do
        at=$((k * span + RANDOM % (span > 0 ? span : 1)))
        now=$(($(now_ms) - t0))
        [ "$at" -gt "$now" ] && sleep "$(((at - now) / 1000)).$(printf %03d $(((at - now) % 1000)))"
        kill -0 "$driver_pid" 2>/dev/null || return 0   # the workload ended early
        if [ "$failover" = 1 ]; then fail_over || return 1
        elif [ $(((k + kind) % 2)) = 0 ]; then kill_server || return 1
        else stop_postgres || return 1; fi
    done
}

status=1
primary=pg standby=pg_standby standby_port=""
pg_port=$(cluster_start "$dir/pg" "$pgmode") || { echo "chaos: could not start PostgreSQL" >&2; exit 1; }
if [ "$failover" = 1 ]; then
    standby_port=$(cluster_free_port) || { echo "chaos: no free port for the standby" >&2; exit 1; }
    "$here/pgcluster.sh" standby "$dir/$standby" "$standby_port" "$pg_port" 2>"$dir/pgcluster.err" \
        || { cat "$dir/pgcluster.err" >&2; exit 1; }
fi
[ "$nservers" -ge 1 ] && [ "$nservers" -le 8 ] || { echo "chaos: CHAOS_SERVERS is 1 to 8" >&2; exit 2; }
task_queue="chaos-tasks-$seed"
wf_queue="chaos-wf-$seed"
sched_queue="chaos-slots-$seed"
write_conf
for ((k = 0; k < nservers; k++)); do
    http_ports[k]=$(cluster_free_port) || { echo "chaos: no free port for a server" >&2; exit 1; }
    start_server "$k" || exit 1
done
task_args="--task-runs $dir/task_runs"
[ "$tasks" -gt 0 ] && task_args="$task_args --tasks $tasks --task-queue $task_queue"
[ "$workflows" -gt 0 ] && task_args="$task_args --workflows $workflows --workflow-queue $wf_queue"
[ "$schedule" = 1 ] && task_args="$task_args --schedule chaos --schedule-queue $sched_queue"
[ "$tasks" -gt 0 ] || [ "$workflows" -gt 0 ] && start_workers
say "seed $seed: $kills events in ${seconds} s, up to $messages messages, PostgreSQL ${pgmode:-durable} on $pg_port, servers on ${http_ports[*]}"
t0=$(now_ms)   # the kill schedule counts from the workload's start
# CHAOS_ARGS is split into words on purpose: it is a list of options.
# shellcheck disable=SC2086
SILT_URL="http://127.0.0.1:${http_ports[0]}" "$bin" chaos --seconds "$seconds" --messages "$messages" \
    --consumer-url "http://127.0.0.1:${http_ports[nservers - 1]}" $task_args ${CHAOS_ARGS:-} &
driver_pid=$!
killer
killed=$?
[ "$killed" = 0 ] || kill -TERM "$driver_pid" 2>/dev/null
wait "$driver_pid"
status=$?
driver_pid=""
stop_workers
[ "$killed" = 0 ] && server_alive || status=1
[ -z "$takeovers" ] || say "failovers: promotion to first push served, ms:$takeovers"
say "done, exit status $status"
exit "$status"
