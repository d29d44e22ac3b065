// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * group.c — bandwidth groups from user space: COS's rate groups are cgroup v2 cpu.max, so
 * setting a rate is a write to the cgroup's cpu.max (what container runtimes write too), and a
 * group the module lists (by cgroup id) is found again in cgroupfs by its directory's inode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "internal.h"

#define COS_CGROUP2_MAGIC	0x63677270	/* CGROUP2_SUPER_MAGIC */
#define COS_CGROUP_ROOT		"/sys/fs/cgroup"

COS_EXPORT int cos_group_set_rate(const char *cgroup, double rate_pct, unsigned int period_us)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char path[PATH_MAX], val[64];
	unsigned long long quota;
	struct statfs sfs;
	struct stat st;
	int fd, n, err;

	if (!period_us)
		period_us = 100000;
	if (period_us < 1000 || period_us > 1000000)
		return cos_fail(-EINVAL, "period %u us is outside the kernel's 1000..1000000", period_us);
	if (!(rate_pct >= 0) || rate_pct > 100.0 * (cpus > 0 ? cpus : 1))
		return cos_fail(-EINVAL, "rate %g %% is outside 0..%ld %% (100 %% per online CPU)",
				rate_pct, 100 * (cpus > 0 ? cpus : 1));
	if (stat(cgroup, &st) || !S_ISDIR(st.st_mode) || statfs(cgroup, &sfs) ||
	    sfs.f_type != COS_CGROUP2_MAGIC)
		return cos_fail(-ENOTDIR, "%s is no cgroup v2 directory", cgroup);
	n = snprintf(path, sizeof(path), "%s/cpu.max", cgroup);
	if (n < 0 || (size_t)n >= sizeof(path))
		return cos_fail(-ENAMETOOLONG, "path too long: %s", cgroup);
	if (access(path, F_OK))
		return cos_fail(-EOPNOTSUPP, "%s has no cpu.max: enable the cpu controller in its "
				"parent (echo +cpu > PARENT/cgroup.subtree_control)", cgroup);
	if (rate_pct == 0) {
		snprintf(val, sizeof(val), "max %u", period_us);
	} else {
		quota = (unsigned long long)(rate_pct * period_us / 100.0 + 0.5);
		if (quota < 1000)
			return cos_fail(-EINVAL, "rate %g %% of a %u us period is a quota of %llu us, "
					"under the kernel's least (1000 us): use a longer period",
					rate_pct, period_us, quota);
		snprintf(val, sizeof(val), "%llu %u", quota, period_us);
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return cos_fail(-errno, "cannot open %s: %s", path, strerror(errno));
	err = write(fd, val, strlen(val)) < 0 ? -errno : 0;
	close(fd);
	if (err)
		return cos_fail(err, "cannot write '%s' to %s: %s", val, path, strerror(-err));
	return 0;
}

/* nftw() has no user argument: the one walk at a time (libcos is not reentrant here). */
static __thread unsigned long long group_find_id;
static __thread char *group_find_buf;
static __thread size_t group_find_len;
static __thread int group_find_err;

static int group_find_fn(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	if (type != FTW_D || (unsigned long long)sb->st_ino != group_find_id)
		return 0;
	if (strlen(fpath) >= group_find_len) {
		group_find_err = -ENAMETOOLONG;
		return 1;
	}
	strcpy(group_find_buf, fpath);
	group_find_err = 0;
	return 1;
}

COS_EXPORT int cos_group_path(unsigned long long id, char *buf, size_t len)
{
	group_find_id = id;
	group_find_buf = buf;
	group_find_len = len;
	group_find_err = -ENOENT;
	nftw(COS_CGROUP_ROOT, group_find_fn, 16, FTW_PHYS | FTW_MOUNT);
	return group_find_err;
}
