/* schedule: slots fired once across servers (see schedule.h). */
#include "tasks/schedule.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "base/cron.h"
#include "base/retention_class.h"

typedef struct sched_entry {
    const conf_schedule *conf;
    cron_expr            expr;
    int64_t              last;        /* the last slot taken (Unix s); -1: not known yet */
    int                  priority;    /* the send's, resolved */
    const char          *retention_class;   /* the tasks', resolved from this server's silt.conf */
    bool                 busy;        /* a fire is with the database */
} sched_entry;

struct scheduler {
    db_pool      *pool;
    task_hub     *hub;
    sched_entry  *entries;
    size_t        n;
    struct event *tick;
    bool          loaded, loading, stopped;
    int           busy;
};

static void schedule_tick(scheduler *s)
{
    if (s->stopped || s->n == 0) return;
    struct timeval tv = { SCHEDULE_TICK_MS / 1000, (SCHEDULE_TICK_MS % 1000) * 1000 };
    evtimer_add(s->tick, &tv);
}

typedef struct fire_call {
    scheduler   *s;
    sched_entry *e;
    int64_t      upto;    /* the last slot of the job */
} fire_call;

/* ---- the state every server shares ---- */

static sched_entry *entry_named(scheduler *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->entries[i].conf->name, name) == 0) return &s->entries[i];
    return NULL;
}

static void add_fire(db_job *job, const sched_entry *e, int64_t slot, bool fire);
static void fired(void *arg, const db_reply *reply);

/* A schedule the database has never seen starts from now, recorded so that
 * every server (and this one after a restart) counts from the same point. */
static void record_start(scheduler *s, sched_entry *e, int64_t now)
{
    fire_call *c = xcalloc(1, sizeof *c);
    c->s = s;
    c->e = e;
    c->upto = now;
    db_job *job = db_job_new(fired, c);
    add_fire(job, e, now, false);
    e->busy = true;
    s->busy++;
    db_submit(s->pool, job);
}

static void loaded(void *arg, const db_reply *reply)
{
    scheduler *s = arg;
    s->loading = false;
    if (reply->error) { log_warn("schedules: %s", reply->error); return; }
    const PGresult *r = reply->results[0];
    int64_t now = clock_wall_us() / 1000000;
    for (int row = 0; row < PQntuples(r); row++) {
        sched_entry *e = entry_named(s, db_str(r, row, 0));
        if (e) e->last = db_time_us(r, row, 1) / 1000000;
    }
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i].last < 0) record_start(s, &s->entries[i], now);
    s->loaded = true;
}

static void load(scheduler *s)
{
    s->loading = true;
    db_submit_stmt(s->pool, STMT_SCHEDULE_STATE, NULL, loaded, s);
}

/* ---- firing ---- */


static void fired(void *arg, const db_reply *reply)
{
    fire_call *c = arg;
    c->e->busy = false;
    c->s->busy--;
    if (reply->error) {
        log_warn("schedule %s: %s", c->e->conf->name, reply->error);
    } else {
        c->e->last = c->upto;   /* taken here or by another server: either way past */
        for (int i = 0; i < reply->ncalls; i++)
            if (!db_null(reply->results[i], 0, 0)) {
                log_info("schedule %s fired", c->e->conf->name);
                task_hub_announce_sent(c->s->hub, c->e->conf->queue);
            }
    }
    free(c);
}

static void add_fire(db_job *job, const sched_entry *e, int64_t slot, bool fire)
{
    char when[40], pri[16];
    db_time_param(slot * 1000000, when);
    snprintf(pri, sizeof pri, "%d", e->priority);
    const conf_schedule *c = e->conf;
    const char *values[8] = { c->name, when, fire ? "true" : "false", c->task, c->queue, c->args, pri,
                              e->retention_class };
    db_job_call(job, STMT_SCHEDULE_FIRE, values, NULL, NULL);
}

/* The most recent due slots of e in (last, now], at most cap of them, in
 * order; *far when the walk gave up before now (a long downtime). */
static size_t due_slots(const sched_entry *e, int64_t now, int64_t *slots, size_t cap, bool *far)
{
    size_t n = 0;
    int64_t t = e->last;
    *far = true;
    for (int walked = 0; walked < SCHEDULE_MAX_WALK; walked++) {
        t = cron_next(&e->expr, e->conf->timezone, t);
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
    int keep = e->conf->catch_up + 2;   /* the missed ones owed, a slot on time, and one before them */
    int64_t *slots = xcalloc((size_t)keep, sizeof *slots);
    bool far;
    size_t n = due_slots(e, now, slots, (size_t)keep, &far);
    if (far) {   /* more missed slots than a tick walks: pass over them all, up to the grace */
        slots[0] = now - SCHEDULE_GRACE_S - 1;
        n = 1;
    }
    if (n == 0) { free(slots); return; }
    db_job *job = NULL;
    fire_call *c = xcalloc(1, sizeof *c);
    c->s = s;
    c->e = e;
    c->upto = slots[n - 1];
    if (far) {
        job = db_job_new(fired, c);
        add_fire(job, e, slots[0], false);
        e->busy = true;
        s->busy++;
        db_submit(s->pool, job);
        free(slots);
        return;
    }
    size_t missed = 0;
    while (missed < n && now - slots[missed] > SCHEDULE_GRACE_S) missed++;
    size_t owed = missed < (size_t)e->conf->catch_up ? missed : (size_t)e->conf->catch_up;
    job = db_job_new(fired, c);
    if (missed > owed) add_fire(job, e, slots[missed - owed - 1], false);   /* passed over up to here */
    for (size_t i = missed - owed; i < n; i++) add_fire(job, e, slots[i], true);
    e->busy = true;
    s->busy++;
    db_submit(s->pool, job);
    free(slots);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    scheduler *s = arg;
    if (!s->loaded) { if (!s->loading && db_pool_ready(s->pool)) load(s); }
    else {
        int64_t now = clock_wall_us() / 1000000;
        for (size_t i = 0; i < s->n; i++)
            if (!s->entries[i].busy) fire_due(s, &s->entries[i], now);
    }
    schedule_tick(s);
}

scheduler *scheduler_new(struct event_base *base, db_pool *pool, task_hub *hub, const silt_conf *conf)
{
    scheduler *s = xcalloc(1, sizeof *s);
    s->pool = pool;
    s->hub = hub;
    s->n = conf->nschedules;
    s->entries = xcalloc(s->n ? s->n : 1, sizeof *s->entries);
    for (size_t i = 0; i < s->n; i++) {
        sched_entry *e = &s->entries[i];
        e->conf = &conf->schedules[i];
        e->last = -1;
        char err[128];
        if (cron_parse(e->conf->cron, &e->expr, err, sizeof err) < 0) abort();   /* conffile checked it */
        const conf_queue *q = conffile_queue(conf, e->conf->queue);
        e->priority = e->conf->priority ? e->conf->priority : q ? q->priority : 100;
        /* a fire is an enqueue like any other: its key, else its queue's mapping, else standard_30d */
        retention_ask ask = e->conf->retention_class_key ? RETENTION_ASK_KEY : RETENTION_ASK_NOTHING;
        e->retention_class = retention_class_for(&conf->retention, e->conf->queue, ask, e->conf->retention_class_key,
                                                 err, sizeof err);
        if (!e->retention_class) abort();   /* conffile checked it */
    }
    s->tick = evtimer_new(base, on_tick, s);
    struct timeval now = { 0, 0 };
    if (s->n) evtimer_add(s->tick, &now);
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
    free(s->entries);
    free(s);
}
