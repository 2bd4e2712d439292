/* maintenance: GET and POST /api/v1/system/maintenance — Queen's switch for
 * holding pushes (status "buffered") and delivering them when it is turned
 * off. The state lives in PostgreSQL; see streams/maintenance.h. */
#include "api/api.h"
#include "base/emit.h"
#include "db/result.h"

/* Queen's fields (maintenanceMode, bufferedMessages, bufferHealthy, message)
 * and silt's (draining, oldestBufferedAt, updatedAt), once r is observed. */
static void state_members(emit *e, server *srv, const PGresult *r, bool changed)
{
    static const char *const words[2][2] = {
        { "Maintenance mode is OFF. Pushes are written to the log.",
          "Maintenance mode is ON. Pushes are held in the buffer." },
        { "Maintenance mode DISABLED. Buffered pushes are being delivered.",
          "Maintenance mode ENABLED. Pushes are held in the buffer until it is disabled." },
    };
    maintenance_observe(srv->maintenance, r);   /* starts the drain when turned off */
    const maintenance_state *s = maintenance_current(srv->maintenance);
    emit_key(e, "maintenanceMode"); emit_bool(e, s->enabled);
    emit_key(e, "draining"); emit_bool(e, s->draining);
    emit_key(e, "bufferedMessages"); emit_int(e, s->buffered);
    emit_key(e, "bufferHealthy"); emit_bool(e, true);
    emit_key(e, "oldestBufferedAt");
    if (s->oldest_buffered_us) emit_time(e, s->oldest_buffered_us); else emit_null(e);
    emit_key(e, "updatedAt"); emit_time(e, s->updated_us);
    emit_key(e, "message"); emit_str(e, words[changed][s->enabled]);
}

void api_maintenance_get(httpd_req *req, server *srv)
{
    api_object_call(req, srv, STMT_MAINT_STATUS, NULL, state_members, false);
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
            api_object_call(req, srv, STMT_MAINT_SET, values, state_members, true);
        }
    }
    json_doc_fini(&d);
}
