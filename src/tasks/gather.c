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

static void submit(batch *b)
{
    const char *values[DB_MAX_PARAMS];
    for (int i = 0; i < b->g->narrays; i++) values[i] = db_array_literal(&b->arrays[i]);
    db_job *job = db_job_new(flushed, b);
    db_job_call(job, b->g->stmt, values, NULL, NULL);
    db_submit(b->g->pool, job);
}

/* One request of a failed batch as a batch of its own: its elements, cut
 * out of the batch's arrays. */
static batch *solo(batch *b, size_t i)
{
    gather *g = b->g;
    batch *one = batch_new(g);
    gather_req q = b->reqs[i];
    for (int a = 0; a < g->narrays; a++) {
        size_t from = i ? b->reqs[i - 1].ends[a] : 1;   /* past the '{' */
        db_array_append_raw(&one->arrays[a], b->arrays[a].text.data + from, q.ends[a] - from, (size_t)q.n);
        q.ends[a] = one->arrays[a].text.len;
    }
    q.first = 0;
    one->reqs = xmalloc(sizeof q);
    one->reqs[0] = q;
    one->nreqs = one->cap = 1;
    one->nitems = q.n;
    one->solo = true;
    return one;
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
    if (g->in_flight >= g->max_in_flight || g->open->nreqs == 0) return;
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

void gather_add(gather *g, int nitems, gather_done_fn done, void *arg)
{
    batch *b = g->open;
    if (b->nreqs == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8;
        b->reqs = xrealloc(b->reqs, b->cap * sizeof *b->reqs);
    }
    gather_req *q = &b->reqs[b->nreqs++];
    *q = (gather_req){ .first = b->nitems, .n = nitems, .done = done, .arg = arg };
    for (int a = 0; a < g->narrays; a++) q->ends[a] = b->arrays[a].text.len;
    b->nitems += nitems;
    flush(g);
}

bool gather_idle(const gather *g) { return g->in_flight == 0 && g->solo_in_flight == 0 && g->open->nreqs == 0; }
uint64_t gather_flushes(const gather *g) { return g->flushes; }
