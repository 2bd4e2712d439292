/* iso_time: an ISO 8601 checker (see iso_time.h). */
#include "base/iso_time.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

/* n digits at *p as a number within [lo, hi]; advances *p. -1 if not. */
static int digits(const char **p, int n, int lo, int hi)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    return v >= lo && v <= hi ? v : -1;
}

static int days_in(int year, int month)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

static bool date(const char **p)
{
    int y = digits(p, 4, 1, 9999);
    if (y < 0 || *(*p)++ != '-') return false;
    int m = digits(p, 2, 1, 12);
    if (m < 0 || *(*p)++ != '-') return false;
    return digits(p, 2, 1, days_in(y, m)) >= 0;
}

/* HH:MM[:SS[.fraction]] */
static bool clock_time(const char **p)
{
    if (digits(p, 2, 0, 23) < 0 || *(*p)++ != ':' || digits(p, 2, 0, 59) < 0) return false;
    if (**p != ':') return true;
    (*p)++;
    if (digits(p, 2, 0, 59) < 0) return false;
    if (**p != '.') return true;
    (*p)++;
    size_t n = strspn(*p, "0123456789");
    *p += n;
    return n > 0 && n <= 9;   /* nanoseconds at most: PostgreSQL refuses a very long field */
}

/* Z, ±HH:MM, ±HHMM, ±HH, or nothing (UTC). */
static bool offset(const char **p)
{
    if (**p == 'Z') { (*p)++; return true; }
    if (**p != '+' && **p != '-') return true;
    (*p)++;
    if (digits(p, 2, 0, 15) < 0) return false;   /* PostgreSQL's bound for an offset: ±15:59 */
    if (**p == ':') (*p)++;
    if (**p >= '0' && **p <= '9') return digits(p, 2, 0, 59) >= 0;
    return true;
}

bool iso_time_valid(const char *text)
{
    const char *p = text;
    if (!text || !date(&p)) return false;
    if (*p == '\0') return true;
    if (*p != 'T' && *p != ' ') return false;
    p++;
    return clock_time(&p) && offset(&p) && *p == '\0';
}

void iso_time_format(int64_t unix_us, char out[ISO_TIME_BYTES])
{
    time_t secs = (time_t)(unix_us / 1000000);
    int ms = (int)((unix_us % 1000000) / 1000);
    if (ms < 0) { ms += 1000; secs--; }
    struct tm tm;
    gmtime_r(&secs, &tm);
    char date[24];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, ISO_TIME_BYTES, "%s.%03dZ", date, ms);
}
