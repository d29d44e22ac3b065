// SPDX-License-Identifier: GPL-2.0
/*
 * cos_cpu.c — each CPU's shoot slots and the kicks that make a CPU reschedule.
 *
 * Per CPU: the pending word (a task shot there, not yet taken by its ops.dispatch), the
 * taken word (taken, not yet running), the current COS task, and the latch (tasks queued
 * behind the COS task running there, COS_SHOOT_F_LATCH).  The pending and taken words are
 * single words changed with cmpxchg/xchg under the named task's t->lock and read lock-free;
 * a latch has its own lock, taken inside t->lock.  The kicks are IPIs (one csd per CPU and
 * kind), sent after every lock of cos.ko is dropped.
 *
 * See docs/design.md, "The shoot path, end to end".
 */
#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>

#include "cos_internal.h"
#include "cos_trace.h"

/*
 * [nr_cpu_ids]: the task shot to that CPU and not yet taken by its ops.dispatch.  Set by the
 * shoot (cmpxchg from NULL), cleared by ops.dispatch's take or a cancel (cmpxchg from the
 * task), each under that task's t->lock; read lock-free by cos_pending_none().
 */
static struct cos_slot **cos_pending;
/*
 * [nr_cpu_ids]: the shot task ops.dispatch took on that CPU, until it starts running there.
 * sched_ext calls ops.dispatch before it puts the preempted task back (ops.stopping), so this
 * is how stopping knows that a shoot preempted it.  Written by that CPU's own ops.dispatch,
 * ops.running and cos_dispatch_failed() (its rq lock held), and cleared by the detach of the
 * task it names (cmpxchg); read lock-free.
 */
static struct cos_slot **cos_taken;
/*
 * [nr_cpu_ids]: the COS task running on that CPU (from ops.running to ops.stopping).  Written by
 * that CPU's ops (its rq lock held) and cleared by the detach of the task it names (cmpxchg);
 * read lock-free by the wake rules (cos_wake_cpu_free()).
 */
static struct cos_slot **cos_curr;

static DEFINE_PER_CPU(call_single_data_t, cos_kick_csd);
static DEFINE_PER_CPU(call_single_data_t, cos_shoot_kick_csd);
static DEFINE_PER_CPU(call_single_data_t, cos_latch_kick_csd);
static DEFINE_PER_CPU(call_single_data_t, cos_throttle_kick_csd);

/*
 * A CPU's latch (COS_SHOOT_F_LATCH): the tasks the lord queued behind the COS task running
 * there, oldest first.  That CPU's ops.dispatch takes the first when nothing is pending there
 * (cos_latch_take()): no message to the lord, no IPI.
 *
 * @armed: this CPU will call ops.dispatch again without a kick.  A COS task's ops.running sets
 * it; a dispatch that finds the latch empty clears it, under @lock.  A latch shoot kicks the
 * CPU only when it is not armed, and that kick never preempts a COS task (cos_latch_kick_fn()).
 * That is enough: a dispatch that clears @armed holds @lock, so a shoot that saw @armed set
 * added its task before that dispatch looked.  A COS task that starts later sets @armed again,
 * and its own stop calls ops.dispatch.  Only this CPU writes @armed, so its lock-free read in
 * cos_pending_none() is exact; @nr is read there after the IPI of a shoot that kicked.
 */
struct cos_latch {
	raw_spinlock_t lock;
	u32 nr;
	bool armed;
	/* the task COS_WAKE_NEXT queued here (cos_latch_next()) while latched, else NULL; @lock */
	struct cos_slot *next;
	/* + one that resumes (cos_latch_resume()), + one queued next (see cos_latch_next()) */
	struct cos_slot *q[COS_SHOOT_LATCH_MAX + 2];
};
static DEFINE_PER_CPU_ALIGNED(struct cos_latch, cos_latch);

static void cos_kick_fn(void *info)
{
	struct task_struct *curr = current;

	if (!is_idle_task(curr))
		curr->scx.slice = 0;
	set_tsk_need_resched(curr);
	set_preempt_need_resched();
}

/*
 * The kick of a latch shoot (to a CPU that was not armed, struct cos_latch): preempt what runs
 * here only if it is not a COS task.  A COS task that runs here armed the latch when it started
 * (before cos_curr was set: same CPU, so this read is exact), and dispatches when it stops.  A
 * dispatch may have cleared @armed and kept it running (sched_ext may keep prev when
 * ops.dispatch finds nothing); preempting it would let the latched task pass it.
 */
static void cos_latch_kick_fn(void *info)
{
	if (!READ_ONCE(cos_curr[smp_processor_id()]))
		cos_kick_fn(info);
}

/*
 * The kick of a shoot: preempt what runs here only while a shot task still waits for this
 * CPU (pending, or taken and not yet running).  The IPI may come after this CPU's dispatch
 * has already started the shot task, and would then end that task's turn for nothing.  Exact:
 * the shoot's store of the pending word comes before the IPI's queueing (a full barrier),
 * and the words are cleared only by this CPU's dispatch and running or by a cancel, after
 * which the shot task needs no kick.
 */
static void cos_shoot_kick_fn(void *info)
{
	int cpu = smp_processor_id();

	if (READ_ONCE(cos_pending[cpu]) || READ_ONCE(cos_taken[cpu]))
		cos_kick_fn(info);
}


/* A per-CPU kthread is never stopped for its group's budget, as in the shim's ops.tick. */
static bool cos_budget_exempt(struct task_struct *p)
{
	return is_idle_task(p) || ((p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1);
}

/*
 * The kick of a bandwidth group that was just throttled (cos_group.c): what runs here stops if
 * its group or an ancestor is throttled (this CPU's record said so a moment ago; it is checked
 * again here, in the IPI).
 */
static void cos_throttle_kick_fn(void *info)
{
	if (!cos_budget_exempt(current) && cos_group_running_throttled())
		cos_kick_fn(info);
}

/*
 * Fault injection for the tests of paths a race reaches (debugfs cos/hold_dispatch, root only;
 * cos_main.c).  While cos_hold_cpu names a CPU, ops.dispatch there leaves its pending shoot
 * alone: a test can then hotplug that CPU, change the task's affinity or stall the lord.
 * -1: none.  Written by cos_hold_dispatch(), read lock-free.
 */
static int cos_hold_cpu = -1;
/* debugfs cos/delay_latch_take_us: between the latch's peek and its disarm */
u32 cos_delay_latch_take_us;

/**
 * cos_hold_dispatch() - hold (@cpu >= 0) or release (-1) the pending shoot of one CPU
 * @cpu: the CPU to hold, or -1
 *
 * Releasing kicks the CPU that was held, so that its ops.dispatch takes the shoot at once: the
 * kick of a shoot, which leaves the shot task alone should a dispatch there have started it
 * meanwhile (a plain kick would preempt it, and it would wait for its lord again).
 * Context: process context (the debugfs write); no lock.  Return: 0, or -EINVAL for a CPU
 * that does not exist.
 */
int cos_hold_dispatch(int cpu)
{
	int old;

	if (cpu != -1 && !cos_cpu_valid(cpu))
		return -EINVAL;
	old = xchg(&cos_hold_cpu, cpu);
	if (old >= 0 && old != cpu)
		cos_kick_shot_cpus(cpumask_of(old));
	return 0;
}

/* The CPU held by cos_hold_dispatch(), or -1.  Context: any; lock-free. */
int cos_held_cpu(void)
{
	return READ_ONCE(cos_hold_cpu);
}

static void cos_kick_with(const struct cpumask *cpus, call_single_data_t __percpu *csd, u32 why)
{
	int cpu;

	for_each_cpu(cpu, cpus) {
		if (!cpu_online(cpu))
			continue;
		trace_cos_kick(cpu, why);
		/* -EBUSY: a kick to that CPU is still in flight, which is as good. */
		smp_call_function_single_async(cpu, per_cpu_ptr(csd, cpu));
	}
}

/* Kick @cpus (preempt what runs there).  Any context; under no lock of cos.ko. */
void cos_kick_cpus(const struct cpumask *cpus)
{
	cos_kick_with(cpus, &cos_kick_csd, COS_TRACE_KICK_PREEMPT);
}

/* Kick @cpus for the shoots just made: as cos_kick_cpus(), once a shot task is still waiting. */
void cos_kick_shot_cpus(const struct cpumask *cpus)
{
	cos_kick_with(cpus, &cos_shoot_kick_csd, COS_TRACE_KICK_SHOOT);
}

/* Kick @cpus for a latch: as cos_kick_cpus(), but a running COS task is left alone. */
void cos_kick_latch_cpus(const struct cpumask *cpus)
{
	cos_kick_with(cpus, &cos_latch_kick_csd, COS_TRACE_KICK_LATCH);
}

/*
 * Every idle online CPU reschedules (a group was released), so that its ops.dispatch takes the
 * released groups' parked tasks; a busy CPU is left alone (its next dispatch does it).  The
 * kernel looks at each CPU's current task first and interrupts only the idle ones (a polling
 * one not even that): a refill costs no IPI to a busy machine.  Any context but under an rq
 * lock (wake_up_if_idle() takes the idle CPU's); no lock of cos.ko.
 */
void cos_kick_idle(void)
{
	scoped_guard(preempt)
		if (is_idle_task(current))	/* the refill timer fired on an idle CPU */
			cos_kick_fn(NULL);
	wake_up_all_idle_cpus();
}

/*
 * A budget timer fired here (cos_group.c): the task it was armed for is still running (its
 * stop cancels the timer), and its budget is spent: its slice ends, and its stop charges it.
 * Context: hard IRQ on this CPU.
 */
void cos_kick_spent(void)
{
	if (!cos_budget_exempt(current))
		cos_kick_fn(NULL);
}

/* @cpu stops its task if that task's group is throttled.  Context: any; no lock of cos.ko. */
void cos_kick_throttled(int cpu)
{
	cos_kick_with(cpumask_of(cpu), &cos_throttle_kick_csd, COS_TRACE_KICK_THROTTLE);
}

/* Take @t off the latch it is on, if any; returns whether it was on one.  Under t->lock. */
bool cos_latch_remove(struct cos_slot *t)
{
	struct cos_latch *l;
	u32 i;

	lockdep_assert_held(&t->lock);
	if (t->latch_cpu < 0)
		return false;
	l = per_cpu_ptr(&cos_latch, t->latch_cpu);
	guard(raw_spinlock)(&l->lock);
	if (l->next == t)
		l->next = NULL;
	for (i = 0; i < l->nr; i++)
		if (l->q[i] == t) {
			memmove(&l->q[i], &l->q[i + 1], (l->nr - i - 1) * sizeof(l->q[0]));
			WRITE_ONCE(l->nr, l->nr - 1);
			t->latch_cpu = -1;
			return true;
		}
	WARN_ON_ONCE(1);	/* latch_cpu is set exactly while the task is on that latch */
	t->latch_cpu = -1;
	return false;
}

/* Put @t at index @at of @cpu's latch @l (room checked).  Caller holds l->lock and t->lock. */
static void cos_latch_insert(struct cos_latch *l, s32 cpu, struct cos_slot *t, u32 at)
{
	lockdep_assert_held(&l->lock);
	lockdep_assert_held(&t->lock);
	memmove(&l->q[at + 1], &l->q[at], (l->nr - at) * sizeof(l->q[0]));
	l->q[at] = t;
	WRITE_ONCE(l->nr, l->nr + 1);
	t->latch_cpu = cpu;
}

/*
 * Latch @t on @cpu (at the tail; off the latch it was on before, if any): *@kick says whether
 * @cpu must be kicked (not armed: nothing would dispatch there otherwise).  Room was checked by
 * the caller (cos_latch_room()).  Caller holds the lock of @e, whose CPU @cpu is (latches grow
 * only under it), and t->lock.
 */
static void cos_latch_add(struct cos_enclave *e, struct cos_slot *t, s32 cpu, bool *kick)
{
	struct cos_latch *l = per_cpu_ptr(&cos_latch, cpu);

	lockdep_assert_held(&e->lock);
	lockdep_assert_held(&t->lock);
	cos_latch_remove(t);
	guard(raw_spinlock)(&l->lock);
	if (WARN_ON_ONCE(l->nr >= ARRAY_SIZE(l->q)))
		return;
	cos_latch_insert(l, cpu, t, l->nr);
	*kick = !l->armed;
}

/* Tasks latched on @cpu (a lock-free snapshot). */
static u32 cos_latch_nr(s32 cpu)
{
	return READ_ONCE(per_cpu_ptr(&cos_latch, cpu)->nr);
}

/*
 * @t, just preempted on @cpu, goes back to @cpu's latch to resume there:
 * - @displaced clear: by a task of a higher tier (a kthread, COS_PREEMPT_BY_OTHER), if that
 *   latch holds tasks: at its head, before them, as if the lord had placed it first again;
 * - @displaced set: by an urgent task the wake rules started in its place (COS_WAKE_PREEMPT,
 *   cos_cpu_displacing()), always: behind that task and the one COS_WAKE_NEXT queued at the
 *   head, if any, before the tasks the lord latched.  It lost the CPU to no fault of its own.
 * One slot beyond COS_SHOOT_LATCH_MAX is for it: it leaves the latch before it can be
 * preempted again (see cos_latch_next() for the other).  Returns whether it did (@t is QUEUED
 * on @cpu then).  Caller holds t->lock and @cpu's rq lock.
 */
bool cos_latch_resume(struct cos_slot *t, s32 cpu, bool displaced)
{
	struct cos_latch *l;

	lockdep_assert_held(&t->lock);
	if (!cos_cpu_valid(cpu) || (!displaced && !cos_latch_nr(cpu)) || t->latch_cpu >= 0)
		return false;
	l = per_cpu_ptr(&cos_latch, cpu);
	guard(raw_spinlock)(&l->lock);
	if ((!displaced && !l->nr) || l->nr > COS_SHOOT_LATCH_MAX)
		return false;
	cos_latch_insert(l, cpu, t, displaced && l->nr && l->q[0] == l->next ? 1 : 0);
	return true;
}

/*
 * May an urgent task of enclave @enclave_id wait next on @cpu (COS_WAKE_NEXT)?  The COS task
 * that runs there next is an urgent one of that enclave: the taken one (started, not yet
 * running: two timers that fire together wake two urgent tasks back to back), else the
 * running one; nothing is shot there, and its latch has room.  A lock-free snapshot, as
 * cos_cpu_preemptible(); cos_latch_next() checks again.
 */
bool cos_cpu_next_open(s32 cpu, u32 enclave_id)
{
	struct cos_slot *next = READ_ONCE(cos_taken[cpu]) ?: READ_ONCE(cos_curr[cpu]);

	return next && !READ_ONCE(cos_pending[cpu]) && cos_latch_nr(cpu) < COS_SHOOT_LATCH_MAX &&
	       data_race(next->home_id) == enclave_id && READ_ONCE(next->urgent);
}

/*
 * COS_WAKE_NEXT: put urgent @t of enclave @enclave_id at the head of @cpu's latch, behind the
 * urgent task taken or running there and before the tasks the lord latched, if
 * cos_cpu_next_open() still holds and no urgent task is latched there (one at a time: the
 * head stays the order the lord's books keep).  Under @cpu's rq lock only @cpu's ops and its
 * wake placements change its running and taken words (a detach may clear them); a shoot may
 * store the pending word meanwhile, and that task runs first (ops.dispatch takes it before
 * the latch).  No kick: the taken task was queued with a preemption and the running one
 * stops through schedule(), whose ops.dispatch finds the latch's count, written here under
 * the same rq lock, and takes the slow way even if @armed was cleared (see struct
 * cos_latch).
 *
 * Room: only below COS_SHOOT_LATCH_MAX.  A lord's latch shoot that checked room before this
 * insert (cos_latch_room(), nr < MAX) adds one more, and a task resumed meanwhile
 * (cos_latch_resume(), nr <= MAX) one more: MAX + 2 at most, the array's size.
 * Returns whether @t is latched there.  Caller holds t->lock and @cpu's rq lock.
 */
bool cos_latch_next(struct cos_slot *t, s32 cpu, u32 enclave_id)
{
	struct cos_latch *l;
	u32 i;

	lockdep_assert_held(&t->lock);
	if (!cos_cpu_valid(cpu) || t->latch_cpu >= 0 || !cos_cpu_next_open(cpu, enclave_id))
		return false;
	l = per_cpu_ptr(&cos_latch, cpu);
	guard(raw_spinlock)(&l->lock);
	if (l->nr >= COS_SHOOT_LATCH_MAX)
		return false;
	for (i = 0; i < l->nr; i++)
		if (READ_ONCE(l->q[i]->urgent))
			return false;
	cos_latch_insert(l, cpu, t, 0);
	l->next = t;
	return true;
}

/*
 * Has @cpu's latch room for @t?  Under the lock of @e, whose CPU @cpu is, the answer holds
 * until it is dropped: only a shoot of @e's lord adds to a latch of its CPUs.  @t's own place
 * counts as free if it is latched there already.
 */
bool cos_latch_room(struct cos_enclave *e, const struct cos_slot *t, s32 cpu)
{
	lockdep_assert_held(&e->lock);
	return t->latch_cpu == cpu ||
	       READ_ONCE(per_cpu_ptr(&cos_latch, cpu)->nr) < COS_SHOOT_LATCH_MAX;
}

/*
 * The first task latched on @cpu, locked (the caller unlocks it), or NULL with none.  Peeks
 * under the latch lock, drops it, takes t->lock and checks again that @t is still first (a
 * task slot is never freed, only reused: locking a stale one is harmless).
 */
static struct cos_slot *cos_latch_first_locked(s32 cpu)
{
	struct cos_latch *l = per_cpu_ptr(&cos_latch, cpu);
	struct cos_slot *t;

	for (;;) {
		scoped_guard(raw_spinlock, &l->lock) {
			if (!l->nr)
				return NULL;
			t = l->q[0];
		}
		raw_spin_lock(&t->lock);
		scoped_guard(raw_spinlock, &l->lock)
			if (l->nr && l->q[0] == t)
				return t;
		raw_spin_unlock(&t->lock);
	}
}

/*
 * Take @t out of its CPU's pending slot or latch if it still waits there (not yet taken by
 * ops.dispatch).  Returns whether it did.  Caller holds t->lock.
 */
bool cos_pending_forget(struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (t->state != COS_TASK_QUEUED)
		return false;
	if (cos_cpu_valid(t->cpu) && cmpxchg(&cos_pending[t->cpu], t, NULL) == t)
		return true;
	return cos_latch_remove(t);
}

/*
 * @t leaves custody while queued: cancel its pending or latched shoot (SHOOT_STALE, to its
 * enclave).  Caller holds t->lock.
 */
void cos_pending_clear(struct cos_slot *t)
{
	if (cos_pending_forget(t))
		cos_post(cos_task_enclave(t), COS_MSG_SHOOT_STALE, t->cpu, t, t->cpu);
}

/**
 * cos_pending_none() - nothing is shot to @cpu nor taken there: ops.dispatch's lock-free path
 * @cpu: the dispatching CPU
 *
 * Pairs with the shoot's store: a shoot stores cos_pending[@cpu], then kicks @cpu after its
 * commit (cos_kick_shot_cpus() after the unlock; a local shoot, cos_lord_yield(), runs on @cpu
 * itself).  The IPI's queueing (llist_add) is a full barrier.  So a dispatch that reads NULL
 * just before the store is followed by the kick's schedule, whose dispatch sees the store.
 * cos_taken[@cpu] is set only by @cpu's own dispatch, so a NULL read there is exact; while it
 * is set, the slow path runs and resets it (a taken task that never started must not stay
 * behind).  A stale non-NULL read of either only costs the slow path.  The latch is read the
 * same way: @armed exactly (only @cpu writes it), @nr after the kick of a shoot that did not
 * find it armed.
 * Context: ops.dispatch on @cpu; lock-free.
 */
bool cos_pending_none(s32 cpu)
{
	const struct cos_latch *l;

	if (!cos_cpu_valid(cpu))
		return true;
	l = per_cpu_ptr(&cos_latch, cpu);
	return !READ_ONCE(cos_pending[cpu]) && !READ_ONCE(cos_taken[cpu]) &&
	       !READ_ONCE(l->armed) && !READ_ONCE(l->nr);
}

/**
 * cos_cpu_shot() - is a shot task other than @t about to run on @cpu?
 * @cpu: the CPU; @t: the task asking (NULL: any shot task counts)
 *
 * Context: any; lock-free (a snapshot: the callers run on @cpu with its rq lock held, where
 * only a new shoot can change the answer, and that shoot kicks @cpu afterwards).
 */
bool cos_cpu_shot(s32 cpu, const struct cos_slot *t)
{
	struct cos_slot *taken;

	if (!cos_cpu_valid(cpu))
		return false;
	taken = READ_ONCE(cos_taken[cpu]);
	return READ_ONCE(cos_pending[cpu]) || (taken && taken != t);
}

/**
 * cos_cpu_shot_by() - is a task @e's lord shot about to run on @cpu?
 * @cpu: the CPU (a lord CPU: several lords may share it); @e: the enclave
 *
 * As cos_cpu_shot(), for @e's tasks only: the shot task is in @e's custody until it runs.
 * Context: as cos_cpu_shot(); the task's custody_enclave is read racily (it changes only
 * under that task's lock, and a shot task stays in custody until it starts).
 */
bool cos_cpu_shot_by(s32 cpu, const struct cos_enclave *e)
{
	struct cos_slot *t;

	if (!cos_cpu_valid(cpu))
		return false;
	t = READ_ONCE(cos_pending[cpu]);
	if (t && data_race(t->custody_enclave) == e)
		return true;
	t = READ_ONCE(cos_taken[cpu]);
	return t && data_race(t->custody_enclave) == e;
}

/*
 * Is the task taken on @cpu an urgent one the wake rules started in place of the one running
 * there (COS_WAKE_PREEMPT)?  Context: ops.stopping on @cpu, its rq lock held: the taken word
 * is exact; the taken task's marks, written under its own lock before it was claimed, are
 * read racily (a stale one costs the displaced task its resume: it waits for the lord).
 */
bool cos_cpu_displacing(s32 cpu)
{
	struct cos_slot *taken = cos_cpu_valid(cpu) ? READ_ONCE(cos_taken[cpu]) : NULL;

	return taken && data_race(taken->placed) && READ_ONCE(taken->urgent);
}

/* @t started, or could not: @cpu's taken shoot is over.  Context: ops on @cpu, rq lock held. */
void cos_taken_clear(s32 cpu)
{
	if (cos_cpu_valid(cpu))
		WRITE_ONCE(cos_taken[cpu], NULL);
}

/* @t's slot is freed: it may not stay behind as its CPU's taken or running task.  Under t->lock. */
void cos_taken_forget(struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (cos_cpu_valid(t->cpu)) {
		cmpxchg(&cos_taken[t->cpu], t, NULL);
		cmpxchg(&cos_curr[t->cpu], t, NULL);
	}
}

/* A COS task starts on @cpu: its stop will call ops.dispatch there (see struct cos_latch). */
static void cos_latch_arm(s32 cpu)
{
	struct cos_latch *l;

	if (!cos_cpu_valid(cpu))
		return;
	l = per_cpu_ptr(&cos_latch, cpu);
	if (READ_ONCE(l->armed))
		return;
	guard(raw_spinlock)(&l->lock);
	l->armed = true;
}

/* Is @t shot to @cpu and not taken by its ops.dispatch yet?  Lock-free. */
bool cos_cpu_pending(s32 cpu, const struct cos_slot *t)
{
	return cos_cpu_valid(cpu) && READ_ONCE(cos_pending[cpu]) == t;
}

/*
 * Is @cpu free for the wake rules: no COS task runs, is shot, latched or taken there?  A
 * lock-free snapshot (see cos_wake_cpu_free()).
 */
bool cos_cpu_free(s32 cpu)
{
	return !READ_ONCE(cos_pending[cpu]) && !READ_ONCE(cos_taken[cpu]) &&
	       !READ_ONCE(cos_curr[cpu]) && !cos_latch_nr(cpu);
}

/*
 * May an urgent task of enclave @enclave_id start on @cpu in place of what runs there
 * (COS_WAKE_PREEMPT)?  A COS task of that enclave that is not urgent runs there, and nothing is
 * shot or taken there.  A lock-free snapshot, as cos_cpu_free(): a stale one costs a preemption
 * the lord did not ask for, or one it did that waits for its round trip.  The running task's
 * slot stays valid (the table lives as long as the module); its enclave is read racily (one
 * word, written under its t->lock).
 */
bool cos_cpu_preemptible(s32 cpu, u32 enclave_id)
{
	struct cos_slot *cur = READ_ONCE(cos_curr[cpu]);

	return cur && !READ_ONCE(cos_pending[cpu]) && !READ_ONCE(cos_taken[cpu]) &&
	       data_race(cur->home_id) == enclave_id && !READ_ONCE(cur->urgent);
}

/*
 * Claim free @cpu for @t, started there by the wake rules: @t becomes its taken task.  Only
 * @cpu's own ops write the taken word (its rq lock, held by the caller) and a detach clears
 * it, so two tasks woken onto one CPU cannot both get it.  Caller holds t->lock.
 */
bool cos_taken_claim(s32 cpu, struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	return !cmpxchg(&cos_taken[cpu], NULL, t);
}

/* @t starts running on @cpu.  Context: ops.running on @cpu (its rq lock held), t->lock held. */
void cos_cpu_running(s32 cpu, struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (!cos_cpu_valid(cpu))
		return;
	cos_latch_arm(cpu);
	/* before the taken word clears (a reader that sees neither, possible off x86, costs one
	 * preemption: see cos_wake_cpu_free()) */
	WRITE_ONCE(cos_curr[cpu], t);
	cos_taken_clear(cpu);
}

/*
 * @p, started by the wake rules, starts running on @cpu: if a shoot to @cpu came after the
 * placement, @p stops at once, as that shoot's kick would have stopped it.  The kick may have
 * been spent on the switch to @p: it landed on the task @p replaces, and sched_ext then took
 * @p off the local DSQ without calling ops.dispatch.  Only placed tasks: a task the lord shot
 * here keeps its turn, since the lord's books count on it (docs/design.md, "Wake rules").
 * The shoot stores the pending word before its IPI: if that IPI came first, this read sees
 * the store; if not, the IPI comes once @p runs and stops it itself.
 * Context: ops.running on @cpu, before the switch to @p (rq lock held, IRQs off).
 */
void cos_cpu_placed_running(s32 cpu, struct task_struct *p)
{
	if (!cos_cpu_valid(cpu) || !READ_ONCE(cos_pending[cpu]))
		return;
	p->scx.slice = 0;
	set_tsk_need_resched(p);	/* p's own flag: __schedule clears only prev's */
}

/* @t stops running on @cpu.  Context: ops.stopping (@cpu's rq lock held), t->lock held. */
void cos_cpu_stopped(s32 cpu, struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (cos_cpu_valid(cpu))
		cmpxchg(&cos_curr[cpu], t, NULL);
}

/*
 * A reference to @p for the shim, the one bpf_task_acquire() takes and bpf_task_release()
 * drops; NULL if @p is already being reaped (exit_task cleans its slot up).
 */
static struct task_struct *cos_task_acquire(struct task_struct *p)
{
	return refcount_inc_not_zero(&p->rcu_users) ? p : NULL;
}

/*
 * The first task latched on @cpu becomes its taken shoot; or, with none, @cpu is no longer
 * armed (see struct cos_latch).  Returns it referenced, or NULL; @slice as for
 * cos_dispatch_take(), and the same context.
 */
static struct task_struct *cos_latch_take(s32 cpu, u64 *slice)
{
	struct cos_latch *l = per_cpu_ptr(&cos_latch, cpu);
	struct task_struct *p;
	struct cos_slot *t;

	/*
	 * The peek and the disarm are two critical sections.  A shoot that latches a task
	 * between them saw @armed and sent no kick: look again rather than return empty with
	 * the CPU still armed, where nothing would dispatch that task.
	 */
	while (!(t = cos_latch_first_locked(cpu))) {
		cos_test_delay_atomic(&cos_delay_latch_take_us);
		guard(raw_spinlock)(&l->lock);
		if (!l->nr) {
			l->armed = false;	/* a later shoot sees it and kicks */
			return NULL;
		}
	}
	cos_latch_remove(t);
	WRITE_ONCE(cos_taken[cpu], t);
	*slice = t->slice;
	p = cos_task_acquire(t->p);
	trace_cos_dispatch(cpu, t->p->pid, t->slice, true);
	raw_spin_unlock(&t->lock);
	return p;
}

/**
 * cos_dispatch_take() - take the task shot to @cpu off its pending slot, or else off its latch
 * @cpu: the dispatching CPU
 * @slice: set to the slice the lord gave its shoot (0: no limit)
 *
 * The task stays QUEUED and becomes @cpu's taken shoot until it runs.  The pending word is
 * read, the task it names locked, and the word cleared only if it still names that task
 * (which then is QUEUED there and not freed: a detach cancels under the same lock); the latch
 * likewise (cos_latch_first_locked()).  A latched task is re-checked like a shot one: the shim
 * tests that it may run here (cos_dispatch_failed() if not), and a task that changed while
 * latched was taken off the latch by its dequeue (SHOOT_STALE).
 * Context: ops.dispatch (@cpu's rq lock held, IRQs off); lock-free when nothing is shot to
 * @cpu and its latch is not armed, else takes the shot task's t->lock and the latch lock.
 * Return: the task, with a reference the shim drops (bpf_task_release()), or NULL.
 */
struct task_struct *cos_dispatch_take(s32 cpu, u64 *slice)
{
	struct cos_slot *t;

	if (cos_pending_none(cpu))
		return NULL;
	if (unlikely(READ_ONCE(cos_hold_cpu) == cpu))
		return NULL;	/* held by a test (cos_hold_dispatch()) */
	for (;;) {
		t = READ_ONCE(cos_pending[cpu]);
		if (!t) {
			cos_taken_clear(cpu);	/* a taken shoot that never started */
			return cos_latch_take(cpu, slice);
		}
		guard(raw_spinlock)(&t->lock);
		if (cmpxchg(&cos_pending[cpu], t, NULL) == t) {
			WRITE_ONCE(cos_taken[cpu], t);
			*slice = t->slice;
			trace_cos_dispatch(cpu, t->p->pid, t->slice, false);
			return cos_task_acquire(t->p);
		}
	}
}

/*
 * @t, shot to @cpu, was taken out of that CPU's pending slot before its dispatch took it.  It
 * waits for its enclave's lord again (a lord CPU's slot may hold another enclave's task: lords
 * may share a lord CPU), or goes to the fair policy if that lord has lost control; the lord
 * learns it from SHOOT_STALE (arg = @cpu).  Caller holds t->lock.
 */
static void cos_pending_return(struct cos_slot *t, s32 cpu)
{
	struct cos_enclave *e = cos_task_enclave(t);

	lockdep_assert_held(&t->lock);
	if (!cos_task_wait(t, e))
		cos_fallback_add(t);
	cos_post(e, COS_MSG_SHOOT_STALE, cpu, t, cpu);
}

/*
 * A shoot with COS_SHOOT_F_REPLACE found @old in @cpu's pending slot: put @t there instead and
 * @old back to waiting (SHOOT_STALE, arg = @cpu), or to the fair policy if the lord has lost
 * control.  Should @cpu's dispatch have taken @old meanwhile, @t goes into the slot it left.
 * Another enclave's @old (two lords sharing a lord CPU) keeps its place.  Returns whether @t
 * is in the slot now.
 *
 * The only place that holds two task locks: @t's (the caller's) and then @old's, nested.
 * Every other path holds one task lock at a time.  Two lords may nest at once, each under its
 * own e->lock, but never in a cycle: @old sits in a pending slot, so no shoot holds its lock
 * as its @t past the NOT_WAITING check (cos_task_shoot()), and waits for nothing under it.
 * Context: COS_IOC_SHOOT, @e->lock and @t->lock held, IRQs off; takes @old->lock.
 */
static bool cos_pending_replace(struct cos_enclave *e, s32 cpu, struct cos_slot *old,
				struct cos_slot *t)
{
	lockdep_assert_held(&e->lock);
	lockdep_assert_held(&t->lock);
	raw_spin_lock_nested(&old->lock, SINGLE_DEPTH_NESTING);
	if (old->home_id != e->id) {	/* BUSY: not @e's to move */
		raw_spin_unlock(&old->lock);
		return false;
	}
	if (cmpxchg(&cos_pending[cpu], old, t) != old) {
		raw_spin_unlock(&old->lock);
		/* taken (or cancelled) meanwhile: only a shoot fills the slot, and that is us */
		return !cmpxchg(&cos_pending[cpu], NULL, t);
	}
	cos_pending_return(old, cpu);
	raw_spin_unlock(&old->lock);
	return true;
}

/*
 * Put @t, shot by the lord, in @cpu's pending slot (taking the place of a task pending there
 * with COS_SHOOT_F_REPLACE) or, with COS_SHOOT_F_LATCH, on its latch (room checked by the
 * caller).  *@kick says whether the caller must kick @cpu.  Returns false if @cpu's slot is
 * busy; @t then stays where it was.  Context: COS_IOC_SHOOT, @e->lock and t->lock held.
 */
bool cos_pending_put(struct cos_enclave *e, struct cos_slot *t, s32 cpu, u32 flags, bool *kick)
{
	struct cos_slot *old;

	lockdep_assert_held(&e->lock);
	lockdep_assert_held(&t->lock);
	if (flags & COS_SHOOT_F_LATCH) {
		cos_latch_add(e, t, cpu, kick);
		return true;
	}
	old = cmpxchg(&cos_pending[cpu], NULL, t);	/* before the kick: cos_pending_none() */
	if (old && (!(flags & COS_SHOOT_F_REPLACE) || !cos_pending_replace(e, cpu, old, t)))
		return false;
	cos_latch_remove(t);
	*kick = true;
	return true;
}

/*
 * Put @t, handed @cpu by the task yielding there (COS_WAKE_HANDOFF, cos_task_yield()), in
 * @cpu's pending slot, unless a task is shot or latched there (the lord's choice goes first).
 * No kick: @cpu reschedules next, and its ops.dispatch takes @t.  A latch shoot racing with
 * this puts its task behind @t, where it would have waited behind the yielding task anyway.
 * Context: ops.yield on @cpu (its rq lock held, IRQs off), t->lock held.
 */
bool cos_pending_hand(struct cos_slot *t, s32 cpu)
{
	lockdep_assert_held(&t->lock);
	return cos_cpu_valid(cpu) && !cos_latch_nr(cpu) && !cmpxchg(&cos_pending[cpu], NULL, t);
}

/**
 * cos_pending_cancel() - @cpu went offline: the tasks shot or latched there and not yet taken
 * wait again
 * @e: the enclave whose CPU (or lord's CPU) @cpu is
 * @cpu: the CPU
 *
 * They are back in their enclave's custody (SHOOT_STALE, arg = @cpu, tells its lord to place
 * them elsewhere), or with the fair policy if that lord has lost control meanwhile.  A task
 * already taken there is in that CPU's local DSQ, which sched_ext empties when the CPU goes.
 * Context: the lock of @e, whose CPU (or lord CPU) @cpu is, held (no shoot of @e can target
 * @cpu meanwhile; the lords sharing a lord CPU each call this under their own), IRQs off;
 * takes each task's t->lock in turn, and @cpu's latch lock.
 */
void cos_pending_cancel(struct cos_enclave *e, s32 cpu)
{
	struct cos_slot *t;

	lockdep_assert_held(&e->lock);
	if (!cos_cpu_valid(cpu))
		return;
	t = READ_ONCE(cos_pending[cpu]);
	if (t) {
		guard(raw_spinlock)(&t->lock);
		if (cmpxchg(&cos_pending[cpu], t, NULL) == t)
			cos_pending_return(t, cpu);
	}
	while ((t = cos_latch_first_locked(cpu))) {
		cos_latch_remove(t);
		cos_pending_return(t, cpu);
		raw_spin_unlock(&t->lock);
	}
}

/**
 * cos_pending_pid() - the pid of the task shot to @cpu and not yet taken, or 0
 * @cpu: the CPU
 * Context: any, IRQs off (the stall report); takes that task's t->lock.
 */
pid_t cos_pending_pid(s32 cpu)
{
	struct cos_slot *t;

	if (!cos_cpu_valid(cpu))
		return 0;
	t = READ_ONCE(cos_pending[cpu]);
	if (!t)
		return 0;
	guard(raw_spinlock)(&t->lock);
	return READ_ONCE(cos_pending[cpu]) == t && t->p ? t->p->pid : 0;
}

/* Allocate the per-CPU words and set up the kicks and latches.  Context: module init. */
int cos_cpus_init(void)
{
	int cpu;

	cos_pending = kcalloc(nr_cpu_ids, sizeof(*cos_pending), GFP_KERNEL);
	cos_taken = kcalloc(nr_cpu_ids, sizeof(*cos_taken), GFP_KERNEL);
	cos_curr = kcalloc(nr_cpu_ids, sizeof(*cos_curr), GFP_KERNEL);
	if (!cos_pending || !cos_taken || !cos_curr) {
		cos_cpus_exit();
		return -ENOMEM;
	}
	for_each_possible_cpu(cpu) {
		INIT_CSD(per_cpu_ptr(&cos_kick_csd, cpu), cos_kick_fn, NULL);
		INIT_CSD(per_cpu_ptr(&cos_shoot_kick_csd, cpu), cos_shoot_kick_fn, NULL);
		INIT_CSD(per_cpu_ptr(&cos_latch_kick_csd, cpu), cos_latch_kick_fn, NULL);
		INIT_CSD(per_cpu_ptr(&cos_throttle_kick_csd, cpu), cos_throttle_kick_fn, NULL);
		raw_spin_lock_init(&per_cpu_ptr(&cos_latch, cpu)->lock);
	}
	return 0;
}

/* Free what cos_cpus_init() allocated.  Context: module init (failure) and exit. */
void cos_cpus_exit(void)
{
	kfree(cos_pending);
	kfree(cos_taken);
	kfree(cos_curr);
	cos_pending = NULL;
	cos_taken = NULL;
	cos_curr = NULL;
}
