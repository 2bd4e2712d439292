/* send: the arrays of one tasks.send call (see send.h). */
#include "tasks/send.h"
#include <stdio.h>
#include "base/buf.h"
#include "db/array.h"

enum { S_IDS, S_NAMES, S_QUEUES, S_ARGS, S_PRIORITIES, S_RUN_AT, S_DELAYS, S_GOOD_UNTIL, S_TIMEOUTS,
       S_MAX_RETRIES, S_RETRY_DELAYS, S_BASES, S_CAPS, S_JITTERS, S_RETRY_ON, S_KEYS, S_CLASSES, S_RATE_KEYS,
       S_UNIQUE, S_COUNT };
_Static_assert(S_COUNT == TASK_SEND_ARRAYS, "one array per parameter of tasks.send");

/* An int[] literal of the fixed delays, NULL for none. */
void task_add_delays(db_array *a, const task_retry *r)
{
    if (r->ndelays == 0) { db_array_text(a, NULL); return; }
    buf lit;
    buf_init(&lit);
    buf_putc(&lit, '{');
    for (int i = 0; i < r->ndelays; i++) buf_printf(&lit, "%s%d", i ? "," : "", r->delays_ms[i]);
    buf_putc(&lit, '}');
    db_array_text(a, lit.data);
    buf_fini(&lit);
}

/* A text[] literal of the codes that retry, NULL for "every code". */
void task_add_retry_on(db_array *a, const task_retry *r)
{
    if (r->nretry_on == 0) { db_array_text(a, NULL); return; }
    db_array codes;
    db_array_init(&codes);
    for (int i = 0; i < r->nretry_on; i++) db_array_text(&codes, r->retry_on[i]);
    db_array_text(a, db_array_literal(&codes));
    db_array_fini(&codes);
}

void task_add_optional_int(db_array *a, int64_t v)
{
    if (v > 0) db_array_int(a, v);
    else db_array_text(a, NULL);
}

void task_send_add(db_array *a, const task_spec *t)
{
    char jitter[32];
    snprintf(jitter, sizeof jitter, "%.6f", t->retry.jitter);
    db_array_uuid_bytes(&a[S_IDS], t->id);
    db_array_str(&a[S_NAMES], t->name);
    db_array_str(&a[S_QUEUES], t->queue);
    db_array_str(&a[S_ARGS], t->args);
    task_add_optional_int(&a[S_PRIORITIES], t->priority);   /* 0: the queue's */
    db_array_text(&a[S_RUN_AT], t->run_at);
    db_array_int(&a[S_DELAYS], t->delay_ms);
    db_array_text(&a[S_GOOD_UNTIL], t->good_until);
    task_add_optional_int(&a[S_TIMEOUTS], t->timeout_ms);
    db_array_int(&a[S_MAX_RETRIES], t->retry.max_retries);
    task_add_delays(&a[S_RETRY_DELAYS], &t->retry);
    task_add_optional_int(&a[S_BASES], t->retry.base_ms);
    task_add_optional_int(&a[S_CAPS], t->retry.cap_ms);
    db_array_text(&a[S_JITTERS], jitter);
    task_add_retry_on(&a[S_RETRY_ON], &t->retry);
    db_array_str(&a[S_KEYS], t->idempotency_key);
    db_array_str(&a[S_CLASSES], t->retention_class);
    db_array_str(&a[S_RATE_KEYS], t->rate_key);
    db_array_str(&a[S_UNIQUE], t->unique);
}
