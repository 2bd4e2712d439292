/* embed: files compiled into the binary, generated at build time by
 * scripts/embed.sh so the binary needs no files beside it: the schema
 * (sql/migrations and sql/functions, as text) and the dashboard's assets (as bytes). */
#ifndef SILT_EMBED_H
#define SILT_EMBED_H
#include <stddef.h>

typedef struct embed_file {
    const char *name;   /* file name, e.g. "018_schema.sql"; NULL ends a list */
    const char *text;
} embed_file;

typedef struct embed_asset {
    const char          *name;   /* base name, e.g. "app.js"; NULL ends a list */
    const unsigned char *data;   /* followed by a NUL byte not counted in len */
    size_t               len;    /* bytes */
    const unsigned char *gz;     /* the same, gzip-compressed (gzip -9 -n); NULL: not smaller */
    size_t               gz_len; /* bytes */
} embed_asset;

extern const embed_file  embed_migrations[];        /* sql/migrations, in name order */
extern const embed_file  embed_functions_before[];  /* sql/functions/ORDER's "before" files */
extern const embed_file  embed_functions[];         /* the other function files, in ORDER's order */
extern const embed_file  embed_bridge[];            /* sql/bridge_to_baseline.sql */
extern const embed_asset embed_web[];   /* the web directory and Chart.js (CHARTJS) */

#endif
