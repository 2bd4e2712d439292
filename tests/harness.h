/* harness: a tiny test runner. Each TEST is a plain function registered at load
 * time; the runner forks one process per test with a timeout so a crash or a
 * hang fails that test only, runs several such processes at once, then
 * prints "N passed, N failed". */
#ifndef SILT_HARNESS_H
#define SILT_HARNESS_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef void (*harness_fn)(void);
/* When a test runs: among the others, before them (TEST_LONG), or after
 * them with nothing beside it (TEST_ALONE). */
typedef enum harness_kind { HARNESS_SHARED, HARNESS_LONG, HARNESS_ALONE } harness_kind;
void harness_register(const char *name, harness_fn fn, harness_kind kind);
/* Called in the runner after each test's process has ended (whatever its
 * outcome), with that process's id: for what a test leaves outside itself,
 * such as a database. One hook; registering again replaces it. Other tests
 * may be running when it is called. */
void harness_on_finish(void (*fn)(int pid));
/* Gives the running test seconds from now instead of the runner's timeout:
 * for a test whose setup is heavy by design (100,000 rows), so that a
 * loaded machine slows it without failing it. */
void harness_allow_seconds(unsigned seconds);
/* This test's scratch directory, made on first call inside the run's own
 * (made by the runner with mkdtemp under $TMPDIR, default /tmp): for the
 * files a test writes, its configurations and logs, which it need not
 * remove. The runner removes it when the test passes and keeps it when the
 * test fails, naming it under the failure; the run's directory goes when
 * every test passed. Forked children of the test get the same one. */
const char *harness_scratch_dir(void);
_Noreturn void harness_fail(const char *file, int line, const char *what);
_Noreturn void harness_failf(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define HARNESS_TEST(name, kind)                                          \
    static void name(void);                                               \
    __attribute__((constructor)) static void register_##name(void)        \
    { harness_register(#name, name, kind); }                              \
    static void name(void)

/* A test that shares the machine with the others. */
#define TEST(name) HARNESS_TEST(name, HARNESS_SHARED)
/* A test that shares the machine and takes tens of seconds by design (a
 * chaos run, upgrades from many schemas): these start before the others,
 * so that none of them is still running alone when the rest have ended. */
#define TEST_LONG(name) HARNESS_TEST(name, HARNESS_LONG)
/* A test that needs the machine, or the suite's PostgreSQL, to itself:
 * it stops the shared cluster, measures CPU, or bounds how long something
 * takes tightly enough that a neighbour's load would fail it. These run
 * after the others, one at a time. Say at the test why it is one. */
#define TEST_ALONE(name) HARNESS_TEST(name, HARNESS_ALONE)

#define CHECK(cond) \
    do { if (!(cond)) harness_fail(__FILE__, __LINE__, #cond); } while (0)
#define CHECK_INT(a, b)                                                   \
    do { long long a_ = (long long)(a), b_ = (long long)(b);              \
         if (a_ != b_) harness_failf(__FILE__, __LINE__, "%s == %lld, expected %lld", #a, a_, b_); } while (0)
#define CHECK_STR(a, b)                                                   \
    do { const char *a_ = (a), *b_ = (b);                                 \
         if (!a_ || !b_ || strcmp(a_, b_) != 0)                           \
             harness_failf(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } while (0)

#endif
