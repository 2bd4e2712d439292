/* task_support: see task_support.h. */
#include "task_support.h"
#include <string.h>
#include "harness.h"

const char *task_send(silt_server *s, const char *task_json)
{
    reply r;
    rq(s, "POST", "/api/v1/tasks", task_json, &r);
    if (r.status != 201) harness_failf(__FILE__, __LINE__, "send %s: %d %s", task_json, r.status, r.raw.body.data);
    const char *id = sfmt("%s", jstr(&r, "id"));
    reply_fini(&r);
    return id;
}

bool task_claim_one(silt_server *s, const char *worker, const char *queue, task_claimed *c)
{
    return task_claim_waiting(s, worker, queue, 0, c);
}

bool task_claim_waiting(silt_server *s, const char *worker, const char *queue, int wait_ms, task_claimed *c)
{
    reply r;
    const char *wait = wait_ms > 0 ? sfmt(",\"waitMs\":%d", wait_ms) : "";
    rq(s, "POST", sfmt("/api/v1/workers/%s/claim", worker), sfmt("{\"queues\":[\"%s\"],\"max\":1%s}", queue, wait), &r);
    if (r.status != 200) harness_failf(__FILE__, __LINE__, "claim: %d %s", r.status, r.raw.body.data);
    bool got = jpath(&r, "tasks.0") >= 0;
    if (got) {
        keep_str(c->id, jstr(&r, "tasks.0.id"));
        keep_str(c->claim, jstr(&r, "tasks.0.claimId"));
        c->attempt = (int)jint(&r, "tasks.0.attempt");
    }
    reply_fini(&r);
    return got;
}

int task_call(silt_server *s, const char *what, const task_claimed *c, const char *extra)
{
    reply r;
    rq(s, "POST", sfmt("/api/v1/tasks/%s/%s", c->id, what),
       sfmt("{\"claimId\":\"%s\"%s%s}", c->claim, extra ? "," : "", extra ? extra : ""), &r);
    int status = r.status;
    reply_fini(&r);
    return status;
}

const char *task_heartbeat(silt_server *s, const char *worker, const task_claimed *c)
{
    reply r;
    rq(s, "POST", sfmt("/api/v1/workers/%s/heartbeat", worker),
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\"}]}", c->id, c->claim), &r);
    if (r.status != 200) harness_failf(__FILE__, __LINE__, "heartbeat: %d %s", r.status, r.raw.body.data);
    const char *state = sfmt("%s", jstr(&r, "tasks.0.state"));
    reply_fini(&r);
    return state;
}

int task_rerun(silt_server *s, const char *id, const char *body, reply *r)
{
    rq(s, "POST", sfmt("/api/v1/tasks/%s/rerun", id), body, r);
    return r->status;
}

void task_started_with_wait(silt_server *worker, silt_server *waiter, task_claimed *c, bg_req *w)
{
    task_send(worker, "{\"name\":\"t\",\"queue\":\"waited\"}");
    if (!task_claim_one(worker, "w", "waited", c)) harness_fail(__FILE__, __LINE__, "nothing to claim");
    task_call(worker, "start", c, NULL);
    int64_t parked_before = srv_metric(waiter, "silt_task_waits_parked");
    bg_start(w, waiter, "GET", sfmt("/api/v1/tasks/%s?wait=20000", c->id), NULL);
    srv_await_metric(waiter, "silt_task_waits_parked", parked_before + 1, 5000);
}

void task_wait_woken_across(silt_server *waiter, silt_server *worker)
{
    task_claimed c;
    bg_req w;
    task_started_with_wait(worker, waiter, &c, &w);
    task_call(worker, "complete", &c, "\"result\":7");
    int64_t completed = now_ms();
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(w.ended_ms - completed < 3000);
}
