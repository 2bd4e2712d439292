/* Integration: schedules made at run time (POST /api/v1/schedules, PATCH,
 * pause, resume, DELETE; `silt schedule`). They fire once per slot across
 * servers with silt.conf's catch-up rules; a change, pause or delete is
 * honoured at once; silt.conf's own schedules are listed with their origin
 * and refused to the API; bad input is a 400 naming the field with nothing
 * written. As in test_schedules.c, no test waits for a minute to pass: the
 * shared state is set back in time, so slots are already due ("* * * * *":
 * slots are whole minutes). That a scheduler looked (and fired nothing) is
 * known from a control schedule, "ctl", that it fires in the same tick. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

#define DEADLINE_MS 15000
#define CLI_OUT     65536

static const char EVERY_MINUTE[] = "{\"name\":\"%s\",\"cron\":\"* * * * *\",\"task\":\"%s\",\"queue\":\"q\","
                                   "\"args\":{\"n\": 1},\"catchUp\":10%s}";

static void create(silt_server *s, const char *name, const char *task, const char *more)
{
    reply r;
    rq(s, "POST", "/api/v1/schedules", sfmt(EVERY_MINUTE, name, task, more), &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "name"), name);
    CHECK_STR(jstr(&r, "origin"), "api");
    reply_fini(&r);
}

static int status_of(silt_server *s, const char *method, const char *path, const char *body)
{
    reply r;
    rq(s, method, path, body, &r);
    int status = r.status;
    reply_fini(&r);
    return status;
}

/* The schedule's state set to minutes_ago whole minutes (and a second)
 * ago: that many slots are owed. Returns the slot set, for slots_taken. */
static const char *set_back(const char *name, int minutes_ago)
{
    return sql("UPDATE horsies_schedule_state SET last_slot = date_trunc('minute', now())"
               " - make_interval(mins => %d) - interval '1 second' WHERE schedule_name = '%s' RETURNING last_slot",
               minutes_ago, name);
}

static int tasks_named(const char *task)
{
    return atoi(sql("SELECT count(*) FROM horsies_tasks WHERE task_name = '%s'", task));
}

/* Waits until the clock is well inside a minute: at least 5 s past its
 * turn (the fire of the slot that began has landed) and 10 s before the
 * next, so no fire of the clock's own slot is in flight while a test sets
 * the state back (that slot would then be fired a second time). */
static void inside_a_minute(void)
{
    sql_await("t", 20000, "SELECT extract(second FROM clock_timestamp()) BETWEEN 5 AND 50");
}

/* Sets name back three minutes and waits until it fired every slot owed;
 * the tasks it fired. Slots taken and tasks fired are read in one
 * snapshot: a fire moves the state and inserts its task in one
 * transaction, so the two agree even when a minute turns meanwhile. */
static int fire_owed(const char *name, const char *task)
{
    inside_a_minute();
    int before = tasks_named(task);
    char from[96];
    keep_str(from, set_back(name, 3));
    int slots = 0, fired = 0;
    int64_t end = now_ms() + DEADLINE_MS;
    do {
        if (slots > 0) pause_ms(50);
        const char *row = sql("SELECT floor(extract(epoch FROM last_slot - '%s'::timestamptz) / 60)::int + 1 || ' ' ||"
                              " (SELECT count(*) - %d FROM horsies_tasks WHERE task_name = '%s')"
                              " FROM horsies_schedule_state WHERE schedule_name = '%s'", from, before, task, name);
        CHECK(sscanf(row, "%d %d", &slots, &fired) == 2);
    } while (now_ms() < end && (slots < 4 || fired < slots));
    CHECK(slots >= 4);
    CHECK_INT(fired, slots);
    return fired;
}

/* Two ticks of every server pass: the control schedule fires owed slots
 * twice, and a tick starts only once the fires of the one before are back,
 * so whatever the first tick fired has landed. */
static void two_ticks_pass(void)
{
    for (int i = 0; i < 2; i++) {
        int before = tasks_named("ctl");
        set_back("ctl", 2);
        int64_t end = now_ms() + DEADLINE_MS;
        while (now_ms() < end && tasks_named("ctl") <= before) pause_ms(50);
        CHECK(tasks_named("ctl") > before);
    }
}

TEST(an_api_schedule_fires_every_slot_it_owes_and_is_listed_with_its_origin)
{
    silt_server s;
    srv_start(&s, NULL);
    create(&s, "tick", "tick", ",\"priority\":7");
    reply r;
    rq(&s, "GET", "/api/v1/schedules", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "schedules.0.name"), "tick");
    CHECK_STR(jstr(&r, "schedules.0.origin"), "api");
    CHECK(!jbool(&r, "schedules.0.paused"));
    CHECK_STR(jraw(&r, "schedules.0.args"), "{\"n\": 1}");
    CHECK_INT(jint(&r, "schedules.0.catchUp"), 10);
    CHECK_STR(jstr(&r, "schedules.0.timezone"), "UTC");
    CHECK(strlen(jstr(&r, "schedules.0.nextFire")) == 24);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");   /* nothing before its creation is owed */
    fire_owed("tick", "tick");
    CHECK_STR(sql("SELECT DISTINCT queue_name || ' ' || args::text || ' ' || priority FROM horsies_tasks"),
              "q {\"n\": 1} 7");
    rq(&s, "GET", "/api/v1/schedules/tick", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "lastTaskId"), sql("SELECT last_task_id FROM horsies_schedule_state"));
    reply_fini(&r);
    CHECK_INT(status_of(&s, "GET", "/api/v1/schedules/nope", NULL), 404);
    srv_stop(&s);
}

TEST(a_change_takes_effect_from_the_next_slot_and_a_fire_of_the_old_definition_is_refused)
{
    silt_server s;
    srv_start(&s, NULL);
    create(&s, "tick", "before", "");
    const char *version = sql("SELECT version FROM tasks.schedules WHERE name = 'tick'");
    char old[32];
    snprintf(old, sizeof old, "%s", version);
    reply r;
    rq(&s, "PATCH", "/api/v1/schedules/tick", "{\"task\":\"after\",\"args\":[2],\"priority\":null}", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "task"), "after");
    CHECK_STR(jraw(&r, "args"), "[2]");
    CHECK_STR(jstr(&r, "cron"), "* * * * *");   /* what the change did not name stays */
    CHECK_INT(jint(&r, "catchUp"), 10);
    reply_fini(&r);
    /* a server that still read the old definition fires nothing from it */
    CHECK_STR(sql("SELECT tasks.schedule_fire('tick', now() + interval '1 hour', true, 'before', 'q', 'null',"
                  " 100, 'standard_30d', %s) IS NULL", old), "t");
    fire_owed("tick", "after");
    CHECK_INT(tasks_named("before"), 0);
    CHECK_STR(sql("SELECT DISTINCT args::text FROM horsies_tasks"), "[2]");
    /* a new cron goes on from now: the slots before the change are not owed */
    set_back("tick", 3);
    rq(&s, "PATCH", "/api/v1/schedules/tick", "{\"cron\":\"*/2 * * * *\"}", &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql("SELECT last_slot >= now() - interval '1 second' FROM horsies_schedule_state"), "t");
    srv_stop(&s);
}

TEST(a_paused_schedule_fires_nothing_and_on_resume_skips_the_slots_of_the_pause)
{
    silt_server s;
    srv_start(&s, NULL);
    create(&s, "ctl", "ctl", "");
    create(&s, "tick", "tick", "");
    reply r;
    rq(&s, "POST", "/api/v1/schedules/tick/pause", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "paused"));
    CHECK(jpath(&r, "nextFire") >= 0 && strcmp(jraw(&r, "nextFire"), "null") == 0);
    reply_fini(&r);
    CHECK_INT(status_of(&s, "POST", "/api/v1/schedules/tick/pause", NULL), 200);   /* again: no change */
    set_back("tick", 3);
    two_ticks_pass();
    CHECK_INT(tasks_named("tick"), 0);
    inside_a_minute();
    rq(&s, "POST", "/api/v1/schedules/tick/resume", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "paused"));
    reply_fini(&r);
    char resumed[96];
    keep_str(resumed, sql("SELECT last_slot FROM horsies_schedule_state WHERE schedule_name = 'tick'"));
    CHECK_STR(sql("SELECT '%s'::timestamptz >= now() - interval '1 second'", resumed), "t");
    two_ticks_pass();
    /* the three slots of the pause were skipped, catchUp 10 or not: only a
     * minute that began since the resume (the clock is real) may have fired,
     * one task for each, read in one snapshot with the state */
    CHECK_STR(sql("SELECT (SELECT count(*) FROM horsies_tasks WHERE task_name = 'tick')"
                  " = floor(extract(epoch FROM last_slot) / 60) - floor(extract(epoch FROM '%s'::timestamptz) / 60)"
                  " FROM horsies_schedule_state WHERE schedule_name = 'tick'", resumed), "t");
    fire_owed("tick", "tick");           /* and it fires again */
    srv_stop(&s);
}

TEST(a_deleted_schedule_stops_at_once_and_its_name_is_free)
{
    silt_server s;
    srv_start(&s, NULL);
    create(&s, "ctl", "ctl", "");
    create(&s, "tick", "tick", "");
    char version[32];
    snprintf(version, sizeof version, "%s", sql("SELECT version FROM tasks.schedules WHERE name = 'tick'"));
    reply r;
    rq(&s, "DELETE", "/api/v1/schedules/tick", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "name"), "tick");
    CHECK(jbool(&r, "deleted"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT tasks.schedule_fire('tick', now(), true, 'tick', 'q', 'null', 100, 'standard_30d', %s)"
                  " IS NULL", version), "t");
    CHECK_STR(sql("SELECT count(*) FROM horsies_schedule_state WHERE schedule_name = 'tick'"), "0");
    two_ticks_pass();
    CHECK_INT(tasks_named("tick"), 0);
    CHECK_INT(status_of(&s, "GET", "/api/v1/schedules/tick", NULL), 404);
    CHECK_INT(status_of(&s, "DELETE", "/api/v1/schedules/tick", NULL), 404);
    CHECK_INT(status_of(&s, "POST", "/api/v1/schedules/tick/resume", NULL), 404);
    CHECK_INT(status_of(&s, "PATCH", "/api/v1/schedules/tick", "{\"task\":\"x\"}"), 404);
    create(&s, "tick", "tick", "");   /* the name may be used again */
    srv_stop(&s);
}

TEST(a_config_schedule_is_listed_with_its_origin_and_the_api_cannot_change_it)
{
    const char *conf = test_file("silt.conf", "[queue.q]\n[schedule.nightly]\ncron = 30 3 * * *\n"
                                              "task = report\nqueue = q\n");
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    reply r;
    rq(&s, "GET", "/api/v1/schedules/nightly", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "origin"), "config");
    CHECK_STR(jstr(&r, "cron"), "30 3 * * *");
    reply_fini(&r);
    const char *before = sql("SELECT version || updated_at::text FROM tasks.schedules");
    char kept[96];
    keep_str(kept, before);
    const char *paths[][3] = {
        { "PATCH", "/api/v1/schedules/nightly", "{\"cron\":\"* * * * *\"}" },
        { "POST", "/api/v1/schedules/nightly/pause", NULL },
        { "POST", "/api/v1/schedules/nightly/resume", NULL },
        { "DELETE", "/api/v1/schedules/nightly", NULL },
        { "POST", "/api/v1/schedules",
          "{\"name\":\"nightly\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\"}" },
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        rq(&s, paths[i][0], paths[i][1], paths[i][2], &r);
        CHECK_INT(r.status, 409);
        CHECK_STR(jstr(&r, "field"), "name");
        CHECK(strstr(jstr(&r, "error"), "declared in silt.conf") != NULL);
        reply_fini(&r);
    }
    CHECK_STR(sql("SELECT version || updated_at::text FROM tasks.schedules"), kept);
    /* a file without it: gone at the next start */
    srv_stop(&s);
    conf = test_file("silt.conf", "[queue.q]\n");
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    CHECK_STR(sql("SELECT count(*) FROM tasks.schedules"), "0");
    srv_stop(&s);
}

TEST(a_file_that_declares_an_api_schedules_name_takes_it_over)
{
    silt_server s;
    srv_start(&s, NULL);
    create(&s, "tick", "tick", ",\"paused\":true");
    srv_stop(&s);
    const char *conf = test_file("silt.conf", "[schedule.tick]\ncron = 0 * * * *\ntask = filed\nqueue = q\n");
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    CHECK_STR(sql("SELECT origin || ' ' || cron || ' ' || task_name || ' ' || (paused_at IS NULL)"
                  " FROM tasks.schedules"), "config 0 * * * * filed true");
    srv_stop(&s);
}

TEST(two_servers_fire_each_slot_of_an_api_schedule_once_and_honour_a_change_made_on_the_other)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    create(&a, "tick", "tick", "");
    fire_owed("tick", "tick");
    /* paused on b, the tick that a owes is not fired by a either */
    create(&a, "ctl", "ctl", "");
    CHECK_INT(status_of(&b, "POST", "/api/v1/schedules/tick/pause", NULL), 200);
    int fired = tasks_named("tick");
    set_back("tick", 3);
    two_ticks_pass();
    CHECK_INT(tasks_named("tick"), fired);
    srv_stop(&a);
    srv_stop(&b);
}

TEST(an_api_schedule_survives_a_restart)
{
    silt_server s;
    srv_start(&s, NULL);
    create(&s, "tick", "tick", "");
    srv_stop(&s);
    srv_start(&s, NULL);
    reply r;
    rq(&s, "GET", "/api/v1/schedules", NULL, &r);
    CHECK_STR(jstr(&r, "schedules.0.name"), "tick");
    CHECK_STR(jstr(&r, "schedules.0.origin"), "api");
    reply_fini(&r);
    fire_owed("tick", "tick");
    srv_stop(&s);
}

/* Each body refused 400 naming field; nothing written. */
static void refused(silt_server *s, const char *method, const char *path, const char *body, const char *field)
{
    reply r;
    rq(s, method, path, body, &r);
    if (r.status != 400 || !field || jpath(&r, "field") < 0 || strcmp(jstr(&r, "field"), field) != 0)
        fprintf(stderr, "%s %s %s: %d %s\n", method, path, body, r.status, r.raw.body.data);
    CHECK_INT(r.status, 400);
    if (field) CHECK_STR(jstr(&r, "field"), field);
    reply_fini(&r);
}

TEST(bad_schedule_definitions_are_refused_naming_the_field_and_nothing_is_written)
{
    const char *conf = test_file("silt.conf", "[queue.q]\n");
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    static const struct { const char *body, *field; } bad[] = {
        { "{\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\"}", "name" },
        { "{\"name\":\"a b\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\"}", "name" },
        { "{\"name\":7,\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\"}", "name" },
        { "{\"name\":\"n\",\"task\":\"t\",\"queue\":\"q\"}", "cron" },
        { "{\"name\":\"n\",\"cron\":\"61 * * * *\",\"task\":\"t\",\"queue\":\"q\"}", "cron" },
        { "{\"name\":\"n\",\"cron\":\"0 0 30 2 *\",\"task\":\"t\",\"queue\":\"q\"}", "cron" },
        { "{\"name\":\"n\",\"cron\":null,\"task\":\"t\",\"queue\":\"q\"}", "cron" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"timezone\":\"Mars/Olympus\",\"task\":\"t\",\"queue\":\"q\"}",
          "timezone" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"queue\":\"q\"}", "task" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"\",\"queue\":\"q\"}", "task" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\"}", "queue" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"undeclared\"}", "queue" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\",\"catchUp\":1001}", "catchUp" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\",\"catchUp\":\"skip\"}", "catchUp" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\",\"priority\":0}", "priority" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\",\"retentionClassKey\":\"nope\"}",
          "retentionClassKey" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\",\"paused\":1}", "paused" },
        { "{\"name\":\"n\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\",\"every\":5}", "every" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(&s, "POST", "/api/v1/schedules", bad[i].body, bad[i].field);
    refused(&s, "POST", "/api/v1/schedules", "{not json", NULL);
    CHECK_STR(sql("SELECT count(*) FROM tasks.schedules"), "0");
    /* a change: the same rules, and nothing changed */
    create(&s, "tick", "tick", "");
    char kept[96];
    keep_str(kept, sql("SELECT version || cron || task_name FROM tasks.schedules"));
    refused(&s, "PATCH", "/api/v1/schedules/tick", "{\"cron\":\"* * *\"}", "cron");
    refused(&s, "PATCH", "/api/v1/schedules/tick", "{\"task\":\"t2\",\"queue\":\"undeclared\"}", "queue");
    refused(&s, "PATCH", "/api/v1/schedules/tick", "{\"task\":null}", "task");
    refused(&s, "PATCH", "/api/v1/schedules/tick", "{\"name\":\"other\"}", "name");
    refused(&s, "PATCH", "/api/v1/schedules/tick", "{}", NULL);
    CHECK_STR(sql("SELECT version || cron || task_name FROM tasks.schedules"), kept);
    /* a name taken: 409, the first one kept */
    reply r;
    rq(&s, "POST", "/api/v1/schedules", sfmt(EVERY_MINUTE, "tick", "other", ""), &r);
    CHECK_INT(r.status, 409);
    CHECK_STR(jstr(&r, "field"), "name");
    reply_fini(&r);
    CHECK_STR(sql("SELECT task_name FROM tasks.schedules"), "tick");
    srv_stop(&s);
}

static int cli(const silt_server *s, char *out, const char *args)
{
    return run_cmd(sfmt("SILT_URL='%s' '%s' %s 2>&1", s->url, silt_bin(), args), out, CLI_OUT);
}

TEST(schedule_cli_creates_changes_pauses_resumes_and_deletes)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    CHECK_INT(cli(&s, out, "schedule create tick --cron '*/5 * * * *' --task t --queue q --args '{\"a\":1}'"
                           " --catch-up skip --priority 3"), 0);
    CHECK(strstr(out, "origin") && strstr(out, "api"));
    CHECK_STR(sql("SELECT cron || ' ' || args::text || ' ' || catch_up || ' ' || priority FROM tasks.schedules"),
              "*/5 * * * * {\"a\":1} 0 3");
    CHECK_INT(cli(&s, out, "schedule set tick --task t2 --catch-up 4"), 0);
    CHECK_STR(sql("SELECT task_name || ' ' || catch_up FROM tasks.schedules"), "t2 4");
    CHECK_INT(cli(&s, out, "schedule pause tick"), 0);
    CHECK_STR(sql("SELECT paused_at IS NOT NULL FROM tasks.schedules"), "t");
    CHECK_INT(cli(&s, out, "schedule list"), 0);
    const char *row = line_starting(out, "tick ");
    CHECK(row != NULL && strstr(row, "api") && strstr(row, "true"));
    CHECK_INT(cli(&s, out, "schedule resume tick --json"), 0);
    CHECK(strstr(out, "\"paused\": false") != NULL);
    CHECK_INT(cli(&s, out, "schedule show tick"), 0);
    CHECK(strstr(out, "t2") != NULL);
    CHECK_INT(cli(&s, out, "schedule delete tick"), 0);
    CHECK(strstr(out, "deleted schedule tick") != NULL);
    CHECK_STR(sql("SELECT count(*) FROM tasks.schedules"), "0");
    /* usage errors: exit 2, nothing sent */
    CHECK_INT(cli(&s, out, "schedule create tick --cron '* * * * *' --task t"), 2);
    CHECK(strstr(out, "--queue") != NULL);
    CHECK_INT(cli(&s, out, "schedule create tick --cron '* * * * *' --task t --queue q --args '{'"), 2);
    CHECK_INT(cli(&s, out, "schedule create tick --cron '* * * * *' --task t --queue q --catch-up often"), 2);
    CHECK_INT(cli(&s, out, "schedule set tick"), 2);
    CHECK_INT(cli(&s, out, "schedule frobnicate"), 2);
    CHECK_INT(cli(&s, out, "schedule"), 2);
    CHECK_STR(sql("SELECT count(*) FROM tasks.schedules"), "0");
    /* the server's refusals: exit 1 with its message */
    CHECK_INT(cli(&s, out, "schedule pause nope"), 1);
    CHECK(strstr(out, "no schedule") != NULL);
    srv_stop(&s);
}
