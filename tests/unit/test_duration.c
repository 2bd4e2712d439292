/* test_duration: the durations of [retention] (base/duration.h): what is
 * read, what is refused and why, and the text a class key carries. */
#include "harness.h"
#include "base/duration.h"

static int64_t parsed(const char *text)
{
    int64_t s = -7;
    if (duration_parse(text, &s) != DURATION_OK) harness_failf(__FILE__, __LINE__, "refused %s", text);
    return s;
}

static const char *formatted(int64_t seconds)
{
    static char out[DURATION_TEXT_BYTES];
    duration_format(seconds, out);
    return out;
}

TEST(duration_reads_a_whole_number_and_one_unit)
{
    CHECK_INT(parsed("7d"), 604800);
    CHECK_INT(parsed("36h"), 129600);
    CHECK_INT(parsed("90m"), 5400);
    CHECK_INT(parsed("45s"), 45);
    CHECK_INT(parsed("365d"), 31536000);
    CHECK_INT(parsed("1s"), 1);
    CHECK_INT(parsed("168h"), 604800);
    CHECK_INT(parsed("007d"), 604800);   /* leading zeros are still a whole number */
}

TEST(duration_refuses_fractions_compounds_and_other_forms)
{
    const char *bad[] = {
        "", "7", "d", "1.5d", "1,5d", "1d12h", "7 d", " 7d", "7d ", "-1d", "+7d", "7D", "7days",
        "7w", "1y", "0x10s", "1e3s", "None", "7dd", "d7",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t s = 99;
        duration_fault f = duration_parse(bad[i], &s);
        if (f != DURATION_E_FORM) harness_failf(__FILE__, __LINE__, "%s: fault %d, expected DURATION_E_FORM", bad[i], f);
        CHECK_INT(s, 99);   /* untouched */
    }
}

TEST(duration_refuses_zero_and_past_the_maximum_without_overflow)
{
    int64_t s = 99;
    CHECK_INT(duration_parse("0d", &s), DURATION_E_ZERO);
    CHECK_INT(duration_parse("000s", &s), DURATION_E_ZERO);
    CHECK_INT(duration_parse("36500d", &s), DURATION_OK);
    CHECK_INT(s, DURATION_MAX_SECONDS);
    CHECK_INT(duration_parse("36501d", &s), DURATION_E_TOO_LONG);
    CHECK_INT(duration_parse("876001h", &s), DURATION_E_TOO_LONG);
    CHECK_INT(duration_parse("3153600001s", &s), DURATION_E_TOO_LONG);
    CHECK_INT(duration_parse("99999999999999999999999999d", &s), DURATION_E_TOO_LONG);   /* past int64 */
    CHECK_INT(duration_parse("9223372036854775807s", &s), DURATION_E_TOO_LONG);
    CHECK_INT(s, DURATION_MAX_SECONDS);
}

TEST(duration_renders_in_the_largest_exact_unit)
{
    CHECK_STR(formatted(604800), "7d");
    CHECK_STR(formatted(129600), "36h");
    CHECK_STR(formatted(5400), "90m");
    CHECK_STR(formatted(45), "45s");
    CHECK_STR(formatted(86400), "1d");
    CHECK_STR(formatted(90061), "90061s");   /* 1d 1h 1m 1s: no larger unit is exact */
    CHECK_STR(formatted(DURATION_MAX_SECONDS), "36500d");
}

/* Parse then render gives one spelling per length: 168h and 7d alike. */
TEST(duration_two_spellings_of_one_length_render_the_same)
{
    CHECK_STR(formatted(parsed("168h")), "7d");
    CHECK_STR(formatted(parsed("1440m")), "1d");
    CHECK_STR(formatted(parsed("86400s")), "1d");
    CHECK_STR(formatted(parsed("120m")), "2h");
    CHECK_STR(formatted(parsed("3600s")), "1h");
}

TEST(duration_decimal_gives_the_whole_unit_form_when_there_is_one)
{
    int64_t s = 0;
    CHECK_INT(duration_decimal("1.5d", &s), 0);
    CHECK_STR(formatted(s), "36h");
    CHECK_INT(duration_decimal("2.25h", &s), 0);
    CHECK_STR(formatted(s), "135m");
    CHECK_INT(duration_decimal("0.5m", &s), 0);
    CHECK_STR(formatted(s), "30s");
    CHECK_INT(duration_decimal("1.0d", &s), 0);
    CHECK_STR(formatted(s), "1d");
    const char *none[] = { "0.3s", "7d", "1.5", ".5d", "1.d", "0.0d", "1.5dd", "1.5x", "99999999999.5d", "1.0000000001d" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        if (duration_decimal(none[i], &s) == 0) harness_failf(__FILE__, __LINE__, "%s gave %lld", none[i], (long long)s);
}
