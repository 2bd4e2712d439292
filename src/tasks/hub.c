/* hub: notifications, parked callers and the recovery timer (see hub.h). */
#include "tasks/hub.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/clock.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/names.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/listener.h"
#include "db/result.h"
#include "tasks/send.h"
#include "tasks/tasks.h"

#define TASK_CHANNEL "silt_tasks"
/* Batches of one kind in flight at once: while two are with the database,
 * the next gathers. */
#define TASK_GATHER_IN_FLIGHT 2
/* Outbox rows (crashed workflow nodes) applied per recovery round. */
#define TASK_OUTBOX_BATCH "500"
/* PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
#define NOTIFY_PAYLOAD_MAX 7999
/* Presence: every server says "hello" on the channel this often; one that
 * has listened for PRESENCE_LAPSE_MS without hearing another's is alone. */
#define PRESENCE_MS 1000
#define PRESENCE_LAPSE_MS 3500

typedef enum park_kind { PARK_DONE, PARK_SENT } park_kind;

struct task_park {
    task_hub     *hub;
    task_park    *prev, *next;
    park_kind     kind;
    uint8_t       id[16];          /* PARK_DONE */
    char        **queues;          /* PARK_SENT */
    size_t        nqueues;
    int64_t       deadline_us;     /* monotonic */
    bool          woken, armed;
    struct event *timer;
    task_wake_fn  fn;
    void         *arg;
};

struct task_hub {
    struct event_base *base;
    db_pool           *pool;
    const silt_conf   *conf;
    db_listener       *listener;
    task_park         *parks;
    int                parked[2];   /* by park_kind */
    struct event      *recovery;
    bool               recovering, stopped;
    bool               blind;       /* the last recovery pass failed: it could not see */
    gather            *sends, *finishes, *claims;
    char               origin[IDS_UUID_TEXT];   /* this server, in its announcements */
    db_array           outbox;                  /* announcements not yet notified */
    buf                ended;                   /* "<origin> done:<id>,<id>..." not yet in the outbox */
    struct event      *notify_soon;             /* the outbox leaves once this turn of the loop ends */
    bool               notifying;
    struct event      *presence;                /* says hello every PRESENCE_MS */
    int64_t            listening_since_us;      /* the listener's last (re)connect, monotonic; 0: never */
    int64_t            others_heard_us;         /* another server's last hello */
    int64_t            own_heard_us;            /* our own last hello, back through the listener */
    bool               told_nobody;             /* an announcement was dropped, alone, since the last hello heard */
    task_log_wake_fn   log_wake;                /* the other servers' log commits */
    void              *log_arg;
    task_outbox_fn     outbox_wake;             /* pushes made from SQL */
    void              *outbox_arg;
    char             **paused;                  /* queues paused, as last heard (see task_hub_announce_paused) */
    size_t             npaused;
    uint64_t           pause_news;              /* pause announcements heard, to know a reload is stale */
    uint64_t           pause_news_at_load;      /* pause_news when the load in flight was sent */
    bool               loading_paused;
};

/* ---- parks ---- */

static void unlink_park(task_park *p)
{
    task_hub *h = p->hub;
    if (p->prev) p->prev->next = p->next; else h->parks = p->next;
    if (p->next) p->next->prev = p->prev;
    h->parked[p->kind]--;
}

static void free_park(task_park *p)
{
    event_free(p->timer);
    for (size_t i = 0; i < p->nqueues; i++) free(p->queues[i]);
    free(p->queues);
    free(p);
}

static void fire(task_park *p, bool timed_out)
{
    unlink_park(p);
    task_wake_fn fn = p->fn;
    void *arg = p->arg;
    free_park(p);
    fn(arg, timed_out);
}

static void on_park_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    task_park *p = arg;
    fire(p, !p->woken);
}

static task_park *new_park(task_hub *h, park_kind kind, int64_t wait_ms, task_wake_fn fn, void *arg)
{
    task_park *p = xcalloc(1, sizeof *p);
    p->hub = h;
    p->kind = kind;
    p->deadline_us = clock_mono_us() + (wait_ms > 0 ? wait_ms : 0) * 1000;
    p->fn = fn;
    p->arg = arg;
    p->timer = evtimer_new(h->base, on_park_timer, p);
    p->next = h->parks;
    if (h->parks) h->parks->prev = p;
    h->parks = p;
    h->parked[kind]++;
    if (h->stopped) p->woken = true;   /* draining: nothing will come */
    return p;
}

task_park *task_park_done(task_hub *h, const uint8_t id[16], int64_t wait_ms, task_wake_fn fn, void *arg)
{
    task_park *p = new_park(h, PARK_DONE, wait_ms < TASK_WAIT_RECHECK_MS ? wait_ms : TASK_WAIT_RECHECK_MS, fn, arg);
    memcpy(p->id, id, 16);
    return p;
}

task_park *task_park_sent(task_hub *h, char *const *queues, size_t nqueues, int64_t wait_ms,
                          task_wake_fn fn, void *arg)
{
    task_park *p = new_park(h, PARK_SENT, wait_ms < TASK_RECHECK_MS ? wait_ms : TASK_RECHECK_MS, fn, arg);
    p->queues = xcalloc(nqueues ? nqueues : 1, sizeof *p->queues);
    for (size_t i = 0; i < nqueues; i++) p->queues[i] = xstrdup(queues[i]);
    p->nqueues = nqueues;
    return p;
}

bool task_park_woken(const task_park *p) { return p->woken; }

/* From the event loop, never inside the caller's own call. */
static void fire_soon(task_park *p)
{
    struct timeval now = { 0, 0 };
    evtimer_add(p->timer, &now);
}

void task_park_shorten(task_park *p, int64_t ms)
{
    int64_t at = clock_mono_us() + (ms > 0 ? ms : 0) * 1000;
    if (at < p->deadline_us) p->deadline_us = at;
}

void task_park_arm(task_park *p)
{
    p->armed = true;
    if (p->woken) { fire_soon(p); return; }
    int64_t left = p->deadline_us - clock_mono_us();
    if (left < 0) left = 0;
    struct timeval tv = { (time_t)(left / 1000000), (suseconds_t)(left % 1000000) };
    evtimer_add(p->timer, &tv);
}

void task_park_cancel(task_park *p)
{
    unlink_park(p);
    free_park(p);
}

int task_hub_parked_claims(const task_hub *h) { return h->parked[PARK_SENT]; }
int task_hub_parked_waits(const task_hub *h) { return h->parked[PARK_DONE]; }

/* An announcement read once, however many parks it is held against:
 * everything (NULL), a queue that got work, or a task that ended. */
typedef struct announcement {
    bool        all;
    park_kind   kind;
    const char *queue;     /* PARK_SENT */
    uint8_t     id[16];    /* PARK_DONE */
} announcement;

static bool read_announcement(const char *payload, announcement *a)
{
    memset(a, 0, sizeof *a);
    if (!payload) { a->all = true; return true; }
    a->kind = PARK_SENT;
    a->queue = payload + 5;
    return strncmp(payload, "sent:", 5) == 0;
}

static bool park_matches(const task_park *p, const announcement *a)
{
    if (a->all) return true;
    if (p->kind != a->kind) return false;
    if (p->kind == PARK_DONE) return memcmp(a->id, p->id, 16) == 0;
    for (size_t i = 0; i < p->nqueues; i++)
        if (strcmp(p->queues[i], a->queue) == 0) return true;
    return false;
}

/* ---- paused queues ---- */

static bool queue_paused(const task_hub *h, const char *queue)
{
    for (size_t i = 0; i < h->npaused; i++)
        if (strcmp(h->paused[i], queue) == 0) return true;
    return false;
}

static void set_paused(task_hub *h, const char *queue, bool paused)
{
    h->pause_news++;
    for (size_t i = 0; i < h->npaused; i++) {
        if (strcmp(h->paused[i], queue) != 0) continue;
        if (paused) return;
        free(h->paused[i]);
        h->paused[i] = h->paused[--h->npaused];
        return;
    }
    if (!paused) return;
    h->paused = xrealloc(h->paused, (h->npaused + 1) * sizeof *h->paused);
    h->paused[h->npaused++] = xstrdup(queue);
}

static void clear_paused(task_hub *h)
{
    for (size_t i = 0; i < h->npaused; i++) free(h->paused[i]);
    free(h->paused);
    h->paused = NULL;
    h->npaused = 0;
}

static void load_paused(task_hub *h);

static void paused_loaded(void *arg, const db_reply *reply)
{
    task_hub *h = arg;
    h->loading_paused = false;
    if (reply->error) { log_warn("paused task queues: %s", reply->error); return; }
    if (h->pause_news_at_load != h->pause_news) { load_paused(h); return; }   /* news came meanwhile: read again */
    const PGresult *r = reply->results[0];
    clear_paused(h);
    for (int row = 0; row < PQntuples(r); row++) set_paused(h, db_str(r, row, 0), true);
    h->pause_news = h->pause_news_at_load;
}

/* What is paused, read whole: once the channel is heard (at start, and
 * after a reconnect, which may have missed announcements). */
static void load_paused(task_hub *h)
{
    if (h->loading_paused || h->stopped) return;
    h->loading_paused = true;
    db_job *job = db_job_new(paused_loaded, h);
    h->pause_news_at_load = h->pause_news;
    db_job_call(job, STMT_TASK_PAUSED, NULL, NULL, NULL);
    db_submit(h->pool, job);
}

static void wake_matching(task_hub *h, const announcement *a)
{
    for (task_park *p = h->parks; p; p = p->next) {
        if (p->woken || !park_matches(p, a)) continue;
        p->woken = true;
        if (p->armed) fire_soon(p);
    }
}

/* "done:" is followed by one task id or more, separated by commas. */
static void wake_done(task_hub *h, const char *ids)
{
    if (h->parked[PARK_DONE] == 0) return;   /* nobody here waits for an end */
    for (const char *s = ids;; ) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        announcement a = { .kind = PARK_DONE };
        if (ids_uuid_parse(s, n, a.id) == 0) wake_matching(h, &a);
        if (!comma) return;
        s = comma + 1;
    }
}

static void wake(task_hub *h, const char *payload)
{
    if (payload && strncmp(payload, "done:", 5) == 0) { wake_done(h, payload + 5); return; }
    if (payload && strncmp(payload, "paused:", 7) == 0) { set_paused(h, payload + 7, true); return; }
    char resumed[8 + NAMES_MAX_BYTES];
    if (payload && strncmp(payload, "resumed:", 8) == 0) {   /* claimable again: its claimers look */
        set_paused(h, payload + 8, false);
        snprintf(resumed, sizeof resumed, "sent:%s", payload + 8);
        payload = resumed;
    }
    announcement a;
    if (!read_announcement(payload, &a)) return;
    if (!a.all && queue_paused(h, a.queue)) return;   /* nothing of it is claimable */
    wake_matching(h, &a);
}

#define LOG_WAKE_MAX_PARTITIONS 64   /* more in one announcement: the whole queue wakes */

/* "log:<queue>[\t<partition>...]" handed to the log's listener. */
static void wake_log(task_hub *h, const char *what)
{
    char *copy = xstrdup(what + 4);
    const char *parts[LOG_WAKE_MAX_PARTITIONS];
    size_t n = 0;
    char *tab = strchr(copy, '\t');
    while (tab && n < LOG_WAKE_MAX_PARTITIONS) {
        *tab = '\0';
        parts[n++] = tab + 1;
        tab = strchr(tab + 1, '\t');
    }
    h->log_wake(h->log_arg, copy, NULL, n ? parts : NULL, n);
    free(copy);
}

/* Announcements may have been missed: everything parked here looks again,
 * and the paused queues are read whole. */
static void look_again(task_hub *h)
{
    h->pause_news++;   /* a read of them already in flight may predate what was missed: it reads again */
    load_paused(h);
    wake(h, NULL);
    if (h->log_wake) h->log_wake(h->log_arg, NULL, NULL, NULL, 0);
    if (h->outbox_wake) h->outbox_wake(h->outbox_arg);
}

static void say_hello(task_hub *h);
static void heard_hello(task_hub *h);

/* Another server's announcement, "<origin> <what>"; ours came first-hand.
 * NULL: the listener (re)connected. */
static void on_notify(void *arg, const char *payload)
{
    task_hub *h = arg;
    if (!payload) {
        h->listening_since_us = clock_mono_us();
        say_hello(h);
        look_again(h);
        return;
    }
    const char *space = strchr(payload, ' ');
    const char *what = space ? space + 1 : payload;
    if (space && (size_t)(space - payload) == strlen(h->origin) && strncmp(payload, h->origin, strlen(h->origin)) == 0) {
        if (strcmp(what, "hello") == 0) h->own_heard_us = clock_mono_us();   /* the listener hears */
        return;
    }
    if (strcmp(what, "hello") == 0) { heard_hello(h); return; }
    if (strcmp(what, "lookagain") == 0) { look_again(h); return; }
    if (strncmp(what, "log:", 4) == 0) { if (h->log_wake) wake_log(h, what); return; }
    if (strcmp(what, "outbox") == 0) { if (h->outbox_wake) h->outbox_wake(h->outbox_arg); return; }
    if (strncmp(what, "lease:", 6) == 0) { if (h->log_wake) h->log_wake(h->log_arg, NULL, what + 6, NULL, 0); return; }
    wake(h, what);
}

/* ---- announcements ---- */

static void notify_outbox(task_hub *h);

static void notified(void *arg, const db_reply *reply)
{
    task_hub *h = arg;
    h->notifying = false;
    if (reply->error) {
        log_warn("task announcements to other servers: %s", reply->error);
        h->told_nobody = true;   /* the next hello heard is answered with lookagain */
    }
    notify_outbox(h);
}

/* The ended tasks gathered so far become one announcement of the outbox. */
static void close_ended(task_hub *h)
{
    if (h->ended.len == 0) return;
    buf_putc(&h->ended, '\0');
    db_array_str(&h->outbox, h->ended.data);
    buf_reset(&h->ended);
}

/* One transaction carries every announcement gathered so far. */
static void notify_outbox(task_hub *h)
{
    close_ended(h);
    if (h->notifying || h->outbox.n == 0) return;
    h->notifying = true;
    int length, format;
    const char *values[1] = { db_array_param(&h->outbox, &length, &format) };
    db_job *job = db_job_new(notified, h);
    db_job_call(job, STMT_TASK_NOTIFY, values, &length, &format);
    db_submit(h->pool, job);
    db_array_fini(&h->outbox);
    db_array_init(&h->outbox);
}

static void on_notify_soon(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    notify_outbox(arg);
}

/* Whatever is announced in this turn of the event loop (a batch's ends, a
 * send's queues) leaves in one notification, sent once the turn ends;
 * while one is with the database, the next gathers. */
static void notify_later(task_hub *h)
{
    static const struct timeval now = { 0, 0 };
    if (!h->notifying && !evtimer_pending(h->notify_soon, NULL)) evtimer_add(h->notify_soon, &now);
}

/* ---- presence ----
 *
 * A NOTIFY is a transaction of its own, with a commit to flush: for a busy
 * server alone on its database, a fifth of its transactions told nobody
 * anything. So every server says "hello" on the channel when its listener
 * connects and every PRESENCE_MS; one that has listened for
 * PRESENCE_LAPSE_MS without hearing another's sends its announcements to
 * nobody. A hello heard after an announcement was dropped (or a batch of
 * them failed) is answered with "lookagain": whatever the newcomer parked
 * since it began to listen looks again, as after a reconnect, so nothing it
 * was owed is lost; what it parks later hears every announcement, this
 * server no longer alone. Silence proves nothing unless the listener is
 * known to hear: its own hello must have come back within the lapse (a
 * connection that died without a word still looks ready). */

bool task_hub_alone(const task_hub *h)
{
    int64_t now = clock_mono_us(), lapse = (int64_t)PRESENCE_LAPSE_MS * 1000;
    return db_listener_ready(h->listener) && h->listening_since_us != 0 && now - h->listening_since_us >= lapse &&
           now - h->own_heard_us < lapse && now - h->others_heard_us >= lapse;
}

/* payload ("<origin> <what>") joins the next notification */
static void to_outbox(task_hub *h, const char *payload)
{
    db_array_str(&h->outbox, payload);   /* binary: none parsed as a literal */
    notify_later(h);
}

/* what leaves for every other server, alone or not */
static void tell_all(task_hub *h, const char *what)
{
    char payload[IDS_UUID_TEXT + 16 + NAMES_MAX_BYTES];
    snprintf(payload, sizeof payload, "%s %s", h->origin, what);
    to_outbox(h, payload);
}

static void say_hello(task_hub *h)
{
    if (!h->stopped) tell_all(h, "hello");
}

static void heard_hello(task_hub *h)
{
    h->others_heard_us = clock_mono_us();
    if (!h->told_nobody) return;
    h->told_nobody = false;
    tell_all(h, "lookagain");
}

static void on_presence(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    say_hello(arg);
}

/* False, and nothing is sent, when nobody would hear it. */
static bool anyone_to_tell(task_hub *h)
{
    if (!task_hub_alone(h)) return true;
    h->told_nobody = true;
    return false;
}

/* payload leaves for the other servers with the next notification. */
static void tell_others(task_hub *h, const char *payload)
{
    if (anyone_to_tell(h)) to_outbox(h, payload);
}

/* Ended tasks travel as few announcements as fit, "done:<id>,<id>...":
 * one notification for each task would cost the database (an entry of its
 * queue, a message to every listener) more than the task's own end. */
static void tell_others_ended(task_hub *h, const char *id)
{
    if (!anyone_to_tell(h)) return;
    if (h->ended.len + 1 + strlen(id) > NOTIFY_PAYLOAD_MAX) close_ended(h);
    if (h->ended.len == 0) buf_printf(&h->ended, "%s done:%s", h->origin, id);
    else { buf_putc(&h->ended, ','); buf_puts(&h->ended, id); }
    notify_later(h);
}

void task_hub_announce(task_hub *h, const char *what)
{
    wake(h, what);
    if (anyone_to_tell(h)) tell_all(h, what);
}

/* Partitions are left out (the whole queue wakes) when they would not fit
 * a notification (8,000 bytes) or a name holds the separator. */
void task_hub_announce_log(task_hub *h, const char *queue, const char *const *partitions, size_t n)
{
    if (strchr(queue, '\t')) return;   /* cannot be told apart: the others find it on their timers */
    buf payload;
    buf_init(&payload);
    buf_printf(&payload, "%s log:%s", h->origin, queue);
    size_t queue_only = payload.len;
    for (size_t i = 0; partitions && i < n; i++) {
        if (i == LOG_WAKE_MAX_PARTITIONS || strchr(partitions[i], '\t') || payload.len + strlen(partitions[i]) > 7000) {
            payload.len = queue_only;
            payload.data[queue_only] = '\0';
            break;
        }
        buf_printf(&payload, "\t%s", partitions[i]);
    }
    tell_others(h, payload.data);
    buf_fini(&payload);
}

void task_hub_on_outbox(task_hub *h, task_outbox_fn fn, void *arg)
{
    h->outbox_wake = fn;
    h->outbox_arg = arg;
}

bool task_hub_listening(const task_hub *h) { return db_listener_ready(h->listener); }

void task_hub_announce_lease(task_hub *h, const char *group)
{
    buf payload;
    buf_init(&payload);
    buf_printf(&payload, "%s lease:%s", h->origin, group);
    tell_others(h, payload.data);
    buf_fini(&payload);
}

void task_hub_on_log(task_hub *h, task_log_wake_fn fn, void *arg)
{
    h->log_wake = fn;
    h->log_arg = arg;
}

void task_hub_announce_sent(task_hub *h, const char *queue)
{
    char what[8 + NAMES_MAX_BYTES];
    snprintf(what, sizeof what, "sent:%s", queue);
    task_hub_announce(h, what);
}

/* A task of queue ended: its waiters hear it, and when the queue is capped,
 * its claimers too: a slot just came free. */
void task_hub_announce_end(task_hub *h, const uint8_t id[16], const char *queue)
{
    task_hub_announce_done(h, id);
    bool known;
    const conf_queue *q = queue ? task_hub_queue(h, queue, &known) : NULL;
    if (q && q->max_concurrency > 0) task_hub_announce_sent(h, queue);
}

void task_hub_announce_paused(task_hub *h, const char *queue, bool paused)
{
    char what[16 + NAMES_MAX_BYTES];
    snprintf(what, sizeof what, "%s:%s", paused ? "paused" : "resumed", queue);
    task_hub_announce(h, what);
}

void task_hub_announce_done(task_hub *h, const uint8_t id[16])
{
    char what[8 + IDS_UUID_TEXT];
    memcpy(what, "done:", 5);
    ids_uuid_format(id, what + 5);
    wake(h, what);
    tell_others_ended(h, what + 5);
}

/* ---- recovery ---- */

static void schedule_recovery(task_hub *h)
{
    if (h->stopped) return;
    int ms = h->conf->recovery.check_interval_ms;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(h->recovery, &tv);
}

/* The outbox's evidence, applied after the recovery that wrote it, in a
 * transaction of its own (its failure leaves the evidence for next time). */
static void outbox_applied(void *arg, const db_reply *reply)
{
    task_hub *h = arg;
    h->recovering = false;
    if (reply->error) log_warn("workflow outbox: %s", reply->error);
    else if (PQntuples(reply->results[0]) > 0)
        log_info("workflow outbox: %d crashed nodes advanced", PQntuples(reply->results[0]));
    schedule_recovery(h);
}

static void apply_outbox(task_hub *h)
{
    const char *values[1] = { TASK_OUTBOX_BATCH };
    db_submit_stmt(h->pool, STMT_WF_OUTBOX, values, outbox_applied, h);
}

static void recovered(void *arg, const db_reply *reply)
{
    task_hub *h = arg;
    if (reply->error) log_warn("task recovery: %s", reply->error);
    /* blind: the database could not be reached (not a deadlock or a
     * timeout of the pass itself, which say nothing of the heartbeats) */
    h->blind = reply->error && (reply->unavailable || strncmp(reply->sqlstate, "08", 2) == 0 ||
                                strncmp(reply->sqlstate, "57P0", 4) == 0);
    const PGresult *r = reply->error ? NULL : reply->results[0];
    for (int row = 0; r && row < PQntuples(r); row++) {
        char id[IDS_UUID_TEXT];
        const char *status = db_str(r, row, 2);
        ids_uuid_format(db_uuid(r, row, 0), id);
        log_info("task recovery: %s %s, now %s", id, db_str(r, row, 1), status);
        if (strcmp(status, "PENDING") == 0) task_hub_announce_sent(h, db_str(r, row, 3));
        else task_hub_announce_end(h, db_uuid(r, row, 0), db_str(r, row, 3));
    }
    apply_outbox(h);
}

static void on_recovery(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    task_hub *h = arg;
    if (h->recovering || h->stopped) return;
    h->recovering = true;
    char claimed[16], running[16], check[16];
    snprintf(claimed, sizeof claimed, "%d", h->conf->recovery.claimed_stale_after_ms);
    snprintf(running, sizeof running, "%d", h->conf->recovery.running_stale_after_ms);
    snprintf(check, sizeof check, "%d", h->conf->recovery.check_interval_ms);
    /* after a failed pass, heartbeats missing meanwhile may not have been
     * missed by their workers: recovery's clock of sight restarts */
    const char *values[4] = { claimed, running, check, h->blind ? "true" : "false" };
    db_submit_stmt(h->pool, STMT_TASK_RECOVER, values, recovered, h);
}

/* ---- the hub ---- */

task_hub *task_hub_new(struct event_base *base, db_pool *pool, const char *conninfo, const silt_conf *conf)
{
    task_hub *h = xcalloc(1, sizeof *h);
    h->base = base;
    h->pool = pool;
    h->conf = conf;
    uint8_t origin[16];
    ids_uuid7(origin);
    ids_uuid_format(origin, h->origin);
    db_array_init(&h->outbox);
    buf_init(&h->ended);
    h->notify_soon = evtimer_new(base, on_notify_soon, h);
    h->presence = event_new(base, -1, EV_PERSIST, on_presence, h);
    struct timeval every = { PRESENCE_MS / 1000, (PRESENCE_MS % 1000) * 1000 };
    event_add(h->presence, &every);
    h->listener = db_listener_new(base, conninfo, TASK_CHANNEL, on_notify, h);
    h->recovery = evtimer_new(base, on_recovery, h);
    h->sends = gather_new(pool, STMT_TASK_SEND, TASK_SEND_ARRAYS, TASK_GATHER_IN_FLIGHT);
    gather_nulls_as_null(h->sends);   /* most sends set no option: tasks.enqueue reads NULL for "none" */
    h->finishes = gather_new(pool, STMT_TASK_FINISH_MANY, TASK_FINISH_ARRAYS, TASK_GATHER_IN_FLIGHT);
    h->claims = gather_new(pool, STMT_TASK_CLAIM_MANY, TASK_CLAIM_ARRAYS, 1);   /* one taker at a time */
    schedule_recovery(h);
    return h;
}

const conf_recovery *task_hub_recovery(const task_hub *h) { return &h->conf->recovery; }

const conf_queue *task_hub_queue(const task_hub *h, const char *name, bool *known)
{
    const conf_queue *q = conffile_queue(h->conf, name);
    *known = q || h->conf->nqueues == 0;
    return q;
}

gather *task_hub_sends(task_hub *h) { return h->sends; }
gather *task_hub_finishes(task_hub *h) { return h->finishes; }
gather *task_hub_claims(task_hub *h) { return h->claims; }

bool task_hub_idle(const task_hub *h)
{
    return !h->recovering && !h->notifying && h->outbox.n == 0 && h->ended.len == 0 && !h->loading_paused &&
           !h->parks && gather_idle(h->sends) && gather_idle(h->finishes) && gather_idle(h->claims);
}

void task_hub_drain(task_hub *h)
{
    h->stopped = true;
    evtimer_del(h->recovery);
    event_del(h->presence);
    wake(h, NULL);
}

void task_hub_free(task_hub *h)
{
    if (!h) return;
    while (h->parks) task_park_cancel(h->parks);
    db_listener_free(h->listener);
    event_free(h->recovery);
    gather_free(h->sends);
    gather_free(h->finishes);
    gather_free(h->claims);
    event_free(h->notify_soon);
    event_free(h->presence);
    db_array_fini(&h->outbox);
    buf_fini(&h->ended);
    clear_paused(h);
    free(h);
}
