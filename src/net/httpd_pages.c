/* httpd_pages: evhttp's own error pages become JSON (see httpd_pages.h).
 * Only a reply silt did not write and that ends in evhttp's page is
 * touched: one comparison of the output's last bytes per write otherwise. */
#include "net/httpd_pages.h"
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/emit.h"

void httpd_error_body(emit *e, buf *out, const char *text, size_t len)
{
    buf_init(out);
    emit_init(e, out);
    emit_object(e);
    emit_key(e, "error");
    emit_strn(e, text, len);
}

static const char *error_text(int status)
{
    switch (status) {
    case 400: return "malformed request: a bad request line, or headers over their limit";
    case 405: return "method not allowed";
    case 413: return "request headers or body too large";
    default: return "request refused by the http layer";
    }
}

static const char *reason(int status)
{
    return status == 400 ? "Bad Request" : status == 405 ? "Method Not Allowed" : status == 413 ? "Payload Too Large"
                                                                                                : "Error";
}

/* Replies before start (pipelined, not yet sent) stay; from start on, the
 * page is replaced. evhttp closes the connection after it. */
static void rewrite(struct evbuffer *out, struct evbuffer_ptr start)
{
    char line[16] = "";
    evbuffer_copyout_from(out, &start, line, sizeof line - 1);
    int status = atoi(line + 9);   /* "HTTP/1.1 NNN" */
    struct evbuffer *keep = evbuffer_new();
    if (!keep) abort();   /* libevent's allocation failed */
    evbuffer_remove_buffer(out, keep, (size_t)start.pos);
    evbuffer_drain(out, evbuffer_get_length(out));
    buf json;
    emit e;
    const char *text = error_text(status);
    httpd_error_body(&e, &json, text, strlen(text));
    emit_end(&e);
    evbuffer_add_buffer(out, keep);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                             "Connection: close\r\n\r\n%s", status, reason(status), json.len, json.data);
    evbuffer_free(keep);
    buf_fini(&json);
}

static bool ends_in_page(struct evbuffer *out)
{
    static const char page_end[] = "</BODY></HTML>\n";
    size_t len = evbuffer_get_length(out), n = sizeof page_end - 1;
    char tail[sizeof page_end];
    struct evbuffer_ptr at;
    if (len < n || evbuffer_ptr_set(out, &at, len - n, EVBUFFER_PTR_SET) < 0) return false;
    return evbuffer_copyout_from(out, &at, tail, n) == (ev_ssize_t)n && memcmp(tail, page_end, n) == 0;
}

/* The page's reply starts at the last status line in the buffer. */
static struct evbuffer_ptr last_status_line(struct evbuffer *out)
{
    struct evbuffer_ptr start = evbuffer_search(out, "HTTP/1.", 7, NULL), next = start;
    while (next.pos >= 0) {
        start = next;
        evbuffer_ptr_set(out, &next, 1, EVBUFFER_PTR_ADD);
        next = evbuffer_search(out, "HTTP/1.", 7, &next);
    }
    return start;
}

static void on_output(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
    static _Thread_local bool rewriting;   /* the rewrite's own writes come back here (each loop its own) */
    const bool *replying = arg;
    if (rewriting || *replying || info->n_added == 0 || !ends_in_page(out)) return;
    struct evbuffer_ptr start = last_status_line(out);
    if (start.pos < 0) return;
    rewriting = true;
    rewrite(out, start);
    rewriting = false;
}

struct evbuffer_cb_entry *httpd_pages_watch(struct evbuffer *out, bool *replying)
{
    return evbuffer_add_cb(out, on_output, replying);
}
