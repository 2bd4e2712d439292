/* cli: the command-line client subcommands. Each talks to a silt server over
 * HTTP (URL from SILT_URL, default http://localhost:6632) and returns a process
 * exit status: 0 ok, 1 the server refused or failed, 2 usage error. */
#ifndef SILT_CLI_H
#define SILT_CLI_H

int cli_push(int argc, char **argv);
int cli_pop(int argc, char **argv);
int cli_ack(int argc, char **argv);
int cli_configure(int argc, char **argv);
int cli_bench(int argc, char **argv);
/* The workload of the crash-safety check (chaos.c, scripts/chaos.sh). */
int cli_chaos(int argc, char **argv);
int cli_queues(int argc, char **argv);
int cli_groups(int argc, char **argv);
int cli_dlq(int argc, char **argv);
int cli_seek(int argc, char **argv);
int cli_tx(int argc, char **argv);
int cli_retention(int argc, char **argv);
/* The verbs of `silt retention` for task history (task_retention.c). */
int cli_task_retention_classes(int argc, char **argv);
int cli_task_retention_leaves(int argc, char **argv);
int cli_task_retention_coverage(int argc, char **argv);
int cli_task(int argc, char **argv);
/* The verbs of `silt task` that hold and resend work (task_control.c). */
int cli_task_pause(int argc, char **argv);
int cli_task_resume(int argc, char **argv);
int cli_task_paused(int argc, char **argv);
int cli_task_rerun(int argc, char **argv);
int cli_workers(int argc, char **argv);
int cli_worker(int argc, char **argv);
int cli_workflow(int argc, char **argv);
int cli_schedules(int argc, char **argv);
int cli_schedule(int argc, char **argv);
/* Needs no server: checks silt.conf (base/conffile.h). */
int cli_check_config(int argc, char **argv);

#endif
