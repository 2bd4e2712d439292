/* duration: the lengths of time silt.conf's [retention] writes, "7d",
 * "36h", "90m", "45s": a whole positive number and one unit. The Retention
 * Config document speaks timedelta; this is its one form in the file.
 *
 * A duration is also rendered back, in the largest unit that states it
 * exactly (604800 -> "7d", 129600 -> "36h", 5400 -> "90m"): that text is
 * part of a derived class key (q_emails_7d, base/class_key.h), so 168h and
 * 7d name the same class. */
#ifndef SILT_DURATION_H
#define SILT_DURATION_H
#include <stddef.h>
#include <stdint.h>

/* The longest duration accepted: 36500 days (100 years). Longer is not a
 * retention anyone means, and bounding it keeps now() - duration inside
 * PostgreSQL's timestamp range. */
#define DURATION_MAX_SECONDS (36500LL * 86400)
#define DURATION_TEXT_BYTES  16   /* "3153600000s" and the terminator, with room */

/* Why a text is not a duration. */
typedef enum duration_fault {
    DURATION_OK = 0,
    DURATION_E_FORM = -1,      /* not digits and one of s m h d: "", "7", "d", "1.5d", "1d12h", "7 d", "-1d", "7D" */
    DURATION_E_ZERO = -2,      /* "0d": a duration is positive */
    DURATION_E_TOO_LONG = -3,  /* over DURATION_MAX_SECONDS */
} duration_fault;

/* Reads text into *seconds (untouched unless DURATION_OK). */
duration_fault duration_parse(const char *text, int64_t *seconds) __attribute__((warn_unused_result));
/* seconds (1..DURATION_MAX_SECONDS) in the largest exact unit of d, h, m, s. */
void duration_format(int64_t seconds, char out[DURATION_TEXT_BYTES]);
/* A decimal one "1.5d" or "2.25h" that is a whole number of seconds, as the
 * whole-unit duration to write instead ("36h", "135m") for a report's help;
 * 0 and *seconds set, -1 when text is no such decimal. */
int duration_decimal(const char *text, int64_t *seconds) __attribute__((warn_unused_result));

#endif
