/* raw_support: talking to a server below HTTP, for tests of the HTTP
 * layer's own limits (connections, timeouts, malformed requests) that a
 * well-behaved client cannot reach; and watching the server process from
 * outside (its CPU time, its log). */
#ifndef SILT_TEST_RAW_SUPPORT_H
#define SILT_TEST_RAW_SUPPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "support.h"

/* A connected TCP socket to s (fails the test if the connect fails). */
int  raw_connect(const silt_server *s);
/* Connects; -1 instead of failing the test. */
int  raw_try_connect(const silt_server *s);
void raw_send(int fd, const char *bytes, size_t n);
void raw_send_str(int fd, const char *text);
/* Reads until the peer closes or timeout_ms passes; the bytes read,
 * NUL-terminated, in a static ring (NULL if nothing came and it did not close).
 * *closed tells whether the peer closed. */
const char *raw_read(int fd, int timeout_ms, bool *closed);
/* Reads one whole HTTP response (headers and Content-Length body) or until
 * the peer closes; "" if none within timeout_ms. Static ring. */
const char *raw_response(int fd, int timeout_ms);
int         raw_status(const char *response);        /* the status code, 0 if none */
const char *raw_header(const char *response, const char *name);  /* value, static ring; NULL if absent */
const char *raw_body(const char *response);          /* after the blank line; "" if none */
/* Whether the peer closes within timeout_ms (anything it sends is discarded). */
bool raw_closed_within(int fd, int timeout_ms);

/* User plus system CPU time of a process, in milliseconds (/proc). */
int64_t proc_cpu_ms(pid_t pid);
/* Open descriptors of a process (/proc/PID/fd). */
int proc_fds(pid_t pid);

/* A log file for a server (SILT_TEST_STDERR=<it>), unique to the test, in
 * its scratch directory (kept when the test fails). */
const char *log_file(void);
/* How many lines of the file contain text. */
int log_count(const char *path, const char *text);
/* The first line of the file containing text, static ring; NULL if none. */
const char *log_line(const char *path, const char *text);

#endif
