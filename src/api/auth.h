/* auth: who may call what. Every route of the route table (routes.c) names
 * the least role it needs; api_dispatch asks auth_admit once, before the
 * handler runs, so no handler checks anything and no route exists without
 * a class. With JWT_ENABLED off (the default) everything is admitted, as
 * before authentication existed.
 *
 * With it on: a path in JWT_SKIP_PATHS is answered without a token;
 * otherwise the request needs "Authorization: Bearer <token>" (token.h)
 * that verifies (else 401) and carries a role at least the route's (else
 * 403). The token's sub is left on the request (req->auth_sub) for pushes
 * to stamp as producerSub, and its role (req->auth_role) for
 * GET /api/v1/whoami. */
#ifndef SILT_AUTH_H
#define SILT_AUTH_H
#include <stddef.h>
#include "api/token.h"
#include "base/config.h"
#include "net/httpd.h"

/* The least role a route needs. AUTH_PUBLIC: the dashboard's static files,
 * which hold no data (the API calls they make carry the token). */
typedef enum auth_class {
    AUTH_PUBLIC,
    AUTH_READ_ONLY,
    AUTH_READ_WRITE,
    AUTH_ADMIN,
} auth_class;

typedef struct auth auth;

/* NULL with a message in err when JWT_ENABLED is on and the other JWT_*
 * settings cannot work: the server refuses to start rather than run open.
 * cfg outlives the result. */
auth *auth_new(const silt_config *cfg, char *err, size_t errlen);
void  auth_free(auth *a);
/* 0: the request may run (req->auth_sub set when the token has a sub); -1:
 * answered 401 or 403, and req is gone. */
int   auth_admit(const auth *a, httpd_req *req, auth_class need) __attribute__((warn_unused_result));

#endif
