/* browser: Debian's headless chromium for the dashboard's tests, two ways.
 * browser_dump_dom loads a page and returns its DOM once the page's timers
 * and fetches are done (--virtual-time-budget, --dump-dom). The browser_*
 * calls drive a page over the DevTools protocol on a pipe
 * (--remote-debugging-pipe: commands on chromium's fd 3, replies and events
 * on its fd 4, each JSON text ended by a NUL; no WebSocket, no port), to
 * wait for an element, evaluate JavaScript, answer confirm() and click.
 * Both fail the test on any console message the page logged. Each call
 * that waits has a deadline; none sleeps for the page. */
#ifndef SILT_TEST_BROWSER_H
#define SILT_TEST_BROWSER_H
#include <stdbool.h>
#include <sys/types.h>
#include "base/buf.h"
#include "support.h"

/* false (and a note: line) when chromium is not installed. */
bool browser_available(void);
/* Loads <server>/#<hash>; the DOM (a static buffer). Fails the test when
 * the page shows its error banner (id="page-error"). */
const char *browser_dump_dom(const silt_server *s, const char *hash);

typedef struct browser {
    pid_t pid;
    int   to, from;      /* our ends: commands to chromium, its replies */
    int   next_id;
    buf   in;            /* bytes read and not yet a whole message */
    char  session[96];   /* the page's flattened session id */
    char  dir[64];       /* profile and log */
} browser;

/* Starts chromium and opens url in a page of its own. */
void browser_open(browser *b, const char *url);
/* One protocol command, params a JSON object or NULL, in the page's session
 * unless top; waits for its reply (r, reply_fini it), skipping events. */
void browser_call(browser *b, bool top, const char *method, const char *params, reply *r);
/* Evaluates a JavaScript expression in the page: its value as JSON text
 * (sfmt's ring). */
const char *browser_eval(browser *b, const char *expr);
/* Polls the expression until it is true; fails the test after timeout_ms. */
void browser_await(browser *b, const char *expr, int timeout_ms);
/* Answers the page's next confirm() with OK, recording its question in
 * window.siltConfirmed, and clicks the element the selector names. */
void browser_confirm_click(browser *b, const char *selector);
/* Writes the page as it is now to dir/name.png. */
void browser_screenshot(browser *b, const char *dir, const char *name);
/* Closes chromium and checks its log for console messages. */
void browser_close(browser *b);

#endif
