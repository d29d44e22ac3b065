// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * partition.c — partial mode's cpuset partition: a cgroup (COS_PARTITION_PATH) whose CPUs the
 * kernel takes away from every task outside it, so that on those CPUs only COS tasks and per-CPU
 * kernel threads run.  In partial mode the kernel's fair class outranks sched_ext on every CPU;
 * without the partition a fair task would keep a shot COS task waiting.  See docs/design.md,
 * "Full and partial mode".
 *
 * cgroup v2 does the work: cpuset.cpus.partition = "root" on a child of the root cgroup makes its
 * CPUs exclusive (the root cgroup's tasks lose them).  Removing the partition moves its tasks
 * back to the root cgroup first, then rmdir gives the CPUs back.  The cpuset controller is
 * enabled in the root's subtree_control if it was not, and disabled again at removal (when
 * nothing else uses it); an xattr on the partition's directory remembers that cos enabled it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "internal.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CPUSET_XATTR	"trusted.cos.cpuset_enabled"	/* "1": cos enabled +cpuset at the root */
#define OURS_XATTR	"trusted.cos.partition"		/* "1": cos made this cgroup */
#define CPULIST_LEN	1024

static int cg_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		err = -errno;
	close(fd);
	return err;
}

static int part_read(const char *file, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), COS_PARTITION_PATH "/%s", file);
	return cos_read_line(path, buf, len);
}

/* Is @word one of the space-separated words of @list? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	nanosleep(&ts, NULL);
}

/* Move every process of cgroup @dir to the root cgroup; the first error other than ESRCH. */
static int move_procs_out(const char *dir)
{
	char path[4200], line[32];
	int err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		int e;

		line[strcspn(line, "\n")] = '\0';
		e = cg_write(CG_ROOT "/cgroup.procs", line);
		if (e && e != -ESRCH && !err)
			err = e;
	}
	fclose(f);
	return err;
}

/* rmdir @dir, waiting up to 2 s for exiting tasks to leave it. */
static int rmdir_wait(const char *dir)
{
	for (int i = 0; i < 200; i++) {
		if (!rmdir(dir) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			break;
		sleep_ms(10);
	}
	return -errno;
}

static _Thread_local int remove_err;	/* remove_one()'s first error */

/* nftw callback, children first (FTW_DEPTH): empty each cgroup, then remove it. */
static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	int err;

	(void)st;
	(void)ftw;
	if (type != FTW_DP)
		return 0;
	err = move_procs_out(path);
	if (!err)
		err = rmdir_wait(path);
	if (err && !remove_err)
		remove_err = cos_fail(err, "cannot remove cgroup %s: %s", path, strerror(-err));
	return 0;
}

/* Is the cgroup at COS_PARTITION_PATH one that cos made?  Another's is never touched. */
static bool part_is_ours(void)
{
	char v[4] = "";

	return getxattr(COS_PARTITION_PATH, OURS_XATTR, v, sizeof(v) - 1) > 0 && v[0] == '1';
}

int cos_partition_ours(void)
{
	if (access(COS_PARTITION_PATH, F_OK))
		return -ENOENT;
	return part_is_ours();
}

COS_EXPORT int cos_partition_remove(void)
{
	char flag[4] = "";
	int err;

	if (access(COS_PARTITION_PATH, F_OK))
		return cos_fail(-ENOENT, "no cpuset partition at " COS_PARTITION_PATH);
	if (!part_is_ours())
		return cos_fail(-EEXIST, COS_PARTITION_PATH " is a cgroup cos did not make: "
				"cos leaves it alone");
	getxattr(COS_PARTITION_PATH, CPUSET_XATTR, flag, sizeof(flag) - 1);
	/* its tasks leave first, so that none of them is left without a CPU for a moment */
	remove_err = 0;
	nftw(COS_PARTITION_PATH, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	err = remove_err;
	if (!err && flag[0] == '1')
		cg_write(CG_ROOT "/cgroup.subtree_control", "-cpuset");	/* EBUSY: others use it */
	return err;
}

int cos_partition_setup(const void *set, size_t setsize)
{
	char want[CPULIST_LEN], have[CPULIST_LEN], buf[CPULIST_LEN], path[256];
	unsigned char *online = calloc(1, setsize);
	bool enabled = false, extra = false, all = true, any = false;
	int err;

	if (!online)
		return cos_fail(-ENOMEM, "out of memory");
	err = cos_online_cpus(online, setsize);
	for (size_t i = 0; !err && i < setsize; i++) {
		unsigned char c = ((const unsigned char *)set)[i];

		any |= c != 0;
		extra |= (c & ~online[i]) != 0;
		all &= (online[i] & ~c) == 0;
	}
	free(online);
	if (err)
		return err;
	if (cos_format_cpus(set, setsize, want, sizeof(want)))
		return cos_fail(-EINVAL, "partial mode: the CPU list is too long");
	if (!any)
		return cos_fail(-EINVAL, "partial mode needs the CPUs of its partition (--partial CPUS)");
	if (extra)
		return cos_fail(-EINVAL, "partial mode: CPUs %s are not all online", want);
	if (all)
		return cos_fail(-EINVAL, "partial mode: the partition cannot take every CPU (%s): "
				"the other tasks need one", want);
	if (cos_read_line(CG_ROOT "/cgroup.controllers", buf, sizeof(buf)))
		return cos_fail(-EOPNOTSUPP, "partial mode needs cgroup v2 mounted at " CG_ROOT);
	if (!has_word(buf, "cpuset"))
		return cos_fail(-EOPNOTSUPP, "partial mode needs the cpuset controller (CONFIG_CPUSETS)");

	if (!access(COS_PARTITION_PATH, F_OK)) {
		if (!part_is_ours())
			return cos_fail(-EEXIST, "partial mode needs " COS_PARTITION_PATH ", a cgroup "
					"that exists and that cos did not make: remove or rename it");
		/* left by a partial-mode attachment whose process died: reuse it if it is the same */
		if (!part_read("cpuset.cpus", have, sizeof(have)) && !strcmp(have, want) &&
		    !part_read("cpuset.cpus.partition", buf, sizeof(buf)) && !strcmp(buf, "root"))
			return 0;
		err = cos_partition_remove();
		if (err)
			return err;
	}
	if (cos_read_line(CG_ROOT "/cgroup.subtree_control", buf, sizeof(buf)))
		buf[0] = '\0';
	if (!has_word(buf, "cpuset")) {
		err = cg_write(CG_ROOT "/cgroup.subtree_control", "+cpuset");
		if (err)
			return cos_fail(err, "cannot enable the cpuset controller in " CG_ROOT ": %s",
					strerror(-err));
		enabled = true;
	}
	if (mkdir(COS_PARTITION_PATH, 0755)) {
		err = cos_fail(-errno, "cannot create " COS_PARTITION_PATH ": %s", strerror(errno));
		goto out_disable;
	}
	if (setxattr(COS_PARTITION_PATH, OURS_XATTR, "1", 1, 0)) {
		err = cos_fail(-errno, "cannot mark " COS_PARTITION_PATH " as cos's (%s xattr): %s",
			       OURS_XATTR, strerror(errno));
		rmdir(COS_PARTITION_PATH);
		goto out_disable;
	}
	if (enabled)
		setxattr(COS_PARTITION_PATH, CPUSET_XATTR, "1", 1, 0);
	snprintf(path, sizeof(path), COS_PARTITION_PATH "/cpuset.cpus");
	err = cg_write(path, want);
	if (err) {
		cos_fail(err, "cannot give CPUs %s to " COS_PARTITION_PATH ": %s", want, strerror(-err));
		goto out_remove;
	}
	snprintf(path, sizeof(path), COS_PARTITION_PATH "/cpuset.cpus.partition");
	err = cg_write(path, "root");
	if (!err && (part_read("cpuset.cpus.partition", buf, sizeof(buf)) || strcmp(buf, "root")))
		err = -EINVAL;
	if (err) {
		cos_fail(err, "the kernel refused CPUs %s as a cpuset partition: %s", want,
			 buf[0] ? buf : strerror(-err));
		goto out_remove;
	}
	return 0;

out_remove:
	cos_partition_remove();		/* disables the controller too (the xattr) */
	return err;
out_disable:
	cg_write(CG_ROOT "/cgroup.subtree_control", "-cpuset");
	return err;
}

COS_EXPORT int cos_partition_cpus(void *set, size_t setsize)
{
	char buf[CPULIST_LEN];

	if (part_read("cpuset.cpus.partition", buf, sizeof(buf)))
		return cos_fail(-ENOENT, "no cpuset partition at " COS_PARTITION_PATH
				" (partial mode sets it up: 'cosctl shim attach --partial CPUS')");
	if (strcmp(buf, "root"))
		return cos_fail(-EIO, "the cpuset partition " COS_PARTITION_PATH " is not valid: %s", buf);
	if (part_read("cpuset.cpus.effective", buf, sizeof(buf)) || cos_parse_cpus(buf, set, setsize))
		return cos_fail(-EIO, "cannot read the CPUs of " COS_PARTITION_PATH);
	return 0;
}

COS_EXPORT int cos_partition_enter(int pid)
{
	char val[16];
	int err;

	snprintf(val, sizeof(val), "%d", pid);
	err = cg_write(COS_PARTITION_PATH "/cgroup.procs", val);
	if (err == -ENOENT)
		return cos_fail(err, "no cpuset partition at " COS_PARTITION_PATH
				" (partial mode sets it up: 'cosctl shim attach --partial CPUS')");
	if (err)
		return cos_fail(err, "cannot move process %d into " COS_PARTITION_PATH ": %s",
				pid ? pid : (int)getpid(), strerror(-err));
	return 0;
}

COS_EXPORT int cos_shim_partial(void)
{
	struct cos_sys_status st;
	char all[8];

	cos_sys_status(&st);
	if (!st.shim_attached)
		return -ENOENT;
	if (cos_read_line("/sys/kernel/sched_ext/switch_all", all, sizeof(all)))
		return -ENOENT;
	return strcmp(all, "0") ? 0 : 1;
}
