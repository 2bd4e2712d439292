/* worker_guard: kills the worker's commands when the worker dies (see
 * worker_guard.h). The "pipe" is a SOCK_SEQPACKET socket pair: each message
 * is one int32, a process group listed (positive) or struck off
 * (negative), never interleaved with another's; and a send with
 * MSG_NOSIGNAL raises no SIGPIPE if the guard is gone (a command's child
 * has every signal blocked until it execs: a pending SIGPIPE would kill it
 * the moment it unblocks them). */
#include "cli/worker_guard.h"
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int guard_fd = -1;   /* the worker's end, in the worker and (until exec) its children */

static int send_pgid(int32_t v)
{
    if (guard_fd < 0) return -1;
    ssize_t n;
    do n = send(guard_fd, &v, sizeof v, MSG_NOSIGNAL); while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof v ? 0 : -1;
}

void wk_guard_enter(pid_t pgid) { (void)send_pgid((int32_t)pgid); }

int wk_guard_leave(pid_t pgid) { return send_pgid(-(int32_t)pgid); }

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
        ssize_t n = recv(rfd, &v, sizeof v, 0);
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
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0) return -1;
    pid_t pid = fork();
    if (pid < 0) { close(p[0]); close(p[1]); return -1; }
    if (pid == 0) { close(p[1]); guard_main(p[0]); }
    close(p[0]);
    guard_fd = p[1];
    return 0;
}
