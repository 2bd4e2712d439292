/* browser: Debian's headless chromium for the dashboard's tests, driven
 * over the DevTools protocol: each page in a browser context of its own,
 * in the chromium the run shares (chromium.h). browser_dump_dom loads a
 * page and returns its DOM once the page's timers and fetches are done (a
 * virtual time budget, as chromium's own --dump-dom does); the other calls
 * drive a
 * page: wait for an element, evaluate JavaScript, answer confirm() and
 * click. Both fail the test on any console message the page logged and on
 * any request the page made that failed (an HTTP status >= 400, or no
 * reply), unless the test declared that one (browser_expect_failure).
 * Each call that waits has a deadline; none sleeps for the page. */
#ifndef SILT_TEST_BROWSER_H
#define SILT_TEST_BROWSER_H
#include <stdbool.h>
#include "base/buf.h"
#include "support.h"

/* false (and a note: line) when chromium is not installed. */
bool browser_available(void);
/* Loads <server>/#<hash>; the DOM (a static buffer). Fails the test when
 * the page shows its error banner (id="page-error"). */
const char *browser_dump_dom(const silt_server *s, const char *hash);
/* The same, where the test makes the page ask for something that fails:
 * a request whose URL contains path answering status is not a failure,
 * and one must come (browser_expect_failure). */
const char *browser_dump_dom_expecting(const silt_server *s, const char *hash, const char *path, int status);

enum { BROWSER_FAILURES = 16, BROWSER_REQUESTS = 128, BROWSER_EXPECTED = 4 };

/* A request the page made that failed: an HTTP status >= 400, or no reply
 * at all (status 0; error is chromium's reason, e.g. net::ERR_CONNECTION_REFUSED). */
typedef struct browser_failure {
    char url[256];
    int  status;
    char error[64];
} browser_failure;

typedef struct browser {
    int   ws;            /* the DevTools WebSocket to the run's chromium */
    int   next_id;
    buf   raw;           /* bytes read and not yet a whole frame */
    buf   in;            /* messages read and not yet taken, each ended by a NUL */
    char  context[96];   /* the page's browser context: storage of its own */
    char  target[96];
    char  session[96];   /* the page's flattened session id */
    char  console[256];  /* the first console message or uncaught error */
    int   nconsole;      /* and how many there were */
    /* Network.loadingFailed names a request by id only: the URLs of the
     * latest requests, by id (a ring) */
    struct { char id[48]; char url[256]; } request[BROWSER_REQUESTS];
    int   requests;
    browser_failure failed[BROWSER_FAILURES];   /* the first ones */
    int   nfailed;                              /* all of them */
    struct { char path[128]; int status; } expected[BROWSER_EXPECTED];
    int   nexpected;
    bool  budget_spent;  /* Emulation.virtualTimeBudgetExpired came */
} browser;

/* Opens url in a page of its own. */
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
/* The test makes the page ask for something that is not there: a request
 * whose URL contains path and that fails with status (0: no reply) is not
 * a failure. Only that path and status; any other failure still is, and
 * so is no such request at all by browser_close. Up to BROWSER_EXPECTED. */
void browser_expect_failure(browser *b, const char *path, int status);
/* The failed requests seen so far, expected or not (*n of them, the first
 * BROWSER_FAILURES kept), after reading what chromium has sent. */
const browser_failure *browser_failures(browser *b, int *n);
/* Closes the page, then fails the test on a console message or uncaught
 * error in it, or on a failed request the test did not expect, naming its
 * URL and status. */
void browser_close(browser *b);

#endif
