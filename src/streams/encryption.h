/* encryption: payload encryption at rest (AES-256-GCM, OpenSSL). The key is
 * QUEEN_ENCRYPTION_KEY (64 hex characters). An encrypted payload is stored as
 * nonce (12) | ciphertext | tag (16), with the message id as associated data
 * so a payload cannot be moved to another message undetected.
 *
 * Which queues encrypt is remembered here from /configure replies and from
 * push_flush refusals (SQLSTATE SLE01: "this queue requires encryption"),
 * so a queue switched on through another server is encrypted from the first
 * refused flush on. The key and that set are process-wide, like the key. */
#ifndef SILT_ENCRYPTION_H
#define SILT_ENCRYPTION_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"

#define ENCRYPTION_REQUIRED_SQLSTATE "SLE01"
#define ENCRYPTION_OVERHEAD 28

/* Loads the key; NULL or "" means none. -1 with a message if malformed. */
int  encryption_load_key(const char *hex, char *err, size_t errlen) __attribute__((warn_unused_result));
bool encryption_has_key(void);
void encryption_set_queue(const char *queue, bool on);
bool encryption_queue(const char *queue);
/* Appends the sealed payload to out. -1 without a key. */
int  encryption_seal(const uint8_t message_id[16], const char *in, size_t n, buf *out)
     __attribute__((warn_unused_result));
/* Appends the plaintext to out. -1 without a key or when authentication fails. */
int  encryption_open(const uint8_t message_id[16], const char *in, size_t n, buf *out)
     __attribute__((warn_unused_result));

#endif
