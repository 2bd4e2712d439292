/* harness: runs registered tests, each in its own forked process with a
 * timeout (HARNESS_TIMEOUT seconds, default 60), SILT_TEST_JOBS of them at
 * a time (default: three per online core; 1 runs them one after another).
 * Arguments filter tests by substring. A test's output is held until it
 * ends and then printed whole, so tests running together never interleave;
 * tests end, and are reported, in any order. Tests marked TEST_LONG start
 * first; tests marked TEST_ALONE run last, one at a time, with nothing
 * beside them (HARNESS_ALONE=skip or only runs the others or them alone).
 * The slowest ten come before the last line, which is always
 * "N passed, N failed". Each test has a scratch directory inside the run's
 * (harness_scratch_dir), removed when it passes and kept when it fails. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HARNESS_MAX 1024
#define JOBS_MAX 64

static struct { const char *name; harness_fn fn; harness_kind kind; } tests[HARNESS_MAX];
static int ntests;
static void (*on_finish)(int pid);
/* The run's scratch directory, made by the runner before any test starts;
 * in a test's process, the test's own inside it, made on first use. */
static char run_dir[1024], test_dir[PATH_MAX];
static bool test_dir_made;

/* A test's process while it runs: where its output goes until it ends. */
typedef struct running {
    pid_t     pid;
    int       test;
    int       out, err;   /* its standard output and error, held in files */
    long long t0;
} running;

void harness_register(const char *name, harness_fn fn, harness_kind kind)
{
    if (ntests >= HARNESS_MAX) return;
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    tests[ntests].kind = kind;
    ntests++;
}

void harness_on_finish(void (*fn)(int pid))
{
    on_finish = fn;
}

void harness_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "    %s:%d: check failed: %s\n", file, line, what);
    fflush(stderr);
    _exit(1);
}

void harness_failf(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

void harness_allow_seconds(unsigned seconds)
{
    alarm(seconds);   /* the test runs in its own process: this is its alarm */
}

static void scratch_of(pid_t test, char out[PATH_MAX])
{
    snprintf(out, PATH_MAX, "%s/%d", run_dir, (int)test);
}

const char *harness_scratch_dir(void)
{
    if (!test_dir[0]) return run_dir;   /* the runner itself */
    if (!test_dir_made && mkdir(test_dir, 0700) != 0 && errno != EEXIST)
        harness_failf(__FILE__, __LINE__, "cannot make %s: %s", test_dir, strerror(errno));
    test_dir_made = true;
    return test_dir;
}

static void make_run_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(run_dir, sizeof run_dir, "%s/silt-tests-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (n >= (int)sizeof run_dir) { fprintf(stderr, "harness: TMPDIR is too long\n"); exit(2); }
    if (!mkdtemp(run_dir)) { perror("harness: mkdtemp"); exit(2); }
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *at)
{
    (void)st, (void)type, (void)at;
    remove(path);
    return 0;
}

/* path and everything in it, as far as it can. */
static void remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int selected(const char *name, int argc, char **argv)
{
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i])) return 1;
    return 0;
}

static long long elapsed_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SILT_TEST_JOBS, or three tests per online core: a test spends most of
 * its time waiting (for a server to start, a page to settle, a deadline),
 * so one per core leaves the cores idle; on two cores the suite took 394 s
 * at 2, 272 s at 4 and 244 s at 6 and at 8, the cores busy from 6 on. */
static int jobs_wanted(void)
{
    const char *env = getenv("SILT_TEST_JOBS");
    long n = env && *env ? atol(env) : 3 * sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > JOBS_MAX ? JOBS_MAX : (int)n;
}

/* An unlinked file: gone with its last descriptor. Close-on-exec, so the
 * servers a test starts hold only the copies on their standard streams. */
static int capture_file(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/out-XXXXXX", run_dir);
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0) unlink(path);
    return fd;
}

static void close_capture(running *r)
{
    if (r->out >= 0) close(r->out);
    if (r->err >= 0) close(r->err);
    r->out = r->err = -1;
}

static void copy_out(int fd, FILE *to)
{
    char chunk[4096];
    ssize_t n;
    fflush(to);
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, chunk, sizeof chunk)) > 0) fwrite(chunk, 1, (size_t)n, to);
    fflush(to);
}

/* In the test's process: nothing of the runner's but its own files, and
 * the signal mask the runner started with. */
static _Noreturn void run_child(running *self, const running *others, int nothers, const sigset_t *mask, int timeout)
{
    for (int i = 0; i < nothers; i++)
        if (others[i].pid > 0) { close(others[i].out); close(others[i].err); }
    sigprocmask(SIG_SETMASK, mask, NULL);
    scratch_of(getpid(), test_dir);
    if (self->out >= 0) dup2(self->out, STDOUT_FILENO);
    if (self->err >= 0) dup2(self->err, STDERR_FILENO);
    close_capture(self);
    alarm((unsigned)timeout);
    tests[self->test].fn();
    fflush(NULL);
    _exit(0);
}

/* Starts test i in slot r; others are the slots running (or free, pid 0). */
static void start_test(running *r, int i, const running *others, int nothers, const sigset_t *mask, int timeout)
{
    fflush(stdout);
    fflush(stderr);
    r->test = i;
    r->out = capture_file();
    r->err = capture_file();
    r->t0 = elapsed_ms();
    r->pid = fork();
    if (r->pid == 0) run_child(r, others, nothers, mask, timeout);
    if (r->pid < 0) { perror("harness: fork"); exit(2); }
}

/* Waits until one of the running tests ends: its slot, and its status in
 * *status. Reaps only the runner's tests (the on_finish hook may have
 * children of its own). SIGCHLD is blocked in the runner, so one that
 * arrives between the look and the wait is still pending for the wait. */
static int await_any(running *slots, int n, int *status)
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    for (;;) {
        for (int i = 0; i < n; i++)
            if (slots[i].pid > 0 && waitpid(slots[i].pid, status, WNOHANG) == slots[i].pid) return i;
        struct timespec tick = { 0, 200 * 1000000 };   /* a backstop: any child's end wakes it sooner */
        if (sigtimedwait(&chld, NULL, &tick) < 0 && errno != EAGAIN && errno != EINTR) perror("harness: sigtimedwait");
    }
}

/* Prints what the test wrote (its standard error, which holds the logs of
 * the servers it started and its failed checks, only if it failed: the
 * deliberate faults of passing tests would read like failures), then its
 * result line. Removes its scratch directory when it passed, and names it
 * when it failed. Returns 1 when it passed. */
static int report(running *r, int status, long long took)
{
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (r->out >= 0) copy_out(r->out, stdout);
    if (!ok && r->err >= 0) copy_out(r->err, stderr);
    if (WIFSIGNALED(status))
        fprintf(stderr, "    killed by signal %d%s\n", WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
    char scratch[PATH_MAX];
    scratch_of(r->pid, scratch);
    if (ok) remove_tree(scratch);
    else if (access(scratch, F_OK) == 0) fprintf(stderr, "    its files are kept in %s\n", scratch);
    fflush(stderr);
    printf("%s %s (%lld ms)\n", ok ? "ok  " : "FAIL", tests[r->test].name, took);
    fflush(stdout);
    close_capture(r);
    return ok;
}

/* The slowest ten, before the last line: where the suite's minutes go. */
static void print_slowest(const long long *ms)
{
    int order[HARNESS_MAX], n = 0;
    for (int i = 0; i < ntests; i++)
        if (ms[i] >= 0) order[n++] = i;
    for (int i = 1; i < n; i++)   /* insertion sort, slowest first: a thousand tests at most */
        for (int j = i; j > 0 && ms[order[j]] > ms[order[j - 1]]; j--) {
            int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    if (n > 1) printf("slowest:\n");
    for (int i = 0; i < n && i < 10 && n > 1; i++) printf("  %6lld ms  %s\n", ms[order[i]], tests[order[i]].name);
}

/* The selected tests in the order they run: the long ones that share the
 * machine, the other ones that share it, then those that run alone.
 * HARNESS_ALONE=skip leaves the alone ones out, HARNESS_ALONE=only the
 * others: scripts/test.sh runs the client suites beside the ones that
 * share, and the alone ones after them all. Returns how many. */
static int schedule(int *order, int argc, char **argv)
{
    const char *alone = getenv("HARNESS_ALONE");
    bool shared_too = !alone || strcmp(alone, "only") != 0, alone_too = !alone || strcmp(alone, "skip") != 0;
    int n = 0;
    static const harness_kind passes[] = { HARNESS_LONG, HARNESS_SHARED, HARNESS_ALONE };
    for (int pass = 0; pass < 3; pass++) {
        if (passes[pass] == HARNESS_ALONE ? !alone_too : !shared_too) continue;
        for (int i = 0; i < ntests; i++)
            if (tests[i].kind == passes[pass] && selected(tests[i].name, argc, argv)) order[n++] = i;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *t = getenv("HARNESS_TIMEOUT");
    int timeout = t ? atoi(t) : 60, jobs = jobs_wanted(), passed = 0, failed = 0;
    static long long took[HARNESS_MAX];
    static int order[HARNESS_MAX];
    running slots[JOBS_MAX] = { 0 };
    int nrun = schedule(order, argc, argv), next = 0, busy = 0;
    sigset_t chld, mask;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &mask);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < ntests; i++) took[i] = -1;
    make_run_dir();
    while (next < nrun || busy > 0) {
        /* An alone test starts only once every other has ended, and holds
         * back the ones after it until it has ended itself. */
        bool may_start = next < nrun && (tests[order[next]].kind == HARNESS_ALONE ? busy == 0 : busy < jobs);
        if (may_start) {
            int s = 0;
            while (slots[s].pid > 0) s++;
            start_test(&slots[s], order[next++], slots, jobs, &mask, timeout);
            busy++;
            continue;
        }
        int status = 0;
        int s = await_any(slots, jobs, &status);
        running *r = &slots[s];
        took[r->test] = elapsed_ms() - r->t0;
        if (on_finish) on_finish((int)r->pid);
        int ok = report(r, status, took[r->test]);
        passed += ok;
        failed += !ok;
        r->pid = 0;
        busy--;
    }
    print_slowest(took);
    /* What a passed test's process left behind as it ended goes too. */
    if (failed == 0) remove_tree(run_dir);
    else if (rmdir(run_dir) != 0) printf("the failed tests' files are kept in %s\n", run_dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
