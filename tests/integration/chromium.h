/* chromium: the one headless chromium a run of the integration tests
 * shares, and the DevTools WebSocket to it (browser.c speaks the protocol
 * over it). Starting chromium costs ~0.7 s of CPU and the dashboard's tests
 * open some 65 pages, so the first test that needs it starts it, detached,
 * and every later one connects to it; each page then gets a browser
 * context of its own (browser.c), as isolated as a fresh profile. It ends
 * with the runner: the runner's exit stops it, and a watchdog stops it
 * within a second of a runner that was killed. */
#ifndef SILT_TEST_CHROMIUM_H
#define SILT_TEST_CHROMIUM_H
#include <stdbool.h>
#include "base/buf.h"

/* A WebSocket to the browser's DevTools endpoint, started first if this
 * run has none yet; fails the test when chromium does not come up. */
int chromium_connect(void);
/* Sends one protocol message as a text frame. */
void chromium_send(int ws, const char *text, size_t n);
/* Reads what has come on the socket into raw, waiting up to wait_ms (0:
 * only what is there), and moves every whole message out of raw into
 * messages, each ended by a NUL. false when nothing came; fails the test
 * when chromium closed the socket. */
bool chromium_read(int ws, buf *raw, buf *messages, int wait_ms);

#endif
