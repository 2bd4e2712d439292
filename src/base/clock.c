/* clock: monotonic and wall time (see clock.h). */
#include "base/clock.h"
#include <time.h>

static int64_t read_us(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_mono_us(void) { return read_us(CLOCK_MONOTONIC); }

int64_t clock_mono_ms(void) { return read_us(CLOCK_MONOTONIC) / 1000; }

int64_t clock_wall_us(void) { return read_us(CLOCK_REALTIME); }
