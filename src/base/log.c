/* log: one line per event on stderr, with a UTC timestamp, so output from
 * several servers and the test harness can be merged and sorted. */
#include "base/log.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"

static log_level threshold = LOG_INFO;
static const char *const level_names[] = { "debug", "info", "warn", "error" };

int log_set_level(const char *name)
{
    for (int i = LOG_DEBUG; i <= LOG_ERROR; i++)
        if (strcmp(name, level_names[i]) == 0) { threshold = (log_level)i; return 0; }
    return -1;
}

int log_enabled(log_level level) { return level >= threshold; }

/* One event, one line: control characters (a client's raw bytes in a path,
 * a newline in a database message) are written as \xNN, so no input can
 * forge or split a line. out holds 4 bytes per byte of in. */
static void escape_controls(const char *in, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        if (*p >= 0x20 && *p != 0x7f) { *out++ = (char)*p; continue; }
        *out++ = '\\';
        *out++ = 'x';
        *out++ = hex[*p >> 4];
        *out++ = hex[*p & 15];
    }
    *out = '\0';
}

void log_msg(log_level level, const char *fmt, ...)
{
    if (level < threshold) return;
    int64_t now = clock_wall_us();
    time_t secs = (time_t)(now / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char line[2048], safe[2048 * 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    escape_controls(line, safe);
    fprintf(stderr, "%s.%03dZ %-5s %s\n", stamp, (int)(now % 1000000 / 1000), level_names[level], safe);
}
