/* worker_progress: the lines a `silt worker` command writes to its progress
 * descriptor (docs/tasks.md, "Progress from a command"), read into the
 * members of a heartbeat item. A line is one JSON value: a number (the
 * progress), or an object with "progress" (a number or null) and/or
 * "progressInfo" (any JSON of at most WK_PROGRESS_INFO_MAX bytes) and no
 * other member. The worker checks what the server would, so a bad line is
 * told to the command's log and dropped here, never refused with the
 * heartbeat that carries every other task's. */
#ifndef SILT_CLI_WORKER_PROGRESS_H
#define SILT_CLI_WORKER_PROGRESS_H
#include <stddef.h>
#include "base/buf.h"

#define WK_PROGRESS_FD        3       /* the command's descriptor; also in SILT_PROGRESS_FD */
#define WK_PROGRESS_INFO_MAX  4096    /* bytes of progressInfo, as the server bounds it */
#define WK_PROGRESS_LINE_MAX  8192    /* a longer line is malformed */
#define WK_PROGRESS_EVERY_MS  1000    /* progress brings a heartbeat forward at most this often */

/* Parses one line (without its newline; surrounding whitespace allowed).
 * 0 with the item's members in *members (reset first: `"progress":N,
 * "progressInfo":V`), or -1 with the reason in err. */
int wk_progress_parse(const char *line, size_t n, buf *members, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
