/* Integration: maintenance mode (POST/GET /api/v1/system/maintenance), as
 * Queen's JavaScript client drives it (client-js test-v2/maintenance.js):
 * pushes are held durably and answered "buffered", delivered in order when
 * the mode is turned off, and the mode is one for every server on the
 * database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

static void set_mode(silt_server *s, bool on)
{
    reply r;
    rq(s, "POST", "/api/v1/system/maintenance", on ? "{\"enabled\":true}" : "{\"enabled\":false}", &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "maintenanceMode") == on);
    reply_fini(&r);
}

static int64_t buffered_messages(silt_server *s)
{
    reply r;
    rq(s, "GET", "/api/v1/system/maintenance", NULL, &r);
    CHECK_INT(r.status, 200);
    int64_t n = jint(&r, "bufferedMessages");
    reply_fini(&r);
    return n;
}

/* The JS test's wait: poll until the buffer has drained, with a deadline. */
static void await_drained(silt_server *s, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    while (buffered_messages(s) > 0 && now_ms() < deadline) pause_ms(20);
    CHECK_INT(buffered_messages(s), 0);
}

/* Pops everything there is in one batch; returns the payloads' i in order. */
static const char *pop_all(silt_server *s, const char *q)
{
    reply r;
    rq(s, "GET", sfmt("/api/v1/pop/queue/%s?batch=1000&wait=false&autoAck=true", q), NULL, &r);
    buf seen;
    buf_init(&seen);
    for (int i = 0; r.status == 200 && jpath(&r, sfmt("messages.%d", i)) >= 0; i++)
        buf_printf(&seen, "%s%lld", i ? "," : "", (long long)jint(&r, sfmt("messages.%d.data.i", i)));
    reply_fini(&r);
    const char *out = sfmt("%s", seen.data ? seen.data : "");
    buf_fini(&seen);
    return out;
}

TEST(maintenance_buffers_pushes_and_delivers_them_in_order_when_turned_off)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("maint");
    set_mode(&s, false);   /* the JS test resets first */
    CHECK_STR(push_items(&s, q, NULL, 0, 2, NULL), "queued,queued");
    set_mode(&s, true);
    CHECK_STR(push_items(&s, q, NULL, 2, 3, NULL), "buffered,buffered,buffered");
    CHECK_STR(push_items(&s, q, NULL, 5, 1, NULL), "buffered");
    CHECK_INT(buffered_messages(&s), 4);
    CHECK_STR(pop_all(&s, q), "0,1");   /* what was written before is delivered as usual */
    CHECK_STR(pop_all(&s, q), "");      /* what is buffered is not, yet */
    reply r;
    rq(&s, "GET", "/health", NULL, &r);
    CHECK(jbool(&r, "maintenanceMode"));
    CHECK_INT(jint(&r, "bufferedMessages"), 4);
    reply_fini(&r);
    set_mode(&s, false);
    await_drained(&s, 10000);
    CHECK_STR(pop_all(&s, q), "2,3,4,5");
    CHECK_STR(push_items(&s, q, NULL, 6, 1, NULL), "queued");
    CHECK_STR(pop_all(&s, q), "6");
    CHECK_INT(srv_metric(&s, "silt_messages_buffered_total"), 4);
    CHECK_INT(srv_metric(&s, "silt_messages_drained_total"), 4);
    srv_stop(&s);
}

TEST(a_transaction_id_repeated_during_maintenance_is_a_duplicate)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("maint-dup");
    CHECK_STR(push_items(&s, q, NULL, 0, 1, "t-"), "queued");
    set_mode(&s, true);
    CHECK_STR(push_items(&s, q, NULL, 0, 2, "t-"), "duplicate,buffered");   /* t-0 is in the log */
    CHECK_STR(push_items(&s, q, NULL, 1, 2, "t-"), "duplicate,buffered");   /* t-1 is in the buffer */
    set_mode(&s, false);
    await_drained(&s, 10000);
    CHECK_STR(pop_all(&s, q), "0,1,2");
    CHECK_STR(push_items(&s, q, NULL, 2, 1, "t-"), "duplicate");   /* and in the log once delivered */
    srv_stop(&s);
}

TEST(maintenance_is_one_switch_for_every_server_on_the_database)
{
    const char *env[] = { "MAINTENANCE_REFRESH_MS=50", NULL };
    silt_server a, b;
    srv_start(&a, env);
    srv_start(&b, env);
    const char *q = uniq("maint-shared");
    set_mode(&a, true);
    CHECK_STR(push_items(&b, q, NULL, 0, 2, NULL), "buffered,buffered");   /* b's very next flush obeys */
    int64_t deadline = now_ms() + 5000;
    bool shown = false;
    while (!shown && now_ms() < deadline) {
        reply r;
        rq(&b, "GET", "/health", NULL, &r);
        shown = jbool(&r, "maintenanceMode") && jint(&r, "bufferedMessages") == 2;
        reply_fini(&r);
        if (!shown) pause_ms(20);
    }
    CHECK(shown);
    set_mode(&b, false);
    await_drained(&a, 10000);
    CHECK_STR(pop_all(&a, q), "0,1");
    srv_stop(&a);
    srv_stop(&b);
}

/* The drain is announced like a push: a pop parked on a server that does
 * not drain (its refresh is a minute away) is answered when another server
 * moves the buffer into the log. */
TEST(a_drain_through_another_server_wakes_a_parked_long_poll)
{
    silt_server a, b;
    srv_start(&a, (const char *const[]){ "MAINTENANCE_REFRESH_MS=60000", NULL });
    srv_start(&b, NULL);
    srv_await_metric(&a, "silt_notify_listening", 1, 10000);
    const char *q = uniq("maint-wake");
    set_mode(&b, true);
    CHECK_STR(push_items(&b, q, NULL, 0, 1, NULL), "buffered");
    bg_req p;
    bg_start(&p, &a, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=30000&autoAck=true", q), NULL);
    srv_await_metric(&a, "silt_long_polls_parked", 1, 5000);
    set_mode(&b, false);
    int status;
    int64_t elapsed;
    bg_wait(&p, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 20000);   /* woken by b's drain, not answered at its deadline */
    srv_stop(&b);
    srv_stop(&a);
}

TEST(buffered_pushes_survive_the_server_that_took_them)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("maint-durable");
    set_mode(&s, true);
    CHECK_STR(push_items(&s, q, NULL, 0, 3, NULL), "buffered,buffered,buffered");
    srv_stop(&s);
    srv_start(&s, NULL);
    CHECK_INT(buffered_messages(&s), 3);
    set_mode(&s, false);
    await_drained(&s, 10000);
    CHECK_STR(pop_all(&s, q), "0,1,2");
    srv_stop(&s);
}

/* Turned off by SQL with no server looking (a refresh of a minute), the
 * buffer is "draining": new pushes queue behind it rather than overtake. */
TEST(pushes_while_the_buffer_drains_queue_behind_it)
{
    const char *env[] = { "MAINTENANCE_REFRESH_MS=60000", NULL };
    silt_server s;
    srv_start(&s, env);
    const char *q = uniq("maint-order");
    set_mode(&s, true);
    CHECK_STR(push_items(&s, q, NULL, 0, 2, NULL), "buffered,buffered");
    sql("SELECT queen.maintenance_set(false)");
    CHECK_STR(sql("SELECT value->>'draining' FROM queen.system_state WHERE key = 'maintenance_mode'"), "true");
    CHECK_STR(push_items(&s, q, NULL, 2, 1, NULL), "buffered");
    CHECK_STR(pop_all(&s, q), "");
    set_mode(&s, false);   /* any request that sees the state off starts the drain */
    await_drained(&s, 10000);
    CHECK_STR(pop_all(&s, q), "0,1,2");
    CHECK_STR(sql("SELECT value->>'draining' FROM queen.system_state WHERE key = 'maintenance_mode'"), "false");
    CHECK_STR(push_items(&s, q, NULL, 3, 1, NULL), "queued");
    srv_stop(&s);
}

TEST(a_queue_deleted_during_maintenance_takes_its_buffered_pushes_along)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("maint-gone");
    set_mode(&s, true);
    CHECK_STR(push_items(&s, q, NULL, 0, 2, "g-"), "buffered,buffered");
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_INT(buffered_messages(&s), 0);
    CHECK_STR(sql("SELECT count(*) FROM queen.push_buffer_txns"), "0");
    set_mode(&s, false);
    CHECK_STR(sql("SELECT count(*) FROM queen.queues WHERE name = '%s'", q), "0");
    srv_stop(&s);
}

TEST(maintenance_refuses_a_body_without_a_boolean_and_changes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *bad[] = { "{}", "{\"enabled\":\"true\"}", "{\"enabled\":1}", "{\"enabled\":null}", "[true]", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reply r;
        rq(&s, "POST", "/api/v1/system/maintenance", bad[i], &r);
        CHECK_INT(r.status, 400);
        reply_fini(&r);
    }
    reply r;
    rq(&s, "POST", "/api/v1/system/maintenance", "{\"enabled\":1}", &r);
    CHECK_STR(jstr(&r, "error"), "enabled must be true or false");
    CHECK_STR(jstr(&r, "field"), "enabled");
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/system/maintenance", NULL, &r);
    CHECK(!jbool(&r, "maintenanceMode"));
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_transaction_during_maintenance_buffers_its_pushes)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("maint-tx");
    set_mode(&s, true);
    reply r;
    rq(&s, "POST", "/api/v1/transaction",
       sfmt("{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"%s\",\"payload\":{\"i\":7}}]}]}", q), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "results.0.status"), "buffered");
    reply_fini(&r);
    set_mode(&s, false);
    await_drained(&s, 10000);
    CHECK_STR(pop_all(&s, q), "7");
    srv_stop(&s);
}
