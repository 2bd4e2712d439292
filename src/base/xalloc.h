/* xalloc: memory allocation that cannot fail. silt's policy is that running
 * out of memory ends the process with a message (a broker that cannot
 * allocate cannot keep its promises either); every allocation goes through
 * these, so no caller checks, and none forgets to. */
#ifndef SILT_XALLOC_H
#define SILT_XALLOC_H
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
