/* reply: writing a handler's JSON answer (see api.h). Every reply body goes
 * through base/emit, so opening one and handing it to the request is the
 * same few lines in every handler: written once here. */
#include "api/api.h"

static emit *reply_open(api_reply *r)
{
    buf_init(&r->body);
    emit_init(&r->e, &r->body);
    return &r->e;
}

emit *api_reply_object(api_reply *r)
{
    emit_object(reply_open(r));
    return &r->e;
}

emit *api_reply_array(api_reply *r)
{
    emit_array(reply_open(r));
    return &r->e;
}

emit *api_reply_list(api_reply *r, const char *member)
{
    emit *e = api_reply_object(r);
    emit_key(e, member);
    emit_array(e);
    return e;
}

void api_reply_send(api_reply *r, httpd_req *req, int status)
{
    /* Closing here what the handler left open keeps "one emit_end per
     * container" out of every handler's tail. */
    while (r->e.depth > 0) emit_end(&r->e);
    httpd_reply_buf(req, status, &r->body);
}
