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
#include <stdlib.h>
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

/*
 * nftw() has no user argument: the walk's state is per thread (one walk at a time per thread).
 * The groups are sorted by id, as the module lists them, so each directory is one bsearch.
 */
static __thread struct {
	const struct cos_group_info *groups;
	size_t n;
	char **paths;
	int err;
} group_walk;

static int group_id_cmp(const void *key, const void *elem)
{
	unsigned long long id = *(const unsigned long long *)key;
	unsigned long long other = ((const struct cos_group_info *)elem)->id;

	return id < other ? -1 : id > other;
}

static int group_walk_fn(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	unsigned long long id = sb->st_ino;
	const struct cos_group_info *g;
	size_t i;

	if (type != FTW_D)
		return 0;
	g = bsearch(&id, group_walk.groups, group_walk.n, sizeof(*g), group_id_cmp);
	if (!g)
		return 0;
	i = g - group_walk.groups;
	if (!group_walk.paths[i] && !(group_walk.paths[i] = strdup(fpath))) {
		group_walk.err = -ENOMEM;
		return 1;
	}
	return 0;
}

COS_EXPORT int cos_group_paths(const struct cos_group_info *groups, size_t n, char **paths)
{
	for (size_t i = 0; i < n; i++)
		paths[i] = NULL;
	group_walk.groups = groups;
	group_walk.n = n;
	group_walk.paths = paths;
	group_walk.err = 0;
	if (n)
		nftw(COS_CGROUP_ROOT, group_walk_fn, 16, FTW_PHYS | FTW_MOUNT);
	if (group_walk.err) {
		for (size_t i = 0; i < n; i++) {
			free(paths[i]);
			paths[i] = NULL;
		}
		return cos_fail(group_walk.err, "out of memory naming %zu cgroups", n);
	}
	return 0;
}
