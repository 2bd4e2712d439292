/* schedule: slots fired once across servers (see schedule.h). */
#include "tasks/schedule.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/cron.h"
#include "base/log.h"
#include "base/retention_class.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"

/* One schedule as a tick fires it. Its texts are the scheduler's own
 * copies: an API entry lives from one load to the next. */
typedef struct sched_entry {
    char        *name, *timezone, *task, *queue, *args;
    cron_expr    expr;
    int          catch_up;    /* missed slots owed: 0 skips them */
    int          priority;    /* the send's, resolved */
    const char  *retention_class;   /* the tasks', resolved from this server's silt.conf */
    int64_t      version;     /* an API definition's; 0: silt.conf's */
    int64_t      last;        /* the last slot taken (Unix s); -1: none recorded */
} sched_entry;

struct scheduler {
    db_pool         *pool;
    task_hub        *hub;
    const silt_conf *conf;
    sched_entry     *config;    /* this server's silt.conf schedules */
    size_t           nconfig;
    sched_entry     *api;       /* the API schedules running, as the last load read them */
    size_t           napi;
    struct event    *tick;
    bool             loading, stopped;
    int              busy;      /* fire jobs with the database */
};

static void schedule_tick(scheduler *s)
{
    if (s->stopped) return;
    struct timeval tv = { SCHEDULE_TICK_MS / 1000, (SCHEDULE_TICK_MS % 1000) * 1000 };
    evtimer_add(s->tick, &tv);
}

static void entry_fini(sched_entry *e)
{
    free(e->name);
    free(e->timezone);
    free(e->task);
    free(e->queue);
    free(e->args);
}

static void api_entries_free(scheduler *s)
{
    for (size_t i = 0; i < s->napi; i++) entry_fini(&s->api[i]);
    free(s->api);
    s->api = NULL;
    s->napi = 0;
}

/* The send's priority and retention class, as for any send to queue:
 * given, else the queue's. NULL class: a key this server does not know. */
static const char *resolve(const silt_conf *conf, sched_entry *e, int priority, const char *class_key)
{
    const conf_queue *q = conffile_queue(conf, e->queue);
    e->priority = priority ? priority : q ? q->priority : 100;
    char err[256];
    retention_ask ask = class_key ? RETENTION_ASK_KEY : RETENTION_ASK_NOTHING;
    return e->retention_class = retention_class_for(&conf->retention, e->queue, ask, class_key, err, sizeof err);
}

/* ---- firing ---- */

typedef struct fire_call {
    scheduler   *s;
    sched_entry *e;
} fire_call;

static void fired(void *arg, const db_reply *reply)
{
    fire_call *c = arg;
    c->s->busy--;
    if (reply->error) {
        log_warn("schedule %s: %s", c->e->name, reply->error);
    } else {
        for (int i = 0; i < reply->ncalls; i++)
            if (!db_null(reply->results[i], 0, 0)) {
                log_info("schedule %s fired", c->e->name);
                task_hub_announce_sent(c->s->hub, c->e->queue);
            }
    }
    free(c);
}

static void add_fire(db_job *job, const sched_entry *e, int64_t slot, bool fire)
{
    char when[40], pri[16], version[24];
    db_time_param(slot * 1000000, when);
    snprintf(pri, sizeof pri, "%d", e->priority);
    snprintf(version, sizeof version, "%lld", (long long)e->version);
    const char *values[9] = { e->name, when, fire ? "true" : "false", e->task, e->queue, e->args, pri,
                              e->retention_class, e->version ? version : NULL };
    db_job_call(job, STMT_SCHEDULE_FIRE, values, NULL, NULL);
}

static db_job *fire_job(scheduler *s, sched_entry *e)
{
    fire_call *c = xcalloc(1, sizeof *c);
    c->s = s;
    c->e = e;
    s->busy++;
    return db_job_new(fired, c);
}

/* A schedule the database has never seen starts from now, recorded so that
 * every server (and this one after a restart) counts from the same point. */
static void record_start(scheduler *s, sched_entry *e, int64_t now)
{
    db_job *job = fire_job(s, e);
    add_fire(job, e, now, false);
    db_submit(s->pool, job);
}

/* The most recent due slots of e in (last, now], at most cap of them, in
 * order; *far when the walk gave up before now (a long downtime). */
static size_t due_slots(const sched_entry *e, int64_t now, int64_t *slots, size_t cap, bool *far)
{
    size_t n = 0;
    int64_t t = e->last;
    *far = true;
    for (int walked = 0; walked < SCHEDULE_MAX_WALK; walked++) {
        t = cron_next(&e->expr, e->timezone, t);
        if (t < 0 || t > now) { *far = false; break; }
        if (n == cap) { memmove(slots, slots + 1, (cap - 1) * sizeof *slots); n--; }   /* keep the most recent */
        slots[n++] = t;
    }
    return n;
}

/* One transaction: missed slots passed over or fired per catch_up, then
 * the slots on time fired. */
static void fire_due(scheduler *s, sched_entry *e, int64_t now)
{
    int keep = e->catch_up + 2;   /* the missed ones owed, a slot on time, and one before them */
    int64_t *slots = xcalloc((size_t)keep, sizeof *slots);
    bool far;
    size_t n = due_slots(e, now, slots, (size_t)keep, &far);
    if (far) {   /* more missed slots than a tick walks: pass over them all, up to the grace */
        db_job *job = fire_job(s, e);
        add_fire(job, e, now - SCHEDULE_GRACE_S - 1, false);
        db_submit(s->pool, job);
    } else if (n > 0) {
        size_t missed = 0;
        while (missed < n && now - slots[missed] > SCHEDULE_GRACE_S) missed++;
        size_t owed = missed < (size_t)e->catch_up ? missed : (size_t)e->catch_up;
        db_job *job = fire_job(s, e);
        if (missed > owed) add_fire(job, e, slots[missed - owed - 1], false);   /* passed over up to here */
        for (size_t i = missed - owed; i < n; i++) add_fire(job, e, slots[i], true);
        db_submit(s->pool, job);
    }
    free(slots);
}

static void fire_entries(scheduler *s, sched_entry *entries, size_t n, int64_t now)
{
    for (size_t i = 0; i < n; i++) {
        if (entries[i].last < 0) record_start(s, &entries[i], now);
        else fire_due(s, &entries[i], now);
    }
}

/* ---- what the database says, each tick ---- */

enum { L_NAME, L_ORIGIN, L_CRON, L_TIMEZONE, L_TASK, L_QUEUE, L_ARGS, L_CATCH_UP, L_PRIORITY, L_CLASS, L_PAUSED_AT,
       L_VERSION, L_CREATED, L_UPDATED, L_LAST_SLOT };

static int64_t last_slot_of(const PGresult *state, const char *name)
{
    for (int row = 0; row < PQntuples(state); row++)
        if (strcmp(db_str(state, row, 0), name) == 0) return db_time_us(state, row, 1) / 1000000;
    return -1;
}

/* An API schedule of row r as an entry; false when this server cannot
 * fire it (a retention class its silt.conf does not know: another server
 * may). The API checked the definition with the same rules. */
static bool api_entry(scheduler *s, const PGresult *r, int row, sched_entry *e)
{
    size_t n;
    const char *args = db_json(r, row, L_ARGS, &n);
    *e = (sched_entry){ .name = xstrdup(db_str(r, row, L_NAME)), .timezone = xstrdup(db_str(r, row, L_TIMEZONE)),
                        .task = xstrdup(db_str(r, row, L_TASK)), .queue = xstrdup(db_str(r, row, L_QUEUE)),
                        .args = xstrndup(args, n), .catch_up = (int)db_int(r, row, L_CATCH_UP),
                        .version = db_int(r, row, L_VERSION),
                        .last = db_null(r, row, L_LAST_SLOT) ? -1 : db_time_us(r, row, L_LAST_SLOT) / 1000000 };
    int priority = db_null(r, row, L_PRIORITY) ? 0 : (int)db_int(r, row, L_PRIORITY);
    const char *class_key = db_null(r, row, L_CLASS) ? NULL : db_str(r, row, L_CLASS);
    if (cron_parse(db_str(r, row, L_CRON), &e->expr, NULL, 0) == 0 && resolve(s->conf, e, priority, class_key))
        return true;
    log_debug("schedule %s: not fired by this server (its retention class is not in this silt.conf)", e->name);
    entry_fini(e);
    return false;
}

static void read_api(scheduler *s, const PGresult *r)
{
    s->api = xcalloc((size_t)PQntuples(r) + 1, sizeof *s->api);
    for (int row = 0; row < PQntuples(r); row++) {
        if (strcmp(db_str(r, row, L_ORIGIN), "api") != 0 || !db_null(r, row, L_PAUSED_AT)) continue;
        if (api_entry(s, r, row, &s->api[s->napi])) s->napi++;
    }
}

static void loaded(void *arg, const db_reply *reply)
{
    scheduler *s = arg;
    s->loading = false;
    if (reply->error) { log_warn("schedules: %s", reply->error); return; }
    if (s->stopped) return;
    for (size_t i = 0; i < s->nconfig; i++) s->config[i].last = last_slot_of(reply->results[0], s->config[i].name);
    read_api(s, reply->results[1]);
    int64_t now = clock_wall_us() / 1000000;
    fire_entries(s, s->config, s->nconfig, now);
    fire_entries(s, s->api, s->napi, now);
}

/* Where every schedule stands and the API's definitions, in one round
 * trip. Only once the fires of the last tick are back: an entry a fire
 * points at is freed here. */
static void load(scheduler *s)
{
    api_entries_free(s);
    s->loading = true;
    db_job *job = db_job_new(loaded, s);
    db_job_call(job, STMT_SCHEDULE_STATE, NULL, NULL, NULL);
    const char *all[1] = { NULL };
    db_job_call(job, STMT_SCHEDULE_LIST, all, NULL, NULL);
    db_submit(s->pool, job);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    scheduler *s = arg;
    if (!s->loading && s->busy == 0 && db_pool_ready(s->pool)) load(s);
    schedule_tick(s);
}

/* A silt.conf schedule as an entry (conffile checked every field). */
static void config_entry(const silt_conf *conf, const conf_schedule *c, sched_entry *e)
{
    *e = (sched_entry){ .name = xstrdup(c->name), .timezone = xstrdup(c->timezone), .task = xstrdup(c->task),
                        .queue = xstrdup(c->queue), .args = xstrdup(c->args), .catch_up = c->catch_up, .last = -1 };
    if (cron_parse(c->cron, &e->expr, NULL, 0) < 0 || !resolve(conf, e, c->priority, c->retention_class_key))
        abort();   /* conffile checked both */
}

scheduler *scheduler_new(struct event_base *base, db_pool *pool, task_hub *hub, const silt_conf *conf)
{
    scheduler *s = xcalloc(1, sizeof *s);
    s->pool = pool;
    s->hub = hub;
    s->conf = conf;
    s->nconfig = conf->nschedules;
    s->config = xcalloc(s->nconfig + 1, sizeof *s->config);
    for (size_t i = 0; i < s->nconfig; i++) config_entry(conf, &conf->schedules[i], &s->config[i]);
    s->tick = evtimer_new(base, on_tick, s);
    struct timeval now = { 0, 0 };
    evtimer_add(s->tick, &now);
    return s;
}

void scheduler_stop(scheduler *s)
{
    if (!s) return;
    s->stopped = true;
    evtimer_del(s->tick);
}

bool scheduler_idle(const scheduler *s) { return !s || (s->busy == 0 && !s->loading); }

void scheduler_free(scheduler *s)
{
    if (!s) return;
    event_free(s->tick);
    for (size_t i = 0; i < s->nconfig; i++) entry_fini(&s->config[i]);
    free(s->config);
    api_entries_free(s);
    free(s);
}

/* ---- silt.conf's schedules in the database ---- */

#define DECLARE_SQL "SELECT taken FROM tasks.schedules_declare($1::text[], $2::text[], $3::text[], $4::text[]," \
                    " $5::text[], $6::text[], $7::integer[], $8::integer[], $9::text[])"
enum { D_NAME, D_CRON, D_ZONE, D_TASK, D_QUEUE, D_ARGS, D_CATCH_UP, D_PRIORITY, D_CLASS, D_ARRAYS };

static void declare_values(const silt_conf *conf, db_array *a)
{
    for (size_t i = 0; i < conf->nschedules; i++) {
        const conf_schedule *c = &conf->schedules[i];
        char pri[16];
        snprintf(pri, sizeof pri, "%d", c->priority);
        db_array_text(&a[D_NAME], c->name);
        db_array_text(&a[D_CRON], c->cron);
        db_array_text(&a[D_ZONE], c->timezone);
        db_array_text(&a[D_TASK], c->task);
        db_array_text(&a[D_QUEUE], c->queue);
        db_array_text(&a[D_ARGS], c->args);
        db_array_int(&a[D_CATCH_UP], c->catch_up);
        db_array_text(&a[D_PRIORITY], c->priority ? pri : NULL);
        db_array_text(&a[D_CLASS], c->retention_class_key);
    }
}

int scheduler_declare(PGconn *pg, const silt_conf *conf)
{
    db_array a[D_ARRAYS];
    const char *values[D_ARRAYS];
    for (int i = 0; i < D_ARRAYS; i++) db_array_init(&a[i]);
    declare_values(conf, a);
    for (int i = 0; i < D_ARRAYS; i++) values[i] = db_array_literal(&a[i]);
    PGresult *r = PQexecParams(pg, DECLARE_SQL, D_ARRAYS, NULL, values, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0) log_error("cannot write silt.conf's schedules: %s", PQerrorMessage(pg));
    for (int row = 0; rc == 0 && row < PQntuples(r); row++)
        log_warn("schedule %s, made through the API, is now silt.conf's: the file's definition replaces it",
                 PQgetvalue(r, row, 0));
    PQclear(r);
    for (int i = 0; i < D_ARRAYS; i++) db_array_fini(&a[i]);
    return rc;
}
