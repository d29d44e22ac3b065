// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * proc.c — facts about a process from /proc: its start time (with the pid, what names it across
 * pid reuse) and its cgroup (v2).  Used by the hint reader and the OCI hook.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

COS_EXPORT int cos_proc_start_time(int pid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;	/* the name may hold spaces and parens */
	/* after ") ": state(3) ... starttime(22): skip 19 fields */
	for (n = 0; p && n < 19; n++)
		p = strchr(p + 1, ' ');
	return p && sscanf(p, " %llu", start) == 1 ? 0 : -ESRCH;
}

COS_EXPORT int cos_proc_cgroup(int pid, char *buf, size_t len)
{
	char path[64], line[PATH_MAX + 8];
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0::/", 4))
			continue;
		err = strlen(line + 3) < len ? 0 : -ENAMETOOLONG;
		if (!err)
			strcpy(buf, line + 3);
		break;
	}
	fclose(f);
	return err;
}
