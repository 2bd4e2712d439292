/* workflow_check: the checks of a definition (see workflow_check.h). */
#include "tasks/workflow_check.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/xalloc.h"

static void problem(wf_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(wf_problems *p, const char *fmt, ...)
{
    buf b;
    buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    p->items = xrealloc(p->items, (p->n + 1) * sizeof *p->items);
    p->items[p->n++] = buf_steal(&b);
}

void wf_problems_fini(wf_problems *p)
{
    for (size_t i = 0; i < p->n; i++) free(p->items[i]);
    free(p->items);
    p->items = NULL;
    p->n = 0;
}

/* The index of node id, or -1. */
static long find(const wf_node *nodes, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].id, id) == 0) return (long)i;
    return -1;
}

static void check_ids(const wf_node *nodes, size_t n, wf_problems *p)
{
    for (size_t i = 0; i < n; i++)
        if (find(nodes, i, nodes[i].id) >= 0) problem(p, "node \"%s\" is defined twice", nodes[i].id);
}

static void check_edges(const wf_node *nodes, size_t n, wf_problems *p)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < nodes[i].nwaits; k++) {
            const char *dep = nodes[i].waits_for[k];
            if (find(nodes, n, dep) < 0)
                problem(p, "node \"%s\" waits for \"%s\", which is not a node", nodes[i].id, dep);
            /* a predecessor named twice would be counted twice by the join, and end once */
            for (size_t j = 0; j < k; j++)
                if (strcmp(nodes[i].waits_for[j], dep) == 0) {
                    problem(p, "node \"%s\" waits for \"%s\" twice", nodes[i].id, dep);
                    break;
                }
        }
}

static void check_join(const wf_node *v, wf_problems *p)
{
    bool quorum = strcmp(v->join, "quorum") == 0;
    if (strcmp(v->join, "all") != 0 && strcmp(v->join, "any") != 0 && !quorum) {
        problem(p, "node \"%s\": join must be all, any or quorum", v->id);
        return;
    }
    if (strcmp(v->join, "all") != 0 && v->nwaits == 0)
        problem(p, "node \"%s\": join %s needs predecessors (waitsFor)", v->id, v->join);
    else if (quorum && (v->min_success < 1 || (size_t)v->min_success > v->nwaits))
        problem(p, "node \"%s\": minSuccess %d can never be met by %zu predecessors (it must be 1 to %zu)",
                v->id, v->min_success, v->nwaits, v->nwaits);
}

/* Depth-first search for a cycle through node i; state 0 unvisited, 1 on
 * the path, 2 done. The path is kept to name the cycle. */
static bool cycle_from(const wf_node *nodes, size_t n, size_t i, int *state, size_t *path, size_t depth,
                       wf_problems *p)
{
    state[i] = 1;
    path[depth] = i;
    for (size_t k = 0; k < nodes[i].nwaits; k++) {
        long j = find(nodes, n, nodes[i].waits_for[k]);
        if (j < 0 || state[j] == 2) continue;
        if (state[j] == 1) {
            buf names;
            buf_init(&names);
            size_t from = depth;
            while (path[from] != (size_t)j) from--;
            for (size_t s = from; s <= depth; s++) buf_printf(&names, "%s -> ", nodes[path[s]].id);
            buf_puts(&names, nodes[j].id);
            problem(p, "the nodes wait for each other in a cycle: %s", names.data);
            buf_fini(&names);
            return true;
        }
        if (cycle_from(nodes, n, (size_t)j, state, path, depth + 1, p)) return true;
    }
    state[i] = 2;
    return false;
}

static bool check_cycles(const wf_node *nodes, size_t n, wf_problems *p)
{
    int *state = xcalloc(n ? n : 1, sizeof *state);
    size_t *path = xcalloc(n ? n : 1, sizeof *path);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
        if (state[i] == 0) found = cycle_from(nodes, n, i, state, path, 0, p);
    free(state);
    free(path);
    return found;
}

/* Whether target is among node i's predecessors, however far back. */
static bool precedes(const wf_node *nodes, size_t n, size_t i, const char *target, size_t depth)
{
    if (depth > n) return false;   /* a cycle: reported elsewhere */
    for (size_t k = 0; k < nodes[i].nwaits; k++) {
        if (strcmp(nodes[i].waits_for[k], target) == 0) return true;
        long j = find(nodes, n, nodes[i].waits_for[k]);
        if (j >= 0 && precedes(nodes, n, (size_t)j, target, depth + 1)) return true;
    }
    return false;
}

static void check_args_from(const wf_node *nodes, size_t n, wf_problems *p)
{
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].nargs_from && !nodes[i].args_object)
            problem(p, "node \"%s\": argsFrom needs args to be an object", nodes[i].id);
        for (size_t k = 0; k < nodes[i].nargs_from; k++)
            if (!precedes(nodes, n, i, nodes[i].args_from[k], 0))
                problem(p, "node \"%s\": argsFrom names \"%s\", which does not run before it", nodes[i].id,
                        nodes[i].args_from[k]);
    }
}

size_t workflow_check(const wf_node *nodes, size_t n, const char *on_error, const char *output, wf_problems *out)
{
    size_t before = out->n;
    if (n == 0) problem(out, "a workflow needs at least one node");
    if (on_error && strcmp(on_error, "FAIL") != 0 && strcmp(on_error, "PAUSE") != 0)
        problem(out, "onError must be FAIL or PAUSE");
    if (output && find(nodes, n, output) < 0) problem(out, "output names \"%s\", which is not a node", output);
    check_ids(nodes, n, out);
    check_edges(nodes, n, out);
    for (size_t i = 0; i < n; i++) check_join(&nodes[i], out);
    if (!check_cycles(nodes, n, out)) check_args_from(nodes, n, out);
    return out->n - before;
}
