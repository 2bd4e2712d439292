/* support: what integration tests share. Each test starts its own silt
 * server (the real binary, SILT_BIN) on a free port against the suite's
 * throwaway PostgreSQL (SILT_TEST_PGPORT), in a database of its own cloned
 * from a migrated template and dropped when the test ends; waits for
 * /health instead of sleeping, and talks to it over HTTP. The server dies
 * with the test process. */
#ifndef SILT_TEST_SUPPORT_H
#define SILT_TEST_SUPPORT_H
#include <stdbool.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/json.h"
#include "net/http_client.h"

typedef struct silt_server {
    pid_t        pid;
    int          port;
    char         url[64];
    http_client *http;
} silt_server;

/* Starts a server; env is NULL or a NULL-terminated list of "NAME=value".
 * It uses the test's own database (test_db(), so a second server of the
 * same test shares the first one's) unless env sets PG_DB. Servers get
 * TEST_ENCRYPTION_KEY unless env sets QUEEN_ENCRYPTION_KEY, so tests may
 * turn encryption on without carrying the key. Retention runs no timed
 * passes (RETENTION_INTERVAL_MS=0) unless env sets it: tests trigger passes.
 * Two variables are the harness's, not the server's: SILT_TEST_STDERR=FILE
 * appends the server's log to FILE, SILT_TEST_NOFILE=N starts it with
 * RLIMIT_NOFILE N. */
void srv_start(silt_server *s, const char *const *env);
/* The same against a fresh, empty database named dbname (the server
 * migrates it at start). Name it silt_<what>_<pid> so the runner drops it
 * with the test's own; sql() still goes to test_db(). */
void srv_start_db(silt_server *s, const char *const *env, const char *dbname);
/* Starts a server and returns at once, without waiting for /health: for a
 * test of what a server answers while it starts. Its port may refuse
 * connections at first (and, rarely, belong to another process). */
void srv_spawn(silt_server *s, const char *const *env);
/* Starts s again on its own port and database, once the previous process
 * is gone (the caller killed and reaped it): clients of the old server
 * find the new one where they left it. */
void srv_restart(silt_server *s, const char *const *env);
#define TEST_ENCRYPTION_KEY "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
int  srv_stop(silt_server *s);           /* SIGTERM, waits; returns exit status */
/* A sample's value on /metrics/prometheus ("name" or "name{labels}"), -1
 * when absent. */
int64_t srv_metric(silt_server *s, const char *sample);
/* Waits for a state instead of sleeping: polls the sample until it equals
 * want, failing the test with the last value seen once timeout_ms passed. */
void srv_await_metric(silt_server *s, const char *sample, int64_t want, int timeout_ms);

/* A reply: status, raw body and the parsed JSON (doc.ntokens 0 if none). */
typedef struct reply {
    int            status;
    http_response  raw;
    json_doc       doc;
} reply;

void rq(silt_server *s, const char *method, const char *path, const char *body, reply *out);
void reply_fini(reply *r);
/* Bad input: the request must answer 400 naming field ("field": field). */
void rq_refused(silt_server *s, const char *method, const char *path, const char *body, const char *field);
/* JSON paths like "messages.0.data" or "0.status" into a reply; -1 if absent. */
int         jpath(const reply *r, const char *path);
const char *jstr(const reply *r, const char *path);     /* decoded copy, static ring */
int64_t     jint(const reply *r, const char *path);
bool        jbool(const reply *r, const char *path);
const char *jraw(const reply *r, const char *path);     /* raw JSON text, static ring */

/* The suite's PostgreSQL port (SILT_TEST_PGPORT) and the binary under test
 * (SILT_BIN). */
const char *pg_port(void);
const char *silt_bin(void);
/* Starts `silt migrate` on database db (as test.sh runs it, stdout
 * discarded); it dies with the test. The caller waits for it. */
pid_t spawn_migrate(const char *db);
/* Runs `silt migrate` on database db (LOG_LEVEL=info, so it names every
 * file it applies) and waits: its exit code, and its standard output and
 * error in out (NUL-terminated). */
int migrate_output(const char *db, char *out, size_t cap);
/* Runs a shell command and waits: its exit code (128 when it did not exit),
 * its standard output in out (NUL-terminated, at most cap - 1 bytes). */
int run_cmd(const char *cmd, char *out, size_t cap);
/* Creates an empty database (dropping a leftover of that name first). Name
 * it silt_<what>_<pid> so the runner drops it with the test's own. */
void db_create(const char *name);

/* Writes text to the file name in the test's scratch directory
 * (harness_scratch_dir: kept when the test fails, removed when it passes),
 * replacing what a previous call wrote there; returns its path, which
 * lasts the test. For a silt.conf, a workflow's JSON, ... */
const char *test_file(const char *name, const char *text);

/* A queue name unique to this test run. */
const char *uniq(const char *prefix);
/* This test's own database, cloned from the suite's template on first use
 * (by srv_start or sql) and dropped by the runner when the test ends. */
const char *test_db(void);
/* A connection of its own to test_db(), for a test that holds a lock or a
 * transaction beside the server (checked connected; PQfinish it). */
PGconn *test_session(void);
/* A session whose open transaction has run statement (a LOCK, a SELECT ...
 * FOR UPDATE): what it locks stays locked until session_release rolls it
 * back and closes it. */
PGconn *session_holding(const char *statement);
void session_release(PGconn *pg);
/* Waits until n of the server's sessions wait for a lock. */
void await_silt_lock_waiters(int n);
/* The text of the first fenced block after `after` in the repository's
 * file path (a heading, or any text of it; NULL: from the top), without its
 * fence lines: a copy to free. Fails the test when there is none: a doc's
 * example that a test runs as written must stay. */
char *doc_block(const char *path, const char *after);
/* Runs q on pg, which must succeed: its first value (static), "" for none. */
const char *session_run(PGconn *pg, const char *q);
/* The next notification pg has heard (a session that ran LISTEN), waiting
 * for one until now_ms() reaches deadline_ms: its payload (sfmt ring), or
 * NULL at the deadline. */
const char *session_notification(PGconn *pg, int64_t deadline_ms);
/* Runs q on pg, which must fail with SQLSTATE state: its primary message
 * (static), the words a caller of silt's SQL functions reads. */
const char *session_refused(PGconn *pg, const char *q, const char *state);
/* Runs SQL on test_db(); returns the first value of the first row
 * (static ring) or "" when none. Fails the test on an SQL error. */
const char *sql(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same on database db (one the test created, or test_db()). */
const char *sql_in(const char *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same wait on the first value of a query. */
void sql_await(const char *want, int timeout_ms, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* printf into a ring of static buffers, for paths and bodies. */
const char *sfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* uniq() is the test's to keep; sql() and sfmt() results are reused after
 * a while: copy what must last. */
void keep_str(char out[96], const char *s);
/* The line of out (a command's output) that starts with prefix, copied
 * (static), or NULL. */
const char *line_starting(const char *out, const char *prefix);
int64_t now_ms(void);            /* monotonic */
void pause_ms(int ms);

/* A request made from a forked child with its own connection, so the test
 * can act while it is pending; the child reports status and elapsed ms,
 * and bg_wait leaves in ended_ms when its reply came (now_ms()'s clock,
 * which every process shares). */
typedef struct bg_req { pid_t pid; int fd; int64_t ended_ms; } bg_req;
void bg_start(bg_req *b, const silt_server *s, const char *method, const char *path, const char *body);
void bg_wait(bg_req *b, int *status, int64_t *elapsed_ms);

/* GET /api/v1/pop/queue/q, or .../partition/part when part is not NULL,
 * with ?query when query is neither NULL nor empty; returns the status and
 * keeps the reply in r. */
int pop_from(silt_server *s, const char *q, const char *part, const char *query, reply *r);

/* POST /configure {"queue": q, "options": options}; fails the test unless
 * 200. configure_reply keeps the reply in r; configure_queue also checks
 * that it says configured. */
void configure_reply(silt_server *s, const char *q, const char *options, reply *r);
void configure_queue(silt_server *s, const char *q, const char *options);
/* One message with a chosen transactionId (payload is JSON); fails the test
 * unless the push answered 201. push_txn_reply keeps the reply in r (the
 * item may be a duplicate); push_one also checks that it was queued. */
void push_txn_reply(silt_server *s, const char *q, const char *partition, const char *txn,
                    const char *payload, reply *r);
void push_one(silt_server *s, const char *q, const char *partition, const char *txn, const char *payload);

/* One push request (one segment per partition) of items first .. first+n-1
 * to queue q, partition part (NULL: the default one), each with payload
 * {"i":<i>} and, unless txn_prefix is NULL, transactionId "<txn_prefix><i>".
 * Fails the test unless the push answers 201 with one result per item;
 * returns their statuses joined by commas, e.g. "queued,duplicate" (sfmt's
 * ring). push_queued also fails the test unless every item was queued. */
const char *push_items(silt_server *s, const char *q, const char *part, int first, int n, const char *txn_prefix);
void push_queued(silt_server *s, const char *q, const char *part, int first, int n, const char *txn_prefix);

/* Convenience: push n payloads to queue/partition; returns the reply status. */
int  push_simple(silt_server *s, const char *queue, const char *partition, int n);

#endif
