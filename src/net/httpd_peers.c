/* httpd_peers: connections per client address (see httpd_peers.h). A hash
 * table under one mutex: every loop accepts, and a take or a give is a few
 * comparisons. Entries go when their count does, so the table holds only
 * addresses with a connection open. */
#include "net/httpd_peers.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "base/xalloc.h"

#define PEER_BUCKETS 4096

typedef struct peer_entry {
    httpd_peer         peer;
    int                conns;
    struct peer_entry *next;
} peer_entry;

struct httpd_peers {
    pthread_mutex_t lock;
    peer_entry     *buckets[PEER_BUCKETS];
};

httpd_peers *httpd_peers_new(void)
{
    httpd_peers *p = xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

void httpd_peers_free(httpd_peers *p)
{
    if (!p) return;
    for (size_t i = 0; i < PEER_BUCKETS; i++)
        for (peer_entry *e = p->buckets[i], *next; e; e = next) { next = e->next; free(e); }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

bool httpd_peer_of(int fd, httpd_peer *out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0) return false;
    memset(out, 0, sizeof *out);
    if (ss.ss_family == AF_INET6) {
        memcpy(out->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        return true;
    }
    if (ss.ss_family != AF_INET) return false;
    out->addr[10] = out->addr[11] = 0xff;
    memcpy(out->addr + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
    return true;
}

/* FNV-1a over the address. */
static size_t bucket_of(const httpd_peer *peer)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 16; i++) h = (h ^ peer->addr[i]) * 16777619u;
    return h % PEER_BUCKETS;
}

static peer_entry **find(httpd_peers *p, const httpd_peer *peer)
{
    peer_entry **at = &p->buckets[bucket_of(peer)];
    while (*at && memcmp(&(*at)->peer, peer, sizeof *peer) != 0) at = &(*at)->next;
    return at;
}

bool httpd_peers_take(httpd_peers *p, const httpd_peer *peer, int max)
{
    pthread_mutex_lock(&p->lock);
    peer_entry **at = find(p, peer);
    bool ok = !*at || (*at)->conns < max;
    if (ok && !*at) {
        *at = xcalloc(1, sizeof **at);
        (*at)->peer = *peer;
    }
    if (ok) (*at)->conns++;
    pthread_mutex_unlock(&p->lock);
    return ok;
}

void httpd_peers_give(httpd_peers *p, const httpd_peer *peer)
{
    pthread_mutex_lock(&p->lock);
    peer_entry **at = find(p, peer);
    if (*at && --(*at)->conns <= 0) {
        peer_entry *gone = *at;
        *at = gone->next;
        free(gone);
    }
    pthread_mutex_unlock(&p->lock);
}

void httpd_peer_text(const httpd_peer *peer, char *out, size_t cap)
{
    static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    char text[INET6_ADDRSTRLEN] = "?";
    if (memcmp(peer->addr, v4_mapped, 12) == 0) inet_ntop(AF_INET, peer->addr + 12, text, sizeof text);
    else inet_ntop(AF_INET6, peer->addr, text, sizeof text);
    snprintf(out, cap, "%s", text);
}
