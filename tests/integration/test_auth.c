/* Integration: authentication and roles (JWT_*). Each attack an anonymous
 * client could make before tokens existed — reading an encrypted queue,
 * turning its encryption off, replaying dead letters, moving another group's
 * cursor, deleting a queue — is refused 401 without a token and 403 with a
 * role too low; every way a token can be wrong is a 401; producerSub is the
 * token's sub whatever the body says, and a dead letter and its replay keep
 * it. Tokens are made here: HS256 and RS256 with libjwt, EdDSA with
 * libcrypto, keys generated per test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jwt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include "browser.h"
#include "harness.h"
#include "support.h"

#define SECRET "test-secret-of-at-least-thirty-two-bytes"

static const char *const hs_env[] = { "JWT_ENABLED=true", "JWT_ALGORITHM=HS256", "JWT_SECRET=" SECRET,
                                      "JWT_ISSUER=silt-tests", "JWT_AUDIENCE=silt", NULL };

/* ---- making tokens ---- */

typedef struct claims {
    const char *sub, *role, *iss, *aud;
    const char *roles_json;   /* e.g. "[\"read-only\",\"admin\"]", or NULL */
    long        exp_in, nbf_in;  /* seconds from now; 0: no such claim */
} claims;

static void add_claims(jwt_t *jwt, const claims *c)
{
    long now = (long)time(NULL);
    if (c->sub) CHECK_INT(jwt_add_grant(jwt, "sub", c->sub), 0);
    if (c->role) CHECK_INT(jwt_add_grant(jwt, "role", c->role), 0);
    CHECK_INT(jwt_add_grant(jwt, "iss", c->iss ? c->iss : "silt-tests"), 0);
    CHECK_INT(jwt_add_grant(jwt, "aud", c->aud ? c->aud : "silt"), 0);
    if (c->roles_json) CHECK_INT(jwt_add_grants_json(jwt, sfmt("{\"roles\":%s}", c->roles_json)), 0);
    CHECK_INT(jwt_add_grant_int(jwt, "exp", now + (c->exp_in ? c->exp_in : 3600)), 0);
    if (c->nbf_in) CHECK_INT(jwt_add_grant_int(jwt, "nbf", now + c->nbf_in), 0);
}

/* A token signed by libjwt (alg NONE: unsigned); static ring. */
static const char *libjwt_token(jwt_alg_t alg, const char *key, const claims *c)
{
    jwt_t *jwt;
    CHECK_INT(jwt_new(&jwt), 0);
    add_claims(jwt, c);
    CHECK_INT(jwt_set_alg(jwt, alg, (const unsigned char *)key, key ? (int)strlen(key) : 0), 0);
    char *text = jwt_encode_str(jwt);
    CHECK(text != NULL);
    const char *out = sfmt("%s", text);
    free(text);
    jwt_free(jwt);
    return out;
}

static const char *hs(const char *sub, const char *role)
{
    claims c = { .sub = sub, .role = role };
    return libjwt_token(JWT_ALG_HS256, SECRET, &c);
}

static void b64url(buf *out, const void *p, size_t n)
{
    char *tmp = malloc(4 * ((n + 2) / 3) + 1);
    int len = EVP_EncodeBlock((unsigned char *)tmp, p, (int)n);
    for (int i = 0; i < len && tmp[i] != '='; i++)
        buf_putc(out, tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : tmp[i]);
    free(tmp);
}

/* An EdDSA token over claims_json, signed with key (Ed25519). */
static const char *eddsa_token(EVP_PKEY *key, const char *claims_json)
{
    buf t;
    buf_init(&t);
    const char *header = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\"}";
    b64url(&t, header, strlen(header));
    buf_putc(&t, '.');
    b64url(&t, claims_json, strlen(claims_json));
    unsigned char sig[64];
    size_t siglen = sizeof sig;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    CHECK(EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1);
    CHECK(EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)t.data, t.len) == 1);
    EVP_MD_CTX_free(ctx);
    buf_putc(&t, '.');
    b64url(&t, sig, siglen);
    const char *out = sfmt("%s", t.data);
    buf_fini(&t);
    return out;
}

/* PEM of key's public half (or, private, its private key); caller frees. */
static char *pem_of(EVP_PKEY *key, int private)
{
    BIO *bio = BIO_new(BIO_s_mem());
    CHECK((private ? PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
                   : PEM_write_bio_PUBKEY(bio, key)) == 1);
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    char *out = strndup(data, (size_t)n);
    BIO_free(bio);
    return out;
}

/* ---- requests ---- */

/* rq with "Authorization: Bearer token" (NULL: none); returns the status. */
static int as(silt_server *s, const char *token, const char *method, const char *path, const char *body, reply *r)
{
    http_client_set_token(s->http, token);
    rq(s, method, path, body, r);
    http_client_set_token(s->http, NULL);
    return r->status;
}

static int status_as(silt_server *s, const char *token, const char *method, const char *path, const char *body)
{
    reply r;
    int status = as(s, token, method, path, body, &r);
    reply_fini(&r);
    return status;
}

/* The status of a GET whose reply may not be JSON (metrics, the dashboard). */
static int raw_status(silt_server *s, const char *path)
{
    http_response r;
    http_response_init(&r);
    CHECK_INT(http_request(s->http, "GET", path, NULL, 0, &r), 0);
    int status = r.status;
    http_response_fini(&r);
    return status;
}

/* An encrypted queue with one message read by group "g", and one dead
 * letter; returns the dead letter's id (static ring). */
static const char *victim(silt_server *s, const char *admin, const char *q)
{
    reply r;
    CHECK_INT(as(s, admin, "POST", "/api/v1/configure",
                 sfmt("{\"queue\":\"%s\",\"options\":{\"encryptionEnabled\":true}}", q), &r), 200);
    reply_fini(&r);
    CHECK_INT(as(s, admin, "POST", "/api/v1/push",
                 sfmt("{\"items\":[{\"queue\":\"%s\",\"transactionId\":\"t1\",\"payload\":{\"card\":\"4111\"}},"
                      "{\"queue\":\"%s\",\"transactionId\":\"t2\",\"payload\":2}]}", q, q), &r), 201);
    reply_fini(&r);
    CHECK_INT(as(s, admin, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g", q), NULL, &r), 200);
    reply_fini(&r);
    CHECK_INT(as(s, admin, "GET", sfmt("/api/v1/pop/queue/%s", q), NULL, &r), 200);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "messages.0.partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    CHECK_INT(as(s, admin, "POST", "/api/v1/ack",
                 sfmt("{\"transactionId\":\"t1\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"dlq\"}",
                      pid, lease), &r), 200);
    reply_fini(&r);
    CHECK_INT(as(s, admin, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r), 200);
    const char *id = sfmt("%s", jstr(&r, "messages.0.id"));
    reply_fini(&r);
    return id;
}

/* The five attacks, each answered with want. */
static void attacks_get(silt_server *s, const char *token, const char *q, const char *dlq_id, int want)
{
    CHECK_INT(status_as(s, token, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=thief", q), NULL), want);
    CHECK_INT(status_as(s, token, "POST", "/api/v1/configure",
                        sfmt("{\"queue\":\"%s\",\"options\":{\"encryptionEnabled\":false}}", q)), want);
    CHECK_INT(status_as(s, token, "POST", sfmt("/api/v1/dlq/%s/replay", dlq_id), NULL), want);
    CHECK_INT(status_as(s, token, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", q), "{\"toEnd\":true}"),
              want);
    CHECK_INT(status_as(s, token, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL), want);
}

TEST(auth_anonymous_attacks_are_refused_401)
{
    silt_server s;
    srv_start(&s, hs_env);
    const char *q = uniq("vault");
    const char *id = victim(&s, hs("ops", "admin"), q);
    reply r;
    CHECK_INT(as(&s, NULL, "GET", sfmt("/api/v1/pop/queue/%s", q), NULL, &r), 401);
    CHECK_STR(jstr(&r, "error"), "authentication required");
    reply_fini(&r);
    attacks_get(&s, NULL, q, id, 401);
    attacks_get(&s, "not.a.token", q, id, 401);
    /* the dead letter's plaintext copy, and the overview, are not readable either */
    CHECK_INT(status_as(&s, NULL, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL), 401);
    CHECK_INT(status_as(&s, NULL, "GET", "/api/v1/resources/overview", NULL), 401);
    CHECK_STR(sql("SELECT count(*) FROM queen.queues WHERE name = '%s'", q), "1");
    CHECK_STR(sql("SELECT count(*) FROM queen.log_dlq WHERE queue = '%s'", q), "1");
    CHECK_INT(srv_stop(&s), 0);
}

TEST(auth_roles_below_admin_are_refused_403_and_admin_may)
{
    silt_server s;
    srv_start(&s, hs_env);
    const char *q = uniq("vault");
    char admin[1024];
    snprintf(admin, sizeof admin, "%s", hs("ops", "admin"));
    char id[96];
    keep_str(id, victim(&s, admin, q));
    char ro[1024], rw[1024];
    snprintf(ro, sizeof ro, "%s", hs("viewer", "read-only"));
    snprintf(rw, sizeof rw, "%s", hs("app", "read-write"));
    attacks_get(&s, ro, q, id, 403);
    reply r;
    CHECK_INT(as(&s, rw, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":{}}", q), &r), 403);
    CHECK_STR(jstr(&r, "required"), "admin");
    reply_fini(&r);
    CHECK_INT(status_as(&s, rw, "POST", sfmt("/api/v1/dlq/%s/replay", id), NULL), 403);
    CHECK_INT(status_as(&s, rw, "POST", "/api/v1/dlq/replay", sfmt("{\"queue\":\"%s\"}", q)), 403);   /* by filter */
    CHECK_INT(status_as(&s, rw, "POST", "/api/v1/dlq/delete", sfmt("{\"queue\":\"%s\",\"dryRun\":true}", q)), 403);
    CHECK_INT(status_as(&s, ro, "GET", "/api/v1/stats/history", NULL), 200);
    CHECK_INT(status_as(&s, rw, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", q), "{\"toEnd\":true}"), 403);
    CHECK_INT(status_as(&s, rw, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL), 403);
    /* read-only reads; read-write pops, pushes and acks; a role array counts its highest */
    CHECK_INT(status_as(&s, ro, "GET", "/api/v1/resources/queues", NULL), 200);
    CHECK_INT(status_as(&s, ro, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1}]}", q)), 403);
    CHECK_INT(status_as(&s, rw, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":3}]}", q)), 201);
    CHECK_INT(status_as(&s, rw, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=app&autoAck=true", q), NULL), 200);
    claims many = { .sub = "ops2", .roles_json = "[\"read-only\",\"admin\"]" };
    const char *array_admin = libjwt_token(JWT_ALG_HS256, SECRET, &many);
    claims none = { .sub = "nobody", .role = "superuser" };
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &none), "GET", "/api/v1/resources/queues", NULL), 403);
    CHECK_INT(status_as(&s, array_admin, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", q), "{\"toEnd\":true}"),
              200);
    CHECK_INT(status_as(&s, admin, "POST", sfmt("/api/v1/dlq/%s/replay", id), NULL), 200);
    CHECK_INT(status_as(&s, admin, "POST", "/api/v1/configure",
                        sfmt("{\"queue\":\"%s\",\"options\":{\"encryptionEnabled\":false}}", q)), 200);
    CHECK_INT(status_as(&s, admin, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL), 200);
    CHECK_INT(srv_stop(&s), 0);
}

/* Schedules: read by read-only, made, changed, paused, resumed and deleted
 * only by admin (a schedule sends tasks on its own, for ever). */
TEST(auth_schedules_are_read_by_read_only_and_changed_by_admin_only)
{
    silt_server s;
    srv_start(&s, hs_env);
    char admin[1024], ro[1024], rw[1024];
    snprintf(admin, sizeof admin, "%s", hs("ops", "admin"));
    snprintf(ro, sizeof ro, "%s", hs("viewer", "read-only"));
    snprintf(rw, sizeof rw, "%s", hs("app", "read-write"));
    const char *def = "{\"name\":\"tick\",\"cron\":\"* * * * *\",\"task\":\"t\",\"queue\":\"q\"}";
    CHECK_INT(status_as(&s, rw, "POST", "/api/v1/schedules", def), 403);
    CHECK_INT(status_as(&s, admin, "POST", "/api/v1/schedules", def), 201);
    CHECK_INT(status_as(&s, ro, "GET", "/api/v1/schedules", NULL), 200);
    CHECK_INT(status_as(&s, ro, "GET", "/api/v1/schedules/tick", NULL), 200);
    const char *changes[][3] = {
        { "PATCH", "/api/v1/schedules/tick", "{\"task\":\"u\"}" },
        { "POST", "/api/v1/schedules/tick/pause", NULL },
        { "POST", "/api/v1/schedules/tick/resume", NULL },
        { "DELETE", "/api/v1/schedules/tick", NULL },
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        CHECK_INT(status_as(&s, rw, changes[i][0], changes[i][1], changes[i][2]), 403);
        CHECK_INT(status_as(&s, admin, changes[i][0], changes[i][1], changes[i][2]), 200);
    }
    CHECK_INT(srv_stop(&s), 0);
}

TEST(auth_bad_tokens_are_refused_401_and_clock_skew_is_honoured)
{
    silt_server s;
    srv_start(&s, hs_env);
    const char *path = "/api/v1/resources/queues";
    claims expired = { .sub = "a", .role = "admin", .exp_in = -120 };
    claims skewed = { .sub = "a", .role = "admin", .exp_in = -10 };          /* within JWT_CLOCK_SKEW (30) */
    claims early = { .sub = "a", .role = "admin", .nbf_in = 120 };
    claims nearly = { .sub = "a", .role = "admin", .nbf_in = 10 };
    claims other_iss = { .sub = "a", .role = "admin", .iss = "someone-else" };
    claims other_aud = { .sub = "a", .role = "admin", .aud = "another-service" };
    claims good = { .sub = "a", .role = "admin" };
    reply r;
    CHECK_INT(as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &expired), "GET", path, NULL, &r), 401);
    CHECK_STR(jstr(&r, "error"), "token expired");
    reply_fini(&r);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &skewed), "GET", path, NULL), 200);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &early), "GET", path, NULL), 401);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &nearly), "GET", path, NULL), 200);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &other_iss), "GET", path, NULL), 401);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &other_aud), "GET", path, NULL), 401);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, "another-secret-of-thirty-two-bytes!!", &good), "GET", path,
                        NULL), 401);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_NONE, NULL, &good), "GET", path, NULL), 401);
    /* a signature altered by one character */
    char tampered[1024];
    snprintf(tampered, sizeof tampered, "%s", libjwt_token(JWT_ALG_HS256, SECRET, &good));
    size_t n = strlen(tampered);
    tampered[n - 2] = tampered[n - 2] == 'A' ? 'B' : 'A';
    CHECK_INT(status_as(&s, tampered, "GET", path, NULL), 401);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, SECRET, &good), "GET", path, NULL), 200);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(auth_rs256_refuses_an_hs256_token_signed_with_its_public_key)
{
    EVP_PKEY *key = EVP_RSA_gen(2048);
    CHECK(key != NULL);
    char *pub = pem_of(key, 0), *priv = pem_of(key, 1);
    silt_server s;
    const char *env[] = { "JWT_ENABLED=true", "JWT_ALGORITHM=RS256", sfmt("JWT_PUBLIC_KEY=%s", pub), NULL };
    srv_start(&s, env);
    claims good = { .sub = "svc", .role = "read-only" };
    const char *path = "/api/v1/resources/queues";
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_RS256, priv, &good), "GET", path, NULL), 200);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_HS256, pub, &good), "GET", path, NULL), 401);
    CHECK_INT(status_as(&s, libjwt_token(JWT_ALG_NONE, NULL, &good), "GET", path, NULL), 401);
    CHECK_INT(srv_stop(&s), 0);
    free(pub);
    free(priv);
    EVP_PKEY_free(key);
}

TEST(auth_eddsa_tokens_are_verified_with_ed25519)
{
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"), *other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    CHECK(key && other);
    char *pub = pem_of(key, 0);
    silt_server s;
    const char *env[] = { "JWT_ENABLED=true", "JWT_ALGORITHM=EdDSA", sfmt("JWT_PUBLIC_KEY=%s", pub), NULL };
    srv_start(&s, env);
    const char *body = sfmt("{\"sub\":\"edge\",\"role\":\"read-only\",\"exp\":%ld}", (long)time(NULL) + 600);
    const char *path = "/api/v1/resources/queues";
    CHECK_INT(status_as(&s, eddsa_token(key, body), "GET", path, NULL), 200);
    CHECK_INT(status_as(&s, eddsa_token(other, body), "GET", path, NULL), 401);
    const char *expired = sfmt("{\"sub\":\"edge\",\"role\":\"read-only\",\"exp\":%ld}", (long)time(NULL) - 600);
    CHECK_INT(status_as(&s, eddsa_token(key, expired), "GET", path, NULL), 401);
    CHECK_INT(status_as(&s, hs("edge", "read-only"), "GET", path, NULL), 401);
    CHECK_INT(srv_stop(&s), 0);
    free(pub);
    EVP_PKEY_free(key);
    EVP_PKEY_free(other);
}

TEST(auth_skip_paths_and_dashboard_files_need_no_token)
{
    silt_server s;
    srv_start(&s, hs_env);
    CHECK_INT(status_as(&s, NULL, "GET", "/health", NULL), 200);
    CHECK_INT(raw_status(&s, "/metrics/prometheus"), 200);
    CHECK_INT(raw_status(&s, "/"), 200);
    CHECK_INT(status_as(&s, NULL, "GET", "/api/v1/resources/overview", NULL), 401);
    CHECK_INT(srv_stop(&s), 0);
    const char *env[] = { "JWT_ENABLED=true", "JWT_SECRET=" SECRET, "JWT_SKIP_PATHS=/health", NULL };
    srv_start(&s, env);
    CHECK_INT(status_as(&s, NULL, "GET", "/health", NULL), 200);
    CHECK_INT(raw_status(&s, "/metrics/prometheus"), 401);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(auth_producer_sub_is_the_tokens_sub_never_the_bodys)
{
    silt_server s;
    srv_start(&s, hs_env);
    const char *q = uniq("signed");
    char alice[1024];
    snprintf(alice, sizeof alice, "%s", hs("alice", "read-write"));
    CHECK_INT(status_as(&s, alice, "POST", "/api/v1/push",
                        sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1,\"producerSub\":\"mallory\"}]}", q)), 201);
    CHECK_INT(status_as(&s, alice, "POST", "/api/v1/transaction",
                        sfmt("{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"%s\",\"payload\":2,"
                             "\"producerSub\":\"mallory\"}]}]}", q)), 200);
    reply r;
    CHECK_INT(as(&s, alice, "GET", sfmt("/api/v1/pop/queue/%s?batch=10&autoAck=true", q), NULL, &r), 200);
    CHECK(jpath(&r, "messages.1") >= 0 && jpath(&r, "messages.2") < 0);
    CHECK_STR(jstr(&r, "messages.0.producerSub"), "alice");
    CHECK_STR(jstr(&r, "messages.1.producerSub"), "alice");
    char pid[96], txn[96];
    keep_str(pid, jstr(&r, "messages.0.partitionId"));
    keep_str(txn, jstr(&r, "messages.0.transactionId"));
    reply_fini(&r);
    CHECK_INT(as(&s, alice, "GET", sfmt("/api/v1/messages/%s/%s", pid, txn), NULL, &r), 200);
    CHECK_STR(jstr(&r, "producerSub"), "alice");
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(auth_producer_sub_is_null_without_authentication)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("open");
    reply r;
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1,\"producerSub\":\"x\"}]}", q), &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, q, NULL, "autoAck=true", &r), 200);
    CHECK_STR(jraw(&r, "messages.0.producerSub"), "null");
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

/* The dead letters of q as a read-only reader lists them; total checked. */
static void dlq_list(silt_server *s, const char *token, const char *q, int total, reply *r)
{
    CHECK_INT(as(s, token, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, r), 200);
    CHECK_INT(jint(r, "total"), total);
}

/* A dead letter keeps the producerSub of the message that failed, whichever
 * ack dead-lettered it (an ack by another token, or a transaction's ack):
 * its list and its lookup answer it, and its replay pushes the message back
 * under the producer's sub, not the sub of the admin who replays it. */
TEST(auth_dead_letter_keeps_the_producers_sub_and_so_does_its_replay)
{
    silt_server s;
    srv_start(&s, hs_env);
    const char *q = uniq("dlqsub");
    char alice[1024], bob[1024], ops[1024], root[1024];
    snprintf(alice, sizeof alice, "%s", hs("alice", "read-write"));
    snprintf(bob, sizeof bob, "%s", hs("bob", "read-write"));
    snprintf(ops, sizeof ops, "%s", hs("ops", "read-only"));
    snprintf(root, sizeof root, "%s", hs("root", "admin"));
    CHECK_INT(status_as(&s, alice, "POST", "/api/v1/push",
                        sfmt("{\"items\":[{\"queue\":\"%s\",\"transactionId\":\"m1\",\"payload\":1},"
                             "{\"queue\":\"%s\",\"transactionId\":\"m2\",\"payload\":2}]}", q, q)), 201);
    reply r;
    CHECK_INT(as(&s, bob, "GET", sfmt("/api/v1/pop/queue/%s?batch=2", q), NULL, &r), 200);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    CHECK_INT(as(&s, bob, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"m1\",\"partitionId\":\"%s\","
                 "\"leaseId\":\"%s\",\"status\":\"dlq\",\"error\":\"poison\"}", pid, lease), &r), 200);
    CHECK(jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_INT(as(&s, bob, "POST", "/api/v1/transaction", sfmt("{\"operations\":[{\"type\":\"ack\",\"transactionId\":"
                 "\"m2\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"dlq\",\"error\":\"bad\"}]}", pid, lease),
                 &r), 200);
    CHECK(jbool(&r, "results.0.dlq"));
    reply_fini(&r);

    dlq_list(&s, ops, q, 2, &r);
    CHECK_STR(jstr(&r, "messages.0.producerSub"), "alice");
    CHECK_STR(jstr(&r, "messages.1.producerSub"), "alice");
    char id[96];
    keep_str(id, jstr(&r, strcmp(jstr(&r, "messages.0.transactionId"), "m1") == 0 ? "messages.0.id" : "messages.1.id"));
    reply_fini(&r);
    /* the log no longer holds the messages (as after retention): the lookup answers their dead letters */
    sql("delete from queen.log_segments where partition_id = '%s'", pid);
    CHECK_INT(as(&s, ops, "GET", sfmt("/api/v1/messages/%s/m1", pid), NULL, &r), 200);
    CHECK_STR(jstr(&r, "status"), "dead-lettered");
    CHECK_STR(jstr(&r, "deadLetter.producerSub"), "alice");
    reply_fini(&r);

    CHECK_INT(status_as(&s, root, "POST", sfmt("/api/v1/dlq/%s/replay", id), "{}"), 200);
    CHECK_INT(as(&s, bob, "GET", sfmt("/api/v1/pop/queue/%s?autoAck=true", q), NULL, &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), sfmt("dlq:%s", id));
    CHECK_STR(jstr(&r, "messages.0.producerSub"), "alice");
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

/* A message pushed without authentication has no producer to keep: its dead
 * letter and its replay say null. */
TEST(auth_dead_letter_of_a_message_pushed_without_authentication_has_a_null_producer_sub)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("dlqopen");
    push_one(&s, q, "Default", "m1", "{\"x\":1}");
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, "batch=1", &r), 200);
    char pid[96];
    keep_str(pid, jstr(&r, "partitionId"));
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"m1\",\"partitionId\":\"%s\",\"status\":\"dlq\"}", pid), &r);
    CHECK(jbool(&r, "0.dlq"));
    reply_fini(&r);
    dlq_list(&s, NULL, q, 1, &r);
    CHECK_STR(jraw(&r, "messages.0.producerSub"), "null");
    char id[96];
    keep_str(id, jstr(&r, "messages.0.id"));
    reply_fini(&r);
    CHECK_INT(status_as(&s, NULL, "POST", sfmt("/api/v1/dlq/%s/replay", id), "{}"), 200);
    CHECK_INT(pop_from(&s, q, NULL, "autoAck=true", &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), sfmt("dlq:%s", id));
    CHECK_STR(jraw(&r, "messages.0.producerSub"), "null");
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(auth_cli_sends_silt_token)
{
    silt_server s;
    srv_start(&s, hs_env);
    static char out[65536];
    const char *cmd = sfmt("SILT_URL='%s' '%s' queues 2>&1", s.url, silt_bin());
    CHECK(run_cmd(cmd, out, sizeof out) != 0);
    CHECK(strstr(out, "authentication required") != NULL);
    cmd = sfmt("SILT_TOKEN='%s' SILT_URL='%s' '%s' queues 2>&1", hs("ops", "read-only"), s.url, silt_bin());
    CHECK_INT(run_cmd(cmd, out, sizeof out), 0);
    const char *q = uniq("cli");
    cmd = sfmt("SILT_TOKEN='%s' SILT_URL='%s' '%s' push %s '{\"a\":1}' 2>&1", hs("cli-user", "read-write"), s.url,
               silt_bin(), q);
    CHECK_INT(run_cmd(cmd, out, sizeof out), 0);
    reply r;
    CHECK_INT(as(&s, hs("ops", "read-write"), "GET", sfmt("/api/v1/pop/queue/%s?autoAck=true", q), NULL, &r), 200);
    CHECK_STR(jstr(&r, "messages.0.producerSub"), "cli-user");
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(auth_server_refuses_to_start_with_settings_that_cannot_work)
{
    static char out[4096];
    const char *cmd = sfmt("JWT_ENABLED=true JWT_ALGORITHM=HS256 JWT_SECRET= '%s' server 2>&1", silt_bin());
    CHECK_INT(run_cmd(cmd, out, sizeof out), 2);
    CHECK(strstr(out, "JWT_SECRET") != NULL);
    cmd = sfmt("JWT_ENABLED=true JWT_ALGORITHM=ES999 '%s' server 2>&1", silt_bin());
    CHECK_INT(run_cmd(cmd, out, sizeof out), 2);
    CHECK(strstr(out, "JWT_ALGORITHM") != NULL);
    cmd = sfmt("JWT_ENABLED=true JWT_ALGORITHM=RS256 JWT_PUBLIC_KEY=nonsense '%s' server 2>&1", silt_bin());
    CHECK_INT(run_cmd(cmd, out, sizeof out), 2);
    CHECK(strstr(out, "JWT_PUBLIC_KEY") != NULL);
}

/* The dashboard's files load without a token; its first API call's 401
 * brings up the token box, and once a token is pasted every call sends it. */
/* GET /api/v1/whoami answers the verified token's role (and sub), so the
 * dashboard offers only what the token may do; with JWT off, admin. */
TEST(auth_whoami_answers_the_tokens_role_and_admin_without_jwt)
{
    silt_server s;
    srv_start(&s, hs_env);
    reply r;
    CHECK_INT(as(&s, hs("viewer", "read-only"), "GET", "/api/v1/whoami", NULL, &r), 200);
    CHECK_STR(jstr(&r, "auth"), "jwt");
    CHECK_STR(jstr(&r, "role"), "read-only");
    CHECK_STR(jstr(&r, "sub"), "viewer");
    reply_fini(&r);
    CHECK_INT(as(&s, hs("ops", "admin"), "GET", "/api/v1/whoami", NULL, &r), 200);
    CHECK_STR(jstr(&r, "role"), "admin");
    reply_fini(&r);
    CHECK_INT(as(&s, hs("app", "read-write"), "GET", "/api/v1/whoami", NULL, &r), 200);
    CHECK_STR(jstr(&r, "role"), "read-write");
    reply_fini(&r);
    CHECK_INT(status_as(&s, NULL, "GET", "/api/v1/whoami", NULL), 401);
    srv_stop(&s);
    silt_server open;
    srv_start(&open, NULL);
    rq(&open, "GET", "/api/v1/whoami", NULL, &r);
    CHECK_STR(jstr(&r, "auth"), "off");
    CHECK_STR(jstr(&r, "role"), "admin");
    CHECK_STR(jraw(&r, "sub"), "null");
    reply_fini(&r);
    srv_stop(&open);
}

TEST(auth_dashboard_asks_for_a_token_on_401_and_then_sends_it)
{
    if (!browser_available()) return;
    silt_server s;
    srv_start(&s, hs_env);
    const char *q = uniq("dash");
    char viewer[1024];
    snprintf(viewer, sizeof viewer, "%s", hs("viewer", "read-only"));
    CHECK_INT(status_as(&s, hs("app", "read-write"), "POST", "/api/v1/push",
                        sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1}]}", q)), 201);
    browser b;
    browser_open(&b, sfmt("%s/#/queues", s.url));
    browser_expect_failure(&b, "/api/v1/", 401);
    browser_await(&b, "document.getElementById('token-input') !== null", 20000);
    browser_eval(&b, sfmt("document.getElementById('token-input').value = '%s';"
                          "document.querySelector('[data-action=save-token]').click(); true", viewer));
    browser_await(&b, sfmt("document.querySelector('[data-row=\"%s\"]') !== null", q), 20000);
    CHECK_STR(browser_eval(&b, "localStorage.getItem('silt.token') !== null"), "true");
    CHECK_STR(browser_eval(&b, "document.getElementById('token-prompt') === null"), "true");
    browser_close(&b);
    CHECK_INT(srv_stop(&s), 0);
}
