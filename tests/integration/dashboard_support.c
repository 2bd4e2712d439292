/* dashboard_support: reading values out of a page's DOM (see the header). */
#include <string.h>
#include "browser.h"
#include "harness.h"
#include "dashboard_support.h"
#include "support.h"

/* The overview reads task-retention coverage, which answers 503 (red: "no
 * partition pass has run yet") until a test server's first partition pass,
 * 1.5 s after it starts: a page load before it would record that 503.
 * Waits for the pass on /metrics/prometheus, which needs no token by
 * default (JWT_SKIP_PATHS), so a server with JWT_ENABLED waits the same. */
static void await_first_partition_pass(silt_server *s)
{
    int64_t end = now_ms() + 20000;
    while (srv_metric(s, "silt_task_partition_passes_total") < 1) {
        if (now_ms() > end) harness_failf(__FILE__, __LINE__, "no task partition pass within 20 s");
        pause_ms(100);
    }
}

bool dashboard_start(silt_server *s, const char *const *env)
{
    if (!browser_available()) return false;
    srv_start(s, env);
    await_first_partition_pass(s);
    return true;
}

const char *dom_cell(const char *dom, const char *row, const char *k)
{
    const char *r = strstr(dom, sfmt("data-row=\"%s\"", row));
    if (!r) return "";
    const char *end = strstr(r, "</tr>");
    const char *c = strstr(r, sfmt("data-k=\"%s\"", k));
    if (!c || (end && c > end)) return "";
    c = strchr(c, '>');
    if (!c) return "";
    c++;
    const char *e = strchr(c, '<');
    return e ? sfmt("%.*s", (int)(e - c), c) : "";
}

const char *dom_value(const char *dom, const char *k)
{
    const char *c = strstr(dom, sfmt("data-k=\"%s\"", k));
    if (!c || !(c = strchr(c, '>'))) return "";
    c++;
    const char *e = strchr(c, '<');
    return e ? sfmt("%.*s", (int)(e - c), c) : "";
}

const char *dom_title(const char *dom, const char *row, const char *k)
{
    const char *r = row ? strstr(dom, sfmt("data-row=\"%s\"", row)) : dom;
    if (!r) return "";
    const char *end = row ? strstr(r, "</tr>") : NULL;
    const char *c = strstr(r, sfmt("data-k=\"%s\"", k));
    if (!c || (end && c > end)) return "";
    while (c > dom && *c != '<') c--;   /* the element's tag, whatever the attributes' order */
    const char *close = strchr(c, '>'), *t = strstr(c, " title=\"");
    if (!close || !t || t > close) return "";
    t += strlen(" title=\"");
    const char *q = strchr(t, '"');
    return q ? sfmt("%.*s", (int)(q - t), t) : "";
}

bool dom_chart_drawn(const char *dom, const char *id)
{
    const char *canvas = strstr(dom, sfmt("id=\"%s\"", id));
    if (!canvas) return false;
    const char *open = canvas, *close = strchr(canvas, '>');
    while (open > dom && *open != '<') open--;
    const char *style = strstr(open, "box-sizing");
    return style && close && style < close;
}
