// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * status.c — what the system says about cos and sched_ext, read from sysfs and bpffs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int cos_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int err = 0;

	buf[0] = '\0';
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		err = ferror(f) ? -EIO : 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return err;
}

static bool exists(const char *root, const char *path)
{
	char p[512];

	snprintf(p, sizeof(p), "%s%s", root, path);
	return access(p, F_OK) == 0;
}

int cos_sys_status_at(const char *root, struct cos_sys_status *st)
{
	char p[512];

	memset(st, 0, sizeof(*st));
	st->sched_ext = exists(root, "/sys/kernel/sched_ext");
	st->module_loaded = exists(root, "/sys/module/cos");
	st->device = exists(root, COS_DEVICE_PATH);
	st->shim_pinned = exists(root, COS_SHIM_PIN_PATH);
	if (st->sched_ext) {
		snprintf(p, sizeof(p), "%s/sys/kernel/sched_ext/state", root);
		cos_read_line(p, st->state, sizeof(st->state));
		snprintf(p, sizeof(p), "%s/sys/kernel/sched_ext/root/ops", root);
		if (cos_read_line(p, st->ops, sizeof(st->ops)))
			st->ops[0] = '\0';	/* no scheduler: root/ does not exist */
	}
	st->shim_attached = !strcmp(st->state, "enabled") && !strcmp(st->ops, COS_SHIM_NAME);
	return 0;
}

COS_EXPORT int cos_sys_status(struct cos_sys_status *st)
{
	return cos_sys_status_at("", st);
}
