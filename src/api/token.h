/* token: verification of bearer tokens (JWT, RFC 7519) and what a verified
 * token says: its subject and its role.
 *
 * Signatures are libjwt's for HS256 and RS256. Debian 12's libjwt (1.10)
 * knows no EdDSA, so EdDSA tokens are verified with OpenSSL's Ed25519
 * (libcrypto, linked for AES-GCM already). Either way the token's own "alg"
 * header must be the configured algorithm: libjwt verifies with whatever
 * algorithm a token names, so an "alg":"none" token, or an HS256 token
 * signed with an RS256 public key used as its secret, would otherwise pass.
 * The claims are then read once, by silt's JSON reader, whatever verified
 * them: exp and nbf (with the clock skew allowed), iss, aud, sub, roles. */
#ifndef SILT_TOKEN_H
#define SILT_TOKEN_H
#include <stddef.h>
#include <stdint.h>
#include "base/config.h"

/* Ordered: a higher role may do whatever a lower one may. */
typedef enum token_role {
    TOKEN_ROLE_NONE,        /* authenticated, no role silt knows: refused everywhere but skip paths */
    TOKEN_ROLE_READ_ONLY,
    TOKEN_ROLE_READ_WRITE,
    TOKEN_ROLE_ADMIN,
} token_role;

const char *token_role_name(token_role role);   /* "read-only" ...: as docs and errors say it */

/* HS256's shortest secret: as long as the SHA-256 it keys (RFC 7518 3.2). */
#define TOKEN_HS256_MIN_SECRET 32

typedef struct token_verifier token_verifier;

/* From the JWT_* settings. NULL with a message in err when they cannot
 * work (no secret for HS256, a key that is not a public key of the
 * algorithm's kind, an unknown algorithm). */
token_verifier *token_verifier_new(const silt_config *cfg, char *err, size_t errlen);
void            token_verifier_free(token_verifier *v);

typedef struct token_claims {
    char       *sub;    /* owned; NULL when the token has no string "sub" */
    token_role  role;   /* the highest role among the role claims */
} token_claims;

/* Verifies text (the token, without "Bearer ") at now_s (Unix seconds).
 * 0 and claims filled (free claims->sub); -1 with the reason in err, the
 * reason a 401 gives. */
int  token_verify(const token_verifier *v, const char *text, int64_t now_s, token_claims *claims,
                  char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
