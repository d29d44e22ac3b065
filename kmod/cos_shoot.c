// SPDX-License-Identifier: GPL-2.0
/*
 * cos_shoot.c — COS_IOC_SHOOT (ioctl, or the same through io_uring): validate the lord's shoot
 * slots, publish each accepted task to its CPU's pending slot and kick that CPU.  The shim's
 * ops.dispatch there takes it (cos_dispatch_take()) and inserts it into the local DSQ.
 *
 * The kick (cos_kick_shot_cpus(), cos_cpu.c) is cos.ko's own IPI, not scx_bpf_kick_cpu: Debian's
 * 7.2.12 BTF hides that kfunc from BPF.  On the target CPU it zeroes the running task's slice
 * and sets need_resched; sched_ext then puts that task back and calls ops.dispatch.  The slice
 * write races only with the tick on the same CPU, which runs with IRQs off: not at all.
 *
 * See docs/design.md, "The shoot path, end to end".
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/io_uring/cmd.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>

#include "cos_internal.h"
#include "cos_trace.h"

/*
 * Local shoot: the lord (current, on its CPU) gives the CPU up when the ioctl returns.  With its
 * slice at 0 it is put back through ops.enqueue, where cos_kf_enqueue() sees the pending task and
 * answers COS_ENQ_LORD_YIELD: the shim parks the lord behind it.  IRQs off: the tick charges
 * the same slice.
 */
static void cos_lord_yield(void)
{
	local_irq_disable();
	current->scx.slice = 0;
	set_tsk_need_resched(current);
	set_preempt_need_resched();
	local_irq_enable();
}

/*
 * Validate one request (a private copy of the slot) for @cpu, then shoot the task it names
 * (cos_task_shoot() checks the task).  Caller holds e->lock: the lord's activity is stable.
 */
static u32 cos_shoot_one(struct cos_enclave *e, s32 cpu, const struct cos_shoot_slot *req,
			 u64 consumed, bool *kick)
{
	u64 slice = req->slice_ns;
	int i;

	lockdep_assert_held(&e->lock);
	*kick = false;
	if (req->flags & ~(COS_SHOOT_F_VALID | COS_SHOOT_F_REPLACE | COS_SHOOT_F_LATCH |
			   COS_SHOOT_F_URGENT) ||
	    (req->flags & COS_SHOOT_F_REPLACE && req->flags & COS_SHOOT_F_LATCH))
		return COS_SHOOT_BAD_FLAGS;
	for (i = 0; i < ARRAY_SIZE(req->__reserved); i++)
		if (req->__reserved[i])
			return COS_SHOOT_BAD_FLAGS;
	if (!e->active)
		return COS_SHOOT_NO_LORD;
	if ((!cpumask_test_cpu(cpu, e->cpus) && cpu != e->lord_cpu) ||
	    cpumask_test_cpu(cpu, e->offline) ||	/* cos_lord_cpu_hotplug() */
	    (cpu == e->lord_cpu && (req->flags & COS_SHOOT_F_LATCH)))	/* nothing behind it */
		return COS_SHOOT_BAD_CPU;
	if (cpu == e->lord_cpu && (!slice || slice > e->stall_ns / 2))
		slice = e->stall_ns / 2;	/* local shoot: the lord must be back in time */
	return cos_task_shoot(e, req->slot, req->gen, cpu, slice, consumed, req->flags, kick);
}

/*
 * Commit the shoot slots that @uarg (struct cos_shoot_args) names: the body of COS_IOC_SHOOT
 * and of its io_uring command.  @nonblock: return -EAGAIN rather than sleep on shoot_mutex.
 * Only the lord takes it, so it is free unless an ioctl of the lord's races with its own uring
 * command.  A local shoot makes the lord yield right here if current is the lord; from another
 * thread of its process (an io_uring worker) the lord's CPU is kicked instead.
 */
static long cos_shoot_commit(struct cos_enclave *e, void __user *uarg, bool nonblock)
{
	struct cos_shoot_args args;
	struct cpumask *mask, *kick, *latch_kick;
	long usize, placed = 0;
	int cpu, ret;

	if (!e || !READ_ONCE(e->registered) || current->tgid != e->lord_tgid)
		return -EPERM;
	usize = cos_user_size(uarg, COS_SHOOT_ARGS_SIZE_VER0);
	if (usize < 0)
		return usize;
	ret = cos_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags & ~COS_SHOOT_STRICT)
		return -EINVAL;
	if (!nonblock)
		mutex_lock(&e->shoot_mutex);
	else if (!mutex_trylock(&e->shoot_mutex))
		return -EAGAIN;
	if (!READ_ONCE(e->registered)) {	/* unregistered since the check above */
		ret = -EPERM;
		goto out;
	}
	mask = e->shoot_mask;
	kick = e->kick_mask;
	latch_kick = e->latch_kick;
	cpumask_clear(kick);
	cpumask_clear(latch_kick);
	ret = cos_copy_cpumask(mask, u64_to_user_ptr(args.cpumask), args.cpumask_size);
	if (ret)
		goto out;

	smp_store_release(&e->ctl->consumed, args.consumed);
	/* this enclave's lock alone: two lords shoot without meeting (cos_internal.h) */
	scoped_guard(raw_spinlock_irqsave, &e->lock) {
		u32 refused = 0;

		cos_lord_consumed(e, args.consumed);
		for_each_cpu(cpu, mask) {
			struct cos_shoot_slot *slot = &e->shoot[cpu];
			struct cos_shoot_slot req;
			bool need_kick = false;
			u32 status;

			memcpy(&req, slot, sizeof(req));	/* read once: the lord may write it meanwhile */
			if (!(req.flags & COS_SHOOT_F_VALID))
				status = COS_SHOOT_EMPTY;
			else if ((args.flags & COS_SHOOT_STRICT) && args.consumed < cos_ring_produced(e))
				status = COS_SHOOT_STALE_SEQ;
			else
				status = cos_shoot_one(e, cpu, &req, args.consumed, &need_kick);
			WRITE_ONCE(slot->status, status);
			WRITE_ONCE(slot->flags, 0);
			if (status != COS_SHOOT_EMPTY && trace_cos_shoot_enabled())
				trace_cos_shoot(e->id, cpu, cos_slot_pid(e, req.slot, req.gen), req.slot,
						req.flags, req.slice_ns, status);
			if (status == COS_SHOOT_OK) {
				placed++;
				if (need_kick)	/* a latch only where the CPU is not armed */
					cpumask_set_cpu(cpu, req.flags & COS_SHOOT_F_LATCH ?
							     latch_kick : kick);
			} else if (status != COS_SHOOT_EMPTY) {
				refused++;
			}
		}
		e->placed += placed;
		e->refused += refused;
		this_cpu_add(cos_shoot_counts.placed, placed);
		this_cpu_add(cos_shoot_counts.refused, refused);
	}
	/*
	 * The lord yields only where it runs: on lord_cpu.  Off it (its own setaffinity, a
	 * hotplug cycle) its yield would free the wrong CPU; lord_cpu is kicked like any other.
	 */
	if (current == e->lord && cpumask_test_cpu(e->lord_cpu, kick)) {
		guard(preempt)();
		if (smp_processor_id() == e->lord_cpu) {
			cpumask_clear_cpu(e->lord_cpu, kick);
			cos_lord_yield();
		}
	}
	cos_kick_shot_cpus(kick);
	cos_kick_latch_cpus(latch_kick);
	ret = 0;
out:
	mutex_unlock(&e->shoot_mutex);
	return ret ?: placed;
}

/**
 * cos_ioc_shoot() - COS_IOC_SHOOT: commit the lord's shoot slots for a set of CPUs
 * @file: the lord's /dev/cos file
 * @uarg: user pointer to struct cos_shoot_args
 *
 * Each slot is copied once, validated, its status written back and COS_SHOOT_F_VALID cleared;
 * a failing slot does not stop the others.  Accepted tasks are published to their CPUs'
 * pending slots (or latches).  The CPUs are kicked after e->lock is dropped; for a latch,
 * only where no COS task will dispatch by itself (struct cos_latch in cos_cpu.c).
 *
 * Context: process context, a thread of the lord's process (a local shoot needs the lord
 * itself to yield at once); takes the enclave's shoot_mutex, then its e->lock with IRQs off, and
 * each shot task's t->lock in turn; sends IPIs after dropping them.
 * Return: the number of tasks placed; -EPERM if the caller is not this file's lord; -EINVAL
 * (size, flags, mask), -EFAULT; nothing is placed on error.
 */
long cos_ioc_shoot(struct file *file, void __user *uarg)
{
	return cos_shoot_commit(cos_file_enclave(file), uarg, false);
}

/**
 * cos_uring_cmd() - f_op->uring_cmd of /dev/cos: COS_IOC_SHOOT submitted through io_uring
 * @ioucmd: the command; sqe->cmd_op is COS_URING_SHOOT and the SQE's command area holds a
 *	struct cos_uring_shoot (a pointer to the same struct cos_shoot_args as the ioctl's)
 * @issue_flags: IO_URING_F_*
 *
 * Same semantics and result as the ioctl; it completes at once (the CQE's res is the number
 * placed or a negative errno), it never queues.  Other command numbers fail with -EOPNOTSUPP.
 *
 * Context: process context: the submitting lord (inline issue, IO_URING_F_NONBLOCK: returns
 * -EAGAIN instead of sleeping on shoot_mutex, and io_uring re-issues it from a worker thread of
 * the lord's process) or such a worker.  Locking as cos_ioc_shoot().
 * Return: the number of tasks placed, or -EPERM, -EINVAL, -EFAULT, -EAGAIN, -EOPNOTSUPP.
 */
int cos_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	const struct cos_uring_shoot *cmd = io_uring_sqe_cmd(ioucmd->sqe, struct cos_uring_shoot);
	u64 args = READ_ONCE(cmd->args);

	if (ioucmd->cmd_op != COS_URING_SHOOT)
		return -EOPNOTSUPP;
	if (READ_ONCE(cmd->flags) || READ_ONCE(cmd->__reserved))
		return -EINVAL;
	return cos_shoot_commit(cos_file_enclave(ioucmd->file), u64_to_user_ptr(args),
				issue_flags & IO_URING_F_NONBLOCK);
}
