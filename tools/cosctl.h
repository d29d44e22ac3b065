/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cosctl.h — what cosctl's files share: cosctl.c has the commands and main(), cosctl_trace.c
 * the trace command.
 */
#ifndef TOOLS_COSCTL_H
#define TOOLS_COSCTL_H

#include <stddef.h>

/*
 * The sockets of the lords (of enclave @name or cos-@name, if not NULL) whose names end in
 * @suffix (".stats", ".trace") in COS_STATS_DIR, in *@paths (malloc()ed).  Return: how many.
 */
size_t lord_sockets(const char *name, const char *suffix, char ***paths);

extern const char trace_usage[];
int cmd_trace(int argc, char **argv, int json);

#endif /* TOOLS_COSCTL_H */
