// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * sched_lord.c — the policy framework on a real lord: privileges checked up front (libcap),
 * the process locked in memory, registration, and the backend that maps the framework's needs
 * onto cos_lord_* (lord.c).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

/* The real backend: the lord's regions and ioctls. */
static const struct cos_msg *lb_peek(void *b) { return cos_lord_peek(b); }
static void lb_consume(void *b) { cos_lord_consume(b); }
static void lb_publish(void *b) { cos_lord_publish(b); }
/* Another enclave's task is none of ours: to the framework its slot is free. */
static int lb_task_status(void *b, unsigned int slot, struct cos_task_status *out)
{
	int err = cos_lord_task_status(b, slot, out);

	if (!err && !cos_lord_owns(b, out))
		out->state = COS_TASK_FREE;
	return err;
}
/* The policy's latest placement for a CPU wins over one that has not started there yet
 * (a module without COS_SHOOT_F_REPLACE refuses the later one: COS_SHOOT_BUSY).  A latch
 * needs a module that knows it (-EOPNOTSUPP). */
static int lb_prepare(void *b, int cpu, unsigned int slot, unsigned int gen,
		      unsigned long long slice, unsigned int flags)
{
	int ret;

	if (flags & COS_SHOOT_F_LATCH)
		return cos_lord_prepare_flags(b, cpu, slot, gen, slice, flags);
	ret = cos_lord_prepare_flags(b, cpu, slot, gen, slice, flags | COS_SHOOT_F_REPLACE);

	return ret == -EOPNOTSUPP ? cos_lord_prepare_flags(b, cpu, slot, gen, slice, flags) : ret;
}
static int lb_shoot(void *b) { return cos_lord_shoot(b, 0); }
static unsigned int lb_shoot_status(void *b, int cpu) { return cos_lord_shoot_status(b, cpu); }
static int lb_wait(void *b, unsigned long long ns) { return cos_lord_wait(b, ns); }
static int lb_affinity(void *b, int pid, cpu_set_t *set)
{
	return sched_getaffinity(pid, sizeof(*set), set) ? -errno : 0;
}

static const struct cos_backend lord_backend = {
	.peek = lb_peek, .consume = lb_consume, .publish = lb_publish,
	.task_status = lb_task_status, .prepare = lb_prepare, .shoot = lb_shoot,
	.shoot_status = lb_shoot_status, .wait = lb_wait, .affinity = lb_affinity,
};

/* Is CAP_SYS_NICE in the effective set? */
static bool have_sys_nice(void)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;

	if (!caps)
		return true;	/* cannot tell: let the kernel decide */
	cap_get_flag(caps, CAP_SYS_NICE, CAP_EFFECTIVE, &v);
	cap_free(caps);
	return v == CAP_SET;
}

/* Drop every capability, or all but CAP_SYS_PTRACE (@keep_ptrace: to open apps' hint tables). */
static int drop_caps(bool keep_ptrace)
{
	cap_t caps = cap_init();
	cap_value_t ptrace_cap = CAP_SYS_PTRACE;
	int ret;

	if (!caps)
		return -errno;
	if (keep_ptrace && (cap_set_flag(caps, CAP_PERMITTED, 1, &ptrace_cap, CAP_SET) ||
			    cap_set_flag(caps, CAP_EFFECTIVE, 1, &ptrace_cap, CAP_SET))) {
		cap_free(caps);
		return -errno;
	}
	ret = cap_set_proc(caps) ? -errno : 0;
	cap_free(caps);
	return ret;
}

COS_EXPORT int cos_sched_create(struct cos_sched **sp, const struct cos_policy *policy,
				const struct cos_sched_opts *opts)
{
	struct cos_lord_opts lo;
	struct cos_lord *lord;
	struct cos_info info;
	int err, fd;

	*sp = NULL;
	if (!opts || opts->size < sizeof(*opts) || !opts->lord.enclave)
		return cos_fail(-EINVAL, "cos_sched_create: options missing (size, lord.enclave)");
	if (!have_sys_nice())
		return cos_fail(-EPERM, "a lord needs CAP_SYS_NICE (run as root, or grant it: "
				"setcap cap_sys_nice,cap_ipc_lock+ep <program>)");
	if (!(opts->flags & COS_SCHED_F_NO_MLOCK) && mlockall(MCL_CURRENT | MCL_FUTURE))
		return cos_fail(-errno, "mlockall failed (%s): a lord must not page-fault; "
				"grant CAP_IPC_LOCK or raise RLIMIT_MEMLOCK, or pass COS_SCHED_F_NO_MLOCK",
				strerror(errno));
	fd = cos_open();
	if (fd < 0)
		return fd;
	err = cos_get_info(fd, &info);
	close(fd);
	if (err)
		return err;
	lo = opts->lord;
	lo.size = sizeof(lo);
	/* the framework keeps its policies off offline CPUs (cos_sched_task_may_run()) */
	if (info.features & COS_FEAT_CPU_MSGS)
		lo.flags |= COS_LORD_F_CPU_MSGS;
	/* policies decide only for waiting tasks: a block or a wake-rule start while none waits
	 * can wait for the next message that asks something (docs/design.md, 5.1) */
	if ((info.features & COS_FEAT_LAZY_WAKE) && !(opts->flags & COS_SCHED_F_WAKE_ALL))
		lo.flags |= COS_LORD_F_LAZY_WAKE;
	err = cos_lord_register(&lord, &lo);
	if (err)
		return err;
	err = cos_sched_create_backend(sp, policy, &lord_backend, lord, opts,
				       cos_lord_max_tasks(lord), info.nr_cpu_ids);
	if (err) {
		cos_lord_destroy(lord);
		return err;
	}
	cos_sched_set_lord(*sp, lord, cos_lord_name(lord));
	if ((opts->flags & COS_SCHED_F_DROP_CAPS) && (err = drop_caps(opts->flags & COS_SCHED_F_HINTS))) {
		cos_sched_destroy(*sp);
		*sp = NULL;
		return cos_fail(err, "cannot drop capabilities after registering");
	}
	return 0;
}

COS_EXPORT void cos_sched_destroy(struct cos_sched *s)
{
	if (!s)
		return;
	cos_lord_destroy(cos_sched_lord(s));
	cos_sched_free(s);
}

COS_EXPORT int cos_sched_set_wake_rules(struct cos_sched *s, unsigned int rules,
				       unsigned long long slice_ns)
{
	struct cos_lord *lord = cos_sched_lord(s);

	return lord ? cos_lord_set_wake_rules(lord, rules, slice_ns) : -ENODEV;
}
