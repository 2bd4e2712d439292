/* abandon: work whose client has given up is not done.
 *
 * A request whose client hangs up, or which the request timeout answers
 * (httpd sets req->left for both), has nobody left to tell what happened:
 * an ack, a seek or a delete done now would change state the client never
 * learns of and will likely ask for again. Work the request has handed the
 * pool and the pool has not yet sent is therefore dropped (its job ends with
 * reply->abandoned, the handler's error reply is dropped as for any gone
 * client, and silt_db_jobs_abandoned_total counts it). Work already sent to
 * PostgreSQL runs to its end: it cannot be recalled safely (see pool.h),
 * and the request's sent flag says so, so that the request timeout answers
 * it 504, outcome unknown, and never 503, not written (net/httpd.c).
 *
 * Handlers tie their first job to their request with api_submit; the
 * server hears of every leaving client in one place (httpd_on_leave ->
 * api_client_left) and has the pool drop what is tied to one. Engines with
 * requests of their own (ack, transaction) carry the flag in that request.
 * Pushes are fused with other clients' and have their own check before a
 * flush (streams/push.c); task sends and attempt ends hand their flag to the
 * task gather (gather_add), which cuts a gone request out of its batch.
 * Each of them sets the sent flag as the work leaves for PostgreSQL. */
#include "api/api.h"
#include <stdlib.h>
#include "base/xalloc.h"

void api_submit(httpd_req *req, server *srv, db_job *job)
{
    db_job_abandon_when(job, &req->left);   /* req lives until the reply done sends */
    db_job_note_sent(job, &req->sent);      /* so the request timeout says 504 once it may commit */
    db_submit(srv->pool, job);
}

api_call *api_call_new(httpd_req *req, server *srv)
{
    api_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->srv = srv;
    return c;
}

int api_call_end(void *arg, const db_reply *reply, httpd_req **req, server **srv)
{
    api_call *c = arg;
    *req = c->req;
    *srv = c->srv;
    free(c);
    if (!reply->error) return 0;
    api_db_error(*req, reply);
    return -1;
}

api_named_call *api_named_call_new(httpd_req *req, server *srv, char **name)
{
    api_named_call *c = xcalloc(1, sizeof *c);
    *c = (api_named_call){ req, srv, *name };
    *name = NULL;
    return c;
}

void api_named_call_free(api_named_call *c)
{
    free(c->name);
    free(c);
}

void api_submit_stmt(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, db_done_fn done,
                     void *arg)
{
    db_job *job = db_job_new(done, arg);
    db_job_call(job, stmt, values, NULL, NULL);
    api_submit(req, srv, job);
}

void api_client_left(httpd_req *req, void *arg)
{
    (void)req;
    server *srv = arg;
    db_pool_reap(srv->pool);
}
