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
} gather_req;

typedef struct batch {
    gather     *g;
    db_array    arrays[DB_MAX_PARAMS];
    gather_req *reqs;
    size_t      nreqs, cap;
    int         nitems;
} batch;

struct gather {
    db_pool *pool;
    db_stmt  stmt;
    int      narrays, max_in_flight, in_flight;
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

static void flushed(void *arg, const db_reply *reply)
{
    batch *b = arg;
    gather *g = b->g;
    const PGresult *r = reply->error ? NULL : reply->results[0];
    int row = 0, nrows = r ? PQntuples(r) : 0;
    for (size_t i = 0; i < b->nreqs; i++) {
        const gather_req *q = &b->reqs[i];
        int first = row;
        while (row < nrows && db_int(r, row, 0) < q->first + q->n) row++;
        q->done(q->arg, reply, r, first, row - first);
    }
    batch_free(b);
    g->in_flight--;
    flush(g);
}

static void flush(gather *g)
{
    if (g->in_flight >= g->max_in_flight || g->open->nreqs == 0) return;
    batch *b = g->open;
    g->open = batch_new(g);
    g->in_flight++;
    g->flushes++;
    const char *values[DB_MAX_PARAMS];
    for (int i = 0; i < g->narrays; i++) values[i] = db_array_literal(&b->arrays[i]);
    db_job *job = db_job_new(flushed, b);
    db_job_call(job, g->stmt, values, NULL, NULL);
    db_submit(g->pool, job);
}

gather *gather_new(db_pool *pool, db_stmt stmt, int narrays, int max_in_flight)
{
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
    b->reqs[b->nreqs++] = (gather_req){ b->nitems, nitems, done, arg };
    b->nitems += nitems;
    flush(g);
}

bool gather_idle(const gather *g) { return g->in_flight == 0 && g->open->nreqs == 0; }
uint64_t gather_flushes(const gather *g) { return g->flushes; }
