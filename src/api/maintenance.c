/* maintenance: GET and POST /api/v1/system/maintenance — Queen's switch for
 * holding pushes (status "buffered") and delivering them when it is turned
 * off. The state lives in PostgreSQL; see streams/maintenance.h. */
#include <stdlib.h>
#include "api/api.h"
#include "base/xalloc.h"
#include "base/emit.h"
#include "db/result.h"

typedef struct maint_call {
    httpd_req *req;
    server    *srv;
    bool       changed;
} maint_call;

/* Queen's fields (maintenanceMode, bufferedMessages, bufferHealthy, message)
 * and silt's (draining, oldestBufferedAt, updatedAt). */
static void reply_state(httpd_req *req, const maintenance_state *s, bool changed)
{
    static const char *const words[2][2] = {
        { "Maintenance mode is OFF. Pushes are written to the log.",
          "Maintenance mode is ON. Pushes are held in the buffer." },
        { "Maintenance mode DISABLED. Buffered pushes are being delivered.",
          "Maintenance mode ENABLED. Pushes are held in the buffer until it is disabled." },
    };
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "maintenanceMode"); emit_bool(e, s->enabled);
    emit_key(e, "draining"); emit_bool(e, s->draining);
    emit_key(e, "bufferedMessages"); emit_int(e, s->buffered);
    emit_key(e, "bufferHealthy"); emit_bool(e, true);
    emit_key(e, "oldestBufferedAt");
    if (s->oldest_buffered_us) emit_time(e, s->oldest_buffered_us); else emit_null(e);
    emit_key(e, "updatedAt"); emit_time(e, s->updated_us);
    emit_key(e, "message"); emit_str(e, words[changed][s->enabled]);
    api_reply_send(&out, req, 200);
}

static void maint_done(void *arg, const db_reply *reply)
{
    maint_call *c = arg;
    if (reply->error) {
        api_db_error(c->req, reply);
    } else {
        maintenance_observe(c->srv->maintenance, reply->results[0]);   /* starts the drain when turned off */
        reply_state(c->req, maintenance_current(c->srv->maintenance), c->changed);
    }
    free(c);
}

static void call(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, bool changed)
{
    maint_call *c = xcalloc(1, sizeof *c);
    *c = (maint_call){ req, srv, changed };
    api_submit_stmt(req, srv, stmt, values, maint_done, c);
}

void api_maintenance_get(httpd_req *req, server *srv)
{
    call(req, srv, STMT_MAINT_STATUS, NULL, false);
}

void api_maintenance_set(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    if (api_read_object(req, srv, &d) == 0) {
        int v = json_get(&d, 0, "enabled");
        json_type t = v < 0 ? JSON_NULL : d.tokens[v].type;
        if (t != JSON_TRUE && t != JSON_FALSE) {
            httpd_error_field(req, 400, "field", "enabled", "enabled must be true or false");
        } else {
            const char *values[1] = { t == JSON_TRUE ? "true" : "false" };
            call(req, srv, STMT_MAINT_SET, values, true);
        }
    }
    json_doc_fini(&d);
}
