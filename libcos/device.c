// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * device.c — /dev/cos: open it and ask the module what it offers.
 */
#include <errno.h>
#include <fcntl.h>
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
