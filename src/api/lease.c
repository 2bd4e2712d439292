/* lease: POST /api/v1/lease/:leaseId/extend — renews every partition lease
 * held under one leaseId, never shortening one. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/emit.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include "db/result.h"

#define MAX_EXTEND_SECONDS 86400

typedef struct lease_call {
    httpd_req *req;
    char       lease_id[IDS_UUID_TEXT];
} lease_call;

static void extend_done(void *arg, const db_reply *reply)
{
    lease_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); free(c); return; }
    const PGresult *r = reply->results[0];
    int64_t renewed = db_int(r, 0, 0);
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "leaseId"); emit_str(e, c->lease_id);
    emit_key(e, "success"); emit_bool(e, renewed > 0);
    emit_key(e, "renewed"); emit_int(e, renewed);
    emit_key(e, "expiresAt");
    if (renewed > 0) {
        api_emit_time_col(e, r, 0, 1);
    } else {
        emit_null(e);
        emit_key(e, "error"); emit_str(e, "lease not found or expired");
    }
    api_reply_send(&out, c->req, 200);
    free(c);
}

static int read_seconds(httpd_req *req, server *srv, int64_t *seconds)
{
    *seconds = 60;
    if (req->body_len == 0) return 0;
    json_doc d;
    json_doc_init(&d);
    int rc = api_read_object(req, srv, &d);
    int v = rc == 0 ? json_get(&d, 0, "seconds") : -1;
    if (v >= 0 && d.tokens[v].type != JSON_NULL &&
        (json_int64(&d, (uint32_t)v, seconds) < 0 || *seconds < 1 || *seconds > MAX_EXTEND_SECONDS)) {
        httpd_error_field(req, 400, "field", "seconds", "seconds must be an integer from 1 to %d", MAX_EXTEND_SECONDS);
        rc = -1;
    }
    json_doc_fini(&d);
    return rc;
}

void api_lease_extend(httpd_req *req, server *srv)
{
    char lease[IDS_UUID_TEXT];
    if (api_read_uuid(req, req->params[0], lease, "leaseId") < 0) return;
    int64_t seconds;
    if (read_seconds(req, srv, &seconds) < 0) return;
    lease_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    memcpy(c->lease_id, lease, sizeof lease);
    char secs[24];
    snprintf(secs, sizeof secs, "%lld", (long long)seconds);
    const char *values[2] = { c->lease_id, secs };
    api_submit_stmt(req, srv, STMT_EXTEND_LEASE, values, extend_done, c);
}
