/* iso_time: timestamps in and out. Out: one format, UTC with milliseconds
 * and "Z" (2026-12-01T07:04:30.501Z). In: the timestamps the API accepts. ISO 8601 only: a date
 * (2026-12-01), or a date and a time (2026-12-01T07:04:30, seconds and a
 * fraction of at most 9 digits optional, "T" or a space between) with an
 * optional offset up to PostgreSQL's ±15:59 ("Z", "+01:00", "+0100"; none
 * means UTC). PostgreSQL would read more ("yesterday",
 * "infinity", "epoch", "Dec 1 2026"), but those are not a time a client
 * means, and its errors would reach the client in its own words; so they are
 * refused here, before a query is sent. */
#ifndef SILT_ISO_TIME_H
#define SILT_ISO_TIME_H
#include <stdbool.h>

#include <stdint.h>

#define ISO_TIME_BYTES 32   /* "2026-12-01T07:04:30.501Z" and the terminator, with room */

bool iso_time_valid(const char *text);
/* The one format silt writes a time in: UTC, milliseconds, "Z". */
void iso_time_format(int64_t unix_us, char out[ISO_TIME_BYTES]);

#endif
