/* gather: group commit for the task engine, as pushes have it. Requests add
 * their items to the open batch (one typed array per parameter of a
 * set-based SQL function, parallel, see "Between C and SQL" in
 * docs/architecture.md); a batch is sent as one call, in one transaction,
 * as soon as fewer than max_in_flight are in flight, so while the database
 * works on one, the next gathers everything that arrives meanwhile. Under
 * load a send, a claim's start or a completion costs a share of a commit,
 * not a commit.
 *
 * The function's first column is the item's index in the batch (from 0) and
 * its rows come in that order, any number per item (one per task sent or
 * ended, as many as a claim took); each request is handed its own rows,
 * first_row .. first_row + nrows - 1. When a batch fails (anything but a
 * lost connection), each of its requests is sent again alone, so one
 * request's bad value or a deadlock fails that request only.
 *
 * Work whose client has given up is not done (see api/abandon.c): a request
 * whose gone flag is set when its batch is about to be sent is cut out of
 * it, and a batch of that one request alone is dropped while it waits for a
 * pool connection; either way done runs with reply->abandoned (SQLSTATE
 * 57014) and silt_db_jobs_abandoned_total counts it. A batch of several
 * already handed to the pool is sent whole. */
#ifndef SILT_GATHER_H
#define SILT_GATHER_H
#include <stdbool.h>
#include "db/array.h"
#include "db/pool.h"

typedef void (*gather_done_fn)(void *arg, const db_reply *reply, const PGresult *r, int first_row, int nrows);
typedef struct gather gather;

gather   *gather_new(db_pool *pool, db_stmt stmt, int narrays, int max_in_flight);
void      gather_free(gather *g);
/* The open batch's arrays (narrays of them): append this request's items to
 * every one, then call gather_add. */
db_array *gather_arrays(gather *g);
/* The items just appended (nitems of them) are one request's; done runs
 * once with their rows, or with the error that failed the batch. gone, if
 * not NULL, is the request's "client gave up" flag (a request's left): it
 * must stay readable until done runs, and be given only to a request before
 * which nothing of its work has committed. sent, if not NULL, becomes true
 * once the request's items may reach PostgreSQL: as its batch is sent, or
 * as a batch of several is handed to the pool (sent whole from then on);
 * it must stay writable until done runs. */
void      gather_add(gather *g, int nitems, const bool *gone, bool *sent, gather_done_fn done, void *arg);
/* An array whose elements are all NULL goes as NULL instead, for a
 * statement that reads one as the other (an unnest of several arrays pads
 * a NULL one with NULLs): PostgreSQL then parses and unnests nothing for
 * it. */
void      gather_nulls_as_null(gather *g);
bool      gather_idle(const gather *g);
uint64_t  gather_flushes(const gather *g);

#endif
