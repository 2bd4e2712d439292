/* worker_support: what the tests of `silt worker` share: the worker as a
 * child process running a shell script whose behaviour the task's name
 * picks (WK_SCRIPT), and waits on files and task states with deadlines. */
#ifndef SILT_WORKER_SUPPORT_H
#define SILT_WORKER_SUPPORT_H
#include <stdbool.h>
#include <sys/types.h>
#include "support.h"

#define DEADLINE_MS 30000   /* generous: two cores, other suites running */
#define CLI_OUT     65536

/* The worker's command. $DIR is the test's directory; the task's name picks
 * what it does. */
extern const char WK_SCRIPT[];

typedef struct test_worker {
    pid_t pid;
    char  dir[96];
    char  log[160];
} test_worker;

/* Starts `silt worker --queue q <opts...> -- <cmd...>`; opts and cmd are
 * NULL-terminated lists. Its stderr goes to w->log, in the test's scratch
 * directory (kept when the test fails). */
void worker_start_cmd(test_worker *w, const silt_server *s, const char *q, const char *const *opts,
                      const char *const *cmd);
/* The same running `sh -c WK_SCRIPT`. */
void worker_start(test_worker *w, const silt_server *s, const char *q, const char *const *opts);
/* The worker's exit status once it ends within timeout_ms (fails the test
 * otherwise); 128 + n when killed by signal n. */
int  worker_wait(test_worker *w, int timeout_ms);
int  worker_stop(test_worker *w, int timeout_ms);   /* SIGTERM, then worker_wait */
void worker_cleanup(test_worker *w);
/* Waits until path exists (and holds contains, unless NULL). */
void await_file(const char *path, const char *contains);
void touch(const char *path);
/* Polls GET /api/v1/tasks/:id until its status is want; the reply stays in r. */
void await_task(silt_server *s, const char *id, const char *want, reply *r);
/* Neither gone nor a zombie. */
bool process_alive(pid_t pid);
/* A silt.conf for this test (test_file's): runner heartbeats every
 * second, a runner stale after two, recovery every second. */
const char *worker_fast_recovery_conf(void);
/* The pid a command wrote to path (waited for). */
pid_t read_pid(const char *path);

#endif
