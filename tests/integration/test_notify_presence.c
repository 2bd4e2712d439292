/* Integration: servers' presence on the announcement channel (silt_tasks,
 * "presence" in src/tasks/hub.c). A server that has heard no other's hello
 * for a while sends its announcements to nobody; a hello makes it announce
 * again, and answers "lookagain" when something was dropped meanwhile, so
 * that a newcomer's parked requests look again. These tests listen on the
 * channel themselves, as another server would, and run two servers. */
#include <stdio.h>
#include <string.h>
#include <libpq-fe.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

#define LAPSE_DEADLINE_MS 10000   /* the server's lapse is 3.5 s of silence */

/* The next notification on pg's channel whose payload ends with suffix,
 * within timeout_ms; the payloads passed over on the way are appended to
 * seen (with a newline each). Fails the test at the deadline. */
static const char *await_payload(PGconn *pg, const char *suffix, char *seen, size_t seen_size, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    size_t slen = strlen(suffix);
    for (const char *n; (n = session_notification(pg, deadline)) != NULL; ) {
        size_t len = strlen(n);
        if (len >= slen && strcmp(n + len - slen, suffix) == 0) return n;
        size_t used = strlen(seen);
        snprintf(seen + used, seen_size - used, "%s\n", n);
    }
    harness_failf(__FILE__, __LINE__, "no notification ending \"%s\" came (saw: %s)", suffix, seen);
}

/* A server started and left until it is alone, and a session listening on
 * its channel as another server would. */
static PGconn *start_alone_with_ear(silt_server *s)
{
    srv_start(s, NULL);
    srv_await_metric(s, "silt_notify_alone", 1, LAPSE_DEADLINE_MS);
    PGconn *ear = test_session();
    session_run(ear, "LISTEN silt_tasks");
    return ear;
}

/* Another server's hello, said by the test's session: the server is not
 * alone for 3.5 s after it, so the step that needs it comes right after. */
static void say_hello(PGconn *ear)
{
    session_run(ear, "NOTIFY silt_tasks, 'test-origin hello'");
}

/* Alone, a server drops its announcements; another's hello is answered
 * with lookagain (something was dropped), and from then on it announces. */
TEST(a_server_alone_tells_nobody_until_another_says_hello)
{
    silt_server s;
    PGconn *ear = start_alone_with_ear(&s);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"dropped\"}");   /* "sent:dropped" goes to nobody */
    say_hello(ear);
    char seen[4096] = "";
    await_payload(ear, " lookagain", seen, sizeof seen, 5000);
    CHECK(strstr(seen, "sent:dropped") == NULL);
    say_hello(ear);
    srv_await_metric(&s, "silt_notify_alone", 0, 5000);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"heard\"}");
    await_payload(ear, " sent:heard", seen, sizeof seen, 5000);
    PQfinish(ear);
    srv_stop(&s);
}

/* Nothing was dropped: a hello is heard, and not answered. */
TEST(a_hello_after_nothing_was_dropped_asks_nobody_to_look_again)
{
    silt_server s;
    PGconn *ear = start_alone_with_ear(&s);
    say_hello(ear);
    srv_await_metric(&s, "silt_notify_alone", 0, 5000);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    char seen[4096] = "";
    await_payload(ear, " sent:q", seen, sizeof seen, 5000);
    CHECK(strstr(seen, "lookagain") == NULL);
    PQfinish(ear);
    srv_stop(&s);
}

/* A lookagain makes what is parked look again: a wait whose task ended
 * without a word (finished from SQL, which announces nothing) answers as
 * soon as one comes, well before its 5 s recheck. */
TEST(a_lookagain_makes_a_parked_wait_look_again)
{
    silt_server s;
    srv_start(&s, NULL);
    task_claimed c;
    bg_req w;
    task_started_with_wait(&s, &s, &c, &w);
    CHECK_STR(sql("SELECT status FROM tasks.finish_many(ARRAY['%s']::uuid[], ARRAY['%s']::uuid[], "
                  "ARRAY['COMPLETED'], ARRAY['1'], ARRAY[NULL]::text[], ARRAY[NULL]::text[])", c.id, c.claim),
              "COMPLETED");
    PGconn *ear = test_session();
    session_run(ear, "NOTIFY silt_tasks, 'test-origin lookagain'");
    int64_t told = now_ms();
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(w.ended_ms - told < 3000);   /* the recheck would come 5 s after the park */
    PQfinish(ear);
    srv_stop(&s);
}

/* A server that starts beside one alone is heard by it: a wait parked on
 * the newcomer is woken by a completion through the first; once the
 * newcomer stops, the first is alone again. */
TEST(a_server_alone_hears_a_newcomer_and_is_alone_again_when_it_leaves)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_await_metric(&a, "silt_notify_alone", 1, LAPSE_DEADLINE_MS);
    srv_start(&b, NULL);
    srv_await_metric(&a, "silt_notify_alone", 0, 5000);
    task_wait_woken_across(&b, &a);
    CHECK_INT(srv_metric(&b, "silt_notify_alone"), 0);
    srv_stop(&b);
    srv_await_metric(&a, "silt_notify_alone", 1, LAPSE_DEADLINE_MS);
    srv_stop(&a);
}
