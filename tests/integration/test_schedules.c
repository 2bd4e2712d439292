/* Integration: schedules of silt.conf fired on their cron, each slot once
 * across servers, and caught up after downtime as configured. No test
 * waits for a minute to pass: the shared state is set back in time before
 * the servers start, so the slots are already due. A slot every minute
 * ("* * * * *") makes the arithmetic plain: slots are whole minutes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

/* A silt.conf of the schedule tick, with schedule's lines added to it. */
static const char *conf_with(const char *schedule)
{
    return test_file("silt.conf", sfmt("[schedule.tick]\ncron = * * * * *\ntask = tick\nqueue = q\n"
                                       "args = {\"n\": 1}\n%s", schedule));
}

static char initial_slot[96];   /* where the test set the schedule */

/* The schedule last fired minutes_ago whole minutes (and a second) ago. */
static void last_fired_minutes_ago(int minutes_ago)
{
    sql("INSERT INTO horsies_schedule_state (schedule_name, last_slot) VALUES ('tick',"
        " date_trunc('minute', now()) - make_interval(mins => %d) - interval '1 second')", minutes_ago);
    keep_str(initial_slot, sql("SELECT last_slot FROM horsies_schedule_state"));
}


/* Slots taken since the test set the state: the whole minutes after it, up
 * to the last slot recorded (the first is a second after it). */
static int slots_taken(void)
{
    return atoi(sql("SELECT floor(extract(epoch FROM last_slot - '%s'::timestamptz) / 60)::int + 1"
                    " FROM horsies_schedule_state", initial_slot));
}

TEST(two_servers_fire_every_slot_once)
{
    last_fired_minutes_ago(5);
    const char *conf = conf_with("catch_up = 10\n");
    silt_server a, b;
    srv_start(&a, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    srv_start(&b, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    sql_await("t", 15000, "SELECT last_slot >= date_trunc('minute', now()) - interval '1 minute'"
                          " FROM horsies_schedule_state");
    /* every slot from five minutes back to now fired, each by one server */
    /* read in one snapshot with the state: a fire moves both at once */
    sql_await("t", 5000, "SELECT count(*) = (SELECT floor(extract(epoch FROM last_slot - '%s'::timestamptz) / 60) + 1"
                         " FROM horsies_schedule_state) FROM horsies_tasks", initial_slot);
    CHECK(slots_taken() >= 5);
    CHECK_STR(sql("SELECT DISTINCT task_name || ' ' || queue_name || ' ' || args::text FROM horsies_tasks"),
              "tick q {\"n\": 1}");
    srv_stop(&a);
    srv_stop(&b);
}

TEST(missed_slots_are_passed_over_with_catch_up_skip)
{
    last_fired_minutes_ago(10);
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf_with("catch_up = skip\n")), NULL });
    sql_await("t", 15000, "SELECT last_slot >= date_trunc('minute', now()) - interval '1 minute'"
                          " FROM horsies_schedule_state");
    /* the ten missed minutes fired nothing; only the slot still within its grace may have */
    CHECK(atoi(sql("SELECT count(*) FROM horsies_tasks")) <= 2);
    srv_stop(&s);
}

TEST(missed_slots_run_up_to_n_with_catch_up_n)
{
    last_fired_minutes_ago(10);
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf_with("catch_up = 3\n")), NULL });
    sql_await("t", 15000, "SELECT last_slot >= date_trunc('minute', now()) - interval '1 minute'"
                          " FROM horsies_schedule_state");
    int64_t end = now_ms() + 5000;
    while (now_ms() < end && atoi(sql("SELECT count(*) FROM horsies_tasks")) < 4) pause_ms(50);
    int fired = atoi(sql("SELECT count(*) FROM horsies_tasks"));
    CHECK(fired >= 4 && fired <= 5);   /* three missed, the one on time (and one more if a minute turned) */
    srv_stop(&s);
}

TEST(a_schedule_never_seen_starts_from_now_and_is_listed_with_its_next_fire)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf_with("")), NULL });
    reply r;
    rq(&s, "GET", "/api/v1/schedules", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "schedules.0.name"), "tick");
    CHECK_STR(jstr(&r, "schedules.0.cron"), "* * * * *");
    CHECK_STR(jstr(&r, "schedules.0.timezone"), "UTC");
    CHECK(jpath(&r, "schedules.0.nextFire") >= 0 && strlen(jstr(&r, "schedules.0.nextFire")) == 24);
    reply_fini(&r);
    sql_await("1", 10000, "SELECT count(*) FROM horsies_schedule_state");   /* recorded from now */
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    srv_stop(&s);
}
