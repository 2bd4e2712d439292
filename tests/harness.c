/* harness: runs registered tests, each in its own forked process with a
 * timeout (HARNESS_TIMEOUT seconds, default 60). Arguments filter tests by
 * substring. The last line is always "N passed, N failed". */
#include "harness.h"
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HARNESS_MAX 1024

static struct { const char *name; harness_fn fn; } tests[HARNESS_MAX];
static int ntests;
static void (*on_finish)(int pid);

void harness_register(const char *name, harness_fn fn)
{
    if (ntests < HARNESS_MAX) { tests[ntests].name = name; tests[ntests].fn = fn; ntests++; }
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

/* A test's standard error (its failed checks, and the logs of the servers
 * it starts, which inherit it) goes to a file, shown only if the test fails:
 * the deliberate faults of passing tests would read like failures. */
static int capture_stderr(void)
{
    char path[] = "/tmp/harness-stderr-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) unlink(path);
    return fd;
}

static void show_captured(int fd)
{
    char chunk[4096];
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, chunk, sizeof chunk)) > 0) fwrite(chunk, 1, (size_t)n, stderr);
    fflush(stderr);
}

void harness_allow_seconds(unsigned seconds)
{
    alarm(seconds);   /* the test runs in its own process: this is its alarm */
}

static int run_one(int i, int timeout)
{
    fflush(stdout);
    fflush(stderr);
    int err = capture_stderr();
    pid_t pid = fork();
    if (pid == 0) {
        if (err >= 0) dup2(err, STDERR_FILENO);
        alarm((unsigned)timeout);
        tests[i].fn();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (on_finish) on_finish((int)pid);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && err >= 0) show_captured(err);
    if (err >= 0) close(err);
    if (ok) return 1;
    if (WIFSIGNALED(status))
        fprintf(stderr, "    killed by signal %d%s\n", WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
    return 0;
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

int main(int argc, char **argv)
{
    const char *t = getenv("HARNESS_TIMEOUT");
    int timeout = t ? atoi(t) : 60, passed = 0, failed = 0;
    static long long took[HARNESS_MAX];
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < ntests; i++) {
        took[i] = -1;
        if (!selected(tests[i].name, argc, argv)) continue;
        long long t0 = elapsed_ms();
        int ok = run_one(i, timeout);
        passed += ok;
        failed += !ok;
        took[i] = elapsed_ms() - t0;
        printf("%s %s (%lld ms)\n", ok ? "ok  " : "FAIL", tests[i].name, took[i]);
    }
    print_slowest(took);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
