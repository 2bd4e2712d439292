/* Unit: the checks that refuse a workflow definition before anything is
 * written (src/tasks/workflow_check.c), every problem at once. */
#include <string.h>
#include "harness.h"
#include "tasks/workflow_check.h"

#define W(...) (const char *const[]){ __VA_ARGS__ }

/* The problems of nodes, joined by " | ". */
static const char *problems_of(const wf_node *nodes, size_t n, const char *on_error, const char *output)
{
    static char text[4096];
    wf_problems p = { 0 };
    workflow_check(nodes, n, on_error, output, &p);
    text[0] = '\0';
    for (size_t i = 0; i < p.n; i++) {
        if (i) strcat(text, " | ");
        strncat(text, p.items[i], sizeof text - strlen(text) - 4);
    }
    wf_problems_fini(&p);
    return text;
}

TEST(workflow_check_accepts_a_diamond_with_every_join)
{
    wf_node nodes[] = {
        { "a", NULL, 0, "all", 0, NULL, 0, true },
        { "b", W("a"), 1, "all", 0, W("a"), 1, true },
        { "c", W("a"), 1, "any", 0, NULL, 0, true },
        { "d", W("b", "c"), 2, "quorum", 1, W("a", "b"), 2, true },
    };
    CHECK_STR(problems_of(nodes, 4, "FAIL", "d"), "");
}

TEST(workflow_check_names_duplicate_and_unknown_nodes)
{
    wf_node nodes[] = {
        { "a", NULL, 0, "all", 0, NULL, 0, true },
        { "a", NULL, 0, "all", 0, NULL, 0, true },
        { "b", W("zz"), 1, "all", 0, NULL, 0, true },
    };
    CHECK_STR(problems_of(nodes, 3, "FAIL", "nope"),
              "output names \"nope\", which is not a node | node \"a\" is defined twice"
              " | node \"b\" waits for \"zz\", which is not a node");
}

TEST(workflow_check_refuses_a_predecessor_named_twice)
{
    wf_node nodes[] = {
        { "a", NULL, 0, "all", 0, NULL, 0, true },
        { "b", W("a", "a"), 2, "all", 0, NULL, 0, true },
    };
    CHECK_STR(problems_of(nodes, 2, "FAIL", NULL), "node \"b\" waits for \"a\" twice");
}

TEST(workflow_check_names_a_cycle_by_its_nodes)
{
    wf_node nodes[] = {
        { "a", W("c"), 1, "all", 0, NULL, 0, true },
        { "b", W("a"), 1, "all", 0, NULL, 0, true },
        { "c", W("b"), 1, "all", 0, NULL, 0, true },
    };
    CHECK_STR(problems_of(nodes, 3, NULL, NULL), "the nodes wait for each other in a cycle: a -> c -> b -> a");
    wf_node self[] = { { "x", W("x"), 1, "all", 0, NULL, 0, true } };
    CHECK_STR(problems_of(self, 1, NULL, NULL), "the nodes wait for each other in a cycle: x -> x");
}

TEST(workflow_check_refuses_joins_that_can_never_be_met)
{
    wf_node nodes[] = {
        { "a", NULL, 0, "all", 0, NULL, 0, true },
        { "b", W("a"), 1, "quorum", 2, NULL, 0, true },
        { "c", W("a"), 1, "quorum", 0, NULL, 0, true },
        { "d", NULL, 0, "any", 0, NULL, 0, true },
        { "e", W("a"), 1, "most", 0, NULL, 0, true },
    };
    CHECK_STR(problems_of(nodes, 5, "FAIL", NULL),
              "node \"b\": minSuccess 2 can never be met by 1 predecessors (it must be 1 to 1)"
              " | node \"c\": minSuccess 0 can never be met by 1 predecessors (it must be 1 to 1)"
              " | node \"d\": join any needs predecessors (waitsFor)"
              " | node \"e\": join must be all, any or quorum");
}

TEST(workflow_check_refuses_args_from_a_node_that_does_not_run_before)
{
    wf_node nodes[] = {
        { "a", NULL, 0, "all", 0, NULL, 0, true },
        { "b", NULL, 0, "all", 0, W("a"), 1, true },
        { "c", W("a"), 1, "all", 0, W("a"), 1, false },
    };
    CHECK_STR(problems_of(nodes, 3, "STOP", NULL),
              "onError must be FAIL or PAUSE | node \"b\": argsFrom names \"a\", which does not run before it"
              " | node \"c\": argsFrom needs args to be an object");
}

TEST(workflow_check_refuses_an_empty_workflow)
{
    CHECK_STR(problems_of(NULL, 0, "FAIL", NULL), "a workflow needs at least one node");
}
