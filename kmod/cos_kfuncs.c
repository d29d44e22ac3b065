// SPDX-License-Identifier: GPL-2.0
/*
 * cos_kfuncs.c — the kfuncs cos.ko offers its BPF shim: the shim reports task events through
 * them and asks them what to run.  Each is an adapter onto a verb of cos_task.c, cos_lord.c or
 * cos_group.c, whose kernel-doc states its locks.  Unless its kernel-doc says otherwise, a
 * kfunc is called from a sched_ext op with the task's rq lock held and IRQs off, and never
 * sleeps.  Exceptions: ops.select_cpu holds @p's pi_lock, not its rq lock; the dispatch
 * kfuncs hold the dispatching CPU's rq lock; ops.init/exit may sleep.
 *
 * Three layers keep anyone but the shim off them.  The filter, at load time
 * (cos_kfunc_filter()): sched_ext's own covers only vmlinux kfuncs, so this set carries one.  Trusted pointers: the verifier admits
 * only a task_struct pointer that sched_ext passed to the op or a kfunc returned, so these
 * kfuncs may dereference it; they check that the slot still belongs to it.  That needs the
 * module's BTF to name vmlinux's struct task_struct, not a copy (kmod/btf-rededup.c).  The
 * binding, at run time (below).
 *
 * register_btf_kfunc_id_set() only warns without module BTF, so cos_kfuncs_init() checks for
 * it and refuses to load.  See docs/design.md, "How the kfuncs are bound and filtered".
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/cleanup.h>
#include <linux/module.h>
#include <linux/sched/task.h>
#include <linux/string.h>

#include "cos_internal.h"

/* SCX_ENQ_WAKEUP (== ENQUEUE_WAKEUP): sched_ext's flag enums are not in the public headers. */
#define COS_SCX_ENQ_WAKEUP	1ULL


/*
 * Binding.  The kfuncs marked COS_KFUNC_BOUND (shim/cos_shim_intf.h) act only for a program of
 * the shim that attached: the struct_ops map libcos named with COS_IOC_SHIM_BIND (by its map
 * id) before attaching it, from its ops.init's cos_kf_shim_attached(true) until its ops.exit.
 * The kernel ties each struct_ops program to the one map it was put in
 * (bpf_prog_get_assoc_struct_ops(): NULL for a program put in two maps).  The verifier hands
 * each bound kfunc its caller's bpf_prog_aux (KF_IMPLICIT_ARGS).  A program of another map (a
 * look-alike scheduler attached without SHIM_BIND, a sub-scheduler) is answered as for a task
 * that is not a COS task; a look-alike's ops.init is refused the binding.
 *
 * Orphaned.  A program of no single map while a shim is bound may be the bound shim's, put in
 * a second map since: from then on nothing can tell its programs from another's.  The first
 * such call orphans the binding: the lord loses control until a shim attaches again, its tasks
 * go to the fair policy, and only the kfuncs that let them leave custody stay open to programs of no single
 * map (fallback_take, task_detach, exit_task), so that no task waits for sched_ext's watchdog.
 * The ops.exit of a program of no single map ends the binding too: fail safe.
 *
 * cos_shim_ops, cos_shim_expected and cos_shim_orphaned are written under cos_lock, read
 * lock-free; cos_shim_ops is only compared.
 */
static void *cos_shim_ops;
static u32 cos_shim_expected;	/* the map id SHIM_BIND named, 0: none */
static bool cos_shim_orphaned;

/* A bound shim's program was put in a second map (see "Orphaned").  Takes cos_lock. */
static void cos_kf_orphan(void)
{
	static struct cpumask kick;	/* under cos_lock until the kick */

	scoped_guard(raw_spinlock_irqsave, &cos_lock) {
		if (!cos_shim_ops || cos_shim_orphaned)
			return;
		WRITE_ONCE(cos_shim_orphaned, true);
		cpumask_clear(&kick);
		cos_lord_orphaned_locked(&kick);
	}
	pr_warn("the shim's programs were put in a second struct_ops map: its COS tasks go to the fair policy\n");
	cos_kick_cpus(&kick);	/* after the unlock: see cos_internal.h */
}

/* Who calls a bound kfunc: a program of the bound shim's map, of no single map, or other. */
enum cos_kf_caller { COS_KF_OTHER, COS_KF_SHIM, COS_KF_NO_MAP };

/*
 * The calling program's kind while a shim is bound (COS_KF_OTHER while none is).  The first
 * call of a program of no single map orphans the binding.  Context: any; lock-free.
 */
static enum cos_kf_caller cos_kf_caller(const struct bpf_prog_aux *aux)
{
	void *ops = READ_ONCE(cos_shim_ops), *assoc;

	if (!ops)
		return COS_KF_OTHER;
	assoc = bpf_prog_get_assoc_struct_ops(aux);
	if (likely(assoc == ops))
		return COS_KF_SHIM;
	if (assoc)
		return COS_KF_OTHER;
	if (!READ_ONCE(cos_shim_orphaned))
		cos_kf_orphan();
	return COS_KF_NO_MAP;
}

/* Is the calling program one of the attached shim's, its binding not orphaned? */
static bool cos_kf_bound(const struct bpf_prog_aux *aux)
{
	return cos_kf_caller(aux) == COS_KF_SHIM && !READ_ONCE(cos_shim_orphaned);
}

/* As cos_kf_bound(), or a program of no single map or the shim's once orphaned. */
static bool cos_kf_bound_or_orphan(const struct bpf_prog_aux *aux)
{
	return cos_kf_caller(aux) != COS_KF_OTHER;
}

/**
 * cos_ioc_shim_bind() - COS_IOC_SHIM_BIND: the struct_ops map the next attach must be
 * @uarg: user pointer to struct cos_shim_bind
 *
 * Context: process context (the caller has CAP_SYS_ADMIN); takes cos_lock.
 * Return: 0, -EFAULT, -EINVAL (flags, id 0), -EBUSY (a shim is bound).
 */
long cos_ioc_shim_bind(void __user *uarg)
{
	struct cos_shim_bind b;

	if (copy_from_user(&b, uarg, sizeof(b)))
		return -EFAULT;
	if (b.flags || !b.map_id)
		return -EINVAL;
	guard(raw_spinlock_irqsave)(&cos_lock);
	if (cos_shim_ops)
		return -EBUSY;
	WRITE_ONCE(cos_shim_expected, b.map_id);
	return 0;
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
 * Its bandwidth groups go too (the next shim's ops.cgroup_init makes them again).
 * Attaching binds the module to the calling program's map if it is the one COS_IOC_SHIM_BIND
 * named (see "Binding").
 * Context: ops.init / ops.exit (sleepable or not), process context; takes cos_lock with IRQs
 * off, then (leaving) the group table's lock.
 * Return: 0; attaching: -EBUSY (of no single map, or a shim is bound), -EPERM (not the map
 * named; the shim fails its ops.init).
 */
__bpf_kfunc s32 cos_kf_shim_attached(bool attached, u32 caps, struct bpf_prog_aux *aux)
{
	void *ops = bpf_prog_get_assoc_struct_ops(aux);

	scoped_guard(raw_spinlock_irqsave, &cos_lock) {
		if (attached) {
			if (!ops || cos_shim_ops)
				return -EBUSY;	/* of no single map, or a shim is bound already */
			if (!cos_shim_expected || bpf_struct_ops_id(ops) != cos_shim_expected)
				return -EPERM;	/* not the map libcos named (COS_IOC_SHIM_BIND) */
			WRITE_ONCE(cos_shim_expected, 0);
			WRITE_ONCE(cos_shim_orphaned, false);
			WRITE_ONCE(cos_shim_ops, ops);
		} else {
			/*
			 * The bound shim leaves.  A program of no single map (put in a second
			 * map since it attached) may be its ops.exit too: unbinding is the safe
			 * answer then, else the binding would outlive the scheduler.  Another
			 * map's exit is not ours.
			 */
			if (!cos_shim_ops || (ops && ops != cos_shim_ops))
				return 0;
			WRITE_ONCE(cos_shim_ops, NULL);
			WRITE_ONCE(cos_shim_orphaned, false);
		}
		cos_lord_shim_changed_locked(attached, caps);
	}
	/* sched_ext exits every cgroup before ops.exit; what is left now would be stale */
	if (!attached)
		cos_groups_clear();
	return 0;
}

/**
 * cos_kf_task_attach() - give COS task @p a slot in the task table
 * @p: a task whose policy is SCHED_EXT
 * @runnable: whether it is runnable now (the TASK_NEW message's arg)
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: the op that first sees @p as a COS task: ops.select_cpu (@p's pi_lock held, not its
 * rq lock), ops.enqueue or ops.enable (its rq lock held); IRQs off; cos_task_attach().
 * Return: the slot, -ENOSPC when the table is full (the task stays under the fair policy), or
 * -EPERM for a program that is not the attached shim's.
 */
__bpf_kfunc s32 cos_kf_task_attach(struct task_struct *p, bool runnable, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) ? cos_task_attach(p, runnable) : -EPERM;
}

/**
 * cos_kf_task_detach() - @p died or left SCHED_EXT: post TASK_DEAD and free its slot
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: the op that sees @p leave SCHED_EXT or sched_ext: ops.select_cpu (@p's pi_lock held,
 * not its rq lock), ops.enqueue, ops.enable, ops.disable or ops.exit_task; IRQs off;
 * cos_task_detach().
 */
__bpf_kfunc void cos_kf_task_detach(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound_or_orphan(aux))
		cos_task_detach(p, slot);
}

/**
 * cos_kf_exit_task() - any task @p is leaving the shim; if it is the lord exiting, fall back now
 * @p: the task
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * The lord's /dev/cos file may outlive the lord thread (another thread or a child holds it),
 * so its exit is the death signal that does not wait for the file's release.  sched_ext also
 * calls ops.exit_task for every live task when the shim leaves (a detach, a watchdog's or an
 * error's ejection, SysRq-S): a lord that is not exiting (no PF_EXITING) stays registered, and
 * gets control back once a shim is back (cos_lord_shim_changed_locked(); docs/design.md,
 * "The shim coming and going").
 * Context: ops.exit_task; no lock unless @p is the lord (then cos_lord_exited()).
 */
__bpf_kfunc void cos_kf_exit_task(struct task_struct *p, struct bpf_prog_aux *aux)
{
	if ((p->flags & PF_EXITING) && cos_lord_index(p) >= 0 && cos_kf_bound_or_orphan(aux))
		cos_lord_exited(p);
}

/**
 * cos_kf_select_cpu() - the CPU the lord's wake rules would start waking COS task @p on, or -1
 * @p: the task; @slot: its slot
 * @prev_cpu: the CPU it last ran on
 * @idle: sched_ext's idle CPUs (scx_bpf_get_idle_cpumask(), held by the caller)
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * The shim returns it from ops.select_cpu, so that the task is enqueued there and
 * cos_kf_enqueue() can start it without a migration (cos_task_select_cpu(); nothing is claimed
 * here).  -1 also for a task that is not a COS task or a shim that is not bound.
 * Context: ops.select_cpu (@p's pi_lock held, IRQs off); lock-free.
 */
__bpf_kfunc s32 cos_kf_select_cpu(struct task_struct *p, s32 slot, s32 prev_cpu,
				  const struct cpumask *idle, struct bpf_prog_aux *aux)
{
	if (slot < 0 || !cos_kf_bound(aux))
		return -1;
	return cos_task_select_cpu(p, slot, prev_cpu, idle);
}

/**
 * cos_kf_enqueue() - where should the shim put runnable task @p?
 * @p: the task; @slot: its slot, or -1 if it is not a COS task
 * @enq_flags: SCX_ENQ_*
 * @cgid: its cgroup (bandwidth group)
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * A COS task: cos_task_enqueue() (custody when a lord has control and @p may run on one of
 * its CPUs).  The lord itself gets COS_ENQ_LORD, or COS_ENQ_LORD_YIELD when it is put back
 * (not a wake-up) while its own local shoot is pending or taken on its CPU: another lord's, on
 * a lord CPU they share, must not park it (it would wait out that task's slice, and stall).  In the local DSQ the
 * lord would make ops.tick end the shot task's slice (the tick rule, docs/design.md, "COS
 * tasks and tiers").  "Taken" is the usual case: sched_ext calls ops.dispatch before it puts
 * the previous task back.
 * Context: ops.enqueue (@p's rq lock held, IRQs off); lock-free unless @slot >= 0 (then
 * cos_task_enqueue()).
 * Return: COS_ENQ_FAIR, COS_ENQ_CUSTODY, COS_ENQ_PLACED (the lord's wake rules started it on
 * its CPU), COS_ENQ_LORD or COS_ENQ_LORD_YIELD.
 */
__bpf_kfunc enum cos_enq cos_kf_enqueue(struct task_struct *p, s32 slot, u64 enq_flags,
					 u64 cgid, struct bpf_prog_aux *aux)
{
	struct cos_enclave *e;
	int i;

	if (slot >= 0)
		return cos_kf_bound(aux) ? cos_task_enqueue(p, slot, enq_flags & COS_SCX_ENQ_WAKEUP,
							    cgid) : COS_ENQ_FAIR;
	i = cos_lord_index(p);
	if (i < 0 || !cos_kf_bound(aux))
		return COS_ENQ_FAIR;
	if (enq_flags & COS_SCX_ENQ_WAKEUP)
		return COS_ENQ_LORD;
	e = rcu_dereference_sched(cos_enclaves[i]);
	if (e && READ_ONCE(e->lord) == p && cos_cpu_shot_by(e->lord_cpu, e))
		return COS_ENQ_LORD_YIELD;
	return COS_ENQ_LORD;
}

/**
 * cos_kf_dequeue() - @p leaves the shim's custody (cos_task_dequeue())
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.dequeue (@p's rq lock held, IRQs off).
 */
__bpf_kfunc void cos_kf_dequeue(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_task_dequeue(p, slot);
}

/**
 * cos_kf_dispatch() - take the task shot to @cpu, and its slice
 * @cpu: the dispatching CPU
 * @slice: set to the slice the lord gave the shoot (0: no limit)
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * The shim checks that the task may still run on @cpu and inserts it into the local DSQ, or
 * reports cos_kf_dispatch_failed(); then it releases it (bpf_task_release()).  A task that
 * exits in between has its insert dropped by sched_ext; exit_task cleans up.
 * Context: ops.dispatch (rq lock of @cpu held, IRQs off); lock-free when nothing is shot to
 * @cpu (cos_pending_none()), else cos_dispatch_take().
 * Return: the task, referenced; NULL when nothing is shot to @cpu.
 */
__bpf_kfunc struct task_struct *cos_kf_dispatch(s32 cpu, u64 *slice, struct bpf_prog_aux *aux)
{
	if (cos_pending_none(cpu))	/* every dispatch of every CPU: no lock at all */
		return NULL;
	return cos_kf_bound(aux) ? cos_dispatch_take(cpu, slice) : NULL;
}

/**
 * cos_kf_task_slice() - the slice the lord gave @p's shoot (0 = no limit)
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.enqueue, after cos_kf_enqueue() said COS_ENQ_PLACED (the wake slice);
 * lock-free.
 */
__bpf_kfunc u64 cos_kf_task_slice(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) ? cos_task_slice(p, slot) : 0;
}

/**
 * cos_kf_dispatch_failed() - the shim could not start @p on @cpu: back to waiting
 * @p: the task; @slot: its slot; @cpu: where it was shot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Posts SHOOT_FAILED (arg = @cpu).  Context: ops.dispatch; cos_dispatch_failed().
 */
__bpf_kfunc void cos_kf_dispatch_failed(struct task_struct *p, s32 slot, s32 cpu,
					 struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_dispatch_failed(p, slot, cpu);
}

/**
 * cos_kf_fallback_take() - the pid of a task in custody that now belongs to the fair policy
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * After a stall or the lord's death the shim drains these from ops.dispatch into its fair
 * queue.  Context: ops.dispatch; lock-free when there are none (cos_fallback_take()).
 * Return: a pid, or 0 when there are none.
 */
__bpf_kfunc s32 cos_kf_fallback_take(struct bpf_prog_aux *aux)
{
	if (!READ_ONCE(cos_fallback_pending) || !cos_kf_bound_or_orphan(aux))
		return 0;
	return cos_fallback_take();
}

/**
 * cos_kf_running() - @p starts running on @cpu (cos_task_running())
 * @p: the task; @slot: its slot; @cpu: the CPU
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.running (@cpu's rq lock held, IRQs off).
 */
__bpf_kfunc void cos_kf_running(struct task_struct *p, s32 slot, s32 cpu, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_task_running(p, slot, cpu);
}

/**
 * cos_kf_stopping() - @p stops running (cos_task_stopping())
 * @p: the task; @slot: its slot; @runnable: preempted/yielded rather than blocked
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.stopping (@p's rq lock held, IRQs off).
 */
__bpf_kfunc void cos_kf_stopping(struct task_struct *p, s32 slot, bool runnable,
				 struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_task_stopping(p, slot, runnable);
}

/**
 * cos_kf_quiescent() - @p is no longer runnable; posts BLOCKED if it went to sleep
 * @p: the task; @slot: its slot; @sleep: SCX_DEQ_SLEEP was set
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.quiescent (@p's rq lock held, IRQs off); cos_task_quiescent().
 */
__bpf_kfunc void cos_kf_quiescent(struct task_struct *p, s32 slot, bool sleep,
				  struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_task_quiescent(p, slot, sleep);
}

/**
 * cos_kf_yield() - @p called sched_yield(): its next enqueue posts TASK_YIELD
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.yield (@p's rq lock held, IRQs off); cos_task_yield().
 * Return: whether @p's CPU was handed to the task it woke (COS_WAKE_HANDOFF): the shim then
 * ends @p's slice.
 */
__bpf_kfunc bool cos_kf_yield(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) && cos_task_yield(p, slot);
}

/**
 * cos_kf_set_cpumask() - @p's allowed CPUs changed: posts TASK_AFFINITY
 * @p: the task; @slot: its slot
 * @aux: the calling program, supplied by the verifier (see "Binding")
 * Context: ops.set_cpumask (@p's rq lock held, IRQs off); cos_task_affinity().
 */
__bpf_kfunc void cos_kf_set_cpumask(struct task_struct *p, s32 slot, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_task_affinity(p, slot);
}

/**
 * cos_kf_cpu_hotplug() - @cpu went online (@online) or offline: cos_lord_cpu_hotplug()
 * @cpu: the CPU; @online: its new state
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Implementing ops.cpu_online/offline is what keeps sched_ext from ejecting the shim on CPU
 * hotplug; this tells the lord and keeps shoots off an offline CPU.
 * Context: ops.cpu_online / ops.cpu_offline (the CPU hotplug thread, cpus_read_lock held, no
 * rq lock).
 */
__bpf_kfunc void cos_kf_cpu_hotplug(s32 cpu, bool online, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_lord_cpu_hotplug(cpu, online);
}

/**
 * cos_kf_cgroup_init() - a cgroup with a cpu controller appeared (or the shim attached)
 * @id: its cgroup id
 * @parent_id: its parent's, 0 for the root
 * @weight: its cpu.weight
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.cgroup_init (sleepable), process context; cos_group_init().
 * Return: 0, or a negative errno that fails the cgroup's creation (-EPERM for a program that
 * is not the attached shim's).
 */
__bpf_kfunc s32 cos_kf_cgroup_init(u64 id, u64 parent_id, u32 weight, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) ? cos_group_init(id, parent_id, weight) : -EPERM;
}

/**
 * cos_kf_cgroup_exit() - cgroup @id is gone (or the shim is leaving)
 * @id: its cgroup id
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.cgroup_exit, process context; cos_group_exit().
 */
__bpf_kfunc void cos_kf_cgroup_exit(u64 id, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_group_exit(id);
}

/**
 * cos_kf_cgroup_set_bandwidth() - cgroup @id's cpu.max or cpu.max.burst is (now) this
 * @id: its cgroup id
 * @period_us: cpu.max's period
 * @quota_us: its quota, or the kernel's RUNTIME_INF for "max"
 * @burst_us: cpu.max.burst
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.cgroup_init or ops.cgroup_set_bandwidth, process context;
 * cos_group_set_bandwidth().
 */
__bpf_kfunc void cos_kf_cgroup_set_bandwidth(u64 id, u64 period_us, u64 quota_us, u64 burst_us,
					     struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_group_set_bandwidth(id, period_us, quota_us, burst_us);
}

/**
 * cos_kf_cgroup_set_weight() - cgroup @id's cpu.weight is now @weight
 * @id: its cgroup id
 * @weight: 1..10000
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.cgroup_set_weight, process context; lock-free.
 */
__bpf_kfunc void cos_kf_cgroup_set_weight(u64 id, u32 weight, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_group_set_weight(id, weight);
}

/**
 * cos_kf_group_charge() - charge a task's CPU time to its cgroup @id's bandwidth groups
 * @id: the task's cgroup id
 * @ns: what it ran since its last charge
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.stopping or ops.tick, the task's rq lock held, IRQs off; cos_group_charge().
 * Return: whether its group or an ancestor is throttled now (false for another program).
 */
__bpf_kfunc bool cos_kf_group_charge(u64 id, u64 ns, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) && cos_group_charge(id, ns);
}

/**
 * cos_kf_group_throttled() - where a task of cgroup @id parks, if its chain is throttled
 * @id: the task's cgroup id
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.select_cpu, ops.enqueue or ops.dispatch; lock-free; cos_group_throttled().
 * Return: the id of the nearest throttled group, 0 if none (or for another program).
 */
__bpf_kfunc u64 cos_kf_group_throttled(u64 id, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) ? cos_group_throttled(id) : 0;
}

/**
 * cos_kf_group_budget() - a task of cgroup @id starts here: reserve this CPU's share of its
 * chain's budget
 * @id: the task's cgroup id
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.running, the task's rq lock held, IRQs off; cos_group_budget().
 * Return: how long the task may run before the budget stops it: 0 if spent, U64_MAX without a
 * limit, while the module's timer renews the reservation (or for another program), else the
 * share in ns.
 */
__bpf_kfunc u64 cos_kf_group_budget(u64 id, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) ? cos_group_budget(id) : U64_MAX;
}

/**
 * cos_kf_group_stopped() - the task whose budget ops.running asked for stops
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.stopping, after cos_kf_group_charge(), the task's rq lock held, IRQs off;
 * cos_group_stopped().
 */
__bpf_kfunc void cos_kf_group_stopped(struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_group_stopped();
}

/**
 * cos_kf_group_share() - a fair task's effective weight for its vtime, cpu.weight applied
 * @id: the task's cgroup id
 * @weight: its own weight (p->scx.weight)
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.stopping, the task's rq lock held, IRQs off; lock-free; cos_group_share().
 * Return: the weight in 1/COS_GROUP_SHARE_ONE units (@weight's for another program).
 */
__bpf_kfunc u64 cos_kf_group_share(u64 id, u32 weight, struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) ? cos_group_share(id, weight) : weight * COS_GROUP_SHARE_ONE;
}

/**
 * cos_kf_group_runnable() - count a runnable fair task in cgroup @id's share
 * @id: its cgroup id
 * @weight: its weight, which cos_kf_group_quiescent() must pass back
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.select_cpu or ops.enqueue, IRQs off; cos_group_runnable() (the chain's
 * share_locks, one at a time).
 */
__bpf_kfunc void cos_kf_group_runnable(u64 id, u32 weight, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_group_runnable(id, weight);
}

/**
 * cos_kf_group_quiescent() - the task cos_kf_group_runnable() counted is not runnable now
 * @id: the cgroup id it was counted in
 * @weight: the weight it was counted with
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.quiescent, the task's rq lock held, IRQs off; cos_group_quiescent().
 */
__bpf_kfunc void cos_kf_group_quiescent(u64 id, u32 weight, struct bpf_prog_aux *aux)
{
	if (cos_kf_bound(aux))
		cos_group_quiescent(id, weight);
}

/**
 * cos_kf_group_released() - a refilled group whose parked tasks go back to the fair queue
 * @aux: the calling program, supplied by the verifier (see "Binding")
 *
 * Context: ops.dispatch, the CPU's rq lock held; cos_group_released().
 * Return: its cgroup id, 0 if none (or for another program).
 */
__bpf_kfunc u64 cos_kf_group_released(struct bpf_prog_aux *aux)
{
	return cos_kf_bound(aux) ? cos_group_released() : 0;
}

/**
 * cos_kf_lord_cpu() - the oldest enclave's lord CPU, or -1 without a lord.
 * Context: any op; takes cos_lock (cos_lord_first_cpu()).
 */
__bpf_kfunc s32 cos_kf_lord_cpu(void)
{
	return cos_lord_first_cpu();
}

/**
 * cos_kf_lord_active() - whether any lord has control now (each task's own enclave decides
 * the rest: cos_task_select_cpu()).  Context: any; lock-free.
 */
__bpf_kfunc bool cos_kf_lord_active(void)
{
	return atomic_read(&cos_lords_active) > 0;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(cos_kfunc_ids)
BTF_ID_FLAGS(func, cos_kf_abi_version)
BTF_ID_FLAGS(func, cos_kf_shim_attached, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_task_attach, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_task_detach, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_exit_task, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_select_cpu, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_enqueue, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_dequeue, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_dispatch, KF_IMPLICIT_ARGS | KF_ACQUIRE | KF_RET_NULL)
BTF_ID_FLAGS(func, cos_kf_task_slice, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_dispatch_failed, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_fallback_take, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_running, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_stopping, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_quiescent, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_yield, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_set_cpumask, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_cpu_hotplug, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_cgroup_init, KF_IMPLICIT_ARGS | KF_SLEEPABLE)
BTF_ID_FLAGS(func, cos_kf_cgroup_exit, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_cgroup_set_bandwidth, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_cgroup_set_weight, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_charge, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_throttled, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_budget, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_stopped, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_share, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_runnable, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_quiescent, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_group_released, KF_IMPLICIT_ARGS)
BTF_ID_FLAGS(func, cos_kf_lord_cpu)
BTF_ID_FLAGS(func, cos_kf_lord_active)
BTF_KFUNCS_END(cos_kfunc_ids)

/*
 * Which op may call which kfunc: a kfunc set per calling context, as ext.c splits its own
 * (scx_kfunc_ids_*), checked by the verifier when it loads the shim.  Each kfunc is listed
 * once, in COS_KF_EACH, which numbers it (COS_KF_*) and puts its BTF id at that index of
 * cos_kf_list.  An op's entry is the set of those it may call; an op not listed may call only
 * the lock-free COS_KF_ANY ones.  The shim (shim/cos_shim.bpf.c) calls each kfunc only from
 * the ops listed here; a program of another op that calls it does not load.
 */
#define COS_KF_EACH(X)							\
	X(ABI_VERSION, cos_kf_abi_version)				\
	X(SHIM_ATTACHED, cos_kf_shim_attached)				\
	X(TASK_ATTACH, cos_kf_task_attach)				\
	X(TASK_DETACH, cos_kf_task_detach)				\
	X(EXIT_TASK, cos_kf_exit_task)					\
	X(SELECT_CPU, cos_kf_select_cpu)				\
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
	X(CPU_HOTPLUG, cos_kf_cpu_hotplug)				\
	X(CGROUP_INIT, cos_kf_cgroup_init)				\
	X(CGROUP_EXIT, cos_kf_cgroup_exit)				\
	X(CGROUP_SET_BANDWIDTH, cos_kf_cgroup_set_bandwidth)		\
	X(CGROUP_SET_WEIGHT, cos_kf_cgroup_set_weight)			\
	X(GROUP_CHARGE, cos_kf_group_charge)				\
	X(GROUP_THROTTLED, cos_kf_group_throttled)			\
	X(GROUP_BUDGET, cos_kf_group_budget)				\
	X(GROUP_STOPPED, cos_kf_group_stopped)				\
	X(GROUP_SHARE, cos_kf_group_share)				\
	X(GROUP_RUNNABLE, cos_kf_group_runnable)			\
	X(GROUP_QUIESCENT, cos_kf_group_quiescent)			\
	X(GROUP_RELEASED, cos_kf_group_released)			\
	X(LORD_CPU, cos_kf_lord_cpu)					\
	X(LORD_ACTIVE, cos_kf_lord_active)

#define COS_KF_ENUM(idx, name)		COS_KF_##idx,
enum { COS_KF_EACH(COS_KF_ENUM) COS_KF_NR };
static_assert(COS_KF_NR <= 32, "an op's kfuncs are a u32 mask");

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
	{ "select_cpu",		COS_KF_SLOT | KF(SELECT_CPU) | KF(GROUP_THROTTLED) |
				KF(GROUP_RUNNABLE) },
	{ "enqueue",		COS_KF_SLOT | KF(ENQUEUE) | KF(TASK_SLICE) | KF(GROUP_THROTTLED) |
				KF(GROUP_RUNNABLE) },
	{ "enable",		COS_KF_SLOT },
	{ "dequeue",		KF(DEQUEUE) },
	{ "dispatch",		KF(DISPATCH) | KF(DISPATCH_FAILED) | KF(FALLBACK_TAKE) |
				KF(GROUP_THROTTLED) | KF(GROUP_RELEASED) },
	{ "running",		KF(RUNNING) | KF(GROUP_BUDGET) },
	{ "stopping",		KF(STOPPING) | KF(GROUP_CHARGE) | KF(GROUP_STOPPED) | KF(GROUP_SHARE) },
	{ "tick",		KF(GROUP_CHARGE) },
	{ "cgroup_init",	KF(CGROUP_INIT) | KF(CGROUP_SET_BANDWIDTH) },
	{ "cgroup_exit",	KF(CGROUP_EXIT) },
	{ "cgroup_set_bandwidth", KF(CGROUP_SET_BANDWIDTH) },
	{ "cgroup_set_weight",	KF(CGROUP_SET_WEIGHT) },
	{ "quiescent",		KF(QUIESCENT) | KF(GROUP_QUIESCENT) },
	{ "yield",		KF(YIELD) },
	{ "set_cpumask",	KF(SET_CPUMASK) },
	{ "cpu_online",		KF(CPU_HOTPLUG) },
	{ "cpu_offline",	KF(CPU_HOTPLUG) },
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
 * cos_kf_list[] match the ones the verifier passes only without a distilled base BTF: with
 * one, the kernel relocates the module's BTF at load and every id moves.  So the build passes
 * RESOLVE_BTFIDS_FLAGS= (see Makefile), and cos_kfuncs_init() refuses a module built with one.
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
 * The verifier calls this for every call of this module's kfuncs in a program it loads.  Only
 * the shim's programs (struct_ops of sched_ext_ops, named "cos_*") may call them, each only
 * from the ops cos_kf_ops[] gives it.  The verifier asks twice.  First while it collects the
 * program's kfunc calls, before it knows which struct_ops member the program implements
 * (aux->st_ops and aux->attach_func_name still NULL: allow then).  Then for each call while it
 * checks the program, with both set: that answer counts.
 * Context: process (BPF_PROG_LOAD), may sleep.
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
