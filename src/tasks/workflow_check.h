/* workflow_check: what makes a workflow definition refusable, found before
 * anything is written, every problem at once: a duplicate or unknown node
 * id, a cycle (named by its nodes), a join that can never be satisfied, an
 * argsFrom that names no predecessor, an unknown output node. */
#ifndef SILT_WORKFLOW_CHECK_H
#define SILT_WORKFLOW_CHECK_H
#include <stdbool.h>
#include <stddef.h>

typedef struct wf_node {
    const char        *id;
    const char *const *waits_for;   /* predecessor ids */
    size_t             nwaits;
    const char        *join;        /* "all", "any" or "quorum" */
    int                min_success; /* quorum */
    const char *const *args_from;   /* the predecessor each argsFrom parameter names */
    size_t             nargs_from;
    bool               args_object; /* args is a JSON object (argsFrom merges into it) */
} wf_node;

typedef struct wf_problems {
    char  **items;   /* one sentence each */
    size_t  n;
} wf_problems;

/* Appends every problem of the definition to out; returns how many. */
size_t workflow_check(const wf_node *nodes, size_t n, const char *on_error, const char *output, wf_problems *out);
void   wf_problems_fini(wf_problems *p);

#endif
