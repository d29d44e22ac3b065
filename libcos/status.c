// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * status.c — what the system says about cos and sched_ext, read from sysfs and bpffs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#ifndef COS_VERSION
#define COS_VERSION "unknown"	/* the Makefile passes dkms.conf's PACKAGE_VERSION */
#endif

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

COS_EXPORT const char *cos_version(void)
{
	return COS_VERSION;
}

/* COS_FEAT_* by bit, as `cosctl status` names them */
static const char *const feature_names[64] = {
	[0] = "kfuncs",		[1] = "lord",		[2] = "shim-attached",
	[3] = "cpu-msgs",	[4] = "wake-rules",	[5] = "shoot-replace",
	[6] = "shoot-latch",	[7] = "bandwidth",	[8] = "lazy-wake",
	[9] = "waker",		[10] = "enclave-names",	[11] = "enclaves",
	[12] = "wake-handoff",	[13] = "wake-handoff-block", [14] = "wake-preempt",
	[15] = "wake-next",
};

COS_EXPORT const char *cos_feature_name(unsigned int bit)
{
	return bit < 64 ? feature_names[bit] : NULL;
}

COS_EXPORT void cos_print_version(FILE *f, const char *prog)
{
	char abi[16];

	fprintf(f, "%s (cos) %s\n", prog, COS_VERSION);
	if (cos_read_line("/sys/module/cos/version", abi, sizeof(abi)) || !abi[0])
		fprintf(f, "ABI %d (libcos); cos.ko not loaded\n", COS_ABI_VERSION);
	else
		fprintf(f, "ABI %d (libcos); cos.ko loaded, ABI %s%s\n", COS_ABI_VERSION, abi,
			atoi(abi) == COS_ABI_VERSION ? "" : " (they differ: libcos refuses it)");
}
