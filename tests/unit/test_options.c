/* test_options: the /configure option gate. A valid patch comes out as
 * compact JSON with only the keys given (null kept: "back to the default");
 * every bad option is refused with its own name, which becomes the
 * "invalid" field of the 400. */
#include "harness.h"
#include "streams/options.h"
#include <stdio.h>

typedef struct outcome {
    int         rc;
    char        bad[OPTIONS_BAD_BYTES];
    char        err[256];
    char        out[1024];
} outcome;

/* Runs options_patch on the "options" member of {"options": <text>}. */
static outcome patch(const char *options_text)
{
    outcome o;
    memset(&o, 0, sizeof o);
    char text[1024];
    snprintf(text, sizeof text, "{\"options\":%s}", options_text);
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, text, strlen(text), 1024) < 0)
        harness_failf(__FILE__, __LINE__, "test input is not json: %s", text);
    buf out;
    buf_init(&out);
    o.rc = options_patch(&d, json_get(&d, 0, "options"), &out, o.bad, o.err, sizeof o.err);
    snprintf(o.out, sizeof o.out, "%s", out.data ? out.data : "");
    buf_fini(&out);
    json_doc_fini(&d);
    return o;
}

static void expect_bad(const char *options_text, const char *name, int line)
{
    outcome o = patch(options_text);
    if (o.rc != -1) harness_failf(__FILE__, line, "accepted %s", options_text);
    if (strcmp(o.bad, name) != 0)
        harness_failf(__FILE__, line, "%s: invalid is \"%s\", expected \"%s\"", options_text,
                      o.bad, name);
    if (!o.err[0]) harness_failf(__FILE__, line, "%s: no message", options_text);
}
#define EXPECT_BAD(text, name) expect_bad(text, name, __LINE__)

TEST(options_valid_patch_is_normalized)
{
    outcome o = patch("{ \"leaseTime\" : 30 ,\n \"retryLimit\":0, \"deadLetterQueue\" :false,"
                      " \"priority\": -5, \"dedupWindowSeconds\": 0, \"encryptionEnabled\": false }");
    CHECK_INT(o.rc, 0);
    CHECK_STR(o.out, "{\"leaseTime\":30,\"retryLimit\":0,\"deadLetterQueue\":false,\"priority\":-5,"
                     "\"dedupWindowSeconds\":0,\"encryptionEnabled\":false}");
}

TEST(options_every_known_option_accepted)
{
    outcome o = patch("{\"leaseTime\":1,\"retryLimit\":3,\"retryDelay\":1000,\"priority\":0,\"ttl\":3600,"
                      "\"maxSize\":0,\"deadLetterQueue\":true,\"dlqAfterMaxRetries\":true,\"delayedProcessing\":0,"
                      "\"windowBuffer\":0,\"retentionEnabled\":false,\"retentionSeconds\":0,"
                      "\"completedRetentionSeconds\":0,\"maxWaitTimeSeconds\":0,\"dedupWindowSeconds\":3600,"
                      "\"encryptionEnabled\":false}");
    CHECK_INT(o.rc, 0);
    CHECK(strstr(o.out, "\"maxWaitTimeSeconds\":0") != NULL);
    CHECK(strstr(o.out, "\"dlqAfterMaxRetries\":true") != NULL);
}

TEST(options_integer_bounds_are_inclusive)
{
    CHECK_INT(patch("{\"ttl\":2147483647}").rc, 0);
    CHECK_INT(patch("{\"priority\":-2147483647}").rc, 0);
    CHECK_INT(patch("{\"leaseTime\":1}").rc, 0);
    EXPECT_BAD("{\"ttl\":2147483648}", "ttl");
    EXPECT_BAD("{\"priority\":-2147483648}", "priority");
    EXPECT_BAD("{\"leaseTime\":99999999999999999999}", "leaseTime");
}

TEST(options_null_is_kept_in_the_patch)
{
    outcome o = patch("{\"ttl\": null, \"deadLetterQueue\":null, \"leaseTime\":10}");
    CHECK_INT(o.rc, 0);
    CHECK_STR(o.out, "{\"ttl\":null,\"deadLetterQueue\":null,\"leaseTime\":10}");
    o = patch("{\"leaseTime\":null}");   /* null is not the forbidden 0 */
    CHECK_INT(o.rc, 0);
    CHECK_STR(o.out, "{\"leaseTime\":null}");
}

TEST(options_absent_or_empty_gives_empty_patch)
{
    outcome o = patch("{}");
    CHECK_INT(o.rc, 0);
    CHECK_STR(o.out, "{}");
    buf out;
    buf_init(&out);
    char bad[OPTIONS_BAD_BYTES], err[64] = "";
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(json_parse(&d, "{}", 2, 16), 0);
    CHECK_INT(options_patch(&d, -1, &out, bad, err, sizeof err), 0);
    CHECK_STR(out.data, "{}");
    CHECK_STR(bad, "");
    json_doc_fini(&d);
    buf_fini(&out);
}

TEST(options_unknown_option_rejected_naming_it)
{
    outcome o = patch("{\"leaseTime\": 5, \"bogusOption\": 1}");
    CHECK_INT(o.rc, -1);
    CHECK_STR(o.bad, "bogusOption");   /* "invalid" names the option itself */
    CHECK(strstr(o.err, "bogusOption") != NULL);
    o = patch("{\"leasetime\": 5}");   /* names are case-sensitive */
    CHECK_INT(o.rc, -1);
    CHECK(strstr(o.err, "leasetime") != NULL);
}

TEST(options_negative_seconds_rejected)
{
    const char *names[] = { "leaseTime", "retryLimit", "retryDelay", "ttl", "maxSize", "delayedProcessing",
                            "windowBuffer", "retentionSeconds", "completedRetentionSeconds",
                            "maxWaitTimeSeconds", "dedupWindowSeconds" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"%s\": -1}", names[i]);
        EXPECT_BAD(text, names[i]);
        outcome o = patch(text);
        CHECK(strstr(o.err, names[i]) != NULL);
    }
    CHECK_INT(patch("{\"priority\": -1}").rc, 0);   /* priority may be negative */
}

TEST(options_wrong_types_rejected)
{
    EXPECT_BAD("{\"leaseTime\":\"30\"}", "leaseTime");
    EXPECT_BAD("{\"retryLimit\":1.5}", "retryLimit");
    EXPECT_BAD("{\"retryLimit\":1.0}", "retryLimit");
    EXPECT_BAD("{\"ttl\":1e3}", "ttl");
    EXPECT_BAD("{\"ttl\":true}", "ttl");
    EXPECT_BAD("{\"maxSize\":[1]}", "maxSize");
    EXPECT_BAD("{\"dedupWindowSeconds\":{}}", "dedupWindowSeconds");
    EXPECT_BAD("{\"deadLetterQueue\":1}", "deadLetterQueue");
    EXPECT_BAD("{\"deadLetterQueue\":\"true\"}", "deadLetterQueue");
    EXPECT_BAD("{\"retentionEnabled\":0}", "retentionEnabled");
    EXPECT_BAD("{\"dlqAfterMaxRetries\":[]}", "dlqAfterMaxRetries");
    /* the first bad option of several is the one named */
    EXPECT_BAD("{\"leaseTime\":5,\"ttl\":\"x\",\"retryLimit\":-1}", "ttl");
}

TEST(options_not_an_object_rejected)
{
    EXPECT_BAD("[]", "options");
    EXPECT_BAD("\"leaseTime\"", "options");
    EXPECT_BAD("5", "options");
}

TEST(options_lease_time_zero_rejected)
{
    EXPECT_BAD("{\"leaseTime\":0}", "leaseTime");
    outcome o = patch("{\"leaseTime\":0}");
    CHECK(strstr(o.err, "leaseTime") != NULL);
}

/* encryptionEnabled is a plain boolean here: whether true is allowed depends
 * on the server having QUEEN_ENCRYPTION_KEY, which /configure checks. */
TEST(options_encryption_enabled_is_a_plain_boolean)
{
    outcome o = patch("{\"encryptionEnabled\":true}");
    CHECK_INT(o.rc, 0);
    CHECK_STR(o.out, "{\"encryptionEnabled\":true}");
    CHECK_INT(patch("{\"encryptionEnabled\":false}").rc, 0);
    CHECK_INT(patch("{\"encryptionEnabled\":null}").rc, 0);
    EXPECT_BAD("{\"encryptionEnabled\":1}", "encryptionEnabled");
    EXPECT_BAD("{\"encryptionEnabled\":\"true\"}", "encryptionEnabled");
}
