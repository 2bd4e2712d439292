/* test_cron: cron expressions, what they refuse, and when they fire, in UTC
 * and across daylight-saving changes (the rules are in src/base/cron.h). */
#include "harness.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "base/clock.h"
#include "base/cron.h"

/* Unix seconds of a UTC date and time (timegm: no zone involved). */
static int64_t utc(int y, int mon, int d, int h, int min)
{
    struct tm tm = { .tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d, .tm_hour = h, .tm_min = min };
    return (int64_t)timegm(&tm);
}

static cron_expr parsed(const char *text)
{
    cron_expr e;
    char err[200];
    if (cron_parse(text, &e, err, sizeof err) != 0) harness_failf(__FILE__, __LINE__, "%s: %s", text, err);
    return e;
}

static uint64_t bits(const int *values, int n)
{
    uint64_t b = 0;
    for (int i = 0; i < n; i++) b |= 1ULL << values[i];
    return b;
}
#define BITS(...) bits((const int[]){ __VA_ARGS__ }, (int)(sizeof((const int[]){ __VA_ARGS__ }) / sizeof(int)))

/* The fires of text in tz after `after`, one after another, against want. */
static void check_fires(const char *text, const char *tz, int64_t after, const int64_t *want, int n)
{
    cron_expr e = parsed(text);
    for (int i = 0; i < n; i++) {
        int64_t t = cron_next(&e, tz, after);
        if (t != want[i])
            harness_failf(__FILE__, __LINE__, "%s in %s, fire %d: %lld, expected %lld (%+lld s)", text, tz, i,
                          (long long)t, (long long)want[i], (long long)(t - want[i]));
        after = t;
    }
}
#define CHECK_FIRES(text, tz, after, ...)                                                     \
    check_fires(text, tz, after, (const int64_t[]){ __VA_ARGS__ },                            \
                (int)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))

/* ---- parsing ---- */

TEST(cron_parse_star_allows_every_value_of_each_field)
{
    cron_expr e = parsed("* * * * *");
    CHECK(e.minutes == (1ULL << 60) - 1);
    CHECK_INT(e.hours, (1u << 24) - 1);
    CHECK_INT(e.days, 0xFFFFFFFEu);   /* 1-31 */
    CHECK_INT(e.months, 0x1FFE);      /* 1-12 */
    CHECK_INT(e.weekdays, 0x7F);
    CHECK(e.dom_star && e.dow_star);
}

TEST(cron_parse_reads_numbers_lists_ranges_and_steps)
{
    cron_expr e = parsed("5,10-12,50-59/3 9-17/4 */10 */3 1-5");
    CHECK(e.minutes == BITS(5, 10, 11, 12, 50, 53, 56, 59));
    CHECK(e.hours == BITS(9, 13, 17));
    CHECK(e.days == BITS(1, 11, 21, 31));   /* a step counts from the field's minimum */
    CHECK(e.months == BITS(1, 4, 7, 10));
    CHECK(e.weekdays == BITS(1, 2, 3, 4, 5));
    CHECK(e.dom_star && !e.dow_star);
    e = parsed("*/15 */6 05 12 0");
    CHECK(e.minutes == BITS(0, 15, 30, 45));
    CHECK(e.hours == BITS(0, 6, 12, 18));
    CHECK(e.days == BITS(5));   /* a leading zero is the same number */
    CHECK(e.months == BITS(12));
    CHECK(!e.dom_star);
    e = parsed("0 0 1-31 * *");   /* every day, written as a range: restricted */
    CHECK(!e.dom_star);
}

TEST(cron_parse_takes_blanks_and_tabs_between_fields)
{
    cron_expr a = parsed("  0\t12   1 *\t* \t");
    cron_expr b = parsed("0 12 1 * *");
    CHECK(memcmp(&a, &b, sizeof a) == 0);
}

TEST(cron_parse_reads_month_and_weekday_names_in_any_case)
{
    cron_expr e = parsed("0 0 * JAN,mar-May Mon-FRI");
    CHECK(e.months == BITS(1, 3, 4, 5));
    CHECK(e.weekdays == BITS(1, 2, 3, 4, 5));
    e = parsed("0 0 * dec sat,sun");
    CHECK(e.months == BITS(12));
    CHECK(e.weekdays == BITS(0, 6));
    e = parsed("0 0 * jan-dec/2 sun-sat");
    CHECK(e.months == BITS(1, 3, 5, 7, 9, 11));
    CHECK_INT(e.weekdays, 0x7F);
}

TEST(cron_parse_zero_and_seven_are_both_sunday)
{
    CHECK_INT(parsed("0 0 * * 0").weekdays, 1);
    CHECK_INT(parsed("0 0 * * 7").weekdays, 1);
    CHECK(parsed("0 0 * * 5-7").weekdays == BITS(0, 5, 6));
    CHECK(parsed("0 0 * * fri-sun").weekdays == BITS(0, 5, 6));   /* sun closing a range is 7 */
    CHECK(parsed("0 0 * * sun-sun").weekdays == BITS(0));          /* ...but not one it opens */
    CHECK_INT(parsed("0 0 * * sun-sat").weekdays, 0x7F);
    CHECK(parsed("0 0 * * */7").weekdays == BITS(0));
}

TEST(cron_parse_refuses_with_the_field_and_the_fault)
{
    static const struct { const char *text, *error; } cases[] = {
        { "", "expected 5 fields (minute hour day-of-month month day-of-week), found 0" },
        { "* * * *", "expected 5 fields (minute hour day-of-month month day-of-week), found 4" },
        { "* * * * * *", "expected 5 fields (minute hour day-of-month month day-of-week), found 6" },
        { "@daily", "\"@daily\": macros are not supported (write the 5 fields: minute hour day-of-month "
                    "month day-of-week)" },
        { "60 * * * *", "field 1 (minute): 60 is out of range 0-59" },
        { "9999999999 * * * *", "field 1 (minute): 9999999999 is out of range 0-59" },
        { "* 24 * * *", "field 2 (hour): 24 is out of range 0-23" },
        { "0 0 32 * *", "field 3 (day of month): 32 is out of range 1-31" },
        { "0 0 0 * *", "field 3 (day of month): 0 is out of range 1-31" },
        { "0 0 * 13 *", "field 4 (month): 13 is out of range 1-12" },
        { "0 0 * 0 *", "field 4 (month): 0 is out of range 1-12" },
        { "0 0 * * 8", "field 5 (day of week): 8 is out of range 0-7" },
        { "0 0 * foo *", "field 4 (month): unknown month name \"foo\" (expected jan..dec or a number)" },
        { "0 0 * january *", "field 4 (month): unknown month name \"january\" (expected jan..dec or a number)" },
        { "0 0 * * funday", "field 5 (day of week): unknown day name \"funday\" (expected sun..sat or a number)" },
        { "x * * * *", "field 1 (minute): \"x\" is not a number" },
        { "0 jan * * *", "field 2 (hour): \"jan\" is not a number" },
        { "5x * * * *", "field 1 (minute): \"5x\" is not a number" },
        { "0 0 L * *", "field 3 (day of month): \"L\" is not a number" },
        { "1,,2 * * * *", "field 1 (minute): empty list element" },
        { "1, * * * *", "field 1 (minute): empty list element" },
        { "5- * * * *", "field 1 (minute): \"5-\": a value is missing" },
        { "5-1 * * * *", "field 1 (minute): \"5-1\" is a reversed range (write the smaller value first)" },
        { "0 0 * * fri-thu", "field 5 (day of week): \"fri-thu\" is a reversed range (write the smaller value first)" },
        { "*/0 * * * *", "field 1 (minute): step 0 is out of range 1-59" },
        { "*/60 * * * *", "field 1 (minute): step 60 is out of range 1-59" },
        { "0 0 * */12 *", "field 4 (month): step 12 is out of range 1-11" },
        { "*/ * * * *", "field 1 (minute): \"*/\": the step is missing" },
        { "*/x * * * *", "field 1 (minute): step \"x\" is not a number" },
        { "5/10 * * * *", "field 1 (minute): \"5/10\": a step needs a range or \"*\" (for example 5-59/10)" },
        { "0 0 ? * *", "field 3 (day of month): \"?\": unexpected character '?'" },
        { "1.5 * * * *", "field 1 (minute): \"1.5\": unexpected character '.'" },
        { "** * * * *", "field 1 (minute): \"**\": unexpected character '*'" },
        { "0 0 * * 5#2", "field 5 (day of week): \"5#2\": unexpected character '#'" },
        { "0 0\x01 * * *", "field 2 (hour): \"0\x01\": unexpected byte 0x01" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cron_expr e, before;
        memset(&e, 0xAB, sizeof e);
        before = e;
        char err[200];
        if (cron_parse(cases[i].text, &e, err, sizeof err) != -1)
            harness_failf(__FILE__, __LINE__, "accepted \"%s\"", cases[i].text);
        CHECK_STR(err, cases[i].error);
        CHECK(memcmp(&e, &before, sizeof e) == 0);   /* nothing written on error */
    }
}

TEST(cron_parse_error_fits_any_buffer)
{
    cron_expr e;
    char err[12];
    memset(err, 'x', sizeof err);
    CHECK_INT(cron_parse("0 0 32 * *", &e, err, sizeof err), -1);
    CHECK_STR(err, "field 3 (da");   /* cut, still terminated */
    CHECK_INT(cron_parse("0 0 32 * *", &e, NULL, 0), -1);
    CHECK_INT(cron_parse(NULL, &e, err, sizeof err), -1);
    CHECK_STR(err, "no expressi");
}

/* ---- fire times in UTC ---- */

TEST(cron_next_fires_at_the_next_matching_minute_in_utc)
{
    CHECK_FIRES("0 * * * *", "UTC", utc(2026, 1, 1, 10, 20), utc(2026, 1, 1, 11, 0), utc(2026, 1, 1, 12, 0));
    CHECK_FIRES("30 9 * * *", "UTC", utc(2026, 1, 1, 10, 0), utc(2026, 1, 2, 9, 30), utc(2026, 1, 3, 9, 30));
    CHECK_FIRES("0 0 1 1 *", "UTC", utc(2026, 6, 1, 0, 0), utc(2027, 1, 1, 0, 0), utc(2028, 1, 1, 0, 0));
    CHECK_FIRES("59 23 31 12 *", "UTC", utc(2026, 12, 31, 23, 58), utc(2026, 12, 31, 23, 59),
                utc(2027, 12, 31, 23, 59));
    CHECK_FIRES("* * * * *", "UTC", utc(2026, 12, 31, 23, 59), utc(2027, 1, 1, 0, 0), utc(2027, 1, 1, 0, 1));
    CHECK_FIRES("15 8-9 * * *", "UTC", utc(2026, 1, 31, 9, 15), utc(2026, 2, 1, 8, 15), utc(2026, 2, 1, 9, 15));
}

TEST(cron_next_is_strictly_after_a_time_that_is_a_slot)
{
    cron_expr e = parsed("0 * * * *");
    CHECK_INT(cron_next(&e, "UTC", utc(2026, 1, 1, 10, 0)), utc(2026, 1, 1, 11, 0));
    CHECK_INT(cron_next(&e, "UTC", utc(2026, 1, 1, 10, 0) - 1), utc(2026, 1, 1, 10, 0));
    CHECK_INT(cron_next(&e, "UTC", utc(2026, 1, 1, 10, 0) + 1), utc(2026, 1, 1, 11, 0));
    CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 1, 1, 10, 0)), utc(2026, 1, 1, 11, 0));
}

TEST(cron_next_steps_follow_the_field_range)
{
    CHECK_FIRES("*/15 * * * *", "UTC", utc(2026, 1, 1, 10, 7), utc(2026, 1, 1, 10, 15), utc(2026, 1, 1, 10, 30),
                utc(2026, 1, 1, 10, 45), utc(2026, 1, 1, 11, 0));
    /* 23 is not a multiple of 2: the hour after 22:00 is the next day's 00:00 */
    CHECK_FIRES("0 */2 * * *", "UTC", utc(2026, 1, 1, 21, 0), utc(2026, 1, 1, 22, 0), utc(2026, 1, 2, 0, 0));
    /* days 1, 11, 21, 31: February has no 31st */
    CHECK_FIRES("0 0 */10 * *", "UTC", utc(2026, 1, 25, 0, 0), utc(2026, 1, 31, 0, 0), utc(2026, 2, 1, 0, 0),
                utc(2026, 2, 11, 0, 0), utc(2026, 2, 21, 0, 0), utc(2026, 3, 1, 0, 0));
    CHECK_FIRES("10-20/5 * * * *", "UTC", utc(2026, 1, 1, 10, 20), utc(2026, 1, 1, 11, 10), utc(2026, 1, 1, 11, 15));
}

TEST(cron_next_month_and_weekday_names_fire_like_numbers)
{
    /* 2026-03-01 is a Sunday; Mar 2 a Monday */
    CHECK_FIRES("0 9 * * mon-fri", "UTC", utc(2026, 2, 27, 10, 0), utc(2026, 3, 2, 9, 0), utc(2026, 3, 3, 9, 0));
    CHECK_FIRES("0 9 * * 1-5", "UTC", utc(2026, 2, 27, 10, 0), utc(2026, 3, 2, 9, 0), utc(2026, 3, 3, 9, 0));
    CHECK_FIRES("0 0 1 jun,DEC *", "UTC", utc(2026, 1, 1, 0, 0), utc(2026, 6, 1, 0, 0), utc(2026, 12, 1, 0, 0),
                utc(2027, 6, 1, 0, 0));
    CHECK_FIRES("0 0 * * 7", "UTC", utc(2026, 3, 2, 0, 0), utc(2026, 3, 8, 0, 0));   /* 7 is Sunday */
    CHECK_FIRES("0 0 * * sun", "UTC", utc(2026, 3, 2, 0, 0), utc(2026, 3, 8, 0, 0));
}

TEST(cron_next_day_of_month_or_day_of_week_when_both_restricted)
{
    /* the 13th or any Friday: 2026-02-06 and 02-13 are Fridays, 03-13 too, 02-20 and 02-27 */
    CHECK_FIRES("0 12 13 * 5", "UTC", utc(2026, 2, 1, 0, 0), utc(2026, 2, 6, 12, 0), utc(2026, 2, 13, 12, 0),
                utc(2026, 2, 20, 12, 0), utc(2026, 2, 27, 12, 0), utc(2026, 3, 6, 12, 0), utc(2026, 3, 13, 12, 0));
    /* the 1st or a Monday: Mar 1 (Sunday) by its date, Mar 2 by its weekday */
    CHECK_FIRES("0 0 1 * mon", "UTC", utc(2026, 2, 28, 0, 0), utc(2026, 3, 1, 0, 0), utc(2026, 3, 2, 0, 0),
                utc(2026, 3, 9, 0, 0));
}

TEST(cron_next_only_the_restricted_day_field_when_the_other_is_star)
{
    CHECK_FIRES("0 0 13 * *", "UTC", utc(2026, 2, 1, 0, 0), utc(2026, 2, 13, 0, 0), utc(2026, 3, 13, 0, 0));
    CHECK_FIRES("0 0 * * 5", "UTC", utc(2026, 2, 1, 0, 0), utc(2026, 2, 6, 0, 0), utc(2026, 2, 13, 0, 0),
                utc(2026, 2, 20, 0, 0));
}

TEST(cron_next_star_step_in_a_day_field_makes_both_apply_as_in_vixie_cron)
{
    /* day of month starts with "*": odd days that are also Mondays (Mar 9, 23) */
    CHECK_FIRES("0 0 */2 * mon", "UTC", utc(2026, 3, 1, 0, 0), utc(2026, 3, 9, 0, 0), utc(2026, 3, 23, 0, 0));
    /* written as a list it is restricted: odd days or Mondays */
    CHECK_FIRES("0 0 1-31/2 * mon", "UTC", utc(2026, 3, 1, 0, 0), utc(2026, 3, 2, 0, 0), utc(2026, 3, 3, 0, 0),
                utc(2026, 3, 5, 0, 0));
}

TEST(cron_next_feb_29_fires_every_leap_year_only)
{
    CHECK_FIRES("0 0 29 2 *", "UTC", utc(2026, 1, 1, 0, 0), utc(2028, 2, 29, 0, 0), utc(2032, 2, 29, 0, 0),
                utc(2036, 2, 29, 0, 0));
    /* 2100 is not a leap year: eight years between */
    CHECK_FIRES("0 0 29 2 *", "UTC", utc(2096, 3, 1, 0, 0), utc(2104, 2, 29, 0, 0));
    cron_expr e = parsed("0 0 29 2 *");
    CHECK(cron_can_fire(&e));
}

TEST(cron_next_never_fires_on_dates_that_do_not_exist)
{
    const char *never[] = { "0 0 30 2 *", "0 0 31 2 *", "0 0 30,31 feb *", "0 0 31 4 *", "0 0 31 6 *",
                            "0 0 31 9 *", "0 0 31 11 *", "* * 31 4,6,9,11 *" };
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        cron_expr e = parsed(never[i]);
        if (cron_can_fire(&e)) harness_failf(__FILE__, __LINE__, "%s can fire", never[i]);
        CHECK_INT(cron_next(&e, "UTC", utc(2026, 1, 1, 0, 0)), -1);
        CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 1, 1, 0, 0)), -1);
    }
    /* one possible month or a weekday is enough */
    const char *some[] = { "0 0 31 4,5 *", "0 0 30 2 mon", "0 0 29 2 *", "* * * * *" };
    for (size_t i = 0; i < sizeof some / sizeof some[0]; i++) {
        cron_expr e = parsed(some[i]);
        if (!cron_can_fire(&e)) harness_failf(__FILE__, __LINE__, "%s cannot fire", some[i]);
    }
    CHECK_FIRES("0 0 31 4,5 *", "UTC", utc(2026, 1, 1, 0, 0), utc(2026, 5, 31, 0, 0));
}

TEST(cron_next_never_walks_minute_by_minute)
{
    /* 30 years minute by minute would be 16 million steps a call */
    cron_expr never = parsed("0 0 31 4 *"), leap = parsed("0 0 29 2 *"), minutes = parsed("*/5 3 31 * *");
    int64_t start = clock_mono_us();
    for (int i = 0; i < 100; i++) {
        CHECK_INT(cron_next(&never, "Europe/Paris", utc(2026, 1, 1, 0, 0) + i * 86400), -1);
        CHECK_INT(cron_next(&leap, "America/New_York", utc(2096, 3, 1, 0, 0)), utc(2104, 2, 29, 5, 0));
        CHECK_INT(cron_next(&minutes, "UTC", utc(2026, 2, 1, 0, 0)), utc(2026, 3, 31, 3, 0));
    }
    int64_t elapsed_ms = (clock_mono_us() - start) / 1000;
    if (elapsed_ms > 5000) harness_failf(__FILE__, __LINE__, "300 searches took %lld ms", (long long)elapsed_ms);
}

TEST(cron_next_refuses_what_it_cannot_compute)
{
    cron_expr e = parsed("* * * * *");
    CHECK_INT(cron_next(NULL, "UTC", 0), -1);
    CHECK_INT(cron_next(&e, "Mars/Olympus_Mons", utc(2026, 1, 1, 0, 0)), -1);
    CHECK_INT(cron_next(&e, NULL, utc(2026, 1, 1, 0, 0)), -1);
    CHECK_INT(cron_next(&e, "UTC", -1), -1);
    CHECK_INT(cron_next(&e, "UTC", CRON_MAX_UNIX_S + 1), -1);
    CHECK_INT(cron_next(&e, "UTC", 0), 60);
    CHECK_INT(cron_next(&e, "UTC", CRON_MAX_UNIX_S), CRON_MAX_UNIX_S + 60);
}

/* ---- daylight saving ---- */

/* Europe/Paris, 2026-03-29: at 01:00 UTC the clocks go from 02:00 CET to 03:00 CEST. */
TEST(cron_next_paris_spring_forward_daily_job_fires_at_the_end_of_the_gap)
{
    CHECK_FIRES("30 2 * * *", "Europe/Paris", utc(2026, 3, 27, 12, 0), utc(2026, 3, 28, 1, 30) /* 02:30 CET */,
                utc(2026, 3, 29, 1, 0) /* 02:30 does not exist: 03:00 CEST */,
                utc(2026, 3, 30, 0, 30) /* 02:30 CEST */);
    CHECK_FIRES("0 2 * * *", "Europe/Paris", utc(2026, 3, 28, 12, 0), utc(2026, 3, 29, 1, 0));
    CHECK_FIRES("59 2 * * *", "Europe/Paris", utc(2026, 3, 28, 12, 0), utc(2026, 3, 29, 1, 0));
    /* 03:00 exists; it is the same instant, and fires once */
    CHECK_FIRES("0 3 * * *", "Europe/Paris", utc(2026, 3, 28, 12, 0), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 1, 0));
    CHECK_FIRES("59 1 * * *", "Europe/Paris", utc(2026, 3, 28, 12, 0), utc(2026, 3, 29, 0, 59));
}

/* Europe/Paris, 2026-10-25: at 01:00 UTC the clocks go from 03:00 CEST back to 02:00 CET. */
TEST(cron_next_paris_fall_back_daily_job_fires_once_at_the_first_occurrence)
{
    CHECK_FIRES("30 2 * * *", "Europe/Paris", utc(2026, 10, 24, 12, 0), utc(2026, 10, 25, 0, 30) /* 02:30 CEST */,
                utc(2026, 10, 26, 1, 30) /* the next day's 02:30 CET, not 01:30 UTC */);
    /* from between the two 02:30s, and from the second one itself */
    cron_expr e = parsed("30 2 * * *");
    CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 10, 25, 0, 45)), utc(2026, 10, 26, 1, 30));
    CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 10, 25, 1, 30)), utc(2026, 10, 26, 1, 30));
    CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 10, 25, 0, 30) - 1), utc(2026, 10, 25, 0, 30));
}

TEST(cron_next_paris_every_30_minutes_across_spring_forward)
{
    /* 01:00, 01:30 CET; 02:00 and 02:30 do not exist and fire with 03:00 CEST; then 03:30 CEST */
    CHECK_FIRES("*/30 * * * *", "Europe/Paris", utc(2026, 3, 28, 23, 45), utc(2026, 3, 29, 0, 0),
                utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30), utc(2026, 3, 29, 2, 0));
}

TEST(cron_next_paris_every_30_minutes_across_fall_back)
{
    /* 01:30, 02:00, 02:30 CEST; the repeated 02:00 and 02:30 CET (01:00, 01:30 UTC) are the
     * same local slots and do not fire again; then 03:00 CET */
    CHECK_FIRES("*/30 * * * *", "Europe/Paris", utc(2026, 10, 24, 23, 15), utc(2026, 10, 24, 23, 30),
                utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 2, 0), utc(2026, 10, 25, 2, 30));
    cron_expr e = parsed("*/30 * * * *");
    CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 10, 25, 1, 10)), utc(2026, 10, 25, 2, 0));
    CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 10, 25, 1, 0)), utc(2026, 10, 25, 2, 0));
}

/* Walks "*\/30 * * * *" in Paris over [from, to) (UTC) and checks it fires
 * at every UTC half hour but the skipped ones; the number of fires. */
static int walk_half_hours(int64_t from, int64_t to, const int64_t skipped[2])
{
    cron_expr e = parsed("*/30 * * * *");
    int64_t want = from, t = from - 60;
    int fires = 0;
    while ((t = cron_next(&e, "Europe/Paris", t)) < to) {
        while (want == skipped[0] || want == skipped[1]) want += 1800;
        if (t != want)
            harness_failf(__FILE__, __LINE__, "fire %d at %lld, expected %lld", fires, (long long)t, (long long)want);
        want += 1800;
        fires++;
    }
    return fires;
}

/* Over the whole month of each change every local half hour fires once: in
 * UTC every half hour but the two repeated ones of October (the three local
 * slots of the March gap share one instant, so March skips no UTC half hour). */
TEST(cron_next_paris_every_local_half_hour_of_a_changing_month_fires_exactly_once)
{
    /* from local 00:00 on the 1st to local 00:00 on the 1st of the next month */
    int64_t none[2] = { 0, 0 };
    CHECK_INT(walk_half_hours(utc(2026, 2, 28, 23, 0), utc(2026, 3, 31, 22, 0), none), 31 * 48 - 2);
    int64_t repeated[2] = { utc(2026, 10, 25, 1, 0), utc(2026, 10, 25, 1, 30) };
    CHECK_INT(walk_half_hours(utc(2026, 9, 30, 22, 0), utc(2026, 10, 31, 23, 0), repeated), 31 * 48);
}

/* America/New_York, 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00 UTC;
 * 2026-11-01: 02:00 EDT -> 01:00 EST at 06:00 UTC. */
TEST(cron_next_new_york_across_both_changes)
{
    CHECK_FIRES("30 2 * * *", "America/New_York", utc(2026, 3, 7, 12, 0), utc(2026, 3, 8, 7, 0),
                utc(2026, 3, 9, 6, 30));
    CHECK_FIRES("*/30 * * * *", "America/New_York", utc(2026, 3, 8, 6, 15), utc(2026, 3, 8, 6, 30),
                utc(2026, 3, 8, 7, 0), utc(2026, 3, 8, 7, 30));
    CHECK_FIRES("30 1 * * *", "America/New_York", utc(2026, 10, 31, 12, 0), utc(2026, 11, 1, 5, 30) /* EDT */,
                utc(2026, 11, 2, 6, 30) /* EST */);
    CHECK_FIRES("*/30 * * * *", "America/New_York", utc(2026, 11, 1, 4, 45), utc(2026, 11, 1, 5, 0),
                utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 7, 0), utc(2026, 11, 1, 7, 30));
}

TEST(cron_next_zone_without_daylight_saving_keeps_its_offset)
{
    /* Asia/Kolkata is UTC+05:30 all year */
    CHECK_FIRES("0 9 * * *", "Asia/Kolkata", utc(2026, 3, 28, 12, 0), utc(2026, 3, 29, 3, 30), utc(2026, 3, 30, 3, 30));
}

/* ---- zones ---- */

TEST(cron_tz_valid_knows_system_zones_only)
{
    const char *good[] = { "UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Etc/GMT+5",
                           "America/Argentina/Buenos_Aires" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!cron_tz_valid(good[i])) harness_failf(__FILE__, __LINE__, "refused %s", good[i]);
    const char *bad[] = {
        "", "Mars/Olympus_Mons", "Europe/Pariss", "europe/paris", "Europe", "Europe/", "/Europe/Paris",
        "/etc/passwd", "../../../etc/passwd", "Europe/../Europe/Paris", "./UTC", "Europe//Paris",
        "zone.tab", "iso3166.tab", "Europe/Paris ", "Europe/Paris\n", "UTC;rm",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cron_tz_valid(bad[i])) harness_failf(__FILE__, __LINE__, "accepted \"%s\"", bad[i]);
    CHECK(!cron_tz_valid(NULL));
    char long_name[CRON_TZ_MAX + 2];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    CHECK(!cron_tz_valid(long_name));
}

TEST(cron_next_puts_the_process_timezone_back)
{
    cron_expr e = parsed("0 0 * * *");
    setenv("TZ", "America/New_York", 1);
    tzset();
    CHECK_INT(cron_next(&e, "Europe/Paris", utc(2026, 1, 1, 12, 0)), utc(2026, 1, 1, 23, 0));
    CHECK_STR(getenv("TZ"), "America/New_York");
    time_t t = (time_t)utc(2026, 1, 1, 12, 0);
    struct tm tm;
    localtime_r(&t, &tm);
    CHECK_INT(tm.tm_gmtoff, -5 * 3600);
    unsetenv("TZ");
    tzset();
    CHECK_INT(cron_next(&e, "Asia/Kolkata", utc(2026, 1, 1, 12, 0)), utc(2026, 1, 1, 18, 30));
    CHECK(getenv("TZ") == NULL);
}

/* ---- against a brute-force reading of the rule ---- */

/* The local minute (minutes since 1970-01-01 on the zone's clock) at t; TZ is the zone. */
static int64_t wall_minute(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    localtime_r(&tt, &tm);
    return (int64_t)timegm(&tm) / 60;
}

static bool slot_matches(const cron_expr *e, int64_t local_minute)
{
    time_t tt = (time_t)(local_minute * 60);
    struct tm tm;
    gmtime_r(&tt, &tm);
    bool dom = e->days >> tm.tm_mday & 1, dow = e->weekdays >> tm.tm_wday & 1;
    bool day = (e->dom_star || e->dow_star) ? dom && dow : dom || dow;
    return (e->minutes >> tm.tm_min & 1) && (e->hours >> tm.tm_hour & 1) && (e->months >> (tm.tm_mon + 1) & 1) && day;
}

/* Minute by minute through [from, to): a slot fires at the first instant at
 * which the clock reads it or later (cron.h's rule, read literally), and
 * cron_next must give exactly those instants. */
static void check_against_brute_force(const char *text, const char *tz, int64_t from, int64_t to)
{
    cron_expr e = parsed(text);
    int64_t seen = wall_minute(from), next = cron_next(&e, tz, from);
    for (int64_t t = from + 60; t < to; t += 60) {
        int64_t w = wall_minute(t);
        bool fires = false;
        for (int64_t m = seen + 1; m <= w; m++) fires = fires || slot_matches(&e, m);
        if (w > seen) seen = w;
        if (fires != (next == t) || next < t)
            harness_failf(__FILE__, __LINE__, "%s in %s: at %lld the rule says %s, cron_next gave %lld", text, tz,
                          (long long)t, fires ? "fire" : "no fire", (long long)next);
        if (fires) next = cron_next(&e, tz, t);
    }
}

/* Zones whose changes differ in kind: spring and autumn at 02:00 or 01:00
 * UTC, a half-hour change (Lord Howe), a negative DST (Dublin), changes at
 * local midnight that skip or repeat 00:00 (Santiago, Havana), the southern
 * hemisphere (Sydney). Two days around each 2026 change, every expression. */
TEST(cron_next_agrees_with_a_minute_by_minute_reading_around_every_2026_change)
{
    const char *zones[] = { "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Europe/Dublin",
                            "America/Santiago", "America/Havana", "Australia/Sydney" };
    const char *exprs[] = { "*/30 * * * *", "0 0 * * *", "30 2 * * *", "* 2 * * *", "15,45 0-3 * * *",
                            "0 0 * * sun", "0 1 1-7 * sun" };
    for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
        char value[80];
        snprintf(value, sizeof value, ":%s", zones[z]);
        setenv("TZ", value, 1);
        tzset();
        int changes = 0;
        for (int64_t t = utc(2026, 1, 1, 0, 0); t < utc(2027, 1, 1, 0, 0); t += 3600) {
            if (wall_minute(t + 3600) - wall_minute(t) == 60) continue;
            changes++;
            for (size_t x = 0; x < sizeof exprs / sizeof exprs[0]; x++)
                check_against_brute_force(exprs[x], zones[z], t - 86400, t + 86400);
        }
        if (changes != 2) harness_failf(__FILE__, __LINE__, "%s: %d changes in 2026", zones[z], changes);
    }
}

TEST(cron_next_midnight_skipped_by_a_change_fires_at_the_end_of_the_gap)
{
    /* America/Havana, 2026-03-08: 00:00 CST (05:00 UTC) becomes 01:00 CDT */
    CHECK_FIRES("0 0 * * *", "America/Havana", utc(2026, 3, 7, 12, 0), utc(2026, 3, 8, 5, 0) /* 01:00 CDT */,
                utc(2026, 3, 9, 4, 0) /* 00:00 CDT */);
    /* a Sunday-only job keeps its Sunday */
    CHECK_FIRES("0 0 * * sun", "America/Havana", utc(2026, 3, 2, 12, 0), utc(2026, 3, 8, 5, 0), utc(2026, 3, 15, 4, 0));
}
