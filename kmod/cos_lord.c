// SPDX-License-Identifier: GPL-2.0
/*
 * cos_lord.c — the lord's life: registration, the regions it maps, COS_IOC_WAIT, stall
 * detection, and the fallback that hands COS tasks to the shim's fair policy when the lord
 * stalls, unregisters or dies.
 *
 * Lifetime.  An enclave belongs to the /dev/cos file it was registered on.  Unregistering (or
 * the file's release) takes control away at once.  The regions (ring, shoot area, control
 * page) stay until the file is released, because a lord may still have them mapped.
 *
 * Stall.  An hrtimer checks two rules, every stall_ms / 4, at least 1 ms and at most 100 ms
 * apart.  Unconsumed: messages are pending and for stall_ms the lord neither consumed any nor
 * got CPU time.  Starved: a task has waited for a shoot longer than starve_ms.  The second
 * catches a lord that consumes but does not schedule (or stopped right after consuming
 * everything), whose tasks would otherwise wait for sched_ext's watchdog.  A stalled lord loses control (LORD_STALL, fallback, kicks) and gets
 * it back when it has consumed everything again.
 *
 * See docs/design.md, "The lord's life" and "The stall and starvation rules".
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/capability.h>
#include <linux/ctype.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cos_internal.h"

#define COS_STALL_MS_DEFAULT	20
#define COS_STALL_MS_MAX	10000
#define COS_STARVE_MS_DEFAULT	1000
#define COS_STARVE_MS_MAX	10000
#define COS_STARVE_CHECK_NS	(100 * NSEC_PER_MSEC)
#define COS_RING_DEFAULT	4096
#define COS_RING_MIN		64
#define COS_RING_MAX		(1U << 20)

/* mmap offsets of the regions (returned by REGISTER_LORD; fixed here for simplicity) */
#define COS_OFF_RING	0x00000000ULL
#define COS_OFF_STATUS	0x10000000ULL
#define COS_OFF_SHOOT	0x20000000ULL
#define COS_OFF_CTL	0x30000000ULL


/* Serialises COS_IOC_REGISTER_LORD (the per-file check, the id and the publication). */
static DEFINE_MUTEX(cos_register_mutex);
static u32 cos_enclave_last_id;	/* under cos_register_mutex */

/* debugfs cos/ (cos_main.c): the enclaves allocated and not yet freed, and delays that widen
 * the lifecycle's race windows for the tests (microseconds, 0 = none) */
atomic_t cos_enclaves_live;
u32 cos_delay_register_us;
u32 cos_delay_release_us;
u32 cos_delay_exit_work_us;

static size_t cos_ring_bytes(struct cos_enclave *e)
{
	return PAGE_ALIGN((size_t)e->ring_entries * sizeof(struct cos_msg));
}

static size_t cos_shoot_bytes(void)
{
	return PAGE_ALIGN(nr_cpu_ids * sizeof(struct cos_shoot_slot));
}

static size_t cos_status_bytes(void)
{
	return PAGE_ALIGN(cos_max_tasks * sizeof(struct cos_task_status));
}

/*
 * Hand every task waiting for @e's lord (or shot and still pending) to the fair policy: the
 * shim takes them with cos_kf_fallback_take() from ops.dispatch (cos_fallback_all()).  The
 * lord has lost control already (e->active cleared: see cos_task_wait()).  Adds the CPUs to
 * kick to @kick.  Caller holds e->lock.
 */
void cos_fallback_locked(struct cos_enclave *e, struct cpumask *kick)
{
	u32 n;

	lockdep_assert_held(&e->lock);
	atomic64_inc(&cos_counters.fallbacks);
	e->fallbacks++;
	n = cos_fallback_all(e);
	cos_trace_fallback(e, n);
	cpumask_or(kick, kick, e->cpus);
	/* a local shoot's task may hold it: it goes back through ops.enqueue, to the fair policy */
	cpumask_set_cpu(e->lord_cpu, kick);
}

static void cos_set_active_locked(struct cos_enclave *e, bool active)
{
	lockdep_assert_held(&e->lock);
	if (e->active != active)	/* the shim's "any lord?" (cos_kf_lord_active()) */
		atomic_add(active ? 1 : -1, &cos_lords_active);
	WRITE_ONCE(e->active, active);	/* read by cos_task_wait() */
	WRITE_ONCE(e->ctl->lord_active, active);
}

/*
 * The lord says it has handled messages up to @consumed (SHOOT, WAIT, or seen by the timer).
 * Returns true if that gave it control back after a stall.  Caller holds e->lock.
 */
bool cos_lord_consumed(struct cos_enclave *e, u64 consumed)
{
	lockdep_assert_held(&e->lock);
	if (consumed != e->seen_consumed) {
		e->seen_consumed = consumed;
		e->seen_at = ktime_get_ns();
	}
	if (!e->active && e->registered && !e->lord_dead && !e->orphaned &&
	    consumed >= cos_ring_produced(e)) {
		cos_set_active_locked(e, true);
		return true;
	}
	return false;
}

/**
 * cos_lord_shim_changed_locked() - the shim attached (@attached) or left: what it means for
 * the lord
 * @attached: true from ops.init, false from ops.exit
 * @caps: COS_SHIM_CAP_* of the shim that attached
 *
 * Records the shim's presence and capabilities (cos_shim_attached/caps, read lock-free by
 * REGISTER_LORD's check and GET_INFO).  Leaving takes control from the lord: sched_ext has
 * moved every task off the shim.  Coming back gives it back only the way cos_lord_consumed()
 * does, to a registered lord that is alive and has consumed every message; a dead lord never
 * gets it again, a stalled one when it catches up.  The same for every enclave.
 * Context: cos_lock held, IRQs off; takes each enclave's e->lock in turn.
 */
void cos_lord_shim_changed_locked(bool attached, u32 caps)
{
	int i;

	lockdep_assert_held(&cos_lock);
	WRITE_ONCE(cos_shim_attached, attached);
	WRITE_ONCE(cos_shim_caps, attached ? caps : 0);
	for (i = 0; i < COS_ENCLAVES_MAX; i++) {
		struct cos_enclave *e = cos_registry(i);

		if (!e)
			continue;
		guard(raw_spinlock)(&e->lock);
		if (attached) {
			e->orphaned = false;	/* a new shim, bound afresh */
			cos_lord_consumed(e, e->seen_consumed);
		} else {
			cos_set_active_locked(e, false);
		}
	}
}

/**
 * cos_lord_orphaned_locked() - the shim's binding is orphaned: the lord loses control for good
 * @kick: gets the CPUs to kick after the caller drops cos_lock
 *
 * The shim's programs can no longer be told from another's (kmod/cos_kfuncs.c, "Orphaned"):
 * the shim counts as gone (no lord registers), every task in custody goes to the fair
 * policy, and the lords get control back only once a shim attaches again.  Caller holds
 * cos_lock; takes each enclave's e->lock in turn.
 */
void cos_lord_orphaned_locked(struct cpumask *kick)
{
	int i;

	lockdep_assert_held(&cos_lock);
	cos_lord_shim_changed_locked(false, 0);	/* as if it left: no lord registers meanwhile */
	for (i = 0; i < COS_ENCLAVES_MAX; i++) {
		struct cos_enclave *e = cos_registry(i);

		if (!e)
			continue;
		guard(raw_spinlock)(&e->lock);
		if (e->orphaned)
			continue;
		e->orphaned = true;
		cos_fallback_locked(e, kick);
	}
}

/* The registered enclave whose lord thread is @p, or NULL.  Caller holds cos_lock. */
static struct cos_enclave *cos_registry_lord(const struct task_struct *p)
{
	int i;

	lockdep_assert_held(&cos_lock);
	for (i = 0; i < COS_ENCLAVES_MAX; i++) {
		struct cos_enclave *e = cos_registry(i);

		if (e && e->lord == p)
			return e;
	}
	return NULL;
}

/**
 * cos_lord_exited() - the lord thread @p is exiting: fall back now
 * @p: a lord (its pid is in cos_lord_pids[])
 *
 * The lord's /dev/cos file may outlive the lord thread (another thread or a child holds it),
 * so its exit is the death signal that does not wait for the file's release.  A dead lord
 * never gets control again (cos_lord_consumed() checks lord_dead), and its enclave is
 * unregistered soon after (exit_irq, then exit_work: cos_lord_exit_work()), so that another
 * lord may register while the file stays open.
 * Context: ops.exit_task (cos_kf_exit_task()), @p's rq lock held, IRQs off (RCU-sched: the
 * enclave is not freed before this returns); takes cos_lock, then the enclave's e->lock; kicks
 * after dropping them.
 */
void cos_lord_exited(struct task_struct *p)
{
	struct cos_enclave *e;

	scoped_guard(raw_spinlock_irqsave, &cos_lock) {
		e = cos_registry_lord(p);
		if (!e)
			return;
		guard(raw_spinlock)(&e->lock);
		if (e->lord_dead)
			return;
		e->lord_dead = true;
		cos_set_active_locked(e, false);
		WRITE_ONCE(cos_lord_pids[e->idx], 0);
		/* exit_kick is written here only, once: the lord dies once */
		cpumask_clear(e->exit_kick);
		cos_fallback_locked(e, e->exit_kick);
		irq_work_queue(&e->exit_irq);	/* not schedule_work(): it may wake a worker */
	}
	cos_kick_cpus(e->exit_kick);	/* after the unlock: see cos_internal.h */
}

/**
 * cos_lord_cpu_hotplug() - @cpu went online (@online) or offline: tell the lord
 * @cpu: the CPU; @online: its new state
 *
 * For each enclave whose CPU or lord's CPU it is: while it is offline shoots to it are refused
 * (COS_SHOOT_BAD_CPU, e->offline) and a shoot pending there waits again (cos_pending_cancel());
 * a lord registered with COS_LORD_F_CPU_MSGS gets COS_MSG_CPU_OFFLINE/ONLINE (arg = @cpu).
 * Several lords may share a lord CPU: each is told.
 * Context: ops.cpu_online/offline (cos_kf_cpu_hotplug()); takes cos_lock with IRQs off, then
 * each such enclave's e->lock in turn.
 */
void cos_lord_cpu_hotplug(s32 cpu, bool online)
{
	int i;

	if (!cos_cpu_valid(cpu))
		return;
	guard(raw_spinlock_irqsave)(&cos_lock);
	for (i = 0; i < COS_ENCLAVES_MAX; i++) {
		struct cos_enclave *e = cos_registry(i);

		if (!e || (!cpumask_test_cpu(cpu, e->cpus) && cpu != e->lord_cpu))
			continue;
		guard(raw_spinlock)(&e->lock);
		if (online) {
			cpumask_clear_cpu(cpu, e->offline);
		} else {
			cpumask_set_cpu(cpu, e->offline);
			cos_pending_cancel(e, cpu);
		}
		if (e->flags & COS_LORD_F_CPU_MSGS)
			cos_post(e, online ? COS_MSG_CPU_ONLINE : COS_MSG_CPU_OFFLINE,
				 smp_processor_id(), NULL, cpu);
	}
}

/* Declare @e's lord stalled for @reason (COS_STALL_*).  Caller holds e->lock. */
void cos_stall_locked(struct cos_enclave *e, u64 reason, struct cpumask *kick)
{
	lockdep_assert_held(&e->lock);
	cos_set_active_locked(e, false);
	WRITE_ONCE(e->ctl->stalls, e->ctl->stalls + 1);
	atomic64_inc(&cos_counters.stalls);
	cos_trace_stall(e, reason);
	cos_post(e, COS_MSG_LORD_STALL, smp_processor_id(), NULL, reason);
	cos_fallback_locked(e, kick);
}

/* Say in the kernel log why the lord was declared stalled (rare: not a hot path). */
static void cos_stall_report_locked(struct cos_enclave *e, const struct cos_waiting *w, u64 now)
{
	int n, cpu;

	lockdep_assert_held(&e->lock);
	if (!w) {
		snprintf(e->stall_report, sizeof(e->stall_report),
			 "lord %d stalled: %llu messages unconsumed for %llu ms", e->lord_tgid,
			 cos_ring_produced(e) - e->seen_consumed, (now - e->seen_at) / NSEC_PER_MSEC);
		return;
	}
	n = snprintf(e->stall_report, sizeof(e->stall_report),
		     "lord %d stalled: pid %d waited %llu ms for a shoot (state %u cpu %d); pending:",
		     e->lord_tgid, w->pid, (now - w->since) / NSEC_PER_MSEC, w->state, w->cpu);
	for_each_cpu(cpu, e->cpus) {
		pid_t pid = cos_pending_pid(cpu);

		if (pid && n < sizeof(e->stall_report))
			n += snprintf(e->stall_report + n, sizeof(e->stall_report) - n,
				      " cpu%d=%d", cpu, pid);
	}
}

/*
 * The stall timer's check at @now: messages unconsumed for stall_ns, or (every
 * COS_STARVE_CHECK_NS) a task waiting longer than starve_ns, declare the lord stalled.
 * Returns whether e->timer_kick holds CPUs to kick.  Caller holds e->lock.
 */
static bool cos_stall_check_locked(struct cos_enclave *e, u64 now)
{
	u64 consumed, pending, runtime;

	lockdep_assert_held(&e->lock);
	consumed = smp_load_acquire(&e->ctl->consumed);	/* pairs with the lord's release */
	cos_lord_consumed(e, consumed);
	cos_ring_poke(e);
	pending = cos_ring_pending_to(e);
	cpumask_clear(e->timer_kick);
	if (consumed >= pending)
		e->seen_at = now;	/* nothing pending */
	/*
	 * Progress is the lord's own: the messages it consumed, or the CPU time it got.  A lord
	 * busy with many tasks consumes in big steps, and is not stalled for that; one that gets
	 * no CPU time while messages wait (stopped, starved, blocked) is.  One that runs without
	 * placing anything is the starvation rule's below.  The runtime is read without the
	 * lord's rq lock: a 64-bit word that only grows, compared for change only.
	 */
	runtime = READ_ONCE(e->lord->se.sum_exec_runtime);
	if (runtime != e->seen_runtime) {
		e->seen_runtime = runtime;
		e->seen_at = now;
	}
	if (e->active && consumed < pending && (s64)(now - e->seen_at) >= (s64)e->stall_ns) {
		cos_stall_report_locked(e, NULL, now);
		cos_stall_locked(e, COS_STALL_UNCONSUMED, e->timer_kick);
		return true;
	}
	if (e->active && (s64)(now - e->starve_checked_at) >= (s64)COS_STARVE_CHECK_NS) {
		struct cos_waiting w;

		e->starve_checked_at = now;
		/* the oldest in custody is the one to look at (the lists are in waiting order) */
		if (cos_custody_oldest(e, &w) && (s64)(now - w.since) >= (s64)e->starve_ns) {
			cos_stall_report_locked(e, &w, now);
			cos_stall_locked(e, COS_STALL_STARVED, e->timer_kick);
			return true;
		}
	}
	return false;
}

/* How often the stall timer looks: both rules in time (stall_ms / 4, and the starvation check). */
static u64 cos_stall_period(const struct cos_enclave *e)
{
	return clamp_t(u64, e->stall_ns / 4, NSEC_PER_MSEC, COS_STARVE_CHECK_NS);
}

/* hrtimer callback (hard-irq context, IRQs off): e->lock without irqsave. */
static enum hrtimer_restart cos_stall_timer_fn(struct hrtimer *timer)
{
	struct cos_enclave *e = container_of(timer, struct cos_enclave, stall_timer);
	bool kick;

	scoped_guard(raw_spinlock, &e->lock) {
		/*
		 * Read the clock under the lock: seen_at is taken under e->lock too, and one taken
		 * after an earlier reading would make the unsigned difference wrap to "waited for
		 * ever".  waiting_since may be later than @now (a task that starts waiting
		 * meanwhile): the comparisons are signed.
		 */
		u64 now = ktime_get_ns();

		if (!e->registered)
			return HRTIMER_NORESTART;
		kick = cos_stall_check_locked(e, now);
	}
	if (kick) {	/* the report and the kicks after the unlock: see cos_internal.h */
		pr_info_ratelimited("%s\n", e->stall_report);
		cos_kick_cpus(e->timer_kick);
	}
	hrtimer_forward_now(timer, ns_to_ktime(cos_stall_period(e)));
	return HRTIMER_RESTART;
}

static void cos_wake_work_fn(struct irq_work *work)
{
	struct cos_enclave *e = container_of(work, struct cos_enclave, wake_work);

	wake_up_interruptible(&e->wq);
}

static void cos_exit_irq_fn(struct irq_work *work)
{
	struct cos_enclave *e = container_of(work, struct cos_enclave, exit_irq);

	schedule_work(&e->exit_work);
}

static void cos_unregister(struct cos_enclave *e);

/* The lord thread is gone: unregister its enclave (process context, a kworker). */
static void cos_lord_exit_work(struct work_struct *work)
{
	cos_test_delay(&cos_delay_exit_work_us);
	cos_unregister(container_of(work, struct cos_enclave, exit_work));
}

static void cos_enclave_free(struct cos_enclave *e)
{
	/* cos_fallback_all() handed every task in its custody to the fair policy */
	WARN_ON_ONCE(atomic_read(&e->nr_waiting));
	if (e->custody)
		cos_custody_free(e);
	vfree(e->ring);
	vfree(e->status);
	vfree(e->shoot);
	vfree(e->ctl);
	free_cpumask_var(e->cpus);
	free_cpumask_var(e->offline);
	free_cpumask_var(e->lord_saved_mask);
	free_cpumask_var(e->shoot_mask);
	free_cpumask_var(e->kick_mask);
	free_cpumask_var(e->latch_kick);
	free_cpumask_var(e->timer_kick);
	free_cpumask_var(e->exit_kick);
	kfree(e);
	atomic_dec(&cos_enclaves_live);
}

static struct cos_enclave *cos_enclave_alloc(u32 ring_entries)
{
	struct cos_enclave *e = kzalloc(sizeof(*e), GFP_KERNEL);

	if (!e)
		return NULL;
	atomic_inc(&cos_enclaves_live);
	e->ring_entries = ring_entries;
	e->ring = vmalloc_user(cos_ring_bytes(e));
	e->status = vmalloc_user(cos_status_bytes());	/* zero: every entry FREE */
	e->shoot = vmalloc_user(cos_shoot_bytes());
	e->ctl = vmalloc_user(PAGE_ALIGN(sizeof(struct cos_ctl)));
	if (!e->ring || !e->status || !e->shoot || !e->ctl || cos_custody_alloc(e) ||
	    !zalloc_cpumask_var(&e->cpus, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&e->offline, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&e->lord_saved_mask, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&e->shoot_mask, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&e->kick_mask, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&e->latch_kick, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&e->timer_kick, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&e->exit_kick, GFP_KERNEL)) {
		cos_enclave_free(e);
		return NULL;
	}
	raw_spin_lock_init(&e->lock);
	mutex_init(&e->shoot_mutex);
	init_waitqueue_head(&e->wq);
	init_irq_work(&e->wake_work, cos_wake_work_fn);
	init_irq_work(&e->exit_irq, cos_exit_irq_fn);
	INIT_WORK(&e->exit_work, cos_lord_exit_work);
	hrtimer_setup(&e->stall_timer, cos_stall_timer_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
	return e;
}

/*
 * May @e join the registry?  Its CPUs and lord CPU against every registered enclave's, its
 * name against theirs, and a free index.  Returns that index (the lowest), or -EBUSY (a CPU
 * overlaps), -EEXIST (the name is taken) or -ENOSPC (COS_ENCLAVES_MAX registered).
 * Caller holds cos_lock.
 */
static int cos_registry_check(const struct cos_enclave *e)
{
	int i, idx = -ENOSPC;

	lockdep_assert_held(&cos_lock);
	for (i = COS_ENCLAVES_MAX - 1; i >= 0; i--) {
		const struct cos_enclave *o = cos_registry(i);

		if (!o) {
			idx = i;
			continue;
		}
		/* lords may share a lord CPU; no CPU is another enclave's, nor its lord's */
		if (cpumask_intersects(e->cpus, o->cpus) || cpumask_test_cpu(e->lord_cpu, o->cpus) ||
		    cpumask_test_cpu(o->lord_cpu, e->cpus))
			return -EBUSY;
		if (!strcmp(e->name, o->name))
			return -EEXIST;
		/*
		 * One enclave per lord thread: a task's exit (cos_lord_exited()) and its
		 * enqueue (cos_kf_enqueue()) find the first enclave of its pid only.
		 */
		if (o->lord == e->lord)
			return -EBUSY;
	}
	return idx;
}

/*
 * Publish @e at index @idx: its CPUs' owner words, then their bits in cos_owned_cpus (a
 * reader that sees a bit and not yet the word finds no enclave, never a wrong one), its lord's
 * pid, its registry entry.  Caller holds cos_lock and e->lock.
 */
static void cos_registry_add(struct cos_enclave *e, int idx)
{
	int cpu;

	lockdep_assert_held(&cos_lock);
	lockdep_assert_held(&e->lock);
	e->idx = idx;
	for_each_cpu(cpu, e->cpus)
		rcu_assign_pointer(cos_cpu_owner[cpu], e);
	smp_wmb();	/* the words before the bits: cos_task_home() */
	cpumask_or(&cos_owned_cpus, &cos_owned_cpus, e->cpus);
	WRITE_ONCE(cos_lord_pids[idx], e->lord->pid);
	rcu_assign_pointer(cos_enclaves[idx], e);
}

/*
 * Take @e out of the registry: after this no reader finds it anew (those that found it before
 * finish within an RCU-sched grace period).  Caller holds cos_lock and e->lock.
 */
static void cos_registry_remove(struct cos_enclave *e)
{
	int cpu;

	lockdep_assert_held(&cos_lock);
	lockdep_assert_held(&e->lock);
	cpumask_andnot(&cos_owned_cpus, &cos_owned_cpus, e->cpus);
	for_each_cpu(cpu, e->cpus)
		RCU_INIT_POINTER(cos_cpu_owner[cpu], NULL);
	WRITE_ONCE(cos_lord_pids[e->idx], 0);
	RCU_INIT_POINTER(cos_enclaves[e->idx], NULL);
}

/**
 * cos_lord_info() - the lords as COS_IOC_GET_INFO reports them
 * @info: gets lord_pid and lord_cpu of the oldest registered enclave (-1 without one) and
 *	enclave_cpus, the CPUs of all of them
 *
 * Context: process context; takes cos_lock (IRQs off).  A registered enclave's lord, lord
 * CPU and CPUs do not change while it is in the registry.
 */
void cos_lord_info(struct cos_info *info)
{
	u32 oldest = 0;
	int i;

	info->lord_pid = 0;
	info->lord_cpu = -1;
	info->enclave_cpus = 0;
	guard(raw_spinlock_irqsave)(&cos_lock);
	for (i = 0; i < COS_ENCLAVES_MAX; i++) {
		struct cos_enclave *e = cos_registry(i);

		if (!e)
			continue;
		if (!oldest || e->id < oldest) {
			oldest = e->id;
			info->lord_pid = e->lord->pid;
			info->lord_cpu = e->lord_cpu;
		}
		info->enclave_cpus += cpumask_weight(e->cpus);
	}
}

/**
 * cos_lord_first_cpu() - the lord CPU of the oldest registered enclave, or -1
 * Context: any but NMI (cos_kf_lord_cpu()); takes cos_lock with IRQs off.
 */
s32 cos_lord_first_cpu(void)
{
	u32 oldest = 0;
	s32 cpu = -1;
	int i;

	guard(raw_spinlock_irqsave)(&cos_lock);
	for (i = 0; i < COS_ENCLAVES_MAX; i++) {
		struct cos_enclave *e = cos_registry(i);

		if (e && (!oldest || e->id < oldest)) {
			oldest = e->id;
			cpu = e->lord_cpu;
		}
	}
	return cpu;
}

static bool cos_name_char(char c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '-';
}

/*
 * The enclave's name from REGISTER_LORD's @name: as given, checked; all zero: the caller's comm
 * with every other character replaced by '_'.  Returns 0 or -EINVAL.
 */
static int cos_enclave_name(struct cos_enclave *e, const char name[COS_ENCLAVE_NAME_LEN])
{
	size_t i, n = strnlen(name, COS_ENCLAVE_NAME_LEN);

	if (!memchr_inv(name, 0, COS_ENCLAVE_NAME_LEN)) {
		get_task_comm(e->name, current);
		for (i = 0; e->name[i]; i++)
			if (!cos_name_char(e->name[i]))
				e->name[i] = '_';
		if (!e->name[0])
			strscpy(e->name, "lord");
		return 0;
	}
	if (n == 0 || n == COS_ENCLAVE_NAME_LEN || memchr_inv(name + n, 0, COS_ENCLAVE_NAME_LEN - n))
		return -EINVAL;	/* empty, unterminated, or bytes after the NUL */
	for (i = 0; i < n; i++)
		if (!cos_name_char(name[i]))
			return -EINVAL;
	memcpy(e->name, name, COS_ENCLAVE_NAME_LEN);
	return 0;
}

/**
 * cos_ioc_register_lord() - COS_IOC_REGISTER_LORD: make the caller the lord of an enclave
 * @file: the /dev/cos file; the enclave belongs to it
 * @uarg: user pointer to struct cos_lord_args
 *
 * Pins the calling thread to lord_cpu, allocates the ring, shoot area and control page, and
 * gives the lord control of the COS tasks that can run on the enclave's CPUs.
 *
 * Several enclaves may be registered at once (COS_ENCLAVES_MAX), on CPUs of their own:
 * cos_registry_check().
 *
 * Context: process context, may sleep; takes cos_lock, then the new enclave's e->lock, with IRQs
 * off.
 * Return: 0; -EPERM without CAP_SYS_NICE; -EBUSY if a CPU of the enclave, or its lord CPU, is
 * another enclave's or its lord's, or this file had a lord, or the calling thread is another
 * enclave's lord already; -EEXIST if an enclave has the
 * name; -ENOSPC with COS_ENCLAVES_MAX enclaves; -ENXIO if the shim is not attached; -EOPNOTSUPP if it cannot give shot tasks priority on this
 * kernel (COS_SHIM_CAP_FAIR_DSQ); -EINVAL for bad sizes, flags, CPUs or name, or a caller whose
 * policy is SCHED_EXT (a COS task); -EFAULT; -ENOMEM.
 * Nothing changes on error.
 */
long cos_ioc_register_lord(struct file *file, void __user *uarg)
{
	struct cos_lord_args args;
	struct cos_enclave *e;
	long usize;
	u32 entries;
	int ret;

	if (!capable(CAP_SYS_NICE))
		return -EPERM;
	usize = cos_user_size(uarg, COS_LORD_ARGS_SIZE_VER0);
	if (usize < 0)
		return usize;
	ret = cos_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags & ~(COS_LORD_F_RUNNING_MSGS | COS_LORD_F_CPU_MSGS | COS_LORD_F_LAZY_WAKE))
		return -EINVAL;
	if (args.stall_ms > COS_STALL_MS_MAX || args.starve_ms > COS_STARVE_MS_MAX || args.__pad ||
	    args.enclave_id || args.__pad2)
		return -EINVAL;
	entries = args.ring_entries ?: COS_RING_DEFAULT;
	if (!is_power_of_2(entries) || entries < COS_RING_MIN || entries > COS_RING_MAX)
		return -EINVAL;
	if (args.lord_cpu >= nr_cpu_ids || !cpu_online(args.lord_cpu))
		return -EINVAL;
	/* a COS task would wait in its own custody (libcos makes its lord SCHED_OTHER first) */
	if (current->policy == SCHED_EXT)
		return -EINVAL;

	/* one REGISTER at a time: a file's enclave is checked and published once, under it */
	guard(mutex)(&cos_register_mutex);
	if (cos_file_enclave(file))
		return -EBUSY;

	e = cos_enclave_alloc(entries);
	if (!e)
		return -ENOMEM;
	ret = cos_enclave_name(e, args.name);
	if (ret)
		goto err_free;
	ret = cos_copy_cpumask(e->cpus, u64_to_user_ptr(args.cpumask), args.cpumask_size);
	if (ret)
		goto err_free;
	ret = -EINVAL;
	if (cpumask_empty(e->cpus) || !cpumask_subset(e->cpus, cpu_online_mask) ||
	    cpumask_test_cpu(args.lord_cpu, e->cpus))
		goto err_free;

	cpumask_copy(e->lord_saved_mask, current->cpus_ptr);
	ret = set_cpus_allowed_ptr(current, cpumask_of(args.lord_cpu));
	if (ret)
		goto err_free;

	e->lord = current;
	get_task_struct(current);
	e->lord_tgid = current->tgid;
	e->lord_cpu = args.lord_cpu;
	e->flags = args.flags;
	e->stall_ns = (u64)(args.stall_ms ?: COS_STALL_MS_DEFAULT) * NSEC_PER_MSEC;
	e->starve_ns = (u64)(args.starve_ms ?: COS_STARVE_MS_DEFAULT) * NSEC_PER_MSEC;
	e->seen_at = ktime_get_ns();

	scoped_guard(raw_spinlock_irqsave, &cos_lock) {
		ret = !cos_shim_attached ? -ENXIO :
		      !(cos_shim_caps & COS_SHIM_CAP_FAIR_DSQ) ? -EOPNOTSUPP : cos_registry_check(e);
		if (ret >= 0) {
			int idx = ret;

			ret = 0;
			/* CPUs that went offline since the check: hotplug reports only to a lord */
			cpumask_andnot(e->offline, e->cpus, cpu_online_mask);
			if (!cpu_online(e->lord_cpu))
				cpumask_set_cpu(e->lord_cpu, e->offline);
			e->id = ++cos_enclave_last_id ?: ++cos_enclave_last_id;	/* never 0 */
			guard(raw_spinlock)(&e->lock);
			WRITE_ONCE(e->registered, true);
			/* armed before anything can find @e: whoever unregisters it cancels it */
			hrtimer_start(&e->stall_timer, ns_to_ktime(cos_stall_period(e)),
				      HRTIMER_MODE_REL_HARD);
			cos_registry_add(e, idx);	/* e set up before it is seen */
			cos_set_active_locked(e, true);
			cos_trace_enclave(e, true);
		}
	}
	if (ret) {
		set_cpus_allowed_ptr(current, e->lord_saved_mask);
		put_task_struct(e->lord);
		goto err_free;
	}
	smp_store_release(&file->private_data, e);	/* pairs with cos_file_enclave() */
	cos_test_delay(&cos_delay_register_us);

	args.ring_entries = entries;
	args.ring_off = COS_OFF_RING;
	args.ring_size = cos_ring_bytes(e);
	args.status_off = COS_OFF_STATUS;
	args.status_size = cos_status_bytes();
	args.shoot_off = COS_OFF_SHOOT;
	args.shoot_size = cos_shoot_bytes();
	args.ctl_off = COS_OFF_CTL;
	args.ctl_size = PAGE_ALIGN(sizeof(struct cos_ctl));
	args.max_tasks = cos_max_tasks;
	args.nr_cpu_ids = nr_cpu_ids;
	memcpy(args.name, e->name, sizeof(args.name));
	args.enclave_id = e->id;
	ret = cos_copy_out(uarg, usize, &args, sizeof(args));
	if (ret)
		cos_ioc_unregister(file);	/* the lord cannot learn its regions: undo */
	return ret;

err_free:
	cos_enclave_free(e);
	return ret;
}

/*
 * Take control away from @e's lord; the regions stay until release.  May sleep.  Holds
 * shoot_mutex throughout: kick_mask is the commit's too, and a shoot that starts after this
 * finds @e unregistered (cos_shoot_commit() checks it under the mutex).
 */
static void cos_unregister(struct cos_enclave *e)
{
	guard(mutex)(&e->shoot_mutex);
	scoped_guard(raw_spinlock_irqsave, &cos_lock) {
		guard(raw_spinlock)(&e->lock);
		if (!e->registered)
			return;
		cpumask_clear(e->kick_mask);
		cos_set_active_locked(e, false);	/* before the fallback: cos_task_wait() */
		cos_fallback_locked(e, e->kick_mask);
		WRITE_ONCE(e->registered, false);
		cos_registry_remove(e);
		cos_trace_enclave(e, false);
	}

	cos_kick_cpus(e->kick_mask);
	hrtimer_cancel(&e->stall_timer);
	irq_work_sync(&e->wake_work);
	wake_up_interruptible_all(&e->wq);
	/* A lord that lives on gets its old affinity back (a dying one does not care). */
	if (!(e->lord->flags & PF_EXITING))
		set_cpus_allowed_ptr(e->lord, e->lord_saved_mask);
	put_task_struct(e->lord);
	WRITE_ONCE(e->lord, NULL);	/* read lock-free by cos_kf_enqueue() */
}

/*
 * One enclave as GET_ENCLAVES reports it.  Caller holds cos_lock (@e stays registered and its
 * lord referenced meanwhile) and e->lock (its state and counters).
 */
static void cos_enclave_info_locked(struct cos_enclave *e, struct cos_enclave_info *ei)
{
	unsigned int cpu;

	lockdep_assert_held(&cos_lock);
	lockdep_assert_held(&e->lock);
	memset(ei, 0, sizeof(*ei));
	ei->id = e->id;
	ei->lord_pid = e->lord->pid;
	ei->lord_cpu = e->lord_cpu;
	ei->flags = READ_ONCE(e->active) ? COS_ENCLAVE_F_ACTIVE : 0;
	memcpy(ei->name, e->name, sizeof(ei->name));
	ei->nr_cpus = cpumask_weight(e->cpus);
	ei->waiting = max(cos_tasks_waiting(e), 0);
	ei->produced = cos_ring_produced(e);
	ei->dropped = atomic64_read(&e->dropped);
	ei->stalls = READ_ONCE(e->ctl->stalls);
	ei->placed = e->placed;
	ei->refused = e->refused;
	ei->fallbacks = e->fallbacks;
	for_each_cpu(cpu, e->cpus) {
		if (cpu >= 64 * ARRAY_SIZE(ei->cpus)) {
			ei->flags |= COS_ENCLAVE_F_CPUS_CUT;
			break;
		}
		ei->cpus[cpu / 64] |= 1ULL << (cpu % 64);
	}
}

/**
 * cos_ioc_get_enclaves() - COS_IOC_GET_ENCLAVES: copy out the registered enclaves
 * @uarg: user pointer to struct cos_enclaves_args
 *
 * Context: process context, may fault; allocates the snapshot, takes cos_lock (IRQs off) and
 * each enclave's e->lock in turn for it, copies out after dropping them.
 * Return: 0; -EINVAL for a bad size, flags or entry size; -EFAULT; -ENOMEM.
 */
long cos_ioc_get_enclaves(void __user *uarg)
{
	struct cos_enclaves_args args;
	void __user *dst;
	u32 i, n = 0, esize;
	long usize;
	int ret;

	usize = cos_user_size(uarg, COS_ENCLAVES_ARGS_SIZE_VER0);
	if (usize < 0)
		return usize;
	ret = cos_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	esize = args.entry_size;
	if (args.flags || args.__pad || esize < COS_ENCLAVE_INFO_SIZE_MIN ||
	    esize > COS_STRUCT_SIZE_MAX || esize % 8)
		return -EINVAL;
	dst = u64_to_user_ptr(args.enclaves);
	/* the snapshot, taken under the locks, is copied out after them */
	struct cos_enclave_info *snap __free(kfree) =
		kmalloc_array(COS_ENCLAVES_MAX, sizeof(*snap), GFP_KERNEL);
	if (!snap)
		return -ENOMEM;
	scoped_guard(raw_spinlock_irqsave, &cos_lock) {
		for (i = 0; i < COS_ENCLAVES_MAX; i++) {
			struct cos_enclave *e = cos_registry(i);

			if (!e)
				continue;
			guard(raw_spinlock)(&e->lock);
			cos_enclave_info_locked(e, &snap[n++]);
		}
	}
	for (i = 0; i < n && i < args.capacity; i++, dst += esize) {
		if (copy_to_user(dst, &snap[i], min_t(u32, esize, sizeof(*snap))))
			return -EFAULT;
		if (esize > sizeof(*snap) &&
		    clear_user(dst + sizeof(*snap), esize - sizeof(*snap)))
			return -EFAULT;
	}
	args.count = n;
	return cos_copy_out(uarg, usize, &args, sizeof(args));
}

/**
 * cos_ioc_unregister() - COS_IOC_UNREGISTER: give the enclave's tasks to the fair policy
 * @file: the lord's file
 *
 * Context: process context, may sleep.  Return: 0, or -EPERM if the caller is not the lord.
 */
long cos_ioc_unregister(struct file *file)
{
	struct cos_enclave *e = cos_file_enclave(file);

	if (!e || !READ_ONCE(e->registered) || current->tgid != e->lord_tgid)
		return -EPERM;
	cos_unregister(e);
	return 0;
}

/**
 * cos_lord_release() - the file is gone (the lord exited, was killed, or closed it): fall back
 * and free the enclave
 * @file: the lord's file; no ioctl, mmap or io_uring command of it runs any more
 *
 * One ordered teardown, whatever state the enclave is in (registered, unregistered by an
 * ioctl, or by the lord thread's exit work, which may still be queued or running):
 * unpublish (after it nothing finds @e: not the scheduling path, not cos_lord_exited(), which
 * looks @e up under cos_lock), stop the stall timer, wait out the scheduling path's readers
 * (RCU-sched), then the irq_works and the work they queued, and free.
 * Context: process context, may sleep; takes shoot_mutex and cos_lock.
 */
void cos_lord_release(struct file *file)
{
	struct cos_enclave *e = file->private_data;

	if (!e)
		return;
	cos_test_delay(&cos_delay_release_us);
	cos_unregister(e);
	hrtimer_cancel(&e->stall_timer);
	/* a reader that found @e before it was unpublished may still post (wake_work) */
	synchronize_rcu();
	irq_work_sync(&e->wake_work);
	/* the lord thread's exit queued these before the unpublication, or never will */
	irq_work_sync(&e->exit_irq);
	cancel_work_sync(&e->exit_work);
	file->private_data = NULL;
	cos_enclave_free(e);
}

/**
 * cos_ioc_wait() - COS_IOC_WAIT: sleep until a message is pending or the timeout expires
 * @file: the lord's file
 * @uarg: user pointer to struct cos_wait_args
 *
 * Context: process context, sleeps interruptibly.
 * A @timeout_ns of KTIME_MAX (2^63 - 1) or more waits without a timeout.
 *
 * Return: 1 if messages are pending, 0 on timeout, -EINTR on a signal, -EPERM (not the lord),
 * -EINVAL, -EFAULT.
 */
long cos_ioc_wait(struct file *file, void __user *uarg)
{
	struct cos_enclave *e = cos_file_enclave(file);
	struct cos_wait_args args;
	long usize, ret;

	if (!e || !READ_ONCE(e->registered) || current->tgid != e->lord_tgid)
		return -EPERM;
	usize = cos_user_size(uarg, COS_WAIT_ARGS_SIZE_VER0);
	if (usize < 0)
		return usize;
	ret = cos_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags)
		return -EINVAL;
	smp_store_release(&e->ctl->consumed, args.consumed);
	scoped_guard(raw_spinlock_irqsave, &e->lock) {
		cos_lord_consumed(e, args.consumed);
		cos_ring_poke(e);	/* caught up with an overflow: its OVERFLOW is pending now */
	}
	if (cos_ring_produced(e) > args.consumed)
		return 1;
	if (!args.timeout_ns)
		return 0;
	atomic_inc(&e->waiters);
	smp_mb__after_atomic();	/* waiters visible before we test produced; pairs with cos_post */
	/* A timeout past KTIME_MAX (S64_MAX ns) would be a negative ktime: clamp it.  KTIME_MAX
	 * starts no timer at all (wait without a timeout). */
	ret = wait_event_interruptible_hrtimeout(e->wq,
			cos_ring_produced(e) > args.consumed || !READ_ONCE(e->registered),
			ns_to_ktime(min_t(u64, args.timeout_ns, KTIME_MAX)));
	atomic_dec(&e->waiters);
	if (ret == -ETIME)
		return 0;
	if (ret)
		return -EINTR;
	return cos_ring_produced(e) > args.consumed;
}

/**
 * cos_lord_mmap() - map one of the lord's regions
 * @file: the lord's file
 * @vma: offset selects the region (see struct cos_lord_args); length must match it
 *
 * The ring and the status table are read-only (VM_MAYWRITE cleared); the shoot area and the
 * control page are read-write.  None is inherited by fork.
 *
 * Only the lord's process may map them: the file may be open in another (a child it forked,
 * perhaps unprivileged), which must not read the lord's messages nor write its shoots.
 * Context: process context, mmap lock held.  Return: 0, -EPERM (not the lord's process) or
 * -EINVAL (no lord on this file, bad offset, length or protection).
 */
int cos_lord_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct cos_enclave *e = cos_file_enclave(file);
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	size_t len = vma->vm_end - vma->vm_start;
	void *region;
	size_t size;
	bool ro;

	if (!e)
		return -EINVAL;
	if (current->tgid != e->lord_tgid)
		return -EPERM;
	switch (off) {
	case COS_OFF_RING:
		region = e->ring, size = cos_ring_bytes(e), ro = true;
		break;
	case COS_OFF_STATUS:
		region = e->status, size = cos_status_bytes(), ro = true;
		break;
	case COS_OFF_SHOOT:
		region = e->shoot, size = cos_shoot_bytes(), ro = false;
		break;
	case COS_OFF_CTL:
		region = e->ctl, size = PAGE_ALIGN(sizeof(struct cos_ctl)), ro = false;
		break;
	default:
		return -EINVAL;
	}
	if (len != size)
		return -EINVAL;
	if (ro) {
		if (vma->vm_flags & VM_WRITE)
			return -EINVAL;
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	return remap_vmalloc_range(vma, region, 0);
}
