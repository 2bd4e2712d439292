/* pool: asynchronous PostgreSQL connections on the event loop. Work is
 * submitted as jobs: a list of prepared-statement calls sent in pipeline mode
 * and closed by one Sync, so a job costs one round trip, and its calls run in
 * one implicit transaction: all commit at the Sync, or none does (unless the
 * job asks for a commit point in between, db_job_commit). Connections reconnect
 * with backoff when PostgreSQL goes away; jobs in flight on a lost connection
 * fail with an error, none is retried silently. */
#ifndef SILT_POOL_H
#define SILT_POOL_H
#include <stdbool.h>
#include <stdint.h>
#include <libpq-fe.h>
#include <event2/event.h>
#include "db/statements.h"

#define DB_MAX_PARAMS 24   /* the most any statement of statements.c takes (checked as a job is built) */
#define DB_MAX_CALLS  512

typedef struct db_pool db_pool;
typedef struct db_job  db_job;

/* What a finished job hands its callback. results[i] belongs to call i (NULL
 * if it never ran); freed after the callback returns. */
typedef struct db_reply {
    PGresult  **results;    /* one per call, NULL where none; the array always exists */
    int         ncalls;
    const char *error;      /* NULL on success; else the first error's message */
    const char *sqlstate;   /* SQLSTATE of that error, "" when none */
    const char *detail;     /* DETAIL of that error, "" when none */
    int         failed_call;/* index of the call that failed, -1 */
    bool        unavailable;/* no connection: PostgreSQL unreachable */
    bool        abandoned;  /* never sent: its requester had given up (db_job_abandon_when) */
} db_reply;

typedef void (*db_done_fn)(void *arg, const db_reply *reply);

/* A deadlock or serialization failure: the job rolled back and may simply
 * be sent again. */
bool db_reply_retryable(const db_reply *reply);

db_pool *db_pool_new(struct event_base *base, const char *conninfo, int size, int pipeline_depth);
void     db_pool_free(db_pool *pool);
bool     db_pool_ready(const db_pool *pool);   /* at least one connection is usable */
int      db_pool_busy(const db_pool *pool);    /* jobs queued or in flight */
/* What a job dropped unsent answers (reply->error, reply->sqlstate), and
 * what a gatherer that drops work of a gone client unsent says too. */
#define DB_ABANDONED_ERROR    "the client is gone; nothing was sent to the database"
#define DB_ABANDONED_SQLSTATE "57014"
uint64_t db_pool_abandoned(const db_pool *pool); /* jobs dropped unsent: their requester had given up */

db_job *db_job_new(db_done_fn done, void *arg);
/* Appends a call of a prepared statement. Values are copied. lengths and
 * formats may be NULL (all text); format 1 marks a binary value. */
void    db_job_call(db_job *job, db_stmt stmt, const char *const *values,
                    const int *lengths, const int *formats);
/* The same, except that each value i with bit i set in taken is a malloc'd
 * block the job takes over instead of copying (a large segment is then held
 * once). A taken binary value needs lengths[i]; a text one, its terminator. */
void    db_job_call_taking(db_job *job, db_stmt stmt, const char *const *values,
                           const int *lengths, const int *formats, unsigned taken);
/* Ends the implicit transaction after the last call appended: it commits
 * (or fails) on its own, and the calls after it run in a transaction of
 * their own, in the same round trip. An error before the commit point does
 * not stop the calls after it; reply->failed_call tells which failed. */
void    db_job_commit(db_job *job);
int     db_job_ncalls(const db_job *job);
/* Submits; done runs exactly once, always from the event loop, never inside
 * this call (nor inside db_pool_reap). */
void    db_submit(db_pool *pool, db_job *job);
/* The most common job, made and submitted: one statement with text values
 * (NULL when it takes none), its reply to done(arg). */
void    db_submit_stmt(db_pool *pool, db_stmt stmt, const char *const *values, db_done_fn done, void *arg);

/* Work nobody waits for is not done. A job given a gone flag is dropped
 * while it still waits in the pool's queue if *gone is true: when its turn
 * comes, or at the next db_pool_reap. It is then never sent, and done runs
 * (still exactly once) with reply->abandoned, an error and SQLSTATE 57014,
 * so its owner frees what it holds as after any failure. A job already sent
 * runs to its end and done sees its real outcome: a statement cannot be
 * recalled safely (a cancel request is per connection, and would hit the
 * job pipelined behind it; the commit may be done already).
 *   *gone must stay readable until done runs: point it into what done frees
 * (a request's `left`, freed by the reply done sends). Give it only to a job
 * before which nothing of its work has committed; a follow-up of committed
 * work (a dead-letter copy after its ack) must run. */
void    db_job_abandon_when(db_job *job, const bool *gone);
/* *sent becomes true when the job is sent to PostgreSQL: from then on its
 * requester's work may commit whatever becomes of the requester, and a
 * reply given before done runs must not say it was not written (httpd's
 * request timeout answers 504 then, not 503). Set before db_submit; *sent
 * must stay writable until done runs, as *gone readable. */
void    db_job_note_sent(db_job *job, bool *sent);
/* Some requester may have given up: drops every waiting job whose gone flag
 * is set, soon (one pass per event-loop turn, however many call), rather
 * than when its turn would come, so its owner's memory is freed and a
 * locked database does not keep dead requests counted as waiting. */
void    db_pool_reap(db_pool *pool);
/* Ends job unsent as db_job_abandon_when would once its requester is gone:
 * for an engine that shares one job among many requesters and takes a gone
 * one's share out itself (tasks/gather.c). done runs exactly once, from the
 * event loop (never inside this call), with the same abandoned reply, and
 * db_pool_abandoned counts it. */
void    db_job_abandon(db_pool *pool, db_job *job);

#endif
