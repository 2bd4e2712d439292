/* Integration: crash safety, the short version of `make chaos`
 * (docs/reliability.md). scripts/chaos.sh starts a cluster and a server of
 * its own (it stops PostgreSQL, so it cannot share the suite's), runs
 * `silt chaos` against them and, meanwhile, kill -9s the server twice and
 * stops PostgreSQL with -m immediate twice, while a second consumer group
 * moves the messages to another queue in transactions (acking a share with
 * retry and with dlq), tasks and workflows are run by two `silt worker`
 * processes and an HTTP worker, and both servers race for the slots of a
 * schedule. Every check is silt chaos's (docs/reliability.md): acknowledged
 * pushes lost, stored duplicates, skipped messages and redeliveries after a
 * 2xx ack all 0, for both groups; every message moved once or
 * dead-lettered once as its share says; tasks and workflow nodes lost,
 * unfinished, FAILED, completed twice or run twice all 0, every workflow
 * COMPLETED; every schedule slot fired once. Timing only decides how much work is
 * done between the kills, never whether the checks hold. The failover
 * version kills the primary of a primary and synchronous standby pair
 * twice, promoting the standby each time, with the same checks and no
 * restart of the server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

/* The workload lasts 20 s; starting two clusters' worth of processes,
 * restarts and the drain take the rest. The drain ends when every group is
 * quiet, within --drain's 150 s: the mover's group fell behind for over
 * 60 s in ASan runs at a load average of 20-40. The harness's 60 s is too tight
 * for an ASan build on a loaded machine, and every wait inside has its own
 * deadline, so this bound only catches a hang. */
#define CHAOS_TEST_TIMEOUT_S 300

/* A schedule fires at most once a minute (cron's finest). Starting when the
 * wall clock is in the second half of a minute puts the next minute inside
 * the workload, so the race of both servers for a slot through the kills is
 * in every run: a wait on the clock (at most 43 s, 15 s on average), not a
 * sleep that hopes something happened. */
static void start_in_the_second_half_of_a_minute(void)
{
    for (;;) {
        time_t now = time(NULL);
        int second = (int)(now % 60);
        if (second >= 38 && second <= 55) return;
        sleep((unsigned)((38 - second + 60) % 60));
    }
}

/* scripts/chaos.sh brings its clusters and servers back on the ports they
 * had, so these come from a range no test beside it picks from (the
 * integration tests' 15000-19999, the client suites' 10000-14999 and
 * 20000-32000): CLUSTER_PORTS narrows scripts/cluster_lib.sh's choice. */
#define CHAOS_PORTS "CLUSTER_PORTS='7000 9999' "

TEST_LONG(chaos_kill9_and_immediate_stops_lose_skip_and_duplicate_nothing)
{
    if (access("scripts/chaos.sh", X_OK) != 0) {
        printf("    note: scripts/chaos.sh not here (run from the repository root): not checked\n");
        return;
    }
    alarm(CHAOS_TEST_TIMEOUT_S);
    start_in_the_second_half_of_a_minute();
    static char out[1 << 16];
    int code = run_cmd(sfmt(CHAOS_PORTS "CHAOS_SECONDS=20 CHAOS_KILLS=4 CHAOS_MESSAGES=20000 CHAOS_TASKS=600 "
                            "CHAOS_WORKFLOWS=60 CHAOS_FAST=1 "
                            "CHAOS_ARGS='--producers 8 --batch 100 --drain 150' scripts/chaos.sh '%s' 2>&1",
                            silt_bin()), out, sizeof out);
    fputs(out, stderr);   /* shown when the test fails */
    CHECK_INT(code, 0);
}

TEST_LONG(chaos_failovers_to_a_synchronous_standby_lose_skip_and_duplicate_nothing)
{
    if (access("scripts/chaos.sh", X_OK) != 0) {
        printf("    note: scripts/chaos.sh not here (run from the repository root): not checked\n");
        return;
    }
    alarm(CHAOS_TEST_TIMEOUT_S);
    static char out[1 << 16];
    /* Capped like the kill test, so the second group (which pushes every
     * message again, to a synchronous standby) drains within the drain; the
     * tasks and workflows are spread over the 20 s, so both failovers
     * happen in the workload even when the pushes end before them. */
    int code = run_cmd(sfmt(CHAOS_PORTS "CHAOS_FAILOVER=1 CHAOS_SECONDS=20 CHAOS_KILLS=2 CHAOS_MESSAGES=60000 "
                            "CHAOS_TASKS=400 CHAOS_WORKFLOWS=40 CHAOS_FAST=1 "
                            "CHAOS_ARGS='--producers 8 --batch 100 --drain 150' scripts/chaos.sh '%s' 2>&1",
                            silt_bin()), out, sizeof out);
    fputs(out, stderr);   /* shown when the test fails */
    CHECK_INT(code, 0);
    int promotions = 0;
    for (const char *p = out; (p = strstr(p, " promoted; first push served")); p++) promotions++;
    CHECK_INT(promotions, 2);
}

TEST(chaos_refuses_tasks_workflows_and_a_schedule_without_their_queue_and_runs_file)
{
    static char out[4096];
    CHECK_INT(run_cmd(sfmt("'%s' chaos --tasks 5 --url http://127.0.0.1:1 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "--tasks needs --task-queue and --task-runs") != NULL);
    CHECK_INT(run_cmd(sfmt("'%s' chaos --tasks 20000000 --task-queue q --task-runs /tmp/x --url http://127.0.0.1:1 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "--tasks must be 0..10000000") != NULL);
    CHECK_INT(run_cmd(sfmt("'%s' chaos --workflows 5 --url http://127.0.0.1:1 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "--workflows needs --workflow-queue and --task-runs") != NULL);
    CHECK_INT(run_cmd(sfmt("'%s' chaos --schedule s --task-runs /tmp/x --url http://127.0.0.1:1 2>&1", silt_bin()), out,
                      sizeof out), 2);
    CHECK(strstr(out, "--schedule needs --schedule-queue and --task-runs") != NULL);
}
