/* rate: a rate limit as silt.conf writes it (`rate_limit = N/PERIOD`,
 * docs/configuration.md): at most N claims in any window of PERIOD. N is a
 * whole number; PERIOD a whole number and a unit, ms, s, m or h, the number
 * 1 when left out: "100/1s", "20/m", "5/500ms". The database enforces it
 * (tasks.claim_rated, sql/functions/tasks_claim.sql); this module only
 * reads it. */
#ifndef SILT_RATE_H
#define SILT_RATE_H

#define RATE_MAX_LIMIT      1000000    /* claims in one window */
#define RATE_MAX_PERIOD_MS  86400000   /* a day: windows are kept as rows that long */

typedef struct rate_limit {
    int limit;       /* claims in one window, 1..RATE_MAX_LIMIT; 0: no limit */
    int period_ms;   /* the window's length, 1..RATE_MAX_PERIOD_MS (0 with no limit) */
} rate_limit;

/* Why a text is not a rate limit. */
typedef enum rate_fault {
    RATE_OK = 0,
    RATE_E_FORM = -1,     /* not N/PERIOD: "100", "100/", "1.5/s", "100/1 s", "100/1d", "-1/s" */
    RATE_E_LIMIT = -2,    /* N is 0 or over RATE_MAX_LIMIT */
    RATE_E_PERIOD = -3,   /* PERIOD is 0 or longer than a day */
} rate_fault;

/* Reads text into *out (untouched unless RATE_OK). */
rate_fault rate_parse(const char *text, rate_limit *out) __attribute__((warn_unused_result));

#endif
