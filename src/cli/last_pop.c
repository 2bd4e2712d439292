/* last_pop: the record behind `silt ack --last` (see last_pop.h). Writing
 * it must never fail a pop: by then the server has handed out a lease and
 * the messages are printed, so every problem here is a warning. */
#include "cli/last_pop.h"
#include "cli/cli_common.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAST_POP_MAX_BYTES 65536   /* far above a record: ids are bounded by the server */

int cli_last_pop_path(buf *out)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (state && state[0] == '/') buf_puts(out, state);
    else if (home && home[0] == '/') buf_printf(out, "%s/.local/state", home);
    else return -1;
    buf_puts(out, "/silt/last-pop");
    return 0;
}

/* Creates every missing directory above path, private to the user. */
static int make_parents(const char *path)
{
    char dir[4096];
    if (strlen(path) >= sizeof dir) { errno = ENAMETOOLONG; return -1; }
    strcpy(dir, path);
    for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

/* The record for the last message of reply d; -1 when d holds none. */
static int encode(buf *out, const json_doc *d, const char *group)
{
    int list = json_get(d, 0, "messages");
    if (list < 0 || d->tokens[list].type != JSON_ARRAY || d->tokens[list].count == 0) return -1;
    int m = json_at(d, (uint32_t)list, d->tokens[list].count - 1);
    char *pid = cli_get_str(d, m, "partitionId"), *txn = cli_get_str(d, m, "transactionId");
    char *lease = cli_get_str(d, m, "leaseId");
    int rc = pid && txn ? 0 : -1;
    buf_puts(out, "{\"url\":");
    json_put_cstr(out, cli_server_url());
    buf_puts(out, ",\"consumerGroup\":");
    json_put_cstr(out, group);
    buf_puts(out, ",\"partitionId\":");
    json_put_cstr(out, pid);
    buf_puts(out, ",\"transactionId\":");
    json_put_cstr(out, txn);
    buf_puts(out, ",\"leaseId\":");
    json_put_cstr(out, lease && *lease ? lease : NULL);
    buf_puts(out, "}\n");
    free(pid);
    free(txn);
    free(lease);
    return rc;
}

/* Writes text to path whole or not at all: a temporary file beside it,
 * renamed over it. */
static int write_whole(const char *path, const buf *text)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    bool ok = write(fd, text->data, text->len) == (ssize_t)text->len;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return 0;
    int e = errno;
    unlink(tmp);
    errno = e;
    return -1;
}

static void warn(const char *path, const char *what)
{
    cli_error("warning: %s %s for ack --last: %s", what, path, strerror(errno));
}

void cli_last_pop_save(const json_doc *d, const char *group, bool leased)
{
    buf path, text;
    buf_init(&path);
    buf_init(&text);
    if (cli_last_pop_path(&path) < 0)
        cli_error("warning: neither XDG_STATE_HOME nor HOME is set: ack --last will not see this pop");
    else if (!d || !leased || encode(&text, d, group) < 0) {
        if (unlink(path.data) < 0 && errno != ENOENT) warn(path.data, "cannot clear");
    } else if (make_parents(path.data) < 0 || write_whole(path.data, &text) < 0)
        warn(path.data, "cannot write");
    buf_fini(&text);
    buf_fini(&path);
}

/* Reads the file at path into text; -1 with errno on failure. */
static int read_whole(const char *path, buf *text)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && text->len < LAST_POP_MAX_BYTES)
        buf_append(text, chunk, n);
    fclose(f);
    return 0;
}

static int decode(cli_last_pop *lp, const buf *text)
{
    json_doc d;
    json_doc_init(&d);
    if (text->len > 0 && json_parse(&d, text->data, text->len, 64) == 0
        && d.tokens[0].type == JSON_OBJECT) {
        lp->url = cli_get_str(&d, 0, "url");
        lp->group = cli_get_str(&d, 0, "consumerGroup");
        lp->partition_id = cli_get_str(&d, 0, "partitionId");
        lp->transaction_id = cli_get_str(&d, 0, "transactionId");
        lp->lease_id = cli_get_str(&d, 0, "leaseId");
    }
    json_doc_fini(&d);
    return lp->url && lp->partition_id && lp->transaction_id ? 0 : -1;
}

/* The record's text; -1 (reported) when there is none or it is unreadable. */
static int load_text(const char *path, buf *text)
{
    if (read_whole(path, text) == 0) return 0;
    if (errno == ENOENT)
        cli_error("ack --last: nothing to ack: the last silt pop leased no message (no %s)", path);
    else cli_error("ack --last: cannot read %s: %s", path, strerror(errno));
    return -1;
}

int cli_last_pop_load(cli_last_pop *lp)
{
    *lp = (cli_last_pop){ 0 };
    buf path, text;
    buf_init(&path);
    buf_init(&text);
    int rc = -1;
    if (cli_last_pop_path(&path) < 0)
        cli_error("ack --last: neither XDG_STATE_HOME nor HOME is set, so no pop was recorded");
    else if (load_text(path.data, &text) == 0 && (rc = decode(lp, &text)) < 0)
        cli_error("ack --last: %s is not a record of a pop", path.data);
    if (rc < 0) cli_last_pop_fini(lp);
    buf_fini(&text);
    buf_fini(&path);
    return rc;
}

void cli_last_pop_fini(cli_last_pop *lp)
{
    free(lp->url);
    free(lp->group);
    free(lp->partition_id);
    free(lp->transaction_id);
    free(lp->lease_id);
    *lp = (cli_last_pop){ 0 };
}
