/* worker_support: see worker_support.h. */
#include "worker_support.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

const char WK_SCRIPT[] =
    "case \"$SILT_TASK_NAME\" in\n"
    "echo) printf '{\"args\":'; cat; printf ',\"id\":\"%s\",\"attempt\":%s,\"name\":\"%s\",\"queue\":\"%s\"}\\n'"
    " \"$SILT_TASK_ID\" \"$SILT_TASK_ATTEMPT\" \"$SILT_TASK_NAME\" \"$SILT_TASK_QUEUE\" ;;\n"
    "quiet) cat > /dev/null ;;\n"
    "fail) echo 'an earlier line' >&2; echo 'it broke: code 3' >&2; echo >&2; exit 3 ;;\n"
    "garbage) echo 'this is not json' ;;\n"
    "deep) i=0; while [ $i -lt 63 ]; do printf '['; i=$((i+1)); done; i=0;"
    " while [ $i -lt 63 ]; do printf ']'; i=$((i+1)); done; echo ;;\n"
    "big) cat > /dev/null; head -c 17000000 /dev/zero | tr '\\0' 1 ;;\n"
    "flaky) if [ \"$SILT_TASK_ATTEMPT\" -ge 2 ]; then echo '\"second time lucky\"';"
    " else echo \"attempt $SILT_TASK_ATTEMPT fails\" >&2; exit 1; fi ;;\n"
    "hang) echo $$ > \"$DIR/$SILT_TASK_ID.pid\"; exec sleep 120 ;;\n"
    "gate) echo run >> \"$DIR/$SILT_TASK_ID.runs\"; touch \"$DIR/$SILT_TASK_ID.running\";"
    " while [ ! -e \"$DIR/go\" ]; do sleep 0.05; done; echo '\"finished\"' ;;\n"
    /* attempt 1 leaves a child and waits; a later attempt fails if any of
     * attempt 1's processes is still alive */
    "family) if [ \"$SILT_TASK_ATTEMPT\" -ge 2 ]; then"
    " for p in $(cat \"$DIR/$SILT_TASK_ID.pid\" \"$DIR/$SILT_TASK_ID.kid\"); do"
    " if kill -0 $p 2>/dev/null; then echo \"attempt 1 still runs: $p\" >&2; exit 9; fi; done; echo '\"alone\"';"
    " else sleep 120 & echo $! > \"$DIR/$SILT_TASK_ID.kid\"; echo $$ > \"$DIR/$SILT_TASK_ID.pid\"; wait; fi ;;\n"
    "trap) trap 'echo got TERM > \"$DIR/$SILT_TASK_ID.term\"; exit 143' TERM; echo $$ > \"$DIR/$SILT_TASK_ID.pid\";"
    " while :; do sleep 0.05; done ;;\n"
    "*) echo \"unknown task $SILT_TASK_NAME\" >&2; exit 99 ;;\n"
    "esac\n";

/* ---- the worker as a child process ------------------------------------- */


/* In the test's scratch directory, kept with the worker's log when the
 * test fails. */
static void test_dir(test_worker *w)
{
    CHECK(snprintf(w->dir, sizeof w->dir, "%s/worker-XXXXXX", harness_scratch_dir()) < (int)sizeof w->dir);
    CHECK(mkdtemp(w->dir) != NULL);
    snprintf(w->log, sizeof w->log, "%s/worker.log", w->dir);
}

/* Starts `silt worker --queue q <opts...> -- <cmd...>`; opts and cmd are
 * NULL-terminated lists. Its stderr goes to w->log. */
void worker_start_cmd(test_worker *w, const silt_server *s, const char *q, const char *const *opts,
                             const char *const *cmd)
{
    test_dir(w);
    const char *argv[32];
    int n = 0;
    argv[n++] = silt_bin();
    argv[n++] = "worker";
    argv[n++] = "--queue";
    argv[n++] = q;
    for (int i = 0; opts && opts[i] && n < 24; i++) argv[n++] = opts[i];
    argv[n++] = "--";
    for (int i = 0; cmd[i] && n < 31; i++) argv[n++] = cmd[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setenv("SILT_URL", s->url, 1);
        setenv("DIR", w->dir, 1);
        setenv("LOG_LEVEL", "info", 1);
        FILE *log = freopen(w->log, "w", stderr);
        if (!log) _exit(126);
        execv(silt_bin(), (char *const *)argv);
        _exit(127);
    }
    w->pid = pid;
}

/* The same running `sh -c SCRIPT`. */
void worker_start(test_worker *w, const silt_server *s, const char *q, const char *const *opts)
{
    worker_start_cmd(w, s, q, opts, (const char *const[]){ "sh", "-c", WK_SCRIPT, NULL });
}

/* The worker's exit status once it ends within timeout_ms (fails the test
 * otherwise); 128 + n when killed by signal n. */
int worker_wait(test_worker *w, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t r = waitpid(w->pid, &status, WNOHANG);
        if (r == w->pid) break;
        if (now_ms() > end) harness_failf(__FILE__, __LINE__, "the worker did not exit within %d ms", timeout_ms);
        pause_ms(20);
    }
    w->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int worker_stop(test_worker *w, int timeout_ms)
{
    CHECK(kill(w->pid, SIGTERM) == 0);
    return worker_wait(w, timeout_ms);
}

void worker_cleanup(test_worker *w)
{
    if (w->pid > 0) { kill(w->pid, SIGKILL); waitpid(w->pid, NULL, 0); }
    CHECK(system(sfmt("rm -rf '%s'", w->dir)) == 0);
}

void await_file(const char *path, const char *contains)
{
    int64_t end = now_ms() + DEADLINE_MS;
    for (;;) {
        char text[8192] = "";
        FILE *f = fopen(path, "r");
        if (f) { text[fread(text, 1, sizeof text - 1, f)] = '\0'; fclose(f); }
        if (f && (!contains || strstr(text, contains))) return;
        if (now_ms() > end) harness_failf(__FILE__, __LINE__, "%s never held \"%s\"", path, contains ? contains : "");
        pause_ms(20);
    }
}

void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fclose(f);
}

/* Polls GET /api/v1/tasks/:id until its status is want; the reply stays in r. */
void await_task(silt_server *s, const char *id, const char *want, reply *r)
{
    int64_t end = now_ms() + DEADLINE_MS;
    for (;;) {
        rq(s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, r);
        if (r->status == 200 && strcmp(jstr(r, "status"), want) == 0) return;
        if (now_ms() > end)
            harness_failf(__FILE__, __LINE__, "task %s never became %s: %d %s", id, want, r->status, r->raw.body.data);
        reply_fini(r);
        pause_ms(20);
    }
}

/* Gone, or a zombie waiting for whoever inherited it to reap it. */
bool process_alive(pid_t pid)
{
    if (kill(pid, 0) < 0 && errno == ESRCH) return false;
    FILE *f = fopen(sfmt("/proc/%d/stat", (int)pid), "r");
    if (!f) return false;
    char state = '?';
    int matched = fscanf(f, "%*d (%*[^)]) %c", &state);
    fclose(f);
    return matched != 1 || state != 'Z';
}

pid_t read_pid(const char *path)
{
    await_file(path, "\n");
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int pid = 0;
    CHECK(fscanf(f, "%d", &pid) == 1);
    fclose(f);
    return (pid_t)pid;
}

const char *worker_fast_recovery_conf(void)
{
    return test_file("fast-recovery.conf", "[recovery]\nrunner_heartbeat_interval_ms = 1000\n"
                                           "running_stale_after_ms = 2000\ncheck_interval_ms = 1000\n");
}
