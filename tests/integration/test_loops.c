/* WORKERS: several HTTP event loops, one home loop running the handlers.
 * Which loop accepts a connection is the kernel's choice, so each test opens
 * connections until the loops it needs have read requests (a deadline, not
 * a count), then checks what was answered on them. */
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

#define LOOP_DEADLINE_MS 20000

/* A request on a connection of its own (a new connection lets the kernel
 * pick a loop again). */
static void rq_fresh(silt_server *s, const char *method, const char *path, const char *body, reply *r)
{
    silt_server once = *s;
    once.http = http_client_new(s->url);
    rq(&once, method, path, body, r);
    http_client_free(once.http);
}

static int64_t loop_requests(silt_server *s, int loop)
{
    return srv_metric(s, sfmt("silt_http_loop_requests_total{loop=\"%d\"}", loop));
}

static bool other_loops_served(silt_server *s, int loops)
{
    for (int i = 1; i < loops; i++)
        if (loop_requests(s, i) <= 0) return false;
    return true;
}

TEST(with_workers_3_every_loop_reads_requests_and_every_push_is_answered_and_stored_once)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "WORKERS=3", NULL });
    CHECK_INT(srv_metric(&s, "silt_http_loop_requests_total{loop=\"2\"}") >= 0, 1);
    CHECK_INT(srv_metric(&s, "silt_http_loop_requests_total{loop=\"3\"}"), -1);
    char q[96];
    keep_str(q, uniq("loops"));
    configure_queue(&s, q, "{}");
    int pushed = 0;
    int64_t t0 = now_ms();
    while (!other_loops_served(&s, 3) && now_ms() - t0 < LOOP_DEADLINE_MS) {
        reply r;
        rq_fresh(&s, "POST", "/api/v1/push",
                 sfmt("{\"items\":[{\"queue\":\"%s\",\"transactionId\":\"t%d\",\"payload\":{\"n\":%d}}]}", q, pushed,
                      pushed), &r);
        CHECK_INT(r.status, 201);
        CHECK_STR(jstr(&r, "0.status"), "queued");
        reply_fini(&r);
        pushed++;
    }
    CHECK(other_loops_served(&s, 3));
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, sfmt("batch=%d", pushed + 10), &r), 200);
    CHECK(jpath(&r, sfmt("messages.%d", pushed - 1)) >= 0);
    CHECK(jpath(&r, sfmt("messages.%d", pushed)) < 0);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(without_workers_the_server_runs_one_http_loop_per_core)
{
    silt_server s;
    srv_start(&s, NULL);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(loop_requests(&s, (int)cores - 1) >= 0);
    CHECK_INT(loop_requests(&s, (int)cores), -1);
    srv_stop(&s);
}

TEST(workers_out_of_range_is_refused_at_start_with_the_setting_named)
{
    char out[4096];
    int rc = run_cmd(sfmt("WORKERS=257 PG_PORT=%s %s server 2>&1", pg_port(), silt_bin()), out, sizeof out);
    CHECK(rc != 0);
    CHECK(strstr(out, "WORKERS") != NULL);
}
