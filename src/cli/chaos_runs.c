/* chaos_runs: the file every run of a task leaves a line in (see chaos.h).
 * The `silt worker` processes' command appends "<id> <attempt>" with the
 * shell's >>, the HTTP worker with one write(2) on an O_APPEND descriptor:
 * each line is one write, so lines of different processes never mix. A
 * task whose id is in the file twice ran twice. */
#include "cli/chaos.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct chaos_runs {
    char (*ids)[IDS_UUID_TEXT];   /* one per line, sorted */
    long n;
};

static int by_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

chaos_runs *chaos_runs_load(const char *path)
{
    chaos_runs *r = xcalloc(1, sizeof *r);
    FILE *f = fopen(path, "r");
    if (!f) return r;   /* nothing ran */
    long cap = 0;
    char line[128];
    while (fgets(line, sizeof line, f)) {
        if (r->n == cap) {
            cap = cap ? 2 * cap : 1024;
            r->ids = xrealloc(r->ids, (size_t)cap * sizeof *r->ids);
        }
        snprintf(r->ids[r->n++], IDS_UUID_TEXT, "%.*s", IDS_UUID_TEXT - 1, line);
    }
    fclose(f);
    if (r->n) qsort(r->ids, (size_t)r->n, sizeof *r->ids, by_id);
    return r;
}

int chaos_runs_of(const chaos_runs *r, const char *id)
{
    if (!r->n) return 0;
    char (*hit)[IDS_UUID_TEXT] = bsearch(id, r->ids, (size_t)r->n, sizeof *r->ids, by_id);
    if (!hit) return 0;
    while (hit > r->ids && strcmp(hit[-1], id) == 0) hit--;
    int n = 0;
    while (hit + n < r->ids + r->n && strcmp(hit[n], id) == 0) n++;
    return n;
}

long chaos_runs_total(const chaos_runs *r)
{
    return r->n;
}

void chaos_runs_free(chaos_runs *r)
{
    if (!r) return;
    free(r->ids);
    free(r);
}

int chaos_runs_append(const char *path, const char *id, long attempt)
{
    char line[96];
    int n = snprintf(line, sizeof line, "%s %ld\n", id, attempt);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    ssize_t w = write(fd, line, (size_t)n);
    close(fd);
    return w == n ? 0 : -1;
}
