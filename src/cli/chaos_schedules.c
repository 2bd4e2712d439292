/* chaos_schedules: the slots of a schedule of silt.conf, through the kills
 * (see chaos.h). scripts/chaos.sh declares "[schedule.<name>]" with
 * cron "* * * * *" (a slot a minute: cron's finest) in the file both
 * servers read, so both race for every slot, and this watches where it
 * stands (GET /api/v1/schedules: lastSlot, lastFiredAt, lastTaskId, one
 * row every server shares) every 250 ms until the check.
 *
 * A task a schedule sends does not name its slot; the row does, at the
 * moment the slot is fired (tasks.schedule_fire moves last_slot and sets
 * last_task_id in the transaction that inserts the task). So each slot is
 * seen with its task while it is the last one (a minute), and the checks
 * are exact:
 * - every minute after the first slot seen, up to the last, was seen
 *   fired (a slot is missed only when no server ran the schedule for 60 s,
 *   docs/workflows.md "Catch-up", and no event here lasts that long);
 * - no slot was seen with two tasks, and the schedule's queue holds no
 *   task beyond the slots' own (read between two looks at the row that
 *   agree, so no slot fires unseen meanwhile): no slot fired twice;
 * - each of those tasks (run by the HTTP worker) COMPLETED once, run once. */
#include "cli/chaos.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SCHED_POLL_MS  250
#define SCHED_MAX      512    /* slots watched: eight hours of a run */

typedef struct sched_slot {
    int64_t        slot_ms;     /* lastSlot, Unix ms */
    bool           fired;       /* lastFiredAt at or after it: fired, not passed over */
    chaos_task_end end;         /* lastTaskId, and how it ended */
} sched_slot;

struct chaos_schedule {
    const char  *url, *name, *queue;
    int64_t      give_up_ms;
    atomic_bool  stop;
    pthread_t    th;
    http_client *http;
    sched_slot   slots[SCHED_MAX];
    int          nslots;
    uint64_t     polls, polls_failed, seen_twice;
    long         queue_tasks, extra_tasks;   /* at the check; -1 unread */
};

/* "2026-12-06T09:12:00.000Z" (the one format silt writes) as Unix ms; -1. */
static int64_t iso_ms(const char *s)
{
    struct tm tm = { 0 };
    int ms = 0;
    if (sscanf(s, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec, &ms) != 7)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* Notes where the schedule stands; false when it could not be read. */
static bool look(chaos_schedule *s)
{
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    s->polls++;
    bool ok = chaos_call(s->http, "GET", "/api/v1/schedules", NULL, &r, &d) == 0 && d.ntokens;
    int list = ok ? json_get(&d, 0, "schedules") : -1;
    for (uint32_t k = 0; list >= 0 && k < d.tokens[list].count; k++) {
        int it = json_at(&d, (uint32_t)list, k);
        char name[64], slot[40], fired_at[40], task[IDS_UUID_TEXT];
        chaos_str(&d, it, "name", name, sizeof name);
        if (strcmp(name, s->name)) continue;
        chaos_str(&d, it, "lastSlot", slot, sizeof slot);
        chaos_str(&d, it, "lastFiredAt", fired_at, sizeof fired_at);
        chaos_str(&d, it, "lastTaskId", task, sizeof task);
        int64_t at = iso_ms(slot);
        if (at < 0) break;   /* no server has run it yet */
        sched_slot *last = s->nslots ? &s->slots[s->nslots - 1] : NULL;
        if (last && last->slot_ms == at) {
            if (strcmp(last->end.id, task)) s->seen_twice++;
        } else if (s->nslots < SCHED_MAX) {
            sched_slot *n = &s->slots[s->nslots++];
            n->slot_ms = at;
            n->fired = fired_at[0] && iso_ms(fired_at) >= at;
            snprintf(n->end.id, sizeof n->end.id, "%s", n->fired ? task : "");
        }
    }
    if (!ok) s->polls_failed++;
    json_doc_fini(&d);
    http_response_fini(&r);
    return ok;
}

static void *watch_main(void *arg)
{
    chaos_schedule *s = arg;
    while (!s->stop && !chaos_past(s->give_up_ms)) {
        look(s);
        chaos_sleep_ms(SCHED_POLL_MS);
    }
    return NULL;
}

chaos_schedule *chaos_schedule_watch(const char *url, const char *name, const char *queue, int64_t t_give_up_ms)
{
    chaos_schedule *s = xcalloc(1, sizeof *s);
    s->url = url;
    s->name = name;
    s->queue = queue;
    s->give_up_ms = t_give_up_ms;
    s->http = chaos_client(url);
    s->queue_tasks = s->extra_tasks = -1;
    if (pthread_create(&s->th, NULL, watch_main, s) != 0) abort();
    return s;
}

void chaos_schedule_free(chaos_schedule *s)
{
    if (!s) return;
    http_client_free(s->http);
    free(s);
}

/* ---- checking ---- */

static bool is_slot_task(const chaos_schedule *s, const char *id)
{
    for (int k = 0; k < s->nslots; k++)
        if (s->slots[k].fired && !strcmp(s->slots[k].end.id, id)) return true;
    return false;
}

/* The queue's tasks, read between two looks at the same last slot. */
static void read_queue(chaos_schedule *s)
{
    while (!chaos_past(s->give_up_ms)) {
        if (!look(s)) { chaos_sleep_ms(CHAOS_BACKOFF_MS); continue; }
        int before = s->nslots;
        char (*ids)[IDS_UUID_TEXT] = NULL;
        long n = 0;
        int rc = chaos_task_ids(s->http, s->queue, s->give_up_ms, &ids, &n);
        bool same = rc == 0 && look(s) && s->nslots == before;
        if (same) {
            s->queue_tasks = n;
            s->extra_tasks = 0;
            for (long t = 0; t < n; t++) s->extra_tasks += !is_slot_task(s, ids[t]);
        }
        free(ids);
        if (same) return;
    }
}

void chaos_schedule_await(chaos_schedule *s)
{
    s->stop = true;
    pthread_join(s->th, NULL);
    read_queue(s);
    for (int k = 0; k < s->nslots; k++)
        if (s->slots[k].fired) chaos_task_await(s->http, &s->slots[k].end, s->give_up_ms);
}

/* Minutes after the first slot seen, up to the last, not seen fired. */
static long unfired(const chaos_schedule *s, long *due)
{
    *due = 0;
    if (s->nslots == 0) return 0;
    long missing = 0;
    int64_t first = s->slots[0].slot_ms, last = s->slots[s->nslots - 1].slot_ms;
    for (int64_t m = (first / 60000 + 1) * 60000; m <= last; m += 60000) {
        (*due)++;
        bool seen = false;
        for (int k = 0; k < s->nslots && !seen; k++) seen = s->slots[k].slot_ms == m && s->slots[k].fired;
        missing += !seen;
    }
    return missing;
}

bool chaos_schedule_report(const chaos_schedule *s, const chaos_runs *runs)
{
    chaos_task_figures f;
    memset(&f, 0, sizeof f);
    for (int k = 0; k < s->nslots; k++)
        if (s->slots[k].fired) chaos_task_tally(&s->slots[k].end, chaos_runs_of(runs, s->slots[k].end.id), &f);
    long due, missing = unfired(s, &due);
    printf("  schedule %s: %" PRIu64 " looks (%" PRIu64 " failed), %d slots seen, %ld due after the first, %ld tasks"
           " in %s\n", s->name, s->polls, s->polls_failed, s->nslots, due, s->queue_tasks, s->queue);
    printf("  schedule slots due, not seen fired:     %ld\n", missing);
    printf("  schedule slots seen with two tasks:     %" PRIu64 "\n", s->seen_twice);
    printf("  schedule tasks that are no slot's:      %ld\n", s->extra_tasks);
    chaos_task_figures_print("slots", &f);
    return s->nslots > 0 && missing == 0 && s->seen_twice == 0 && s->extra_tasks == 0 && chaos_task_figures_ok(&f);
}
