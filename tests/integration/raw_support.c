/* raw_support: sockets below HTTP and a server seen from outside (see
 * raw_support.h). */
#include "raw_support.h"
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "harness.h"

#define RING 8
#define RAW_MAX (256 * 1024)

static char *ring_slot(void)
{
    static char slots[RING][RAW_MAX];
    static int next;
    char *slot = slots[next];
    next = (next + 1) % RING;
    return slot;
}

int raw_try_connect(const silt_server *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s->port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) return fd;
    close(fd);
    return -1;
}

int raw_connect(const silt_server *s)
{
    int fd = raw_try_connect(s);
    if (fd < 0) harness_failf(__FILE__, __LINE__, "connect to port %d: %s", s->port, strerror(errno));
    return fd;
}

void raw_send(int fd, const char *bytes, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, bytes, n, MSG_NOSIGNAL);
        if (w <= 0) harness_failf(__FILE__, __LINE__, "send: %s", strerror(errno));
        bytes += w;
        n -= (size_t)w;
    }
}

void raw_send_str(int fd, const char *text) { raw_send(fd, text, strlen(text)); }

/* One read within what is left of the deadline: bytes, 0 closed, -1 none yet. */
static ssize_t read_some(int fd, char *into, size_t cap, int64_t deadline)
{
    int64_t left = deadline - now_ms();
    struct pollfd p = { fd, POLLIN, 0 };
    if (left <= 0 || poll(&p, 1, (int)left) <= 0) return -1;
    ssize_t n = recv(fd, into, cap, 0);
    if (n < 0) return errno == ECONNRESET ? 0 : -1;
    return n;
}

const char *raw_read(int fd, int timeout_ms, bool *closed)
{
    char *out = ring_slot();
    size_t len = 0;
    int64_t deadline = now_ms() + timeout_ms;
    *closed = false;
    for (;;) {
        ssize_t n = read_some(fd, out + len, RAW_MAX - 1 - len, deadline);
        if (n == 0) { *closed = true; break; }
        if (n < 0 || (len += (size_t)n) >= RAW_MAX - 1) break;
    }
    out[len] = '\0';
    return len || *closed ? out : NULL;
}

static bool response_whole(const char *out, size_t len)
{
    const char *end = strstr(out, "\r\n\r\n");
    if (!end) return false;
    const char *cl = raw_header(out, "Content-Length");
    size_t body = cl ? (size_t)atoll(cl) : 0;
    return len >= (size_t)(end + 4 - out) + body;
}

const char *raw_response(int fd, int timeout_ms)
{
    char *out = ring_slot();
    size_t len = 0;
    int64_t deadline = now_ms() + timeout_ms;
    out[0] = '\0';
    for (;;) {
        ssize_t n = read_some(fd, out + len, RAW_MAX - 1 - len, deadline);
        if (n <= 0) break;
        len += (size_t)n;
        out[len] = '\0';
        if (response_whole(out, len) || len >= RAW_MAX - 1) break;
    }
    out[len] = '\0';
    return out;
}

int raw_status(const char *response)
{
    if (strncmp(response, "HTTP/1.", 7) != 0 || strlen(response) < 12) return 0;
    return atoi(response + 9);
}

const char *raw_header(const char *response, const char *name)
{
    size_t n = strlen(name);
    const char *end = strstr(response, "\r\n\r\n");
    for (const char *line = strstr(response, "\r\n"); line && (!end || line < end); line = strstr(line + 2, "\r\n")) {
        const char *h = line + 2;
        if (strncasecmp(h, name, n) != 0 || h[n] != ':') continue;
        const char *v = h + n + 1;
        while (*v == ' ') v++;
        char *out = ring_slot();
        size_t len = strcspn(v, "\r\n");
        memcpy(out, v, len);
        out[len] = '\0';
        return out;
    }
    return NULL;
}

const char *raw_body(const char *response)
{
    const char *end = strstr(response, "\r\n\r\n");
    return end ? end + 4 : "";
}

bool raw_closed_within(int fd, int timeout_ms)
{
    char sink[4096];
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        ssize_t n = read_some(fd, sink, sizeof sink, deadline);
        if (n == 0) return true;
        if (n < 0) return false;
    }
}

int64_t proc_cpu_ms(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) harness_failf(__FILE__, __LINE__, "%s: %s", path, strerror(errno));
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')');   /* the command name may hold spaces */
    unsigned long long utime = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        harness_failf(__FILE__, __LINE__, "cannot read %s", path);
    return (int64_t)(utime + stime) * 1000 / sysconf(_SC_CLK_TCK);
}

int proc_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

const char *log_file(void)
{
    return sfmt("%s/%s.log", harness_scratch_dir(), uniq("server"));
}

static const char *scan(const char *path, const char *text, int *count)
{
    FILE *f = fopen(path, "r");
    const char *first = NULL;
    *count = 0;
    if (!f) return NULL;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (!strstr(line, text)) continue;
        if (!first) { char *slot = ring_slot(); snprintf(slot, RAW_MAX, "%s", line); first = slot; }
        (*count)++;
    }
    free(line);
    fclose(f);
    return first;
}

int log_count(const char *path, const char *text) { int n; scan(path, text, &n); return n; }
const char *log_line(const char *path, const char *text) { int n; return scan(path, text, &n); }
