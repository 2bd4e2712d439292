/* test_class_key: retention class keys (base/class_key.h): the derivation
 * q_<queue>_<duration> with the document's examples, the 18-character bound
 * and its arithmetic, the identifier rule, the reserved keys and prefix. */
#include "harness.h"
#include "base/class_key.h"
#include <stdlib.h>

static void check_derived(const char *queue, int64_t seconds, const char *want)
{
    char *k = class_key_derive(queue, seconds);
    CHECK_STR(k, want);
    free(k);
}

TEST(class_key_derives_the_documented_keys)
{
    check_derived("emails", 7 * 86400, "q_emails_7d");
    check_derived("emails", 14 * 86400, "q_emails_14d");
    check_derived("reports", 90 * 86400, "q_reports_90d");
    check_derived("ingest", 36 * 3600, "q_ingest_36h");
    check_derived("a", 7 * 86400, "q_a_7d");   /* {'a': 7d, 'b': 7d}: two keys, not one shared */
    check_derived("b", 7 * 86400, "q_b_7d");
}

TEST(class_key_derives_in_the_largest_exact_unit)
{
    check_derived("emails", 168 * 3600, "q_emails_7d");   /* the 0.4.x {'emails': 168} */
    check_derived("x", 1440 * 60, "q_x_1d");
    check_derived("x", 90 * 60, "q_x_90m");
    check_derived("x", 45, "q_x_45s");
}

TEST(class_key_bound_is_18_by_the_documented_arithmetic)
{
    CHECK_INT(CLASS_KEY_MAX, 18);
    CHECK_INT(63 - 21 - 11 - 13, CLASS_KEY_MAX);
    CHECK_INT(strlen("horsies_task_history_"), CLASS_KEY_RELATION_BYTES);
    CHECK_INT(strlen("_2026_08_11"), CLASS_KEY_DAY_BYTES);
    CHECK_INT(strlen("_enqueued_idx"), CLASS_KEY_INDEX_BYTES);
    /* the document's own longest name */
    CHECK_INT(class_key_longest_name_bytes("q_emails_7d"), strlen("horsies_task_history_q_emails_7d_2026_08_11_enqueued_idx"));
    CHECK_INT(class_key_longest_name_bytes("abcdefghijklmnopqr"), 63);
    CHECK_INT(class_key_check_declared("abcdefghijklmnopqr"), CLASS_KEY_OK);          /* 18 */
    CHECK_INT(class_key_check_declared("abcdefghijklmnopqrs"), CLASS_KEY_TOO_LONG);   /* 19 */
}

/* "roughly 13 characters for a mapped queue name" after q_, _ and 7d. */
TEST(class_key_a_13_character_queue_mapped_to_7d_fits_and_14_does_not)
{
    CHECK_INT(class_key_queue_room(7 * 86400), 13);
    CHECK_INT(class_key_queue_room(90 * 86400), 12);
    CHECK_INT(class_key_queue_room(45), 12);
    char *k = class_key_derive("notifications", 7 * 86400);   /* 13 */
    CHECK_INT(strlen(k), 18);
    CHECK_INT(class_key_check_derived(k), CLASS_KEY_OK);
    free(k);
    k = class_key_derive("notificationsx", 7 * 86400);   /* 14 */
    CHECK_INT(class_key_check_derived(k), CLASS_KEY_TOO_LONG);
    free(k);
    k = class_key_derive("notifications", 90 * 86400);   /* 13 at 90d: one too many */
    CHECK_INT(class_key_check_derived(k), CLASS_KEY_TOO_LONG);
    free(k);
}

TEST(class_key_must_be_a_usable_identifier)
{
    const char *good[] = { "audit_1y", "transient_2d", "a", "a_", "x9", "q_emails_7d" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!class_key_is_identifier(good[i])) harness_failf(__FILE__, __LINE__, "refused %s", good[i]);
    const char *bad[] = { "", "Audit_1y", "1y_audit", "_audit", "audit-1y", "audit.1y", "audit 1y", "é", "AUDIT" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (class_key_is_identifier(bad[i])) harness_failf(__FILE__, __LINE__, "accepted %s", bad[i]);
        CHECK_INT(class_key_check_declared(bad[i]), CLASS_KEY_NOT_IDENTIFIER);
        CHECK_INT(class_key_check_derived(bad[i]), CLASS_KEY_NOT_IDENTIFIER);
    }
    /* a queue name silt allows but a key cannot carry */
    char *k = class_key_derive("bulk-mail", 7 * 86400);
    CHECK_INT(class_key_check_derived(k), CLASS_KEY_NOT_IDENTIFIER);
    free(k);
    k = class_key_derive("Emails", 7 * 86400);
    CHECK_INT(class_key_check_derived(k), CLASS_KEY_NOT_IDENTIFIER);
    free(k);
}

TEST(class_key_reserved_keys_and_the_q_prefix_are_refused_when_declared)
{
    CHECK_INT(class_key_check_declared("standard_30d"), CLASS_KEY_RESERVED);
    CHECK_INT(class_key_check_declared("forever"), CLASS_KEY_RESERVED);
    CHECK_INT(class_key_check_declared("heartbeats"), CLASS_KEY_RESERVED);
    CHECK(class_key_is_reserved("forever"));
    CHECK(!class_key_is_reserved("forever2"));
    CHECK_INT(class_key_check_declared("standard_30d_x"), CLASS_KEY_OK);
    CHECK_INT(class_key_check_declared("q_audit"), CLASS_KEY_PREFIX);
    CHECK_INT(class_key_check_declared("q_"), CLASS_KEY_PREFIX);
    CHECK_INT(class_key_check_declared("q_a_very_long_key_indeed"), CLASS_KEY_PREFIX);   /* the prefix first */
    CHECK_INT(class_key_check_declared("q"), CLASS_KEY_OK);
    CHECK_INT(class_key_check_declared("qq_x"), CLASS_KEY_OK);
    CHECK_INT(class_key_check_derived("q_emails_7d"), CLASS_KEY_OK);   /* derived keys carry it */
}

/* A declared key must not make its class's relation name another one's:
 * horsies_task_history_<key> of a key ending _YYYY_MM_DD is a daily leaf of
 * the class before it, and of leaf_catalog the catalog. */
TEST(class_key_a_declared_key_that_names_another_relation_is_refused)
{
    CHECK_INT(class_key_check_declared("a_2026_08_11"), CLASS_KEY_RELATION);
    CHECK_INT(class_key_check_declared("leaf_catalog"), CLASS_KEY_RELATION);
    CHECK_INT(class_key_check_declared("a_2026_08_1x"), CLASS_KEY_OK);
    CHECK_INT(class_key_check_declared("a2026_08_11"), CLASS_KEY_OK);
    CHECK_INT(class_key_check_declared("_2026_08_11"), CLASS_KEY_NOT_IDENTIFIER);
    CHECK_INT(class_key_check_declared("audit_2026"), CLASS_KEY_OK);
    CHECK(!class_key_names_a_relation("q_emails_7d"));
}
