/* Integration: uniqueness of sends ("unique" on POST /api/v1/tasks and the
 * SQL API; docs/tasks.md, "Uniqueness"; tasks.unique_keys, migration 046).
 * A send holds a key (its task name with a key it names, or with its args)
 * for a period or while its task is live; a send of a held key gets the
 * holder back (created false) and, as onConflict says, replaces its args
 * or pushes its start later while it has not started; a key whose period
 * or task ended is taken again; sends on several servers at once create
 * one task; bad input is a 400 naming the field and writes nothing. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

#define PARALLEL_SENDS 16   /* concurrent sends of one key, half on each server */

/* Sends body (one task); the reply's status must be 201; keeps the reply. */
static void send_unique(silt_server *s, const char *body, reply *r)
{
    rq(s, "POST", "/api/v1/tasks", body, r);
    CHECK_INT(r->status, 201);
}

/* Claims, starts and completes the task id (the only one of queue). */
static void run_to_completion(silt_server *s, const char *queue, const char *id)
{
    task_claimed c;
    CHECK(task_claim_one(s, "w", queue, &c));
    CHECK_STR(c.id, id);
    CHECK_INT(task_call(s, "start", &c, NULL), 200);
    CHECK_INT(task_call(s, "complete", &c, "\"result\":1"), 200);
}

TEST(a_send_of_a_held_key_returns_the_holder_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    char first[96];
    send_unique(&s, "{\"name\":\"digest\",\"queue\":\"q\",\"args\":1,\"unique\":{\"key\":\"user-42\"}}", &r);
    keep_str(first, jstr(&r, "id"));
    CHECK(jbool(&r, "created"));
    CHECK(!jbool(&r, "changed"));
    reply_fini(&r);
    send_unique(&s, "{\"name\":\"digest\",\"queue\":\"q\",\"args\":2,\"unique\":{\"key\":\"user-42\"}}", &r);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(!jbool(&r, "created"));
    CHECK(!jbool(&r, "changed"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) || ' ' || min(args::text) FROM horsies_tasks"), "1 1");
    /* the key is the task name's: another name holds its own */
    send_unique(&s, "{\"name\":\"sync\",\"queue\":\"q\",\"unique\":{\"key\":\"user-42\"}}", &r);
    CHECK(jbool(&r, "created"));
    reply_fini(&r);
    /* a send without unique has no "changed" */
    send_unique(&s, "{\"name\":\"digest\",\"queue\":\"q\"}", &r);
    CHECK(jpath(&r, "changed") < 0);
    reply_fini(&r);
    /* in one batch, the first task of a key holds it */
    rq(&s, "POST", "/api/v1/tasks", "{\"tasks\":[{\"name\":\"b\",\"queue\":\"q\",\"unique\":{\"key\":\"k\"}},"
       "{\"name\":\"b\",\"queue\":\"q\",\"unique\":{\"key\":\"k\"}}]}", &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "tasks.1.id"), jstr(&r, "tasks.0.id"));
    CHECK(jbool(&r, "tasks.0.created"));
    CHECK(!jbool(&r, "tasks.1.created"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "4");
    srv_stop(&s);
}

/* byArgs: the args as JSON values (jsonb): the order of members and white
 * space do not tell two sends apart; other args are another key. */
TEST(by_args_holds_one_task_per_name_and_args_whatever_their_member_order)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    char first[96];
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":{\"x\":1,\"y\":[1,2]},\"unique\":{\"byArgs\":true}}", &r);
    keep_str(first, jstr(&r, "id"));
    reply_fini(&r);
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":{ \"y\": [1, 2], \"x\": 1 },\"unique\":{\"byArgs\":true}}",
                &r);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(!jbool(&r, "created"));
    reply_fini(&r);
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":{\"x\":2,\"y\":[1,2]},\"unique\":{\"byArgs\":true}}", &r);
    CHECK(jbool(&r, "created"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "2");
    srv_stop(&s);
}

/* while live (the default): once the holder is COMPLETED, a send of its key
 * creates a task; while it runs, the key stays held. */
TEST(a_live_key_is_held_while_its_task_runs_and_freed_when_it_ends)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *body = "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"k\",\"while\":\"live\"}}";
    reply r;
    char first[96];
    send_unique(&s, body, &r);
    keep_str(first, jstr(&r, "id"));
    reply_fini(&r);
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    send_unique(&s, body, &r);
    CHECK_STR(jstr(&r, "id"), first);   /* RUNNING is live */
    reply_fini(&r);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":1"), 200);
    send_unique(&s, body, &r);
    CHECK(jbool(&r, "created"));
    CHECK(strcmp(jstr(&r, "id"), first) != 0);
    reply_fini(&r);
    CHECK_STR(sql("SELECT task_id FROM tasks.unique_keys"), sql("SELECT id FROM horsies_tasks"));
    srv_stop(&s);
}

/* forMs: held from the first send for the period, though its task ended;
 * the first send after the period creates a task. */
TEST(a_period_key_is_held_after_its_task_ends_until_the_period_is_over)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *body = "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"k\",\"forMs\":1500}}";
    reply r;
    char first[96];
    int64_t sent_at = now_ms();
    send_unique(&s, body, &r);
    keep_str(first, jstr(&r, "id"));
    reply_fini(&r);
    run_to_completion(&s, "q", first);
    bool created = false;
    int64_t created_at = 0;
    while (!created && now_ms() - sent_at < 15000) {
        int64_t before = now_ms();
        send_unique(&s, body, &r);
        created = jbool(&r, "created");
        if (!created) { CHECK_STR(jstr(&r, "id"), first); CHECK(before - sent_at < 1500 + 1000); }
        else created_at = now_ms();
        reply_fini(&r);
        if (!created) pause_ms(100);   /* polling a clock-bound condition, with the deadline above */
    }
    CHECK(created);
    CHECK(created_at - sent_at >= 1500);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "1");
    srv_stop(&s);
}

/* replace: a PENDING holder that never started gets the new args; once it
 * runs, a send is answered as "existing" (changed false). */
TEST(replace_gives_a_holder_that_has_not_started_the_new_args)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    char first[96];
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":{\"v\":1},\"unique\":{\"key\":\"k\",\"onConflict\":\"replace\"}}",
                &r);
    keep_str(first, jstr(&r, "id"));
    CHECK(!jbool(&r, "changed"));
    reply_fini(&r);
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":{\"v\":2},\"unique\":{\"key\":\"k\",\"onConflict\":\"replace\"}}",
                &r);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(!jbool(&r, "created"));
    CHECK(jbool(&r, "changed"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT args::text FROM horsies_tasks"), "{\"v\":2}");
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":{\"v\":3},\"unique\":{\"key\":\"k\",\"onConflict\":\"replace\"}}",
                &r);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(!jbool(&r, "changed"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT args::text FROM horsies_tasks"), "{\"v\":2}");
    srv_stop(&s);
}

/* debounce: a PENDING holder's start moves to the new send's (its delay
 * counted from now); its args stay. */
TEST(debounce_moves_a_pending_holders_start_to_the_new_sends)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    char first[96];
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":1,\"delayMs\":60000,"
                    "\"unique\":{\"key\":\"k\",\"onConflict\":\"debounce\"}}", &r);
    keep_str(first, jstr(&r, "id"));
    reply_fini(&r);
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":2,\"delayMs\":600000,"
                    "\"unique\":{\"key\":\"k\",\"onConflict\":\"debounce\"}}", &r);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(jbool(&r, "changed"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT args::text || ' ' || (run_at - now() BETWEEN interval '590 s' AND interval '600 s')"
                  " FROM horsies_tasks"), "1 true");
    /* without a delay: claimable now */
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"k\",\"onConflict\":\"debounce\"}}", &r);
    CHECK(jbool(&r, "changed"));
    reply_fini(&r);
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_STR(c.id, first);
    srv_stop(&s);
}

/* Starts PARALLEL_SENDS sends of body at once, alternately on a and b;
 * each must be answered 201. */
static void send_in_parallel(silt_server *a, silt_server *b, const char *body)
{
    bg_req w[PARALLEL_SENDS];
    for (int i = 0; i < PARALLEL_SENDS; i++) bg_start(&w[i], i % 2 ? b : a, "POST", "/api/v1/tasks", body);
    for (int i = 0; i < PARALLEL_SENDS; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&w[i], &status, &elapsed);
        CHECK_INT(status, 201);
    }
}

/* Many sends of one key at once on two servers create one task; once it
 * ended, many at once take the freed key over once. */
TEST(concurrent_sends_of_one_key_on_two_servers_create_exactly_one_task)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    const char *body = "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"k\"}}";
    send_in_parallel(&a, &b, body);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "1");
    char first[96];
    keep_str(first, sql("SELECT id FROM horsies_tasks"));
    run_to_completion(&a, "q", first);
    send_in_parallel(&a, &b, body);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "1");
    CHECK_STR(sql("SELECT count(*) FROM tasks.unique_keys"), "1");
    /* byArgs and a period, likewise */
    send_in_parallel(&a, &b, "{\"name\":\"p\",\"queue\":\"q\",\"args\":[1],\"unique\":{\"byArgs\":true,\"forMs\":60000}}");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE task_name = 'p'"), "1");
    srv_stop(&a);
    srv_stop(&b);
}

/* The SQL API takes the same uniqueness (its unique_* arguments, and
 * "unique" in send_tasks's objects), held across both paths. */
TEST(the_sql_api_honours_unique_as_http_does)
{
    silt_server s;
    srv_start(&s, NULL);
    char first[96];
    keep_str(first, sql("SELECT tasks.send_task('a', 'q', '{\"v\":1}', unique_key => 'k',"
                        " unique_on_conflict => 'replace')"));
    CHECK_STR(sql("SELECT tasks.send_task('a', 'q', '{\"v\":2}', unique_key => 'k', unique_on_conflict => 'replace')"),
              first);
    CHECK_STR(sql("SELECT args::text FROM horsies_tasks"), "{\"v\":2}");
    CHECK_STR(sql("SELECT id || ' ' || created || ' ' || changed FROM tasks.send_tasks('[{\"name\":\"a\",\"queue\":\"q\","
                  "\"args\":{\"v\":3},\"unique\":{\"key\":\"k\",\"onConflict\":\"replace\"}}]')"),
              sfmt("%s false true", first));
    reply r;
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"k\"}}", &r);
    CHECK_STR(jstr(&r, "id"), first);
    reply_fini(&r);
    CHECK_STR(sql("SELECT created || ' ' || coalesce(changed::text, 'null') FROM tasks.send_tasks("
                  "'[{\"name\":\"b\",\"queue\":\"q\"}]')"), "true null");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "2");
    srv_stop(&s);
}

/* Bad "unique": a 400 naming the field (and the task in a batch); nothing
 * written, neither task nor key; by SQL, 22023 with the same words. */
TEST(bad_unique_input_is_a_400_naming_the_field_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    static const struct { const char *unique, *field, *error; } cases[] = {
        { "\"k\"", "unique", "unique must be an object" },
        { "{}", "unique", "unique needs unique.key or unique.byArgs" },
        { "{\"key\":\"k\",\"byArgs\":true}", "unique", "unique.key and unique.byArgs cannot both be given" },
        { "{\"key\":\"\"}", "unique.key", "unique.key must be a non-empty string of at most 200 bytes" },
        { "{\"key\":7}", "unique.key", "unique.key must be a non-empty string of at most 200 bytes" },
        { "{\"byArgs\":false}", "unique.byArgs", "unique.byArgs must be true" },
        { "{\"key\":\"k\",\"forMs\":0}", "unique.forMs", "unique.forMs must be an integer from 1 to 31622400000" },
        { "{\"key\":\"k\",\"forMs\":1.5}", "unique.forMs", "unique.forMs must be an integer from 1 to 31622400000" },
        { "{\"key\":\"k\",\"while\":\"pending\"}", "unique.while", "unique.while must be \"live\"" },
        { "{\"key\":\"k\",\"forMs\":5,\"while\":\"live\"}", "unique.while",
          "unique.forMs and unique.while cannot both be given" },
        { "{\"key\":\"k\",\"onConflict\":\"ignore\"}", "unique.onConflict",
          "unique.onConflict must be \"existing\", \"replace\" or \"debounce\"" },
        { "{\"byArgs\":true,\"onConflict\":\"replace\"}", "unique.onConflict",
          "unique.onConflict \"replace\" needs unique.key: with byArgs the args are the key" },
        { "{\"key\":\"k\",\"for_ms\":5}", "unique.for_ms", "unknown field \"for_ms\" in unique" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reply r;
        rq(&s, "POST", "/api/v1/tasks", sfmt("{\"tasks\":[{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"ok\"}},"
                                             "{\"name\":\"a\",\"queue\":\"q\",\"unique\":%s}]}", cases[i].unique), &r);
        CHECK_INT(r.status, 400);
        CHECK_STR(jstr(&r, "field"), cases[i].field);
        CHECK_STR(jstr(&r, "error"), sfmt("tasks[1]: %s", cases[i].error));
        reply_fini(&r);
    }
    reply r;
    rq(&s, "POST", "/api/v1/tasks", "{\"name\":\"a\",\"queue\":\"q\",\"idempotencyKey\":\"i\",\"unique\":{\"key\":\"k\"}}",
       &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "field"), "unique");
    CHECK_STR(jstr(&r, "error"), "unique and idempotencyKey cannot both be given");
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    CHECK_STR(sql("SELECT count(*) FROM tasks.unique_keys"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_idempotency"), "0");
    srv_stop(&s);
}

/* The sweep deletes keys that hold nothing (a task ended, a period over)
 * and keeps the held ones. */
TEST(the_sweep_deletes_unique_keys_that_hold_nothing_and_keeps_the_held)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    char ended[96];
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"ended\"}}", &r);
    keep_str(ended, jstr(&r, "id"));
    reply_fini(&r);
    run_to_completion(&s, "q", ended);
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"held\"}}", &r);
    reply_fini(&r);
    send_unique(&s, "{\"name\":\"a\",\"queue\":\"q\",\"unique\":{\"key\":\"period\",\"forMs\":600000}}", &r);
    reply_fini(&r);
    sql("UPDATE tasks.unique_keys SET expires_at = now() - interval '1 s' WHERE scope = 'key:period'");
    rq(&s, "POST", "/api/v1/system/task-retention/sweep", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "uniqueKeysDeleted"), 2);
    reply_fini(&r);
    CHECK_STR(sql("SELECT string_agg(scope, ',') FROM tasks.unique_keys"), "key:held");
    CHECK(srv_metric(&s, "silt_task_sweep_rows_deleted_total{kind=\"unique_keys\"}") == 2);
    srv_stop(&s);
}

/* silt task send --unique-*: the first send prints the id, a second the
 * holder's with "(existing task, changed)" after a replace; a bad
 * combination is the server's 400: a failed command, nothing sent. */
TEST(cli_task_send_takes_unique_options)
{
    silt_server s;
    srv_start(&s, NULL);
    char out[4096], first[96];
    const char *send = sfmt("SILT_URL=%s %s task send a --queue q --unique-key k --on-conflict replace", s.url,
                            silt_bin());
    CHECK_INT(run_cmd(sfmt("%s --args 1 2>&1", send), out, sizeof out), 0);
    keep_str(first, strtok(out, "\n"));
    CHECK_INT(run_cmd(sfmt("%s --args 2 2>&1", send), out, sizeof out), 0);
    CHECK_STR(out, sfmt("%s (existing task, changed)\n", first));
    CHECK_STR(sql("SELECT args::text FROM horsies_tasks"), "2");
    CHECK(run_cmd(sfmt("SILT_URL=%s %s task send a --queue q --unique-by-args --unique-for-ms 5000"
                       " --unique-while live 2>&1", s.url, silt_bin()), out, sizeof out) != 0);
    CHECK(strstr(out, "unique.forMs and unique.while cannot both be given") != NULL);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "1");
    srv_stop(&s);
}
