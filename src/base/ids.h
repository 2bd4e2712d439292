/* ids: message ids (UUIDv7), lease ids, and the xxh3-128 transactionId hash
 * that the sidecar stores. Binary form is 16 bytes; text form is the usual
 * 36-character lower-case UUID. */
#ifndef SILT_IDS_H
#define SILT_IDS_H
#include <stddef.h>
#include <stdint.h>

#define IDS_UUID_TEXT 37   /* 36 characters and the terminator */

/* A UUIDv7: 48-bit Unix milliseconds, then a counter that keeps ids from one
 * process strictly increasing within a millisecond, then random bits. */
void ids_uuid7(uint8_t out[16]);
void ids_uuid_format(const uint8_t id[16], char out[IDS_UUID_TEXT]);
int  ids_uuid_parse(const char *s, size_t n, uint8_t out[16]) __attribute__((warn_unused_result));
/* xxh3-128 of a transactionId, in canonical (big-endian) byte order. */
void ids_txn_hash(const char *txn, size_t n, uint8_t out[16]);
void ids_hex(const uint8_t *p, size_t n, char *out);  /* out: 2n+1 bytes */

#endif
