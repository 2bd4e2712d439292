/* rate: reads "N/PERIOD" (see rate.h). */
#include "base/rate.h"
#include <ctype.h>
#include <string.h>

/* Leading decimal digits of *s as a number (at most 10 digits, so it cannot
 * overflow), s moved past them; -1 when none. */
static long long read_digits(const char **s)
{
    long long v = 0;
    int n = 0;
    while (isdigit((unsigned char)**s) && n < 10) { v = v * 10 + (**s - '0'); (*s)++; n++; }
    return n == 0 || isdigit((unsigned char)**s) ? -1 : v;
}

static const struct { const char *name; long long ms; } units[] = {
    { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
};

/* The unit named by the whole of s, in milliseconds; -1 when none. */
static long long unit_ms(const char *s)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(s, units[i].name) == 0) return units[i].ms;
    return -1;
}

rate_fault rate_parse(const char *text, rate_limit *out)
{
    const char *s = text;
    long long limit = read_digits(&s);
    if (limit < 0 || *s++ != '/') return RATE_E_FORM;
    long long count = isdigit((unsigned char)*s) ? read_digits(&s) : 1;
    long long ms = unit_ms(s);
    if (count < 0 || ms < 0) return RATE_E_FORM;
    if (limit < 1 || limit > RATE_MAX_LIMIT) return RATE_E_LIMIT;
    if (count < 1 || count * ms > RATE_MAX_PERIOD_MS) return RATE_E_PERIOD;
    out->limit = (int)limit;
    out->period_ms = (int)(count * ms);
    return RATE_OK;
}
