/* Integration: pushing messages from SQL (docs/sql-api.md, "Pushing
 * messages"; sql/functions/sql_push.sql, src/streams/outbox.c). A message
 * pushed by queen.push or queen.push_many inside an application's
 * transaction exists exactly when that transaction commits: the outbox
 * row is the caller's, and a server moves it into the log through the
 * HTTP push path, so it pops, dedups and acks as a message pushed over
 * HTTP; long-polls parked on every server wake at the commit; a bad
 * argument raises 22023 with the HTTP 400's words and writes nothing; a
 * move that fails or dies leaves the rows for the next, and each row is
 * moved once, in outbox order. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "harness.h"
#include "support.h"
#include "base/buf.h"

/* The requirement is a wake-up within 50 ms of the commit (issue 34); the
 * assertion leaves room for a loaded machine, and the tests print what
 * they measured. */
#define WAKE_WITHIN_MS 50
#define WAKE_ASSERT_MS 500

/* Messages of queue q in the log: frames of its segments. */
static int logged(const char *q)
{
    return atoi(sql("SELECT coalesce(sum(s.end_offset - s.base_offset + 1), 0) FROM queen.log_segments s"
                    " JOIN queen.log_partitions p ON p.id = s.partition_id WHERE p.queue = '%s'", q));
}

/* Pops everything of q (autoAck): each message's data.i, comma-separated. */
static const char *pop_all(silt_server *s, const char *q)
{
    buf seen;
    buf_init(&seen);
    for (int round = 0; round < 100; round++) {
        reply r;
        rq(s, "GET", sfmt("/api/v1/pop/queue/%s?batch=1000&wait=false&autoAck=true", q), NULL, &r);
        int n = 0;
        for (; r.status == 200 && jpath(&r, sfmt("messages.%d", n)) >= 0; n++)
            buf_printf(&seen, "%s%lld", seen.len ? "," : "", (long long)jint(&r, sfmt("messages.%d.data.i", n)));
        reply_fini(&r);
        if (n == 0) break;
    }
    const char *out = sfmt("%s", seen.data ? seen.data : "");
    buf_fini(&seen);
    return out;
}

static void park_pop(bg_req *b, silt_server *s, const char *q, int timeout_ms)
{
    bg_start(b, s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=%d&autoAck=true", q, timeout_ms), NULL);
    srv_await_metric(s, "silt_long_polls_parked", 1, 5000);
}

/* Rolled back: nothing in the outbox, nothing in the log, and the parked
 * pop is not woken: it answers empty when its wait ends. */
TEST(a_message_pushed_in_a_transaction_that_rolls_back_is_never_seen_and_wakes_nobody)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=50", NULL });
    char q[96];
    keep_str(q, uniq("sqlpush-rb"));
    bg_req w;
    park_pop(&w, &s, q, 1500);
    PGconn *pg = test_session();
    session_run(pg, "BEGIN");
    session_run(pg, sfmt("SELECT queen.push('%s', NULL, '{\"i\":1}', 'rb-1')", q));
    session_run(pg, sfmt("SELECT count(*) FROM queen.push_many('[{\"queue\":\"%s\",\"payload\":{\"i\":2}}]')", q));
    CHECK_STR(session_run(pg, "SELECT count(*) FROM queen.push_outbox"), "2");   /* the transaction sees its own */
    CHECK_STR(sql("SELECT count(*) FROM queen.push_outbox"), "0");        /* nobody else does */
    session_run(pg, "ROLLBACK");
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 204);
    /* its whole wait: nothing woke it (the server's timers run on the event
     * loop's cached clock, so a deadline may end a few ms early) */
    CHECK(elapsed >= 1500 - 20);
    CHECK_STR(sql("SELECT count(*) FROM queen.push_outbox"), "0");
    CHECK_INT(logged(q), 0);
    CHECK_INT(srv_metric(&s, "silt_sql_pushes_moved_total"), 0);
    CHECK_STR(pop_all(&s, q), "");
    PQfinish(pg);
    srv_stop(&s);
}

/* Committed: the pop parked before the commit returns the message, within
 * WAKE_WITHIN_MS of the commit's return (asserted within WAKE_ASSERT_MS).
 * The outbox timer is an hour away: the notification moved it. */
TEST_ALONE(a_committed_sql_push_wakes_a_parked_long_poll_at_the_commit)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=3600000", NULL });
    srv_await_metric(&s, "silt_notify_listening", 1, 10000);
    char q[96];
    keep_str(q, uniq("sqlpush-wake"));
    PGconn *pg = test_session();
    session_run(pg, "SELECT 1");   /* connected and warm before the clock starts */
    int64_t worst = 0;
    for (int round = 0; round < 3; round++) {
        bg_req w;
        park_pop(&w, &s, q, 20000);
        session_run(pg, "BEGIN");
        session_run(pg, sfmt("SELECT queen.push('%s', 'p', '{\"i\":%d}')", q, round));
        int64_t committed = now_ms();
        session_run(pg, "COMMIT");
        int status;
        int64_t elapsed;
        bg_wait(&w, &status, &elapsed);
        CHECK_INT(status, 200);
        int64_t took = w.ended_ms - committed;
        printf("    round %d: woken %lld ms after the commit was sent\n", round, (long long)took);
        if (took > worst) worst = took;
        srv_await_metric(&s, "silt_long_polls_parked", 0, 5000);
    }
    printf("    worst %lld ms (the requirement: %d ms)\n", (long long)worst, WAKE_WITHIN_MS);
    CHECK(worst < WAKE_ASSERT_MS);
    CHECK_STR(sql("SELECT count(*) FROM queen.push_outbox"), "0");
    CHECK_INT(logged(q), 3);
    PQfinish(pg);
    srv_stop(&s);
}

/* Every server hears the commit: the server that moves the rows wakes its
 * own pops, and tells the others as a push over HTTP does. */
TEST_ALONE(a_committed_sql_push_wakes_long_polls_parked_on_every_server)
{
    const char *env[] = { "PUSH_OUTBOX_INTERVAL_MS=3600000", NULL };
    silt_server a, b;
    srv_start(&a, env);
    srv_start(&b, env);
    srv_await_metric(&a, "silt_notify_listening", 1, 10000);
    srv_await_metric(&b, "silt_notify_listening", 1, 10000);
    char qa[96], qb[96];
    keep_str(qa, uniq("sqlpush-a"));
    keep_str(qb, uniq("sqlpush-b"));
    PGconn *pg = test_session();
    session_run(pg, "SELECT 1");
    int64_t worst = 0;
    for (int round = 0; round < 3; round++) {
        bg_req wa, wb;
        park_pop(&wa, &a, qa, 20000);
        park_pop(&wb, &b, qb, 20000);
        session_run(pg, "BEGIN");
        session_run(pg, sfmt("SELECT count(*) FROM queen.push_many('[{\"queue\":\"%s\",\"payload\":{\"i\":1}},"
                     "{\"queue\":\"%s\",\"payload\":{\"i\":2}}]')", qa, qb));
        int64_t committed = now_ms();
        session_run(pg, "COMMIT");
        int status;
        int64_t elapsed;
        bg_wait(&wa, &status, &elapsed);
        CHECK_INT(status, 200);
        bg_wait(&wb, &status, &elapsed);
        CHECK_INT(status, 200);
        int64_t ta = wa.ended_ms - committed, tb = wb.ended_ms - committed;
        printf("    round %d: woken %lld ms (server a) and %lld ms (server b) after the commit was sent\n", round,
               (long long)ta, (long long)tb);
        if (ta > worst) worst = ta;
        if (tb > worst) worst = tb;
        srv_await_metric(&a, "silt_long_polls_parked", 0, 5000);
        srv_await_metric(&b, "silt_long_polls_parked", 0, 5000);
    }
    printf("    worst %lld ms (the requirement: %d ms)\n", (long long)worst, WAKE_WITHIN_MS);
    CHECK(worst < WAKE_ASSERT_MS);
    /* one of them moved both, once */
    CHECK_INT(srv_metric(&a, "silt_sql_pushes_moved_total") + srv_metric(&b, "silt_sql_pushes_moved_total"), 6);
    CHECK_INT(logged(qa) + logged(qb), 6);
    PQfinish(pg);
    srv_stop(&a);
    srv_stop(&b);
}

/* The message is the one the same push over HTTP makes: payload byte for
 * byte, partition, transactionId, traceId; acked by its transactionId;
 * and the same dedup: a transactionId pushed twice within the window, from
 * SQL or over HTTP, is one message. */
TEST(a_message_pushed_from_sql_pops_dedups_and_acks_as_one_pushed_over_http)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=50", NULL });
    char q[96];
    keep_str(q, uniq("sqlpush-same"));
    CHECK_STR(sql("SELECT queen.push('%s', 'P', '{\"i\": 0,  \"s\": [1, 2]}', 'tx-0',"
                  " '0190a3b4-c5d6-7e8f-9a0b-1c2d3e4f5a6b')", q), "tx-0");
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=g&batch=10&wait=false", &r), 200);
    CHECK_STR(jstr(&r, "partition"), "P");
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"i\": 0,  \"s\": [1, 2]}");   /* as given, spaces and all */
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "tx-0");
    CHECK_STR(jstr(&r, "messages.0.traceId"), "0190a3b4-c5d6-7e8f-9a0b-1c2d3e4f5a6b");
    char pid[64];
    snprintf(pid, sizeof pid, "%s", jstr(&r, "partitionId"));
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"tx-0\",\"partitionId\":\"%s\",\"consumerGroup\":\"g\"}",
                                       pid), &r);
    CHECK(jbool(&r, "0.success"));
    reply_fini(&r);
    /* the same transactionId again: from SQL, in a batch twice, over HTTP */
    sql("SELECT queen.push('%s', 'P', '{\"i\": 1}', 'tx-0')", q);
    sql("SELECT count(*) FROM queen.push_many('[{\"queue\":\"%s\",\"partition\":\"P\",\"payload\":{\"i\":2},"
        "\"transactionId\":\"tx-1\"},{\"queue\":\"%s\",\"partition\":\"P\",\"payload\":{\"i\":3},"
        "\"transactionId\":\"tx-1\"}]')", q, q);
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    push_txn_reply(&s, q, "P", "tx-1", "{\"i\":4}", &r);
    CHECK_STR(jstr(&r, "0.status"), "duplicate");
    reply_fini(&r);
    CHECK_INT(logged(q), 2);
    CHECK_STR(pop_all(&s, q), "0,2");
    /* a transactionId silt made is returned, and is the message's */
    char made[96];
    keep_str(made, sql("SELECT queen.push('%s', NULL, '{\"i\": 5}')", q));
    CHECK_INT((int)strlen(made), 36);
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    CHECK_INT(pop_from(&s, q, NULL, "batch=10&wait=false&autoAck=true", &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), made);
    CHECK_STR(jstr(&r, "partition"), "Default");
    reply_fini(&r);
    /* a NUL in a batch's payload is kept as given (PostgreSQL's text cannot hold it) */
    sql("SELECT count(*) FROM queen.push_many('[{\"queue\":\"%s\",\"payload\":{\"s\":\"a\\u0000b\"}}]')", q);
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    CHECK_INT(pop_from(&s, q, NULL, "batch=10&wait=false&autoAck=true", &r), 200);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"s\":\"a\\u0000b\"}");
    reply_fini(&r);
    srv_stop(&s);
}

/* A queue that encrypts gets its SQL pushes sealed by the server that
 * moves them, as its HTTP pushes are, and they pop in clear. */
TEST(a_message_pushed_from_sql_to_an_encrypted_queue_is_sealed_as_over_http)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=50", "ZSTD_LEVEL=-7", NULL });
    char q[96];
    keep_str(q, uniq("sqlpush-enc"));
    configure_queue(&s, q, "{\"encryptionEnabled\":true}");
    sql("SELECT queen.push('%s', NULL, '{\"i\": 7, \"secret\": \"plain-words-here\"}')", q);
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    CHECK_STR(sql("SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id"
                  " WHERE p.queue = '%s' AND position('plain-words-here'::bytea IN s.blob) = 0", q), "1");
    CHECK_STR(pop_all(&s, q), "7");
    srv_stop(&s);
}

/* A bad argument raises 22023 with the words of the HTTP 400 (naming the
 * item in a batch), and nothing of the call is written. */
TEST(a_bad_sql_push_raises_silts_message_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "MAX_PAYLOAD_BYTES=64", "MAX_BATCH_ITEMS=3", NULL });
    PGconn *pg = test_session();
    char long_name[300], long_txn[65600];
    memset(long_name, 'n', 256);
    long_name[256] = '\0';
    memset(long_txn, 't', 65536);
    long_txn[65536] = '\0';
    static const struct { const char *call, *message; } cases[] = {
        { "queen.push(NULL, NULL, '1')", "queue is required" },
        { "queen.push('', NULL, '1')", "queue must be a non-empty string" },
        { "queen.push('q', '', '1')", "partition must be a non-empty string" },
        { "queen.push('q', NULL, NULL)", "payload is required" },
        { "queen.push('q', NULL, '1', '')", "transactionId must be a non-empty string" },
        { "queen.push('q', NULL, '1', trace_id => 'not-a-uuid')", "traceId must be a uuid" },
        { "queen.push('q', NULL, '\"0123456789012345678901234567890123456789012345678901234567890123\"')",
          "payload exceeds 64 bytes" },
        { "queen.push_many('{\"queue\":\"q\"}')", "items array is required" },
        { "queen.push_many('[{\"queue\":\"q\",\"payload\":1},{\"queue\":\"q\",\"payload\":2},{\"queue\":\"q\","
          "\"payload\":3},{\"queue\":\"q\",\"payload\":4}]')", "too many items: 4 (the limit is 3)" },
        { "queen.push_many('[{\"queue\":\"q\",\"payload\":1},7]')", "items[1]: must be an object" },
        /* items are checked in order, each whole before the next */
        { "queen.push_many('[{\"queue\":\"q\"},7]')", "items[0]: payload is required" },
        { "queen.push_many('[7,{\"queue\":\"q\"}]')", "items[0]: must be an object" },
        { "queen.push_many('[{\"queue\":\"q\",\"payload\":1},{\"payload\":1}]')", "items[1]: queue is required" },
        { "queen.push_many('[{\"queue\":5,\"payload\":1}]')", "items[0]: queue must be a non-empty string" },
        { "queen.push_many('[{\"queue\":\"q\"}]')", "items[0]: payload is required" },
        { "queen.push_many('[{\"queue\":\"q\",\"payload\":1,\"transactionId\":\"a\\u0000b\"}]')",
          "items[0]: transactionId must not contain NUL characters" },
        { "queen.push_many('[{\"queue\":\"q\",\"payload\":1,\"traceId\":\"x\"}]')", "items[0]: traceId must be a uuid" },
        { "queen.push_many('[{\"queue\":\"q\",\"payload\":\"0123456789012345678901234567890123456789"
          "012345678901234567890123\"}]')", "items[0]: payload exceeds 64 bytes" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_STR(session_refused(pg, sfmt("SELECT * FROM %s", cases[i].call), "22023"), cases[i].message);
    CHECK_STR(session_refused(pg, sfmt("SELECT queen.push('%s', NULL, '1')", long_name), "22023"),
              "queue is longer than 255 bytes");
    CHECK_STR(session_refused(pg, sfmt("SELECT queen.push('q', '%s', '1')", long_name), "22023"),
              "partition is longer than 255 bytes");
    buf call;
    buf_init(&call);
    buf_printf(&call, "SELECT queen.push('q', NULL, '1', '%s')", long_txn);
    CHECK_STR(session_refused(pg, call.data, "22023"), "transactionId is longer than 65535 bytes");
    buf_fini(&call);
    /* not JSON: PostgreSQL's own json input refuses it before the call */
    session_refused(pg, "SELECT queen.push('q', NULL, 'not json')", "22P02");
    session_refused(pg, "SELECT queen.push_many('[{\"queue\":\"q\",\"payload\":}]')", "22P02");
    CHECK_STR(sql("SELECT count(*) FROM queen.push_outbox"), "0");
    CHECK_STR(sql("SELECT count(*) FROM queen.log_segments"), "0");
    /* the same rules answer over HTTP, with the same words */
    reply r;
    rq(&s, "POST", "/api/v1/push", "{\"items\":[{\"queue\":\"q\",\"payload\":1},{\"queue\":\"q\",\"payload\":1,"
       "\"traceId\":\"x\"}]}", &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "error"), "items[1]: traceId must be a uuid");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/push", "{\"items\":[{\"queue\":\"q\",\"payload\":\"0123456789012345678901234567890123456789"
       "012345678901234567890123\"}]}", &r);
    CHECK_INT(r.status, 413);
    CHECK_STR(jstr(&r, "error"), "items[0]: payload exceeds 64 bytes");
    reply_fini(&r);
    /* and a good call still works in the same session */
    CHECK_STR(session_run(pg, "SELECT queen.push('q', NULL, '1', 'fine')"), "fine");
    PQfinish(pg);
    srv_stop(&s);
}

/* A login role granted silt_producer pushes, and can neither read nor
 * change the outbox or the log nor call the mover's functions. */
TEST(a_role_granted_silt_producer_may_push_and_not_touch_the_log)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=50", NULL });
    char name[96], q[96];
    keep_str(name, uniq("pusher"));
    keep_str(q, uniq("sqlpush-role"));
    sql("CREATE ROLE \"%s\" LOGIN; GRANT silt_producer TO \"%s\"", name, name);
    PGconn *pg = PQconnectdb(sfmt("host=127.0.0.1 port=%s user=%s dbname=%s", pg_port(), name, test_db()));
    CHECK(PQstatus(pg) == CONNECTION_OK);
    CHECK_STR(session_run(pg, sfmt("SELECT queen.push('%s', NULL, '{\"i\":0}', 'r-0')", q)), "r-0");
    CHECK_STR(session_run(pg, sfmt("SELECT transaction_id FROM queen.push_many('[{\"queue\":\"%s\",\"payload\":{\"i\":1},"
                           "\"transactionId\":\"r-1\"}]')", q)), "r-1");
    session_refused(pg, "SELECT count(*) FROM queen.push_outbox", "42501");
    session_refused(pg, "INSERT INTO queen.push_outbox (queue, partition, transaction_id, client_txn, payload)"
                " VALUES ('x', 'y', 'z', true, '1')", "42501");
    session_refused(pg, "DELETE FROM queen.push_outbox", "42501");
    session_refused(pg, "SELECT count(*) FROM queen.log_segments", "42501");
    session_refused(pg, "SELECT count(*) FROM queen.log_txns", "42501");
    session_refused(pg, "UPDATE queen.push_settings SET max_payload_bytes = 1", "42501");
    session_refused(pg, "SELECT queen.push_outbox_take('{1}')", "42501");
    session_refused(pg, "SELECT * FROM queen.push_outbox_read(10, 10)", "42501");
    session_refused(pg, "SELECT queen.push_settings_store(1, 1)", "42501");
    session_refused(pg, "SELECT queen.push_announce()", "42501");
    session_refused(pg, "SELECT * FROM queen.push_flush('{}', '{}', '{}', '', '{}', '', '', '{}', '{}')", "42501");
    PQfinish(pg);
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    CHECK_STR(pop_all(&s, q), "0,1");
    sql("DROP ROLE \"%s\"", name);
    srv_stop(&s);
}

/* A session of this test's database waiting for an advisory lock (the
 * movers' is the only one a server waits for): every test's database is
 * on one cluster, and pg_locks shows the locks of all of them. */
#define MOVER_WAITING "locktype = 'advisory' AND NOT granted" \
                      " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"

/* The move of a server killed while it waited in its transaction: the
 * rows stay, and the next server moves them, once. The test holds the
 * movers' advisory lock so the move is caught mid-way, then ends the
 * dead server's database session (its transaction rolls back). */
TEST(rows_of_a_mover_killed_mid_move_are_moved_once_by_the_next)
{
    silt_server a;
    srv_start(&a, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=50", NULL });
    char q[96];
    keep_str(q, uniq("sqlpush-kill"));
    PGconn *lock = test_session();
    session_run(lock, "SELECT pg_advisory_lock(hashtext('silt.push_outbox'))");
    sql("SELECT count(*) FROM queen.push_many('[{\"queue\":\"%s\",\"payload\":{\"i\":0}},{\"queue\":\"%s\","
        "\"payload\":{\"i\":1}},{\"queue\":\"%s\",\"payload\":{\"i\":2}}]')", q, q, q);
    sql_await("1", 10000, "SELECT count(*) FROM pg_locks WHERE " MOVER_WAITING);
    kill(a.pid, SIGKILL);
    waitpid(a.pid, NULL, 0);
    sql("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE " MOVER_WAITING);
    sql_await("0", 10000, "SELECT count(*) FROM pg_locks WHERE " MOVER_WAITING);
    session_run(lock, "SELECT pg_advisory_unlock(hashtext('silt.push_outbox'))");
    CHECK_STR(sql("SELECT count(*) FROM queen.push_outbox"), "3");
    CHECK_INT(logged(q), 0);
    silt_server b;
    srv_start(&b, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=3600000", NULL });   /* at start, not by timer */
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    CHECK_INT(logged(q), 3);
    CHECK_STR(pop_all(&b, q), "0,1,2");
    PQfinish(lock);
    srv_stop(&b);
}

/* A move whose statement fails (its session ended under it) leaves the
 * rows; the same server's next look moves them, once. */
TEST(rows_of_a_move_whose_statement_failed_are_moved_once_by_the_next_look)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=50", NULL });
    char q[96];
    keep_str(q, uniq("sqlpush-fail"));
    PGconn *lock = test_session();
    session_run(lock, "SELECT pg_advisory_lock(hashtext('silt.push_outbox'))");
    sql("SELECT queen.push('%s', NULL, '{\"i\":0}')", q);
    sql("SELECT queen.push('%s', NULL, '{\"i\":1}')", q);
    sql_await("1", 10000, "SELECT count(*) FROM pg_locks WHERE " MOVER_WAITING);
    sql("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE " MOVER_WAITING);
    CHECK_STR(sql("SELECT count(*) FROM queen.push_outbox"), "2");
    session_run(lock, "SELECT pg_advisory_unlock(hashtext('silt.push_outbox'))");
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    CHECK_INT(logged(q), 2);
    CHECK_STR(pop_all(&s, q), "0,1");
    PQfinish(lock);
    srv_stop(&s);
}

/* Two servers moving at once (each looking every 10 ms besides the
 * notifications): every row enters the log once, and a partition's rows
 * in the order their transactions committed. */
TEST(two_servers_moving_at_once_move_each_row_once_in_outbox_order)
{
    const char *env[] = { "PUSH_OUTBOX_INTERVAL_MS=10", NULL };
    silt_server a, b;
    srv_start(&a, env);
    srv_start(&b, env);
    char q[96];
    keep_str(q, uniq("sqlpush-two"));
    PGconn *pg = test_session();
    buf want;
    buf_init(&want);
    for (int t = 0; t < 60; t++) {
        session_run(pg, "BEGIN");
        for (int k = 0; k < 3; k++) {
            int i = t * 3 + k;
            session_run(pg, sfmt("SELECT queen.push('%s', 'one', '{\"i\":%d}')", q, i));
            buf_printf(&want, "%s%d", i ? "," : "", i);
        }
        session_run(pg, "COMMIT");
    }
    sql_await("0", 20000, "SELECT count(*) FROM queen.push_outbox");
    CHECK_INT(logged(q), 180);
    CHECK_INT(srv_metric(&a, "silt_sql_pushes_moved_total") + srv_metric(&b, "silt_sql_pushes_moved_total"), 180);
    CHECK_STR(pop_all(&a, q), want.data);
    buf_fini(&want);
    PQfinish(pg);
    srv_stop(&a);
    srv_stop(&b);
}

/* docs/sql-api.md's psql example of pushing runs as written. */
TEST(the_psql_example_of_pushing_messages_runs_as_written)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ "PUSH_OUTBOX_INTERVAL_MS=50", NULL });
    char *example = doc_block("docs/sql-api.md", "### psql: pushing messages");
    sql("CREATE TABLE orders (id integer PRIMARY KEY, customer text)");
    PGconn *pg = test_session();
    session_run(pg, example);
    free(example);
    CHECK_STR(sql("SELECT count(*) FROM orders"), "1");
    sql_await("0", 10000, "SELECT count(*) FROM queen.push_outbox");
    reply r;
    CHECK_INT(pop_from(&s, "orders", "42", "batch=10&wait=false&autoAck=true", &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "order-placed:42");
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"order\": 42, \"event\": \"placed\"}");
    reply_fini(&r);
    CHECK_INT(logged("audit"), 2);
    PQfinish(pg);
    srv_stop(&s);
}
