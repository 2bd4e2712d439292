/* The runner's own rules about the files tests leave, checked by running
 * this binary again as a runner of one test, in a TMPDIR of its own. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

/* The test the runner below runs: it writes a file in its scratch
 * directory, and fails when HARNESS_PROBE_FAIL is set (it passes in the
 * suite, where it is unset). */
TEST(harness_probe_writes_a_scratch_file)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/probe.txt", harness_scratch_dir());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL && fputs("kept when the test fails\n", f) >= 0 && fclose(f) == 0);
    CHECK(getenv("HARNESS_PROBE_FAIL") == NULL);
}

/* Entries of dir, but . and .. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Runs the probe in a runner of its own with TMPDIR tmp: its exit code,
 * its output in out. */
static int run_probe(const char *tmp, bool fail, char *out, size_t cap)
{
    char self[PATH_MAX], cmd[3 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    self[n] = '\0';
    snprintf(cmd, sizeof cmd, "TMPDIR='%s' HARNESS_ALONE= %s'%s' harness_probe_writes_a_scratch_file 2>&1", tmp,
             fail ? "HARNESS_PROBE_FAIL=1 " : "", self);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    size_t len = fread(out, 1, cap - 1, p);
    out[len] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A passed test's scratch directory is gone, and so is the run's: the
 * runner leaves nothing in TMPDIR. A failed one's is kept with its files
 * and named under the failure, and the run's directory with it. */
TEST(harness_removes_the_scratch_files_of_a_run_that_passed_and_keeps_and_names_a_failed_tests)
{
    char tmp[PATH_MAX], out[8192];
    snprintf(tmp, sizeof tmp, "%s/tmp", harness_scratch_dir());
    CHECK(mkdir(tmp, 0700) == 0);
    CHECK_INT(run_probe(tmp, false, out, sizeof out), 0);
    if (!strstr(out, "1 passed, 0 failed")) harness_failf(__FILE__, __LINE__, "the probe did not pass:\n%s", out);
    CHECK_INT(entries(tmp), 0);

    CHECK_INT(run_probe(tmp, true, out, sizeof out), 1);
    CHECK(strstr(out, "0 passed, 1 failed") != NULL);
    const char *named = strstr(out, "    its files are kept in ");
    if (!named) harness_failf(__FILE__, __LINE__, "no scratch directory named:\n%s", out);
    char kept[PATH_MAX];
    CHECK(sscanf(named, "    its files are kept in %4095s", kept) == 1);
    CHECK(strncmp(kept, tmp, strlen(tmp)) == 0);
    char probe[PATH_MAX + 16];
    snprintf(probe, sizeof probe, "%s/probe.txt", kept);
    CHECK(access(probe, F_OK) == 0);
    CHECK(strstr(out, "the failed tests' files are kept in ") != NULL);
    CHECK_INT(entries(tmp), 1);   /* the run's directory, with the failed test's in it */
}
