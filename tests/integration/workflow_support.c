/* workflow_support: see workflow_support.h. */
#include "workflow_support.h"
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "task_support.h"

int wf_run_round(silt_server *s, const char *q)
{
    reply r;
    rq(s, "POST", "/api/v1/workers/w/claim", sfmt("{\"queues\":[\"%s\"],\"max\":100,\"start\":true,\"waitMs\":200}", q),
       &r);
    CHECK_INT(r.status, 200);
    int n = 0;
    for (; jpath(&r, sfmt("tasks.%d", n)) >= 0; n++) {
        task_claimed c;
        keep_str(c.id, jstr(&r, sfmt("tasks.%d.id", n)));
        keep_str(c.claim, jstr(&r, sfmt("tasks.%d.claimId", n)));
        const char *name = jstr(&r, sfmt("tasks.%d.name", n));
        const char *node = sql("SELECT workflow_node FROM horsies_tasks WHERE id = '%s'", c.id);
        if (strcmp(name, "bad") == 0) CHECK_INT(task_call(s, "fail", &c, "\"errorCode\":\"BOOM\""), 200);
        else CHECK_INT(task_call(s, "complete", &c, sfmt("\"result\":{\"node\":\"%s\"}", node)), 200);
    }
    reply_fini(&r);
    return n;
}

void wf_run_until_settled(silt_server *s, const char *q, const char *wf)
{
    int64_t end = now_ms() + 20000;
    while (now_ms() < end) {
        const char *st = sql("SELECT status FROM horsies_workflows WHERE id = '%s'", wf);
        if (strcmp(st, "RUNNING") != 0 && strcmp(st, "PENDING") != 0) return;
        wf_run_round(s, q);
    }
    harness_failf(__FILE__, __LINE__, "workflow %s still running", wf);
}

const char *wf_start(silt_server *s, const char *body)
{
    reply r;
    rq(s, "POST", "/api/v1/workflows", body, &r);
    if (r.status != 201) harness_failf(__FILE__, __LINE__, "start: %d %s", r.status, r.raw.body.data);
    const char *id = sfmt("%s", jstr(&r, "id"));
    reply_fini(&r);
    return id;
}

const char *wf_node_status(const char *wf, const char *node)
{
    return sql("SELECT status FROM tasks.workflow_nodes WHERE workflow_id = '%s' AND node_id = '%s'", wf, node);
}

const char *wf_status(const char *wf)
{
    return sql("SELECT status FROM horsies_workflows WHERE id = '%s'", wf);
}

char *wf_state(void)
{
    return strdup(sql("SELECT concat_ws(E'\\n',"
                      " (SELECT string_agg(row_to_json(w)::text, E'\\n' ORDER BY id) FROM horsies_workflows w),"
                      " (SELECT string_agg(row_to_json(n)::text, E'\\n' ORDER BY workflow_id, node_id)"
                      "    FROM horsies_workflow_tasks n),"
                      " (SELECT string_agg(row_to_json(t)::text, E'\\n' ORDER BY id) FROM horsies_tasks t),"
                      " (SELECT string_agg(row_to_json(h)::text, E'\\n' ORDER BY id) FROM horsies_task_history h),"
                      " (SELECT string_agg(row_to_json(k)::text, E'\\n' ORDER BY idempotency_key)"
                      "    FROM horsies_task_idempotency k),"
                      " (SELECT string_agg(row_to_json(o)::text, E'\\n' ORDER BY task_id)"
                      "    FROM horsies_workflow_phase2_pending o))"));
}
