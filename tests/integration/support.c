/* support: integration-test helpers (see support.h). */
#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "base/buf.h"
#include "base/clock.h"
#include "harness.h"
#include "support.h"

#define RING 16

static char *ring_put(char *s)
{
    static char *ring[RING];
    static int next;
    free(ring[next]);
    ring[next] = s;
    next = (next + 1) % RING;
    return s;
}

static bool port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/* A port nobody holds, for a server to bind in a moment. Tests run side by
 * side, so where it comes from matters:
 *  - not the kernel's ephemeral range (32768 and up): there the kernel
 *    hands ports to every outgoing connection, and to the JavaScript
 *    suite's servers, so one could take it before the server binds it, or
 *    while a restarted server is away from it;
 *  - not the Python suite's 20000-32000, which it picks at random;
 *  - random, from a seed of the kernel's, so that tests starting in the
 *    same millisecond look at different ones.
 * Another test can still pick it before this server binds it: await_ready
 * checks that the server answering is this test's own. */
static int free_port(void)
{
    static unsigned seed;
    if (!seed && getrandom(&seed, sizeof seed, 0) != sizeof seed) seed = (unsigned)getpid() ^ (unsigned)now_ms();
    for (int attempt = 0; attempt < 1000; attempt++) {
        int port = 15000 + rand_r(&seed) % 5000;
        if (port_free(port)) return port;
    }
    harness_fail(__FILE__, __LINE__, "no free port");
}

/* The inode of the socket listening on port (on whatever address HOST
 * gave it), 0 if none. */
static unsigned long listening_inode(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    unsigned long inode = 0;
    while (f && !inode && fgets(line, sizeof line, f)) {
        unsigned local, state;
        unsigned long ino;
        if (sscanf(line, " %*d: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", &local, &state, &ino) == 3 &&
            (int)local == port && state == 0x0A)
            inode = ino;
    }
    if (f) fclose(f);
    return inode;
}

/* Whether process pid holds the socket listening on port. Local buffers,
 * not sfmt(): a test may still hold a string of its ring across srv_start
 * (a log file's name). */
static bool listens_on(pid_t pid, int port)
{
    unsigned long inode = listening_inode(port);
    char want[48], dir[48], path[320], link[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; inode && d && !found && (e = readdir(d));) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        found = n > 0 && (link[n] = '\0', strcmp(link, want) == 0);
    }
    if (d) closedir(d);
    return found;
}

const char *pg_port(void)
{
    return getenv("SILT_TEST_PGPORT") ? getenv("SILT_TEST_PGPORT") : "5432";
}

const char *silt_bin(void)
{
    return getenv("SILT_BIN") ? getenv("SILT_BIN") : "build/silt";
}

/* ---- the test's own database ------------------------------------------
 * Every test process works in a database of its own, cloned from the suite's
 * migrated template the first time it needs one, so no test sees another's
 * rows (a retention pass, for one, acts on every partition of its database).
 * The runner drops it when the test ends. Databases a test creates itself
 * are named silt_<what>_<pid>, so that the same clean-up finds them when the
 * test fails before dropping them. */

/* scripts/test.sh builds it once per run; template_build is for runs by hand. */
#define TEMPLATE_DB "silt_template"
/* Clones the runner makes ahead while tests run: a starting test takes one
 * by renaming it, at no cost, rather than waiting for a clone of its own.
 * A few names, as several tests run at once: silt_spare_0, _1, ... (no
 * test's process id is that small, so clean-up by id never takes one). */
#define SPARE_DB "silt_spare_%d"
#define SPARES 4

/* CREATE and DROP DATABASE cannot run in the database they act on: these
 * statements go to the maintenance database. */
static PGconn *admin_connect(void)
{
    return PQconnectdb(sfmt("host=127.0.0.1 port=%s user=postgres dbname=postgres connect_timeout=10 "
                            "options='-c client_min_messages=warning'", pg_port()));
}

static void admin_run(PGconn *pg, const char *text)
{
    PGresult *r = PQexec(pg, text);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        harness_failf(__FILE__, __LINE__, "%s: %s", text, PQresultErrorMessage(r));
    PQclear(r);
}

pid_t spawn_migrate(const char *db)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setenv("PG_HOST", "127.0.0.1", 1);
        setenv("PG_PORT", pg_port(), 1);
        setenv("PG_USER", "postgres", 1);
        setenv("PG_DB", db, 1);
        setenv("LOG_LEVEL", "warn", 1);
        if (!freopen("/dev/null", "w", stdout)) _exit(126);
        execl(silt_bin(), silt_bin(), "migrate", (char *)NULL);
        _exit(127);
    }
    return pid;
}

int run_cmd(const char *cmd, char *out, size_t cap)
{
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    if (!p) harness_failf(__FILE__, __LINE__, "popen of %s", cmd);
    size_t len = 0, n;
    while (len + 1 < cap && (n = fread(out + len, 1, cap - 1 - len, p)) > 0) len += n;
    out[len] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int migrate_output(const char *db, char *out, size_t cap)
{
    return run_cmd(sfmt("PG_HOST=127.0.0.1 PG_PORT=%s PG_USER=postgres PG_DB=%s LOG_LEVEL=info %s migrate 2>&1",
                        pg_port(), db, silt_bin()), out, cap);
}

/* `silt migrate` on db, by the real binary as test.sh runs it; its exit code. */
static int migrate_db(const char *db)
{
    int status = 0;
    waitpid(spawn_migrate(db), &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Built under a name of this test's, and renamed once migrated, so a run
 * that dies half way leaves no half-built template behind (the runner drops
 * the temporary). Closed to connections: a clone fails while anyone is in
 * its template. */
static void template_build(PGconn *pg)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "silt_template_%d", (int)getpid());
    admin_run(pg, sfmt("DROP DATABASE IF EXISTS \"%s\"", tmp));
    admin_run(pg, sfmt("CREATE DATABASE \"%s\"", tmp));
    int rc = migrate_db(tmp);
    if (rc != 0) harness_failf(__FILE__, __LINE__, "%s migrate of the template database exited %d", silt_bin(), rc);
    admin_run(pg, sfmt("ALTER DATABASE \"%s\" RENAME TO " TEMPLATE_DB, tmp));
    admin_run(pg, "ALTER DATABASE " TEMPLATE_DB " ALLOW_CONNECTIONS false");
}

/* FILE_COPY rather than the default WAL_LOG: it copies the template's files
 * instead of writing every page through the WAL, in about half the time on
 * the test cluster (fsync off makes its checkpoints cheap). The SQLSTATE of
 * a failure, "" on success. */
static const char *clone_template(PGconn *pg, const char *name, char why[256])
{
    PGresult *r = PQexec(pg, sfmt("CREATE DATABASE \"%s\" TEMPLATE " TEMPLATE_DB " STRATEGY FILE_COPY", name));
    const char *state = PQresultStatus(r) == PGRES_COMMAND_OK ? "" : PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(why, 256, "%s", PQresultErrorMessage(r));
    const char *out = sfmt("%s", state ? state : "?");
    PQclear(r);
    return out;
}

/* Fails when there is none (the runner has not made one since the last
 * tests took them, or another test starting now took the last). A rename
 * of a name that is not there fails at once. */
static bool take_spare(PGconn *pg, const char *name)
{
    bool taken = false;
    for (int i = 0; i < SPARES && !taken; i++) {
        char rename[128];   /* not sfmt(): a test may hold a string of its ring across its first srv_start */
        snprintf(rename, sizeof rename, "ALTER DATABASE " SPARE_DB " RENAME TO \"%s\"", i, name);
        PGresult *r = PQexec(pg, rename);
        taken = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    return taken;
}

static void clone_for_test(PGconn *pg, const char *db)
{
    char why[256];
    const char *state = clone_template(pg, db, why);
    if (strcmp(state, "3D000") == 0) {           /* no template: a run by hand */
        template_build(pg);
        state = clone_template(pg, db, why);
    } else if (strcmp(state, "42P04") == 0) {    /* left by a run killed before its clean-up */
        admin_run(pg, sfmt("DROP DATABASE \"%s\" WITH (FORCE)", db));
        state = clone_template(pg, db, why);
    }
    if (*state) harness_failf(__FILE__, __LINE__, "cannot create the test database %s: %s", db, why);
}

const char *test_file(const char *name, const char *text)
{
    static char paths[16][PATH_MAX];   /* one for each name the test used */
    char want[PATH_MAX];
    snprintf(want, sizeof want, "%s/%s", harness_scratch_dir(), name);
    int i = 0;
    while (i < 16 && paths[i][0] && strcmp(paths[i], want) != 0) i++;
    if (i == 16) harness_failf(__FILE__, __LINE__, "test_file: more than 16 names");
    char *path = paths[i];
    snprintf(path, PATH_MAX, "%s", want);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) harness_failf(__FILE__, __LINE__, "cannot write %s", path);
    return path;
}

PGconn *test_session(void)
{
    PGconn *pg = PQconnectdb(sfmt("host=127.0.0.1 port=%s user=postgres dbname=%s", pg_port(), test_db()));
    if (PQstatus(pg) != CONNECTION_OK)
        harness_failf(__FILE__, __LINE__, "connecting to %s: %s", test_db(), PQerrorMessage(pg));
    return pg;
}

PGconn *session_holding(const char *statement)
{
    PGconn *pg = test_session();
    session_run(pg, "BEGIN");
    session_run(pg, statement);
    return pg;
}

void session_release(PGconn *pg)
{
    PQclear(PQexec(pg, "ROLLBACK"));
    PQfinish(pg);
}

void await_silt_lock_waiters(int n)
{
    sql_await(sfmt("%d", n), 10000, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                    "AND application_name = 'silt' AND wait_event_type = 'Lock'");
}

char *doc_block(const char *path, const char *after)
{
    FILE *f = fopen(path, "r");
    if (!f) harness_failf(__FILE__, __LINE__, "%s: not here (run from the repository root)", path);
    buf text;
    buf_init(&text);
    char chunk[4096];
    for (size_t n; (n = fread(chunk, 1, sizeof chunk, f)) > 0;) buf_append(&text, chunk, n);
    buf_putc(&text, '\0');
    fclose(f);
    const char *at = after ? strstr(text.data, after) : text.data;
    const char *open = at && strncmp(at, "```", 3) == 0 ? at : at ? strstr(at, "\n```") : NULL;
    if (open && *open == '\n') open++;   /* the fence line itself */
    const char *start = open ? strchr(open, '\n') : NULL;
    const char *end = start ? strstr(start + 1, "\n```") : NULL;
    if (!end) harness_failf(__FILE__, __LINE__, "%s: no fenced block after \"%s\"", path, after ? after : "its top");
    char *block = strndup(start + 1, (size_t)(end - start));   /* with the last line's newline */
    CHECK(block != NULL);
    buf_fini(&text);
    return block;
}

const char *session_run(PGconn *pg, const char *q)
{
    static char value[256];
    PGresult *r = PQexec(pg, q);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        harness_failf(__FILE__, __LINE__, "%s: %s", q, PQerrorMessage(pg));
    snprintf(value, sizeof value, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return value;
}

const char *session_notification(PGconn *pg, int64_t deadline_ms)
{
    for (;;) {
        PGnotify *n = PQnotifies(pg);
        if (n) {
            const char *payload = sfmt("%s", n->extra);
            PQfreemem(n);
            return payload;
        }
        int64_t left = deadline_ms - now_ms();
        if (left <= 0) return NULL;
        struct pollfd p = { .fd = PQsocket(pg), .events = POLLIN };
        poll(&p, 1, (int)left);
        if (!PQconsumeInput(pg)) harness_failf(__FILE__, __LINE__, "listening: %s", PQerrorMessage(pg));
    }
}

const char *session_refused(PGconn *pg, const char *q, const char *state)
{
    static char message[512];
    PGresult *r = PQexec(pg, q);
    if (PQresultStatus(r) != PGRES_FATAL_ERROR) harness_failf(__FILE__, __LINE__, "%s: not refused", q);
    const char *got = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (strcmp(got ? got : "", state) != 0)
        harness_failf(__FILE__, __LINE__, "%s: SQLSTATE %s, not %s: %s", q, got, state, PQerrorMessage(pg));
    snprintf(message, sizeof message, "%s", PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY));
    PQclear(r);
    return message;
}

const char *test_db(void)
{
    static char name[32];
    if (name[0]) return name;
    PGconn *pg = admin_connect();
    if (PQstatus(pg) != CONNECTION_OK) harness_failf(__FILE__, __LINE__, "test database: %s", PQerrorMessage(pg));
    char db[32];
    snprintf(db, sizeof db, "silt_t%d", (int)getpid());
    if (!take_spare(pg, db)) clone_for_test(pg, db);
    PQfinish(pg);
    snprintf(name, sizeof name, "%s", db);
    return name;
}

/* Reported, not failed: the test has already had its result. */
static void drop_databases_of(PGconn *pg, int pid)
{
    PGresult *r = PQexec(pg, sfmt("SELECT datname FROM pg_database WHERE datname ~ '^silt_(t|.+_)%d(_|$)'", pid));
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "    note: databases of test process %d not dropped: %s", pid, PQerrorMessage(pg));
    for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r); i++) {
        PGresult *d = PQexec(pg, sfmt("DROP DATABASE \"%s\" WITH (FORCE)", PQgetvalue(r, i, 0)));
        if (PQresultStatus(d) != PGRES_COMMAND_OK)
            fprintf(stderr, "    note: %s not dropped: %s", PQgetvalue(r, i, 0), PQresultErrorMessage(d));
        PQclear(d);
    }
    PQclear(r);
}

/* One more spare under the first free name; none when every name is
 * taken (the tests now running were too quick to take them: one that
 * starts no server and runs no SQL takes none), nor without a template.
 * A name being made by another housekeeper is taken too: that CREATE
 * waits for it and fails. */
static void make_spare(PGconn *pg)
{
    PGresult *r = PQexec(pg, "SELECT datname FROM pg_database WHERE datname LIKE 'silt\\_spare\\_%'");
    for (int i = 0; i < SPARES && PQresultStatus(r) == PGRES_TUPLES_OK; i++) {
        char name[32];
        snprintf(name, sizeof name, SPARE_DB, i);
        bool exists = false;
        for (int row = 0; row < PQntuples(r); row++) exists = exists || strcmp(PQgetvalue(r, row, 0), name) == 0;
        if (exists) continue;
        PGresult *c = PQexec(pg, sfmt("CREATE DATABASE %s TEMPLATE " TEMPLATE_DB " STRATEGY FILE_COPY", name));
        bool made = PQresultStatus(c) == PGRES_COMMAND_OK;
        PQclear(c);
        if (made) break;
    }
    PQclear(r);
}

/* The runner's processes tidying up after tests that ended, while others
 * run: a drop waits for the connections of the test's server to go, and a
 * clone for a checkpoint, and neither should hold the next test back. */
#define HOUSEKEEPERS 8
static pid_t housekeepers[HOUSEKEEPERS];
static bool any_test_ended;

/* A free place in housekeepers: the ones done are reaped; when all are
 * busy, the first is waited for. */
static int housekeeper_slot(bool wait_all)
{
    int free_slot = -1;
    for (int i = 0; i < HOUSEKEEPERS; i++) {
        if (housekeepers[i] > 0 && waitpid(housekeepers[i], NULL, wait_all ? 0 : WNOHANG) != 0) housekeepers[i] = 0;
        if (housekeepers[i] == 0 && free_slot < 0) free_slot = i;
    }
    if (free_slot < 0) {
        waitpid(housekeepers[0], NULL, 0);
        housekeepers[0] = 0;
        free_slot = 0;
    }
    return free_slot;
}

/* In the runner, after each test: a process of its own drops the test's
 * databases and makes a spare while the runner starts the next test. */
static void after_test(int pid)
{
    int slot = housekeeper_slot(false);
    any_test_ended = true;
    fflush(NULL);
    pid_t keeper = fork();
    if (keeper == 0) {
        PGconn *pg = admin_connect();
        drop_databases_of(pg, pid);
        make_spare(pg);
        PQfinish(pg);
        _exit(0);
    }
    housekeepers[slot] = keeper > 0 ? keeper : 0;
}

static pid_t runner;

__attribute__((constructor)) static void register_after_test(void)
{
    runner = getpid();
    harness_on_finish(after_test);
}

/* The runner leaves once the last tests' databases and the spares are gone. */
__attribute__((destructor)) static void at_runner_exit(void)
{
    if (getpid() != runner || !any_test_ended) return;   /* a test's process, or no test ran */
    housekeeper_slot(true);
    PGconn *pg = admin_connect();
    for (int i = 0; i < SPARES; i++) PQclear(PQexec(pg, sfmt("DROP DATABASE IF EXISTS " SPARE_DB, i)));
    PQfinish(pg);
}

/* ---- servers ---------------------------------------------------------- */

/* db: the PG_DB default (env may still set it). */
static void exec_server(int port, const char *db, const char *const *env)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char portv[16];
    snprintf(portv, sizeof portv, "%d", port);
    setenv("PORT", portv, 1);
    setenv("HOST", "127.0.0.1", 1);
    setenv("PG_HOST", "127.0.0.1", 1);
    setenv("PG_PORT", pg_port(), 1);
    setenv("PG_USER", "postgres", 1);
    if (db) setenv("PG_DB", db, 1);
    if (!getenv("LOG_LEVEL")) setenv("LOG_LEVEL", "warn", 1);
    setenv("QUEEN_ENCRYPTION_KEY", TEST_ENCRYPTION_KEY, 1);
    setenv("RETENTION_INTERVAL_MS", "0", 1);   /* passes run only when a test asks */
    for (int i = 0; env && env[i]; i++) putenv(strdup(env[i]));
    const char *log = getenv("SILT_TEST_STDERR");   /* a test reads the server's log from this file */
    if (log && !freopen(log, "a", stderr)) _exit(126);
    const char *nofile = getenv("SILT_TEST_NOFILE");   /* a test runs the server short of descriptors */
    struct rlimit rl = { nofile ? (rlim_t)atoll(nofile) : 0, nofile ? (rlim_t)atoll(nofile) : 0 };
    if (nofile && setrlimit(RLIMIT_NOFILE, &rl) < 0) _exit(126);
    execl(silt_bin(), silt_bin(), "server", (char *)NULL);
    _exit(127);
}

static bool env_sets(const char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; env && env[i]; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=') return true;
    return false;
}

/* Waits for /health from this server; 1 ready, 0 the server exited (its
 * port may have been taken between free_port and its bind), -1 never
 * ready. A /health answered by another test's server, which took the port
 * first, is not this one's: that one will fail to bind and exit. */
static int await_ready(silt_server *s)
{
    for (int i = 0; i < 2000; i++) {   /* every 10 ms, up to 20 s: a server is up in some 60 ms */
        http_response r;
        http_response_init(&r);
        int ok = http_request(s->http, "GET", "/health", NULL, 0, &r) == 0 && r.status == 200;
        http_response_fini(&r);
        if (ok && listens_on(s->pid, s->port)) return 1;
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) return 0;
        struct timespec ts = { 0, 10 * 1000000 };
        nanosleep(&ts, NULL);
    }
    return -1;
}

void srv_spawn(silt_server *s, const char *const *env)
{
    const char *db = env_sets(env, "PG_DB") ? NULL : test_db();   /* in this process: the child would clone its own */
    memset(s, 0, sizeof *s);
    s->port = free_port();
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->port);
    s->pid = fork();
    if (s->pid == 0) exec_server(s->port, db, env);
    s->http = http_client_new(s->url);
    http_client_set_timeout(s->http, 60000);
}

void srv_start(silt_server *s, const char *const *env)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        srv_spawn(s, env);
        http_client_set_timeout(s->http, 1000);   /* short while it polls /health */
        int ready = await_ready(s);
        if (ready > 0) { http_client_set_timeout(s->http, 60000); return; }
        http_client_free(s->http);
        if (ready < 0) harness_fail(__FILE__, __LINE__, "server did not become healthy");
    }
    harness_fail(__FILE__, __LINE__, "server exited at start");
}

void srv_restart(silt_server *s, const char *const *env)
{
    const char *db = env_sets(env, "PG_DB") ? NULL : test_db();
    for (int attempt = 0; attempt < 50; attempt++) {   /* the old socket may linger a moment */
        s->pid = fork();
        if (s->pid == 0) exec_server(s->port, db, env);
        http_client_set_timeout(s->http, 1000);
        int ready = await_ready(s);
        if (ready > 0) { http_client_set_timeout(s->http, 60000); return; }
        if (ready < 0) harness_fail(__FILE__, __LINE__, "restarted server did not become healthy");
        struct timespec ts = { 0, 100 * 1000000 };
        nanosleep(&ts, NULL);
    }
    harness_fail(__FILE__, __LINE__, "restarted server could not take its port back");
}

void db_create(const char *name)
{
    PGconn *pg = admin_connect();
    if (PQstatus(pg) != CONNECTION_OK) harness_failf(__FILE__, __LINE__, "db_create: %s", PQerrorMessage(pg));
    admin_run(pg, sfmt("DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", name));
    admin_run(pg, sfmt("CREATE DATABASE \"%s\"", name));
    PQfinish(pg);
}

void srv_start_db(silt_server *s, const char *const *env, const char *dbname)
{
    db_create(dbname);
    const char *all[32];
    int n = 0;
    all[n++] = sfmt("PG_DB=%s", dbname);
    for (int i = 0; env && env[i] && n < 31; i++) all[n++] = env[i];
    all[n] = NULL;
    srv_start(s, all);
}

int srv_stop(silt_server *s)
{
    int status = 0;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, &status, 0);
    http_client_free(s->http);
    s->http = NULL;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int64_t srv_metric(silt_server *s, const char *sample)
{
    http_response resp;
    http_response_init(&resp);
    if (http_request(s->http, "GET", "/metrics/prometheus", NULL, 0, &resp) < 0)
        harness_failf(__FILE__, __LINE__, "GET /metrics/prometheus: %s", http_client_error(s->http));
    if (resp.status != 200)
        harness_failf(__FILE__, __LINE__, "GET /metrics/prometheus: %d %s", resp.status,
                      resp.body.data ? resp.body.data : "");
    int64_t v = -1;
    size_t n = strlen(sample);
    for (const char *line = resp.body.data; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, sample, n) == 0 && line[n] == ' ') { v = atoll(line + n + 1); break; }
    http_response_fini(&resp);
    return v;
}

void srv_await_metric(silt_server *s, const char *sample, int64_t want, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms, got;
    while ((got = srv_metric(s, sample)) != want) {
        if (now_ms() >= end)
            harness_failf(__FILE__, __LINE__, "%s is %lld after %d ms, waited for %lld",
                          sample, (long long)got, timeout_ms, (long long)want);
        pause_ms(10);
    }
}

void rq(silt_server *s, const char *method, const char *path, const char *body, reply *out)
{
    http_response_init(&out->raw);
    json_doc_init(&out->doc);
    if (http_request(s->http, method, path, body, body ? strlen(body) : 0, &out->raw) < 0)
        harness_failf(__FILE__, __LINE__, "%s %s: %s", method, path, http_client_error(s->http));
    out->status = out->raw.status;
    if (out->raw.body.len && json_parse(&out->doc, out->raw.body.data, out->raw.body.len, 1u << 24) < 0)
        harness_failf(__FILE__, __LINE__, "%s %s: reply is not json: %s", method, path, out->raw.body.data);
}

void reply_fini(reply *r)
{
    http_response_fini(&r->raw);
    json_doc_fini(&r->doc);
}

void rq_refused(silt_server *s, const char *method, const char *path, const char *body, const char *field)
{
    reply r;
    rq(s, method, path, body, &r);
    if (r.status != 400 || !jstr(&r, "field") || strcmp(jstr(&r, "field"), field) != 0)
        harness_failf(__FILE__, __LINE__, "%s %s %s: %d %s, expected 400 naming %s", method, path, body ? body : "",
                      r.status, r.raw.body.data ? r.raw.body.data : "", field);
    reply_fini(&r);
}

int jpath(const reply *r, const char *path)
{
    if (r->doc.ntokens == 0) return -1;
    int tok = 0;
    char *copy = strdup(path), *save = NULL;
    for (char *part = strtok_r(copy, ".", &save); part && tok >= 0; part = strtok_r(NULL, ".", &save)) {
        if (r->doc.tokens[tok].type == JSON_ARRAY) tok = json_at(&r->doc, (uint32_t)tok, (uint32_t)atoi(part));
        else if (r->doc.tokens[tok].type == JSON_OBJECT) tok = json_get(&r->doc, (uint32_t)tok, part);
        else tok = -1;
    }
    free(copy);
    return tok;
}

const char *jstr(const reply *r, const char *path)
{
    int t = jpath(r, path);
    if (t < 0 || r->doc.tokens[t].type != JSON_STRING) return NULL;
    return ring_put(json_str_dup(&r->doc, (uint32_t)t));
}

int64_t jint(const reply *r, const char *path)
{
    int t = jpath(r, path);
    int64_t v = -999999;
    if (t < 0 || json_int64(&r->doc, (uint32_t)t, &v) < 0) return -999999;
    return v;
}

bool jbool(const reply *r, const char *path)
{
    int t = jpath(r, path);
    return t >= 0 && r->doc.tokens[t].type == JSON_TRUE;
}

const char *jraw(const reply *r, const char *path)
{
    int t = jpath(r, path);
    if (t < 0) return NULL;
    size_t n;
    const char *p = json_span(&r->doc, (uint32_t)t, &n);
    return ring_put(strndup(p, n));
}

const char *uniq(const char *prefix)
{
    static unsigned counter;
    char *s = malloc(96);   /* not in the ring: names live for the whole test */
    snprintf(s, 96, "%s-%d-%ld-%u", prefix, (int)getpid(), (long)time(NULL), counter++);
    return s;
}

/* Connections kept per database, a few at a time: test_db() and the
 * databases a test made itself. */
static PGconn *sql_connection(const char *db)
{
    enum { SLOTS = 4 };
    static struct { PGconn *pg; char db[64]; } slot[SLOTS];
    static int next;
    for (int i = 0; i < SLOTS; i++)
        if (slot[i].pg && strcmp(slot[i].db, db) == 0) return slot[i].pg;
    int i = next;
    next = (next + 1) % SLOTS;
    PQfinish(slot[i].pg);
    slot[i].pg = PQconnectdb(sfmt("host=127.0.0.1 port=%s user=postgres dbname=%s", pg_port(), db));
    snprintf(slot[i].db, sizeof slot[i].db, "%s", db);
    if (PQstatus(slot[i].pg) != CONNECTION_OK) harness_failf(__FILE__, __LINE__, "sql: %s", PQerrorMessage(slot[i].pg));
    return slot[i].pg;
}

static const char *sql_run(const char *db, const char *text)
{
    PGconn *pg = sql_connection(db);
    PGresult *r = PQexec(pg, text);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
        harness_failf(__FILE__, __LINE__, "sql: %s: %s", text, PQresultErrorMessage(r));
    char *value = strdup(st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return ring_put(value);
}

/* Formats fmt into a statement of any length and runs it on db. */
static const char *sql_vrun(const char *db, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *text = malloc((size_t)n + 1);
    vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    const char *value = sql_run(db, text);
    free(text);
    return value;
}

const char *sql(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *value = sql_vrun(test_db(), fmt, ap);
    va_end(ap);
    return value;
}

const char *sql_in(const char *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *value = sql_vrun(db, fmt, ap);
    va_end(ap);
    return value;
}

void sql_await(const char *want, int timeout_ms, const char *fmt, ...)
{
    char query[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(query, sizeof query, fmt, ap);
    va_end(ap);
    int64_t end = now_ms() + timeout_ms;
    const char *got;
    while (strcmp(got = sql("%s", query), want) != 0) {
        if (now_ms() >= end)
            harness_failf(__FILE__, __LINE__, "%s: \"%s\" after %d ms, waited for \"%s\"", query, got, timeout_ms, want);
        pause_ms(10);
    }
}

const char *sfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *out = malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return ring_put(out);
}

int push_simple(silt_server *s, const char *queue, const char *partition, int n)
{
    char *body = malloc((size_t)n * 128 + 64);
    size_t len = (size_t)sprintf(body, "{\"items\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(body + len, "%s{\"queue\":\"%s\",\"partition\":\"%s\",\"payload\":{\"i\":%d}}",
                               i ? "," : "", queue, partition, i);
    sprintf(body + len, "]}");
    reply r;
    rq(s, "POST", "/api/v1/push", body, &r);
    int status = r.status;
    reply_fini(&r);
    free(body);
    return status;
}

const char *line_starting(const char *out, const char *prefix)
{
    static char line[4096];
    for (const char *p = out; *p; ) {
        size_t len = strcspn(p, "\n");
        if (strncmp(p, prefix, strlen(prefix)) == 0 && len < sizeof line) {
            memcpy(line, p, len);
            line[len] = '\0';
            return line;
        }
        p += len + (p[len] == '\n');
    }
    return NULL;
}

void keep_str(char out[96], const char *s)
{
    CHECK(s != NULL);          /* a value that is not there fails here, not later as "(null)" */
    CHECK(strlen(s) < 96);     /* nor as a prefix of itself */
    snprintf(out, 96, "%s", s);
}

int64_t now_ms(void) { return clock_mono_ms(); }

void pause_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

void bg_start(bg_req *b, const silt_server *s, const char *method, const char *path, const char *body)
{
    int p[2];
    CHECK(pipe(p) == 0);
    fflush(NULL);
    b->pid = fork();
    CHECK(b->pid >= 0);
    if (b->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(p[0]);
        http_client *c = http_client_new(s->url);
        http_client_set_timeout(c, 60000);
        http_response r;
        http_response_init(&r);
        int64_t t0 = now_ms();
        int rc = http_request(c, method, path, body, body ? strlen(body) : 0, &r);
        char out[64];
        int64_t t1 = now_ms();
        int n = snprintf(out, sizeof out, "%d %lld %lld\n", rc < 0 ? -1 : r.status, (long long)(t1 - t0),
                         (long long)t1);
        if (write(p[1], out, (size_t)n) != n) _exit(2);
        _exit(0);
    }
    close(p[1]);
    b->fd = p[0];
}

void bg_wait(bg_req *b, int *status, int64_t *elapsed_ms)
{
    char in[64] = { 0 };
    size_t got = 0;
    for (ssize_t n; got < sizeof in - 1 && (n = read(b->fd, in + got, sizeof in - 1 - got)) > 0;) got += (size_t)n;
    close(b->fd);
    waitpid(b->pid, NULL, 0);
    long long st = -2, ms = -1, ended = -1;
    CHECK(sscanf(in, "%lld %lld %lld", &st, &ms, &ended) == 3);
    b->ended_ms = ended;
    *status = (int)st;
    *elapsed_ms = ms;
}

int pop_from(silt_server *s, const char *q, const char *part, const char *query, reply *r)
{
    bool has_query = query && *query;
    rq(s, "GET", sfmt("/api/v1/pop/queue/%s%s%s%s%s", q, part ? "/partition/" : "", part ? part : "",
                      has_query ? "?" : "", has_query ? query : ""), NULL, r);
    return r->status;
}

void configure_reply(silt_server *s, const char *q, const char *options, reply *r)
{
    rq(s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":%s}", q, options), r);
    CHECK_INT(r->status, 200);
}

void configure_queue(silt_server *s, const char *q, const char *options)
{
    reply r;
    configure_reply(s, q, options, &r);
    CHECK(jbool(&r, "configured"));
    reply_fini(&r);
}

void push_txn_reply(silt_server *s, const char *q, const char *partition, const char *txn,
                    const char *payload, reply *r)
{
    rq(s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"%s\",\"transactionId\":\"%s\","
                                       "\"payload\":%s}]}", q, partition, txn, payload), r);
    CHECK_INT(r->status, 201);
}

void push_one(silt_server *s, const char *q, const char *partition, const char *txn, const char *payload)
{
    reply r;
    push_txn_reply(s, q, partition, txn, payload, &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    reply_fini(&r);
}

const char *push_items(silt_server *s, const char *q, const char *part, int first, int n, const char *txn_prefix)
{
    buf body, statuses;
    buf_init(&body);
    buf_init(&statuses);
    buf_puts(&body, "{\"items\":[");
    for (int i = first; i < first + n; i++) {
        buf_printf(&body, "%s{\"queue\":\"%s\",\"payload\":{\"i\":%d}", i > first ? "," : "", q, i);
        if (part) buf_printf(&body, ",\"partition\":\"%s\"", part);
        if (txn_prefix) buf_printf(&body, ",\"transactionId\":\"%s%d\"", txn_prefix, i);
        buf_putc(&body, '}');
    }
    buf_puts(&body, "]}");
    reply r;
    rq(s, "POST", "/api/v1/push", body.data, &r);
    CHECK_INT(r.status, 201);
    CHECK_INT(r.doc.tokens[0].count, n);
    for (int i = 0; i < n; i++) buf_printf(&statuses, "%s%s", i ? "," : "", jstr(&r, sfmt("%d.status", i)));
    reply_fini(&r);
    buf_fini(&body);
    const char *out = sfmt("%s", statuses.len ? statuses.data : "");
    buf_fini(&statuses);
    return out;
}

void push_queued(silt_server *s, const char *q, const char *part, int first, int n, const char *txn_prefix)
{
    buf want;
    buf_init(&want);
    for (int i = 0; i < n; i++) buf_printf(&want, "%squeued", i ? "," : "");
    CHECK_STR(push_items(s, q, part, first, n, txn_prefix), want.len ? want.data : "");
    buf_fini(&want);
}
