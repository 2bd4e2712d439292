/* worker_guard: the commands of `silt worker` die with it, however it ends.
 *
 * A worker killed with SIGKILL (or by the OOM killer) runs no code of its
 * own, so the commands it started would run on, and recovery would start
 * the same task again beside them. The guard is a small process forked
 * when the worker starts, holding one end of a socket pair whose other end
 * only the worker keeps open (close-on-exec: no command inherits it). Each
 * command, before it execs, writes its process group to the socket; the
 * worker writes the group's removal once the command is reaped. When the
 * worker dies, the kernel closes its end, the guard reads end of file and
 * kills every process group still listed, then exits. Because a command
 * announces itself before it runs anything, there is no moment in which it
 * could start children the guard does not know of. */
#ifndef SILT_CLI_WORKER_GUARD_H
#define SILT_CLI_WORKER_GUARD_H
#include <sys/types.h>

/* Forks the guard; 0, or -1 (errno says why). Call before opening anything
 * the guard should not hold (it closes every other descriptor but stderr). */
int  wk_guard_start(void) __attribute__((warn_unused_result));
/* In a command's child, before exec: its process group is listed. */
void wk_guard_enter(pid_t pgid);
/* In the worker, once the group's leader ended and the group was killed.
 * 0, or -1 when the guard is gone (the worker's commands are unguarded). */
int  wk_guard_leave(pid_t pgid);

#endif
