/* held_get: one record by id, held by ?wait until it has ended (see
 * held_get.h). The park is taken before each read, so an end committed
 * between the read and the park cannot be missed. */
#include "api/held_get.h"
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/ids.h"
#include "base/xalloc.h"

typedef struct held_call {
    httpd_req          *req;
    server             *srv;
    const held_get_ops *ops;
    char                id[IDS_UUID_TEXT];
    uint8_t             raw[16];
    int64_t             deadline_us;   /* 0: no wait */
    task_park          *park;
} held_call;

static void read_again(held_call *c);

static bool keeps_waiting(const held_call *c)
{
    return c->deadline_us > clock_mono_us() && !c->srv->draining;
}

static void on_wake(void *arg, bool timed_out)
{
    held_call *c = arg;
    (void)timed_out;
    c->park = NULL;
    read_again(c);
}

static void got(void *arg, const db_reply *reply)
{
    held_call *c = arg;
    bool missing = !reply->error && PQntuples(reply->results[0]) == 0;
    if (!reply->error && !missing && c->park && keeps_waiting(c) && !c->ops->ended(reply)) {
        task_park_arm(c->park);
        return;
    }
    if (c->park) task_park_cancel(c->park);
    if (reply->error) api_db_error(c->req, reply);
    else if (missing) httpd_error(c->req, 404, "no %s %s", c->ops->what, c->id);
    else c->ops->reply(c->req, reply);
    free(c);
}

static void read_again(held_call *c)
{
    if (keeps_waiting(c))
        c->park = task_park_done(c->srv->tasks, c->raw, (c->deadline_us - clock_mono_us()) / 1000, on_wake, c);
    const char *values[1] = { c->id };
    db_job *job = db_job_new(got, c);
    c->ops->read(job, values);
    db_submit(c->srv->pool, job);
}

void api_held_get(httpd_req *req, server *srv, const held_get_ops *ops)
{
    char id[IDS_UUID_TEXT];
    int64_t wait_ms;
    if (api_read_uuid(req, req->params[0], id, "id") < 0 ||
        api_query_int(req, "wait", 0, 0, ops->max_wait_ms, &wait_ms) < 0)
        return;
    held_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->srv = srv;
    c->ops = ops;
    memcpy(c->id, id, sizeof id);
    if (ids_uuid_parse(id, strlen(id), c->raw) < 0) abort();   /* api_read_uuid checked it */
    c->deadline_us = wait_ms > 0 ? clock_mono_us() + wait_ms * 1000 : 0;
    if (wait_ms > 0) httpd_watch_close(req);   /* waits on purpose: ?wait bounds it, not REQUEST_TIMEOUT_MS */
    read_again(c);
}
