// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * shim.c — load the embedded BPF shim (shim/cos_shim.bpf.c, as a libbpf skeleton) and attach it
 * as the system's sched_ext scheduler; detach it; pin it so that it outlives the process.
 * See docs/design.md, "The shim".
 *
 * sched_ext reports a failing ops.init through the exit info, not through the attach call: the
 * link is created and the scheduler is already gone.  So after attaching we read the exit kind
 * the shim's ops.exit recorded, and turn a non-zero one into an error.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "internal.h"
#include "../shim/cos_shim_intf.h"	/* struct cos_exit_info, COS_SHIM_OPS_ENQ_LAST */
#include "cos_shim.skel.h"

struct cos_shim {
	struct cos_shim_bpf *skel;
	struct bpf_link *link;
	bool partial;		/* partial mode: detaching removes the partition */
};

/* Does @opts, of its own size, carry @field?  (struct cos_shim_opts grows at its end.) */
#define OPTS_HAS(opts, field) \
	((opts) && (opts)->size >= offsetof(struct cos_shim_opts, field) + sizeof((opts)->field))

/* libbpf's last warning, to explain a failed load; libbpf logs only with COS_DEBUG set. */
static _Thread_local char bpf_msg[512];

static int shim_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];

	if (getenv("COS_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	if (level > LIBBPF_WARN)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	if (line[0])
		snprintf(bpf_msg, sizeof(bpf_msg), "%s", line);
	return 0;
}

/*
 * Does @btf have kfunc @name with @nr_args parameters, as the shim declares it?  libbpf
 * resolves a weak __ksym only to a compatible prototype, so this is the shim's cos_have():
 * Debian's 7.2.x describes scx_bpf_create_dsq with a third, implicit argument, and the shim
 * cannot call it there (shim/shim_compat.h).
 */
static bool btf_has_kfunc(const struct btf *btf, const char *name, unsigned int nr_args)
{
	const struct btf_type *t;
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);

	if (id <= 0)
		return false;
	t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	return t && btf_is_func_proto(t) && btf_vlen(t) == nr_args;
}

/*
 * Can this kernel's shim enforce cgroup bandwidth?  The shim's ops.init decides the same from
 * the same two kfuncs (shim/cos_shim.bpf.c, cos_bw_enforced); here it decides the one
 * struct_ops field fixed at load, the flags.
 */
static bool shim_kernel_enforces_bandwidth(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool yes;

	if (!vmlinux)
		return false;
	yes = btf_has_kfunc(vmlinux, "scx_bpf_create_dsq", 2) &&
	      btf_has_kfunc(vmlinux, "bpf_iter_scx_dsq_new", 3);
	btf__free(vmlinux);
	return yes;
}

/* Refuse early, with a clear reason, what the kernel would refuse obscurely. */
static int shim_precheck(const struct cos_shim_opts *opts)
{
	struct cos_sys_status st;
	struct cos_info info;
	int fd, err;

	cos_sys_status(&st);
	if (!st.sched_ext)
		return cos_fail(-EOPNOTSUPP, "this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT=y is needed)");
	if (!st.module_loaded)
		return cos_fail(-ENODEV, "cos module is not loaded (run 'modprobe cos' or 'insmod cos.ko')");
	if (st.shim_attached)
		return cos_fail(-EBUSY, "the cos shim is already attached%s",
				st.shim_pinned ? " (pinned: 'cosctl shim detach' releases it)" : "");
	if (st.ops[0] && strcmp(st.state, "disabled"))
		return cos_fail(-EBUSY, "another sched_ext scheduler (%s) is %s: stop it first (scx's: "
				"systemctl stop scx.service, or scxctl stop)", st.ops, st.state);
	fd = cos_open();
	if (fd < 0)
		return fd == -EACCES || fd == -EPERM ?
			cos_fail(-EPERM, "attaching the shim needs root (CAP_SYS_NICE, CAP_BPF, CAP_SYS_ADMIN)") : fd;
	err = cos_get_info(fd, &info);
	close(fd);
	if (err)
		return err;
	if (info.abi_version != COS_ABI_VERSION && !(opts && opts->abi_expected))
		return cos_fail(-EPROTO, "cos module speaks ABI %u but libcos speaks ABI %u: install matching versions",
				info.abi_version, COS_ABI_VERSION);
	return 0;
}

/*
 * Tell cos.ko which struct_ops map is its shim (COS_IOC_SHIM_BIND): it serves only that map's
 * programs, so a look-alike scheduler attached some other way gets nothing of it.
 */
static int shim_name_map(const struct bpf_map *map)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	struct cos_shim_bind bind = {};
	int fd, err;

	if (bpf_map_get_info_by_fd(bpf_map__fd(map), &info, &len))
		return cos_fail(-errno, "cannot read the shim's map id: %s", strerror(errno));
	fd = cos_open();
	if (fd < 0)
		return fd;
	bind.map_id = info.id;
	err = ioctl(fd, COS_IOC_SHIM_BIND, &bind) ? -errno : 0;
	close(fd);
	if (err == -EBUSY)
		return cos_fail(err, "cos module serves another shim already");
	if (err)
		return cos_fail(err, "cos module refused the shim's map (COS_IOC_SHIM_BIND): %s",
				strerror(-err));
	return 0;
}

COS_EXPORT int cos_shim_attach(struct cos_shim **shimp, const struct cos_shim_opts *opts)
{
	const struct cos_exit_info *ei;
	libbpf_print_fn_t old_print;
	struct cos_shim *shim;
	bool partial;
	long ncpus;
	int err;

	*shimp = NULL;
	if (opts && opts->size < sizeof(size_t))
		return cos_fail(-EINVAL, "cos_shim_opts.size is not set");
	err = shim_precheck(opts);
	if (err)
		return err;
	partial = OPTS_HAS(opts, flags) && (opts->flags & COS_SHIM_F_PARTIAL);
	if (OPTS_HAS(opts, flags) && (opts->flags & ~COS_SHIM_F_PARTIAL))
		return cos_fail(-EINVAL, "cos_shim_opts.flags: unknown flags 0x%x",
				opts->flags & ~COS_SHIM_F_PARTIAL);
	/*
	 * The partition first: a COS task made in partial mode must find it.  A full-mode attach
	 * removes one a killed partial-mode attachment left behind (its CPUs would stay fenced).
	 */
	if (partial) {
		if (!OPTS_HAS(opts, partition_size) || !opts->partition || !opts->partition_size)
			return cos_fail(-EINVAL, "partial mode needs the CPUs of its partition");
		err = cos_partition_setup(opts->partition, opts->partition_size);
		if (err)
			return err;
	} else if (cos_partition_ours() == 1 && (err = cos_partition_remove())) {
		return err;
	}
	shim = calloc(1, sizeof(*shim));
	if (!shim) {
		err = cos_fail(-ENOMEM, "out of memory");
		goto out_partition;
	}
	shim->partial = partial;

	bpf_msg[0] = '\0';
	old_print = libbpf_set_print(shim_libbpf_print);
	shim->skel = cos_shim_bpf__open();
	if (!shim->skel) {
		err = cos_fail(-errno, "cannot open the embedded shim: %s", strerror(errno));
		goto out_free;
	}
	if (opts && opts->slice_ns)
		shim->skel->rodata->cos_slice_ns = opts->slice_ns;
	/* the fair policy's lag bound scales with it (shim/cos_shim.bpf.c) */
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	shim->skel->rodata->cos_nr_cpus = ncpus > 0 ? ncpus : 1;
	if (opts && opts->abi_expected)
		shim->skel->rodata->cos_abi_expected = opts->abi_expected;
	/*
	 * SCX_OPS_ENQ_LAST exists for throttling only (a throttled task must leave a CPU that has
	 * nothing else to run).  Elsewhere it only costs: Debian's 7.2.12 does not run a task that
	 * ops.enqueue(SCX_ENQ_LAST) puts on the local DSQ once the CPU has picked idle (7.3 flags
	 * the pick), so the task waits for the CPU's next wake-up.
	 */
	if (!shim_kernel_enforces_bandwidth())
		shim->skel->struct_ops.cos_ops->flags &= ~COS_SHIM_OPS_ENQ_LAST;
	if (partial)
		shim->skel->struct_ops.cos_ops->flags |= COS_SHIM_OPS_SWITCH_PARTIAL;
	err = cos_shim_bpf__load(shim->skel);
	if (err) {
		err = -errno ?: err;
		if (err == -EPERM || err == -EACCES)
			cos_fail(-EPERM, "loading the shim needs CAP_BPF and CAP_SYS_ADMIN (run as root)");
		else
			cos_fail(err, "the kernel refused the shim: %s (%s)", strerror(-err),
				 bpf_msg[0] ? bpf_msg : "set COS_DEBUG=1 for libbpf's log");
		goto out_destroy;
	}
	err = shim_name_map(shim->skel->maps.cos_ops);
	if (err)
		goto out_destroy;
	shim->link = bpf_map__attach_struct_ops(shim->skel->maps.cos_ops);
	if (!shim->link) {
		err = -errno;
		if (err == -EBUSY || err == -EEXIST || err == -EALREADY)
			cos_fail(-EBUSY, "another sched_ext scheduler is attached: stop it first "
				 "(scx's: systemctl stop scx.service, or scxctl stop)");
		else
			cos_fail(err, "cannot attach the shim: %s (%s)", strerror(-err),
				 bpf_msg[0] ? bpf_msg : "set COS_DEBUG=1 for libbpf's log");
		goto out_destroy;
	}
	ei = &shim->skel->data->cos_exit_info;
	if (__atomic_load_n(&ei->kind, __ATOMIC_ACQUIRE)) {	/* pairs with ops.exit's barrier */
		/* ops.init failed: only reason the scheduler is gone already (see the top comment). */
		err = strstr(ei->msg, "(-71)") ? -EPROTO : -EIO;
		cos_fail(err, "the shim stopped at once: %s: %s%s", ei->reason, ei->msg,
			 err == -EPROTO ? " (cos module and shim ABI versions differ)" : "");
		bpf_link__destroy(shim->link);
		goto out_destroy;
	}
	libbpf_set_print(old_print);
	*shimp = shim;
	return 0;

out_destroy:
	cos_shim_bpf__destroy(shim->skel);
out_free:
	libbpf_set_print(old_print);
	free(shim);
out_partition:
	if (partial)
		cos_partition_remove();
	return err;
}

COS_EXPORT int cos_shim_pin(struct cos_shim *shim, const char *path)
{
	int err;

	path = path ?: COS_SHIM_PIN_PATH;
	if (!access(path, F_OK))
		return cos_fail(-EEXIST, "%s exists: a shim is pinned already", path);
	err = bpf_link__pin(shim->link, path);
	if (err)
		return cos_fail(err, "cannot pin the shim at %s: %s (is bpffs mounted on /sys/fs/bpf?)",
				path, strerror(-err));
	return 0;
}

/* Files of /dev/cos this process holds: each holds a reference to cos.ko. */
static long own_device_files(void)
{
	char path[300], target[64];
	struct dirent *d;
	long n = 0;
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = 0;
			n += !strcmp(target, "/dev/" COS_DEVICE_NAME);
		}
	}
	closedir(dir);
	return n;
}

/*
 * After a detach, wait (at most 3 s) until cos.ko's references drop to this process's own
 * files: the shim's programs hold references that the kernel drops after an RCU grace period,
 * and `cosctl shim detach; rmmod cos` would otherwise find the module busy.  Others holding
 * /dev/cos keep it busy anyway: the wait then ends at its bound.
 */
static void wait_module_released(void)
{
	long own = own_device_files();

	for (int i = 0; i < 300; i++) {
		FILE *f = fopen("/sys/module/cos/refcnt", "r");
		long refs = -1;

		if (!f)
			return;	/* no module (built in, or gone) */
		if (fscanf(f, "%ld", &refs) != 1)
			refs = -1;
		fclose(f);
		if (refs <= own)
			return;
		usleep(10000);
	}
}

COS_EXPORT int cos_shim_detach(struct cos_shim *shim)
{
	bool detached, partial;
	int err = 0;

	if (!shim)
		return 0;
	/* A pinned link stays attached: destroy only drops this process's reference. */
	detached = shim->link && !bpf_link__pin_path(shim->link);
	partial = shim->partial;
	if (detached)
		bpf_link__detach(shim->link);
	bpf_link__destroy(shim->link);
	cos_shim_bpf__destroy(shim->skel);
	free(shim);
	if (detached) {
		/* the COS tasks are fair tasks again: now they may leave the partition */
		if (partial && (err = cos_partition_remove()) == -ENOENT)
			err = 0;
		wait_module_released();
	}
	return err;
}

COS_EXPORT int cos_shim_detach_pinned(const char *path)
{
	struct bpf_link *link;
	int err;

	libbpf_print_fn_t old_print;

	path = path ?: COS_SHIM_PIN_PATH;
	/* our message says what failed: libbpf's own (to stderr) would only repeat it */
	old_print = libbpf_set_print(NULL);
	link = bpf_link__open(path);
	err = link ? 0 : -errno;
	libbpf_set_print(old_print);
	if (!link) {
		/* a partition a killed partial-mode attachment left goes all the same */
		if (cos_partition_ours() == 1 && cos_shim_partial() < 0)
			cos_partition_remove();
		return err == -ENOENT ? cos_fail(-ENOENT, "no shim is pinned at %s (nothing to detach)", path) :
			cos_fail(err, "cannot open %s: %s", path, strerror(-err));
	}
	if (bpf_link__detach(link))
		err = cos_fail(-errno, "cannot detach the shim: %s", strerror(errno));
	unlink(path);
	bpf_link__destroy(link);
	if (!err) {
		if (cos_partition_ours() == 1)
			err = cos_partition_remove();
		wait_module_released();
	}
	return err;
}
