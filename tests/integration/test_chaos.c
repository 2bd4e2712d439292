/* Integration: crash safety, the short version of `make chaos`
 * (docs/reliability.md). scripts/chaos.sh starts a cluster and a server of
 * its own (it stops PostgreSQL, so it cannot share the suite's), runs
 * `silt chaos` against them and, meanwhile, kill -9s the server twice and
 * stops PostgreSQL with -m immediate twice, while tasks are sent and run by
 * two `silt worker` processes. Every check is silt chaos's: acknowledged
 * pushes lost, stored duplicates, skipped messages and redeliveries after a
 * 2xx ack all 0; tasks lost, unfinished, FAILED, completed twice or run
 * twice all 0. Timing only decides how much work is
 * done between the kills, never whether the checks hold. The failover
 * version kills the primary of a primary and synchronous standby pair
 * twice, promoting the standby each time, with the same checks and no
 * restart of the server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

/* The workload lasts 20 s; starting two clusters' worth of processes,
 * restarts and the drain take the rest. The harness's 60 s is too tight
 * for an ASan build on a loaded machine, and every wait inside has its own
 * deadline, so this bound only catches a hang. */
#define CHAOS_TEST_TIMEOUT_S 240

TEST(chaos_kill9_and_immediate_stops_lose_skip_and_duplicate_nothing)
{
    if (access("scripts/chaos.sh", X_OK) != 0) {
        printf("    note: scripts/chaos.sh not here (run from the repository root): not checked\n");
        return;
    }
    alarm(CHAOS_TEST_TIMEOUT_S);
    static char out[1 << 16];
    int code = run_cmd(sfmt("CHAOS_SECONDS=20 CHAOS_KILLS=4 CHAOS_MESSAGES=20000 CHAOS_TASKS=600 CHAOS_FAST=1 "
                            "CHAOS_ARGS='--producers 8 --batch 100 --drain 60' scripts/chaos.sh '%s' 2>&1",
                            silt_bin()), out, sizeof out);
    fputs(out, stderr);   /* shown when the test fails */
    CHECK_INT(code, 0);
}

TEST(chaos_failovers_to_a_synchronous_standby_lose_skip_and_duplicate_nothing)
{
    if (access("scripts/chaos.sh", X_OK) != 0) {
        printf("    note: scripts/chaos.sh not here (run from the repository root): not checked\n");
        return;
    }
    alarm(CHAOS_TEST_TIMEOUT_S);
    static char out[1 << 16];
    /* no message cap: the workload lasts its 20 s, so both failovers happen in it */
    int code = run_cmd(sfmt("CHAOS_FAILOVER=1 CHAOS_SECONDS=20 CHAOS_KILLS=2 CHAOS_TASKS=400 CHAOS_FAST=1 "
                            "CHAOS_ARGS='--producers 8 --batch 100 --drain 60' scripts/chaos.sh '%s' 2>&1",
                            silt_bin()), out, sizeof out);
    fputs(out, stderr);   /* shown when the test fails */
    CHECK_INT(code, 0);
    int promotions = 0;
    for (const char *p = out; (p = strstr(p, " promoted; first push served")); p++) promotions++;
    CHECK_INT(promotions, 2);
}

TEST(chaos_refuses_tasks_without_their_queue_and_runs_file)
{
    static char out[4096];
    CHECK_INT(run_cmd(sfmt("'%s' chaos --tasks 5 --url http://127.0.0.1:1 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "--tasks needs --task-queue and --task-runs") != NULL);
    CHECK_INT(run_cmd(sfmt("'%s' chaos --tasks 20000000 --task-queue q --task-runs /tmp/x --url http://127.0.0.1:1 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "--tasks must be 0..10000000") != NULL);
}
