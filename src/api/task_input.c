/* task_input: reads one task to send from a request body (POST
 * /api/v1/tasks), every field checked before anything is written. Each
 * problem is a 400 naming the field, prefixed with where the task is
 * ("tasks[2]: ") when it is one of a batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/task_input.h"
#include "base/buf.h"
#include "base/iso_time.h"
#include "base/names.h"
#include "base/xalloc.h"
#include "base/class_key.h"
#include "base/retention_class.h"

#define TASK_MAX_DELAY_BEFORE_RUN_MS (366LL * 86400000LL)   /* delayMs: a year at most */
#define TASK_KEY_MAX 200

static int bad(httpd_req *req, const char *where, const char *field, const char *msg)
{
    httpd_error_field(req, 400, "field", field, "%s%s %s", where, field, msg);
    return -1;
}

/* A task's or its queue's name: required, within the one name limit. */
static int read_name(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key, char **out)
{
    if (api_member_string(req, d, obj, where, key, out) < 0) return -1;
    if (!*out) return bad(req, where, key, "is required");
    return api_check_name(req, where, key, *out);
}

static int read_idempotency_key(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, char **out)
{
    if (api_member_string(req, d, obj, where, "idempotencyKey", out) < 0) return -1;
    if (*out && strlen(*out) > TASK_KEY_MAX) {
        char msg[64];
        snprintf(msg, sizeof msg, "must be at most %d characters", TASK_KEY_MAX);
        return bad(req, where, "idempotencyKey", msg);
    }
    return 0;
}

/* rateKey: absent or null (none), or a non-empty string within the one
 * name limit. Accepted on any queue: counted only where the queue sets
 * rate_limit_per_key, and kept with the task either way. */
static int read_rate_key(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, char **out)
{
    if (api_member_string(req, d, obj, where, "rateKey", out) < 0) return -1;
    return *out ? api_check_name(req, where, "rateKey", *out) : 0;
}

static int read_queue(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where,
                      const task_form *form, task_spec *t)
{
    if (read_name(req, d, obj, where, "queue", &t->queue) < 0) return -1;
    if (form->rules_in_sql) { t->priority = 0; return 0; }
    bool known;
    const conf_queue *q = task_hub_queue(srv->tasks, t->queue, &known);
    if (!known) {
        httpd_error_field(req, 400, "field", "queue", "%squeue \"%s\" is not declared in the configuration file",
                          where, t->queue);
        return -1;
    }
    if (q) t->priority = q->priority;
    return 0;
}

/* retentionClassKey: absent (the queue's mapping, else standard_30d), null
 * (kept forever) or a key this server's silt.conf knows; resolved now, at
 * enqueue, for the task's queue. */
static int read_class(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where,
                      const task_form *form, task_spec *t)
{
    int v = json_get(d, obj, "retentionClassKey");
    retention_ask ask = v < 0 ? RETENTION_ASK_NOTHING
                      : d->tokens[v].type == JSON_NULL ? RETENTION_ASK_NONE : RETENTION_ASK_KEY;
    if (ask == RETENTION_ASK_KEY && d->tokens[v].type != JSON_STRING)
        return bad(req, where, "retentionClassKey", "must be a retention class key or null");
    char *key = ask == RETENTION_ASK_KEY ? json_str_dup(d, (uint32_t)v) : NULL;
    if (form->rules_in_sql) {   /* the key as named: tasks.enqueue knows the classes */
        t->retention_key = key;
        t->retention_class = ask == RETENTION_ASK_NONE ? CLASS_KEY_FOREVER : key;
        return 0;
    }
    char err[512];
    t->retention_class = retention_class_for(&srv->conf.retention, t->queue, ask, key, err, sizeof err);
    free(key);
    if (!t->retention_class) { httpd_error_field(req, 400, "field", "retentionClassKey", "%s%s", where, err); return -1; }
    return 0;
}

static int check_time(httpd_req *req, const char *where, const char *field, const char *text)
{
    if (!text || iso_time_valid(text)) return 0;
    return bad(req, where, field, "must be an ISO 8601 timestamp, e.g. 2026-12-01T07:04:30.501Z");
}

static int read_when(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, task_spec *t)
{
    if (api_member_int(req, d, obj, where, "delayMs", 0, TASK_MAX_DELAY_BEFORE_RUN_MS, &t->delay_ms) < 0 ||
        api_member_string(req, d, obj, where, "runAt", &t->run_at) < 0 ||
        api_member_string(req, d, obj, where, "goodUntil", &t->good_until) < 0 ||
        check_time(req, where, "runAt", t->run_at) < 0 || check_time(req, where, "goodUntil", t->good_until) < 0)
        return -1;
    if (t->run_at && t->delay_ms > 0) return bad(req, where, "runAt", "and delayMs cannot both be given");
    return 0;
}

static int read_int_field(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key,
                          int64_t min, int64_t max, int *out)
{
    int64_t v = *out;
    if (api_member_int(req, d, obj, where, key, min, max, &v) < 0) return -1;
    *out = (int)v;
    return 0;
}

/* A retry member that is a list: absent or null, or an array of 1 to max
 * elements, each read by add (which answers 400 itself). */
typedef struct retry_list {
    const char *key;
    const char *field;   /* its name in messages: "retry.delaysMs" */
    uint32_t    max;
    const char *shape;   /* "an array of 1 to 20 integers" */
    int       (*add)(httpd_req *req, const json_doc *d, uint32_t e, const char *where, task_retry *r);
} retry_list;

static int read_retry_list(httpd_req *req, const json_doc *d, uint32_t obj, const char *where,
                           const retry_list *list, task_retry *r)
{
    int v = json_get(d, obj, list->key);
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    const json_token *t = &d->tokens[v];
    if (t->type != JSON_ARRAY || t->count == 0 || t->count > list->max) {
        httpd_error_field(req, 400, "field", list->field, "%s%s must be %s", where, list->field, list->shape);
        return -1;
    }
    for (uint32_t i = 0; i < t->count; i++)
        if (list->add(req, d, (uint32_t)json_at(d, (uint32_t)v, i), where, r) < 0) return -1;
    return 0;
}

static int add_delay(httpd_req *req, const json_doc *d, uint32_t e, const char *where, task_retry *r)
{
    int64_t ms;
    if (json_int64(d, e, &ms) < 0 || ms < 0 || ms > TASK_MAX_DELAY_MS)
        return bad(req, where, "retry.delaysMs", "must hold integers from 0 to 86400000");
    r->delays_ms[r->ndelays++] = (int)ms;
    return 0;
}

static int add_retry_code(httpd_req *req, const json_doc *d, uint32_t e, const char *where, task_retry *r)
{
    if (d->tokens[e].type != JSON_STRING || d->tokens[e].end - d->tokens[e].start <= 2 ||
        d->tokens[e].end - d->tokens[e].start > TASK_CODE_MAX + 2)
        return bad(req, where, "retry.retryOn", "must hold non-empty strings of at most 64 characters");
    r->retry_on[r->nretry_on++] = json_str_dup(d, e);
    return 0;
}

static const retry_list delays_list = {
    "delaysMs", "retry.delaysMs", TASK_MAX_DELAYS, "an array of 1 to 20 integers", add_delay,
};
static const retry_list retry_on_list = {
    "retryOn", "retry.retryOn", TASK_MAX_RETRY_CODES, "an array of 1 to 16 error codes", add_retry_code,
};

static int read_jitter(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, task_retry *r)
{
    int v = json_get(d, obj, "jitter");
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    size_t n;
    const char *text = json_span(d, (uint32_t)v, &n);
    char tmp[64];
    if (d->tokens[v].type != JSON_NUMBER || n >= sizeof tmp) return bad(req, where, "retry.jitter", "must be a number from 0 to 1");
    memcpy(tmp, text, n);
    tmp[n] = '\0';
    double j = strtod(tmp, NULL);
    if (!(j >= 0 && j <= 1)) return bad(req, where, "retry.jitter", "must be a number from 0 to 1");
    r->jitter = j;
    return 0;
}

/* Every member of obj is one of known (NULL-terminated): a misspelt field
 * ("max_retries") would otherwise leave its default in force without a word. */
int api_only_known(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *what,
                   const char *const *known)
{
    uint32_t k = obj + 1;
    for (uint32_t i = 0; i < d->tokens[obj].count; i++, k = d->tokens[k + 1].next) {
        bool ok = false;
        for (size_t j = 0; known[j] && !ok; j++) ok = json_str_eq(d, k, known[j]);
        if (ok) continue;
        char *name = json_str_dup(d, k);
        httpd_error_field(req, 400, "field", name, "%sunknown field \"%s\" in %s", where, name, what);
        free(name);
        return -1;
    }
    return 0;
}

static const char *const task_fields[] = {
    "name", "queue", "args", "priority", "delayMs", "runAt", "goodUntil", "timeoutMs", "retry", "idempotencyKey",
    "retentionClassKey", "rateKey", "unique", NULL,
};
static const char *const retry_fields[] = { "maxRetries", "delaysMs", "backoff", "jitter", "retryOn", NULL };
static const char *const backoff_fields[] = { "baseMs", "capMs", NULL };

/* retry: {"maxRetries", "delaysMs": [...] | "backoff": {"baseMs", "capMs"}, "jitter", "retryOn": [...]} */
int api_task_retry(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, task_retry *r)
{
    int v = json_get(d, obj, "retry");
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    if (d->tokens[v].type != JSON_OBJECT) return bad(req, where, "retry", "must be an object");
    uint32_t o = (uint32_t)v;
    if (api_only_known(req, d, o, where, "retry", retry_fields) < 0) return -1;
    if (read_int_field(req, d, o, where, "maxRetries", 0, TASK_MAX_RETRIES, &r->max_retries) < 0 ||
        read_retry_list(req, d, o, where, &delays_list, r) < 0 ||
        read_retry_list(req, d, o, where, &retry_on_list, r) < 0 ||
        read_jitter(req, d, o, where, r) < 0)
        return -1;
    int b = json_get(d, o, "backoff");
    if (b >= 0 && d->tokens[b].type != JSON_NULL) {
        if (d->tokens[b].type != JSON_OBJECT) return bad(req, where, "retry.backoff", "must be an object");
        if (api_only_known(req, d, (uint32_t)b, where, "retry.backoff", backoff_fields) < 0) return -1;
        if (r->ndelays) return bad(req, where, "retry.backoff", "and retry.delaysMs cannot both be given");
        r->cap_ms = TASK_MAX_DELAY_MS;
        if (read_int_field(req, d, (uint32_t)b, where, "baseMs", 1, TASK_MAX_DELAY_MS, &r->base_ms) < 0 ||
            read_int_field(req, d, (uint32_t)b, where, "capMs", 1, TASK_MAX_DELAY_MS, &r->cap_ms) < 0)
            return -1;
        if (r->base_ms == 0) return bad(req, where, "retry.backoff.baseMs", "is required");
        if (r->cap_ms < r->base_ms) return bad(req, where, "retry.backoff.capMs", "must be at least baseMs");
    }
    return 0;
}

/* unique: passed on as its JSON text (absent or null: none); tasks.enqueue
 * checks it (docs/tasks.md, "Uniqueness"), so the SQL API's sends obey
 * the same rules. */
static void read_unique(const json_doc *d, uint32_t obj, task_spec *t)
{
    int v = json_get(d, obj, "unique");
    if (v >= 0 && d->tokens[v].type != JSON_NULL) t->unique = api_member_json(d, obj, "unique");
}

const task_form TASK_FORM_SEND = { "a task", "name", task_fields, true };

int api_task_spec(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where, task_spec *t)
{
    return api_task_read(req, srv, d, obj, where, &TASK_FORM_SEND, t);
}

int api_task_read(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where,
                  const task_form *form, task_spec *t)
{
    if (d->tokens[obj].type != JSON_OBJECT) {
        httpd_error(req, 400, "%s%s must be an object", where, form->what + 2);   /* "a task" -> "task" */
        return -1;
    }
    if (api_only_known(req, d, obj, where, form->what, form->fields) < 0) return -1;
    ids_uuid7(t->id);
    t->args = api_member_json(d, obj, "args");   /* any JSON value, stored verbatim */
    read_unique(d, obj, t);   /* a form without the field has none: api_only_known refused it */
    if (read_name(req, d, obj, where, form->name_key, &t->name) < 0 ||
        read_queue(req, srv, d, obj, where, form, t) < 0 ||
        read_int_field(req, d, obj, where, "priority", TASK_PRIORITY_MIN, TASK_PRIORITY_MAX, &t->priority) < 0 ||
        read_when(req, d, obj, where, t) < 0 ||
        read_int_field(req, d, obj, where, "timeoutMs", 1, TASK_MAX_TIMEOUT_MS, &t->timeout_ms) < 0 ||
        api_task_retry(req, d, obj, where, &t->retry) < 0 ||
        read_idempotency_key(req, d, obj, where, &t->idempotency_key) < 0 ||
        read_rate_key(req, d, obj, where, &t->rate_key) < 0 ||
        read_class(req, srv, d, obj, where, form, t) < 0)
        return -1;
    return 0;
}

/* ---- what workers send ---- */

#define TASK_MAX_QUEUES 64   /* queues one worker names */

int api_task_worker_id(httpd_req *req, const char *id)
{
    if (strlen(id) > TASK_WORKER_ID_MAX) {
        httpd_error_field(req, 400, "field", "workerId", "workerId must be at most %d characters", TASK_WORKER_ID_MAX);
        return -1;
    }
    return 0;
}
/* Claim order between queues: the declared priority (1 first), then name. */
static int by_priority(const void *a, const void *b, void *hub)
{
    const char *qa = *(char *const *)a, *qb = *(char *const *)b;
    bool known;
    const conf_queue *pa = task_hub_queue(hub, qa, &known), *pb = task_hub_queue(hub, qb, &known);
    int ra = pa ? pa->priority : TASK_PRIORITY_DEFAULT, rb = pb ? pb->priority : TASK_PRIORITY_DEFAULT;
    return ra != rb ? (ra < rb ? -1 : 1) : strcmp(qa, qb);
}

/* queues: a non-empty array of queue names, each declared (when the
 * configuration declares any); in claim order, with their caps. */
int api_task_queues(httpd_req *req, server *srv, const json_doc *d, db_array *names, db_array *caps,
                       char ***list, size_t *n)
{
    int v = json_get(d, 0, "queues");
    if (v < 0 || d->tokens[v].type != JSON_ARRAY || d->tokens[v].count == 0 || d->tokens[v].count > TASK_MAX_QUEUES) {
        httpd_error_field(req, 400, "field", "queues", "queues must be an array of 1 to %d queue names", TASK_MAX_QUEUES);
        return -1;
    }
    *n = d->tokens[v].count;
    *list = xcalloc(*n, sizeof **list);
    for (uint32_t i = 0; i < *n; i++) {
        int e = json_at(d, (uint32_t)v, i);
        bool known;
        if (d->tokens[e].type != JSON_STRING || d->tokens[e].end - d->tokens[e].start <= 2) {
            httpd_error_field(req, 400, "field", "queues", "queues[%u] must be a non-empty string", i);
            return -1;
        }
        (*list)[i] = json_str_dup(d, (uint32_t)e);
        if (strlen((*list)[i]) > NAMES_MAX_BYTES) {
            char what[32];
            snprintf(what, sizeof what, "queues[%u]", i);
            return api_name_too_long(req, "queues", "", what);
        }
        task_hub_queue(srv->tasks, (*list)[i], &known);
        if (!known) {
            httpd_error_field(req, 400, "field", "queues", "queues[%u]: queue \"%s\" is not declared in the"
                              " configuration file", i, (*list)[i]);
            return -1;
        }
    }
    qsort_r(*list, *n, sizeof **list, by_priority, srv->tasks);
    for (size_t i = 0; i < *n; i++) {
        bool known;
        const conf_queue *q = task_hub_queue(srv->tasks, (*list)[i], &known);
        if (names) db_array_text(names, (*list)[i]);
        if (caps) db_array_int(caps, q ? q->max_concurrency : 0);
    }
    return 0;
}

char *api_task_rates(server *srv, const char *const *queues, size_t n, bool always)
{
    buf lit;
    buf_init(&lit);
    buf_putc(&lit, '{');
    bool any = always;
    for (size_t i = 0; i < n; i++) {
        bool known;
        const conf_queue *q = task_hub_queue(srv->tasks, queues[i], &known);
        rate_limit none = { 0, 0 }, r = q ? q->rate : none, k = q ? q->rate_per_key : none;
        any = any || r.limit > 0 || k.limit > 0;
        buf_printf(&lit, "%s{%d,%d,%d,%d}", i ? "," : "", r.limit, r.period_ms, k.limit, k.period_ms);
    }
    buf_putc(&lit, '}');
    char *out = any ? xstrdup(lit.data) : NULL;
    buf_fini(&lit);
    return out;
}

void api_task_queues_free(char **list, size_t n)
{
    for (size_t i = 0; list && i < n; i++) free(list[i]);
    free(list);
}
