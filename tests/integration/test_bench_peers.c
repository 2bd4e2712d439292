/* Integration: scripts/bench-peers.sh (make bench-peers) checks what it is
 * given before anything else. The benchmark itself installs graphile-worker
 * and pg-boss from npm and runs for minutes, so it is not part of make test;
 * what is tested here is that a wrong call costs nothing: it is refused with
 * status 2 and a reason before npm, a cluster or a temporary directory is
 * touched. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

static int refused(const char *env_and_args, const char *reason)
{
    static char out[4096];
    /* An npm folder that cannot exist: were the checks after the install,
     * the call would fail differently (and say so). */
    int code = run_cmd(sfmt("BENCH_PEERS_NPM_DIR=/nonexistent/bench-peers %s 2>&1", env_and_args), out, sizeof out);
    if (code != 2 || !strstr(out, reason)) fprintf(stderr, "    %s -> %d: %s\n", env_and_args, code, out);
    return code == 2 && strstr(out, reason) != NULL;
}

TEST(bench_peers_refuses_a_wrong_call_before_installing_or_starting_anything)
{
    if (access("scripts/bench-peers.sh", X_OK) != 0) {
        printf("    note: scripts/bench-peers.sh not here (run from the repository root): not checked\n");
        return;
    }
    CHECK(refused("scripts/bench-peers.sh", "usage: scripts/bench-peers.sh BINARY"));
    CHECK(refused(sfmt("scripts/bench-peers.sh '%s' extra", silt_bin()), "usage: scripts/bench-peers.sh BINARY"));
    CHECK(refused("scripts/bench-peers.sh /nonexistent/silt", "is not executable"));
    CHECK(refused(sfmt("BENCH_PEERS_ROUNDS=0 scripts/bench-peers.sh '%s'", silt_bin()),
                  "BENCH_PEERS_ROUNDS must be a positive integer"));
    CHECK(refused(sfmt("BENCH_PEERS_SYSTEMS='silt river' scripts/bench-peers.sh '%s'", silt_bin()),
                  "unknown system \"river\""));
}
