/* auth: the one place a request's token and the route's role meet (see auth.h). */
#include "api/auth.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/http.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"

#define AUTH_MAX_SUB 1024   /* bytes of sub a token may carry: it is stored on every message pushed */

struct auth {
    const silt_config *cfg;
    token_verifier    *verifier;   /* NULL: authentication is off */
    char             **skip;       /* JWT_SKIP_PATHS, split */
    size_t             nskip;
};

static void split_skip_paths(auth *a, const char *list)
{
    char *copy = xstrdup(list), *save = NULL;
    for (char *p = strtok_r(copy, ", ", &save); p; p = strtok_r(NULL, ", ", &save)) {
        a->skip = xrealloc(a->skip, (a->nskip + 1) * sizeof *a->skip);
        a->skip[a->nskip++] = xstrdup(p);
    }
    free(copy);
}

auth *auth_new(const silt_config *cfg, char *err, size_t errlen)
{
    auth *a = xcalloc(1, sizeof *a);
    a->cfg = cfg;
    if (!cfg->jwt_enabled) return a;
    a->verifier = token_verifier_new(cfg, err, errlen);
    if (!a->verifier) { free(a); return NULL; }
    split_skip_paths(a, cfg->jwt_skip_paths);
    log_info("authentication: JWT %s; %zu path%s open without a token", cfg->jwt_algorithm, a->nskip,
             a->nskip == 1 ? "" : "s");
    return a;
}

void auth_free(auth *a)
{
    if (!a) return;
    token_verifier_free(a->verifier);
    for (size_t i = 0; i < a->nskip; i++) free(a->skip[i]);
    free(a->skip);
    free(a);
}

/* Exact paths, as sent; a trailing "/" is the same path (as routes match). */
static bool skipped(const auth *a, const char *path)
{
    size_t n = strlen(path);
    if (n > 1 && path[n - 1] == '/') n--;
    for (size_t i = 0; i < a->nskip; i++)
        if (strlen(a->skip[i]) == n && strncmp(a->skip[i], path, n) == 0) return true;
    return false;
}

/* The token of "Authorization: Bearer <token>", or NULL. */
static const char *bearer(const httpd_req *req)
{
    const char *h = httpd_req_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return NULL;
    h += 7;
    while (*h == ' ') h++;
    return *h ? h : NULL;
}

static int unauthorized(httpd_req *req, const char *why)
{
    httpd_header(req, "WWW-Authenticate", "Bearer");
    httpd_error(req, 401, "%s", why);
    return -1;
}

static token_role role_needed(auth_class need)
{
    static const token_role roles[] = { TOKEN_ROLE_NONE, TOKEN_ROLE_READ_ONLY, TOKEN_ROLE_READ_WRITE,
                                        TOKEN_ROLE_ADMIN };
    return roles[need];
}

int auth_admit(const auth *a, httpd_req *req, auth_class need)
{
    if (!a->verifier || need == AUTH_PUBLIC || skipped(a, req->path)) return 0;
    const char *text = bearer(req);
    if (!text) return unauthorized(req, "authentication required");
    token_claims claims;
    char why[128];
    if (token_verify(a->verifier, text, clock_wall_us() / 1000000, &claims, why, sizeof why) < 0)
        return unauthorized(req, why);
    if (claims.sub && strlen(claims.sub) > AUTH_MAX_SUB) {
        free(claims.sub);
        return unauthorized(req, "token sub is longer than 1024 bytes");
    }
    token_role want = role_needed(need);
    if (claims.role < want) {
        free(claims.sub);
        httpd_error_field(req, 403, "required", token_role_name(want), "this route needs the %s role",
                          token_role_name(want));
        return -1;
    }
    req->auth_sub = claims.sub;
    req->auth_role = token_role_name(claims.role);
    return 0;
}
