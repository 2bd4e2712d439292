/* log: leveled log lines on stderr ("2026-11-30T13:00:00.123Z info  message").
 * The level comes from LOG_LEVEL (debug, info, warn, error). */
#ifndef SILT_LOG_H
#define SILT_LOG_H

typedef enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;

int  log_set_level(const char *name) __attribute__((warn_unused_result));
int  log_enabled(log_level level);
void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) do { if (log_enabled(LOG_DEBUG)) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
