// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * device.c — /dev/cos: open it, ask the module what it offers and which COS tasks it knows.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

COS_EXPORT int cos_open(void)
{
	int fd = open(COS_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	int err = errno;

	if (fd >= 0)
		return fd;
	if (err == ENOENT && access("/sys/module/cos", F_OK))
		return cos_fail(-ENODEV, "cos module is not loaded (run 'modprobe cos' or 'insmod cos.ko')");
	if (err == ENOENT)
		return cos_fail(-ENOENT, "cos module is loaded but %s is missing (is devtmpfs mounted?)",
				COS_DEVICE_PATH);
	if (err == EACCES || err == EPERM)
		return cos_fail(-err, "cannot open %s: %s (it needs root, or CAP_SYS_NICE and access to the node)",
				COS_DEVICE_PATH, strerror(err));
	return cos_fail(-err, "cannot open %s: %s", COS_DEVICE_PATH, strerror(err));
}

COS_EXPORT int cos_get_info(int fd, struct cos_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (ioctl(fd, COS_IOC_GET_INFO, info))
		return cos_fail(-errno, "COS_IOC_GET_INFO failed: %s", strerror(errno));
	return 0;
}

COS_EXPORT int cos_get_tasks(int fd, struct cos_task_info **tasks, size_t *nr)
{
	struct cos_task_info *all = NULL, *grown;
	size_t n = 0, cap = 0;
	unsigned int start = 0;

	*tasks = NULL;
	*nr = 0;
	for (;;) {
		struct cos_tasks_args args = {
			.size = sizeof(args),
			.start = start,
			.capacity = COS_TASKS_BATCH_MAX,
		};

		if (cap - n < COS_TASKS_BATCH_MAX) {
			cap = cap ? cap * 2 : COS_TASKS_BATCH_MAX;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown) {
				free(all);
				return cos_fail(-ENOMEM, "out of memory listing COS tasks");
			}
			all = grown;
		}
		args.tasks = (unsigned long)(all + n);
		if (ioctl(fd, COS_IOC_GET_TASKS, &args)) {
			int err = errno;

			free(all);
			if (err == ENOTTY)
				return cos_fail(-EOPNOTSUPP, "the loaded cos module cannot list tasks "
						"(it predates COS_IOC_GET_TASKS): load the matching cos.ko");
			return cos_fail(-err, "COS_IOC_GET_TASKS failed: %s", strerror(err));
		}
		n += args.count;
		if (args.next <= start || args.count == 0)
			break;		/* walked to the end of the table */
		start = args.next;
	}
	if (!n) {
		free(all);
		all = NULL;
	}
	*tasks = all;
	*nr = n;
	return 0;
}

COS_EXPORT int cos_get_groups(int fd, struct cos_group_info **groups, size_t *nr)
{
	struct cos_group_info *all = NULL, *grown;
	unsigned long long start = 0;
	size_t n = 0, cap = 0;

	*groups = NULL;
	*nr = 0;
	for (;;) {
		struct cos_groups_args args = {
			.size = sizeof(args),
			.start = start,
			.capacity = COS_GROUPS_BATCH_MAX,
		};

		if (cap - n < COS_GROUPS_BATCH_MAX) {
			cap = cap ? cap * 2 : COS_GROUPS_BATCH_MAX;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown) {
				free(all);
				return cos_fail(-ENOMEM, "out of memory listing groups");
			}
			all = grown;
		}
		args.groups = (unsigned long)(all + n);
		if (ioctl(fd, COS_IOC_GET_GROUPS, &args)) {
			int err = errno;

			free(all);
			if (err == ENOTTY)
				return cos_fail(-EOPNOTSUPP, "the loaded cos module has no bandwidth groups "
						"(it predates COS_IOC_GET_GROUPS): load the matching cos.ko");
			return cos_fail(-err, "COS_IOC_GET_GROUPS failed: %s", strerror(err));
		}
		n += args.count;
		if (!args.next || args.next <= start)
			break;
		start = args.next;
	}
	if (!n) {
		free(all);
		all = NULL;
	}
	*groups = all;
	*nr = n;
	return 0;
}

COS_EXPORT const char *cos_task_state_name(unsigned int state)
{
	static const char *const names[] = {
		"FREE", "BLOCKED", "WAITING", "QUEUED", "RUNNING", "FAIR",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

COS_EXPORT int cos_get_enclaves(int fd, struct cos_enclave_info **enclaves, size_t *nr)
{
	struct cos_enclave_info *all = NULL;
	unsigned int cap = 8;

	*enclaves = NULL;
	*nr = 0;
	for (;;) {
		struct cos_enclaves_args args = {
			.size = sizeof(args),
			.capacity = cap,
			.entry_size = sizeof(*all),
		};

		all = calloc(cap, sizeof(*all));
		if (!all)
			return cos_fail(-ENOMEM, "out of memory listing enclaves");
		args.enclaves = (unsigned long)all;
		if (ioctl(fd, COS_IOC_GET_ENCLAVES, &args)) {
			int err = errno;

			free(all);
			if (err == ENOTTY)
				return cos_fail(-EOPNOTSUPP, "the loaded cos module cannot list enclaves "
						"(it predates COS_IOC_GET_ENCLAVES): load the matching cos.ko");
			return cos_fail(-err, "COS_IOC_GET_ENCLAVES failed: %s", strerror(err));
		}
		if (args.count <= cap) {
			if (!args.count) {
				free(all);
				all = NULL;
			}
			*enclaves = all;
			*nr = args.count;
			return 0;
		}
		free(all);	/* more registered than fit: again, with room for all */
		cap = args.count;
	}
}

COS_EXPORT int cos_find_enclave(int fd, const char *name, struct cos_enclave_info *info)
{
	struct cos_enclave_info *all;
	char names[256] = "";
	size_t nr, i, used = 0;
	int err = cos_get_enclaves(fd, &all, &nr);

	if (err)
		return err;
	for (i = 0; i < nr; i++) {
		const char *n = all[i].name;

		if (!strcmp(n, name) || (!strncmp(n, "cos-", 4) && !strcmp(n + 4, name))) {
			*info = all[i];
			free(all);
			return 0;
		}
		if (used < sizeof(names))
			used += snprintf(names + used, sizeof(names) - used, "%s'%s'",
					 i ? ", " : "", n);
	}
	free(all);
	if (!nr)
		return cos_fail(-ENOENT, "no enclave named '%s': no lord is running", name);
	return cos_fail(-ENOENT, "no enclave named '%s' (running: %s)", name, names);
}
