/* Integration: the progress of a running task (docs/tasks.md, "Progress").
 * A heartbeat item may carry a report (progress, a finite number;
 * progressInfo, any JSON of at most 4 KiB), stored on the live row with its
 * time when the claim is the task's running one; GET and the list show it;
 * the history record keeps the last one; a retry starts without one; bad
 * input is 400 naming the field, nothing written. */
#include <stdio.h>
#include <string.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

/* A running task of queue q (sent, claimed, started). */
static void running_task(silt_server *s, const char *task_json, task_claimed *c)
{
    task_send(s, task_json ? task_json : "{\"name\":\"t\",\"queue\":\"q\"}");
    CHECK(task_claim_one(s, "w", "q", c));
    CHECK_INT(task_call(s, "start", c, NULL), 200);
}

/* One heartbeat of c with report (the item's extra members): the reply
 * status; its state in *state when 200. */
static int report(silt_server *s, const task_claimed *c, const char *report_members, char state[96])
{
    reply r;
    rq(s, "POST", "/api/v1/workers/w/heartbeat",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",%s}]}", c->id, c->claim, report_members), &r);
    int status = r.status;
    if (state) keep_str(state, status == 200 ? jstr(&r, "tasks.0.state") : "");
    reply_fini(&r);
    return status;
}

TEST(a_running_tasks_progress_is_stored_with_its_time_and_shown_by_get_and_list)
{
    silt_server s;
    srv_start(&s, NULL);
    task_claimed c;
    running_task(&s, NULL, &c);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", c.id), NULL, &r);
    CHECK_STR(jraw(&r, "progress"), "null");   /* nothing reported yet */
    CHECK_STR(jraw(&r, "progressInfo"), "null");
    CHECK_STR(jraw(&r, "progressAt"), "null");
    reply_fini(&r);
    char state[96];
    CHECK_INT(report(&s, &c, "\"progress\":42.5,\"progressInfo\":{\"step\": \"copy\",\"n\":[1,2]}", state), 200);
    CHECK_STR(state, "ok");
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", c.id), NULL, &r);
    CHECK_STR(jraw(&r, "progress"), "42.5");
    CHECK_STR(jraw(&r, "progressInfo"), "{\"step\": \"copy\",\"n\":[1,2]}");   /* byte for byte */
    CHECK(jpath(&r, "progressAt") >= 0 && strcmp(jraw(&r, "progressAt"), "null") != 0);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/tasks?queue=q&status=RUNNING", NULL, &r);
    CHECK_STR(jraw(&r, "tasks.0.progress"), "42.5");
    CHECK_STR(jstr(&r, "tasks.0.progressInfo.step"), "copy");
    reply_fini(&r);
    /* a heartbeat without a report keeps the last one */
    CHECK_STR(task_heartbeat(&s, "w", &c), "ok");
    CHECK_STR(sql("SELECT progress FROM horsies_tasks WHERE id = '%s'", c.id), "42.5");
    /* a report is whole: a number alone drops the earlier info */
    CHECK_INT(report(&s, &c, "\"progress\":-1e3", state), 200);
    CHECK_STR(sql("SELECT progress || ' ' || (progress_info IS NULL) FROM horsies_tasks WHERE id = '%s'", c.id),
              "-1000 true");
    CHECK_INT(report(&s, &c, "\"progressInfo\":\"half\"", state), 200);
    CHECK_STR(sql("SELECT (progress IS NULL) || ' ' || progress_info FROM horsies_tasks WHERE id = '%s'", c.id),
              "true \"half\"");
    srv_stop(&s);
}

/* silt task get and list show the report. */
TEST(silt_task_get_and_list_show_a_tasks_progress)
{
    silt_server s;
    srv_start(&s, NULL);
    task_claimed c;
    running_task(&s, NULL, &c);
    CHECK_INT(report(&s, &c, "\"progress\":42.5,\"progressInfo\":{\"step\":\"copy\"}", NULL), 200);
    static char out[65536];
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task get %s 2>&1", s.url, silt_bin(), c.id), out, sizeof out), 0);
    CHECK(strstr(out, "progress ") && strstr(out, "42.5"));
    CHECK(strstr(out, "{\"step\":\"copy\"}") != NULL);
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task list --queue q 2>&1", s.url, silt_bin()), out, sizeof out), 0);
    CHECK(strstr(out, "PROGRESS") != NULL && strstr(out, " RUNNING ") && strstr(out, " 42.5 "));
    srv_stop(&s);
}

TEST(a_stale_claims_progress_is_answered_lost_and_a_claimed_tasks_ignored)
{
    silt_server s;
    srv_start(&s, NULL);
    task_claimed old, now;
    running_task(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":1}}", &old);
    char state[96];
    CHECK_INT(report(&s, &old, "\"progress\":10", state), 200);
    CHECK_INT(task_call(&s, "fail", &old, "\"errorCode\":\"BOOM\""), 200);
    /* the retry starts without the failed attempt's report */
    CHECK_STR(sql("SELECT (progress IS NULL) || ' ' || (progress_at IS NULL) FROM horsies_tasks WHERE id = '%s'",
                  old.id), "true true");
    CHECK(task_claim_one(&s, "w", "q", &now));
    CHECK_STR(now.id, old.id);
    CHECK_INT(report(&s, &now, "\"progress\":1", state), 200);
    CHECK_STR(state, "ok");   /* claimed, not started: heartbeat yes, report no */
    CHECK_STR(sql("SELECT progress IS NULL FROM horsies_tasks WHERE id = '%s'", now.id), "t");
    CHECK_INT(task_call(&s, "start", &now, NULL), 200);
    CHECK_INT(report(&s, &old, "\"progress\":99", state), 200);
    CHECK_STR(state, "lost");
    CHECK_STR(sql("SELECT progress IS NULL FROM horsies_tasks WHERE id = '%s'", now.id), "t");
    srv_stop(&s);
}

/* Each bad report: 400 naming its field, and neither it nor the good item
 * before it written (no report, no heartbeat row). */
TEST(a_bad_report_is_400_naming_the_field_and_nothing_is_written)
{
    silt_server s;
    srv_start(&s, NULL);
    task_claimed c;
    running_task(&s, NULL, &c);
    const char *beats = sql("SELECT count(*) FROM horsies_heartbeats WHERE task_id = '%s'", c.id);
    char before[96];
    keep_str(before, beats);
    char big[4200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const struct { const char *members, *field; } bad[] = {
        { "\"progress\":\"half\"", "progress" },
        { "\"progress\":true", "progress" },
        { "\"progress\":[1]", "progress" },
        { "\"progress\":1e400", "progress" },
        { NULL, "progressInfo" },   /* 4,199 bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *members = bad[i].members ? bad[i].members : sfmt("\"progressInfo\":\"%s\"", big);
        reply r;
        rq(&s, "POST", "/api/v1/workers/w/heartbeat",
           sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",\"progress\":5},"
                "{\"id\":\"%s\",\"claimId\":\"%s\",%s}]}", c.id, c.claim, c.id, c.claim, members), &r);
        CHECK_INT(r.status, 400);
        CHECK_STR(jstr(&r, "field"), bad[i].field);
        CHECK(strstr(jstr(&r, "error"), "tasks[1]: ") != NULL);
        reply_fini(&r);
    }
    CHECK_STR(sql("SELECT count(*) FROM horsies_heartbeats WHERE task_id = '%s'", c.id), before);
    CHECK_STR(sql("SELECT progress_at IS NULL FROM horsies_tasks WHERE id = '%s'", c.id), "t");
    /* 4096 bytes of JSON are accepted */
    char fits[4097];
    memset(fits, 'y', sizeof fits - 1);
    fits[0] = fits[sizeof fits - 2] = '"';
    fits[sizeof fits - 1] = '\0';
    CHECK_INT(report(&s, &c, sfmt("\"progressInfo\":%s", fits), NULL), 200);
    CHECK_STR(sql("SELECT octet_length(progress_info::text) FROM horsies_tasks WHERE id = '%s'", c.id), "4096");
    srv_stop(&s);
}

TEST(a_finished_task_keeps_its_last_progress_in_history)
{
    silt_server s;
    srv_start(&s, NULL);
    task_claimed done, batch, failed;
    running_task(&s, NULL, &done);
    running_task(&s, NULL, &batch);
    running_task(&s, NULL, &failed);
    CHECK_INT(report(&s, &done, "\"progress\":100,\"progressInfo\":{\"rows\":7}", NULL), 200);
    CHECK_INT(report(&s, &batch, "\"progress\":50", NULL), 200);
    CHECK_INT(report(&s, &failed, "\"progress\":3", NULL), 200);
    CHECK_INT(task_call(&s, "complete", &done, "\"result\":1"), 200);
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/finish",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":2}]}", batch.id, batch.claim), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_INT(task_call(&s, "fail", &failed, "\"errorCode\":\"BOOM\""), 200);
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", done.id), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "COMPLETED");
    CHECK_STR(jraw(&r, "progress"), "100");
    CHECK_STR(jraw(&r, "progressInfo"), "{\"rows\":7}");
    CHECK(strcmp(jraw(&r, "progressAt"), "null") != 0);
    reply_fini(&r);
    CHECK_STR(sql("SELECT progress FROM horsies_task_history WHERE id = '%s'", batch.id), "50");
    CHECK_STR(sql("SELECT status || ' ' || progress FROM horsies_task_history WHERE id = '%s'", failed.id),
              "FAILED 3");
    srv_stop(&s);
}
