/* pop: GET /api/v1/pop/queue/:queue[/partition/:partition]. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include "api/api.h"
#include "base/emit.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include "db/result.h"

#define MAX_TIMEOUT_MS 3600000
#define MAX_POP_PARTITIONS 100

typedef struct pop_call {
    httpd_req   *req;
    server      *srv;
    pop_request *pop;
} pop_call;

/* Payloads at least this large are sent from the decoded segment itself
 * (an evbuffer reference) rather than copied into the reply. */
#define POP_REFERENCE_BYTES (64 * 1024)

/* A popped request stays alive while the reply still points into it: one
 * reference per payload the body points at, and the handler's own. Atomic:
 * the last payload may be sent, and its reference dropped, by another HTTP
 * loop's thread. */
typedef struct pop_hold {
    pop_request *pop;
    atomic_int   refs;
} pop_hold;

static void hold_release(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    pop_hold *h = arg;
    if (atomic_fetch_sub(&h->refs, 1) > 1) return;
    pop_request_free(h->pop);
    free(h);
}

/* The payload, verbatim: copied when small; when large, what was written so
 * far goes to the body and the payload follows it as a reference. */
static void put_payload(emit *e, struct evbuffer *body, pop_hold *hold, const pop_msg *m)
{
    if (m->payload_len < POP_REFERENCE_BYTES) { emit_raw(e, m->payload, m->payload_len); return; }
    emit_raw(e, "", 0);   /* the value's place, for the emitter's commas */
    evbuffer_add(body, e->out->data, e->out->len);
    buf_reset(e->out);
    atomic_fetch_add(&hold->refs, 1);
    if (evbuffer_add_reference(body, m->payload, m->payload_len, hold_release, hold) < 0) abort();
}

/* What every message of a claimed partition repeats (its queue, partition,
 * lease and group), rendered once per partition as emit_members takes it. */
static buf *part_members(const pop_request *p)
{
    buf *members = xcalloc(p->nparts, sizeof *members);
    for (size_t i = 0; i < p->nparts; i++) {
        buf object;
        buf_init(&object);
        emit e;
        emit_init(&e, &object);
        emit_object(&e);
        emit_key(&e, "queue"); emit_str(&e, p->parts[i].queue);
        emit_key(&e, "partitionId"); emit_str(&e, p->parts[i].id);
        emit_key(&e, "partition"); emit_str(&e, p->parts[i].name);
        emit_key(&e, "leaseId"); emit_str(&e, p->lease_id);
        emit_key(&e, "consumerGroup"); emit_str(&e, p->group);
        emit_end(&e);
        buf_init(&members[i]);
        buf_append(&members[i], object.data + 1, object.len - 2);
        buf_fini(&object);
    }
    return members;
}

static void put_message(emit *e, struct evbuffer *body, pop_hold *hold, const buf *members, const pop_msg *m)
{
    emit_object(e);
    emit_key(e, "id"); emit_uuid(e, m->message_id);
    emit_key(e, "transactionId"); emit_strn(e, m->txn, m->txn_len);
    emit_key(e, "traceId");
    if (m->has_trace) emit_uuid(e, m->trace_id); else emit_null(e);
    emit_key(e, "data"); put_payload(e, body, hold, m);
    emit_key(e, "createdAt"); emit_time(e, m->created_us);
    emit_members(e, members[m->part].data, members[m->part].len);
    emit_key(e, "producerSub");   /* stamped at push from the token, never from a body */
    if (m->sub) emit_strn(e, m->sub, m->sub_len); else emit_null(e);
    emit_key(e, "offset"); emit_int(e, m->offset);
    emit_end(e);
}

/* Room for the whole reply but large payloads, so that it is not copied
 * again at every doubling of its buffer: each message's fixed part (its
 * keys, ids, time and offset, ~210 bytes), its partition's members, its
 * transactionId and its payload (issue 33: the reallocations and their
 * copies were a tenth of the server's samples under pop+ack). */
static size_t reply_estimate(const pop_request *p)
{
    size_t n = 512;
    for (size_t i = 0; i < p->nmsgs; i++) {
        const pop_msg *m = &p->msgs[i];
        n += 224 + strlen(p->parts[m->part].queue) + strlen(p->parts[m->part].name) + strlen(p->group)
             + 2 * m->txn_len + (m->payload_len < POP_REFERENCE_BYTES ? m->payload_len : 0) + m->sub_len;
    }
    return n;
}

/* The envelope names the first claimed partition; every message names its
 * own. The reply takes the popped request over: it is freed when the last
 * payload referenced from it has been sent. */
static void reply_messages(httpd_req *req, pop_request *p)
{
    pop_hold *hold = xmalloc(sizeof *hold);
    struct evbuffer *body = evbuffer_new();
    if (!body) abort();
    hold->pop = p;
    atomic_init(&hold->refs, 1);
    pop_request_free_timers(p);
    buf out;
    buf_init(&out);
    buf_reserve(&out, reply_estimate(p));
    emit e;
    emit_init(&e, &out);
    emit_object(&e);
    emit_key(&e, "success"); emit_bool(&e, true);
    emit_key(&e, "queue"); emit_str(&e, p->parts[0].queue);
    emit_key(&e, "partition"); emit_str(&e, p->parts[0].name);
    emit_key(&e, "partitionId"); emit_str(&e, p->parts[0].id);
    emit_key(&e, "leaseId"); emit_str(&e, p->lease_id);
    emit_key(&e, "consumerGroup"); emit_str(&e, p->group);
    emit_key(&e, "partitionsClaimed"); emit_int(&e, (int64_t)p->nparts);
    emit_key(&e, "messages");
    emit_array(&e);
    buf *members = part_members(p);
    for (size_t i = 0; i < p->nmsgs; i++) put_message(&e, body, hold, members, &p->msgs[i]);
    for (size_t i = 0; i < p->nparts; i++) buf_fini(&members[i]);
    free(members);
    emit_end(&e);
    emit_end(&e);
    evbuffer_add(body, out.data, out.len);
    buf_fini(&out);
    httpd_reply_chain(req, 200, body);
    hold_release(NULL, 0, hold);
}

static void client_gone(httpd_req *req, void *arg)
{
    (void)req;
    pop_call *c = arg;
    popper_cancel(c->srv->pop, c->pop);
}

static void pop_done(pop_request *p, void *arg)
{
    pop_call *c = arg;
    c->req->on_gone = NULL;
    if (p->error && p->subscription && strncmp(p->sqlstate, "22", 2) == 0)
        httpd_error_field(c->req, 400, "field", "subscriptionFrom", "invalid subscriptionFrom: %s", p->error);
    else if (p->error) api_engine_error(c->req, p->error, p->sqlstate, p->unavailable);
    else if (p->nmsgs == 0) httpd_reply(c->req, 204, NULL, 0);
    else { c->srv->stats.popped += p->nmsgs; reply_messages(c->req, p); p = NULL; }
    pop_request_free(p);
    free(c);
}

/* subscriptionMode: where a group's first pop in a partition starts. Queen's
 * JavaScript client says from_beginning for all. Any other word is refused
 * rather than read as all: a typo must not replay a whole queue. */
static const struct { const char *mode, *start; } subscription_modes[] = {
    { "all", "all" }, { "from_beginning", "all" }, { "new", "now" }, { "new-only", "now" },
};

/* subscriptionMode/subscriptionFrom into the SQL form: NULL, "all", "now" or a timestamp. */
static int read_subscription(httpd_req *req, char **out)
{
    const char *mode = httpd_query(req, "subscriptionMode");
    const char *from = httpd_query(req, "subscriptionFrom");
    const char *start = NULL;
    *out = NULL;
    for (size_t i = 0; mode && i < sizeof subscription_modes / sizeof subscription_modes[0]; i++)
        if (strcmp(mode, subscription_modes[i].mode) == 0) start = subscription_modes[i].start;
    if (mode && !start) {
        httpd_error_field(req, 400, "field", "subscriptionMode",
                          "subscriptionMode must be all, from_beginning, new or new-only");
        return -1;
    }
    if (from && *from && strcmp(from, "now") != 0 && api_check_time(req, "subscriptionFrom", from) < 0) return -1;
    if (from && *from) *out = xstrdup(from);
    else if (start) *out = xstrdup(start);
    return 0;
}

static int read_options(httpd_req *req, server *srv, pop_request *p)
{
    int64_t batch, timeout, partitions;
    if (api_query_int(req, "batch", 1, 1, srv->cfg.max_pop_batch, &batch) < 0 ||
        api_query_int(req, "timeout", 30000, 0, MAX_TIMEOUT_MS, &timeout) < 0 ||
        api_query_int(req, "partitions", 1, 1, MAX_POP_PARTITIONS, &partitions) < 0 ||
        api_query_bool(req, "wait", false, &p->wait) < 0 ||
        api_query_bool(req, "autoAck", false, &p->auto_ack) < 0 ||
        read_subscription(req, &p->subscription) < 0)
        return -1;
    p->batch = (int)batch;
    p->partitions = (int)partitions;
    p->timeout_ms = (int)timeout;
    const char *group = httpd_query(req, "consumerGroup");
    p->group = xstrdup(group && *group ? group : QUEUE_MODE);
    return 0;
}

static void submit(httpd_req *req, server *srv, pop_request *p)
{
    if (read_options(req, srv, p) < 0) { pop_request_free(p); return; }
    pop_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->srv = srv;
    c->pop = p;
    p->done = pop_done;
    p->arg = c;
    req->on_gone = client_gone;
    req->gone_arg = c;
    if (p->wait) httpd_watch_close(req);
    popper_submit(srv->pop, p);
}

void api_pop(httpd_req *req, server *srv)
{
    pop_request *p = xcalloc(1, sizeof *p);
    p->queue = xstrdup(req->params[0]);
    p->partition = req->nparams > 1 ? xstrdup(req->params[1]) : NULL;
    submit(req, srv, p);
}

/* GET /api/v1/pop?namespace=&task=: any queue carrying those tags. */
void api_pop_discover(httpd_req *req, server *srv)
{
    const char *ns = httpd_query(req, "namespace"), *task = httpd_query(req, "task");
    if ((!ns || !*ns) && (!task || !*task)) {
        httpd_error(req, 400, "a discovery pop needs namespace or task");
        return;
    }
    pop_request *p = xcalloc(1, sizeof *p);
    p->namespace_tag = ns && *ns ? xstrdup(ns) : NULL;
    p->task_tag = task && *task ? xstrdup(task) : NULL;
    submit(req, srv, p);
}
