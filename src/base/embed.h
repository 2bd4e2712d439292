/* embed: files compiled into the binary (SQL migrations), generated at build
 * time by scripts/embed.sh so the binary needs no files beside it. */
#ifndef SILT_EMBED_H
#define SILT_EMBED_H

typedef struct embed_file {
    const char *name;   /* file name, e.g. "018_schema.sql"; NULL ends a list */
    const char *text;
} embed_file;

extern const embed_file embed_sql[];   /* the sql directory, in name order */

#endif
