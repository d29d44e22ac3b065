/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cosctl.h — what cosctl's files share: each command's entry point and usage text, and the
 * helpers more than one file uses.  cosctl.c has main() and the helpers; one file per command
 * group has its commands (see the Makefile's list).  See docs/operating.md, "cosctl".
 */
#ifndef TOOLS_COSCTL_H
#define TOOLS_COSCTL_H

#include <stddef.h>

#include <jansson.h>

/* cosctl.c: what every command may use */

/*
 * A JSON string of @s.  Names from the kernel (a task's comm, a scheduler's name) are bytes,
 * not always UTF-8: a byte that does not start a valid UTF-8 sequence becomes U+FFFD.
 */
json_t *json_text(const char *s);

/* Print @j (compact, one line) and free it. */
void json_print(json_t *j);

/* Say what went wrong (a libcos error): exit status 1. */
int fail(int err);

/*
 * Each command: cmd_NAME(argc, argv, json) runs `cosctl NAME` with its words (the global
 * options taken out) and returns the exit status; NAME_usage[] is its --help text.
 */

/* cosctl_status.c */
extern const char status_usage[], tasks_usage[];
int cmd_status(int argc, char **argv, int json);
int cmd_tasks(int argc, char **argv, int json);

/* cosctl_groups.c */
extern const char groups_usage[];
int cmd_groups(int argc, char **argv, int json);

/* cosctl_module.c */
extern const char load_usage[], unload_usage[];
int cmd_load(int argc, char **argv, int json);
int cmd_unload(int argc, char **argv, int json);

/* cosctl_shim.c */
extern const char shim_usage[];
int cmd_shim(int argc, char **argv, int json);

/* cosctl_run.c */
extern const char run_usage[];
int cmd_run(int argc, char **argv, int json);

/* cosctl_stats.c */
extern const char stats_usage[], metrics_usage[];
int cmd_stats(int argc, char **argv, int json);
int cmd_metrics(int argc, char **argv, int json);

/*
 * The sockets of the lords (of enclave @name or cos-@name, if not NULL) whose names end in
 * @suffix (".stats", ".trace") in COS_STATS_DIR, in *@paths (malloc()ed).  Return: how many.
 */
size_t lord_sockets(const char *name, const char *suffix, char ***paths);

/* cosctl_trace.c */
extern const char trace_usage[];
int cmd_trace(int argc, char **argv, int json);

#endif /* TOOLS_COSCTL_H */
