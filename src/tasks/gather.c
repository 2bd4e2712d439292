/* gather: batches of items sent as one set-based call (see gather.h). */
#include "tasks/gather.h"
#include <stdlib.h>
#include "base/log.h"
#include "db/result.h"
#include "base/xalloc.h"

typedef struct gather_req {
    int            first, n;
    gather_done_fn done;
    void          *arg;
    const bool    *gone;                  /* its client gave up (gather_add); NULL: never */
    bool          *sent;                  /* set once its items may reach PostgreSQL; NULL: none */
    size_t         ends[DB_MAX_PARAMS];   /* where its elements end in each array's text */
} gather_req;

typedef struct batch {
    gather     *g;
    db_array    arrays[DB_MAX_PARAMS];
    gather_req *reqs;
    size_t      nreqs, cap;
    int         nitems;
    bool        solo;   /* a request of a failed batch, alone */
} batch;

struct gather {
    db_pool *pool;
    db_stmt  stmt;
    int      narrays, max_in_flight, in_flight;
    int      solo_in_flight;   /* requests of a failed batch, sent again one by one */
    batch   *open;
    uint64_t flushes;
    bool     nulls_as_null;    /* gather_nulls_as_null */
};

static batch *batch_new(gather *g)
{
    batch *b = xcalloc(1, sizeof *b);
    b->g = g;
    for (int i = 0; i < g->narrays; i++) db_array_init(&b->arrays[i]);
    return b;
}

static void batch_free(batch *b)
{
    for (int i = 0; i < b->g->narrays; i++) db_array_fini(&b->arrays[i]);
    free(b->reqs);
    free(b);
}

static void flush(gather *g);
static void flushed(void *arg, const db_reply *reply);

/* A batch of one request waiting in the pool's queue is that request's
 * alone, so the pool may drop it as it drops any handler's job once the
 * client is gone, and it counts as sent when the pool sends it. A batch of
 * several is sent whole: the others still wait, so each of its requests
 * counts as sent from now on, whatever becomes of its client. */
static void submit(batch *b)
{
    const char *values[DB_MAX_PARAMS];
    int lengths[DB_MAX_PARAMS], formats[DB_MAX_PARAMS];
    for (int i = 0; i < b->g->narrays; i++) {
        lengths[i] = formats[i] = 0;
        values[i] = b->g->nulls_as_null && db_array_nulls_only(&b->arrays[i])
            ? NULL : db_array_param(&b->arrays[i], &lengths[i], &formats[i]);
    }
    db_job *job = db_job_new(flushed, b);
    db_job_call(job, b->g->stmt, values, lengths, formats);
    if (b->nreqs == 1) {
        db_job_abandon_when(job, b->reqs[0].gone);
        db_job_note_sent(job, b->reqs[0].sent);
    } else {
        for (size_t i = 0; i < b->nreqs; i++)
            if (b->reqs[i].sent) *b->reqs[i].sent = true;
    }
    db_submit(b->g->pool, job);
}

static void add_req(batch *b, gather_req q)
{
    if (b->nreqs == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8;
        b->reqs = xrealloc(b->reqs, b->cap * sizeof *b->reqs);
    }
    b->reqs[b->nreqs++] = q;
    b->nitems += q.n;
}

/* Request i of from, its elements cut out of from's arrays, appended to to. */
static void move_req(batch *to, const batch *from, size_t i)
{
    gather_req q = from->reqs[i];
    for (int a = 0; a < to->g->narrays; a++) {
        size_t start = i ? from->reqs[i - 1].ends[a] : 1;   /* past the '{' */
        db_array_append_span(&to->arrays[a], &from->arrays[a], start, q.ends[a], (size_t)q.n);
        q.ends[a] = to->arrays[a].text.len;
    }
    q.first = to->nitems;
    add_req(to, q);
}

/* One request of a failed batch as a batch of its own. */
static batch *solo(batch *b, size_t i)
{
    batch *one = batch_new(b->g);
    move_req(one, b, i);
    one->solo = true;
    return one;
}

/* ---- requests whose client gave up ---- */

static bool req_gone(const gather_req *q) { return q->gone && *q->gone; }

static void abandoned(void *arg, const db_reply *reply)
{
    gather_req *q = arg;
    q->done(q->arg, reply, NULL, 0, 0);
    free(q);
}

/* Its client left or its request timed out before the batch was sent:
 * nobody would learn that its tasks were sent or its attempts ended, and a
 * client that never heard back sends again. It ends as the pool ends a job
 * dropped unsent (the same reply, counted with them), from the event loop,
 * so no done runs inside gather_add. */
static void abandon_req(gather *g, const gather_req *q)
{
    gather_req *copy = xmalloc(sizeof *copy);
    *copy = *q;
    db_job_abandon(g->pool, db_job_new(abandoned, copy));
}

/* The batch about to be sent, without the requests whose client is gone:
 * b itself when there are none, else the kept ones' items copied into a
 * new batch (b is freed). */
static batch *cut_gone(batch *b)
{
    size_t i = 0;
    while (i < b->nreqs && !req_gone(&b->reqs[i])) i++;
    if (i == b->nreqs) return b;
    batch *kept = batch_new(b->g);
    for (i = 0; i < b->nreqs; i++) {
        if (req_gone(&b->reqs[i])) abandon_req(b->g, &b->reqs[i]);
        else move_req(kept, b, i);
    }
    batch_free(b);
    return kept;
}

/* A batch failed: whatever one request brought (a value PostgreSQL refuses,
 * a deadlock) must not fail the others, so each is sent again alone and
 * only its own error reaches it. A lost connection fails them all as it is. */
static bool split(batch *b, const db_reply *reply)
{
    if (!reply->error || reply->unavailable || b->nreqs < 2) return false;
    for (size_t i = 0; i < b->nreqs; i++) {
        b->g->solo_in_flight++;
        submit(solo(b, i));
    }
    return true;
}

static void flushed(void *arg, const db_reply *reply)
{
    batch *b = arg;
    gather *g = b->g;
    if (b->solo) g->solo_in_flight--;
    else g->in_flight--;
    if (split(b, reply)) {
        batch_free(b);
        return;
    }
    const PGresult *r = reply->error ? NULL : reply->results[0];
    int row = 0, nrows = r ? PQntuples(r) : 0;
    for (size_t i = 0; i < b->nreqs; i++) {
        const gather_req *q = &b->reqs[i];
        int first = row;
        while (row < nrows && db_int(r, row, 0) < q->first + q->n) row++;
        q->done(q->arg, reply, r, first, row - first);
    }
    batch_free(b);
    flush(g);
}

static void flush(gather *g)
{
    if (g->in_flight >= g->max_in_flight) return;
    g->open = cut_gone(g->open);
    if (g->open->nreqs == 0) return;
    batch *b = g->open;
    g->open = batch_new(g);
    g->in_flight++;
    g->flushes++;
    submit(b);
}

gather *gather_new(db_pool *pool, db_stmt stmt, int narrays, int max_in_flight)
{
    if (narrays != db_statements[stmt].nparams) {   /* one array per parameter: a programming error otherwise */
        log_error("gather of %s: %d arrays for %d parameters", db_statements[stmt].name, narrays,
                  db_statements[stmt].nparams);
        abort();
    }
    gather *g = xcalloc(1, sizeof *g);
    g->pool = pool;
    g->stmt = stmt;
    g->narrays = narrays;
    g->max_in_flight = max_in_flight;
    g->open = batch_new(g);
    return g;
}

void gather_free(gather *g)
{
    if (!g) return;
    batch_free(g->open);
    free(g);
}

db_array *gather_arrays(gather *g) { return g->open->arrays; }

void gather_add(gather *g, int nitems, const bool *gone, bool *sent, gather_done_fn done, void *arg)
{
    batch *b = g->open;
    gather_req q = { .first = b->nitems, .n = nitems, .done = done, .arg = arg, .gone = gone, .sent = sent };
    for (int a = 0; a < g->narrays; a++) q.ends[a] = b->arrays[a].text.len;
    add_req(b, q);
    flush(g);
}

void gather_nulls_as_null(gather *g) { g->nulls_as_null = true; }

bool gather_idle(const gather *g) { return g->in_flight == 0 && g->solo_in_flight == 0 && g->open->nreqs == 0; }
uint64_t gather_flushes(const gather *g) { return g->flushes; }
