/* dashboard_support: reading values out of a page's DOM (see the header). */
#include <string.h>
#include "browser.h"
#include "dashboard_support.h"
#include "support.h"

bool dashboard_start(silt_server *s, const char *const *env)
{
    if (!browser_available()) return false;
    srv_start(s, env);
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

bool dom_chart_drawn(const char *dom, const char *id)
{
    const char *canvas = strstr(dom, sfmt("id=\"%s\"", id));
    if (!canvas) return false;
    const char *open = canvas, *close = strchr(canvas, '>');
    while (open > dom && *open != '<') open--;
    const char *style = strstr(open, "box-sizing");
    return style && close && style < close;
}
