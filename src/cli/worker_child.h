/* worker_child: one run of a worker's command for one task — the process,
 * its captured output, and how it ended. The command runs in a process
 * group of its own, so a kill reaches whatever it started; its stdin is an
 * anonymous in-memory file (memfd) holding the task's args (a large argument never
 * blocks the worker on a pipe); stdout is kept up to WK_STDOUT_MAX bytes,
 * stderr only as its last non-empty line; descriptor 3 (WK_PROGRESS_FD) is
 * a non-blocking pipe of progress lines, of which the last good one is
 * kept (worker_progress.h). Nothing here blocks: the worker polls the pipes
 * (wk_child_fds, wk_child_read) and reaps (wk_child_reap). */
#ifndef SILT_CLI_WORKER_CHILD_H
#define SILT_CLI_WORKER_CHILD_H
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "base/buf.h"

#define WK_STDOUT_MAX (16u << 20)   /* a result larger than this fails the task */
#define WK_LINE_MAX   1000          /* the stderr line kept, cut to this (bytes; the server keeps 4096) */

typedef struct wk_child {
    pid_t pid;            /* 0: none */
    int   out_fd, err_fd; /* -1 once at end of file */
    int   prog_fd;        /* the progress pipe's read end; -1 once at end of file */
    buf   prog_line;      /* the progress line being read */
    bool  prog_too_long;  /* the line being read is past WK_PROGRESS_LINE_MAX: dropped at its newline */
    buf   progress;       /* the last good report, as heartbeat item members ("" none) */
    bool  progress_new;   /* progress changed since the worker last took it */
    char  task_id[48];    /* for the log of a bad line */
    buf   out;            /* stdout, up to WK_STDOUT_MAX */
    bool  out_overflow;   /* more was written (and discarded) */
    buf   line;           /* stderr's line being read */
    buf   last;           /* stderr's last complete non-empty line */
    bool  exited;
    int   status;         /* waitpid's, once exited */
} wk_child;

/* What the child is told about its task. */
typedef struct wk_child_env {
    const char *id, *name, *queue;
    int         attempt;
} wk_child_env;

/* The file a command named name runs, looked up in PATH once (when the
 * worker starts) when name has no slash: a malloc'd path, or NULL when
 * none is found (each start then looks again and says why it cannot run).
 * Looking up at each start would try every PATH directory before the one
 * holding it, each a failed exec while the worker waits on the vfork. */
char *wk_child_find(const char *name);

/* Starts argv with args (a JSON text, len bytes) on stdin: the file path
 * (wk_child_find's), or argv[0] looked up in PATH when path is NULL. 0, or
 * -1 with the reason in err (nothing left running). */
int  wk_child_start(wk_child *c, const char *path, char *const *argv, const char *args, size_t len,
                    const wk_child_env *env, char *err, size_t errlen);
/* Pipes a command has (stdout, stderr, progress): pollfds per child, at most. */
#define WK_CHILD_FDS 3
/* Appends a pollfd per open pipe; returns how many. */
int  wk_child_fds(const wk_child *c, struct pollfd *fds);
/* Reads what the pipes hold now, without blocking. */
void wk_child_read(wk_child *c);
/* true once the process has ended (reaped; what it wrote before is read). */
bool wk_child_reap(wk_child *c);
/* Signals the child's process group. */
void wk_child_kill(const wk_child *c, int sig);
/* The last non-empty stderr line, "" when none. */
const char *wk_child_last_line(const wk_child *c);
void wk_child_fini(wk_child *c);

#endif
