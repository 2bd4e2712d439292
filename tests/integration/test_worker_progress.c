/* Integration: progress from a `silt worker` command (docs/tasks.md,
 * "Progress from a command"). The command writes lines to descriptor 3
 * (SILT_PROGRESS_FD); the worker keeps each task's latest good one, sends it
 * with a heartbeat brought forward (at most one a second), logs and drops a
 * bad line, sends a report read as the command ends before its end, and
 * hands each command a pipe of its own. Every wait is a condition
 * polled with a deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"
#include "worker_support.h"

/* Reports, waits for $DIR/go, reports its last and ends. */
static const char REPORTING[] =
    "echo \"$SILT_PROGRESS_FD\" > \"$DIR/fd.tmp\"; mv \"$DIR/fd.tmp\" \"$DIR/fd\"\n"
    "echo 'not json' >&3\n"
    "echo '[1]' >&3\n"
    "echo '{\"progress\":25,\"extra\":1}' >&3\n"
    "echo '{\"progress\": 25, \"progressInfo\": {\"step\": \"copy\"}}' >&3\n"
    "while [ ! -e \"$DIR/go\" ]; do sleep 0.01; done\n"
    "printf 100 >&3\n"   /* the last line, without its newline, as the command exits */
    "echo '{\"ok\":true}'\n";

/* The task's GET reply, polled until its progress is want. */
static void await_progress(silt_server *s, const char *id, const char *want, reply *r)
{
    int64_t end = now_ms() + DEADLINE_MS;
    for (;;) {
        rq(s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, r);
        if (r->status == 200 && strcmp(jraw(r, "progress"), want) == 0) return;
        if (now_ms() > end) harness_failf(__FILE__, __LINE__, "progress %s never came: %s", want, r->raw.body.data);
        reply_fini(r);
        pause_ms(20);
    }
}

static int count_in(const char *path, const char *what)
{
    char out[CLI_OUT];
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = '\0';
    int count = 0;
    for (const char *p = out; (p = strstr(p, what)) != NULL; p += strlen(what)) count++;
    return count;
}

TEST(worker_sends_a_commands_progress_lines_early_logs_bad_ones_and_keeps_the_last_in_history)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"report\",\"queue\":\"jobs\"}"));
    test_worker w;
    /* heartbeats a minute apart: only a report brings one forward */
    worker_start_cmd(&w, &s, "jobs", (const char *const[]){ "--heartbeat-ms", "60000", NULL },
                     (const char *const[]){ "sh", "-c", REPORTING, NULL });
    await_file(sfmt("%s/fd", w.dir), "3");
    reply r;
    await_progress(&s, id, "25", &r);
    CHECK_STR(jstr(&r, "status"), "RUNNING");
    CHECK_STR(jraw(&r, "progressInfo"), "{\"step\": \"copy\"}");
    reply_fini(&r);
    CHECK_INT(count_in(w.log, "progress line ignored"), 3);
    touch(sfmt("%s/go", w.dir));
    await_task(&s, id, "COMPLETED", &r);
    CHECK_STR(jraw(&r, "progress"), "100");   /* sent before the end */
    CHECK_STR(jraw(&r, "progressInfo"), "null");
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

/* Reports as fast as it can for a while; its descriptors listed first.
 * A report that finds the pipe full is lost by design (docs/tasks.md: the
 * next supersedes it; a slow worker, such as a sanitized build's on a busy
 * machine, falls that far behind), so the last is written until it goes. */
static const char CHATTY[] =
    "readlink /proc/$$/fd/3 > \"$DIR/fd3.$SILT_TASK_ID\"\n"
    "for f in /proc/$$/fd/*; do readlink $f; done > \"$DIR/fds.$SILT_TASK_ID\"\n"
    "i=0; while [ $i -lt 20000 ]; do echo $i; i=$((i+1)); done >&3 2>/dev/null\n"
    "until echo 20000 >&3; do :; done 2>/dev/null\n"
    "touch \"$DIR/done.$SILT_TASK_ID\"\n"
    "while [ ! -e \"$DIR/go\" ]; do sleep 0.01; done\n";

TEST(worker_sends_a_chatty_commands_progress_at_most_once_a_second_and_gives_each_command_its_own_fd_3)
{
    silt_server s;
    srv_start(&s, NULL);
    char a[96], b[96];
    keep_str(a, task_send(&s, "{\"name\":\"chatty\",\"queue\":\"jobs\"}"));
    keep_str(b, task_send(&s, "{\"name\":\"chatty\",\"queue\":\"jobs\"}"));
    test_worker w;
    int64_t started = now_ms();
    worker_start_cmd(&w, &s, "jobs", (const char *const[]){ "--concurrency", "2", "--heartbeat-ms", "60000", NULL },
                     (const char *const[]){ "sh", "-c", CHATTY, NULL });
    await_file(sfmt("%s/done.%s", w.dir, a), NULL);
    await_file(sfmt("%s/done.%s", w.dir, b), NULL);
    reply r;
    await_progress(&s, a, "20000", &r);
    reply_fini(&r);
    await_progress(&s, b, "20000", &r);
    reply_fini(&r);
    int64_t seconds = (now_ms() - started) / 1000 + 1;
    /* the first runner heartbeat comes with the start; then one a second at most */
    const char *beats = sql("SELECT count(*) FROM horsies_heartbeats WHERE task_id = '%s'", a);
    CHECK(atoll(beats) <= seconds + 2);
    /* each command has its own progress pipe as 3, and not the other's */
    for (int i = 0; i < 2; i++) {
        const char *self = i ? b : a, *other = i ? a : b;
        char pipe3[CLI_OUT], others[CLI_OUT];
        CHECK(run_cmd(sfmt("cat %s/fd3.%s", w.dir, self), pipe3, sizeof pipe3) == 0);
        CHECK(strncmp(pipe3, "pipe:[", 6) == 0);
        CHECK(run_cmd(sfmt("cat %s/fds.%s", w.dir, other), others, sizeof others) == 0);
        CHECK(strstr(others, pipe3) == NULL);
    }
    touch(sfmt("%s/go", w.dir));
    await_task(&s, a, "COMPLETED", &r);
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}
