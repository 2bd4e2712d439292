/* Integration: what silt does before an operator has secured it. It listens
 * on loopback unless HOST says otherwise; listening beyond loopback with
 * authentication off is said in one warning line at start and on /health
 * ("auth": "off"); an HS256 secret too short to resist guessing refuses the
 * start. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "harness.h"
#include "raw_support.h"
#include "support.h"

#define OPEN_WARNING "authentication is off and silt listens on"
#define SECRET_32 "0123456789abcdef0123456789abcdef"

static const char *health_auth(silt_server *s)
{
    reply r;
    rq(s, "GET", "/health", NULL, &r);
    CHECK_INT(r.status, 200);
    static char auth[16];
    snprintf(auth, sizeof auth, "%s", jstr(&r, "auth") ? jstr(&r, "auth") : "(none)");
    reply_fini(&r);
    return auth;
}

/* This machine's first IPv4 address that is not loopback, or NULL. */
static const char *outside_address(void)
{
    static char text[INET_ADDRSTRLEN];
    struct ifaddrs *all, *i;
    if (getifaddrs(&all) < 0) return NULL;
    const char *found = NULL;
    for (i = all; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        if ((ntohl(a.s_addr) >> 24) == 127) continue;
        found = inet_ntop(AF_INET, &a, text, sizeof text);
    }
    freeifaddrs(all);
    return found;
}

static bool connects(const char *address, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, address, &to.sin_addr);
    bool ok = connect(fd, (struct sockaddr *)&to, sizeof to) == 0;
    close(fd);
    return ok;
}

TEST(server_listens_on_loopback_unless_host_is_set)
{
    const char *log = log_file();
    silt_server s;
    srv_start(&s, (const char *[]){ "HOST=", "LOG_LEVEL=info", sfmt("SILT_TEST_STDERR=%s", log), NULL });
    CHECK(log_line(log, sfmt("listening on 127.0.0.1:%d", s.port)) != NULL);
    CHECK_INT(log_count(log, OPEN_WARNING), 0);
    CHECK_STR(health_auth(&s), "off");
    const char *outside = outside_address();
    if (outside) CHECK(!connects(outside, s.port));
    srv_stop(&s);
}

TEST(listening_beyond_loopback_without_authentication_is_said_once_at_start)
{
    const char *log = log_file();
    silt_server s;
    srv_start(&s, (const char *[]){ "HOST=0.0.0.0", sfmt("SILT_TEST_STDERR=%s", log), NULL });
    CHECK_INT(log_count(log, sfmt(OPEN_WARNING " 0.0.0.0: anyone who can reach port %d", s.port)), 1);
    CHECK_STR(health_auth(&s), "off");
    const char *outside = outside_address();
    if (outside) CHECK(connects(outside, s.port));
    srv_stop(&s);
}

TEST(listening_beyond_loopback_with_authentication_is_not_warned_about)
{
    const char *log = log_file();
    silt_server s;
    srv_start(&s, (const char *[]){ "HOST=0.0.0.0", "JWT_ENABLED=true", "JWT_SECRET=" SECRET_32,
                                    sfmt("SILT_TEST_STDERR=%s", log), NULL });
    CHECK_STR(health_auth(&s), "jwt");   /* /health is a skip path by default */
    CHECK_INT(log_count(log, OPEN_WARNING), 0);
    reply r;
    rq(&s, "GET", "/api/v1/resources/queues", NULL, &r);
    CHECK_INT(r.status, 401);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(an_hs256_secret_under_32_bytes_refuses_the_start_naming_the_rule)
{
    static char out[4096];
    int rc = run_cmd(sfmt("JWT_ENABLED=true JWT_ALGORITHM=HS256 JWT_SECRET=%.31s '%s' server 2>&1", SECRET_32,
                          silt_bin()), out, sizeof out);
    CHECK_INT(rc, 2);
    CHECK(strstr(out, "JWT_SECRET is 31 bytes: HS256 needs a secret of at least 32 bytes") != NULL);
}
