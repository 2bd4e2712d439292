/* httpd_peers: how many connections each client address holds, across
 * every loop of a server, so that one address cannot take more than its
 * share of HTTP_MAX_CONNECTIONS (HTTP_CLIENT_SHARE_PERCENT). */
#ifndef SILT_HTTPD_PEERS_H
#define SILT_HTTPD_PEERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A client address: IPv4 as v4-mapped IPv6, so one key type serves both. */
typedef struct httpd_peer {
    uint8_t addr[16];
} httpd_peer;

typedef struct httpd_peers httpd_peers;

httpd_peers *httpd_peers_new(void);
void         httpd_peers_free(httpd_peers *p);
/* The peer of connected socket fd; false when it has none (a UNIX socket). */
bool httpd_peer_of(int fd, httpd_peer *out);
/* Counts one more connection from peer; false (nothing counted) when it
 * already holds max. */
bool httpd_peers_take(httpd_peers *p, const httpd_peer *peer, int max);
/* One connection from peer closed. */
void httpd_peers_give(httpd_peers *p, const httpd_peer *peer);
/* The text of an address, for the log and a refusal ("::ffff:" dropped). */
void httpd_peer_text(const httpd_peer *peer, char *out, size_t cap);

#endif
