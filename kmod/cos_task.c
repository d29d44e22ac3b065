// SPDX-License-Identifier: GPL-2.0
/*
 * cos_task.c — the verbs about a COS task: what each of the shim's task events does to it
 * (attach, detach, select_cpu and the wake rules, enqueue, dequeue, dispatch failure,
 * running, stopping, quiescent, yield, affinity), the lord's shoot of a task and its
 * fallback of them all, and COS_IOC_GET_TASKS.
 *
 * Every verb about one task takes that task's t->lock (COS_TASK_LOCK), with its rq lock or
 * pi_lock already held by sched_ext: the lock is uncontended except against the lord's shoot
 * of that task and the fallback.  The shim's kfuncs (cos_kfuncs.c) are adapters onto these.
 *
 * See docs/design.md, "The task state machine" and "The shoot path, end to end".
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cos_internal.h"
#include "cos_trace.h"

#define COS_GET_TASKS_RESCHED	256	/* slots COS_IOC_GET_TASKS reads between cond_resched() */

/* Is @t @p's?  Caller holds t->lock (a FREE slot has no task). */
static bool cos_task_is(const struct cos_slot *t, const struct task_struct *p)
{
	lockdep_assert_held(&t->lock);
	return t->state != COS_TASK_FREE && t->p == p;
}

/*
 * The verbs about one task start with COS_TASK_LOCK(t, p, slot): @t is slot @slot's entry,
 * locked (IRQs saved) until the end of the scope; the verb returns @ret if it is not @p's.
 */
#define COS_TASK_LOCK(t, p, slot, ret...)					\
	struct cos_slot *t = cos_slot_at(slot);					\
	if (!t)									\
		return ret;							\
	guard(raw_spinlock_irqsave)(&t->lock);					\
	if (!cos_task_is(t, p))							\
		return ret

/*
 * The enclave @t belongs to, registry index and id (0: none); the lord of the one it leaves
 * hears TASK_DEAD, and the slot gets a new generation: to each lord a task that moves is
 * another task (docs/design.md, "Several enclaves").  Caller holds t->lock.
 */
static void cos_task_set_home(struct cos_slot *t, struct cos_enclave *e)
{
	struct cos_enclave *old = cos_task_enclave(t);

	lockdep_assert_held(&t->lock);
	if (old) {
		cos_post(old, COS_MSG_TASK_DEAD, t->cpu, t, 0);
		cos_status_leave(old, t);
	}
	if (t->home_id)
		t->gen++;
	WRITE_ONCE(t->urgent, false);	/* the old lord's word */
	t->home_id = e ? e->id : 0;
	t->home_idx = e ? e->idx : 0;
}

/*
 * The enclave @p's allowed CPUs put it in now (cos_task_home()); @t moves there if that is not
 * the one its lord was told of.  Called as the task becomes runnable, when it is in no custody.
 * Caller holds t->lock.
 */
static struct cos_enclave *cos_task_rehome(struct cos_slot *t, struct task_struct *p)
{
	struct cos_enclave *e = cos_task_home(p);

	lockdep_assert_held(&t->lock);
	if (unlikely((e ? e->id : 0) != t->home_id))
		cos_task_set_home(t, e);
	return e;
}

/**
 * cos_task_attach() - give COS task @p a slot: the TASK_NEW message, state BLOCKED
 * @p: a task whose policy is SCHED_EXT (a trusted pointer from the shim)
 * @runnable: whether it is runnable now (TASK_NEW's arg)
 *
 * Context: the op that first sees @p as a COS task (@p's rq lock or pi_lock held, IRQs off);
 * takes cos_slots_lock (not when the table is full, nor for a user refused since the last
 * release: a task refused asks again at each event), then the slot's t->lock.
 * Return: the slot; -ENOSPC when the table is full (for a user other than root, when only
 * root's reserve is left); -EDQUOT when @p's user holds max_tasks_per_user slots already, or
 * its cgroup (not the root one) max_tasks_per_cgroup.
 */
s32 cos_task_attach(struct task_struct *p, bool runnable)
{
	struct cos_slot *t;
	u64 cgid;

	/* a lord is never a COS task: it would wait in its own custody */
	if (cos_lord_index(p) >= 0)
		return -EPERM;
	if (cos_slots_full())
		return -ENOSPC;
	scoped_guard(rcu)
		cgid = cgroup_id(task_dfl_cgroup(p));	/* where its slot counts (cos_slot.c) */
	/* every kuid maps in init_user_ns: never (uid_t)-1, which marks a free uid entry */
	t = cos_slot_alloc(from_kuid(&init_user_ns, task_uid(p)), cgid);
	if (IS_ERR(t))
		return PTR_ERR(t);
	guard(raw_spinlock_irqsave)(&t->lock);
	WRITE_ONCE(t->p, p);
	t->gen++;
	t->state = COS_TASK_BLOCKED;
	t->cpu = task_cpu(p);
	t->next_msg = 0;
	t->runtime = 0;
	t->slice = 0;
	WRITE_ONCE(t->urgent, false);
	t->last_msg = COS_MSG_NONE;
	t->last_ts = 0;
	t->home_id = 0;
	cos_task_rehome(t, p);
	cos_post(cos_task_enclave(t), COS_MSG_TASK_NEW, t->cpu, t, runnable);
	return cos_slot_nr(t);
}

/**
 * cos_task_detach() - @p died or left SCHED_EXT: cancel its shoot, post TASK_DEAD, free the slot
 * @p: the task; @slot: its slot
 *
 * Context: the op that sees @p leave (its rq lock or pi_lock held, IRQs off); takes t->lock,
 * then cos_slots_lock.
 */
void cos_task_detach(struct task_struct *p, s32 slot)
{
	struct cos_slot *t = cos_slot_at(slot);

	if (!t)
		return;
	scoped_guard(raw_spinlock_irqsave, &t->lock) {
		if (!cos_task_is(t, p))
			return;
		cos_pending_clear(t);
		cos_taken_forget(t);
		cos_task_set_state(t, COS_TASK_FREE);
		cos_post(cos_task_enclave(t), COS_MSG_TASK_DEAD, smp_processor_id(), t, 0);
		WRITE_ONCE(t->p, NULL);
		cos_status_sync(t);	/* FREE, no pid, in its enclave's table */
		t->home_id = 0;
	}
	cos_slot_release(t);
}

/* The wake rules of @e's lord that apply now (struct cos_ctl.wake_rules), or 0.  Lock-free. */
static u32 cos_wake_rules(struct cos_enclave *e)
{
	if (!e || !READ_ONCE(e->active) || cos_tasks_waiting(e))
		return 0;
	return READ_ONCE(e->ctl->wake_rules) & (COS_WAKE_PREV | COS_WAKE_IDLE);
}

/* Is @cpu a CPU of @e's enclave (never the lord's), online for it, and allowed for @p? */
static bool cos_enclave_cpu_for(struct cos_enclave *e, const struct task_struct *p, s32 cpu)
{
	return cos_cpu_valid(cpu) && cpumask_test_cpu(cpu, e->cpus) &&
	       !cpumask_test_cpu(cpu, e->offline) && cpumask_test_cpu(cpu, p->cpus_ptr);
}

/*
 * May the wake rules start @p on @cpu?  An enclave CPU for it (cos_enclave_cpu_for()), and
 * free: no COS task runs, is shot, latched or taken there.  A lock-free snapshot: a shoot that
 * races with the placement preempts the placed task (PREEMPTED, BY_COS), by its kick or, if
 * that kick was spent on the switch to it, as it starts (cos_cpu_placed_running()); the lord's
 * books follow its messages.
 */
static bool cos_wake_cpu_free(struct cos_enclave *e, const struct task_struct *p, s32 cpu)
{
	return cos_enclave_cpu_for(e, p, cpu) && cos_cpu_free(cpu);
}

/* A free CPU of @e in @among for @p, @prev_cpu first; or -1.  Lock-free (cos_wake_cpu_free()). */
static s32 cos_wake_pick(struct cos_enclave *e, const struct task_struct *p, s32 prev_cpu,
			 const struct cpumask *among)
{
	s32 cpu;

	if (cos_wake_cpu_free(e, p, prev_cpu) && cpumask_test_cpu(prev_cpu, among))
		return prev_cpu;
	for_each_cpu_and(cpu, e->cpus, among)
		if (cos_wake_cpu_free(e, p, cpu))
			return cpu;
	return -1;
}

/*
 * COS_WAKE_PREEMPT: may waking @t of @e start in place of a task that is not urgent (or on a
 * free CPU, though tasks wait)?  Its lord's last shoot marked it urgent.  Lock-free.
 */
static bool cos_wake_preempts(struct cos_enclave *e, const struct cos_slot *t)
{
	return e && READ_ONCE(e->active) && READ_ONCE(t->urgent) &&
	       (READ_ONCE(e->ctl->wake_rules) & COS_WAKE_PREEMPT);
}

/* May urgent @p start on @cpu in place of what runs there (cos_cpu_preemptible())? */
static bool cos_wake_cpu_preemptible(struct cos_enclave *e, const struct task_struct *p, s32 cpu)
{
	return cos_enclave_cpu_for(e, p, cpu) && cos_cpu_preemptible(cpu, e->id);
}

/* COS_WAKE_NEXT, beside COS_WAKE_PREEMPT: may urgent @t wait next behind another?  Lock-free. */
static bool cos_wake_nexts(struct cos_enclave *e, const struct cos_slot *t)
{
	u32 both = COS_WAKE_PREEMPT | COS_WAKE_NEXT;

	return cos_wake_preempts(e, t) && (READ_ONCE(e->ctl->wake_rules) & both) == both;
}

/* May urgent @p wait next on @cpu, behind the urgent task there (cos_cpu_next_open())? */
static bool cos_wake_cpu_next_open(struct cos_enclave *e, const struct task_struct *p, s32 cpu)
{
	return cos_enclave_cpu_for(e, p, cpu) && cos_cpu_next_open(cpu, e->id);
}

/*
 * For urgent @t's @p (COS_WAKE_PREEMPT): a free CPU of @e, else one whose task it may displace,
 * else (COS_WAKE_NEXT) one where it may wait next, @prev_cpu first in each; or -1.  Lock-free.
 */
static s32 cos_wake_pick_preempt(struct cos_enclave *e, const struct cos_slot *t,
				 const struct task_struct *p, s32 prev_cpu)
{
	s32 cpu = cos_wake_pick(e, p, prev_cpu, p->cpus_ptr);

	if (cpu >= 0)
		return cpu;
	if (cos_wake_cpu_preemptible(e, p, prev_cpu))
		return prev_cpu;
	for_each_cpu(cpu, e->cpus)
		if (cos_wake_cpu_preemptible(e, p, cpu))
			return cpu;
	if (!cos_wake_nexts(e, t))
		return -1;
	if (cos_wake_cpu_next_open(e, p, prev_cpu))
		return prev_cpu;
	for_each_cpu(cpu, e->cpus)
		if (cos_wake_cpu_next_open(e, p, cpu))
			return cpu;
	return -1;
}

/**
 * cos_task_select_cpu() - where the wake rules would start waking COS task @p, or -1
 * @p: the task; @slot: its slot; @prev_cpu: the CPU it last ran on
 * @idle: the CPUs that run nothing now (sched_ext's idle mask)
 *
 * COS_WAKE_PREV: @prev_cpu if it is free.  COS_WAKE_IDLE: a free CPU of the enclave in @p's
 * allowed set, one that runs nothing first, then one that runs a fair task (@prev_cpu first in
 * each).  Starting on a CPU with a fair task costs an IPI and a context switch that an idle
 * CPU does not.  COS_WAKE_PREEMPT, for a task its lord marked urgent and none of those
 * started: a free CPU, else one whose task is not urgent, else (COS_WAKE_NEXT) one whose urgent
 * task it may wait behind (cos_wake_pick_preempt()).  -1 when
 * no rule applies (a task waits for the lord, or the lord set none) or no CPU is free.
 * Nothing is claimed: the enqueue on the chosen CPU checks again (cos_task_enqueue()), and a
 * task that lost the race waits for the lord.  A stale @idle costs only the preemption it was
 * to spare.
 * Context: ops.select_cpu (@p's pi_lock held, IRQs off); lock-free.
 */
s32 cos_task_select_cpu(struct task_struct *p, s32 slot, s32 prev_cpu,
			const struct cpumask *idle)
{
	struct cos_enclave *e = cos_task_home(p);
	struct cos_slot *t = cos_slot_at(slot);
	u32 rules = cos_wake_rules(e);
	s32 cpu = -1;

	if (rules & COS_WAKE_IDLE) {
		cpu = cos_wake_pick(e, p, prev_cpu, idle);
		if (cpu < 0)
			cpu = cos_wake_pick(e, p, prev_cpu, p->cpus_ptr);
	} else if (rules && cos_wake_cpu_free(e, p, prev_cpu)) {
		cpu = prev_cpu;
	}
	if (cpu < 0 && t && READ_ONCE(t->p) == p && cos_wake_preempts(e, t))
		cpu = cos_wake_pick_preempt(e, t, p, prev_cpu);
	trace_cos_select_cpu(p->pid, prev_cpu, cpu);
	return cpu;
}

/* How the wake rules start a waking task (cos_wake_place()). */
enum cos_start {
	COS_START_NOT,		/* they do not: it waits for the lord (or COS_WAKE_NEXT's latch) */
	COS_START_FREE,		/* on its CPU, which was free */
	COS_START_DISPLACE,	/* on its CPU, in place of a task that is not urgent */
};

/*
 * Why the wake rules did not start waking @t (enum cos_trace_wake), @free and @urgent as
 * cos_wake_place() saw them: for the cos_wake_rule tracepoint.  Lock-free.
 */
static u32 cos_wake_none(struct cos_enclave *e, bool free, bool urgent)
{
	if (!READ_ONCE(e->active))
		return COS_TRACE_WAKE_NO_LORD;
	if (!free && urgent)
		return COS_TRACE_WAKE_CPU_BUSY;	/* urgent, but what runs there is urgent too */
	if (cos_tasks_waiting(e))
		return COS_TRACE_WAKE_OTHERS_WAIT;
	if (!(READ_ONCE(e->ctl->wake_rules) & (COS_WAKE_PREV | COS_WAKE_IDLE)))
		return COS_TRACE_WAKE_NO_RULE;
	return COS_TRACE_WAKE_CPU_BUSY;
}

/*
 * The wake rules start @t (waking) on its CPU, if they apply and that CPU is free, or, for an
 * urgent task (COS_WAKE_PREEMPT), runs a task it may displace.  @t becomes the CPU's taken
 * task, as a shot task taken by ops.dispatch: QUEUED with the lord's wake slice, and the
 * caller puts it at the head of the local DSQ (preempting what runs there).  The claim is a
 * cmpxchg on cos_taken[cpu], which only this CPU's ops write (this rq lock) and a detach
 * clears: two tasks woken onto one CPU cannot both get it.  COS_START_NOT sets *@why (enum
 * cos_trace_wake, for the cos_wake_rule tracepoint).  Caller holds t->lock and the rq lock of
 * task_cpu(@p).
 */
static enum cos_start cos_wake_place(struct cos_enclave *e, struct cos_slot *t,
					struct task_struct *p, u32 *why)
{
	s32 cpu = task_cpu(p);
	bool free, urgent;

	lockdep_assert_held(&t->lock);
	if (!e) {
		*why = COS_TRACE_WAKE_NO_LORD;	/* no lord's enclave to start it in */
		return COS_START_NOT;
	}
	free = cos_wake_cpu_free(e, p, cpu);
	urgent = cos_wake_preempts(e, t);
	if (!(free && (cos_wake_rules(e) || urgent)) &&
	    !(urgent && cos_wake_cpu_preemptible(e, p, cpu))) {
		*why = cos_wake_none(e, free, urgent);
		return COS_START_NOT;
	}
	if (!cos_taken_claim(cpu, t)) {
		*why = COS_TRACE_WAKE_LOST;
		return COS_START_NOT;
	}
	cos_task_set_state(t, COS_TASK_QUEUED);
	t->placed = true;
	t->slice = READ_ONCE(e->ctl->wake_slice_ns);
	return free ? COS_START_FREE : COS_START_DISPLACE;
}

/*
 * COS_WAKE_NEXT: urgent @t, waking, just put in custody (WAITING), waits next on its CPU
 * instead, at the head of the latch there, behind @e's urgent task running there
 * (cos_latch_next()): QUEUED, with the lord's wake slice, started by that CPU's dispatch when
 * the running task stops.  It keeps its place in custody, as any latched task.  Returns
 * whether it did.  Caller holds t->lock and the rq lock of task_cpu(@p).
 */
static bool cos_wake_next(struct cos_enclave *e, struct cos_slot *t, struct task_struct *p)
{
	s32 cpu = task_cpu(p);

	lockdep_assert_held(&t->lock);
	if (!cos_wake_nexts(e, t) || !cos_enclave_cpu_for(e, p, cpu) ||
	    !cos_latch_next(t, cpu, e->id))
		return false;
	cos_task_set_state(t, COS_TASK_QUEUED);
	t->slice = READ_ONCE(e->ctl->wake_slice_ns);
	return true;
}

/*
 * Per CPU: the task owed this CPU when @waker, a COS task running here, yields or blocks
 * (COS_WAKE_HANDOFF, COS_WAKE_HANDOFF_BLOCK): the last task @waker woke here in task context
 * that went into custody, or the task that handed @waker this CPU at a yield (the CPU is owed
 * back).  Written by cos_task_enqueue() in the waker's context and by cos_task_yield(), read
 * and cleared by cos_task_yield() and cos_task_quiescent() in @waker's: all on this CPU with
 * IRQs off, so no lock.  A stale record costs nothing: the handoff checks the task under its
 * lock.
 */
struct cos_woken {
	pid_t waker;
	u32 slot;
	u32 gen;
};
static DEFINE_PER_CPU(struct cos_woken, cos_woken);

/* @t (waiting in custody) was woken by the task running on this CPU.  Caller holds t->lock. */
static void cos_woken_note(struct cos_slot *t)
{
	struct cos_woken *w = this_cpu_ptr(&cos_woken);

	lockdep_assert_held(&t->lock);
	w->waker = t->waker;
	w->slot = cos_slot_nr(t);
	w->gen = t->gen;
}

/*
 * COS_WAKE_HANDOFF (@rule; or COS_WAKE_HANDOFF_BLOCK): a COS task of @e yields (blocks on)
 * @cpu, an enclave CPU it runs on, for the task it woke last there (@w), if that task still
 * waits for @e's lord and may run on @cpu.  The task goes to @cpu's pending slot as if shot
 * there, with the lord's wake slice, and the lord gets TASK_PLACED (COS_PLACED_F_HANDOFF).  A
 * shoot of it racing with this finds it QUEUED (NOT_WAITING); a fallback finds it in custody,
 * QUEUED, and takes it out of the pending slot (cos_fallback_all()).  Returns the pid of the
 * task handed @cpu, or 0.
 * Context: ops.yield or ops.quiescent on @cpu (its rq lock held, IRQs off, RCU-sched), no
 * t->lock held; takes the woken task's t->lock (it stays on its custody list: QUEUED keeps its
 * place there).
 */
static pid_t cos_task_handoff(struct cos_enclave *e, s32 cpu, const struct cos_woken *w, u32 rule)
{
	struct cos_slot *t = cos_slot_at(w->slot);
	struct task_struct *p;

	if (!t || !(READ_ONCE(e->ctl->wake_rules) & rule))
		return 0;
	guard(raw_spinlock)(&t->lock);
	p = t->p;
	/* in custody (not popped by a fallback), not throttled, and @cpu an enclave CPU for it */
	if (t->state != COS_TASK_WAITING || t->gen != w->gen || t->home_id != e->id ||
	    t->custody_cpu < 0 || !READ_ONCE(e->active) || cos_group_throttled(t->cgid) ||
	    !cos_enclave_cpu_for(e, p, cpu) || (p->migration_disabled && task_cpu(p) != cpu) ||
	    !cos_pending_hand(t, cpu))
		return 0;
	t->slice = READ_ONCE(e->ctl->wake_slice_ns);	/* cos_dispatch_take() reads it */
	cos_task_set_state(t, COS_TASK_QUEUED);
	t->cpu = cpu;
	/* no decision asked: the waker's TASK_YIELD or TASK_BLOCKED, which follows, may ask one */
	cos_post_lazy(e, COS_MSG_TASK_PLACED, cpu, t, (u64)cpu | COS_PLACED_F_HANDOFF);
	return p->pid;
}

/*
 * @t, in custody, is told it waits for its throttled bandwidth group (TASK_THROTTLED, with
 * GROUP_THROTTLED first if the lord has not heard of the group's throttling yet), under the
 * group's hold so that its release (GROUP_UNTHROTTLED) cannot come before in the ring.
 * Returns false if the group is no longer throttled.  Caller holds t->lock.
 */
static bool cos_task_throttled(struct cos_enclave *e, struct cos_slot *t, u64 gid)
{
	bool first;

	lockdep_assert_held(&t->lock);
	cos_task_unpark(t);	/* told again: counted once */
	if (!gid || !cos_group_hold_throttled(gid, &first))
		return false;
	if (first)
		cos_post(e, COS_MSG_GROUP_THROTTLED, t->cpu, NULL, gid);
	cos_group_park(gid, e->idx);
	t->throttled_idx = e->idx;
	WRITE_ONCE(t->throttled_gid, gid);
	cos_post(e, COS_MSG_TASK_THROTTLED, t->cpu, t, gid);
	cos_group_unhold();
	return true;
}

/*
 * Bandwidth group @id has budget again: tell the lords (a group's tasks may be in several
 * enclaves; a lord that has none of them ignores it).  Context: cos_group.c's release, under
 * its cos_bw.lock with IRQs off (the refill hrtimer, or a cpu.max write); lock-free here.
 */
static void cos_task_group_unthrottled(u64 id)
{
	int i;

	for (i = 0; i < COS_ENCLAVES_MAX; i++) {
		struct cos_enclave *e = rcu_dereference_sched(cos_enclaves[i]);

		if (e)
			cos_post(e, COS_MSG_GROUP_UNTHROTTLED, raw_smp_processor_id(), NULL, id);
	}
}

/* What cos_group.c needs of the files above it (struct cos_group_hooks). */
const struct cos_group_hooks cos_task_group_hooks = {
	.unthrottled = cos_task_group_unthrottled,
	.kick_idle = cos_kick_idle,
	.kick_spent = cos_kick_spent,
	.kick_throttled = cos_kick_throttled,
};

/*
 * After a cos_post_lazy(): did a task start waiting meanwhile?  Its own message, which woke
 * the lord, may have come before ours in the ring, and the lord would sleep on ours until its
 * next wake-up.  A task counts itself waiting before it posts, and both posts reserve their
 * seq with a fully ordered cmpxchg of e->head: if its message came first, this read sees its
 * count; if ours came first, the lord reads ours on its way to its.
 */
static void cos_lazy_recheck(struct cos_enclave *e)
{
	if (cos_tasks_waiting(e) > 0)
		cos_ring_wake_now(e);
}

/*
 * The thread that woke @p, if this enqueue runs in its context: a wake-up from task context
 * that try_to_wake_up() enqueued itself.  One the kernel queued to @p's CPU is enqueued there
 * from the IPI (hard IRQ) or by the idle task, and one from an interrupt runs in whatever task
 * it interrupted: 0 for those, never a wrong thread.
 */
static u32 cos_task_waker(struct task_struct *p)
{
	if (!in_task() || is_idle_task(current) || current == p)
		return 0;
	return current->pid;
}

/* debugfs cos/no_displaced_resume (cos_main.c): see cos_task_resumes(); read lock-free */
bool cos_no_displaced_resume;

/*
 * Does preempted @t, just put in custody, resume on its CPU from the latch there
 * (cos_latch_resume())?  After a kthread, if tasks are latched there; after the urgent task
 * that displaced it, always (unless debugfs cos/no_displaced_resume says to leave it to the
 * lord).  Caller holds t->lock and the rq lock of its CPU.
 */
static bool cos_task_resumes(struct cos_slot *t)
{
	if (t->next_arg == COS_PREEMPT_BY_OTHER)
		return cos_latch_resume(t, t->cpu, false);
	return t->next_arg == COS_PREEMPT_BY_COS && t->displaced &&
	       !READ_ONCE(cos_no_displaced_resume) && cos_latch_resume(t, t->cpu, true);
}

/**
 * cos_task_enqueue() - runnable COS task @p: keep it in custody for the lord, or not
 * @p: the task; @slot: its slot
 * @wake: it woke up (SCX_ENQ_WAKEUP)
 * @cgid: its cgroup (bandwidth group)
 *
 * Posts RUNNABLE (with its waker, cos_task_waker(), for a wake-up) or PREEMPTED/YIELD when it
 * was running, and, when a lord has control and @p may run on one of its CPUs, puts it in
 * custody (WAITING).  A waking task the lord's wake rules start on its CPU (cos_wake_place())
 * or queue next there (cos_wake_next()) is posted TASK_PLACED instead.  One a kthread
 * preempted goes back to the head of its CPU's latch if tasks are latched there, one an
 * urgent task displaced goes back behind it (cos_task_resumes(): QUEUED with the rest of its
 * slice, posted PREEMPTED with COS_PREEMPT_F_LATCHED).  One whose bandwidth group (or an
 * ancestor) is throttled is neither placed, queued next nor resumed: it waits in custody,
 * posted TASK_THROTTLED (cos_task_throttled()).
 * Context: ops.enqueue (@p's rq lock held, IRQs off); takes t->lock, then this CPU's custody
 * lock, and @p's CPU's latch lock (or cos_group.c's cos_bw.lock for a throttled one).
 * Return: COS_ENQ_CUSTODY, COS_ENQ_PLACED or COS_ENQ_FAIR.
 */
enum cos_enq cos_task_enqueue(struct task_struct *p, s32 slot, bool wake, u64 cgid)
{
	struct cos_enclave *e;
	enum cos_enq ret = COS_ENQ_FAIR;
	enum cos_start how;
	u32 msg, why = COS_TRACE_WAKE_THROTTLED;
	u64 gid;
	COS_TASK_LOCK(t, p, slot, COS_ENQ_FAIR);

	e = cos_task_rehome(t, p);
	msg = t->next_msg ?: COS_MSG_TASK_RUNNABLE;
	t->next_msg = 0;
	t->cpu = task_cpu(p);
	t->waker = wake ? cos_task_waker(p) : 0;
	t->cgid = cgid;
	cos_task_unpark(t);
	gid = cos_group_throttled(cgid);
	how = COS_START_NOT;
	if (!gid && wake && msg == COS_MSG_TASK_RUNNABLE)
		how = cos_wake_place(e, t, p, &why);
	if (how != COS_START_NOT)
		trace_cos_wake_rule(e->id, p->pid, t->cpu, how == COS_START_FREE ?
				    COS_TRACE_WAKE_FREE : COS_TRACE_WAKE_DISPLACE);
	if (how == COS_START_FREE && !cos_tasks_waiting(e)) {
		/* no task waits: nothing for the lord to decide */
		cos_post_lazy(e, COS_MSG_TASK_PLACED, t->cpu, t, t->cpu);
		cos_lazy_recheck(e);
		return COS_ENQ_PLACED;
	}
	if (how != COS_START_NOT) {
		/* an urgent task, while others wait or in place of one (its PREEMPTED follows) */
		cos_post(e, COS_MSG_TASK_PLACED, t->cpu, t, (u64)t->cpu |
			 (how == COS_START_DISPLACE ? COS_PLACED_F_PREEMPT : 0));
		return COS_ENQ_PLACED;
	}
	if (cos_task_wait(t, e)) {	/* its CPUs include @e's (cos_task_home()) */
		ret = COS_ENQ_CUSTODY;
		if (cos_task_throttled(e, t, gid)) {
			if (wake && msg == COS_MSG_TASK_RUNNABLE)
				trace_cos_wake_rule(e->id, p->pid, t->cpu, COS_TRACE_WAKE_THROTTLED);
			return ret;
		}
		if (wake && msg == COS_MSG_TASK_RUNNABLE && cos_wake_next(e, t, p)) {
			/* behind an urgent task: it starts when that one stops */
			trace_cos_wake_rule(e->id, p->pid, t->cpu, COS_TRACE_WAKE_NEXT);
			cos_post(e, COS_MSG_TASK_PLACED, t->cpu, t,
				 (u64)t->cpu | COS_PLACED_F_NEXT);
			return ret;
		}
		if (t->waker && msg == COS_MSG_TASK_RUNNABLE)
			cos_woken_note(t);	/* its waker may yield to it (COS_WAKE_HANDOFF) */
		if (msg == COS_MSG_TASK_PREEMPTED && cos_task_resumes(t)) {
			cos_task_set_state(t, COS_TASK_QUEUED);
			t->slice = t->slice_left;
			t->next_arg |= COS_PREEMPT_F_LATCHED;
		}
	} else {
		cos_task_set_state(t, COS_TASK_FAIR);
	}
	if (wake && msg == COS_MSG_TASK_RUNNABLE)
		trace_cos_wake_rule(e ? e->id : 0, p->pid, t->cpu, why);
	cos_post(e, msg, t->cpu, t, msg == COS_MSG_TASK_PREEMPTED ? t->next_arg : 0);
	return ret;
}

/**
 * cos_task_dequeue() - @p leaves the shim's custody
 * @p: the task; @slot: its slot
 *
 * Two cases.  A shot task that ops.dispatch already took (QUEUED, no longer pending nor
 * latched) is on its way to run.  Since Linux 7.1 sched_ext calls ops.dequeue when a task's
 * custody ends in a local DSQ: no departure, it stays QUEUED until ops.running.  (If the
 * insert is dropped for a property change meanwhile, the re-enqueue posts RUNNABLE.)
 * Otherwise the task leaves without running (property change, exit): a pending or latched
 * shoot of it is cancelled (SHOOT_STALE), and it is re-enqueued later if still runnable.
 * Context: ops.dequeue (@p's rq lock held, IRQs off); takes t->lock.
 */
void cos_task_dequeue(struct task_struct *p, s32 slot)
{
	COS_TASK_LOCK(t, p, slot);

	if (t->state == COS_TASK_QUEUED && !cos_cpu_pending(t->cpu, t) && t->latch_cpu < 0) {
		/* taken by ops.dispatch: custody ends in the local DSQ */
	} else if (t->state == COS_TASK_WAITING || t->state == COS_TASK_QUEUED || t->fallback) {
		/* leaves without running; a fallback one the shim did not take yet, too */
		cos_pending_clear(t);
		cos_task_set_state(t, COS_TASK_BLOCKED);
		cos_status_sync(t);
	}
}

/**
 * cos_task_slice() - the slice the lord gave @p's shoot (0 = no limit)
 * @p: the task; @slot: its slot
 * Context: ops.enqueue, right after cos_task_enqueue() placed @p by the wake rules (same rq
 * lock, t->lock just dropped); lock-free.
 */
u64 cos_task_slice(struct task_struct *p, s32 slot)
{
	struct cos_slot *t = cos_slot_at(slot);

	return t && READ_ONCE(t->p) == p ? READ_ONCE(t->slice) : 0;
}

/**
 * cos_dispatch_failed() - the shim could not start @p on @cpu: back to waiting
 * @p: the task; @slot: its slot; @cpu: where it was shot
 *
 * Posts SHOOT_FAILED (arg = @cpu).  Should the lord have lost control meanwhile (the fallback
 * skips a shot task already taken), the task goes to the fair policy instead.
 * Context: ops.dispatch (@cpu's rq lock held, IRQs off); takes t->lock.
 */
void cos_dispatch_failed(struct task_struct *p, s32 slot, s32 cpu)
{
	struct cos_enclave *e;
	COS_TASK_LOCK(t, p, slot);

	cos_taken_clear(cpu);
	if (t->state != COS_TASK_QUEUED)
		return;
	e = cos_task_enclave(t);
	if (!cos_task_wait(t, e))
		cos_fallback_add(t);
	cos_post(e, COS_MSG_SHOOT_FAILED, cpu, t, cpu);
}

/**
 * cos_task_running() - @p starts running on @cpu
 * @p: the task; @slot: its slot; @cpu: the CPU
 *
 * Context: ops.running (@cpu's rq lock held, IRQs off); takes t->lock, and the custody lock
 * of the CPU that enqueued @p if it was in custody, and @cpu's latch lock.
 */
void cos_task_running(struct task_struct *p, s32 slot, s32 cpu)
{
	struct cos_enclave *e;
	bool shot, placed;
	COS_TASK_LOCK(t, p, slot);

	e = cos_task_enclave(t);
	shot = t->state == COS_TASK_QUEUED;
	placed = t->placed;
	cos_cpu_running(cpu, t);
	if (placed)
		cos_cpu_placed_running(cpu, p);
	/* Woken without ops.enqueue (exiting, migration-disabled): say it is runnable. */
	if (t->state == COS_TASK_BLOCKED)
		cos_post(e, COS_MSG_TASK_RUNNABLE, cpu, t, COS_RUNNABLE_BYPASS);
	cos_task_set_state(t, COS_TASK_RUNNING);
	t->cpu = cpu;
	t->run_start = p->se.sum_exec_runtime;
	if (shot && e && (e->flags & COS_LORD_F_RUNNING_MSGS))
		cos_post(e, COS_MSG_TASK_RUNNING, cpu, t, cpu);
	else
		cos_status_sync(t);
}

/**
 * cos_task_stopping() - @p stops running (@runnable: it will be enqueued again)
 * @p: the task; @slot: its slot; @runnable: preempted/yielded rather than blocked
 *
 * Accounts its runtime and notes why it stopped, for the message of its next enqueue.
 * Context: ops.stopping (@p's rq lock held, IRQs off); takes t->lock only.
 */
void cos_task_stopping(struct task_struct *p, s32 slot, bool runnable)
{
	u64 used;
	COS_TASK_LOCK(t, p, slot);

	used = p->se.sum_exec_runtime - t->run_start;
	t->runtime += used;
	cos_cpu_stopped(task_cpu(p), t);
	if (runnable && t->next_msg != COS_MSG_TASK_YIELD) {
		/*
		 * Why it stopped.  Every preemption zeroes the slice (a shoot's kick, and sched_ext
		 * for a task queued with SCX_ENQ_PREEMPT), so a zero slice proves nothing: compare
		 * the CPU time it used with the slice the lord gave it (0 = no limit).
		 */
		t->next_msg = COS_MSG_TASK_PREEMPTED;
		t->displaced = false;
		/* the slice first: a latched task is taken then too */
		if (t->slice && used >= t->slice) {
			t->next_arg = COS_PREEMPT_BY_SLICE;
		} else if (cos_cpu_shot(task_cpu(p), t)) {
			t->next_arg = COS_PREEMPT_BY_COS;
			t->displaced = cos_cpu_displacing(task_cpu(p));
		} else {
			t->next_arg = COS_PREEMPT_BY_OTHER;
		}
		/* a resume (cos_latch_resume()) runs out the rest */
		t->slice_left = t->slice && used < t->slice ? t->slice - used : 0;
	}
}

/*
 * @p's enclave if @p runs there as a task of the lord's (a handoff's case), else NULL, and its
 * slot's generation in *@gen; with @yield, its next enqueue posts TASK_YIELD.  Takes t->lock.
 */
static struct cos_enclave *cos_task_running_in(struct task_struct *p, s32 slot, bool yield,
					       u32 *gen)
{
	COS_TASK_LOCK(t, p, slot, NULL);

	if (yield)
		t->next_msg = COS_MSG_TASK_YIELD;
	*gen = t->gen;
	return t->state == COS_TASK_RUNNING ? cos_task_enclave(t) : NULL;
}

/*
 * @p, running on this CPU as a task of @e's lord, leaves it (@rule: COS_WAKE_HANDOFF for a
 * yield, COS_WAKE_HANDOFF_BLOCK for a block): the CPU goes to the task @p woke last here, if
 * the rule is on and that task still waits (cos_task_handoff()).  Returns the pid of the task
 * handed the CPU, or 0.  Caller holds no t->lock.
 */
static pid_t cos_woken_handoff(struct task_struct *p, struct cos_enclave *e, u32 rule)
{
	struct cos_woken *w = this_cpu_ptr(&cos_woken);
	struct cos_woken woken = *w;

	if (!e || woken.waker != p->pid)
		return 0;
	w->waker = 0;		/* one handoff per wake-up */
	return cos_task_handoff(e, task_cpu(p), &woken, rule);
}

/**
 * cos_task_quiescent() - @p is no longer runnable; posts BLOCKED if it went to sleep
 * @p: the task; @slot: its slot; @sleep: SCX_DEQ_SLEEP was set
 *
 * With the lord's wake rule COS_WAKE_HANDOFF_BLOCK, a task that blocks on an enclave CPU (it
 * is current there: only the running task goes to sleep) hands that CPU to the last task it
 * woke there if that task still waits for the lord; this CPU's ops.dispatch, which the
 * schedule() under way calls next, takes it.  Its TASK_PLACED goes before @p's BLOCKED.
 * Context: ops.quiescent (@p's rq lock held, IRQs off, RCU-sched); takes @p's t->lock (for a
 * handoff: it, then after dropping it the woken task's, then @p's again).
 */
void cos_task_quiescent(struct task_struct *p, s32 slot, bool sleep)
{
	struct cos_enclave *e;
	u32 gen = 0;

	if (!sleep)
		return;
	if (p == current && this_cpu_read(cos_woken.waker) == p->pid)
		cos_woken_handoff(p, cos_task_running_in(p, slot, false, &gen),
				  COS_WAKE_HANDOFF_BLOCK);

	COS_TASK_LOCK(t, p, slot);
	cos_task_set_state(t, COS_TASK_BLOCKED);
	t->next_msg = 0;
	/*
	 * Its CPU may fall idle: the lord decides something only if a task waits for it.  One that
	 * starts waiting later posts a message of its own, which wakes the lord.
	 */
	e = cos_task_enclave(t);
	if (cos_tasks_waiting(e) > 0) {
		cos_post(e, COS_MSG_TASK_BLOCKED, task_cpu(p), t, 0);
	} else {
		cos_post_lazy(e, COS_MSG_TASK_BLOCKED, task_cpu(p), t, 0);
		cos_lazy_recheck(e);
	}
}

/**
 * cos_task_yield() - @p called sched_yield(): its next enqueue posts TASK_YIELD
 * @p: the task, running on this CPU; @slot: its slot
 *
 * With the lord's wake rule COS_WAKE_HANDOFF, @p's CPU goes to the last task @p woke on it if
 * that task still waits for the lord (cos_task_handoff()).  The shim then ends @p's slice, so
 * that this CPU's ops.dispatch takes that task; else @p runs on, as before its yield.  The CPU
 * is then owed back: the note names @p as the task the new one woke last, so that if it yields
 * or blocks before it wakes another, the CPU goes back to @p, if @p still waits for the lord.
 * That keeps a pair that passes a lock and a signal back and forth (a condition variable's
 * mutex) on one CPU with no round trip: the releaser yields to the waiter, which waits on the
 * condition variable next.
 * Context: ops.yield (@p's rq lock held, IRQs off, RCU-sched); takes @p's t->lock, then (after
 * dropping it) the woken task's t->lock.
 * Return: whether @p's CPU was handed over.
 */
bool cos_task_yield(struct task_struct *p, s32 slot)
{
	u32 gen = 0;
	struct cos_enclave *e = cos_task_running_in(p, slot, true, &gen);
	pid_t to = cos_woken_handoff(p, e, COS_WAKE_HANDOFF);

	if (!to)
		return false;
	*this_cpu_ptr(&cos_woken) = (struct cos_woken){ .waker = to, .slot = slot, .gen = gen };
	return true;
}

/**
 * cos_task_affinity() - @p's allowed CPUs changed: posts TASK_AFFINITY
 * @p: the task; @slot: its slot
 * Context: ops.set_cpumask (@p's rq lock held, IRQs off); takes t->lock.
 */
void cos_task_affinity(struct task_struct *p, s32 slot)
{
	COS_TASK_LOCK(t, p, slot);

	/* to the lord that knows it: its next enqueue moves it if its enclave changed */
	cos_post(cos_task_enclave(t), COS_MSG_TASK_AFFINITY, task_cpu(p), t, 0);
}

/**
 * cos_task_shoot() - the lord shoots slot @slot (generation @gen) to @cpu with @slice
 * @e: the lord's enclave
 * @slot, @gen: the task, as the lord names it
 * @cpu: the target CPU (checked by the caller against the enclave)
 * @slice: its slice (0: no limit)
 * @consumed: the last message the lord has handled (a task with a later one is BEHIND)
 * @flags: COS_SHOOT_F_REPLACE: a task shot to @cpu earlier and not taken by its dispatch yet
 *	waits again and this one takes its place (else the shoot is refused, BUSY);
 *	COS_SHOOT_F_LATCH: queue it on @cpu's latch instead (not both: the caller checks)
 * @kick: set to whether the caller must kick @cpu (after it has dropped its locks)
 *
 * A WAITING task becomes QUEUED (keeping its place in custody) and waits in @cpu's pending
 * slot, or its latch, for ops.dispatch there.  A latched task may be shot again: it leaves its
 * latch only once the new place is its (so a refused shoot leaves it where it was).
 * Context: COS_IOC_SHOOT, @e->lock held (the lord's activity cannot change meanwhile), IRQs
 * off; takes the task's t->lock (and with @replace the replaced task's, nested; with a latch,
 * the latch locks, one at a time).
 * Return: a COS_SHOOT_* status.
 */
u32 cos_task_shoot(struct cos_enclave *e, u32 slot, u32 gen, s32 cpu, u64 slice, u64 consumed,
		   u32 flags, bool *kick)
{
	struct cos_slot *t;
	u64 old_slice;

	lockdep_assert_held(&e->lock);
	*kick = false;
	if (slot >= cos_max_tasks)
		return COS_SHOOT_BAD_SLOT;
	t = &cos_slots[slot];
	guard(raw_spinlock)(&t->lock);
	if (t->state == COS_TASK_FREE)
		return COS_SHOOT_BAD_SLOT;
	if (t->home_id && t->home_id != e->id)	/* one of none waits for no lord: below */
		return COS_SHOOT_OTHER_ENCLAVE;
	if (t->gen != gen)
		return COS_SHOOT_BAD_GEN;
	if (t->state != COS_TASK_WAITING && t->latch_cpu < 0)
		return COS_SHOOT_NOT_WAITING;
	if (!cpumask_test_cpu(cpu, t->p->cpus_ptr))
		return COS_SHOOT_AFFINITY;
	if (t->last_seq > consumed)
		return COS_SHOOT_BEHIND;
	if ((flags & COS_SHOOT_F_LATCH) && !cos_latch_room(e, t, cpu))
		return COS_SHOOT_LATCH_FULL;
	if (t->state == COS_TASK_WAITING &&
	    cos_task_throttled(e, t, cos_group_throttled(t->cgid)))
		return COS_SHOOT_THROTTLED;	/* TASK_THROTTLED tells the lord which group */
	old_slice = t->slice;
	t->slice = slice;	/* read under t->lock by cos_dispatch_take() */
	if (!cos_pending_put(e, t, cpu, flags, kick)) {
		t->slice = old_slice;	/* still latched where it was, if it was */
		return COS_SHOOT_BUSY;
	}
	cos_task_set_state(t, COS_TASK_QUEUED);
	t->cpu = cpu;
	WRITE_ONCE(t->urgent, !!(flags & COS_SHOOT_F_URGENT));
	cos_status_sync(t);
	return COS_SHOOT_OK;
}

/**
 * cos_slot_pid() - the thread id of the task in @slot, if its generation is @gen
 * @e: the enclave whose shoot names it
 * @slot: a slot number from @e's lord (checked here); @gen: its generation
 *
 * For the cos_shoot tracepoint only.
 * Context: e->lock held, IRQs off; takes the slot's t->lock (as cos_task_shoot()).
 * Return: the pid, or 0 (no such slot, free, or another generation).
 */
pid_t cos_slot_pid(struct cos_enclave *e, u32 slot, u32 gen)
{
	struct cos_slot *t;

	lockdep_assert_held(&e->lock);
	if (slot >= cos_max_tasks)
		return 0;
	t = &cos_slots[slot];
	guard(raw_spinlock)(&t->lock);
	return t->state != COS_TASK_FREE && t->gen == gen && t->p ? t->p->pid : 0;
}

/**
 * cos_fallback_all() - hand every task in custody to the fair policy
 * @e: the enclave, whose lord has just lost control (e->active cleared)
 *
 * WAITING tasks and shot tasks still pending go to the fallback list, for the shim to take
 * (cos_fallback_take()); a shot task ops.dispatch already took is in a local DSQ and runs as
 * it is.  Walks @e's custody lists, not the table (another enclave's tasks are not on them):
 * each task is popped under its list's lock, then handled under its own t->lock (t->lock comes
 * before a custody lock, cos_internal.h, so never both here).  A task an enqueue adds meanwhile
 * is popped too, or saw e->active cleared (cos_task_wait()).
 * Context: @e->lock held, IRQs off (the stall timer, the lord's exit, unregistration).
 * Return: the number of tasks handed over.
 */
u32 cos_fallback_all(struct cos_enclave *e)
{
	u32 n = 0;
	int cpu;

	lockdep_assert_held(&e->lock);
	WARN_ON_ONCE(READ_ONCE(e->active));
	for_each_possible_cpu(cpu) {
		struct cos_slot *t;

		while ((t = cos_custody_pop(e, cpu))) {
			guard(raw_spinlock)(&t->lock);
			if (t->state == COS_TASK_WAITING || cos_pending_forget(t)) {
				cos_fallback_add(t);
				n++;
			}
		}
	}
	return n;
}

/* Fill @info from @t.  Caller holds t->lock; @t is in use (t->p valid, see struct cos_slot). */
static void cos_task_info_fill(struct cos_task_info *info, struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	*info = (struct cos_task_info){
		.slot = cos_slot_nr(t),
		.gen = t->gen,
		.state = t->state,
		.cpu = t->cpu,
		.pid = t->p->pid,
		.tgid = t->p->tgid,
		.last_msg = t->last_msg,
		.enclave_id = cos_task_enclave(t) ? t->home_id : 0,
		.last_seq = t->last_seq,
		.last_ts = t->last_ts,
		.runtime_ns = t->runtime,
	};
	/* comm may change under us (prctl): a torn name is harmless, the NUL is ours */
	memcpy(info->comm, t->p->comm, sizeof(info->comm) - 1);
	info->comm[sizeof(info->comm) - 1] = '\0';
}

/**
 * cos_ioc_get_tasks() - COS_IOC_GET_TASKS: copy out a batch of in-use task slots.
 * @uarg: user pointer to struct cos_tasks_args
 *
 * Context: process context, may sleep and fault.  Allocates a bounded bounce buffer
 * (COS_TASKS_BATCH_MAX entries) and fills it taking each slot's t->lock (IRQs off) in turn,
 * so the walk never holds off scheduling for long: each entry is consistent, the batch is not
 * one snapshot (nor were successive batches).  Copies it out after.
 * Return: 0, -EINVAL (size, flags, start, capacity), -EFAULT, -ENOMEM.
 */
long cos_ioc_get_tasks(void __user *uarg)
{
	long usize = cos_user_size(uarg, COS_TASKS_ARGS_SIZE_VER0);
	struct cos_tasks_args args;
	struct cos_task_info *buf;
	u32 i, n = 0, cap;
	int ret;

	if (usize < 0)
		return usize;
	ret = cos_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.start > cos_max_tasks || !args.capacity)
		return -EINVAL;
	cap = min_t(u32, args.capacity, COS_TASKS_BATCH_MAX);
	buf = kvmalloc_array(cap, sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	for (i = args.start; i < cos_max_tasks && n < cap; i++) {
		struct cos_slot *t = &cos_slots[i];

		scoped_guard(raw_spinlock_irqsave, &t->lock)
			if (t->state != COS_TASK_FREE)
				cos_task_info_fill(&buf[n++], t);
		if (!(i % COS_GET_TASKS_RESCHED))
			cond_resched();
	}

	args.next = i;
	args.count = n;
	if (copy_to_user(u64_to_user_ptr(args.tasks), buf, array_size(n, sizeof(*buf))))
		ret = -EFAULT;
	else
		ret = cos_copy_out(uarg, usize, &args, sizeof(args));
	kvfree(buf);
	return ret;
}

/* Set up the task table, the per-CPU state and the custody lists.  Context: module init. */
int cos_tasks_init(void)
{
	int ret;

	ret = cos_slots_init();
	if (ret)
		return ret;
	ret = cos_cpus_init();
	if (ret) {
		cos_slots_exit();
		return ret;
	}
	return 0;
}

/* Free what cos_tasks_init() set up.  Context: module init (failure) and exit. */
void cos_tasks_exit(void)
{
	cos_cpus_exit();
	cos_slots_exit();
}
