/* httpd_pages: evhttp's own error replies in silt's one error shape.
 * evhttp answers what it cannot parse (a bad request line, headers or a
 * body over its limits) by itself, with an HTML page, and libevent 2.1 has
 * no hook for it (2.2's evhttp_set_errorcb). A watch on a connection's
 * output replaces such a page, status kept, by {"error": "..."}. */
#ifndef SILT_HTTPD_PAGES_H
#define SILT_HTTPD_PAGES_H
#include <stdbool.h>
#include <stddef.h>
#include <event2/buffer.h>
#include "base/buf.h"
#include "base/emit.h"

/* Watches out (a connection's output buffer). *replying is true while silt
 * writes a reply of its own: those are never looked at. The entry is the
 * caller's to remove with evbuffer_remove_cb_entry. */
struct evbuffer_cb_entry *httpd_pages_watch(struct evbuffer *out, bool *replying);

/* silt's one error shape, begun: out initialised and e writing into it,
 * inside the object after "error": text (len bytes). More members may
 * follow; emit_end closes it. Every error body of the http layer starts
 * here (replies, timeouts, refused connections, evhttp's pages). */
void httpd_error_body(emit *e, buf *out, const char *text, size_t len);

#endif
