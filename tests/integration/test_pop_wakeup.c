/* Integration: a long-poll that starts while a push commits is answered by
 * that push (issue 32). A pop whose first look ran just before the commit
 * used to be parked only after that look and one more round trip, and the
 * commit's wake-up reached only pops already parked: it waited its whole
 * timeout and answered 204 with the message there. These tests race a push
 * against a fresh long-poll thousands of times, on lanes of their own (one
 * queue each, every lane a pop and a push in flight at once), and fail at
 * the first pop that answers 204 after its push committed. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "harness.h"
#include "raw_support.h"
#include "support.h"

#define RACE_LANES       8
#define RACE_TIMEOUT_MS  5000   /* a pop woken answers in milliseconds; a missed one at this deadline */
#define RACE_SPREAD_US   2500   /* the push leaves 0 .. this long after the pop */
#define RACE_REPLY_BYTES 4096

enum { POP, PUSH };

/* One side of a lane: a keep-alive connection, one request in flight. */
typedef struct race_conn {
    int     fd;
    char    in[RACE_REPLY_BYTES];
    size_t  len;
    int     status;            /* 0 until the reply is whole */
    int64_t answered_us;
} race_conn;

/* A lane: its own queue, where round after round a fresh long-poll pop
 * (autoAck, so each round starts empty) races one push. */
typedef struct race_lane {
    char        queue[96];
    const char *partition;     /* the pop names it; NULL: a queue-wide pop */
    bool        discovery;     /* the pop names the queue's namespace (its name), not the queue */
    race_conn   c[2];
    int64_t     pop_sent_us, push_due_us;
    bool        push_sent;
    int         round;
} race_lane;

typedef struct race {
    race_lane lanes[RACE_LANES];
    int       rounds;          /* per lane */
    int       done;            /* lanes through all their rounds */
    int       judged;          /* races over, all lanes together */
} race;

static int64_t now_us(void) { return now_ms() * 1000; }

static bool reply_whole(race_conn *c)
{
    c->in[c->len] = '\0';
    const char *end = strstr(c->in, "\r\n\r\n");
    if (!end) return false;
    const char *cl = raw_header(c->in, "Content-Length");
    return c->len >= (size_t)(end + 4 - c->in) + (cl ? (size_t)atoll(cl) : 0);
}

static void send_request(race_conn *c, const char *request)
{
    c->len = 0;
    c->status = 0;
    raw_send_str(c->fd, request);
}

static void send_pop(race_lane *l)
{
    const char *where = l->discovery   ? sfmt("?namespace=%s&", l->queue)
                      : l->partition ? sfmt("/queue/%s/partition/%s?", l->queue, l->partition)
                                     : sfmt("/queue/%s?", l->queue);
    send_request(&l->c[POP], sfmt("GET /api/v1/pop%swait=true&timeout=%d&autoAck=true HTTP/1.1\r\n"
                                  "Host: silt\r\n\r\n", where, RACE_TIMEOUT_MS));
    l->pop_sent_us = now_us();
    /* spread over the pop's first look and its parking, round by round */
    l->push_due_us = l->pop_sent_us + (l->round * 7919) % RACE_SPREAD_US;
    l->push_sent = false;
}

static void send_push(race_lane *l)
{
    const char *body = sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"%s\",\"payload\":{\"round\":%d}}]}",
                            l->queue, l->partition ? l->partition : "Default", l->round);
    send_request(&l->c[PUSH], sfmt("POST /api/v1/push HTTP/1.1\r\nHost: silt\r\nContent-Type: application/json\r\n"
                                   "Content-Length: %zu\r\n\r\n%s", strlen(body), body));
    l->push_sent = true;
}

/* Both replies are in: the push queued its message, and the pop, which
 * started waiting before that commit, took it. */
static void judge(race *r, race_lane *l)
{
    race_conn *pop = &l->c[POP], *push = &l->c[PUSH];
    if (push->status != 201) harness_failf(__FILE__, __LINE__, "lane %s round %d: push answered %d", l->queue,
                                           l->round, push->status);
    if (pop->status != 200 || !strstr(pop->in, sfmt("\"round\":%d", l->round)))
        harness_failf(__FILE__, __LINE__,
                      "lane %s round %d: the long-poll answered %d after %lld ms; its push had committed %lld ms "
                      "after the pop was sent (%d races before it were answered)",
                      l->queue, l->round, pop->status, (long long)(pop->answered_us - l->pop_sent_us) / 1000,
                      (long long)(push->answered_us - l->pop_sent_us) / 1000, r->judged);
    r->judged++;
    if (++l->round == r->rounds) { r->done++; return; }
    send_pop(l);
}

static void read_reply(race *r, race_lane *l, int side)
{
    race_conn *c = &l->c[side];
    ssize_t n = recv(c->fd, c->in + c->len, sizeof c->in - 1 - c->len, 0);
    if (n <= 0) harness_failf(__FILE__, __LINE__, "lane %s: the server closed a connection (%s)", l->queue,
                              n < 0 ? strerror(errno) : "eof");
    c->len += (size_t)n;
    if (!reply_whole(c)) return;
    c->status = raw_status(c->in);
    c->answered_us = now_us();
    if (l->c[POP].status && l->push_sent && l->c[PUSH].status) judge(r, l);
}

/* Pushes that are due leave; the poll waits at most until the next one is. */
static int send_due_pushes(race *r)
{
    int64_t now = now_us(), next = now + 100000;
    for (int i = 0; i < RACE_LANES; i++) {
        race_lane *l = &r->lanes[i];
        if (l->round == r->rounds || l->push_sent) continue;
        if (l->push_due_us <= now) send_push(l);
        else if (l->push_due_us < next) next = l->push_due_us;
    }
    return (int)((next - now + 999) / 1000);
}

static void poll_lanes(race *r)
{
    struct pollfd fds[2 * RACE_LANES];
    race_lane *owner[2 * RACE_LANES];
    int side[2 * RACE_LANES], n = 0;
    int wait_ms = send_due_pushes(r);
    for (int i = 0; i < RACE_LANES; i++) {
        race_lane *l = &r->lanes[i];
        if (l->round == r->rounds) continue;
        for (int s = POP; s <= PUSH; s++) {
            if (l->c[s].status || (s == PUSH && !l->push_sent)) continue;
            fds[n] = (struct pollfd){ .fd = l->c[s].fd, .events = POLLIN };
            owner[n] = l;
            side[n++] = s;
        }
    }
    if (poll(fds, (nfds_t)n, wait_ms) < 0 && errno != EINTR) harness_failf(__FILE__, __LINE__, "poll: %s", strerror(errno));
    for (int i = 0; i < n; i++)
        if (fds[i].revents) read_reply(r, owner[i], side[i]);
}

/* Lane i pops through pop_srv and pushes through push_srv: from its whole
 * queue; or from a named partition, as Queen's partition consumers do (every
 * third lane); or, the last lane, from any queue in its namespace. */
static void race_lanes(silt_server *pop_srv, silt_server *push_srv, const char *const *queues, int rounds)
{
    race r = { .rounds = rounds };
    for (int i = 0; i < RACE_LANES; i++) {
        race_lane *l = &r.lanes[i];
        keep_str(l->queue, queues[i]);
        l->discovery = i == RACE_LANES - 1;
        l->partition = i % 3 == 1 && !l->discovery ? "Default" : NULL;
        l->c[POP].fd = raw_connect(pop_srv);
        l->c[PUSH].fd = raw_connect(push_srv);
        send_pop(l);
    }
    while (r.done < RACE_LANES) poll_lanes(&r);
    for (int i = 0; i < RACE_LANES; i++) {
        close(r.lanes[i].c[POP].fd);
        close(r.lanes[i].c[PUSH].fd);
    }
    CHECK_INT(r.judged, RACE_LANES * rounds);
}

/* The lanes' queues, each in a namespace of its own name: one of every
 * three wide (257 partitions more, made in SQL), so that its queue-wide pops
 * bring the ready set up to date before they claim (sql/031) and the race
 * covers that path too. */
static void make_queues(silt_server *s, const char *queues[RACE_LANES])
{
    for (int i = 0; i < RACE_LANES; i++) {
        static char names[RACE_LANES][96];
        keep_str(names[i], uniq(sfmt("race%d_", i)));
        queues[i] = names[i];
        reply r;
        rq(s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"%s\"}", queues[i], queues[i]), &r);
        CHECK_INT(r.status, 200);
        reply_fini(&r);
        if (i % 3 == 2)
            sql("INSERT INTO queen.log_partitions (queue, name) SELECT '%s', 'empty' || i FROM generate_series(1, 257) i",
                queues[i]);
    }
}

/* 4,000 races on one server: every pop that started waiting before its
 * push committed is answered with the push's message, none at its deadline. */
TEST(a_long_poll_started_as_a_push_commits_is_answered_by_it_every_time)
{
    harness_allow_seconds(120);
    silt_server s;
    srv_start(&s, NULL);   /* LONG_POLL_RECHECK_MS at its default: no polling hides a miss */
    const char *queues[RACE_LANES];
    make_queues(&s, queues);
    race_lanes(&s, &s, queues, 500);
    srv_stop(&s);
}

/* 1,600 races across two servers: the push goes through one, the fresh
 * long-poll waits on the other, which hears the commit by NOTIFY. */
TEST(a_push_through_one_server_answers_a_long_poll_starting_on_another_every_time)
{
    harness_allow_seconds(120);
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    srv_await_metric(&b, "silt_notify_listening", 1, 10000);
    const char *queues[RACE_LANES];
    make_queues(&a, queues);
    race_lanes(&b, &a, queues, 200);
    srv_stop(&b);
    srv_stop(&a);
}

/* A commit to one partition wakes one waiting pop of a group, not all of
 * them: the pops are interchangeable. A discovery pop (by namespace) is not
 * interchangeable with a queue's own pop, and the server cannot tell which
 * queues carry its tags: it counts on its own. Here a discovery pop of
 * another namespace, parked first, used to take the one wake-up of a push
 * to queue q, and q's own long-poll waited for its deadline. */
TEST(a_discovery_long_poll_of_other_tags_does_not_take_a_queues_wake_up)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("wakeq");
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"mine\"}", q), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    bg_req other, own;
    bg_start(&other, &s, "GET", "/api/v1/pop?namespace=elsewhere&wait=true&timeout=20000&autoAck=true", NULL);
    srv_await_metric(&s, "silt_long_polls_parked", 1, 10000);
    bg_start(&own, &s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=5000&autoAck=true", q), NULL);
    srv_await_metric(&s, "silt_long_polls_parked", 2, 10000);
    push_one(&s, q, "Default", "t1", "1");
    int status;
    int64_t elapsed;
    bg_wait(&own, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 4000);   /* woken, not at its deadline */
    srv_stop(&s);
    bg_wait(&other, &status, &elapsed);
}
