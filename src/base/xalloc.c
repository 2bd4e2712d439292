/* xalloc: allocation that aborts on exhaustion (see xalloc.h). */
#include "base/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *checked(void *p)
{
    if (p) return p;
    fputs("silt: out of memory\n", stderr);
    abort();
}

void *xmalloc(size_t n) { return checked(malloc(n ? n : 1)); }

void *xcalloc(size_t count, size_t size) { return checked(calloc(count ? count : 1, size ? size : 1)); }

void *xrealloc(void *p, size_t n) { return checked(realloc(p, n ? n : 1)); }

char *xstrdup(const char *s) { return checked(strdup(s)); }

char *xstrndup(const char *s, size_t n) { return checked(strndup(s, n)); }
