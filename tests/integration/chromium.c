/* chromium: the run's shared headless chromium (see chromium.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include "chromium.h"
#include "harness.h"
#include "support.h"

/* The runner's process id, in the runner and in every process forked
 * from it (the tests, and what they fork). */
static pid_t runner;

__attribute__((constructor)) static void note_runner(void)
{
    runner = getpid();
}

/* The run's directory (under $TMPDIR): chromium's profile, log and
 * temporary files, its process group, and the lock that lets one test
 * start it. */
static void run_dir(char out[PATH_MAX])
{
    const char *tmp = getenv("TMPDIR");
    snprintf(out, PATH_MAX, "%s/silt-chromium-%d", tmp && *tmp ? tmp : "/tmp", (int)runner);
}

/* Detached from the test (a session of its own, none of the test's
 * descriptors: a pipe end it kept would hold a reader's EOF back), under a
 * shell that stops it within a second of the runner's end. The D-Bus
 * addresses point nowhere: chromium otherwise spends seconds looking for a
 * bus a test machine does not run. */
static void launch(const char *dir)
{
    char owner[16];
    snprintf(owner, sizeof owner, "%d", (int)runner);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid != 0) return;
    setsid();
    int null = open("/dev/null", O_RDWR);
    int log = open(sfmt("%s/chromium.log", dir), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0) _exit(126);
    close_range(3, ~0U, 0);
    setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent", 1);
    setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent", 1);
    setenv("TMPDIR", dir, 1);   /* its org.chromium.Chromium.* singleton directory, gone with dir */
    static const char script[] =
        "chromium --headless=new --no-sandbox --disable-gpu --no-first-run --disable-extensions"
        " --disable-background-networking --disable-component-update --user-data-dir=\"$2/profile\""
        " --enable-logging=stderr --v=0 --remote-debugging-address=127.0.0.1 --remote-debugging-port=0"
        " about:blank & c=$!; echo $$ > \"$2/pgid\";"
        " while kill -0 \"$1\" 2>/dev/null && kill -0 $c 2>/dev/null; do sleep 1; done; kill $c 2>/dev/null";
    execl("/bin/sh", "sh", "-c", script, "sh", owner, dir, (char *)NULL);
    _exit(127);
}

/* The port and path chromium wrote when its endpoint opened; -1 before. */
static int active_port(const char *dir, char *path, size_t cap)
{
    FILE *f = fopen(sfmt("%s/profile/DevToolsActivePort", dir), "r");
    if (!f) return -1;
    int port = -1;
    char p[256] = "";
    if (fscanf(f, "%d %255s", &port, p) != 2) port = -1;
    fclose(f);
    snprintf(path, cap, "%s", p);
    return port;
}

static int write_all(int fd, const void *p, size_t n)
{
    for (const char *c = p; n > 0;) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The header of the handshake's answer, read a byte at a time so that no
 * frame after it is taken; true when it switched protocols. */
static bool upgraded(int fd)
{
    char head[1024];
    size_t n = 0;
    int64_t deadline = now_ms() + 10000;
    while (n < sizeof head - 1 && !(n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)) {
        struct pollfd p = { fd, POLLIN, 0 };
        int64_t left = deadline - now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0 || read(fd, head + n, 1) != 1) return false;
        n++;
    }
    head[n] = '\0';
    return strncmp(head, "HTTP/1.1 101", 12) == 0;
}

/* A WebSocket to 127.0.0.1:port path; -1 when nothing answers there. The
 * key is any 16 bytes in base64; the answer's accept key is not checked. */
static int ws_open(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char *req = sfmt("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: c2lsdC10ZXN0LWtleS0xMg==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                           path, port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 || write_all(fd, req, strlen(req)) < 0 || !upgraded(fd)) {
        close(fd);
        return -1;
    }
    return fd;
}

int chromium_connect(void)
{
    char dir[PATH_MAX], path[256];
    run_dir(dir);
    mkdir(dir, 0700);
    int lock = open(sfmt("%s/lock", dir), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    CHECK(lock >= 0 && flock(lock, LOCK_EX) == 0);
    int port = active_port(dir, path, sizeof path);
    int ws = port > 0 ? ws_open(port, path) : -1;
    if (ws < 0) {
        unlink(sfmt("%s/profile/DevToolsActivePort", dir));   /* a chromium that died left it */
        launch(dir);
        int64_t deadline = now_ms() + 30000;
        while ((port = active_port(dir, path, sizeof path)) <= 0 || (ws = ws_open(port, path)) < 0) {
            if (now_ms() > deadline) harness_failf(__FILE__, __LINE__, "chromium did not start: %s/chromium.log", dir);
            poll(NULL, 0, 20);   /* a poll interval, not a wait for it */
        }
    }
    flock(lock, LOCK_UN);
    close(lock);
    return ws;
}

/* A text frame, masked as a client's must be. */
void chromium_send(int ws, const char *text, size_t n)
{
    static const unsigned char mask[4] = { 0x5a, 0x1c, 0xe3, 0x07 };
    unsigned char head[14];
    size_t h = 0;
    head[h++] = 0x81;   /* FIN, text */
    if (n < 126) {
        head[h++] = (unsigned char)(0x80 | n);
    } else if (n < 65536) {
        head[h++] = 0x80 | 126;
        head[h++] = (unsigned char)(n >> 8);
        head[h++] = (unsigned char)n;
    } else {
        head[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--) head[h++] = (unsigned char)((uint64_t)n >> (8 * i));
    }
    memcpy(head + h, mask, sizeof mask);
    h += sizeof mask;
    buf frame;
    buf_init(&frame);
    buf_append(&frame, head, h);
    for (size_t i = 0; i < n; i++) buf_putc(&frame, (char)(text[i] ^ mask[i % 4]));
    int rc = write_all(ws, frame.data, frame.len);
    buf_fini(&frame);
    if (rc < 0) harness_failf(__FILE__, __LINE__, "write to chromium");
}

/* Moves each whole frame out of raw: a data frame's payload to messages,
 * a NUL after the last of a message. Chromium sends neither masked frames
 * nor pings to a client. */
static void take_frames(buf *raw, buf *messages)
{
    size_t at = 0;
    for (;;) {
        const unsigned char *f = (const unsigned char *)raw->data + at;
        size_t left = raw->len - at, h = 2;
        if (left < 2) break;
        uint64_t n = f[1] & 0x7f;
        if (n == 126) {
            if (left < 4) break;
            n = (uint64_t)f[2] << 8 | f[3];
            h = 4;
        } else if (n == 127) {
            if (left < 10) break;
            n = 0;
            for (int i = 0; i < 8; i++) n = n << 8 | f[2 + i];
            h = 10;
        }
        if (left - h < n) break;
        int op = f[0] & 0x0f;
        if (op == 8) harness_failf(__FILE__, __LINE__, "chromium closed the DevTools socket");
        if (f[1] & 0x80 || op > 10) harness_failf(__FILE__, __LINE__, "chromium sent an unexpected frame (0x%02x)", f[0]);
        if (op <= 2) {
            buf_append(messages, f + h, (size_t)n);
            if (f[0] & 0x80) buf_putc(messages, '\0');
        }
        at += h + (size_t)n;
    }
    memmove(raw->data, raw->data + at, raw->len - at);
    raw->len -= at;
}

bool chromium_read(int ws, buf *raw, buf *messages, int wait_ms)
{
    struct pollfd p = { ws, POLLIN, 0 };
    if (poll(&p, 1, wait_ms) <= 0) return false;
    char chunk[65536];
    ssize_t n = read(ws, chunk, sizeof chunk);
    if (n <= 0) harness_failf(__FILE__, __LINE__, "chromium closed the DevTools socket");
    buf_append(raw, chunk, (size_t)n);
    take_frames(raw, messages);
    return true;
}

/* In the runner, when it leaves: the run's chromium is stopped (its shell
 * made a process group of its own: chromium and its helpers) and its
 * directory removed. A test's process leaves by _exit; were one to leave
 * by exit, this is not its to do. */
__attribute__((destructor)) static void chromium_stop(void)
{
    char dir[PATH_MAX], ignored[16];
    run_dir(dir);
    if (getpid() != runner || access(dir, F_OK) != 0) return;
    FILE *f = fopen(sfmt("%s/pgid", dir), "r");
    int group = 0;
    if (f && fscanf(f, "%d", &group) == 1 && group > 1 && kill(-group, SIGTERM) == 0) {
        int64_t deadline = now_ms() + 5000;
        while (kill(-group, 0) == 0 && now_ms() < deadline) poll(NULL, 0, 20);
    }
    if (f) fclose(f);
    (void)run_cmd(sfmt("rm -rf %s", dir), ignored, sizeof ignored);
}
