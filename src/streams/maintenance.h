/* maintenance: this server's view of maintenance mode, and the drain of the
 * push buffer. The switch itself lives in PostgreSQL (queen.system_state, in
 * the Maintenance mode section of sql/migrations/018_schema.sql) and push_flush obeys it
 * there, so every server buffers from its next flush on. What each server
 * keeps is a copy of the state, refreshed every MAINTENANCE_REFRESH_MS and
 * after every change it makes, for /health and /metrics; and the drain:
 * whenever the state is off and the buffer is not empty, the buffer is moved
 * into the log a batch of segments at a time (one server at a time, under an
 * advisory lock), and appended (push_commit_fn) is told each queue filled,
 * so the pops waiting on it, here and on the other servers, look. A server
 * that stops mid-drain leaves the rest to whichever server looks next. */
#ifndef SILT_MAINTENANCE_H
#define SILT_MAINTENANCE_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include <libpq-fe.h>
#include "db/pool.h"
#include "streams/push.h"

typedef struct maintenance_state {
    bool    known;              /* read at least once */
    bool    enabled;            /* pushes are buffered */
    bool    draining;           /* off, the buffer not yet empty: pushes still queue behind it */
    int64_t buffered;           /* messages in the buffer */
    int64_t oldest_buffered_us; /* Unix microseconds, 0 when the buffer is empty */
    int64_t updated_us;         /* when the switch last changed */
} maintenance_state;

typedef struct maintenance maintenance;

maintenance *maintenance_new(struct event_base *base, db_pool *pool, push_commit_fn appended, void *arg,
                             int64_t refresh_ms);
void         maintenance_free(maintenance *m);
/* Shutdown: no more refreshes or drain batches after the current one. */
void         maintenance_stop(maintenance *m);
bool         maintenance_idle(const maintenance *m);
const maintenance_state *maintenance_current(const maintenance *m);
/* A row of queen.maintenance_status() or maintenance_set() read elsewhere
 * (the API's GET and POST): remembered, and a drain started if one is due. */
void         maintenance_observe(maintenance *m, const PGresult *r);
uint64_t     maintenance_drained_total(const maintenance *m);

#endif
