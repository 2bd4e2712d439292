/* cron: five-field cron expressions and the instants they fire at in a named
 * timezone. Pure computation: no database, no clock (the caller says "after
 * when"); the only I/O is reading the zone files of /usr/share/zoneinfo.
 *
 * Syntax: "minute hour day-of-month month day-of-week", fields separated by
 * spaces or tabs. Each field is a comma-separated list of items:
 *
 *   *        every value            a-b      a range (a <= b)
 *   n        one value              a-b/n    every n-th value of a range
 *   *\/n     every n-th value of the field's whole range
 * (in this comment "*\/" stands for a star and a slash, which would end it).
 *
 * Ranges: minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan..dec,
 * day of week 0-7 or sun..sat (0 and 7 are both Sunday; "fri-sun" means 5-7).
 * Names are three letters, any case. A step needs a range or "*" ("5/10" is
 * refused: write 5-59/10) and lies in 1..(field maximum - minimum); a range
 * must not be reversed. "@daily" and the like, "?", "L", "W" and "#" are
 * refused. Errors name the field and the fault, for example
 *   field 3 (day of month): 32 is out of range 1-31
 *
 * Which days match (classic Vixie cron, so crontabs behave as they do
 * there): when day of month and day of week are both restricted, a day
 * matches if EITHER matches ("0 0 1 * mon": the 1st and every Monday); when
 * one of them is unrestricted, only the other applies. As in Vixie cron, a
 * field counts as unrestricted when it starts with "*", so "*\/2" in either
 * field makes the rule AND ("0 0 *\/2 * mon": odd days that are Mondays).
 *
 * Slots are wall-clock minutes in the timezone: every local date and time
 * the expression matches is one slot, and each slot fires exactly once, at
 * the first instant at which the zone's clock reads that time or later:
 *   - a time that exists once fires when it happens;
 *   - a time repeated when the clocks go back (02:30 on the last Sunday of
 *     October in Europe/Paris) fires at its FIRST occurrence only (00:30 UTC
 *     on 2026-10-25); during the repeated hour the clock shows minutes whose
 *     slots have already fired, so "*\/30 * * * *" does not fire again until
 *     the clock passes the last slot it fired (there, 03:00 CET, 02:00 UTC);
 *   - a time skipped when the clocks go forward (02:30 on the last Sunday of
 *     March in Europe/Paris) fires at the first instant after the gap (03:00
 *     CEST, 01:00 UTC on 2026-03-29), so a daily job is never skipped. All
 *     the slots inside one gap fire at that same instant, which is one fire:
 *     "*\/30 * * * *" fires at 01:00 UTC for 02:00, 02:30 and 03:00 local,
 *     then at 03:30 CEST (01:30 UTC).
 * So no slot of an existing local time is lost, none fires twice, and the
 * fire times of an expression never go backwards. Where a change skips
 * midnight (America/Havana, 2026-03-08: 00:00 CST becomes 01:00 CDT),
 * "0 0 * * *" fires at 01:00 that day, still on its date.
 *
 * A scheduler keeps the instant it last fired and asks cron_next for the one
 * after it: that walks every slot once. Asking from "now" instead skips the
 * slots missed while it was not running; catching up is the caller's choice.
 *
 * Time arithmetic on local dates is done here (proleptic Gregorian, no
 * library); only the zone's UTC offset at an instant comes from glibc
 * (localtime_r's tm_gmtoff), with TZ set to the zone for the length of one
 * call and the previous TZ restored before it returns (silt is
 * single-threaded; nothing else may read the time zone meanwhile). The
 * offset at an instant is assumed to change at most once in any two days,
 * which holds for every zone in tzdata for the present and future. A call
 * costs 0.1-0.2 ms, nearly all of it glibc reading two zone files (the
 * zone's, then the previous TZ's): the walk itself jumps field by field, a
 * few thousand steps at most even for an expression that never fires. If
 * that ever matters, a TZif reader with a per-zone cache can replace the
 * three zone functions of cron.c without changing this interface. */
#ifndef SILT_CRON_H
#define SILT_CRON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRON_HORIZON_YEARS 30              /* how far a search looks before "never" */
#define CRON_MAX_UNIX_S    253370764800LL  /* 9998-01-01T00:00:00Z: the last "after" accepted */
#define CRON_TZ_MAX        255             /* bytes of a timezone name */

/* A parsed expression: one bit per allowed value (bit n: value n). */
typedef struct cron_expr {
    uint64_t minutes;    /* bits 0-59 */
    uint32_t hours;      /* bits 0-23 */
    uint32_t days;       /* bits 1-31, day of month */
    uint16_t months;     /* bits 1-12 */
    uint8_t  weekdays;   /* bits 0-6, 0 is Sunday (7 is folded into 0) */
    bool     dom_star;   /* the day-of-month field starts with "*" */
    bool     dow_star;   /* the day-of-week field starts with "*" */
} cron_expr;

/* Parses text into *out. 0 on success; -1 with a message in err (lower
 * case, no trailing period; err may be NULL) and *out untouched. */
int     cron_parse(const char *text, cron_expr *out, char *err, size_t errlen);
/* The first fire instant strictly after after_unix_s, in Unix seconds, in
 * the zone tz (an IANA name such as "Europe/Paris" or "UTC"). -1 when the
 * expression never fires (no slot within CRON_HORIZON_YEARS: any date that
 * exists at all recurs within 8 years), when tz is not cron_tz_valid, or
 * when after_unix_s is outside [0, CRON_MAX_UNIX_S]. */
int64_t cron_next(const cron_expr *e, const char *tz, int64_t after_unix_s);
/* Whether tz names a zone of this system: a relative name of letters,
 * digits and "/_+-." without "." or ".." components, naming a regular file
 * under /usr/share/zoneinfo that starts with the TZif magic (so zone.tab
 * and the like are refused). */
bool    cron_tz_valid(const char *tz);
/* Whether the expression ever fires: the same search as cron_next, on the
 * local calendar (no zone: whether a date exists does not depend on one). */
bool    cron_can_fire(const cron_expr *e);

#endif
