/* Integration: GET /api/v1/tasks/:id/attempts — one task's attempts, oldest
 * first: those that ended as horsies_task_attempts holds them, the running
 * one from the task's row (its attempt row is written once, when it ends).
 * The attempt that completes a task is kept in its history row, the others
 * in tasks.attempt_records; the view horsies_task_attempts shows both.
 * Whether the task exists is decided as GET /api/v1/tasks/:id decides it. */
#include <string.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

#define UNKNOWN_TASK "01a233f6-7074-706c-a9b9-8691edad8860"

/* A column of one attempt row, as text (times as the API writes them). */
static const char *attempt_col(const char *id, int attempt, const char *expr)
{
    return sql("SELECT %s FROM horsies_task_attempts WHERE task_id = '%s' AND attempt = %d", expr, id, attempt);
}

/* attempts.<i> of the reply matches the row horsies_task_attempts holds for
 * an attempt that ended: its number, worker, claim and times (JSON text). */
static void check_attempt(const reply *r, int i, const char *id, const char *worker, const char *claim)
{
    char at[96];
    keep_str(at, sfmt("attempts.%d.", i));
    CHECK_INT(jint(r, sfmt("%sattempt", at)), i + 1);
    CHECK_STR(jstr(r, sfmt("%sworkerId", at)), worker);
    CHECK_STR(jstr(r, sfmt("%sclaimId", at)), claim);
    CHECK_STR(jraw(r, sfmt("%sstartedAt", at)), attempt_col(id, i + 1, "'\"' || queen.iso_ms(started_at) || '\"'"));
    CHECK_STR(jraw(r, sfmt("%sfinishedAt", at)),
              attempt_col(id, i + 1, "coalesce('\"' || queen.iso_ms(finished_at) || '\"', 'null')"));
}

/* A task whose first attempt (worker w1) fails with BOOM "it broke" and
 * whose retry (worker w2) completes with {"ok": true}: its id in id. */
static void failed_then_completed(silt_server *s, char id[96], task_claimed *first, task_claimed *second)
{
    keep_str(id, task_send(s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":1,\"delaysMs\":[0]}}"));
    CHECK(task_claim_one(s, "w1", "q", first));
    CHECK_INT(task_call(s, "start", first, NULL), 200);
    CHECK_INT(task_call(s, "fail", first, "\"errorCode\":\"BOOM\",\"errorMessage\":\"it broke\""), 200);
    CHECK(task_claim_one(s, "w2", "q", second));
    CHECK_INT(task_call(s, "start", second, NULL), 200);
    CHECK_INT(task_call(s, "complete", second, "\"result\":{\"ok\":true}"), 200);
}

TEST(a_task_that_failed_once_then_completed_lists_both_attempts_with_outcome_and_error)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    task_claimed first, second;
    failed_then_completed(&s, id, &first, &second);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts", id), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "taskId"), id);
    check_attempt(&r, 0, id, "w1", first.claim);
    CHECK_STR(jstr(&r, "attempts.0.outcome"), "FAILED");
    CHECK_STR(jstr(&r, "attempts.0.errorCode"), "BOOM");
    CHECK_STR(jstr(&r, "attempts.0.errorMessage"), "it broke");
    check_attempt(&r, 1, id, "w2", second.claim);
    CHECK_STR(jstr(&r, "attempts.1.outcome"), "COMPLETED");
    CHECK_STR(jraw(&r, "attempts.1.errorCode"), "null");
    CHECK_STR(jraw(&r, "attempts.1.errorMessage"), "null");
    CHECK(jpath(&r, "attempts.2") < 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* A completion writes no attempt record: its history row keeps the claim
 * with the attempt's number, worker and times, and horsies_task_attempts
 * reads it from there. A failed attempt is a record. An attempt record
 * written before that (its history row without a claim) is shown once. */
TEST(the_attempt_that_completes_a_task_is_kept_in_its_history_row_and_shown_once)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    task_claimed first, second;
    failed_then_completed(&s, id, &first, &second);
    CHECK_STR(sql("SELECT string_agg(attempt || ' ' || outcome, ',') FROM tasks.attempt_records WHERE task_id = '%s'",
                  id), "1 FAILED");
    CHECK_STR(sql("SELECT format('%%s %%s %%s %%s', attempt, worker_id, claim_id, started_at IS NOT NULL)"
                  " FROM horsies_task_history WHERE id = '%s'", id), sfmt("2 w2 %s t", second.claim));
    CHECK_STR(sql("SELECT string_agg(format('%%s %%s %%s %%s', attempt, outcome, worker_id, claim_id), ','"
                  " ORDER BY attempt) FROM horsies_task_attempts WHERE task_id = '%s'", id),
              sfmt("1 FAILED w1 %s,2 COMPLETED w2 %s", first.claim, second.claim));
    /* as a completion before migration 053 left it: a record, no claim in history */
    sql("INSERT INTO tasks.attempt_records (task_id, attempt, worker_id, claim_id, started_at, finished_at, outcome)"
        " SELECT id, attempt, worker_id, claim_id, started_at, finished_at, 'COMPLETED' FROM horsies_task_history"
        " WHERE id = '%s'", id);
    sql("UPDATE horsies_task_history SET claim_id = NULL WHERE id = '%s'", id);
    CHECK_STR(sql("SELECT string_agg(attempt || ' ' || outcome, ',' ORDER BY attempt) FROM horsies_task_attempts"
                  " WHERE task_id = '%s'", id), "1 FAILED,2 COMPLETED");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts", id), NULL, &r);
    CHECK_STR(jstr(&r, "attempts.1.outcome"), "COMPLETED");
    CHECK(jpath(&r, "attempts.2") < 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* Pending, claimed (not started), and cancelled before it ran (its record
 * in history): the task is there, with no attempt. A started one has its
 * attempt, running: no outcome, no end yet. */
TEST(a_task_never_started_has_no_attempts_and_a_running_one_its_open_attempt)
{
    silt_server s;
    srv_start(&s, NULL);
    char pending[96], cancelled[96];
    keep_str(cancelled, task_send(&s, "{\"name\":\"t\",\"queue\":\"gone\"}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", cancelled), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "CANCELLED");
    reply_fini(&r);
    keep_str(pending, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}"));
    const char *never[] = { pending, cancelled };
    for (int i = 0; i < 2; i++) {
        rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts", never[i]), NULL, &r);
        CHECK_INT(r.status, 200);
        CHECK_STR(jstr(&r, "taskId"), never[i]);
        CHECK_STR(jraw(&r, "attempts"), "[]");
        reply_fini(&r);
    }
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts?wait=50", pending), NULL, &r);   /* held, then answered as is */
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "attempts"), "[]");
    reply_fini(&r);
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts", pending), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "attempts.0.attempt"), 1);
    CHECK_STR(jstr(&r, "attempts.0.workerId"), "w");
    CHECK_STR(jstr(&r, "attempts.0.claimId"), c.claim);
    CHECK_STR(jraw(&r, "attempts.0.startedAt"),
              sql("SELECT '\"' || queen.iso_ms(started_at) || '\"' FROM horsies_tasks WHERE id = '%s'", pending));
    CHECK_STR(jraw(&r, "attempts.0.finishedAt"), "null");
    CHECK_STR(jraw(&r, "attempts.0.outcome"), "null");
    CHECK(jpath(&r, "attempts.1") < 0);
    reply_fini(&r);
    /* the running attempt is the task row's: its own row is written when it ends */
    CHECK_STR(attempt_col(pending, 1, "count(*)"), "0");
    CHECK_INT(task_call(&s, "complete", &c, NULL), 200);
    rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts", pending), NULL, &r);
    check_attempt(&r, 0, pending, "w", c.claim);
    CHECK_STR(jstr(&r, "attempts.0.outcome"), "COMPLETED");
    CHECK(jpath(&r, "attempts.1") < 0);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(attempts_of_an_unknown_task_are_404_and_of_an_id_that_is_not_a_uuid_400)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    rq(&s, "GET", "/api/v1/tasks/" UNKNOWN_TASK "/attempts", NULL, &r);
    CHECK_INT(r.status, 404);
    CHECK_STR(jstr(&r, "error"), "no task " UNKNOWN_TASK);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/tasks/nope/attempts", NULL, &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "error"), "id must be a uuid");
    CHECK_STR(jstr(&r, "field"), "id");
    reply_fini(&r);
    srv_stop(&s);
}
