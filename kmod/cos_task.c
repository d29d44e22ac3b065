// SPDX-License-Identifier: GPL-2.0
/*
 * cos_task.c — the core state every other file builds on: the task table (one slot per COS
 * task, mirrored read-only to the lord as the status table) and its state machine, the
 * custody lists (tasks waiting for the lord), the fallback list, the per-CPU shoot slots
 * (pending: shot, not yet taken by ops.dispatch; taken: dispatched, not yet running), the
 * per-CPU latches (tasks queued behind a CPU's COS task) and the kick that makes a CPU
 * reschedule, and the message ring's producer side.  It calls only
 * cos_uaccess.c (see the file order in cos.h).  The shim's kfuncs (cos_kfuncs.c) are adapters
 * onto the verbs here: cos_task_attach/detach/enqueue/dequeue/running/stopping/quiescent/
 * yield/affinity, cos_dispatch_take/failed, cos_fallback_take; the lord's side uses
 * cos_task_shoot, cos_fallback_all and cos_custody_oldest.
 *
 * No path walks the table (except COS_IOC_GET_TASKS, which lists it): free slots come from a
 * FIFO of slot numbers (a freed slot is reused last, so a late message about it meets a new
 * generation rarely); the tasks in custody (WAITING, or QUEUED on a CPU) are on the custody
 * list of the CPU that enqueued them, in the order they started waiting, so the oldest of each
 * is at its head (the starvation check looks at every head); the tasks handed to the fair
 * policy and not yet taken by the shim are on the fallback list.
 *
 * Locking: no lock here is machine-wide on the scheduling path (see cos.h for the whole order).
 *   - t->lock (per task) protects the task's fields and its status entry; every verb about a
 *     task takes it, with the task's rq lock (or pi_lock) already held by sched_ext, so it is
 *     uncontended except against the lord's shoot of that task and the fallback.
 *   - each CPU's custody lock protects that CPU's custody list and the t->custody_cpu of the
 *     tasks on it; taken inside t->lock (the fallback pops a task with it alone, then takes
 *     t->lock: never both at once the other way round).
 *   - cos_fallback_lock protects the fallback list and t->fallback; inside t->lock.
 *   - cos_slots_lock protects the free-slot FIFO and cos_counters.tasks (attach, detach only).
 *   - the per-CPU pending and taken slots are single words changed with cmpxchg/xchg under
 *     the task's t->lock (pending[cpu] == t only while t is QUEUED there), read lock-free.
 *   - the ring is multi-producer and lock-free: cos_post() reserves a sequence number with a
 *     cmpxchg on e->head (see there).
 * Memory ordering with the lord:
 *   - ring: all fields of a message are written, then smp_store_release(&msg->seq); the lord
 *     reads seq with an acquire load, then the fields.  A slot is reserved for rewriting only
 *     after the lord published (release) a ctl->consumed at or past its old message; we read
 *     consumed with an acquire load.  Reserved but not yet published slots make the lord wait
 *     at that seq (its next seq does not match yet): producers hold IRQs off while they write.
 *   - status: a seqcount per entry, written under t->lock; the writer makes it odd, smp_wmb(),
 *     writes the fields, smp_wmb(), makes it even.  The lord retries reads that saw an odd or
 *     changed count.
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/atomic.h>
#include <linux/cleanup.h>
#include <linux/cred.h>
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cos_internal.h"

unsigned int cos_max_tasks = 4096;
module_param_named(max_tasks, cos_max_tasks, uint, 0444);
MODULE_PARM_DESC(max_tasks, "COS tasks tracked at once (status table entries, 64..1048576)");

static unsigned int cos_max_tasks_per_user;
module_param_named(max_tasks_per_user, cos_max_tasks_per_user, uint, 0444);
MODULE_PARM_DESC(max_tasks_per_user,
		 "COS tasks one user other than root may have at once (0: max_tasks / 4)");

DEFINE_RAW_SPINLOCK(cos_lock);
struct cos_enclave __rcu *cos_enclave;
struct cos_counters cos_counters;
struct cos_slot *cos_slots;
struct cos_task_status *cos_status;
/* Tasks with ->fallback set; written under cos_fallback_lock, read lock-free first. */
u32 cos_fallback_pending;

#define COS_GET_TASKS_RESCHED	256	/* slots COS_IOC_GET_TASKS reads between cond_resched() */

/* One CPU's custody list: WAITING and QUEUED tasks that CPU enqueued, oldest waiting first. */
struct cos_custody {
	raw_spinlock_t lock;
	struct list_head tasks;
};
static DEFINE_PER_CPU(struct cos_custody, cos_custody);

static DEFINE_RAW_SPINLOCK(cos_fallback_lock);
static LIST_HEAD(cos_fallback_list);	/* ->fallback tasks, in the order they were handed over */

static DEFINE_RAW_SPINLOCK(cos_slots_lock);
static u32 *cos_free_slots;		/* FIFO of free slot numbers: [cos_max_tasks] */
static u32 cos_free_head, cos_free_count;

/*
 * Slots per user, so that no user can lock the others out of cos: a user other than root may
 * hold at most cos_user_limit slots, and users other than root together leave the last
 * cos_root_reserve free slots to root.  Counted in an open-addressing table keyed by uid
 * (linear probing; an entry, once used, is never emptied, so a probe never stops early; one
 * whose count is 0 is reused only when the table has no empty entry left), under
 * cos_slots_lock.  At most cos_max_tasks users can hold slots at once: the table has room.
 */
struct cos_uid_slots {
	u32 uid;			/* COS_UID_NONE: never used */
	u32 tasks;
};
#define COS_UID_NONE	U32_MAX
static struct cos_uid_slots *cos_uids;
static u32 cos_uids_size;		/* a power of two >= cos_max_tasks */
static u32 cos_user_limit, cos_root_reserve;

/* Messages posted, per CPU (summed by GET_INFO): no shared counter on the post path. */
static DEFINE_PER_CPU(u64, cos_messages);
/* Messages dropped by full rings, every enclave's (only while one overflows). */
static atomic64_t cos_dropped;

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
/*
 * Tasks in COS_TASK_WAITING, every enclave's: the wake rules apply only while it is 0, so that a
 * waking task never passes one the lord has not placed yet.  Changed under the task's t->lock
 * (cos_task_set_state(), cos_task_wait()), read lock-free.
 */
static atomic_t cos_nr_waiting = ATOMIC_INIT(0);
static DEFINE_PER_CPU(call_single_data_t, cos_kick_csd);
static DEFINE_PER_CPU(call_single_data_t, cos_latch_kick_csd);
static DEFINE_PER_CPU(call_single_data_t, cos_idle_kick_csd);
static DEFINE_PER_CPU(call_single_data_t, cos_throttle_kick_csd);

/*
 * A CPU's latch (COS_SHOOT_F_LATCH, see uapi): the tasks the lord queued behind the COS task
 * running there, oldest first.  That CPU's ops.dispatch takes the first when nothing is pending
 * there (cos_latch_take()): no message to the lord, no IPI.
 *
 * @armed says that this CPU will call ops.dispatch again without a kick: a COS task started
 * here (ops.running sets it) and no dispatch has found the latch empty since (that dispatch
 * clears it, under @lock).  A latch shoot kicks the CPU only when it is not armed (idle, or a
 * fair task runs there), and that kick never preempts a COS task (cos_latch_kick_fn()).  Why
 * that is enough: a dispatch that clears @armed holds @lock, so a shoot that saw @armed set
 * added its task before that dispatch looked, and the dispatch takes it; a COS task that
 * started later sets @armed again, and its own stop calls ops.dispatch.
 * Only this CPU writes @armed, so its lock-free read in cos_pending_none() is exact; @nr is
 * read lock-free there too, after the kick's IPI for a shoot that kicked (as for cos_pending).
 */
struct cos_latch {
	raw_spinlock_t lock;
	u32 nr;
	bool armed;
	struct cos_slot *q[COS_SHOOT_LATCH_MAX + 1];	/* + a task a kthread preempted */
};
static DEFINE_PER_CPU_ALIGNED(struct cos_latch, cos_latch);

static bool cos_cpu_valid(s32 cpu)
{
	return cpu >= 0 && cpu < nr_cpu_ids;
}

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
 * (before cos_curr was set: same CPU, so this read is exact) and dispatches when it stops; a
 * dispatch may have cleared @armed meanwhile and kept it running (sched_ext may keep prev when
 * ops.dispatch finds nothing), and preempting it would let the latched task pass it.
 */
static void cos_latch_kick_fn(void *info)
{
	if (!READ_ONCE(cos_curr[smp_processor_id()]))
		cos_kick_fn(info);
}

/*
 * The kick of a bandwidth group's refill (cos_group.c): an idle CPU reschedules, so that its
 * ops.dispatch takes the released groups' parked tasks; a busy CPU is left alone (its next
 * dispatch does it).
 */
static void cos_idle_kick_fn(void *info)
{
	if (is_idle_task(current))
		cos_kick_fn(info);
}

/* A per-CPU kthread is never stopped for its group's budget (as the shim's tick, see F). */
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

int cos_tasks_init(void)
{
	u32 i;

	cos_slots = vzalloc(array_size(cos_max_tasks, sizeof(*cos_slots)));
	cos_status = vmalloc_user(PAGE_ALIGN(array_size(cos_max_tasks, sizeof(*cos_status))));
	cos_free_slots = vmalloc(array_size(cos_max_tasks, sizeof(*cos_free_slots)));
	cos_pending = kcalloc(nr_cpu_ids, sizeof(*cos_pending), GFP_KERNEL);
	cos_taken = kcalloc(nr_cpu_ids, sizeof(*cos_taken), GFP_KERNEL);
	cos_curr = kcalloc(nr_cpu_ids, sizeof(*cos_curr), GFP_KERNEL);
	cos_uids_size = roundup_pow_of_two(cos_max_tasks);
	cos_uids = vmalloc(array_size(cos_uids_size, sizeof(*cos_uids)));
	if (!cos_slots || !cos_status || !cos_free_slots || !cos_pending || !cos_taken || !cos_curr ||
	    !cos_uids) {
		cos_tasks_exit();
		return -ENOMEM;
	}
	for_each_possible_cpu(i) {
		struct cos_custody *c = per_cpu_ptr(&cos_custody, i);

		INIT_CSD(per_cpu_ptr(&cos_kick_csd, i), cos_kick_fn, NULL);
		INIT_CSD(per_cpu_ptr(&cos_latch_kick_csd, i), cos_latch_kick_fn, NULL);
		INIT_CSD(per_cpu_ptr(&cos_idle_kick_csd, i), cos_idle_kick_fn, NULL);
		INIT_CSD(per_cpu_ptr(&cos_throttle_kick_csd, i), cos_throttle_kick_fn, NULL);
		raw_spin_lock_init(&c->lock);
		INIT_LIST_HEAD(&c->tasks);
		raw_spin_lock_init(&per_cpu_ptr(&cos_latch, i)->lock);
	}
	for (i = 0; i < cos_max_tasks; i++) {
		raw_spin_lock_init(&cos_slots[i].lock);
		INIT_LIST_HEAD(&cos_slots[i].custody_node);
		INIT_LIST_HEAD(&cos_slots[i].fallback_node);
		cos_slots[i].custody_cpu = -1;
		cos_slots[i].latch_cpu = -1;
		cos_free_slots[i] = i;
	}
	cos_free_head = 0;
	cos_free_count = cos_max_tasks;
	for (i = 0; i < cos_uids_size; i++)
		cos_uids[i] = (struct cos_uid_slots){ .uid = COS_UID_NONE };
	cos_user_limit = min(cos_max_tasks_per_user ?: cos_max_tasks / 4, cos_max_tasks);
	cos_root_reserve = cos_max_tasks / 8;
	return 0;
}

void cos_tasks_exit(void)
{
	vfree(cos_slots);
	vfree(cos_status);
	vfree(cos_free_slots);
	vfree(cos_uids);
	kfree(cos_pending);
	kfree(cos_taken);
	kfree(cos_curr);
	cos_uids = NULL;
	cos_slots = NULL;
	cos_status = NULL;
	cos_free_slots = NULL;
	cos_pending = NULL;
	cos_taken = NULL;
	cos_curr = NULL;
}

/*
 * Fault injection for the tests of the paths a race reaches (debugfs cos/hold_dispatch, root
 * only; cos_main.c): while cos_hold_cpu names a CPU, ops.dispatch there leaves its pending
 * shoot alone, so a test can hotplug that CPU, change the task's affinity or stall the lord
 * while a shoot is pending.  -1: none.  Written by cos_hold_dispatch(), read lock-free.
 */
static int cos_hold_cpu = -1;

/**
 * cos_hold_dispatch() - hold (@cpu >= 0) or release (-1) the pending shoot of one CPU
 * @cpu: the CPU to hold, or -1
 *
 * Releasing kicks the CPU that was held, so that its ops.dispatch takes the shoot at once.
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
		cos_kick_cpus(cpumask_of(old));
	return 0;
}

/* The CPU held by cos_hold_dispatch(), or -1.  Context: any; lock-free. */
int cos_held_cpu(void)
{
	return READ_ONCE(cos_hold_cpu);
}

static void cos_kick_with(const struct cpumask *cpus, call_single_data_t __percpu *csd)
{
	int cpu;

	for_each_cpu(cpu, cpus) {
		if (!cpu_online(cpu))
			continue;
		/* -EBUSY: a kick to that CPU is still in flight, which is as good. */
		smp_call_function_single_async(cpu, per_cpu_ptr(csd, cpu));
	}
}

/* Kick @cpus (preempt what runs there).  Any context; under no lock of cos.ko. */
void cos_kick_cpus(const struct cpumask *cpus)
{
	cos_kick_with(cpus, &cos_kick_csd);
}

/* Kick @cpus for a latch: as cos_kick_cpus(), but a running COS task is left alone. */
void cos_kick_latch_cpus(const struct cpumask *cpus)
{
	cos_kick_with(cpus, &cos_latch_kick_csd);
}

/* Slot @slot's entry, or NULL for a slot number out of range.  Context: any. */
static struct cos_slot *cos_slot_at(s32 slot)
{
	return slot >= 0 && slot < cos_max_tasks ? &cos_slots[slot] : NULL;
}

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

/* Take @t off the latch it is on, if any; returns whether it was on one.  Under t->lock. */
static bool cos_latch_remove(struct cos_slot *t)
{
	struct cos_latch *l;
	u32 i;

	lockdep_assert_held(&t->lock);
	if (t->latch_cpu < 0)
		return false;
	l = per_cpu_ptr(&cos_latch, t->latch_cpu);
	guard(raw_spinlock)(&l->lock);
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
 * the caller (cos_latch_room()).  Caller holds cos_lock (latches grow only under it) and t->lock.
 */
static void cos_latch_add(struct cos_slot *t, s32 cpu, bool *kick)
{
	struct cos_latch *l = per_cpu_ptr(&cos_latch, cpu);

	lockdep_assert_held(&cos_lock);
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
 * @t, just preempted on @cpu by a task of a higher tier (a kthread, COS_PREEMPT_BY_OTHER), goes
 * back to the head of @cpu's latch if that latch holds tasks: it resumes there before them,
 * as it would have without a latch (the lord would have placed it first again).  One slot
 * beyond COS_SHOOT_LATCH_MAX is for it: it leaves the latch before it can be preempted again.
 * Returns whether it did (@t is QUEUED on @cpu then).  Caller holds t->lock and @cpu's rq lock.
 */
static bool cos_latch_resume(struct cos_slot *t, s32 cpu)
{
	struct cos_latch *l;

	lockdep_assert_held(&t->lock);
	if (!cos_cpu_valid(cpu) || !cos_latch_nr(cpu) || t->latch_cpu >= 0)
		return false;
	l = per_cpu_ptr(&cos_latch, cpu);
	guard(raw_spinlock)(&l->lock);
	if (!l->nr || l->nr > COS_SHOOT_LATCH_MAX)
		return false;
	cos_latch_insert(l, cpu, t, 0);
	return true;
}

/*
 * Has @cpu's latch room for @t?  Under cos_lock, the answer holds until it is dropped: only a
 * shoot adds to a latch.  @t's own place counts as free if it is latched there already.
 */
static bool cos_latch_room(const struct cos_slot *t, s32 cpu)
{
	lockdep_assert_held(&cos_lock);
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
static bool cos_pending_forget(struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (t->state != COS_TASK_QUEUED)
		return false;
	if (cos_cpu_valid(t->cpu) && cmpxchg(&cos_pending[t->cpu], t, NULL) == t)
		return true;
	return cos_latch_remove(t);
}

/*
 * @t leaves custody while queued: cancel its pending or latched shoot (SHOOT_STALE).  Caller
 * holds t->lock.
 */
static void cos_pending_clear(struct cos_slot *t)
{
	if (cos_pending_forget(t))
		cos_post(cos_enclave_now(), COS_MSG_SHOOT_STALE, t->cpu, t, t->cpu);
}

/**
 * cos_pending_none() - nothing is shot to @cpu nor taken there: ops.dispatch's lock-free path
 * @cpu: the dispatching CPU
 *
 * Pairs with the shoot's store: a shoot stores cos_pending[@cpu] and kicks @cpu only after
 * its commit (cos_shoot_commit(): cos_kick_cpus() after the unlock; a local shoot,
 * cos_lord_yield(), runs on @cpu itself).  So a dispatch that reads NULL here just before the
 * store is followed by the kick's schedule on @cpu, whose dispatch sees the store: the IPI's
 * queueing (llist_add, a full barrier) orders it.  cos_taken[@cpu] is set only by @cpu's own
 * dispatch, so a NULL read there is exact; while it is set, the slow path runs and resets it
 * as before (a taken task that never started must not stay behind).  A stale non-NULL read of
 * either only costs the slow path.  The latch (struct cos_latch) is read the same way: @armed
 * exactly (only @cpu writes it), @nr after the kick of a shoot that did not find it armed.
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

/* @t started, or could not: @cpu's taken shoot is over.  Context: ops on @cpu, rq lock held. */
static void cos_taken_clear(s32 cpu)
{
	if (cos_cpu_valid(cpu))
		WRITE_ONCE(cos_taken[cpu], NULL);
}

/* @t's slot is freed: it may not stay behind as its CPU's taken or running task.  Under t->lock. */
static void cos_taken_forget(struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (cos_cpu_valid(t->cpu)) {
		cmpxchg(&cos_taken[t->cpu], t, NULL);
		cmpxchg(&cos_curr[t->cpu], t, NULL);
	}
}

/* Leave the custody list @t is on, if any.  Caller holds t->lock. */
static void cos_custody_leave(struct cos_slot *t)
{
	s32 cpu = READ_ONCE(t->custody_cpu);
	struct cos_custody *c;

	lockdep_assert_held(&t->lock);
	if (cpu < 0)
		return;
	c = per_cpu_ptr(&cos_custody, cpu);
	guard(raw_spinlock)(&c->lock);
	if (t->custody_cpu == cpu) {	/* else the fallback popped it meanwhile */
		list_del_init(&t->custody_node);
		WRITE_ONCE(t->custody_cpu, -1);
	}
}

/* @t no longer needs the shim to move it to the fair policy.  Caller holds t->lock. */
static void cos_fallback_clear(struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (!READ_ONCE(t->fallback))
		return;
	guard(raw_spinlock)(&cos_fallback_lock);
	if (t->fallback) {	/* else cos_fallback_take() took it meanwhile */
		WRITE_ONCE(t->fallback, false);
		list_del_init(&t->fallback_node);
		WRITE_ONCE(cos_fallback_pending, cos_fallback_pending - 1);
	}
}

/*
 * The one way a task's state changes, except to WAITING (cos_task_wait()).  QUEUED (a WAITING
 * task shot to a CPU) keeps its place in custody; any other state leaves it.  Any change ends
 * a fallback: the task is no longer where the shim would have to take it from.  The caller
 * publishes the change (cos_status_sync() or a message).  Caller holds t->lock.
 */
static void cos_task_set_state(struct cos_slot *t, u32 state)
{
	lockdep_assert_held(&t->lock);
	cos_fallback_clear(t);
	if (state != COS_TASK_QUEUED)
		cos_custody_leave(t);
	if (t->state == COS_TASK_WAITING)
		atomic_dec(&cos_nr_waiting);
	t->state = state;
}

/*
 * @t starts waiting for @e's lord: at the tail of this CPU's custody list, if the lord has
 * control.  Reading e->active under the custody lock pairs with cos_fallback_all(), which
 * clears it before it takes each custody lock: a task added after that lock was taken sees
 * it cleared, one added before is found.  Returns whether @t is in custody now (else it is
 * on no list and the caller gives it another state).  Caller holds t->lock.
 */
static bool cos_task_wait(struct cos_slot *t, struct cos_enclave *e)
{
	s32 cpu = smp_processor_id();
	struct cos_custody *c = per_cpu_ptr(&cos_custody, cpu);

	lockdep_assert_held(&t->lock);
	if (!e)
		return false;
	cos_fallback_clear(t);
	cos_custody_leave(t);
	guard(raw_spinlock)(&c->lock);
	if (!READ_ONCE(e->active))
		return false;
	/* the clock under the lock: the list stays in waiting_since order (the starvation check) */
	t->waiting_since = ktime_get_ns();
	list_add_tail(&t->custody_node, &c->tasks);
	WRITE_ONCE(t->custody_cpu, cpu);
	if (t->state != COS_TASK_WAITING)
		atomic_inc(&cos_nr_waiting);
	t->state = COS_TASK_WAITING;
	return true;
}

/* Hand @t to the fair policy: FAIR, at the tail of the fallback list.  Under t->lock. */
static void cos_fallback_add(struct cos_slot *t)
{
	cos_task_set_state(t, COS_TASK_FAIR);
	scoped_guard(raw_spinlock, &cos_fallback_lock) {
		WRITE_ONCE(t->fallback, true);
		list_add_tail(&t->fallback_node, &cos_fallback_list);
		WRITE_ONCE(cos_fallback_pending, cos_fallback_pending + 1);
	}
	cos_status_sync(t);
}

/* @uid's entry in cos_uids: found, or made.  Caller holds cos_slots_lock. */
static struct cos_uid_slots *cos_uid_entry(u32 uid)
{
	u32 i, h = hash_32(uid, ilog2(cos_uids_size));
	struct cos_uid_slots *idle = NULL;

	lockdep_assert_held(&cos_slots_lock);
	for (i = 0; i < cos_uids_size; i++) {
		struct cos_uid_slots *u = &cos_uids[(h + i) & (cos_uids_size - 1)];

		if (u->uid == uid)
			return u;
		if (u->uid == COS_UID_NONE) {
			u->uid = uid;
			return u;
		}
		if (!u->tasks && !idle)
			idle = u;
	}
	/* full of users that held slots once: reuse one that holds none now (there is one) */
	if (idle)
		idle->uid = uid;
	return idle;
}

/*
 * Take the free slot freed longest ago for a task of user @uid.  Return: the slot; -ENOSPC
 * when the table is full (for a user other than root: all but root's reserve), -EDQUOT when
 * @uid holds cos_user_limit slots already.
 */
static struct cos_slot *cos_task_alloc(u32 uid)
{
	struct cos_uid_slots *u = NULL;
	struct cos_slot *t;
	u32 slot;

	guard(raw_spinlock_irqsave)(&cos_slots_lock);
	if (cos_free_count <= (uid ? cos_root_reserve : 0))
		return ERR_PTR(-ENOSPC);
	if (uid) {
		u = cos_uid_entry(uid);
		if (WARN_ON_ONCE(!u) || u->tasks >= cos_user_limit)
			return ERR_PTR(-EDQUOT);
		u->tasks++;
	}
	slot = cos_free_slots[cos_free_head];
	cos_free_head = (cos_free_head + 1) % cos_max_tasks;
	cos_free_count--;
	cos_counters.tasks++;
	t = &cos_slots[slot];
	t->uid = uid;
	return t;
}

/* Give @t's slot back (its state is FREE already). */
static void cos_task_release(struct cos_slot *t)
{
	guard(raw_spinlock_irqsave)(&cos_slots_lock);
	WARN_ON_ONCE(cos_free_count >= cos_max_tasks);
	cos_free_slots[(cos_free_head + cos_free_count) % cos_max_tasks] = cos_slot_nr(t);
	cos_free_count++;
	cos_counters.tasks--;
	if (t->uid)
		cos_uid_entry(t->uid)->tasks--;
}

/**
 * cos_task_attach() - give COS task @p a slot: the TASK_NEW message, state BLOCKED
 * @p: a task whose policy is SCHED_EXT (a trusted pointer from the shim)
 * @runnable: whether it is runnable now (TASK_NEW's arg)
 *
 * Context: the op that first sees @p as a COS task (@p's rq lock or pi_lock held, IRQs off);
 * takes cos_slots_lock (not when the table is full: a task refused then asks again at each
 * event), then the slot's t->lock.
 * Return: the slot; -ENOSPC when the table is full (for a user other than root, when only
 * root's reserve is left); -EDQUOT when @p's user holds max_tasks_per_user slots already.
 */
s32 cos_task_attach(struct task_struct *p, bool runnable)
{
	struct cos_slot *t;

	if (!READ_ONCE(cos_free_count))
		return -ENOSPC;
	/* every kuid maps in init_user_ns: never (uid_t)-1, which marks a free uid entry */
	t = cos_task_alloc(from_kuid(&init_user_ns, task_uid(p)));
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
	t->last_msg = COS_MSG_NONE;
	t->last_ts = 0;
	cos_post(cos_enclave_now(), COS_MSG_TASK_NEW, t->cpu, t, runnable);
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
		cos_post(cos_enclave_now(), COS_MSG_TASK_DEAD, smp_processor_id(), t, 0);
		WRITE_ONCE(t->p, NULL);
		cos_status_sync(t);
	}
	cos_task_release(t);
}

/* The wake rules of @e's lord that apply now (struct cos_ctl.wake_rules), or 0.  Lock-free. */
static u32 cos_wake_rules(struct cos_enclave *e)
{
	if (!e || !READ_ONCE(e->active) || atomic_read(&cos_nr_waiting))
		return 0;
	return READ_ONCE(e->ctl->wake_rules) & (COS_WAKE_PREV | COS_WAKE_IDLE);
}

/*
 * May the wake rules start @p on @cpu?  A CPU of @e's enclave (never the lord's), online for
 * it, allowed for @p, and free: no COS task runs, is shot, latched or taken there.  A lock-free
 * snapshot: a shoot that races with the placement finds the CPU busy (COS_SHOOT_BUSY) or
 * preempts the placed task (PREEMPTED, BY_COS), and the lord's books follow its messages
 * either way.
 */
static bool cos_wake_cpu_free(struct cos_enclave *e, const struct task_struct *p, s32 cpu)
{
	return cos_cpu_valid(cpu) && cpumask_test_cpu(cpu, e->cpus) &&
	       !cpumask_test_cpu(cpu, e->offline) && cpumask_test_cpu(cpu, p->cpus_ptr) &&
	       !READ_ONCE(cos_pending[cpu]) && !READ_ONCE(cos_taken[cpu]) &&
	       !READ_ONCE(cos_curr[cpu]) && !cos_latch_nr(cpu);
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

/**
 * cos_task_select_cpu() - where the wake rules would start waking COS task @p, or -1
 * @p: the task; @prev_cpu: the CPU it last ran on
 * @idle: the CPUs that run nothing now (sched_ext's idle mask)
 *
 * COS_WAKE_PREV: @prev_cpu if it is free.  COS_WAKE_IDLE: a free CPU of the enclave in @p's
 * allowed set, one that runs nothing first (@prev_cpu before the others), then one that runs a
 * fair task (@prev_cpu first again): starting there preempts that task, an IPI and a context
 * switch that an idle CPU does not cost (with one fair hog on @prev_cpu and two idle CPUs, the
 * wake-up's p50 was 2× the default scheduler's, which picks the idle one).  -1 when no rule
 * applies (a task waits for the lord, or the lord set none) or no CPU is free.  Nothing is
 * claimed: the enqueue on the chosen CPU checks again (cos_task_enqueue()), and a task that
 * lost the race waits for the lord; @idle is a snapshot that may be stale by then, which costs
 * only the preemption it was to spare.
 * Context: ops.select_cpu (@p's pi_lock held, IRQs off); lock-free.
 */
s32 cos_task_select_cpu(struct task_struct *p, s32 prev_cpu, const struct cpumask *idle)
{
	struct cos_enclave *e = cos_enclave_now();
	u32 rules = cos_wake_rules(e);
	s32 cpu;

	if (!rules)
		return -1;
	if (!(rules & COS_WAKE_IDLE))
		return cos_wake_cpu_free(e, p, prev_cpu) ? prev_cpu : -1;
	cpu = cos_wake_pick(e, p, prev_cpu, idle);
	return cpu >= 0 ? cpu : cos_wake_pick(e, p, prev_cpu, p->cpus_ptr);
}

/*
 * The wake rules start @t (waking) on its CPU, if they apply and that CPU is free: it becomes
 * the CPU's taken task (the one started there and not yet running, as a shot task taken by
 * ops.dispatch), QUEUED with the lord's wake slice, and the caller puts it at the head of the
 * local queue.  The claim is a cmpxchg on cos_taken[cpu], which only this CPU's ops write
 * (this rq lock) and a detach clears: two tasks woken onto one free CPU at once cannot both
 * get it.  Caller holds t->lock and the rq lock of task_cpu(@p).
 */
static bool cos_wake_place(struct cos_enclave *e, struct cos_slot *t, struct task_struct *p)
{
	s32 cpu = task_cpu(p);

	lockdep_assert_held(&t->lock);
	if (!cos_wake_rules(e) || !cos_wake_cpu_free(e, p, cpu) ||
	    cmpxchg(&cos_taken[cpu], NULL, t))
		return false;
	cos_task_set_state(t, COS_TASK_QUEUED);
	t->slice = READ_ONCE(e->ctl->wake_slice_ns);
	return true;
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
	if (!gid || !cos_group_hold_throttled(gid, &first))
		return false;
	if (first)
		cos_post(e, COS_MSG_GROUP_THROTTLED, t->cpu, NULL, gid);
	t->throttled_gid = gid;
	cos_post(e, COS_MSG_TASK_THROTTLED, t->cpu, t, gid);
	cos_group_unhold();
	return true;
}

/*
 * Bandwidth group @id has budget again: tell the lord.  Context: cos_group.c's release, under
 * its cos_bw.lock with IRQs off (the refill hrtimer, or a cpu.max write); lock-free here.
 */
static void cos_task_group_unthrottled(u64 id)
{
	cos_post(cos_enclave_now(), COS_MSG_GROUP_UNTHROTTLED, raw_smp_processor_id(), NULL, id);
}

/* Every idle online CPU reschedules.  Context: any; under no lock of cos.ko. */
static void cos_task_kick_idle(void)
{
	cos_kick_with(cpu_online_mask, &cos_idle_kick_csd);
}

/*
 * A budget timer fired here (cos_group.c): the task it was armed for is still running (its
 * stop cancels the timer), and its budget is spent: its slice ends, and its stop charges it.
 * Context: hard IRQ on this CPU.
 */
static void cos_task_kick_spent(void)
{
	if (!cos_budget_exempt(current))
		cos_kick_fn(NULL);
}

/* @cpu stops its task if that task's group is throttled.  Context: any; no lock of cos.ko. */
static void cos_task_kick_throttled(int cpu)
{
	cos_kick_with(cpumask_of(cpu), &cos_throttle_kick_csd);
}

/* What cos_group.c needs from this file (struct cos_group_hooks, kmod/cos.h). */
const struct cos_group_hooks cos_task_group_hooks = {
	.unthrottled = cos_task_group_unthrottled,
	.kick_idle = cos_task_kick_idle,
	.kick_spent = cos_task_kick_spent,
	.kick_throttled = cos_task_kick_throttled,
};

/**
 * cos_task_enqueue() - runnable COS task @p: keep it in custody for the lord, or not
 * @p: the task; @slot: its slot
 * @wake: it woke up (SCX_ENQ_WAKEUP)
 * @cgid: its cgroup (bandwidth group)
 *
 * Posts RUNNABLE (or PREEMPTED/YIELD when it was running) and, when a lord has control and @p
 * may run on one of its CPUs, puts it in custody (WAITING).  A waking task the lord's wake
 * rules start on its CPU (cos_wake_place()) is posted TASK_PLACED instead.  One a kthread
 * preempted goes back to the head of its CPU's latch if tasks are latched there
 * (cos_latch_resume(): QUEUED, posted PREEMPTED with COS_PREEMPT_F_LATCHED).  One whose
 * bandwidth group (or an ancestor) is throttled is neither placed nor resumed: it waits in
 * custody, posted TASK_THROTTLED (cos_task_throttled()).
 * Context: ops.enqueue (@p's rq lock held, IRQs off); takes t->lock, then this CPU's custody
 * lock (and cos_group.c's cos_bw.lock for a throttled one).
 * Return: COS_ENQ_CUSTODY, COS_ENQ_PLACED or COS_ENQ_FAIR.
 */
enum cos_enq cos_task_enqueue(struct task_struct *p, s32 slot, bool wake, u64 cgid)
{
	struct cos_enclave *e;
	enum cos_enq ret = COS_ENQ_FAIR;
	u32 msg;
	u64 gid;
	COS_TASK_LOCK(t, p, slot, COS_ENQ_FAIR);

	e = cos_enclave_now();
	msg = t->next_msg ?: COS_MSG_TASK_RUNNABLE;
	t->next_msg = 0;
	t->cpu = task_cpu(p);
	t->cgid = cgid;
	t->throttled_gid = 0;
	gid = cos_group_throttled(cgid);
	if (!gid && wake && msg == COS_MSG_TASK_RUNNABLE && cos_wake_place(e, t, p)) {
		cos_post(e, COS_MSG_TASK_PLACED, t->cpu, t, t->cpu);
		return COS_ENQ_PLACED;
	}
	if (e && cpumask_intersects(p->cpus_ptr, e->cpus) && cos_task_wait(t, e)) {
		ret = COS_ENQ_CUSTODY;
		if (cos_task_throttled(e, t, gid))
			return ret;
		if (msg == COS_MSG_TASK_PREEMPTED && t->next_arg == COS_PREEMPT_BY_OTHER &&
		    cos_latch_resume(t, t->cpu)) {
			cos_task_set_state(t, COS_TASK_QUEUED);
			t->next_arg |= COS_PREEMPT_F_LATCHED;
		}
	} else {
		cos_task_set_state(t, COS_TASK_FAIR);
	}
	cos_post(e, msg, t->cpu, t, msg == COS_MSG_TASK_PREEMPTED ? t->next_arg : 0);
	return ret;
}

/**
 * cos_task_dequeue() - @p leaves the shim's custody
 * @p: the task; @slot: its slot
 *
 * Two cases.  A shot task that ops.dispatch already took (QUEUED, no longer pending nor
 * latched) is on its
 * way to run: since Linux 7.1 sched_ext calls ops.dequeue when a task's custody ends in a local
 * DSQ, and that is no departure; it stays QUEUED until ops.running.  (Should the insert be
 * dropped because the task was dequeued for a property change meanwhile, its re-enqueue posts
 * RUNNABLE.)  Otherwise the task leaves without running (property change, exit): a pending
 * or latched shoot of it is cancelled (SHOOT_STALE) and it is re-enqueued later if still
 * runnable.
 * Context: ops.dequeue (@p's rq lock held, IRQs off); takes t->lock.
 */
void cos_task_dequeue(struct task_struct *p, s32 slot)
{
	COS_TASK_LOCK(t, p, slot);

	if (t->state == COS_TASK_QUEUED && READ_ONCE(cos_pending[t->cpu]) != t &&
	    t->latch_cpu < 0) {
		/* taken by ops.dispatch: custody ends in the local DSQ */
	} else if (t->state == COS_TASK_WAITING || t->state == COS_TASK_QUEUED || t->fallback) {
		/* leaves without running; a fallback one the shim did not take yet, too */
		cos_pending_clear(t);
		cos_task_set_state(t, COS_TASK_BLOCKED);
		cos_status_sync(t);
	}
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
	struct cos_slot *t = cos_latch_first_locked(cpu);
	struct task_struct *p;

	if (!t) {
		guard(raw_spinlock)(&l->lock);
		if (!l->nr)
			l->armed = false;
		return NULL;	/* a shoot that came meanwhile kicks or finds it armed */
	}
	cos_latch_remove(t);
	WRITE_ONCE(cos_taken[cpu], t);
	*slice = t->slice;
	p = cos_task_acquire(t->p);
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
			return cos_task_acquire(t->p);
		}
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
	e = cos_enclave_now();
	if (!cos_task_wait(t, e))
		cos_fallback_add(t);
	cos_post(e, COS_MSG_SHOOT_FAILED, cpu, t, cpu);
}

/**
 * cos_fallback_take() - the pid of a task that now belongs to the fair policy, or 0
 *
 * After a stall or the lord's death the shim drains these from ops.dispatch into its fair
 * queue, the one handed over longest ago first.
 * Context: ops.dispatch (IRQs off); lock-free when none waits, else takes cos_fallback_lock
 * (a task on the list is not freed under it: its detach takes it off first).
 */
s32 cos_fallback_take(void)
{
	struct cos_slot *t;

	if (!READ_ONCE(cos_fallback_pending))
		return 0;
	guard(raw_spinlock)(&cos_fallback_lock);
	t = list_first_entry_or_null(&cos_fallback_list, struct cos_slot, fallback_node);
	if (!t)
		return 0;
	WRITE_ONCE(t->fallback, false);
	list_del_init(&t->fallback_node);
	WRITE_ONCE(cos_fallback_pending, cos_fallback_pending - 1);
	return t->p->pid;
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
	bool shot;
	COS_TASK_LOCK(t, p, slot);

	e = cos_enclave_now();
	shot = t->state == COS_TASK_QUEUED;
	cos_latch_arm(cpu);
	/* before the taken word clears (a reader that sees neither, possible off x86, costs one
	 * preemption: see cos_wake_cpu_free()) */
	WRITE_ONCE(cos_curr[cpu], t);
	cos_taken_clear(cpu);
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
	if (cos_cpu_valid(task_cpu(p)))
		cmpxchg(&cos_curr[task_cpu(p)], t, NULL);
	if (runnable && t->next_msg != COS_MSG_TASK_YIELD) {
		/*
		 * Why it stopped.  Every preemption zeroes the slice (a shoot's kick, and sched_ext
		 * for a task queued with SCX_ENQ_PREEMPT), so a zero slice proves nothing: compare
		 * the CPU time it used with the slice the lord gave it (0 = no limit).
		 */
		t->next_msg = COS_MSG_TASK_PREEMPTED;
		if (t->slice && used >= t->slice)	/* first: a latched task is taken then too */
			t->next_arg = COS_PREEMPT_BY_SLICE;
		else if (cos_cpu_shot(task_cpu(p), t))
			t->next_arg = COS_PREEMPT_BY_COS;
		else
			t->next_arg = COS_PREEMPT_BY_OTHER;
	}
}

/**
 * cos_task_quiescent() - @p is no longer runnable; posts BLOCKED if it went to sleep
 * @p: the task; @slot: its slot; @sleep: SCX_DEQ_SLEEP was set
 * Context: ops.quiescent (@p's rq lock held, IRQs off); takes t->lock.
 */
void cos_task_quiescent(struct task_struct *p, s32 slot, bool sleep)
{
	COS_TASK_LOCK(t, p, slot);

	if (!sleep)
		return;
	cos_task_set_state(t, COS_TASK_BLOCKED);
	t->next_msg = 0;
	cos_post(cos_enclave_now(), COS_MSG_TASK_BLOCKED, task_cpu(p), t, 0);
}

/**
 * cos_task_yield() - @p called sched_yield(): its next enqueue posts TASK_YIELD
 * @p: the task; @slot: its slot
 * Context: ops.yield (@p's rq lock held, IRQs off); takes t->lock only.
 */
void cos_task_yield(struct task_struct *p, s32 slot)
{
	COS_TASK_LOCK(t, p, slot);

	t->next_msg = COS_MSG_TASK_YIELD;
}

/**
 * cos_task_affinity() - @p's allowed CPUs changed: posts TASK_AFFINITY
 * @p: the task; @slot: its slot
 * Context: ops.set_cpumask (@p's rq lock held, IRQs off); takes t->lock.
 */
void cos_task_affinity(struct task_struct *p, s32 slot)
{
	COS_TASK_LOCK(t, p, slot);

	cos_post(cos_enclave_now(), COS_MSG_TASK_AFFINITY, task_cpu(p), t, 0);
}

/*
 * @t, shot to @cpu, was taken out of that CPU's pending slot before its dispatch took it: it
 * waits for the lord again (or goes to the fair policy if the lord has lost control), and the
 * lord learns it from SHOOT_STALE (arg = @cpu).  Caller holds t->lock.
 */
static void cos_pending_return(struct cos_enclave *e, struct cos_slot *t, s32 cpu)
{
	lockdep_assert_held(&t->lock);
	if (!cos_task_wait(t, e))
		cos_fallback_add(t);
	cos_post(e, COS_MSG_SHOOT_STALE, cpu, t, cpu);
}

/*
 * A shoot with COS_SHOOT_F_REPLACE found @old in @cpu's pending slot: put @t there instead and
 * @old back to waiting (SHOOT_STALE, arg = @cpu), or to the fair policy if the lord has lost
 * control.  Should @cpu's dispatch have taken @old meanwhile, @t goes into the slot it left.
 * Returns whether @t is in the slot now.
 *
 * The only place that holds two task locks: @t's (the caller's) and then @old's, nested.
 * Every other path holds one task lock at a time, and shoots are serialised by cos_lock, so
 * no other CPU can wait for @t's lock while holding another task's.
 * Context: COS_IOC_SHOOT, cos_lock and @t->lock held, IRQs off; takes @old->lock.
 */
static bool cos_pending_replace(s32 cpu, struct cos_slot *old, struct cos_slot *t)
{
	struct cos_enclave *e = cos_enclave_now();

	lockdep_assert_held(&cos_lock);
	lockdep_assert_held(&t->lock);
	raw_spin_lock_nested(&old->lock, SINGLE_DEPTH_NESTING);
	if (cmpxchg(&cos_pending[cpu], old, t) != old) {
		raw_spin_unlock(&old->lock);
		/* taken (or cancelled) meanwhile: only a shoot fills the slot, and that is us */
		return !cmpxchg(&cos_pending[cpu], NULL, t);
	}
	cos_pending_return(e, old, cpu);
	raw_spin_unlock(&old->lock);
	return true;
}

/**
 * cos_task_shoot() - the lord shoots slot @slot (generation @gen) to @cpu with @slice
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
 * Context: COS_IOC_SHOOT, cos_lock held (the lord's activity cannot change meanwhile), IRQs
 * off; takes the task's t->lock (and with @replace the replaced task's, nested; with a latch,
 * the latch locks, one at a time).
 * Return: a COS_SHOOT_* status.
 */
u32 cos_task_shoot(u32 slot, u32 gen, s32 cpu, u64 slice, u64 consumed, u32 flags, bool *kick)
{
	struct cos_slot *t, *old;
	u64 old_slice;

	lockdep_assert_held(&cos_lock);
	*kick = false;
	if (slot >= cos_max_tasks)
		return COS_SHOOT_BAD_SLOT;
	t = &cos_slots[slot];
	guard(raw_spinlock)(&t->lock);
	if (t->state == COS_TASK_FREE)
		return COS_SHOOT_BAD_SLOT;
	if (t->gen != gen)
		return COS_SHOOT_BAD_GEN;
	if (t->state != COS_TASK_WAITING && t->latch_cpu < 0)
		return COS_SHOOT_NOT_WAITING;
	if (!cpumask_test_cpu(cpu, t->p->cpus_ptr))
		return COS_SHOOT_AFFINITY;
	if (t->last_seq > consumed)
		return COS_SHOOT_BEHIND;
	if ((flags & COS_SHOOT_F_LATCH) && !cos_latch_room(t, cpu))
		return COS_SHOOT_LATCH_FULL;
	if (t->state == COS_TASK_WAITING &&
	    cos_task_throttled(cos_enclave_now(), t, cos_group_throttled(t->cgid)))
		return COS_SHOOT_THROTTLED;	/* TASK_THROTTLED tells the lord which group */
	t->throttled_gid = 0;
	old_slice = t->slice;
	t->slice = slice;	/* read under t->lock by cos_dispatch_take() */
	if (flags & COS_SHOOT_F_LATCH) {
		cos_latch_add(t, cpu, kick);
	} else {
		old = cmpxchg(&cos_pending[cpu], NULL, t);	/* before the kick: cos_pending_none() */
		if (old && (!(flags & COS_SHOOT_F_REPLACE) || !cos_pending_replace(cpu, old, t))) {
			t->slice = old_slice;	/* still latched where it was, if it was */
			return COS_SHOOT_BUSY;
		}
		cos_latch_remove(t);
		*kick = true;
	}
	cos_task_set_state(t, COS_TASK_QUEUED);
	t->cpu = cpu;
	cos_status_sync(t);
	return COS_SHOOT_OK;
}

/**
 * cos_pending_cancel() - @cpu went offline: the tasks shot or latched there and not yet taken
 * wait again
 * @cpu: the CPU
 *
 * They are back in custody (SHOOT_STALE, arg = @cpu, tells the lord to place them elsewhere),
 * or with the fair policy if the lord has lost control meanwhile.  A task already taken there
 * is in that CPU's local DSQ, which sched_ext empties when the CPU goes.
 * Context: cos_lock held (no shoot can target @cpu meanwhile), IRQs off; takes each task's
 * t->lock in turn, and @cpu's latch lock.
 */
void cos_pending_cancel(s32 cpu)
{
	struct cos_enclave *e = cos_enclave_now();
	struct cos_slot *t;

	lockdep_assert_held(&cos_lock);
	if (!cos_cpu_valid(cpu))
		return;
	t = READ_ONCE(cos_pending[cpu]);
	if (t) {
		guard(raw_spinlock)(&t->lock);
		if (cmpxchg(&cos_pending[cpu], t, NULL) == t)
			cos_pending_return(e, t, cpu);
	}
	while ((t = cos_latch_first_locked(cpu))) {
		cos_latch_remove(t);
		cos_pending_return(e, t, cpu);
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

/**
 * cos_custody_oldest() - the task in custody that has waited longest
 * @oldest: filled with its pid, state, CPU and waiting_since
 *
 * The head of each CPU's custody list is the oldest of that list.
 * Context: any, IRQs off (the stall timer); takes each CPU's custody lock in turn.
 * Return: whether any task is in custody.
 */
bool cos_custody_oldest(struct cos_waiting *oldest)
{
	bool found = false;
	u64 since;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct cos_custody *c = per_cpu_ptr(&cos_custody, cpu);
		struct cos_slot *t;

		guard(raw_spinlock)(&c->lock);
		t = list_first_entry_or_null(&c->tasks, struct cos_slot, custody_node);
		if (!t)
			continue;
		/* on a custody list, a task is in use: its detach takes it off first */
		since = t->throttled_gid ? cos_group_ready_since(t->throttled_gid, t->waiting_since)
					 : t->waiting_since;
		if (!found || (s64)(since - oldest->since) < 0) {
			found = true;
			*oldest = (struct cos_waiting){
				.since = since,
				.pid = t->p->pid,
				.state = READ_ONCE(t->state),
				.cpu = READ_ONCE(t->cpu),
			};
		}
	}
	return found;
}

/**
 * cos_fallback_all() - hand every task in custody to the fair policy
 * @e: the enclave, whose lord has just lost control (e->active cleared)
 *
 * WAITING tasks and shot tasks still pending go to the fallback list, for the shim to take
 * (cos_fallback_take()); a shot task ops.dispatch already took is in a local DSQ and runs as
 * it is.  Walks the custody lists, not the table: each task is popped under its list's lock,
 * then handled under its own t->lock (the order of cos.h: t->lock before a custody lock, so
 * never both here).  A task an enqueue adds meanwhile is popped too, or saw e->active cleared
 * (cos_task_wait()).
 * Context: cos_lock held, IRQs off (the stall timer, the lord's exit, unregistration).
 * Return: the number of tasks handed over.
 */
u32 cos_fallback_all(struct cos_enclave *e)
{
	u32 n = 0;
	int cpu;

	lockdep_assert_held(&cos_lock);
	WARN_ON_ONCE(READ_ONCE(e->active));
	for_each_possible_cpu(cpu) {
		struct cos_custody *c = per_cpu_ptr(&cos_custody, cpu);
		struct cos_slot *t;

		for (;;) {
			scoped_guard(raw_spinlock, &c->lock) {
				t = list_first_entry_or_null(&c->tasks, struct cos_slot,
							     custody_node);
				if (t) {
					list_del_init(&t->custody_node);
					WRITE_ONCE(t->custody_cpu, -1);
				}
			}
			if (!t)
				break;
			guard(raw_spinlock)(&t->lock);
			if (t->state == COS_TASK_WAITING || cos_pending_forget(t)) {
				cos_fallback_add(t);
				n++;
			}
		}
	}
	return n;
}

/* Publish @t into its status entry.  Caller holds t->lock. */
void cos_status_sync(struct cos_slot *t)
{
	struct cos_task_status *s = &cos_status[cos_slot_nr(t)];
	u32 sc = READ_ONCE(s->seqcount);

	lockdep_assert_held(&t->lock);
	WRITE_ONCE(s->seqcount, sc + 1);
	smp_wmb();	/* count odd before fields change; pairs with the lord's acquire loads */
	WRITE_ONCE(s->gen, t->gen);
	WRITE_ONCE(s->state, t->state);
	WRITE_ONCE(s->cpu, t->cpu);
	WRITE_ONCE(s->pid, t->p ? t->p->pid : 0);
	WRITE_ONCE(s->last_seq, t->last_seq);
	WRITE_ONCE(s->runtime_ns, t->runtime);
	smp_wmb();	/* fields before the count turns even */
	WRITE_ONCE(s->seqcount, sc + 2);
}

/* Write message @seq (reserved by the caller) and publish it; returns its timestamp. */
static u64 cos_ring_write(struct cos_enclave *e, u64 seq, u32 type, s32 cpu,
			  struct cos_slot *t, u64 arg)
{
	struct cos_msg *m = &e->ring[(seq - 1) & (e->ring_entries - 1)];
	u64 ts = ktime_get_ns(), old;

	m->ts = ts;
	m->type = type;
	m->cpu = cpu;
	m->slot = t ? cos_slot_nr(t) : 0;
	m->gen = t ? t->gen : 0;
	m->pid = t && t->p ? t->p->pid : 0;
	m->__pad = 0;
	m->arg = arg;
	smp_store_release(&m->seq, seq);	/* pairs with the lord's acquire load of seq */
	this_cpu_inc(cos_messages);
	/* ctl->produced only grows (producers finish out of order); the lord may write it too */
	old = READ_ONCE(e->ctl->produced);
	while (old < seq && !try_cmpxchg64(&e->ctl->produced, &old, seq))
		;
	return ts;
}

/* The sequence number of the last message reserved in @e's ring.  Context: any. */
u64 cos_ring_produced(struct cos_enclave *e)
{
	return atomic64_read(&e->head) & ~COS_RING_OVF;
}

/* Count one dropped message in @e (ctl->dropped only grows). */
static void cos_ring_dropped(struct cos_enclave *e)
{
	u64 n = atomic64_inc_return(&e->dropped), old = READ_ONCE(e->ctl->dropped);

	atomic64_inc(&e->ovf_dropped);
	atomic64_inc(&cos_dropped);
	while (old < n && !try_cmpxchg64(&e->ctl->dropped, &old, n))
		;
}

/*
 * Reserve the next sequence number of @e's ring for a message about @t (NULL: none), or
 * decide to drop it.  e->head is the last reserved seq, with COS_RING_OVF set while the ring
 * is in overflow: full once, it drops every message until the lord has consumed everything,
 * then one OVERFLOW message (arg: messages lost) tells it to resync from the status table,
 * which by then reflects everything dropped.  Ending it that late matters: drops go on until
 * the lord has caught up, and a resync done earlier would miss them.  The producer whose
 * cmpxchg ends the overflow writes the OVERFLOW message at the seq after the last one.
 *
 * A drop must be in the status table before the lord can read that OVERFLOW: the dropper
 * syncs @t's status (last_seq = the OVERFLOW's seq, so shoots of @t are refused as BEHIND
 * until the lord has consumed it) and only then checks, with a cmpxchg of e->head to itself,
 * that the overflow has not ended meanwhile; if it has, it tries again, now to post.
 * Return: the seq reserved for the message, or 0 when it is dropped.
 */
static u64 cos_ring_reserve(struct cos_enclave *e, s32 cpu, struct cos_slot *t)
{
	u64 head = atomic64_read(&e->head);

	for (;;) {
		u64 seq = head & ~COS_RING_OVF;
		/* pairs with the lord's release; a lord that claims too much only hurts itself */
		u64 consumed = min(smp_load_acquire(&e->ctl->consumed), seq);

		if (!(head & COS_RING_OVF)) {
			if (seq - consumed < e->ring_entries - 1) {	/* room, one slot kept free */
				if (atomic64_try_cmpxchg(&e->head, &head, seq + 1))
					return seq + 1;
				continue;
			}
			if (!atomic64_try_cmpxchg(&e->head, &head, head | COS_RING_OVF))
				continue;
			head |= COS_RING_OVF;
		} else if (consumed >= seq) {
			/* the lord has consumed everything: end the overflow, then post */
			if (!atomic64_try_cmpxchg(&e->head, &head, seq + 2))
				continue;
			cos_ring_write(e, seq + 1, COS_MSG_OVERFLOW, cpu, NULL,
				       atomic64_xchg(&e->ovf_dropped, 0));
			return seq + 2;
		}
		if (t) {
			t->last_seq = seq + 1;	/* the OVERFLOW that ends this */
			cos_status_sync(t);
		}
		if (atomic64_try_cmpxchg(&e->head, &head, head)) {
			cos_ring_dropped(e);
			return 0;
		}
	}
}

/**
 * cos_ring_poke() - end @e's overflow if the lord has consumed everything
 * @e: the enclave
 *
 * The stall timer calls it, in case no message is posted for a while after the lord caught up.
 * Context: any, IRQs off; lock-free.
 */
void cos_ring_poke(struct cos_enclave *e)
{
	u64 head = atomic64_read(&e->head), seq = head & ~COS_RING_OVF;

	if ((head & COS_RING_OVF) && smp_load_acquire(&e->ctl->consumed) >= seq &&
	    atomic64_try_cmpxchg(&e->head, &head, seq + 1))
		cos_ring_write(e, seq + 1, COS_MSG_OVERFLOW, smp_processor_id(), NULL,
			       atomic64_xchg(&e->ovf_dropped, 0));
}

/**
 * cos_post() - post a message about @t (NULL for enclave-wide ones) and update its status
 * @e: the enclave (NULL, or unregistered: only the status is updated)
 * @type: COS_MSG_*; @cpu: where it happened; @t: the task; @arg: the message's arg
 *
 * Never overwrites an unconsumed message: when the ring is full the message is dropped
 * (counted in ctl->dropped; the status table stays exact), see cos_ring_reserve().
 * Context: any, IRQs off; @t's t->lock held; lock-free otherwise (queues an irq_work to wake
 * a lord sleeping in COS_IOC_WAIT).
 */
void cos_post(struct cos_enclave *e, u32 type, s32 cpu, struct cos_slot *t, u64 arg)
{
	u64 seq, ts;

	if (t)
		lockdep_assert_held(&t->lock);
	if (!e || !READ_ONCE(e->registered)) {
		if (t)
			cos_status_sync(t);
		return;
	}
	seq = cos_ring_reserve(e, cpu, t);
	if (seq) {
		ts = cos_ring_write(e, seq, type, cpu, t, arg);
		if (t) {
			t->last_seq = seq;
			t->last_msg = type;
			t->last_ts = ts;
			cos_status_sync(t);
		}
	}
	/*
	 * The successful cmpxchg of e->head in cos_ring_reserve() is fully ordered: the new head
	 * is visible before we read the waiters' count; pairs with cos_ioc_wait()'s
	 * smp_mb__after_atomic() between its count and its read of the head.
	 */
	if (atomic_read(&e->waiters))
		irq_work_queue(&e->wake_work);
}

/* Messages posted since the module loaded (COS_IOC_GET_INFO). */
u64 cos_messages_total(void)
{
	u64 n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += per_cpu(cos_messages, cpu);
	return n;
}

/* Messages dropped by full rings since the module loaded (COS_IOC_GET_INFO). */
u64 cos_dropped_total(void)
{
	return atomic64_read(&cos_dropped);
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
