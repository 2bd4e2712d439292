/* clock: the two clocks silt reads. Durations, timeouts and deadlines use
 * the monotonic clock, so a wall-clock step (NTP, an operator) can neither
 * cut a shutdown short nor stretch a timeout; the wall clock is only for
 * times that are shown or stored (log lines, UUIDv7 timestamps). */
#ifndef SILT_CLOCK_H
#define SILT_CLOCK_H
#include <stdint.h>

int64_t clock_mono_us(void);
int64_t clock_mono_ms(void);
int64_t clock_wall_us(void);   /* Unix microseconds */

#endif
