/* whoami: GET /api/v1/whoami — what the caller may do, so a client (the
 * dashboard) offers only the actions its token's role allows instead of
 * finding out by a 403. The role is the one auth_admit verified; with
 * JWT_ENABLED off everyone may do everything, so the answer is admin. */
#include "api/api.h"
#include "base/emit.h"

void api_whoami(httpd_req *req, server *srv)
{
    bool jwt = srv->cfg.jwt_enabled;
    const char *role = jwt ? req->auth_role : "admin";   /* NULL: a JWT_SKIP_PATHS entry let it in unverified */
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "auth"); emit_str(e, jwt ? "jwt" : "off");
    emit_key(e, "role");
    if (role) emit_str(e, role); else emit_null(e);
    emit_key(e, "sub");
    if (req->auth_sub) emit_str(e, req->auth_sub); else emit_null(e);
    api_reply_send(&out, req, 200);
}
