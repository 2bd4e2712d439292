/* Integration: message traces, with exactly the request Queen's JavaScript
 * client sends from message.trace({traceName, eventType, data})
 * (client-js ConsumerManager: POST /api/v1/traces), read back per message and
 * per trace name, and living exactly as long as their message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

typedef struct popped {
    char partition_id[96];
    char txn[96];
} popped;

static popped push_and_pop(silt_server *s, const char *q, const char *txn, const char *group)
{
    push_one(s, q, "Default", txn, "{\"order\":42}");
    reply r;
    rq(s, "GET", sfmt("/api/v1/pop/queue/%s?wait=false&autoAck=true%s%s", q, group ? "&consumerGroup=" : "", group ? group : ""),
       NULL, &r);
    CHECK_INT(r.status, 200);
    popped p;
    keep_str(p.partition_id, jstr(&r, "messages.0.partitionId"));
    keep_str(p.txn, jstr(&r, "messages.0.transactionId"));
    reply_fini(&r);
    return p;
}

/* The client's body: group "__QUEUE_MODE__" outside a consumer group,
 * traceNames an array (a single name becomes one), eventType "info" unless
 * given. */
static const char *js_trace(const popped *m, const char *group, const char *names, const char *event, const char *data)
{
    return sfmt("{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"consumerGroup\":\"%s\",\"traceNames\":%s,"
                "\"eventType\":\"%s\",\"data\":%s}", m->txn, m->partition_id, group, names, event, data);
}

static void record(silt_server *s, const char *body)
{
    reply r;
    rq(s, "POST", "/api/v1/traces", body, &r);
    CHECK_INT(r.status, 201);
    CHECK(jbool(&r, "success"));
    CHECK(jstr(&r, "traceId") && strlen(jstr(&r, "traceId")) == 36);
    reply_fini(&r);
}

TEST(js_client_trace_is_recorded_and_read_back_per_message)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("traces");
    popped m = push_and_pop(&s, q, "order-42", NULL);
    record(&s, js_trace(&m, "__QUEUE_MODE__", "[\"order-flow\",\"tenant-7\"]", "info", "{\"step\":\"received\"}"));
    record(&s, js_trace(&m, "__QUEUE_MODE__", "null", "error", "{\"step\":\"failed\",\"why\":[1,2]}"));
    reply r;
    rq(&s, "GET", sfmt("/api/v1/traces/%s/order-42", m.partition_id), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "0.eventType"), "info");
    CHECK_STR(jraw(&r, "0.data"), "{\"step\":\"received\"}");   /* the client's bytes */
    CHECK_STR(jstr(&r, "0.consumerGroup"), "__QUEUE_MODE__");
    CHECK_STR(jraw(&r, "0.traceNames"), "[\"order-flow\",\"tenant-7\"]");
    CHECK_STR(jraw(&r, "0.workerId"), "null");
    CHECK(strlen(jstr(&r, "0.createdAt")) == 24 && jstr(&r, "0.createdAt")[23] == 'Z');
    CHECK_STR(jstr(&r, "1.eventType"), "error");
    CHECK_STR(jraw(&r, "1.data"), "{\"step\":\"failed\",\"why\":[1,2]}");
    CHECK_STR(jraw(&r, "1.traceNames"), "[]");
    CHECK_INT(jpath(&r, "2"), -1);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/traces/%s/no-such-txn", m.partition_id), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.raw.body.data, "[]");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(traces_are_read_per_trace_name_with_their_message)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("traces-name");
    const char *name = uniq("flow");
    popped a = push_and_pop(&s, q, "a", "workers");
    popped b = push_and_pop(&s, q, "b", "workers");
    record(&s, js_trace(&a, "workers", sfmt("[\"%s\"]", name), "info", "1"));
    record(&s, js_trace(&b, "workers", sfmt("\"%s\"", name), "info", "2"));   /* a single name */
    record(&s, js_trace(&b, "workers", "[\"other\"]", "info", "3"));
    reply r;
    rq(&s, "GET", sfmt("/api/v1/traces/by-name/%s", name), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "0.data"), "2");   /* newest first */
    CHECK_STR(jstr(&r, "0.transactionId"), "b");
    CHECK_STR(jstr(&r, "0.queueName"), q);
    CHECK_STR(jstr(&r, "0.partitionName"), "Default");
    CHECK_STR(jstr(&r, "0.partitionId"), b.partition_id);
    CHECK_STR(jraw(&r, "0.messagePayload"), "{\"order\":42}");
    CHECK_STR(jraw(&r, "1.data"), "1");
    CHECK_INT(jpath(&r, "2"), -1);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/traces/by-name/%s?limit=1&offset=1", name), NULL, &r);
    CHECK_STR(jraw(&r, "0.data"), "1");
    CHECK_INT(jpath(&r, "1"), -1);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/traces/names?limit=10", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "total"), 2);
    CHECK_STR(jstr(&r, "traceNames.0.traceName"), "other");   /* most recently used first */
    CHECK_STR(jstr(&r, "traceNames.1.traceName"), name);
    CHECK_INT(jint(&r, "traceNames.1.traceCount"), 2);
    CHECK_INT(jint(&r, "traceNames.1.messageCount"), 2);
    CHECK_INT(jint(&r, "pagination.limit"), 10);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_trace_for_a_message_that_is_not_there_is_404_and_bad_input_400)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("traces-bad");
    popped m = push_and_pop(&s, q, "m", NULL);
    popped ghost = m;
    snprintf(ghost.txn, sizeof ghost.txn, "never-pushed");
    reply r;
    rq(&s, "POST", "/api/v1/traces", js_trace(&ghost, "__QUEUE_MODE__", "null", "info", "{}"), &r);
    CHECK_INT(r.status, 404);
    CHECK_STR(jstr(&r, "error"), "message not found");
    reply_fini(&r);
    snprintf(ghost.partition_id, sizeof ghost.partition_id, "00000000-0000-7000-8000-000000000000");
    snprintf(ghost.txn, sizeof ghost.txn, "m");
    rq(&s, "POST", "/api/v1/traces", js_trace(&ghost, "__QUEUE_MODE__", "null", "info", "{}"), &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    struct { const char *body, *field; } bad[] = {
        { sfmt("{\"partitionId\":\"%s\",\"data\":{}}", m.partition_id), "transactionId" },
        { "{\"transactionId\":\"m\",\"data\":{}}", "partitionId" },
        { "{\"transactionId\":\"m\",\"partitionId\":\"nope\",\"data\":{}}", NULL },
        { sfmt("{\"transactionId\":\"m\",\"partitionId\":\"%s\"}", m.partition_id), "data" },
        { sfmt("{\"transactionId\":\"m\",\"partitionId\":\"%s\",\"data\":1,\"traceNames\":[\"\"]}", m.partition_id),
          "traceNames" },
        { sfmt("{\"transactionId\":\"m\",\"partitionId\":\"%s\",\"data\":1,\"traceNames\":7}", m.partition_id),
          "traceNames" },
        { sfmt("{\"transactionId\":\"m\",\"partitionId\":\"%s\",\"data\":1,\"eventType\":3}", m.partition_id),
          "eventType" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rq(&s, "POST", "/api/v1/traces", bad[i].body, &r);
        CHECK_INT(r.status, 400);
        if (bad[i].field) CHECK_STR(jstr(&r, "field"), bad[i].field);
        reply_fini(&r);
    }
    CHECK_STR(sql("SELECT count(*) FROM queen.message_traces"), "0");
    rq(&s, "GET", "/api/v1/traces/not-a-uuid/m", NULL, &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/traces/names?limit=0", NULL, &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

/* Retention deletes a message's segment: its traces go in the same step; a
 * message still retained keeps its own. Deleting the queue takes the rest. */
TEST(traces_live_exactly_as_long_as_their_message)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("traces-life");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":60}");
    popped old = push_and_pop(&s, q, "old", "g");
    record(&s, js_trace(&old, "g", "[\"life\"]", "info", "1"));
    sql("UPDATE queen.log_segments SET created_at = created_at - interval '1 hour'");
    sql("UPDATE queen.log_partitions SET oldest_at = oldest_at - interval '1 hour',"
        " retention_check_at = now() - interval '1 second'");
    popped young = push_and_pop(&s, q, "young", "g");
    record(&s, js_trace(&young, "g", "[\"life\"]", "info", "2"));
    reply r;
    rq(&s, "POST", "/api/v1/system/retention/run", NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql("SELECT string_agg(transaction_id, ',') FROM queen.message_traces"), "young");
    CHECK_STR(sql("SELECT count(*) FROM queen.message_trace_names"), "1");
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM queen.message_traces"), "0");
    srv_stop(&s);
}
