/* configure: POST /api/v1/configure — create a queue or merge its options. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/emit.h"
#include "streams/encryption.h"
#include "db/result.h"

/* The call's name: the queue. */
static void configure_done(void *arg, const db_reply *reply)
{
    api_named_call *c = arg;
    if (reply->error) {
        api_db_error(c->req, reply);
    } else {
        const PGresult *r = reply->results[0];
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "configured"); emit_bool(e, true);
        emit_key(e, "queue"); emit_str(e, c->name);
        emit_key(e, "namespace"); emit_str(e, db_null(r, 0, 0) ? NULL : db_str(r, 0, 0));
        emit_key(e, "task"); emit_str(e, db_null(r, 0, 1) ? NULL : db_str(r, 0, 1));
        emit_key(e, "options");
        size_t n;
        const char *options = db_json(r, 0, 2, &n);
        if (emit_json(e, options, n) < 0) emit_null(e);
        emit_end(e);
        encryption_set_queue(c->name, db_bool(r, 0, 3));
        api_reply_send(&out, c->req, 200);
    }
    api_named_call_free(c);
}

/* namespace and task are tags; Queen's C++ client sends "" for "none" on
 * every queue creation, so an empty string is the same as leaving the tag
 * out: a new queue gets none, an existing one keeps what it has. */
static int opt_tag(httpd_req *req, const json_doc *d, const char *key, char **out)
{
    int v = json_get(d, 0, key);
    if (v >= 0 && d->tokens[v].type == JSON_STRING && d->tokens[v].end - d->tokens[v].start == 2) {
        *out = NULL;
        return 0;
    }
    return api_opt_string(req, d, 0, key, out);
}

void api_configure(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char *queue = NULL, *ns = NULL, *task = NULL;
    buf patch;
    buf_init(&patch);
    if (api_read_object(req, srv, &d) < 0) goto out;
    if (api_opt_string(req, &d, 0, "queue", &queue) < 0 || opt_tag(req, &d, "namespace", &ns) < 0 ||
        opt_tag(req, &d, "task", &task) < 0) goto out;
    if (!queue) { httpd_error(req, 400, "queue is required"); goto out; }
    if (api_check_name(req, "", "queue", queue) < 0 || api_check_name(req, "", "namespace", ns) < 0 ||
        api_check_name(req, "", "task", task) < 0) goto out;
    char bad[OPTIONS_BAD_BYTES], err[256];
    if (options_patch(&d, json_get(&d, 0, "options"), &patch, bad, err, sizeof err) < 0) {
        httpd_error_field(req, 400, "invalid", bad, "%s", err);
        goto out;
    }
    int opts = json_get(&d, 0, "options");   /* an object: options_patch checked it */
    int enc = opts >= 0 ? json_get(&d, (uint32_t)opts, "encryptionEnabled") : -1;
    if (enc >= 0 && d.tokens[enc].type == JSON_TRUE && !encryption_has_key()) {
        httpd_error_field(req, 400, "invalid", "encryptionEnabled", "encryptionEnabled needs QUEEN_ENCRYPTION_KEY on the "
                          "server: 64 hex characters, e.g. from openssl rand -hex 32");
        goto out;
    }
    api_named_call *c = api_named_call_new(req, srv, &queue);
    const char *values[4] = { c->name, ns, task, patch.data };
    api_submit_stmt(req, srv, STMT_CONFIGURE, values, configure_done, c);
out:
    free(queue); free(ns); free(task);
    buf_fini(&patch);
    json_doc_fini(&d);
}
