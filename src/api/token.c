/* token: bearer-token verification (see token.h). */
#include "api/token.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jwt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include "base/buf.h"
#include "base/json.h"
#include "base/xalloc.h"

#define TOKEN_MAX_CLAIM_TOKENS 4096   /* JSON tokens of a claims set: ample for any real token */

typedef enum token_alg { ALG_HS256, ALG_RS256, ALG_EDDSA } token_alg;

struct token_verifier {
    token_alg  alg;
    char      *key;          /* HS256: the secret; RS256: the PEM public key */
    size_t     key_len;
    EVP_PKEY  *ed_key;       /* EdDSA: the Ed25519 public key */
    const silt_config *cfg;  /* issuer, audience, skew, claim and role names; outlives v */
};

const char *token_role_name(token_role role)
{
    static const char *const names[] = { "none", "read-only", "read-write", "admin" };
    return names[role];
}

/* ---- set-up ---- */

/* A PEM in an environment variable often arrives with "\n" written out:
 * both forms are taken. */
static char *pem_text(const char *in)
{
    buf b;
    buf_init(&b);
    for (const char *p = in; *p; p++) {
        if (p[0] == '\\' && p[1] == 'n') { buf_putc(&b, '\n'); p++; }
        else buf_putc(&b, *p);
    }
    return buf_steal(&b);
}

static EVP_PKEY *read_public_key(const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    return key;
}

static int set_key(token_verifier *v, const silt_config *cfg, char *err, size_t errlen)
{
    if (v->alg == ALG_HS256) {
        if (!cfg->jwt_secret[0]) { snprintf(err, errlen, "JWT_ALGORITHM HS256 needs JWT_SECRET"); return -1; }
        /* a short shared secret can be found offline by trying keys against
         * any one token the server accepted */
        if (strlen(cfg->jwt_secret) < TOKEN_HS256_MIN_SECRET) {
            snprintf(err, errlen, "JWT_SECRET is %zu bytes: HS256 needs a secret of at least %d bytes",
                     strlen(cfg->jwt_secret), TOKEN_HS256_MIN_SECRET);
            return -1;
        }
        v->key = xstrdup(cfg->jwt_secret);
        v->key_len = strlen(v->key);
        return 0;
    }
    char *pem = pem_text(cfg->jwt_public_key);
    EVP_PKEY *key = read_public_key(pem);
    int want = v->alg == ALG_RS256 ? EVP_PKEY_RSA : EVP_PKEY_ED25519;
    if (!key || EVP_PKEY_id(key) != want) {
        snprintf(err, errlen, "JWT_PUBLIC_KEY must be a PEM %s public key for JWT_ALGORITHM %s",
                 v->alg == ALG_RS256 ? "RSA" : "Ed25519", cfg->jwt_algorithm);
        EVP_PKEY_free(key);
        free(pem);
        return -1;
    }
    if (v->alg == ALG_EDDSA) { v->ed_key = key; free(pem); return 0; }
    EVP_PKEY_free(key);
    v->key = pem;
    v->key_len = strlen(pem);
    return 0;
}

token_verifier *token_verifier_new(const silt_config *cfg, char *err, size_t errlen)
{
    token_verifier *v = xcalloc(1, sizeof *v);
    v->cfg = cfg;
    if (strcmp(cfg->jwt_algorithm, "HS256") == 0) v->alg = ALG_HS256;
    else if (strcmp(cfg->jwt_algorithm, "RS256") == 0) v->alg = ALG_RS256;
    else if (strcmp(cfg->jwt_algorithm, "EdDSA") == 0) v->alg = ALG_EDDSA;
    else {
        snprintf(err, errlen, "invalid value for JWT_ALGORITHM: \"%s\" (expected HS256, RS256 or EdDSA)",
                 cfg->jwt_algorithm);
        free(v);
        return NULL;
    }
    if (set_key(v, cfg, err, errlen) == 0) return v;
    token_verifier_free(v);
    return NULL;
}

void token_verifier_free(token_verifier *v)
{
    if (!v) return;
    free(v->key);
    EVP_PKEY_free(v->ed_key);
    free(v);
}

/* ---- signatures: each returns the claims set as JSON text (caller frees), or NULL ---- */

/* HS256 and RS256, by libjwt. */
static char *libjwt_claims(const token_verifier *v, const char *text, char *err, size_t errlen)
{
    jwt_t *jwt = NULL;
    if (jwt_decode(&jwt, text, (const unsigned char *)v->key, (int)v->key_len) != 0) {
        snprintf(err, errlen, "invalid token");
        return NULL;
    }
    jwt_alg_t want = v->alg == ALG_HS256 ? JWT_ALG_HS256 : JWT_ALG_RS256;
    char *claims = jwt_get_alg(jwt) == want ? jwt_get_grants_json(jwt, NULL) : NULL;
    if (jwt_get_alg(jwt) != want) snprintf(err, errlen, "token algorithm must be %s", v->cfg->jwt_algorithm);
    else if (!claims) snprintf(err, errlen, "invalid token");
    jwt_free(jwt);
    return claims;
}

/* RFC 4648 base64url without padding, as JWS writes it; -1 on anything else. */
static int b64url_decode(const char *in, size_t n, buf *out)
{
    if (n % 4 == 1) return -1;
    buf std;
    buf_init(&std);
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '+' || c == '/' || c == '=') { buf_fini(&std); return -1; }   /* not base64url */
        buf_putc(&std, c == '-' ? '+' : c == '_' ? '/' : c);
    }
    size_t pad = (4 - n % 4) % 4;
    for (size_t i = 0; i < pad; i++) buf_putc(&std, '=');
    buf_reset(out);
    buf_reserve(out, std.len / 4 * 3 + 1);
    int got = EVP_DecodeBlock((unsigned char *)out->data, (const unsigned char *)std.data, (int)std.len);
    buf_fini(&std);
    if (got < 0) return -1;
    out->len = (size_t)got - pad;   /* EVP_DecodeBlock counts the padding's zero bytes */
    out->data[out->len] = '\0';
    return 0;
}

/* The header's "alg" is exactly "EdDSA". */
static bool header_is_eddsa(const buf *header)
{
    json_doc d;
    json_doc_init(&d);
    bool ok = json_parse(&d, header->data, header->len, 64) == 0 && d.tokens[0].type == JSON_OBJECT;
    int alg = ok ? json_get(&d, 0, "alg") : -1;
    ok = alg >= 0 && d.tokens[alg].type == JSON_STRING && json_str_eq(&d, (uint32_t)alg, "EdDSA");
    json_doc_fini(&d);
    return ok;
}

static bool ed25519_ok(const token_verifier *v, const char *input, size_t n, const buf *sig)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, v->ed_key) == 1
              && EVP_DigestVerify(ctx, (const unsigned char *)sig->data, sig->len,
                                  (const unsigned char *)input, n) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

/* EdDSA (Ed25519), by libcrypto: header.payload.signature, each base64url. */
static char *eddsa_claims(const token_verifier *v, const char *text, char *err, size_t errlen)
{
    const char *dot1 = strchr(text, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2 || strchr(dot2 + 1, '.')) { snprintf(err, errlen, "invalid token"); return NULL; }
    buf header, payload, sig;
    buf_init(&header); buf_init(&payload); buf_init(&sig);
    char *claims = NULL;
    if (b64url_decode(text, (size_t)(dot1 - text), &header) < 0
        || b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &payload) < 0
        || b64url_decode(dot2 + 1, strlen(dot2 + 1), &sig) < 0) snprintf(err, errlen, "invalid token");
    else if (!header_is_eddsa(&header)) snprintf(err, errlen, "token algorithm must be EdDSA");
    else if (!ed25519_ok(v, text, (size_t)(dot2 - text), &sig)) snprintf(err, errlen, "invalid token");
    else claims = buf_steal(&payload);
    buf_fini(&header); buf_fini(&payload); buf_fini(&sig);
    return claims;
}

/* ---- claims ---- */

/* A time claim (exp, nbf): absent is fine; present, it must be an integer. */
static int time_claim(const json_doc *d, const char *name, bool *present, int64_t *at)
{
    int t = json_get(d, 0, name);
    *present = t >= 0;
    if (!*present) return 0;
    return d->tokens[t].type == JSON_NUMBER && json_int64(d, (uint32_t)t, at) == 0 ? 0 : -1;
}

static int check_times(const token_verifier *v, const json_doc *d, int64_t now, char *err, size_t errlen)
{
    bool has_exp, has_nbf;
    int64_t exp = 0, nbf = 0, skew = v->cfg->jwt_clock_skew;
    if (time_claim(d, "exp", &has_exp, &exp) < 0 || time_claim(d, "nbf", &has_nbf, &nbf) < 0) {
        snprintf(err, errlen, "token exp and nbf must be integers");
        return -1;
    }
    if (has_exp && now > exp + skew) { snprintf(err, errlen, "token expired"); return -1; }
    if (has_nbf && now + skew < nbf) { snprintf(err, errlen, "token not valid yet"); return -1; }
    return 0;
}

/* aud may be one string or an array of them (RFC 7519 4.1.3). */
static bool audience_ok(const json_doc *d, const char *want)
{
    int a = json_get(d, 0, "aud");
    if (a < 0) return false;
    if (d->tokens[a].type == JSON_STRING) return json_str_eq(d, (uint32_t)a, want);
    if (d->tokens[a].type != JSON_ARRAY) return false;
    for (uint32_t i = 0; i < d->tokens[a].count; i++) {
        int e = json_at(d, (uint32_t)a, i);
        if (e >= 0 && d->tokens[e].type == JSON_STRING && json_str_eq(d, (uint32_t)e, want)) return true;
    }
    return false;
}

static int check_parties(const token_verifier *v, const json_doc *d, char *err, size_t errlen)
{
    const char *iss = v->cfg->jwt_issuer, *aud = v->cfg->jwt_audience;
    int t = json_get(d, 0, "iss");
    if (iss[0] && (t < 0 || d->tokens[t].type != JSON_STRING || !json_str_eq(d, (uint32_t)t, iss))) {
        snprintf(err, errlen, "token issuer is not accepted");
        return -1;
    }
    if (aud[0] && !audience_ok(d, aud)) { snprintf(err, errlen, "token audience is not accepted"); return -1; }
    return 0;
}

static token_role role_of(const token_verifier *v, const json_doc *d, uint32_t tok)
{
    if (d->tokens[tok].type != JSON_STRING) return TOKEN_ROLE_NONE;
    if (json_str_eq(d, tok, v->cfg->jwt_role_admin)) return TOKEN_ROLE_ADMIN;
    if (json_str_eq(d, tok, v->cfg->jwt_role_read_write)) return TOKEN_ROLE_READ_WRITE;
    if (json_str_eq(d, tok, v->cfg->jwt_role_read_only)) return TOKEN_ROLE_READ_ONLY;
    return TOKEN_ROLE_NONE;
}

/* The highest of the single role claim and the role array's elements. */
static token_role highest_role(const token_verifier *v, const json_doc *d)
{
    token_role best = TOKEN_ROLE_NONE;
    int one = json_get(d, 0, v->cfg->jwt_roles_claim), many = json_get(d, 0, v->cfg->jwt_roles_array_claim);
    if (one >= 0) best = role_of(v, d, (uint32_t)one);
    if (many < 0 || d->tokens[many].type != JSON_ARRAY) return best;
    for (uint32_t i = 0; i < d->tokens[many].count; i++) {
        token_role r = role_of(v, d, (uint32_t)json_at(d, (uint32_t)many, i));
        if (r > best) best = r;
    }
    return best;
}

static int read_claims(const token_verifier *v, const char *text, int64_t now, token_claims *c,
                       char *err, size_t errlen)
{
    json_doc d;
    json_doc_init(&d);
    int rc = -1;
    if (json_parse(&d, text, strlen(text), TOKEN_MAX_CLAIM_TOKENS) < 0 || d.tokens[0].type != JSON_OBJECT)
        snprintf(err, errlen, "invalid token");
    else if (check_times(v, &d, now, err, errlen) == 0 && check_parties(v, &d, err, errlen) == 0) {
        int sub = json_get(&d, 0, "sub");
        c->sub = sub >= 0 && d.tokens[sub].type == JSON_STRING ? json_str_dup(&d, (uint32_t)sub) : NULL;
        c->role = highest_role(v, &d);
        rc = 0;
    }
    json_doc_fini(&d);
    return rc;
}

int token_verify(const token_verifier *v, const char *text, int64_t now_s, token_claims *claims,
                 char *err, size_t errlen)
{
    claims->sub = NULL;
    claims->role = TOKEN_ROLE_NONE;
    char *json = v->alg == ALG_EDDSA ? eddsa_claims(v, text, err, errlen) : libjwt_claims(v, text, err, errlen);
    if (!json) return -1;
    int rc = read_claims(v, json, now_s, claims, err, errlen);
    free(json);
    return rc;
}
