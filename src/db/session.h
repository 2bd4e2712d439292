/* session: one dedicated PostgreSQL connection for work the pool cannot
 * carry, one statement at a time. The pool pipelines every job into an
 * implicit transaction; some statements refuse that (ALTER TABLE ... DETACH
 * PARTITION ... CONCURRENTLY runs only alone, outside any transaction
 * block), and some state belongs to a session (a session-level advisory
 * lock, SET). Connecting and every statement are asynchronous on the event
 * loop; the connection is made at the first statement and made again after
 * it is lost (the statement in flight then fails: nothing is retried). */
#ifndef SILT_SESSION_H
#define SILT_SESSION_H
#include <libpq-fe.h>
#include <event2/event.h>

typedef struct db_session db_session;

/* What a statement gave: res its last result (freed after the callback),
 * or error (the message) with sqlstate ("" when none, e.g. a lost
 * connection). */
typedef void (*db_session_fn)(void *arg, const PGresult *res, const char *error, const char *sqlstate);

db_session *db_session_new(struct event_base *base, const char *conninfo, const char *application_name);
/* One statement through the extended protocol: text parameters, binary
 * results (read them with db/result.h). At most one statement in flight. */
void db_session_call(db_session *s, const char *sql, int nparams, const char *const *values,
                     db_session_fn fn, void *arg);
/* SQL text through the simple protocol (results in text), as statements
 * that must run alone need. */
void db_session_command(db_session *s, const char *sql, db_session_fn fn, void *arg);
void db_session_free(db_session *s);

#endif
