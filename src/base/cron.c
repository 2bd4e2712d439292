/* cron: parsing five-field expressions and finding their fire instants in a
 * zone (see cron.h for the rules). Dates are walked on the local calendar
 * field by field (jump to the next allowed month, then day, hour, minute),
 * never minute by minute; only turning a local time into an instant asks
 * the zone, a few localtime_r calls per candidate. */
#include "base/cron.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "base/xalloc.h"

_Static_assert(sizeof(time_t) >= 8, "fire times past 2038 need a 64-bit time_t");

#define CRON_ZONEINFO "/usr/share/zoneinfo"
#define DAY_S         86400

/* ---- parsing ---- */

typedef struct field_spec {
    const char        *name;    /* as errors name it */
    int                lo, hi;
    const char *const *names;   /* NULL, or the names of values name_base.. */
    int                name_base;
    const char        *kind;    /* "month", "day": for an unknown name */
    const char        *hint;    /* the names it takes, for the same */
} field_spec;

static const char *const MONTH_NAMES[] = {
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL,
};
static const char *const DAY_NAMES[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL };

enum { F_MINUTE, F_HOUR, F_DOM, F_MONTH, F_DOW, F_COUNT };

static const field_spec FIELDS[F_COUNT] = {
    [F_MINUTE] = { "minute", 0, 59, NULL, 0, NULL, NULL },
    [F_HOUR]   = { "hour", 0, 23, NULL, 0, NULL, NULL },
    [F_DOM]    = { "day of month", 1, 31, NULL, 0, NULL, NULL },
    [F_MONTH]  = { "month", 1, 12, MONTH_NAMES, 1, "month", "jan..dec" },
    [F_DOW]    = { "day of week", 0, 7, DAY_NAMES, 0, "day", "sun..sat" },
};

typedef struct parser {
    int               field;    /* index into FIELDS */
    const field_spec *f;
    const char       *item;     /* the list element being read, for messages */
    int               item_len;
    char             *err;
    size_t            errlen;
} parser;

static int fail_text(char *err, size_t errlen, const char *prefix, const char *fmt, va_list ap)
{
    if (!err || errlen == 0) return -1;
    int n = snprintf(err, errlen, "%s", prefix);
    if (n >= 0 && (size_t)n < errlen) vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    return -1;
}

/* An error about the expression as a whole. */
static int fail_expr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_expr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_text(err, errlen, "", fmt, ap);
    va_end(ap);
    return -1;
}

/* An error in one field: "field 3 (day of month): ...". */
static int fail(const parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const parser *p, const char *fmt, ...)
{
    char prefix[48];
    snprintf(prefix, sizeof prefix, "field %d (%s): ", p->field + 1, p->f->name);
    va_list ap;
    va_start(ap, fmt);
    fail_text(p->err, p->errlen, prefix, fmt, ap);
    va_end(ap);
    return -1;
}

static bool is_alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return n > 0;
}

/* The digits of s as a number; INT32_MAX when too large to be in any range. */
static int digits_value(const char *s, size_t n)
{
    long v = 0;
    for (size_t i = 0; i < n && v < INT32_MAX; i++) v = v * 10 + (s[i] - '0');
    return v < INT32_MAX ? (int)v : INT32_MAX;
}

static int name_value(const field_spec *f, const char *s, size_t n)
{
    for (int i = 0; f->names[i]; i++)
        if (n == 3 && strncasecmp(s, f->names[i], 3) == 0) return f->name_base + i;
    return -1;
}

static int unexpected(const parser *p, char c)
{
    if (c > ' ' && c < 127)
        return fail(p, "\"%.*s\": unexpected character '%c'", p->item_len, p->item, c);
    return fail(p, "\"%.*s\": unexpected byte 0x%02x", p->item_len, p->item, (unsigned char)c);
}

/* Reads one value (a number or a name) at *q; advances *q. start is the
 * value opening the range this one closes, or -1: in the day of week, "sun"
 * closing a range that starts later in the week is 7, so "fri-sun" is 5-7. */
static int parse_value(const parser *p, const char **q, const char *end, int start, int *out)
{
    const char *s = *q;
    size_t n = 0;
    while (s + n < end && is_alnum(s[n])) n++;
    *q = s + n;
    if (n == 0 && s < end) return unexpected(p, *s);
    if (n == 0) return fail(p, "\"%.*s\": a value is missing", p->item_len, p->item);
    if (all_digits(s, n)) {
        *out = digits_value(s, n);
        if (*out < p->f->lo || *out > p->f->hi)
            return fail(p, "%.*s is out of range %d-%d", (int)n, s, p->f->lo, p->f->hi);
        return 0;
    }
    if (!p->f->names || (s[0] >= '0' && s[0] <= '9'))
        return fail(p, "\"%.*s\" is not a number", (int)n, s);
    *out = name_value(p->f, s, n);
    if (*out < 0)
        return fail(p, "unknown %s name \"%.*s\" (expected %s or a number)", p->f->kind, (int)n, s,
                    p->f->hint);
    if (p->field == F_DOW && *out == 0 && start > 0) *out = 7;
    return 0;
}

/* "/n" after a range: n in 1..(maximum - minimum) of the field. */
static int parse_step(const parser *p, const char **q, const char *end, int *step)
{
    const char *s = *q;
    size_t n = 0;
    while (s + n < end && is_alnum(s[n])) n++;
    *q = s + n;
    if (n == 0) return fail(p, "\"%.*s\": the step is missing", p->item_len, p->item);
    if (!all_digits(s, n)) return fail(p, "step \"%.*s\" is not a number", (int)n, s);
    int max = p->f->hi - p->f->lo;
    *step = digits_value(s, n);
    if (*step < 1 || *step > max) return fail(p, "step %.*s is out of range 1-%d", (int)n, s, max);
    return 0;
}

/* The values lo..hi of "*", "a" or "a-b"; *ranged tells whether a step may follow. */
static int parse_span(const parser *p, const char **q, const char *end, int *lo, int *hi, bool *ranged)
{
    *ranged = true;
    if (**q == '*') {
        (*q)++;
        *lo = p->f->lo;
        *hi = p->f->hi;
        return 0;
    }
    if (parse_value(p, q, end, -1, lo) < 0) return -1;
    *hi = *lo;
    *ranged = *q < end && **q == '-';
    if (!*ranged) return 0;
    (*q)++;
    if (parse_value(p, q, end, *lo, hi) < 0) return -1;
    if (*hi < *lo) return fail(p, "\"%.*s\" is a reversed range (write the smaller value first)", p->item_len, p->item);
    return 0;
}

/* One list element: "*", "*" "/n", "a", "a-b", "a-b/n". */
static int parse_item(parser *p, const char *s, const char *end, uint64_t *bits)
{
    p->item = s;
    p->item_len = (int)(end - s);
    if (s == end) return fail(p, "empty list element");
    const char *q = s;
    int lo, hi, step = 1;
    bool ranged;
    if (parse_span(p, &q, end, &lo, &hi, &ranged) < 0) return -1;
    if (q < end && *q == '/') {
        if (!ranged)
            return fail(p, "\"%.*s\": a step needs a range or \"*\" (for example %d-%d%.*s)", p->item_len,
                        p->item, lo, p->f->hi, (int)(end - q), q);
        q++;
        if (parse_step(p, &q, end, &step) < 0) return -1;
    }
    if (q < end) return unexpected(p, *q);
    for (int v = lo; v <= hi; v += step) *bits |= 1ULL << v;
    return 0;
}

/* A comma-separated list into bits; *star: the field starts with "*"
 * (Vixie cron's test for an unrestricted day field). */
static int parse_field(parser *p, const char *s, const char *end, uint64_t *bits, bool *star)
{
    *bits = 0;
    *star = *s == '*';
    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *stop = comma ? comma : end;
        if (parse_item(p, s, stop, bits) < 0) return -1;
        if (!comma) return 0;
        s = comma + 1;
    }
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits text at blanks; the number of fields (those past F_COUNT not kept). */
static int split_fields(const char *text, const char *start[F_COUNT], const char *end[F_COUNT])
{
    int n = 0;
    const char *s = text;
    for (;;) {
        while (is_blank(*s)) s++;
        if (!*s) return n;
        const char *e = s;
        while (*e && !is_blank(*e)) e++;
        if (n < F_COUNT) {
            start[n] = s;
            end[n] = e;
        }
        n++;
        s = e;
    }
}

static void store_field(cron_expr *e, int field, uint64_t bits, bool star)
{
    switch (field) {
    case F_MINUTE: e->minutes = bits; break;
    case F_HOUR:   e->hours = (uint32_t)bits; break;
    case F_DOM:    e->days = (uint32_t)bits; e->dom_star = star; break;
    case F_MONTH:  e->months = (uint16_t)bits; break;
    case F_DOW:    e->weekdays = (uint8_t)((bits | bits >> 7) & 0x7f); e->dow_star = star; break;   /* 7 is Sunday */
    }
}

int cron_parse(const char *text, cron_expr *out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!text) return fail_expr(err, errlen, "no expression");
    const char *start[F_COUNT], *end[F_COUNT];
    int n = split_fields(text, start, end);
    if (n >= 1 && start[0][0] == '@')
        return fail_expr(err, errlen, "\"%.*s\": macros are not supported (write the 5 fields: "
                         "minute hour day-of-month month day-of-week)", (int)(end[0] - start[0]), start[0]);
    if (n != F_COUNT)
        return fail_expr(err, errlen, "expected 5 fields (minute hour day-of-month month day-of-week), found %d", n);
    cron_expr e = { 0 };
    for (int i = 0; i < F_COUNT; i++) {
        parser p = { .field = i, .f = &FIELDS[i], .err = err, .errlen = errlen };
        uint64_t bits;
        bool star;
        if (parse_field(&p, start[i], end[i], &bits, &star) < 0) return -1;
        store_field(&e, i, bits, star);
    }
    *out = e;
    return 0;
}

/* ---- the local calendar ---- */

typedef struct wall {
    int year, mon, mday, hour, min;   /* mon 1-12, mday 1-31 */
} wall;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil: no table, no library, any year). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, wall *w)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    w->mday = (int)(doy - (153 * mp + 2) / 5 + 1);
    w->mon = (int)(mp < 10 ? mp + 3 : mp - 9);
    w->year = (int)(yoe + era * 400 + (w->mon <= 2));
}

static int days_in_month(int year, int mon)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return mon == 2 && leap ? 29 : days[mon - 1];
}

/* "Local seconds": a wall time counted as if the zone were UTC. */
static wall wall_from_local(int64_t local_s)
{
    wall w;
    int64_t days = floor_div(local_s, DAY_S);
    int64_t secs = local_s - days * DAY_S;
    civil_from_days(days, &w);
    w.hour = (int)(secs / 3600);
    w.min = (int)(secs % 3600 / 60);
    return w;
}

static int64_t wall_to_local(const wall *w)
{
    return days_from_civil(w->year, w->mon, w->mday) * DAY_S + w->hour * 3600 + w->min * 60;
}

static int weekday(const wall *w)   /* 0 is Sunday; 1970-01-01 was a Thursday */
{
    int64_t d = days_from_civil(w->year, w->mon, w->mday) + 4;
    return (int)(d - floor_div(d, 7) * 7);
}

/* ---- walking the calendar to the next slot ---- */

/* The smallest set bit >= from and <= max, or -1. */
static int next_bit(uint64_t bits, int from, int max)
{
    if (from > max) return -1;
    uint64_t rest = bits & (~0ULL << from);
    if (!rest) return -1;
    int v = __builtin_ctzll(rest);
    return v <= max ? v : -1;
}

static int first_bit(uint64_t bits)
{
    return bits ? __builtin_ctzll(bits) : -1;
}

static void next_day(wall *w)
{
    w->hour = w->min = 0;
    if (++w->mday <= days_in_month(w->year, w->mon)) return;
    w->mday = 1;
    if (++w->mon <= 12) return;
    w->mon = 1;
    w->year++;
}

static void next_hour(wall *w)
{
    w->min = 0;
    if (++w->hour > 23) next_day(w);
}

/* Vixie cron's rule: both day fields restricted, either may match; else both must
 * (an unrestricted one has every bit set, so that is the other alone). */
static bool day_matches(const cron_expr *e, const wall *w)
{
    bool dom = e->days >> w->mday & 1, dow = e->weekdays >> weekday(w) & 1;
    return (e->dom_star || e->dow_star) ? dom && dow : dom || dow;
}

/* Each fit_ either finds w's field allowed (true) or moves w to the start of
 * the next candidate and returns false, so the walk starts over from the month. */
static bool fit_month(const cron_expr *e, wall *w)
{
    int m = next_bit(e->months, w->mon, 12);
    if (m == w->mon) return true;
    if (m < 0) {
        w->year++;
        m = first_bit(e->months);
    }
    *w = (wall){ .year = w->year, .mon = m, .mday = 1 };
    return false;
}

static bool fit_day(const cron_expr *e, wall *w)
{
    if (day_matches(e, w)) return true;
    next_day(w);
    return false;
}

static bool fit_hour(const cron_expr *e, wall *w)
{
    int h = next_bit(e->hours, w->hour, 23);
    if (h == w->hour) return true;
    if (h < 0) {
        next_day(w);
    } else {
        w->hour = h;
        w->min = 0;
    }
    return false;
}

static bool fit_minute(const cron_expr *e, wall *w)
{
    int m = next_bit(e->minutes, w->min, 59);
    if (m == w->min) return true;
    if (m < 0) next_hour(w);
    else w->min = m;
    return false;
}

/* The first slot at or after local time from, in local seconds; false when
 * none falls before the year limit_year ends. */
static bool next_slot(const cron_expr *e, int64_t from, int limit_year, int64_t *slot)
{
    if (!e->minutes || !e->hours || !e->months || !e->days || !e->weekdays) return false;
    wall w = wall_from_local(from);
    while (w.year <= limit_year) {
        if (fit_month(e, &w) && fit_day(e, &w) && fit_hour(e, &w) && fit_minute(e, &w)) {
            *slot = wall_to_local(&w);
            return true;
        }
    }
    return false;
}

bool cron_can_fire(const cron_expr *e)
{
    int64_t slot;
    return e && next_slot(e, days_from_civil(2000, 1, 1) * DAY_S, 2000 + CRON_HORIZON_YEARS, &slot);
}

/* ---- the zone ---- */

/* TZ set to one zone for the length of a computation, and put back. */
typedef struct tz_scope {
    char *saved;   /* the previous TZ, or NULL when it was unset */
} tz_scope;

static void tz_enter(tz_scope *s, const char *tz)
{
    const char *old = getenv("TZ");
    s->saved = old ? xstrdup(old) : NULL;
    /* The file's full path, so TZDIR cannot make glibc read another file than
     * the one cron_tz_valid checked. */
    char value[sizeof CRON_ZONEINFO + CRON_TZ_MAX + 2];
    snprintf(value, sizeof value, ":%s/%s", CRON_ZONEINFO, tz);
    setenv("TZ", value, 1);
    tzset();
}

static void tz_leave(tz_scope *s)
{
    if (s->saved) setenv("TZ", s->saved, 1);
    else unsetenv("TZ");
    tzset();
    free(s->saved);
}

/* Seconds east of UTC of the zone in force at instant t. */
static int64_t zone_offset(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    return localtime_r(&tt, &tm) ? tm.tm_gmtoff : 0;
}

/* The first instant in (lo, hi] whose offset is not off_lo (off(lo) is). */
static int64_t offset_change(int64_t lo, int64_t hi, int64_t off_lo)
{
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (zone_offset(mid) == off_lo) lo = mid;
        else hi = mid;
    }
    return hi;
}

/* The first instant at which the zone's clock reads local_s or later. The
 * offsets a day either side are the only ones that can apply (one change
 * at most in two days): a local time valid under both is repeated (the
 * earlier wins), under neither falls in a gap (the change itself is the
 * first instant past it). */
static int64_t first_instant_at(int64_t local_s)
{
    int64_t before = zone_offset(local_s - DAY_S), after = zone_offset(local_s + DAY_S);
    int64_t t_before = local_s - before, t_after = local_s - after;
    bool ok_before = zone_offset(t_before) == before, ok_after = zone_offset(t_after) == after;
    if (ok_before && ok_after) return t_before < t_after ? t_before : t_after;
    if (ok_before) return t_before;
    if (ok_after) return t_after;
    if (before < after) return offset_change(t_after, t_before, before);
    return t_before;   /* two changes within two days: not in tzdata today */
}

/* Slots are walked in local time from the minute the clock shows at after;
 * a slot whose first instant is not past after (the minutes of a repeated
 * hour, the slot of after itself) already fired and is stepped over. No slot
 * before that minute can come later: instants grow with local times. */
static int64_t next_in_zone(const cron_expr *e, int64_t after)
{
    int64_t local = after + zone_offset(after);
    int64_t from = floor_div(local, 60) * 60;
    int limit_year = wall_from_local(from).year + CRON_HORIZON_YEARS;
    int64_t slot;
    while (next_slot(e, from, limit_year, &slot)) {
        int64_t t = first_instant_at(slot);
        if (t > after) return t;
        from = slot + 60;
    }
    return -1;
}

int64_t cron_next(const cron_expr *e, const char *tz, int64_t after_unix_s)
{
    if (!e || after_unix_s < 0 || after_unix_s > CRON_MAX_UNIX_S || !cron_tz_valid(tz)) return -1;
    tz_scope scope;
    tz_enter(&scope, tz);
    int64_t t = next_in_zone(e, after_unix_s);
    tz_leave(&scope);
    return t;
}

/* ---- zone names ---- */

/* A relative path of plain components: no "", "." or ".." anywhere. */
static bool tz_name_ok(const char *tz)
{
    size_t n = tz ? strlen(tz) : 0;
    if (n == 0 || n > CRON_TZ_MAX) return false;
    if (strspn(tz, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_+-.") != n) return false;
    for (const char *s = tz;;) {
        size_t len = strcspn(s, "/");
        bool dots = (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.');
        if (len == 0 || dots) return false;
        if (!s[len]) return true;
        s += len + 1;
    }
}

static bool has_tzif_magic(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char magic[4];
    bool ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, "TZif", 4) == 0;
    fclose(f);
    return ok;
}

bool cron_tz_valid(const char *tz)
{
    if (!tz_name_ok(tz)) return false;
    char path[sizeof CRON_ZONEINFO + CRON_TZ_MAX + 1];
    snprintf(path, sizeof path, "%s/%s", CRON_ZONEINFO, tz);
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && has_tzif_magic(path);
}
