/* What the dashboard's browser tests read out of a page's DOM (the text
 * --dump-dom or a DevTools read gives): web/app.js marks each value with
 * data-k and each row with data-row. */
#ifndef SILT_TEST_DASHBOARD_SUPPORT_H
#define SILT_TEST_DASHBOARD_SUPPORT_H
#include <stdbool.h>
#include "support.h"

/* Starts a server (env as srv_start) for a browser test: false, with
 * nothing started and a note printed, when chromium is not installed. */
bool dashboard_start(silt_server *s, const char *const *env);

/* The cell of key k in the row named row: "<tr data-row="row">...<td
 * data-k="k" ...>text</td>"; "" when absent (static ring via sfmt). */
const char *dom_cell(const char *dom, const char *row, const char *k);
/* The text of the first element with data-k="k" (a card's value). */
const char *dom_value(const char *dom, const char *k);
/* The title of that cell (row NULL: of the first element with data-k="k"):
 * a time's or a size's exact text, the API's, where the cell says "3 min
 * ago" or "1.2 MB"; "" when it has none. */
const char *dom_title(const char *dom, const char *row, const char *k);
/* Chart.js styles the canvas it draws on (box-sizing, size): the library
 * loaded and drew, rather than the canvas merely being in the markup. */
bool dom_chart_drawn(const char *dom, const char *id);

#endif
