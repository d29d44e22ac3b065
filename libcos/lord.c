// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * lord.c — the lord's side of /dev/cos: register, map the regions, read the ring, read the status
 * table, fill and commit shoot slots (ioctl, or io_uring's uring_cmd through liburing), wait.
 *
 * Memory ordering (the contract is in uapi/linux/cos.h): a ring message is valid once its seq,
 * read with an acquire load, equals the next expected number; consumed is published with a
 * release store; status entries are read under their seqcount.
 * See docs/design.md, "The lord's life", and docs/abi.md.
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <liburing.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

/* the lord thread's nice value while it is registered (lord_priority()) */
#define COS_LORD_NICE	(-20)

struct cos_lord {
	int fd;
	struct cos_lord_args args;
	struct cos_msg *ring;
	const struct cos_task_status *status;
	struct cos_shoot_slot *shoot;
	struct cos_ctl *ctl;
	uint64_t consumed;		/* last message handled */
	uint64_t mask_words;		/* words in @prepared */
	uint64_t *prepared;		/* CPUs with a prepared slot */
	bool uring;			/* commit shoots through @uring_ring (else the ioctl) */
	unsigned long long features;	/* the module's COS_FEAT_* when it registered us */
	struct io_uring uring_ring;	/* with @uring */
	pid_t tid;			/* the lord thread, when lord_priority() raised it */
	int old_nice;			/* its nice value before */
};

/*
 * COS_SUBMIT_URING: a small ring of our own; if io_uring is unavailable (disabled by sysctl,
 * seccomp) the lord commits with the ioctl, which has the same semantics.
 */
static void uring_setup(struct cos_lord *lord)
{
	lord->uring = io_uring_queue_init(4, &lord->uring_ring, 0) == 0;
}

/* One COS_URING_SHOOT, submitted and reaped in one io_uring_enter(). */
static int uring_shoot(struct cos_lord *lord, const struct cos_shoot_args *args)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&lord->uring_ring);
	struct cos_uring_shoot cmd = { .args = (uintptr_t)args };
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;	/* cannot happen: one in flight at a time */
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, lord->fd, NULL, 0, 0);
	sqe->cmd_op = COS_URING_SHOOT;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	ret = io_uring_submit_and_wait(&lord->uring_ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_peek_cqe(&lord->uring_ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&lord->uring_ring, cqe);
	return ret;
}

static void *map_region(int fd, uint64_t off, uint64_t size, int prot)
{
	void *p = mmap(NULL, size, prot, MAP_SHARED, fd, (off_t)off);

	return p == MAP_FAILED ? NULL : p;
}

/* The module refused @opts with EINVAL: say which rule they broke. */
static int lord_einval(const struct cos_lord_opts *opts)
{
	cpu_set_t enclave, online;
	char a[512], b[512];

	CPU_ZERO(&enclave);
	memcpy(&enclave, opts->enclave, opts->enclave_size < sizeof(enclave) ?
	       opts->enclave_size : sizeof(enclave));
	if (!CPU_COUNT(&enclave))
		return cos_fail(-EINVAL, "bad lord options: the enclave has no CPU");
	if (opts->lord_cpu < CPU_SETSIZE && CPU_ISSET(opts->lord_cpu, &enclave))
		return cos_fail(-EINVAL, "bad lord options: the lord's CPU %u is in the enclave "
				"(the lord needs a CPU of its own)", opts->lord_cpu);
	if (!cos_online_cpus(&online, sizeof(online))) {
		cos_format_cpus(&online, sizeof(online), b, sizeof(b));
		if (opts->lord_cpu >= CPU_SETSIZE || !CPU_ISSET(opts->lord_cpu, &online))
			return cos_fail(-EINVAL, "bad lord options: the lord's CPU %u is not online "
					"(online: %s)", opts->lord_cpu, b);
		for (int c = 0; c < CPU_SETSIZE; c++)	/* the enclave's CPUs that are not online */
			if (CPU_ISSET(c, &online))
				CPU_CLR(c, &enclave);
		if (CPU_COUNT(&enclave)) {
			cos_format_cpus(&enclave, sizeof(enclave), a, sizeof(a));
			return cos_fail(-EINVAL, "bad lord options: enclave CPU%s %s %s not online "
					"(online: %s)", CPU_COUNT(&enclave) > 1 ? "s" : "", a,
					CPU_COUNT(&enclave) > 1 ? "are" : "is", b);
		}
	}
	return cos_fail(-EINVAL, "bad lord options: unknown flags, stall_ms or starve_ms above "
			"10000, or ring_entries not a power of two in 64..1048576");
}

/*
 * In partial mode only the partition's CPUs are fenced off for COS tasks: an enclave CPU outside
 * it would run fair tasks before every shot task, and a lord inside it would compete with its
 * own tasks.  cos.ko does not know cgroups, so the check is here.
 */
static int lord_check_partition(const struct cos_lord_opts *opts)
{
	char a[256], b[256];
	unsigned char *part;
	const unsigned char *e = opts->enclave;
	bool outside = false;
	int err;

	if (cos_shim_partial() != 1)
		return 0;
	part = calloc(1, opts->enclave_size);
	if (!part)
		return cos_fail(-ENOMEM, "out of memory");
	err = cos_partition_cpus(part, opts->enclave_size);
	for (size_t i = 0; !err && i < opts->enclave_size; i++)
		outside |= (e[i] & ~part[i]) != 0;
	if (!err) {
		cos_format_cpus(opts->enclave, opts->enclave_size, a, sizeof(a));
		cos_format_cpus(part, opts->enclave_size, b, sizeof(b));
		if (outside)
			err = cos_fail(-EINVAL, "the shim runs in partial mode: the enclave (CPUs %s) must "
				       "be within the partition's CPUs %s", a, b);
		else if (opts->lord_cpu >= 0 && (size_t)opts->lord_cpu / 8 < opts->enclave_size &&
			 (part[opts->lord_cpu / 8] >> (opts->lord_cpu % 8) & 1))
			err = cos_fail(-EINVAL, "the shim runs in partial mode: the lord's CPU %d is in "
				       "the partition (CPUs %s), which is for COS tasks", opts->lord_cpu, b);
	}
	free(part);
	return err;
}

/*
 * REGISTER_LORD said EBUSY: which enclave holds a CPU we asked for (or our lord CPU, or has
 * its lord on one of ours)?  Names it, from COS_IOC_GET_ENCLAVES.
 */
static int lord_busy(int fd, const struct cos_lord_opts *opts)
{
	const unsigned char *mask = opts->enclave;
	struct cos_enclave_info *all = NULL;
	size_t nr = 0;
	int err = 0;

	if (cos_get_enclaves(fd, &all, &nr))
		nr = 0;
	for (size_t i = 0; i < nr && !err; i++) {
		const struct cos_enclave_info *e = &all[i];
		const unsigned int ncpus = 64 * sizeof(e->cpus) / sizeof(e->cpus[0]);
		int held = -1;

		for (unsigned int cpu = 0; cpu < ncpus && cpu / 8 < opts->enclave_size; cpu++)
			if ((mask[cpu / 8] >> (cpu % 8) & 1) && (e->cpus[cpu / 64] >> (cpu % 64) & 1)) {
				held = (int)cpu;
				break;
			}
		if ((pid_t)e->lord_pid == gettid())
			err = cos_fail(-EBUSY, "this thread is the lord of enclave '%s' already: a "
				       "thread leads one enclave", e->name);
		else if (held >= 0)
			err = cos_fail(-EBUSY, "CPU %d is in enclave '%s' (lord %d): enclaves may not "
				       "share CPUs", held, e->name, e->lord_pid);
		else if (opts->lord_cpu >= 0 && (unsigned int)opts->lord_cpu < ncpus &&
			 (e->cpus[opts->lord_cpu / 64] >> (opts->lord_cpu % 64) & 1))
			err = cos_fail(-EBUSY, "the lord CPU %d is in enclave '%s' (lord %d)",
				       opts->lord_cpu, e->name, e->lord_pid);
		else if (e->lord_cpu >= 0 && (unsigned int)e->lord_cpu / 8 < opts->enclave_size &&
			 (mask[e->lord_cpu / 8] >> (e->lord_cpu % 8) & 1))
			err = cos_fail(-EBUSY, "CPU %d is the lord CPU of enclave '%s' (lord %d)",
				       e->lord_cpu, e->name, e->lord_pid);
	}
	free(all);
	return err ?: cos_fail(-EBUSY, "another enclave holds one of these CPUs ('cosctl status')");
}

/* Check @name and put it into the registration (the module checks it again). */
static int lord_name(struct cos_lord *lord, const char *name)
{
	size_t n = strlen(name);

	if (!(lord->features & COS_FEAT_ENCLAVE_NAMES))
		return cos_fail(-EOPNOTSUPP, "the loaded cos module predates enclave names: "
				"load the matching cos.ko, or register without a name");
	if (n == 0 || n >= sizeof(lord->args.name))
		return cos_fail(-EINVAL, "enclave name '%s': 1 to %zu characters", name,
				sizeof(lord->args.name) - 1);
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
			return cos_fail(-EINVAL, "enclave name '%s': only letters, digits, "
					"'_', '.' and '-'", name);
	memcpy(lord->args.name, name, n + 1);
	return 0;
}

/*
 * The lord thread goes first on its CPU.  Under the shim in full mode it preempts whatever runs
 * there (COS_ENQ_LORD); where it is on the kernel's own scheduler (partial mode, or after the
 * shim left), it would wait for the turn of the tasks beside it, such as the clients of the
 * servers it schedules: nice -20 lets its wake-ups go first there too.  Only a thread on a fair
 * policy is raised, and lord_restore() puts its nice value back.  Best effort: registering
 * needs CAP_SYS_NICE, which allows it; a lord that stays at its nice value still works, later.
 */
static void lord_priority(struct cos_lord *lord)
{
	pid_t tid = gettid();
	int policy = sched_getscheduler(0), old;

	if (policy != SCHED_OTHER && policy != SCHED_BATCH)
		return;
	errno = 0;
	old = getpriority(PRIO_PROCESS, tid);
	if (errno || old <= COS_LORD_NICE || setpriority(PRIO_PROCESS, tid, COS_LORD_NICE))
		return;
	lord->tid = tid;
	lord->old_nice = old;
}

/* Back to the nice value lord_priority() found, unless someone has changed it since. */
static void lord_restore(struct cos_lord *lord)
{
	if (!lord->tid)
		return;
	errno = 0;
	if (getpriority(PRIO_PROCESS, lord->tid) == COS_LORD_NICE && !errno)
		setpriority(PRIO_PROCESS, lord->tid, lord->old_nice);
}

COS_EXPORT int cos_lord_register(struct cos_lord **lordp, const struct cos_lord_opts *opts)
{
	struct cos_lord *lord;
	int err;

	*lordp = NULL;
	if (!opts || opts->size < sizeof(size_t) + 2 * sizeof(int) || !opts->enclave)
		return cos_fail(-EINVAL, "cos_lord_register: options missing");
	err = lord_check_partition(opts);
	if (err)
		return err;
	lord = calloc(1, sizeof(*lord));
	if (!lord)
		return cos_fail(-ENOMEM, "out of memory");
	lord->fd = cos_open();
	if (lord->fd < 0) {
		err = lord->fd;
		free(lord);
		return err;
	}
	{
		struct cos_info info;

		if (cos_get_info(lord->fd, &info) == 0)
			lord->features = info.features;
	}
	lord->args.size = sizeof(lord->args);
	if (!(lord->features & COS_FEAT_ENCLAVE_NAMES))
		lord->args.size = COS_LORD_ARGS_SIZE_VER0;	/* the module predates names */
	if (opts->size >= offsetof(struct cos_lord_opts, name) + sizeof(opts->name) && opts->name) {
		err = lord_name(lord, opts->name);
		if (err) {
			close(lord->fd);
			free(lord);
			return err;
		}
	}
	lord->args.flags = opts->flags;
	lord->args.lord_cpu = opts->lord_cpu;
	lord->args.stall_ms = opts->stall_ms;
	lord->args.starve_ms = opts->starve_ms;
	lord->args.ring_entries = opts->ring_entries;
	lord->args.cpumask_size = opts->enclave_size;
	lord->args.cpumask = (uintptr_t)opts->enclave;
	/*
	 * A lord is never a COS task (it would wait in its own custody, and the module refuses
	 * one): a thread that inherited SCHED_EXT (cosctl run, a parent's policy) leaves it.
	 */
	if (sched_getscheduler(0) == COS_SCHED_EXT) {
		struct sched_param sp = { .sched_priority = 0 };

		if (sched_setscheduler(0, SCHED_OTHER, &sp)) {
			err = -errno;
			close(lord->fd);
			free(lord);
			return cos_fail(err, "the lord thread runs under SCHED_EXT and cannot leave it: %s",
					strerror(-err));
		}
	}
	if (ioctl(lord->fd, COS_IOC_REGISTER_LORD, &lord->args)) {
		char name[sizeof(lord->args.name)];
		unsigned long long features = lord->features;

		err = -errno;
		memcpy(name, lord->args.name, sizeof(name));
		close(lord->fd);
		free(lord);
		switch (err) {
		case -EPERM:
			return cos_fail(err, "registering a lord needs CAP_SYS_NICE");
		case -EBUSY: {
			int fd = features & COS_FEAT_ENCLAVES ? cos_open() : -1;

			if (fd < 0)
				return cos_fail(err, "another lord holds the enclave (this cos.ko "
					       "runs one lord at a time)");
			err = lord_busy(fd, opts);
			close(fd);
			return err;
		}
		case -EEXIST:
			return cos_fail(err, "an enclave named '%s' is registered already", name);
		case -ENOSPC:
			return cos_fail(err, "%d enclaves are registered, the most cos.ko runs at once",
					COS_ENCLAVES_MAX);
		case -ENXIO:
			return cos_fail(err, "the cos shim is not attached ('cosctl shim attach')");
		case -EOPNOTSUPP:
			return cos_fail(err, "this kernel's sched_ext cannot give shot tasks priority "
				       "(scx_bpf_create_dsq unusable, e.g. Debian 7.2.12): use another kernel");
		case -EINVAL:
			return lord_einval(opts);
		default:
			return cos_fail(err, "COS_IOC_REGISTER_LORD failed: %s", strerror(-err));
		}
	}
	lord->ring = map_region(lord->fd, lord->args.ring_off, lord->args.ring_size, PROT_READ);
	lord->status = map_region(lord->fd, lord->args.status_off, lord->args.status_size, PROT_READ);
	lord->shoot = map_region(lord->fd, lord->args.shoot_off, lord->args.shoot_size,
				 PROT_READ | PROT_WRITE);
	lord->ctl = map_region(lord->fd, lord->args.ctl_off, lord->args.ctl_size,
			       PROT_READ | PROT_WRITE);
	lord->mask_words = (lord->args.nr_cpu_ids + 63) / 64;
	lord->prepared = calloc(lord->mask_words, sizeof(uint64_t));
	if (!lord->ring || !lord->status || !lord->shoot || !lord->ctl || !lord->prepared) {
		err = cos_fail(-ENOMEM, "cannot map the lord's regions");
		cos_lord_destroy(lord);
		return err;
	}
	if (opts->size >= offsetof(struct cos_lord_opts, submit) + sizeof(opts->submit) &&
	    opts->submit == COS_SUBMIT_URING)
		uring_setup(lord);
	lord_priority(lord);
	*lordp = lord;
	return 0;
}

COS_EXPORT int cos_lord_set_wake_rules(struct cos_lord *lord, unsigned int rules,
				       unsigned long long slice_ns)
{
	if (rules & ~(COS_WAKE_PREV | COS_WAKE_IDLE | COS_WAKE_HANDOFF | COS_WAKE_HANDOFF_BLOCK |
		      COS_WAKE_PREEMPT | COS_WAKE_NEXT))
		return cos_fail(-EINVAL, "unknown wake rules 0x%x", rules);
	if (rules && !(lord->features & COS_FEAT_WAKE_RULES))
		return cos_fail(-EOPNOTSUPP, "this cos.ko has no wake rules (COS_FEAT_WAKE_RULES): "
				"every waking task waits for a shoot");
	if ((rules & COS_WAKE_HANDOFF) && !(lord->features & COS_FEAT_WAKE_HANDOFF))
		return cos_fail(-EOPNOTSUPP, "this cos.ko has no wake rule COS_WAKE_HANDOFF "
				"(COS_FEAT_WAKE_HANDOFF): load the cos.ko of this libcos");
	if ((rules & COS_WAKE_HANDOFF_BLOCK) && !(lord->features & COS_FEAT_WAKE_HANDOFF_BLOCK))
		return cos_fail(-EOPNOTSUPP, "this cos.ko has no wake rule COS_WAKE_HANDOFF_BLOCK "
				"(COS_FEAT_WAKE_HANDOFF_BLOCK): load the cos.ko of this libcos");
	if ((rules & COS_WAKE_PREEMPT) && !(lord->features & COS_FEAT_WAKE_PREEMPT))
		return cos_fail(-EOPNOTSUPP, "this cos.ko has no wake rule COS_WAKE_PREEMPT "
				"(COS_FEAT_WAKE_PREEMPT): load the cos.ko of this libcos");
	if ((rules & COS_WAKE_NEXT) && !(lord->features & COS_FEAT_WAKE_NEXT))
		return cos_fail(-EOPNOTSUPP, "this cos.ko has no wake rule COS_WAKE_NEXT "
				"(COS_FEAT_WAKE_NEXT): load the cos.ko of this libcos");
	/* the slice first: a wake-up that sees the new rules uses the new slice */
	__atomic_store_n(&lord->ctl->wake_slice_ns, slice_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&lord->ctl->wake_rules, rules, __ATOMIC_RELEASE);
	return 0;
}

COS_EXPORT void cos_lord_destroy(struct cos_lord *lord)
{
	if (!lord)
		return;
	ioctl(lord->fd, COS_IOC_UNREGISTER);
	lord_restore(lord);
	if (lord->ring)
		munmap(lord->ring, lord->args.ring_size);
	if (lord->status)
		munmap((void *)lord->status, lord->args.status_size);
	if (lord->shoot)
		munmap(lord->shoot, lord->args.shoot_size);
	if (lord->ctl)
		munmap(lord->ctl, lord->args.ctl_size);
	if (lord->uring)
		io_uring_queue_exit(&lord->uring_ring);
	close(lord->fd);
	free(lord->prepared);
	free(lord);
}

COS_EXPORT unsigned int cos_lord_submit(const struct cos_lord *lord)
{
	return lord->uring ? COS_SUBMIT_URING : COS_SUBMIT_IOCTL;
}

COS_EXPORT const char *cos_lord_name(const struct cos_lord *lord)
{
	return lord->args.name;
}

COS_EXPORT unsigned int cos_lord_enclave_id(const struct cos_lord *lord)
{
	return lord->args.enclave_id;
}

COS_EXPORT int cos_lord_fd(const struct cos_lord *lord)
{
	return lord->fd;
}

COS_EXPORT unsigned int cos_lord_max_tasks(const struct cos_lord *lord)
{
	return lord->args.max_tasks;
}

COS_EXPORT const struct cos_msg *cos_lord_peek(struct cos_lord *lord)
{
	uint64_t next = lord->consumed + 1;
	const struct cos_msg *m = &lord->ring[(next - 1) & (lord->args.ring_entries - 1)];

	/* acquire: pairs with the module's smp_store_release(&msg->seq) */
	return __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE) == next ? m : NULL;
}

COS_EXPORT void cos_lord_consume(struct cos_lord *lord)
{
	lord->consumed++;
}

COS_EXPORT void cos_lord_publish(struct cos_lord *lord)
{
	/* release: our reads of the consumed slots happen before the module may rewrite them */
	__atomic_store_n(&lord->ctl->consumed, lord->consumed, __ATOMIC_RELEASE);
}

COS_EXPORT unsigned long long cos_lord_consumed(const struct cos_lord *lord)
{
	return lord->consumed;
}

COS_EXPORT const struct cos_ctl *cos_lord_ctl(const struct cos_lord *lord)
{
	return lord->ctl;
}

COS_EXPORT int cos_lord_task_status(const struct cos_lord *lord, unsigned int slot,
				    struct cos_task_status *out)
{
	const struct cos_task_status *s;
	uint32_t sc1, sc2;

	if (slot >= lord->args.max_tasks)
		return -EINVAL;
	s = &lord->status[slot];
	do {
		sc1 = __atomic_load_n(&s->seqcount, __ATOMIC_ACQUIRE);
		memcpy(out, s, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		sc2 = __atomic_load_n(&s->seqcount, __ATOMIC_RELAXED);
	} while ((sc1 & 1) || sc1 != sc2);
	return 0;
}

COS_EXPORT bool cos_lord_owns(const struct cos_lord *lord, const struct cos_task_status *st)
{
	return !(lord->features & COS_FEAT_ENCLAVES) || st->enclave_id == lord->args.enclave_id;
}

COS_EXPORT int cos_lord_prepare_flags(struct cos_lord *lord, int cpu, unsigned int slot,
				      unsigned int gen, unsigned long long slice_ns,
				      unsigned int flags)
{
	struct cos_shoot_slot *s;

	/* urgency means something only to COS_WAKE_PREEMPT, which such a cos.ko refused */
	if (!(lord->features & COS_FEAT_WAKE_PREEMPT))
		flags &= ~COS_SHOOT_F_URGENT;
	if (cpu < 0 || (unsigned int)cpu >= lord->args.nr_cpu_ids ||
	    (flags & ~(COS_SHOOT_F_REPLACE | COS_SHOOT_F_LATCH | COS_SHOOT_F_URGENT)) ||
	    (flags & COS_SHOOT_F_REPLACE && flags & COS_SHOOT_F_LATCH))
		return -EINVAL;
	if (((flags & COS_SHOOT_F_REPLACE) && !(lord->features & COS_FEAT_SHOOT_REPLACE)) ||
	    ((flags & COS_SHOOT_F_LATCH) && !(lord->features & COS_FEAT_SHOOT_LATCH)))
		return -EOPNOTSUPP;
	s = &lord->shoot[cpu];
	s->slot = slot;
	s->gen = gen;
	s->slice_ns = slice_ns;
	s->status = 0;
	s->flags = COS_SHOOT_F_VALID | flags;
	lord->prepared[cpu / 64] |= 1ULL << (cpu % 64);
	return 0;
}

COS_EXPORT int cos_lord_prepare(struct cos_lord *lord, int cpu, unsigned int slot,
				unsigned int gen, unsigned long long slice_ns)
{
	return cos_lord_prepare_flags(lord, cpu, slot, gen, slice_ns, 0);
}

COS_EXPORT int cos_lord_shoot(struct cos_lord *lord, unsigned int flags)
{
	struct cos_shoot_args args = {
		.size = sizeof(args),
		.flags = flags,
		.consumed = lord->consumed,
		.cpumask_size = lord->mask_words * sizeof(uint64_t),
		.cpumask = (uintptr_t)lord->prepared,
	};
	int ret = -EOPNOTSUPP;

	if (lord->uring) {
		ret = uring_shoot(lord, &args);
		if (ret == -EOPNOTSUPP) {
			/* a module without uring_cmd (nothing was placed): the ioctl from now on */
			io_uring_queue_exit(&lord->uring_ring);
			lord->uring = false;
		}
	}
	if (!lord->uring) {
		ret = ioctl(lord->fd, COS_IOC_SHOOT, &args);
		if (ret < 0)
			ret = -errno;
	}
	memset(lord->prepared, 0, lord->mask_words * sizeof(uint64_t));
	return ret;
}

COS_EXPORT struct cos_shoot_slot *cos_lord_shoot_slot(struct cos_lord *lord, int cpu)
{
	if (cpu < 0 || (unsigned int)cpu >= lord->args.nr_cpu_ids)
		return NULL;
	return &lord->shoot[cpu];
}

COS_EXPORT unsigned int cos_lord_shoot_status(const struct cos_lord *lord, int cpu)
{
	return __atomic_load_n(&lord->shoot[cpu].status, __ATOMIC_RELAXED);
}

COS_EXPORT int cos_lord_wait(struct cos_lord *lord, unsigned long long timeout_ns)
{
	struct cos_wait_args args = {
		.size = sizeof(args),
		.consumed = lord->consumed,
		.timeout_ns = timeout_ns,
	};
	int ret = ioctl(lord->fd, COS_IOC_WAIT, &args);

	return ret < 0 ? -errno : ret;
}

static const char *const msg_names[COS_MSG_NR_TYPES] = {
	[COS_MSG_NONE] = "NONE",
	[COS_MSG_TASK_NEW] = "TASK_NEW",
	[COS_MSG_TASK_RUNNABLE] = "TASK_RUNNABLE",
	[COS_MSG_TASK_BLOCKED] = "TASK_BLOCKED",
	[COS_MSG_TASK_PREEMPTED] = "TASK_PREEMPTED",
	[COS_MSG_TASK_YIELD] = "TASK_YIELD",
	[COS_MSG_TASK_DEAD] = "TASK_DEAD",
	[COS_MSG_TASK_AFFINITY] = "TASK_AFFINITY",
	[COS_MSG_SHOOT_FAILED] = "SHOOT_FAILED",
	[COS_MSG_SHOOT_STALE] = "SHOOT_STALE",
	[COS_MSG_LORD_STALL] = "LORD_STALL",
	[COS_MSG_OVERFLOW] = "OVERFLOW",
	[COS_MSG_TASK_RUNNING] = "TASK_RUNNING",
	[COS_MSG_CPU_OFFLINE] = "CPU_OFFLINE",
	[COS_MSG_CPU_ONLINE] = "CPU_ONLINE",
	[COS_MSG_TASK_PLACED] = "TASK_PLACED",
	[COS_MSG_TASK_THROTTLED] = "TASK_THROTTLED",
	[COS_MSG_GROUP_THROTTLED] = "GROUP_THROTTLED",
	[COS_MSG_GROUP_UNTHROTTLED] = "GROUP_UNTHROTTLED",
};

COS_EXPORT const char *cos_msg_type_name(unsigned int type)
{
	return type < COS_MSG_NR_TYPES && msg_names[type] ? msg_names[type] : "?";
}

COS_EXPORT const char *cos_shoot_status_name(unsigned int status)
{
	static const char *const names[] = {
		"OK", "EMPTY", "BAD_SLOT", "BAD_GEN", "NOT_WAITING", "BAD_CPU", "AFFINITY",
		"BEHIND", "STALE_SEQ", "BUSY", "BAD_FLAGS", "NO_LORD", "LATCH_FULL", "THROTTLED",
		"OTHER_ENCLAVE",
	};

	return status < sizeof(names) / sizeof(names[0]) ? names[status] : "?";
}
