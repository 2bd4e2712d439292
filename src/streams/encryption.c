/* encryption: AES-256-GCM payload sealing (see encryption.h). */
#include "streams/encryption.h"
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include "base/xalloc.h"

#define KEY_BYTES 32
#define NONCE_BYTES 12
#define TAG_BYTES 16

static uint8_t key[KEY_BYTES];
static bool have_key;

typedef struct queue_flag {
    char              *queue;
    struct queue_flag *next;
} queue_flag;

static queue_flag *encrypted_queues;   /* few queues encrypt: a list is enough */

static int hex_nibble(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int encryption_load_key(const char *hex, char *err, size_t errlen)
{
    have_key = false;
    if (!hex || !*hex) return 0;
    if (strlen(hex) != 2 * KEY_BYTES) goto bad;
    for (int i = 0; i < KEY_BYTES; i++) {
        int hi = hex_nibble(hex[2 * i]), lo = hex_nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) goto bad;
        key[i] = (uint8_t)(hi << 4 | lo);
    }
    have_key = true;
    return 0;
bad:
    strncpy(err, "QUEEN_ENCRYPTION_KEY must be 64 hexadecimal characters (a 256-bit key, e.g. from openssl rand -hex 32)", errlen - 1);
    err[errlen - 1] = '\0';
    return -1;
}

bool encryption_has_key(void) { return have_key; }

static queue_flag **find(const char *queue)
{
    queue_flag **p = &encrypted_queues;
    while (*p && strcmp((*p)->queue, queue) != 0) p = &(*p)->next;
    return p;
}

void encryption_set_queue(const char *queue, bool on)
{
    queue_flag **p = find(queue);
    if (on && !*p) {
        *p = xcalloc(1, sizeof **p);
        (*p)->queue = xstrdup(queue);
    } else if (!on && *p) {
        queue_flag *gone = *p;
        *p = gone->next;
        free(gone->queue);
        free(gone);
    }
}

bool encryption_queue(const char *queue) { return *find(queue) != NULL; }

static int run_gcm(bool seal, const uint8_t *nonce, const uint8_t *aad, const uint8_t *in, int n,
                   uint8_t *out, uint8_t *tag)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, ok = ctx && EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce, seal ? 1 : 0) == 1 &&
                      EVP_CipherUpdate(ctx, NULL, &len, aad, 16) == 1 &&
                      (n == 0 || EVP_CipherUpdate(ctx, out, &len, in, n) == 1);
    if (ok && !seal) ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, tag) == 1;
    if (ok) ok = EVP_CipherFinal_ex(ctx, out + (n ? len : 0), &len) == 1;
    if (ok && seal) ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : -1;
}

int encryption_seal(const uint8_t message_id[16], const char *in, size_t n, buf *out)
{
    if (!have_key) return -1;
    buf_reserve(out, n + ENCRYPTION_OVERHEAD);
    uint8_t *nonce = (uint8_t *)out->data + out->len;
    if (RAND_bytes(nonce, NONCE_BYTES) != 1) return -1;
    uint8_t *body = nonce + NONCE_BYTES;
    if (run_gcm(true, nonce, message_id, (const uint8_t *)in, (int)n, body, body + n) < 0) return -1;
    out->len += n + ENCRYPTION_OVERHEAD;
    out->data[out->len] = '\0';
    return 0;
}

int encryption_open(const uint8_t message_id[16], const char *in, size_t n, buf *out)
{
    if (!have_key || n < ENCRYPTION_OVERHEAD) return -1;
    size_t plain = n - ENCRYPTION_OVERHEAD;
    buf_reserve(out, plain);
    const uint8_t *nonce = (const uint8_t *)in, *body = nonce + NONCE_BYTES;
    uint8_t tag[TAG_BYTES];
    memcpy(tag, body + plain, TAG_BYTES);
    if (run_gcm(false, nonce, message_id, body, (int)plain, (uint8_t *)out->data + out->len, tag) < 0) return -1;
    out->len += plain;
    out->data[out->len] = '\0';
    return 0;
}
