/* partition_pass: coverage and pruning of task history and heartbeat leaves
 * (see partition_pass.h). A pass is a chain of statements on the pass's own
 * session; each callback records what its statement did and sends the
 * next. */
#include "tasks/partition_pass.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/duration.h"
#include "base/emit.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/periodic.h"
#include "db/result.h"
#include "db/session.h"
#include "tasks/class_registry.h"

#define PASS_FIRST_MS 1500   /* the first pass, this long after start */
#define PASS_LOCK_SQL "hashtextextended('silt.partition_pass', 0)"
#define CLASSES_SQL "SELECT tasks.partition_classes()"
#define COVER_CLASS_SQL "SELECT what, name, reason FROM tasks.partition_cover_class($1, $2)"
#define COVER_HEARTBEATS_SQL "SELECT what, name, reason FROM tasks.partition_cover_heartbeats($1, $2)"

/* A leaf, a class or a refusal named in the report. */
typedef struct pass_item {
    char *name, *class_key, *reason;
} pass_item;

typedef struct pass_list {
    pass_item *v;
    size_t     n, cap;
} pass_list;

/* A leaf due to be dropped. */
typedef struct expired_leaf {
    char   *leaf, *parent, *class_key;
    bool    attached;
    bool    pending;   /* a detach left pending the finalize step could not complete (already refused) */
    bool    refused;   /* its detach was refused: not dropped this pass */
    int64_t pinned;
} expired_leaf;

typedef enum pass_step {
    P_LOCK, P_LOCK_TIMEOUT, P_REGISTER, P_CLASSES, P_COVER_CLASS, P_COVER_HEARTBEATS, P_FINALIZE, P_EXPIRED,
    P_DETACH_LIMIT, P_DETACH, P_DETACH_UNLIMIT, P_DROP,
    P_ABSENT, P_RECORD, P_UNLOCK
} pass_step;

struct partition_pass {
    periodic           tick;
    db_session        *session;
    const silt_conf   *conf;
    int64_t            detach_timeout_ms;
    char               runner[300];
    bool               reconnected;      /* this pass already retried its first statement on a new connection */
    partition_done_fn  done;
    void              *done_arg;
    partition_totals   totals;
    /* the pass under way */
    pass_step          step;
    bool               yielded;
    int64_t            started_us;
    buf                error;            /* what stopped the pass, if anything did */
    pass_list          created, repaired, dropped, finalized, refusals, failed, absent, uncataloged;
    pass_list          classes;          /* the registered classes, covered one per transaction */
    size_t             next_class;
    expired_leaf      *expired;
    size_t             nexpired, next_leaf;
    class_registry_params registry;
    buf                report;
};

static void list_add(pass_list *l, const char *name, const char *class_key, const char *reason)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = (pass_item){ xstrdup(name), class_key ? xstrdup(class_key) : NULL,
                                reason ? xstrdup(reason) : NULL };
}

static void list_clear(pass_list *l)
{
    for (size_t i = 0; i < l->n; i++) { free(l->v[i].name); free(l->v[i].class_key); free(l->v[i].reason); }
    l->n = 0;
}

static void expired_clear(partition_pass *p)
{
    for (size_t i = 0; i < p->nexpired; i++) {
        free(p->expired[i].leaf); free(p->expired[i].parent); free(p->expired[i].class_key);
    }
    free(p->expired);
    p->expired = NULL;
    p->nexpired = p->next_leaf = 0;
}

int64_t partition_heartbeat_window_s(const conf_recovery *r)
{
    int64_t longer = r->claimed_stale_after_ms > r->running_stale_after_ms ? r->claimed_stale_after_ms
                                                                            : r->running_stale_after_ms;
    int64_t s = 2 * longer / 1000;
    return s < 3600 ? 3600 : s;
}

/* The document's message for the pass's absent leaves. */
static void absent_message(const partition_pass *p, buf *out)
{
    const char **names = xcalloc(p->absent.n, sizeof *names);
    for (size_t i = 0; i < p->absent.n; i++) names[i] = p->absent.v[i].name;
    partition_absent_message(out, names, p->absent.n);
    free(names);
}

void partition_absent_message(buf *out, const char *const *names, size_t n)
{
    buf_printf(out, "Partition coverage: cataloged leaves have no relation and were excluded from the staged "
                    "readers: ");
    for (size_t i = 0; i < n; i++) buf_printf(out, "%s%s", i ? ", " : "", names[i]);
    buf_printf(out, ". Reads and terminalization are restored; the records those leaves held are gone. The "
                    "catalog rows are kept as evidence and resolving them is an operator decision.");
}

static const char *outcome(const partition_pass *p)
{
    if (p->error.len) return "failed";
    return p->refusals.n || p->failed.n || p->absent.n ? "incomplete" : "ok";
}

/* ---- the report --------------------------------------------------------- */

static void emit_names(emit *e, const char *key, const pass_list *l)
{
    emit_key(e, key);
    emit_array(e);
    for (size_t i = 0; i < l->n; i++) emit_str(e, l->v[i].name);
    emit_end(e);
}

static void emit_reasons(emit *e, const char *key, const pass_list *l, const char *name_key)
{
    emit_key(e, key);
    emit_array(e);
    for (size_t i = 0; i < l->n; i++) {
        emit_object(e);
        emit_key(e, name_key); emit_str(e, l->v[i].name);
        if (l->v[i].class_key) { emit_key(e, "classKey"); emit_str(e, l->v[i].class_key); }
        emit_key(e, "reason"); emit_str(e, l->v[i].reason);
        emit_end(e);
    }
    emit_end(e);
}

static void build_report(partition_pass *p)
{
    buf_reset(&p->report);
    emit e;
    emit_init(&e, &p->report);
    emit_object(&e);
    emit_key(&e, "yielded"); emit_bool(&e, p->yielded);   /* another server was running a pass */
    if (!p->yielded) {
        emit_key(&e, "runner"); emit_str(&e, p->runner);
        emit_key(&e, "startedAt"); emit_time(&e, p->started_us);
        emit_key(&e, "finishedAt"); emit_time(&e, clock_wall_us());
        emit_key(&e, "outcome"); emit_str(&e, outcome(p));
        emit_names(&e, "created", &p->created);
        emit_names(&e, "repaired", &p->repaired);   /* leaves whose missing index was made again */
        emit_names(&e, "dropped", &p->dropped);
        emit_names(&e, "finalized", &p->finalized);
        emit_reasons(&e, "refusals", &p->refusals, "leaf");
        emit_reasons(&e, "failedClasses", &p->failed, "classKey");
        emit_names(&e, "absent_leaves", &p->absent);   /* the document's name, kept as it writes it */
        emit_names(&e, "uncataloged", &p->uncataloged);
        emit_key(&e, "message");
        if (p->absent.n) {
            buf msg;
            buf_init(&msg);
            absent_message(p, &msg);
            emit_str(&e, msg.data);
            buf_fini(&msg);
        } else {
            emit_null(&e);
        }
        emit_key(&e, "error");
        if (p->error.len) emit_str(&e, p->error.data); else emit_null(&e);
    }
    emit_end(&e);
}

/* ---- the chain ---------------------------------------------------------- */

static void pass_end(partition_pass *p)
{
    build_report(p);
    periodic_end(&p->tick);
    if (!p->yielded) {
        partition_totals *t = &p->totals;
        t->passes++;
        if (p->error.len) t->failed_passes++;
        t->leaves_created += p->created.n;
        t->leaves_dropped += p->dropped.n;
        t->drops_refused += p->refusals.n;
        t->leaves_absent = (int64_t)p->absent.n;
        t->classes_failed = (int64_t)p->failed.n;
        t->healthy = strcmp(outcome(p), "ok") == 0;
        if (p->created.n || p->dropped.n || p->finalized.n)
            log_info("partition pass: %zu leaves created, %zu dropped, %zu detaches finalized", p->created.n,
                     p->dropped.n, p->finalized.n);
        for (size_t i = 0; i < p->refusals.n; i++)
            log_warn("partition pass: %s not dropped: %s", p->refusals.v[i].name, p->refusals.v[i].reason);
        for (size_t i = 0; i < p->failed.n; i++)
            log_warn("partition pass: class %s not served: %s", p->failed.v[i].name, p->failed.v[i].reason);
        if (p->error.len) log_warn("partition pass failed: %s", p->error.data);
    }
    if (p->done) {
        partition_done_fn fn = p->done;
        p->done = NULL;
        fn(p->done_arg, p->report.data);
    }
    periodic_arm(&p->tick, p->conf->retention.partition_maintenance_interval_s * 1000);
}

static void on_statement(void *arg, const PGresult *res, const char *error, const char *sqlstate);

static void call(partition_pass *p, pass_step step, const char *sql, int n, const char *const *values)
{
    p->step = step;
    db_session_call(p->session, sql, n, values, on_statement, p);
}

static void command(partition_pass *p, pass_step step, const char *sql)
{
    p->step = step;
    db_session_command(p->session, sql, on_statement, p);
}

static void next_leaf(partition_pass *p);

/* A name the pass puts in DDL: only what silt's own names are made of. */
static bool plain_name(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
    return true;
}

static void start_detach(partition_pass *p)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SET statement_timeout = %lld", (long long)p->detach_timeout_ms);
    command(p, P_DETACH_LIMIT, sql);
}

static void detach(partition_pass *p)
{
    const expired_leaf *l = &p->expired[p->next_leaf];
    buf sql;
    buf_init(&sql);
    buf_printf(&sql, "ALTER TABLE %s DETACH PARTITION %s CONCURRENTLY", l->parent, l->leaf);
    command(p, P_DETACH, sql.data);
    buf_fini(&sql);
}

static void drop(partition_pass *p)
{
    const char *values[1] = { p->expired[p->next_leaf].leaf };
    call(p, P_DROP, "SELECT tasks.leaf_drop($1)", 1, values);
}

static void refuse(partition_pass *p, const char *reason)
{
    const expired_leaf *l = &p->expired[p->next_leaf];
    list_add(&p->refusals, l->leaf, l->class_key, reason);
}

/* The leaves due, one at a time: refused when pinned, else detached (if
 * still attached) and dropped. */
static void next_leaf(partition_pass *p)
{
    while (p->next_leaf < p->nexpired) {
        const expired_leaf *l = &p->expired[p->next_leaf];
        if (l->pending) {
            /* refused by the finalize step this pass */
        } else if (!plain_name(l->leaf) || !plain_name(l->parent)) {
            refuse(p, "its name is not one silt makes");
        } else if (l->pinned > 0) {
            char why[200];
            snprintf(why, sizeof why, "recovery evidence pins it: %lld crashed-worker outbox rows not yet applied",
                     (long long)l->pinned);
            refuse(p, why);
        } else if (l->attached) {
            start_detach(p);
            return;
        } else {
            drop(p);
            return;
        }
        p->next_leaf++;
    }
    call(p, P_ABSENT, "SELECT leaf, 'absent' FROM unnest(tasks.partition_absent()) AS leaf"
                      " UNION ALL SELECT leaf, 'uncataloged' FROM tasks.partition_uncataloged() AS leaf", 0, NULL);
}

static void record(partition_pass *p)
{
    build_report(p);
    char started[40];
    db_time_param(p->started_us, started);
    const char *values[4] = { p->runner, started, outcome(p), p->report.data };
    call(p, P_RECORD, "SELECT tasks.partition_pass_record($1, $2, $3, $4::json)", 4, values);
}

static void unlock(partition_pass *p)
{
    call(p, P_UNLOCK, "SELECT pg_advisory_unlock(" PASS_LOCK_SQL ")", 0, NULL);
}

/* history_leaf_horizon_days, heartbeat_leaf_horizon_hours and the
 * heartbeat window as statement parameters. */
typedef struct cover_params {
    char days[24], hours[24], window[24];
} cover_params;

static void cover_params_of(const silt_conf *conf, cover_params *c)
{
    snprintf(c->days, sizeof c->days, "%lld", (long long)conf->retention.history_leaf_horizon_days);
    snprintf(c->hours, sizeof c->hours, "%lld", (long long)conf->retention.heartbeat_leaf_horizon_hours);
    snprintf(c->window, sizeof c->window, "%lld", (long long)partition_heartbeat_window_s(&conf->recovery));
}

static void cover_next(partition_pass *p)
{
    cover_params c;
    cover_params_of(p->conf, &c);
    if (p->next_class < p->classes.n) {
        const char *values[2] = { p->classes.v[p->next_class++].name, c.days };
        call(p, P_COVER_CLASS, COVER_CLASS_SQL, 2, values);
    } else {
        const char *values[2] = { c.hours, c.window };
        call(p, P_COVER_HEARTBEATS, COVER_HEARTBEATS_SQL, 2, values);
    }
}

static void read_cover(partition_pass *p, const PGresult *res)
{
    for (int i = 0; i < PQntuples(res); i++) {
        const char *what = db_str(res, i, 0);
        if (strcmp(what, "created") == 0) list_add(&p->created, db_str(res, i, 1), NULL, NULL);
        else if (strcmp(what, "repaired") == 0) list_add(&p->repaired, db_str(res, i, 1), NULL, NULL);
        else list_add(&p->failed, db_str(res, i, 1), NULL, db_str(res, i, 2));
    }
}

static void read_finalize(partition_pass *p, const PGresult *res)
{
    for (int i = 0; i < PQntuples(res); i++) {
        if (PQgetisnull(res, i, 2)) list_add(&p->finalized, db_str(res, i, 0), db_str(res, i, 1), NULL);
        else list_add(&p->refusals, db_str(res, i, 0), db_str(res, i, 1), db_str(res, i, 2));
    }
}

static void read_expired(partition_pass *p, const PGresult *res)
{
    p->nexpired = (size_t)PQntuples(res);
    p->expired = p->nexpired ? xcalloc(p->nexpired, sizeof *p->expired) : NULL;
    for (size_t i = 0; i < p->nexpired; i++) {
        p->expired[i] = (expired_leaf){ xstrdup(db_str(res, (int)i, 0)), xstrdup(db_str(res, (int)i, 1)),
                                        xstrdup(db_str(res, (int)i, 2)), db_bool(res, (int)i, 3),
                                        db_bool(res, (int)i, 4), false, db_int(res, (int)i, 5) };
    }
}

/* What went wrong with a statement the pass cannot go on without. While
 * the session is there, the failed pass is recorded (the coverage surface
 * goes red) and the lock let go; when the connection went, the lock went
 * with it and nothing can be recorded. */
static void stop_pass(partition_pass *p, const char *what, const char *error, const char *sqlstate)
{
    buf_printf(&p->error, "%s: %s", what, error);
    if (*sqlstate) record(p);
    else pass_end(p);
}

/* ---- each statement's outcome ----------------------------------------- */

/* What a step's failing statement stops the pass at; NULL where the step
 * weighs its own errors (a refused detach or drop goes on with the next
 * leaf). */
static const char *const step_what[] = {
    [P_LOCK_TIMEOUT] = "setting the lock timeout",      [P_REGISTER] = "registering the classes",
    [P_CLASSES] = "listing the classes",                [P_COVER_CLASS] = "coverage",
    [P_COVER_HEARTBEATS] = "heartbeat coverage",        [P_FINALIZE] = "finalizing pending detaches",
    [P_EXPIRED] = "finding leaves past their class's duration",
    [P_DETACH_LIMIT] = "setting the detach timeout",    [P_DETACH_UNLIMIT] = "resetting the detach timeout",
    [P_ABSENT] = "looking for absent leaves",
};

static void lock_taken(partition_pass *p, const PGresult *res, const char *error, const char *sqlstate)
{
    if (error && !*sqlstate && !p->reconnected) {   /* the idle connection was lost: once more, anew */
        p->reconnected = true;
        call(p, P_LOCK, "SELECT pg_try_advisory_lock(" PASS_LOCK_SQL ")", 0, NULL);
        return;
    }
    if (error) { buf_printf(&p->error, "taking the pass lock: %s", error); pass_end(p); return; }
    if (!db_bool(res, 0, 0)) { p->yielded = true; pass_end(p); return; }
    char sql[64];   /* no statement of the pass waits for a lock longer than a detach may */
    snprintf(sql, sizeof sql, "SET lock_timeout = %lld", (long long)p->detach_timeout_ms);
    command(p, P_LOCK_TIMEOUT, sql);
}

/* Registered, but for the keys the registry holds with another duration:
 * each fails its class. */
static void classes_registered(partition_pass *p, const PGresult *res)
{
    for (int i = 0; i < PQntuples(res); i++) {
        char had[DURATION_TEXT_BYTES], says[DURATION_TEXT_BYTES], why[160];
        duration_format(db_int(res, i, 1), had);
        duration_format(db_int(res, i, 2), says);
        snprintf(why, sizeof why, "registered with %s; silt.conf declares %s (classes are immutable)", had, says);
        list_add(&p->failed, db_str(res, i, 0), NULL, why);
    }
    call(p, P_CLASSES, CLASSES_SQL, 0, NULL);
}

static void finalize(partition_pass *p)
{
    char timeout[24];
    snprintf(timeout, sizeof timeout, "%lld", (long long)p->detach_timeout_ms);
    const char *values[1] = { timeout };
    call(p, P_FINALIZE, "SELECT leaf_name, class_key, reason FROM tasks.partition_finalize($1)", 1, values);
}

/* A detach that failed is a refusal: a timeout (statement or lock) means a
 * reader held it; the leaf is left pending for the next pass's finalize. */
static void detached(partition_pass *p, const char *error, const char *sqlstate)
{
    if (error) {
        bool timed_out = strcmp(sqlstate, "57014") == 0 || strcmp(sqlstate, "55P03") == 0;
        buf why;
        buf_init(&why);
        if (timed_out) buf_printf(&why, "a reader held the detach past its timeout (%lld ms)",
                                  (long long)p->detach_timeout_ms);
        else buf_printf(&why, "detaching: %s", error);
        refuse(p, why.data);
        buf_fini(&why);
        p->expired[p->next_leaf].refused = true;
    }
    command(p, P_DETACH_UNLIMIT, "RESET statement_timeout");
}

static void dropped(partition_pass *p, const char *error)
{
    if (error) {
        buf why;
        buf_init(&why);
        buf_printf(&why, "dropping: %s", error);
        refuse(p, why.data);
        buf_fini(&why);
    } else {
        list_add(&p->dropped, p->expired[p->next_leaf].leaf, p->expired[p->next_leaf].class_key, NULL);
    }
    p->next_leaf++;
    next_leaf(p);
}

/* Absent leaves (the document's message, as a warning) and uncataloged
 * ones; then the record. */
static void divergence_found(partition_pass *p, const PGresult *res)
{
    for (int i = 0; i < PQntuples(res); i++)
        list_add(strcmp(db_str(res, i, 1), "absent") == 0 ? &p->absent : &p->uncataloged, db_str(res, i, 0),
                 NULL, NULL);
    if (p->absent.n) {
        buf msg;
        buf_init(&msg);
        absent_message(p, &msg);
        log_warn("%s", msg.data);
        buf_fini(&msg);
    }
    for (size_t i = 0; i < p->uncataloged.n; i++)
        log_warn("partition pass: %s is attached but not in the leaf catalog: silt neither covers nor drops it",
                 p->uncataloged.v[i].name);
    record(p);
}

static void recorded(partition_pass *p, const char *error, const char *sqlstate)
{
    if (error) buf_printf(&p->error, "%srecording the pass: %s", p->error.len ? "; " : "", error);
    if (error && !*sqlstate) { pass_end(p); return; }   /* the lock went with the connection */
    unlock(p);
}

static void on_statement(void *arg, const PGresult *res, const char *error, const char *sqlstate)
{
    partition_pass *p = arg;
    if (error && p->step < sizeof step_what / sizeof *step_what && step_what[p->step]) {
        stop_pass(p, step_what[p->step], error, sqlstate);
        return;
    }
    if (error && !*sqlstate && (p->step == P_DETACH || p->step == P_DROP)) {   /* the connection went */
        stop_pass(p, p->step == P_DETACH ? "detaching" : "dropping", error, sqlstate);
        return;
    }
    switch (p->step) {
    case P_LOCK:             lock_taken(p, res, error, sqlstate); return;
    case P_LOCK_TIMEOUT:     call(p, P_REGISTER, CLASS_REGISTRY_EACH_SQL, CLASS_REGISTRY_ARRAYS, p->registry.values);
                             return;
    case P_REGISTER:         classes_registered(p, res); return;
    case P_CLASSES:
        for (int i = 0; i < PQntuples(res); i++) list_add(&p->classes, db_str(res, i, 0), NULL, NULL);
        cover_next(p);
        return;
    case P_COVER_CLASS:      read_cover(p, res); cover_next(p); return;
    case P_COVER_HEARTBEATS: read_cover(p, res); finalize(p); return;
    case P_FINALIZE:
        read_finalize(p, res);
        call(p, P_EXPIRED, "SELECT leaf_name, parent_name, class_key, attached, pending, pinned"
                           " FROM tasks.partition_expired()", 0, NULL);
        return;
    case P_EXPIRED:          read_expired(p, res); next_leaf(p); return;
    case P_DETACH_LIMIT:     detach(p); return;
    case P_DETACH:           detached(p, error, sqlstate); return;
    case P_DETACH_UNLIMIT:
        if (p->expired[p->next_leaf].refused) { p->next_leaf++; next_leaf(p); return; }
        drop(p);
        return;
    case P_DROP:             dropped(p, error); return;
    case P_ABSENT:           divergence_found(p, res); return;
    case P_RECORD:           recorded(p, error, sqlstate); return;
    case P_UNLOCK:
        if (error && !p->error.len) buf_printf(&p->error, "releasing the pass lock: %s", error);
        pass_end(p);
        return;
    }
}

static void pass_start(partition_pass *p)
{
    periodic_begin(&p->tick);
    p->yielded = false;
    p->started_us = clock_wall_us();
    buf_reset(&p->error);
    list_clear(&p->created); list_clear(&p->repaired); list_clear(&p->dropped); list_clear(&p->finalized);
    list_clear(&p->refusals); list_clear(&p->failed); list_clear(&p->absent); list_clear(&p->uncataloged);
    list_clear(&p->classes);
    p->next_class = 0;
    p->reconnected = false;
    expired_clear(p);
    call(p, P_LOCK, "SELECT pg_try_advisory_lock(" PASS_LOCK_SQL ")", 0, NULL);
}

static void due(void *owner)
{
    pass_start(owner);
}

/* One blocking statement of the start-up coverage; its failure rows
 * logged. -1 on a database error. */
static int cover_blocking(PGconn *pg, const char *sql, int n, const char *const *values)
{
    PGresult *r = PQexecParams(pg, sql, n, NULL, values, NULL, NULL, 1);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0) log_error("cannot prepare the task history partitions: %s", PQerrorMessage(pg));
    for (int i = 0; rc == 0 && i < PQntuples(r); i++)
        if (strcmp(db_str(r, i, 0), "failed") == 0)
            log_warn("partition coverage: class %s not served: %s", db_str(r, i, 1), db_str(r, i, 2));
    PQclear(r);
    return rc;
}

int partition_cover_now(PGconn *pg, const silt_conf *conf)
{
    cover_params c;
    cover_params_of(conf, &c);
    PGresult *classes = PQexecParams(pg, CLASSES_SQL, 0, NULL, NULL, NULL, NULL, 1);
    int rc = PQresultStatus(classes) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0) log_error("cannot list the retention classes: %s", PQerrorMessage(pg));
    for (int i = 0; rc == 0 && i < PQntuples(classes); i++) {
        const char *values[2] = { db_str(classes, i, 0), c.days };
        rc = cover_blocking(pg, COVER_CLASS_SQL, 2, values);
    }
    PQclear(classes);
    const char *values[2] = { c.hours, c.window };
    return rc == 0 ? cover_blocking(pg, COVER_HEARTBEATS_SQL, 2, values) : rc;
}

partition_pass *partition_pass_new(struct event_base *base, const char *conninfo, const silt_conf *conf,
                                   int64_t detach_timeout_ms)
{
    partition_pass *p = xcalloc(1, sizeof *p);
    p->conf = conf;
    p->detach_timeout_ms = detach_timeout_ms;
    p->session = db_session_new(base, conninfo, "silt partition pass");
    periodic_init(&p->tick, base, due, p);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(p->runner, sizeof p->runner, "%s:%d", host, (int)getpid());
    class_registry_values(conf, &p->registry);
    buf_init(&p->error);
    buf_init(&p->report);
    periodic_arm(&p->tick, PASS_FIRST_MS);
    return p;
}

int partition_pass_run(partition_pass *p, partition_done_fn fn, void *arg)
{
    if (!periodic_may_start(&p->tick)) return -1;
    p->done = fn;
    p->done_arg = arg;
    pass_start(p);
    return 0;
}

const partition_totals *partition_pass_totals(const partition_pass *p) { return &p->totals; }

periodic *partition_pass_periodic(partition_pass *p) { return &p->tick; }

void partition_pass_free(partition_pass *p)
{
    if (!p) return;
    periodic_fini(&p->tick);
    db_session_free(p->session);
    list_clear(&p->created); list_clear(&p->repaired); list_clear(&p->dropped); list_clear(&p->finalized);
    list_clear(&p->refusals); list_clear(&p->failed); list_clear(&p->absent);
    free(p->created.v); free(p->repaired.v); free(p->dropped.v); free(p->finalized.v);
    free(p->refusals.v); free(p->failed.v); free(p->absent.v);
    list_clear(&p->uncataloged);
    free(p->uncataloged.v);
    list_clear(&p->classes);
    free(p->classes.v);
    expired_clear(p);
    class_registry_values_fini(&p->registry);
    buf_fini(&p->error);
    buf_fini(&p->report);
    free(p);
}
