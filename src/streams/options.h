/* options: the queue option set of /configure. Names, types and bounds live
 * in one table; defaults live in SQL (queen.default_options) so queues
 * created by a push and by /configure agree. */
#ifndef SILT_OPTIONS_H
#define SILT_OPTIONS_H
#include <stddef.h>
#include "base/buf.h"
#include "base/json.h"

#define OPTIONS_BAD_BYTES 64   /* the name of a bad option, as given (cut to fit) */

/* Checks the options object at token obj and writes the normalized patch
 * (only the keys given; null kept, meaning "back to the default") to out.
 * On a bad option returns -1 with its name in bad ("options" when the whole
 * value is not an object; an unknown name as the client spelt it) and a
 * message in err; bad is "" otherwise. */
int options_patch(const json_doc *d, int obj, buf *out, char bad[OPTIONS_BAD_BYTES], char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
