/* worker_guard: kills the worker's commands when the worker dies (see
 * worker_guard.h). Messages on the pipe are one int32 each: a process
 * group listed (positive) or struck off (negative). A write of 4 bytes to a
 * pipe is atomic, so the worker and its children never interleave. */
#include "cli/worker_guard.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static int guard_fd = -1;   /* the write end, in the worker and (until exec) its children */

static void send_pgid(int32_t v)
{
    if (guard_fd < 0) return;
    ssize_t n;
    do n = write(guard_fd, &v, sizeof v); while (n < 0 && errno == EINTR);
}

void wk_guard_enter(pid_t pgid) { send_pgid((int32_t)pgid); }
void wk_guard_leave(pid_t pgid) { send_pgid(-(int32_t)pgid); }

typedef struct pgid_set {
    int32_t *items;
    size_t   n, cap;
} pgid_set;

static void set_add(pgid_set *s, int32_t g)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        int32_t *p = realloc(s->items, cap * sizeof *p);
        if (!p) return;   /* out of memory: that group goes unguarded, nothing worse */
        s->items = p;
        s->cap = cap;
    }
    s->items[s->n++] = g;
}

static void set_remove(pgid_set *s, int32_t g)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i] == g) { s->items[i] = s->items[--s->n]; return; }
}

/* The guard's life: listen until the worker is gone, then kill what is left.
 * Stop signals meant for the worker's terminal are ignored: only the end of
 * the pipe ends the guard. */
static _Noreturn void guard_main(int rfd)
{
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    prctl(PR_SET_NAME, "silt-guard");
    for (int fd = 0; fd < 1024; fd++)
        if (fd != rfd && fd != 2) close(fd);
    pgid_set s = { 0 };
    for (;;) {
        int32_t v;
        ssize_t n = read(rfd, &v, sizeof v);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof v) break;   /* end of file: the worker is gone */
        if (v > 0) set_add(&s, v);
        else if (v < 0) set_remove(&s, -v);
    }
    for (size_t i = 0; i < s.n; i++) kill(-(pid_t)s.items[i], SIGKILL);
    _exit(0);
}

int wk_guard_start(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return -1;
    pid_t pid = fork();
    if (pid < 0) { close(p[0]); close(p[1]); return -1; }
    if (pid == 0) { close(p[1]); guard_main(p[0]); }
    close(p[0]);
    guard_fd = p[1];
    return 0;
}
