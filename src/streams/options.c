/* options: validation of queue options (see options.h). */
#include "streams/options.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef enum option_type { OPT_INT, OPT_BOOL } option_type;

typedef struct option {
    const char *name;
    option_type type;
    int64_t     min;      /* integers: smallest allowed value */
} option;

#define OPTION_INT_MAX 2147483647

static const option options[] = {
    { "leaseTime", OPT_INT, 1 },
    { "retryLimit", OPT_INT, 0 },
    { "retryDelay", OPT_INT, 0 },
    { "priority", OPT_INT, -OPTION_INT_MAX },
    { "ttl", OPT_INT, 0 },
    { "maxSize", OPT_INT, 0 },
    { "deadLetterQueue", OPT_BOOL, 0 },
    { "dlqAfterMaxRetries", OPT_BOOL, 0 },
    { "delayedProcessing", OPT_INT, 0 },
    { "windowBuffer", OPT_INT, 0 },
    { "retentionEnabled", OPT_BOOL, 0 },
    { "retentionSeconds", OPT_INT, 0 },
    { "completedRetentionSeconds", OPT_INT, 0 },
    { "maxWaitTimeSeconds", OPT_INT, 0 },
    { "dedupWindowSeconds", OPT_INT, 0 },
    { "encryptionEnabled", OPT_BOOL, 0 },
};

static const option *find_option(const json_doc *d, uint32_t key)
{
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        if (json_str_eq(d, key, options[i].name)) return &options[i];
    return NULL;
}

static int check_value(const json_doc *d, uint32_t v, const option *o, char *err, size_t errlen)
{
    json_type t = d->tokens[v].type;
    if (t == JSON_NULL) return 0;
    if (o->type == OPT_BOOL) {
        if (t == JSON_TRUE || t == JSON_FALSE) return 0;
        snprintf(err, errlen, "%s must be true or false", o->name);
        return -1;
    }
    int64_t n;
    if (t != JSON_NUMBER || json_int64(d, v, &n) < 0 || n < o->min || n > OPTION_INT_MAX) {
        snprintf(err, errlen, "%s must be an integer from %lld to %d", o->name, (long long)o->min, OPTION_INT_MAX);
        return -1;
    }
    return 0;
}

int options_patch(const json_doc *d, int obj, buf *out, char bad[OPTIONS_BAD_BYTES], char *err, size_t errlen)
{
    bad[0] = '\0';
    buf_putc(out, '{');
    if (obj < 0) { buf_putc(out, '}'); return 0; }
    if (d->tokens[obj].type != JSON_OBJECT) {
        snprintf(bad, OPTIONS_BAD_BYTES, "options");
        snprintf(err, errlen, "options must be an object");
        return -1;
    }
    uint32_t key = (uint32_t)obj + 1;
    for (uint32_t m = 0; m < d->tokens[obj].count; m++, key = d->tokens[key + 1].next) {
        const option *o = find_option(d, key);
        if (!o) {
            buf name;
            buf_init(&name);
            json_str_decode(d, key, &name);
            snprintf(bad, OPTIONS_BAD_BYTES, "%s", name.data);
            snprintf(err, errlen, "unknown option \"%s\"", bad);
            buf_fini(&name);
            return -1;
        }
        if (check_value(d, key + 1, o, err, errlen) < 0) { snprintf(bad, OPTIONS_BAD_BYTES, "%s", o->name); return -1; }
        size_t n;
        const char *value = json_span(d, key + 1, &n);
        buf_printf(out, "%s\"%s\":%.*s", out->len > 1 ? "," : "", o->name, (int)n, value);
    }
    buf_putc(out, '}');
    return 0;
}
