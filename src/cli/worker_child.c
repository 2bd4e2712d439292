/* worker_child: one run of the worker's command (see worker_child.h). */
#include "cli/worker_child.h"
#include "cli/worker_guard.h"
#include "cli/worker_progress.h"
#include "base/log.h"
#include "base/xalloc.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* An anonymous file in memory holding the args, positioned at its start
 * (memfd: no file system is touched, a task's start costs no directory
 * operations). */
static int args_file(const char *args, size_t len, char *err, size_t errlen)
{
    int fd = memfd_create("silt-task-args", MFD_CLOEXEC);
    if (fd < 0) { snprintf(err, errlen, "cannot create the args file: %s", strerror(errno)); return -1; }
    for (size_t off = 0; off < len; ) {
        ssize_t w = write(fd, args + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            snprintf(err, errlen, "cannot write the task's args: %s", strerror(errno));
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) { snprintf(err, errlen, "lseek: %s", strerror(errno)); close(fd); return -1; }
    return fd;
}

/* The environment a command gets: the worker's own, without any SILT_TASK_*
 * or SILT_PROGRESS_FD it inherited, and the task's four variables and the
 * progress descriptor's number. Built before the vfork: the child may not
 * allocate. */
static char **task_environ(const wk_child_env *env)
{
    extern char **environ;
    size_t n = 0, k = 0;
    while (environ[n]) n++;
    char **envp = xcalloc(n + 6, sizeof *envp);
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "SILT_TASK_", 10) != 0 && strncmp(environ[i], "SILT_PROGRESS_FD=", 17) != 0)
            envp[k++] = xstrdup(environ[i]);
    buf b;
    buf_init(&b);
    const char *names[4] = { "SILT_TASK_ID", "SILT_TASK_ATTEMPT", "SILT_TASK_NAME", "SILT_TASK_QUEUE" };
    for (int i = 0; i < 4; i++) {
        buf_reset(&b);
        if (i == 1) buf_printf(&b, "%s=%d", names[i], env->attempt);
        else buf_printf(&b, "%s=%s", names[i], (i == 0 ? env->id : i == 2 ? env->name : env->queue) ?: "");
        envp[k++] = xstrdup(b.data);
    }
    buf_reset(&b);
    buf_printf(&b, "SILT_PROGRESS_FD=%d", WK_PROGRESS_FD);
    envp[k++] = xstrdup(b.data);
    buf_fini(&b);
    return envp;
}

static void environ_free(char **envp)
{
    for (size_t i = 0; envp[i]; i++) free(envp[i]);
    free(envp);
}

static void say(const char *s) { if (write(2, s, strlen(s)) < 0) { /* nothing more to do */ } }

/* In the child (of a vfork: it shares the worker's memory until it execs,
 * so it only makes system calls and writes nothing the worker reads): its
 * own process group, listed with the guard before anything runs in it, and
 * killed with the worker (the guard kills the group; PR_SET_PDEATHSIG is a
 * second line for the leader, and the getppid() check covers a worker that
 * died before the call); the pipes and the file as stdio, default signal
 * dispositions and no signal blocked; then exec. The progress pipe becomes
 * descriptor 3, the one the command inherits beside stdio (every other
 * descriptor of the worker is close-on-exec, and dup2 clears that flag on
 * its copy; when the pipe is 3 already, the flag is cleared by hand). */
__attribute__((noinline)) static _Noreturn void child_exec(const char *path, char *const *argv, int in, int out,
                                                          int err, int prog, char **envp, pid_t worker)
{
    setpgid(0, 0);
    wk_guard_enter(getpid());
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != worker) _exit(127);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
    if (prog == WK_PROGRESS_FD ? fcntl(prog, F_SETFD, 0) < 0 : dup2(prog, WK_PROGRESS_FD) < 0) _exit(127);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    const int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGCHLD };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (path) execve(path, argv, envp);   /* gone since the worker found it: looked up again */
    execvpe(argv[0], argv, envp);
    int e = errno;
    say("silt worker: cannot run ");
    say(argv[0]);
    say(": ");
    say(strerror(e));
    say("\n");
    _exit(127);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

char *wk_child_find(const char *name)
{
    if (strchr(name, '/')) return xstrdup(name);
    const char *dirs = getenv("PATH");
    buf file;
    buf_init(&file);
    for (const char *d = dirs ? dirs : ""; d && *d; ) {
        const char *end = strchr(d, ':');
        size_t n = end ? (size_t)(end - d) : strlen(d);
        buf_reset(&file);
        buf_printf(&file, "%.*s/%s", (int)n, n ? d : ".", name);   /* an empty entry is the current directory */
        struct stat st;
        if (stat(file.data, &st) == 0 && S_ISREG(st.st_mode) && access(file.data, X_OK) == 0) {
            char *found = xstrdup(file.data);
            buf_fini(&file);
            return found;
        }
        d = end ? end + 1 : NULL;
    }
    buf_fini(&file);
    return NULL;
}

int wk_child_start(wk_child *c, const char *path, char *const *argv, const char *args, size_t len,
                   const wk_child_env *env, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->out_fd = c->err_fd = -1;
    buf_init(&c->out);
    buf_init(&c->line);
    buf_init(&c->last);
    c->prog_fd = -1;
    buf_init(&c->prog_line);
    buf_init(&c->progress);
    snprintf(c->task_id, sizeof c->task_id, "%s", env->id ? env->id : "");
    int in = args_file(args, len, err, errlen), out[2] = { -1, -1 }, errp[2] = { -1, -1 }, prog[2] = { -1, -1 };
    if (in < 0) return -1;
    /* the progress pipe is non-blocking at both ends: a command never waits
     * on a worker that is slow to read (a write to a full pipe fails with
     * EAGAIN, and the next report supersedes the one lost) */
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(prog, O_CLOEXEC | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        close_fd(&in); close_fd(&out[0]); close_fd(&out[1]); close_fd(&errp[0]); close_fd(&errp[1]);
        close_fd(&prog[0]);
        return -1;
    }
    /* vfork: the worker's address space is not copied for a child that only
     * execs (fork's copy was most of a short task's cost). Signals stay
     * blocked until the child has reset their handlers: a handler of the
     * worker must not run in it. */
    char **volatile envp = task_environ(env);   /* volatile: the child runs on this stack */
    sigset_t all, was;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &was);
    fflush(NULL);
    pid_t worker = getpid(), pid = vfork();
    if (pid == 0) child_exec(path, argv, in, out[1], errp[1], prog[1], envp, worker);
    int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &was, NULL);
    environ_free(envp);
    close_fd(&in); close_fd(&out[1]); close_fd(&errp[1]); close_fd(&prog[1]);
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(fork_errno));
        close_fd(&out[0]); close_fd(&errp[0]); close_fd(&prog[0]);
        return -1;
    }
    setpgid(pid, pid);   /* as the child does: whichever runs first, the group exists before any kill */
    c->pid = pid;
    c->out_fd = out[0];
    c->err_fd = errp[0];
    c->prog_fd = prog[0];
    fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
    return 0;
}

int wk_child_fds(const wk_child *c, struct pollfd *fds)
{
    int n = 0;
    if (c->out_fd >= 0) fds[n++] = (struct pollfd){ .fd = c->out_fd, .events = POLLIN };
    if (c->err_fd >= 0) fds[n++] = (struct pollfd){ .fd = c->err_fd, .events = POLLIN };
    if (c->prog_fd >= 0) fds[n++] = (struct pollfd){ .fd = c->prog_fd, .events = POLLIN };
    return n;
}

static void keep_stdout(wk_child *c, const char *p, size_t n)
{
    if (c->out_overflow || c->out.len + n > WK_STDOUT_MAX) { c->out_overflow = true; return; }
    buf_append(&c->out, p, n);
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", s[i])) return false;
    return true;
}

static void end_line(wk_child *c)
{
    if (!blank(c->line.data, c->line.len)) {
        buf_reset(&c->last);
        buf_append(&c->last, c->line.data, c->line.len);
    }
    buf_reset(&c->line);
}

static void keep_stderr(wk_child *c, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') end_line(c);
        else if (c->line.len < WK_LINE_MAX) buf_putc(&c->line, p[i]);
    }
}

/* A complete progress line: the last good one is kept; a bad one is told
 * and dropped (the task runs on). */
static void progress_line(wk_child *c)
{
    char err[160];
    if (c->prog_too_long) {
        log_warn("task %s: progress line ignored: longer than %d bytes", c->task_id, WK_PROGRESS_LINE_MAX);
    } else if (!blank(c->prog_line.data, c->prog_line.len)) {
        buf members;
        buf_init(&members);
        if (wk_progress_parse(c->prog_line.data, c->prog_line.len, &members, err, sizeof err) < 0) {
            log_warn("task %s: progress line ignored: %s", c->task_id, err);
        } else {
            buf_reset(&c->progress);
            buf_append(&c->progress, members.data, members.len);
            c->progress_new = true;
        }
        buf_fini(&members);
    }
    buf_reset(&c->prog_line);
    c->prog_too_long = false;
}

static void keep_progress(wk_child *c, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') progress_line(c);
        else if (c->prog_line.len < WK_PROGRESS_LINE_MAX) buf_putc(&c->prog_line, p[i]);
        else c->prog_too_long = true;
    }
}

/* Reads fd until it would block; closes it at end of file. */
static void drain(wk_child *c, int *fd, void (*keep)(wk_child *, const char *, size_t))
{
    char chunk[65536];
    while (*fd >= 0) {
        ssize_t n = read(*fd, chunk, sizeof chunk);
        if (n > 0) { keep(c, chunk, (size_t)n); continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        close_fd(fd);   /* end of file, or an error: nothing more will come */
    }
}

void wk_child_read(wk_child *c)
{
    drain(c, &c->out_fd, keep_stdout);
    drain(c, &c->err_fd, keep_stderr);
    drain(c, &c->prog_fd, keep_progress);
}

/* Once the process is gone, what it wrote is in the pipes: read it, and stop
 * listening. Whatever it left running in its process group is killed: a
 * task's processes end with the task. The group is killed while its leader
 * is still an unreaped zombie, so its id cannot have been given to another
 * process meanwhile, and struck off the guard's list before the reap. */
bool wk_child_reap(wk_child *c)
{
    if (c->exited) return true;
    siginfo_t info = { 0 };
    int rc = waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc < 0 && errno == EINTR) return false;
    if (rc == 0 && info.si_pid == 0) return false;   /* still running */
    kill(-c->pid, SIGKILL);
    static bool told;
    if (wk_guard_leave(c->pid) < 0 && !told) {
        log_warn("worker: its guard is gone: its commands no longer die with it");
        told = true;
    }
    int status = 0;
    pid_t r;
    do r = waitpid(c->pid, &status, 0); while (r < 0 && errno == EINTR);
    c->exited = true;
    c->status = r < 0 ? 0 : status;
    wk_child_read(c);
    close_fd(&c->out_fd);
    close_fd(&c->err_fd);
    close_fd(&c->prog_fd);
    if (c->line.len) end_line(c);
    if (c->prog_line.len) progress_line(c);   /* a last line without its newline counts */
    return true;
}

void wk_child_kill(const wk_child *c, int sig)
{
    if (c->pid > 0 && !c->exited) kill(-c->pid, sig);
}

const char *wk_child_last_line(const wk_child *c)
{
    return c->last.len ? c->last.data : "";
}

void wk_child_fini(wk_child *c)
{
    close_fd(&c->out_fd);
    close_fd(&c->err_fd);
    close_fd(&c->prog_fd);
    buf_fini(&c->out);
    buf_fini(&c->prog_line);
    buf_fini(&c->progress);
    buf_fini(&c->line);
    buf_fini(&c->last);
}
