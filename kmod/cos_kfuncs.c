// SPDX-License-Identifier: GPL-2.0
/*
 * cos_kfuncs.c — the kfuncs cos.ko offers its BPF shim (struct_ops programs of sched_ext):
 * the shim reports task events through them, and asks them what to run.
 *
 * sched_ext's own kfunc filter covers only vmlinux kfuncs, so this set carries its own filter:
 * only struct_ops programs that implement sched_ext_ops may call these.  A missing module BTF
 * makes register_btf_kfunc_id_set() warn and return 0, so cos_kfuncs_init() checks for the BTF
 * itself and refuses to load without it.
 *
 * Task identity.  cos_kf_task_attach() gives a COS task (policy SCHED_EXT) a slot in the task
 * table; the shim keeps it in task-local storage and passes (p, slot) to the other kfuncs, which
 * check that the slot still belongs to p.
 *
 * Task pointers are trusted arguments: the verifier admits only a task_struct pointer that
 * sched_ext passed to the op or that bpf_task_from_pid() returned (on these kernels every kfunc
 * pointer argument is trusted unless marked otherwise), never one read from memory, computed or
 * made up, so these kfuncs may dereference them.  That needs the module's BTF to name
 * vmlinux's struct task_struct, not a copy of it: Debian's pahole links libbpf 1.5, whose dedup
 * leaves copies, and the build runs it again (kmod/btf-rededup.c).  A shot task goes back to
 * the shim as a pid, which it turns into a reference with bpf_task_from_pid().  The filter
 * admits only struct_ops programs of sched_ext_ops named "cos_*", and each kfunc only from the
 * ops that may call it (cos_kf_ops[]: the dispatch kfuncs from ops.dispatch, and so on), at
 * load time; a program that passes it can still hand these kfuncs only real tasks, whose slots
 * they check.  At run time the kfuncs that change state act only for the programs of the
 * struct_ops map that attached as the shim (see "Binding" below).
 *
 * Unless its kernel-doc says otherwise, a kfunc here is called from a sched_ext op with the
 * task's rq lock held and IRQs off, takes cos_lock, and never sleeps.  The exceptions: the task
 * slot's attach and detach also run from ops.select_cpu (pi_lock, not the rq lock), the
 * dispatch kfuncs hold the dispatching CPU's rq lock, and ops.init/exit may sleep.
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/cleanup.h>
#include <linux/module.h>
#include <linux/sched/task.h>
#include <linux/string.h>

#include "cos.h"

/* SCX_ENQ_WAKEUP (== ENQUEUE_WAKEUP): sched_ext's flag enums are not in the public headers. */
#define COS_SCX_ENQ_WAKEUP	1ULL


/*
 * Binding.  The kfuncs marked COS_KFUNC_BOUND (kmod/cos_shim_intf.h) act only for a program of
 * the shim that attached: the struct_ops map whose ops.init called cos_kf_shim_attached(true)
 * while none was bound, until its ops.exit calls cos_kf_shim_attached(false).  The kernel ties
 * each struct_ops program to the one map it was put in (bpf_prog_get_assoc_struct_ops(): the
 * map's kernel data; NULL for a program put in two maps), and the verifier hands each of these
 * kfuncs its caller's bpf_prog_aux (KF_IMPLICIT_ARGS).  So a program of another struct_ops map
 * (a second sched_ext scheduler named like the shim, a sub-scheduler), or a program put in a
 * second map since, cannot act on cos's state: its calls are answered as for a task that is not
 * a COS task (test_kfuncs shows both answers).  The bound shim's ops.exit ends the binding, and
 * so does the ops.exit of a program of no single map (it may be the bound shim's: fail safe).
 * What this cannot tell apart is a look-alike that is itself the attached root scheduler:
 * sched_ext has one, and cos.ko serves it.  cos_shim_ops is written under cos_lock, read
 * lock-free; the pointer is only compared, never followed.
 */
static void *cos_shim_ops;

/* Is the calling program one of the attached shim's?  Context: any; lock-free. */
static bool cos_kf_bound(const struct bpf_prog_aux *aux)
{
	void *ops = READ_ONCE(cos_shim_ops);

	return ops && bpf_prog_get_assoc_struct_ops(aux) == ops;
}

/* @p's slot @slot, if the caller is the attached shim and the slot is @p's; else NULL. */
static struct cos_task *cos_kf_task(const struct bpf_prog_aux *aux, struct task_struct *p,
				    s32 slot)
{
	struct cos_task *t;

	if (slot < 0 || slot >= cos_max_tasks || !cos_kf_bound(aux))
		return NULL;
	t = &cos_tasks[slot];
	return t->state != COS_TASK_FREE && t->p == p ? t : NULL;
}

__bpf_kfunc_start_defs();

/**
 * cos_kf_abi_version() - the COS_ABI_VERSION this module implements
 *
 * The shim calls it from ops.init and fails to attach when it differs from the version it was
 * built with.  Context: any; no locks.  Return: COS_ABI_VERSION.
 */
__bpf_kfunc u32 cos_kf_abi_version(void)
{
	return COS_ABI_VERSION;
}

/**
 * cos_kf_shim_attached() - the shim is (@attached) or is no longer the sched_ext scheduler
 * @attached: true from ops.init, false from ops.exit
 * @caps: COS_SHIM_CAP_* of this shim on this kernel
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Leaving: sched_ext has already moved every task off the shim (exit_task was called for each),
 * so the lord, if any, has lost its tasks; it is deactivated until a shim attaches again, and
 * then gets control back only if it is alive and caught up (cos_lord_shim_changed_locked()).
 * Context: ops.init / ops.exit (sleepable or not); takes cos_lock with IRQs off.
 */
__bpf_kfunc void cos_kf_shim_attached(bool attached, u32 caps, struct bpf_prog_aux *aux)
{
	void *ops = bpf_prog_get_assoc_struct_ops(aux);

	guard(raw_spinlock_irqsave)(&cos_lock);
	if (attached) {
		if (!ops || cos_shim_ops)
			return;		/* of no single map, or a shim is bound already */
		WRITE_ONCE(cos_shim_ops, ops);
	} else {
		/*
		 * The bound shim leaves.  A program of no single map (put in a second map since
		 * it attached) may be its ops.exit too: unbinding is the safe answer then, else
		 * the binding would outlive the scheduler.  Another map's exit is not ours.
		 */
		if (!cos_shim_ops || (ops && ops != cos_shim_ops))
			return;
		WRITE_ONCE(cos_shim_ops, NULL);
	}
	cos_lord_shim_changed_locked(attached, caps);
}

/**
 * cos_kf_task_attach() - give COS task @p a slot in the task table
 * @p: a task whose policy is SCHED_EXT
 * @runnable: whether it is runnable now (the TASK_NEW message's arg)
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: the op that first sees @p as a COS task: ops.select_cpu (@p's pi_lock held, not its
 * rq lock), ops.enqueue or ops.enable (its rq lock held); IRQs off; takes cos_lock.
 * Return: the slot, or -ENOSPC when the table is full (the task stays under the fair policy).
 */
__bpf_kfunc s32 cos_kf_task_attach(struct task_struct *p, bool runnable, struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	if (!cos_kf_bound(aux))
		return -EPERM;
	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_task_attach_locked(p, runnable);
	return t ? cos_task_slot(t) : -ENOSPC;
}

/**
 * cos_kf_task_detach() - @p died or left SCHED_EXT: post TASK_DEAD and free its slot
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: the op that sees @p leave SCHED_EXT or sched_ext: ops.select_cpu (@p's pi_lock held,
 * not its rq lock), ops.enqueue, ops.enable, ops.disable or ops.exit_task; IRQs off; takes
 * cos_lock.
 */
__bpf_kfunc void cos_kf_task_detach(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	cos_task_detach_locked(t);
}

/**
 * cos_kf_exit_task() - any task @p is leaving the shim; if it is the lord, fall back now
 * @p: the task
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * The lord's /dev/cos file may outlive the lord thread (another thread or a child holds it),
 * so its exit is the death signal that does not wait for the file's release.
 * Context: ops.exit_task; no lock unless @p is the lord.
 */
__bpf_kfunc void cos_kf_exit_task(struct task_struct *p, struct bpf_prog_aux *aux)
{
	if (p->pid == READ_ONCE(cos_lord_pid) && cos_kf_bound(aux))
		cos_lord_exited(p);
}

/**
 * cos_kf_enqueue() - where should the shim put runnable task @p?
 * @p: the task; @slot: its slot, or -1 if it is not a COS task
 * @enq_flags: SCX_ENQ_*
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * For a COS task, posts RUNNABLE (or PREEMPTED/YIELD when it was running) and, when a lord has
 * control and @p may run on one of its CPUs, keeps it in custody for the lord.
 * The lord itself gets COS_ENQ_LORD, or COS_ENQ_LORD_YIELD when it is put back (not a wake-up)
 * while a local shoot waits for its CPU or was taken there and has not started yet.
 * Context: ops.enqueue.  Lock-free unless @slot >= 0 or @p is the lord.
 * Return: COS_ENQ_FAIR, COS_ENQ_CUSTODY, COS_ENQ_LORD or COS_ENQ_LORD_YIELD.
 */
__bpf_kfunc u32 cos_kf_enqueue(struct task_struct *p, s32 slot, u64 enq_flags,
			       struct bpf_prog_aux *aux)
{
	struct cos_enclave *e;
	struct cos_task *t;
	u32 msg, ret = COS_ENQ_FAIR;

	if (slot < 0) {
		if (p->pid != READ_ONCE(cos_lord_pid))
			return COS_ENQ_FAIR;
		if (!cos_kf_bound(aux))
			return COS_ENQ_FAIR;
		if (enq_flags & COS_SCX_ENQ_WAKEUP)
			return COS_ENQ_LORD;
		guard(raw_spinlock_irqsave)(&cos_lock);
		e = cos_enclave;
		/*
		 * A local shoot waits for this CPU: pending, or (the usual order: sched_ext calls
		 * ops.dispatch before it puts the previous task back) already taken by its
		 * ops.dispatch and not yet running.  Put on the local DSQ instead, the lord would
		 * make ops.tick end the shot task's slice (see the shim's D).
		 */
		if (e && e->lord == p && cos_cpu_shot_locked(e->lord_cpu, NULL))
			return COS_ENQ_LORD_YIELD;
		return COS_ENQ_LORD;
	}
	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return COS_ENQ_FAIR;
	e = cos_enclave;
	msg = t->next_msg ?: COS_MSG_TASK_RUNNABLE;
	t->next_msg = 0;
	t->cpu = task_cpu(p);
	if (e && e->active && cpumask_intersects(p->cpus_ptr, e->cpus)) {
		cos_task_set_state_locked(t, COS_TASK_WAITING);
		ret = COS_ENQ_CUSTODY;
	} else {
		cos_task_set_state_locked(t, COS_TASK_FAIR);
	}
	cos_post(e, msg, t->cpu, t, msg == COS_MSG_TASK_PREEMPTED ? t->next_arg : 0);
	return ret;
}

/**
 * cos_kf_dequeue() - @p leaves the shim's custody
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Two cases.  A shot task that ops.dispatch already took (QUEUED, no longer pending) is on its
 * way to run: since Linux 7.1 sched_ext calls ops.dequeue when a task's custody ends in a local
 * DSQ, and that is no departure; it stays QUEUED until ops.running.  (Should the insert be
 * dropped because the task was dequeued for a property change meanwhile, its re-enqueue posts
 * RUNNABLE.)  Otherwise the task leaves without running (property change, exit): a pending
 * shoot of it is cancelled (SHOOT_STALE) and it is re-enqueued later if still runnable.
 * Context: ops.dequeue.
 */
__bpf_kfunc void cos_kf_dequeue(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	if (t->state == COS_TASK_QUEUED && cos_pending_peek_locked(t->cpu) != t) {
		/* taken by ops.dispatch: custody ends in the local DSQ */
	} else if (t->state == COS_TASK_WAITING || t->state == COS_TASK_QUEUED || t->fallback) {
		/* leaves without running; a fallback one the shim did not take yet, too */
		cos_pending_clear_locked(t);
		cos_task_set_state_locked(t, COS_TASK_BLOCKED);
		cos_status_sync(t);
	}
}

/**
 * cos_kf_dispatch() - the pid of the task shot to @cpu, or 0
 * @cpu: the dispatching CPU
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * The shim looks the task up (bpf_task_from_pid), checks it may still run on @cpu and inserts
 * it into the local DSQ; if it cannot, it reports cos_kf_dispatch_failed().  A task that exits
 * in between is not found, or sched_ext drops the insert; exit_task cleans up either way.
 * Context: ops.dispatch (rq lock of @cpu held, IRQs off); lock-free when nothing is shot to
 * @cpu (cos_pending_none()), else takes cos_lock.
 */
__bpf_kfunc s32 cos_kf_dispatch(s32 cpu, struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	if (cos_pending_none(cpu))	/* every dispatch of every CPU: no global lock */
		return 0;
	if (!cos_kf_bound(aux))
		return 0;
	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_pending_take_locked(cpu);
	return t ? t->p->pid : 0;
}

/**
 * cos_kf_task_slice() - the slice the lord gave @p's pending shoot (0 = no limit)
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.dispatch, right after cos_kf_dispatch().
 */
__bpf_kfunc u64 cos_kf_task_slice(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	struct cos_task *t = cos_kf_task(aux, p, slot);

	return t ? READ_ONCE(t->slice) : 0;
}

/**
 * cos_kf_dispatch_failed() - the shim could not start @p on @cpu: back to waiting
 * @p: the task; @slot: its slot; @cpu: where it was shot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Posts SHOOT_FAILED (arg = @cpu).  Context: ops.dispatch.
 */
__bpf_kfunc void cos_kf_dispatch_failed(struct task_struct *p, s32 slot, s32 cpu,
					 struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	cos_taken_clear_locked(cpu);
	if (t->state == COS_TASK_QUEUED) {
		cos_task_set_state_locked(t, COS_TASK_WAITING);
		cos_post(cos_enclave, COS_MSG_SHOOT_FAILED, cpu, t, cpu);
	}
}

/**
 * cos_kf_fallback_take() - the pid of a task in custody that now belongs to the fair policy
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * After a stall or the lord's death the shim drains these from ops.dispatch into its fair
 * queue.  Context: ops.dispatch.  Return: a pid, or 0 when there are none.
 */
__bpf_kfunc s32 cos_kf_fallback_take(struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	if (!READ_ONCE(cos_fallback_pending) || !cos_kf_bound(aux))
		return 0;
	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_fallback_take_locked();
	return t ? t->p->pid : 0;
}

/**
 * cos_kf_running() - @p starts running on @cpu
 * @p: the task; @slot: its slot; @cpu: the CPU
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.running.
 */
__bpf_kfunc void cos_kf_running(struct task_struct *p, s32 slot, s32 cpu, struct bpf_prog_aux *aux)
{
	struct cos_task *t;
	bool shot;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	shot = t->state == COS_TASK_QUEUED;
	cos_taken_clear_locked(cpu);
	/* Woken without ops.enqueue (exiting, migration-disabled): say it is runnable. */
	if (t->state == COS_TASK_BLOCKED)
		cos_post(cos_enclave, COS_MSG_TASK_RUNNABLE, cpu, t, COS_RUNNABLE_BYPASS);
	cos_task_set_state_locked(t, COS_TASK_RUNNING);
	t->cpu = cpu;
	t->run_start = p->se.sum_exec_runtime;
	if (shot && cos_enclave && (cos_enclave->flags & COS_LORD_F_RUNNING_MSGS))
		cos_post(cos_enclave, COS_MSG_TASK_RUNNING, cpu, t, cpu);
	else
		cos_status_sync(t);
}

/**
 * cos_kf_stopping() - @p stops running (@runnable: it will be enqueued again)
 * @p: the task; @slot: its slot; @runnable: preempted/yielded rather than blocked
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Accounts its runtime and notes why it stopped, for the message of its next enqueue.
 * Context: ops.stopping.
 */
__bpf_kfunc void cos_kf_stopping(struct task_struct *p, s32 slot, bool runnable,
				 struct bpf_prog_aux *aux)
{
	struct cos_task *t;
	u64 used;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	used = p->se.sum_exec_runtime - t->run_start;
	t->runtime += used;
	if (runnable && t->next_msg != COS_MSG_TASK_YIELD) {
		/*
		 * Why it stopped.  Every preemption zeroes the slice (a shoot's kick, and sched_ext
		 * for a task queued with SCX_ENQ_PREEMPT), so a zero slice proves nothing: compare
		 * the CPU time it used with the slice the lord gave it (0 = no limit).
		 */
		t->next_msg = COS_MSG_TASK_PREEMPTED;
		if (cos_cpu_shot_locked(task_cpu(p), t))
			t->next_arg = COS_PREEMPT_BY_COS;
		else if (t->slice && used >= t->slice)
			t->next_arg = COS_PREEMPT_BY_SLICE;
		else
			t->next_arg = COS_PREEMPT_BY_OTHER;
	}
}

/**
 * cos_kf_quiescent() - @p is no longer runnable; posts BLOCKED if it went to sleep
 * @p: the task; @slot: its slot; @sleep: SCX_DEQ_SLEEP was set
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.quiescent.
 */
__bpf_kfunc void cos_kf_quiescent(struct task_struct *p, s32 slot, bool sleep,
				  struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	if (sleep) {
		cos_task_set_state_locked(t, COS_TASK_BLOCKED);
		t->next_msg = 0;
		cos_post(cos_enclave, COS_MSG_TASK_BLOCKED, task_cpu(p), t, 0);
	}
}

/**
 * cos_kf_yield() - @p called sched_yield(): its next enqueue posts TASK_YIELD
 * @p: the task; @slot: its slot.  Context: ops.yield.
 * @aux: the calling program, supplied by the verifier (see "Binding")
 */
__bpf_kfunc void cos_kf_yield(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	t->next_msg = COS_MSG_TASK_YIELD;
}

/**
 * cos_kf_set_cpumask() - @p's allowed CPUs changed: posts TASK_AFFINITY
 * @p: the task; @slot: its slot.  Context: ops.set_cpumask.
 * @aux: the calling program, supplied by the verifier (see "Binding")
 */
__bpf_kfunc void cos_kf_set_cpumask(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	struct cos_task *t;

	guard(raw_spinlock_irqsave)(&cos_lock);
	t = cos_kf_task(aux, p, slot);
	if (!t)
		return;
	cos_post(cos_enclave, COS_MSG_TASK_AFFINITY, task_cpu(p), t, 0);
}

/**
 * cos_kf_lord_cpu() - the lord's CPU, or -1 without a lord.  Context: any; lock-free.
 */
__bpf_kfunc s32 cos_kf_lord_cpu(void)
{
	return READ_ONCE(cos_lord_cpu);
}

/**
 * cos_kf_lord_active() - whether a lord has control now.  Context: any; lock-free.
 */
__bpf_kfunc bool cos_kf_lord_active(void)
{
	return READ_ONCE(cos_lord_active);
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(cos_kfunc_ids)
BTF_ID_FLAGS(func, cos_kf_abi_version)
BTF_ID_FLAGS(func, cos_kf_shim_attached, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_task_attach, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_task_detach, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_exit_task, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_enqueue, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_dequeue, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_dispatch, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_task_slice, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_dispatch_failed, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_fallback_take, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_running, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_stopping, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_quiescent, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_yield, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_set_cpumask, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_lord_cpu)
BTF_ID_FLAGS(func, cos_kf_lord_active)
BTF_KFUNCS_END(cos_kfunc_ids)

/*
 * Which op may call which kfunc: a kfunc set per calling context, the way ext.c splits its own
 * (scx_kfunc_ids_*), checked by the verifier when it loads the shim, not at run time.  Each
 * kfunc is listed once, in COS_KF_EACH, which numbers it (COS_KF_*) and puts its BTF id at that
 * index of cos_kf_list; an op's entry is the set of those it may call.  An op not listed may
 * call only the lock-free COS_KF_ANY ones.  The shim (kmod/cos_shim.bpf.c) calls each kfunc
 * from the ops listed here and no other; a program of another op that calls it does not load.
 */
#define COS_KF_EACH(X)							\
	X(ABI_VERSION, cos_kf_abi_version)				\
	X(SHIM_ATTACHED, cos_kf_shim_attached)				\
	X(TASK_ATTACH, cos_kf_task_attach)				\
	X(TASK_DETACH, cos_kf_task_detach)				\
	X(EXIT_TASK, cos_kf_exit_task)					\
	X(ENQUEUE, cos_kf_enqueue)					\
	X(DEQUEUE, cos_kf_dequeue)					\
	X(DISPATCH, cos_kf_dispatch)					\
	X(TASK_SLICE, cos_kf_task_slice)				\
	X(DISPATCH_FAILED, cos_kf_dispatch_failed)			\
	X(FALLBACK_TAKE, cos_kf_fallback_take)				\
	X(RUNNING, cos_kf_running)					\
	X(STOPPING, cos_kf_stopping)					\
	X(QUIESCENT, cos_kf_quiescent)					\
	X(YIELD, cos_kf_yield)						\
	X(SET_CPUMASK, cos_kf_set_cpumask)				\
	X(LORD_CPU, cos_kf_lord_cpu)					\
	X(LORD_ACTIVE, cos_kf_lord_active)

#define COS_KF_ENUM(idx, name)		COS_KF_##idx,
enum { COS_KF_EACH(COS_KF_ENUM) COS_KF_NR };

#define COS_KF_BTF_ID(idx, name)	BTF_ID(func, name)
BTF_ID_LIST(cos_kf_list)
COS_KF_EACH(COS_KF_BTF_ID)

#define KF(name)	BIT(COS_KF_##name)
/* Tasks come and go (cos_slot() in the shim) in every op that first sees a task's policy. */
#define COS_KF_SLOT	(KF(TASK_ATTACH) | KF(TASK_DETACH))
#define COS_KF_ANY	(KF(LORD_CPU) | KF(LORD_ACTIVE))

static const struct {
	const char *op;		/* the sched_ext_ops member */
	u32 kfuncs;
} cos_kf_ops[] = {
	{ "init",		KF(ABI_VERSION) | KF(SHIM_ATTACHED) },
	{ "exit",		KF(SHIM_ATTACHED) },
	{ "select_cpu",		COS_KF_SLOT },
	{ "enqueue",		COS_KF_SLOT | KF(ENQUEUE) },
	{ "enable",		COS_KF_SLOT },
	{ "dequeue",		KF(DEQUEUE) },
	{ "dispatch",		KF(DISPATCH) | KF(TASK_SLICE) | KF(DISPATCH_FAILED) | KF(FALLBACK_TAKE) },
	{ "running",		KF(RUNNING) },
	{ "stopping",		KF(STOPPING) },
	{ "quiescent",		KF(QUIESCENT) },
	{ "yield",		KF(YIELD) },
	{ "set_cpumask",	KF(SET_CPUMASK) },
	{ "disable",		KF(TASK_DETACH) },
	{ "exit_task",		KF(TASK_DETACH) | KF(EXIT_TASK) },
};

/* The kfuncs the sched_ext op @op may call: a COS_KF_* mask. */
static u32 cos_kf_allowed(const char *op)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(cos_kf_ops); i++)
		if (!strcmp(cos_kf_ops[i].op, op))
			return cos_kf_ops[i].kfuncs | COS_KF_ANY;
	return COS_KF_ANY;
}

/*
 * Which kfunc (COS_KF_*) the BTF id @kfunc_id is, or -1.  The ids resolve_btfids wrote into
 * cos_kf_list[] at build time are the ones the verifier passes the filter only because the
 * module has no distilled base BTF (the build passes RESOLVE_BTFIDS_FLAGS=, see Makefile): with
 * one, the kernel would relocate the module's BTF when it loads and every id would move.
 * cos_kfuncs_init() refuses a module built with one.
 */
static int cos_kf_index(u32 kfunc_id)
{
	int kf;

	for (kf = 0; kf < COS_KF_NR; kf++)
		if (cos_kf_list[kf] == kfunc_id)
			return kf;
	return -1;
}

/*
 * The verifier calls this for every call of this module's kfuncs in a program it loads: only
 * the shim's programs (struct_ops of sched_ext_ops, named "cos_*", see the top comment) may
 * call them, each only from the ops cos_kf_ops[] gives it.  The verifier asks twice: first
 * while it collects the program's kfunc calls, before it knows which struct_ops member the
 * program implements (aux->st_ops and aux->attach_func_name still NULL: allow then), and again
 * for each call while it checks the program, with both set.  The second answer is the one
 * that counts.  Context: process (BPF_PROG_LOAD), may sleep.
 */
static int cos_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	const char *op = prog->aux->attach_func_name;
	int kf;

	if (prog->type != BPF_PROG_TYPE_STRUCT_OPS)
		return -EACCES;
	if (strncmp(prog->aux->name, "cos_", 4))
		return -EACCES;
	if (!prog->aux->st_ops)
		return 0;
	if (strcmp(prog->aux->st_ops->name, "sched_ext_ops") || !op)
		return -EACCES;
	kf = cos_kf_index(kfunc_id);
	if (kf < 0)
		return -EACCES;
	return cos_kf_allowed(op) & BIT(kf) ? 0 : -EACCES;
}

static const struct btf_kfunc_id_set cos_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &cos_kfunc_ids,
	.filter = cos_kfunc_filter,
};

int cos_kfuncs_init(void)
{
	int ret;

	if (!THIS_MODULE->btf_data_size) {
		pr_err("module has no BTF (built without pahole?): the shim could not call it; refusing to load\n");
		return -ENOENT;
	}
	/* Only the size: the section's data is gone by now (the module's load copy is freed). */
	if (THIS_MODULE->btf_base_data_size) {
		pr_err("module BTF has a distilled base (.BTF.base): its kfunc ids would move at load; build it with RESOLVE_BTFIDS_FLAGS= (see the Makefile); refusing to load\n");
		return -EINVAL;
	}
	ret = register_btf_kfunc_id_set(BPF_PROG_TYPE_STRUCT_OPS, &cos_kfunc_set);
	if (ret)
		pr_err("cannot register the kfunc set: %d\n", ret);
	return ret;
}
