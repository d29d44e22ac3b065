// SPDX-License-Identifier: GPL-2.0
/*
 * cos_custody.c — where COS tasks wait: the custody lists (tasks waiting for the lord) and
 * the fallback list (tasks handed to the fair policy, not yet taken by the shim), and the
 * task state changes that move a task on and off them.
 *
 * A task in custody (WAITING, or QUEUED on a CPU) is on its enclave's custody list of the CPU
 * that enqueued it, in the order it started waiting, so the oldest of each list is at its head:
 * the starvation check looks at every head of its enclave (and past heads that wait for a
 * throttled group).  Each list's custody lock protects it and the t->custody_cpu and
 * t->custody_enclave of the tasks on it.  It is taken inside t->lock, except by the fallback,
 * which pops a task with it alone and then takes t->lock.  cos_fallback_lock protects the
 * fallback list and t->fallback; inside t->lock, or alone by ops.dispatch.
 *
 * See docs/design.md, "Custody and the fallback list".
 */
#include <linux/atomic.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/percpu.h>

#include "cos_internal.h"

/* Tasks with ->fallback set; written under cos_fallback_lock, read lock-free first. */
u32 cos_fallback_pending;

static DEFINE_RAW_SPINLOCK(cos_fallback_lock);
static LIST_HEAD(cos_fallback_list);	/* ->fallback tasks, in the order they were handed over */

/*
 * Allocate and set up @e's custody lists, one per CPU.  Context: process context (its
 * registration), may sleep.  Return: 0 or -ENOMEM.
 */
int cos_custody_alloc(struct cos_enclave *e)
{
	int cpu;

	e->custody = alloc_percpu(struct cos_custody);
	if (!e->custody)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct cos_custody *c = per_cpu_ptr(e->custody, cpu);

		raw_spin_lock_init(&c->lock);
		INIT_LIST_HEAD(&c->tasks);
	}
	return 0;
}

/* Free @e's custody lists, all empty (cos_fallback_all() emptied them).  Context: any. */
void cos_custody_free(struct cos_enclave *e)
{
	free_percpu(e->custody);
}

/*
 * Tasks waiting for @e's lord now that it could place (0 with no enclave): not those of @e
 * parked for a throttled group (cos_group.c, "Parked").  Lock-free: two counters read apart,
 * so a moment's snapshot.
 */
int cos_tasks_waiting(struct cos_enclave *e)
{
	if (!e)
		return 0;
	return atomic_read(&e->nr_waiting) - cos_groups_parked_now(e->idx);
}

/*
 * @t no longer waits for the throttled group TASK_THROTTLED named (it was placed, leaves
 * custody, or is told again).  Caller holds t->lock; takes cos_bw.lock if it was parked.
 */
void cos_task_unpark(struct cos_slot *t)
{
	lockdep_assert_held(&t->lock);
	if (t->throttled_gid) {
		cos_group_unpark(t->throttled_gid, t->throttled_idx);
		WRITE_ONCE(t->throttled_gid, 0);
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
	/*
	 * custody_enclave is stable while custody_cpu >= 0 is: only cos_task_wait() (under
	 * t->lock, which we hold) sets both, and the fallback's pop clears custody_cpu alone.
	 */
	c = per_cpu_ptr(t->custody_enclave->custody, cpu);
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
void cos_task_set_state(struct cos_slot *t, u32 state)
{
	lockdep_assert_held(&t->lock);
	cos_fallback_clear(t);
	t->placed = false;
	if (state != COS_TASK_WAITING)
		cos_task_unpark(t);
	if (state != COS_TASK_QUEUED)
		cos_custody_leave(t);
	/*
	 * A WAITING task is counted in the enclave whose custody it entered; custody_enclave
	 * still names it after the fallback's pop.  cos_fallback_all() takes every WAITING
	 * task off before that enclave is freed.
	 */
	if (t->state == COS_TASK_WAITING)
		atomic_dec(&t->custody_enclave->nr_waiting);
	t->state = state;
}

/*
 * @t starts waiting for @e's lord: at the tail of this CPU's custody list, if the lord has
 * control.  Reading e->active under the custody lock pairs with cos_fallback_all(), which
 * clears it before it takes each custody lock: a task added after that lock was taken sees
 * it cleared, one added before is found.  Returns whether @t is in custody now (else it is
 * on no list and the caller gives it another state).  Caller holds t->lock.
 */
bool cos_task_wait(struct cos_slot *t, struct cos_enclave *e)
{
	s32 cpu = smp_processor_id();
	struct cos_custody *c;

	lockdep_assert_held(&t->lock);
	if (!e)
		return false;
	cos_fallback_clear(t);
	t->placed = false;
	cos_custody_leave(t);
	c = per_cpu_ptr(e->custody, cpu);
	guard(raw_spinlock)(&c->lock);
	if (!READ_ONCE(e->active))
		return false;	/* the caller's new state takes it off any count */
	/* the count follows the enclave whose custody holds it (see cos_task_set_state()) */
	if (t->state != COS_TASK_WAITING) {
		atomic_inc(&e->nr_waiting);
	} else if (t->custody_enclave != e) {
		atomic_dec(&t->custody_enclave->nr_waiting);
		atomic_inc(&e->nr_waiting);
	}
	/* the clock under the lock: the list stays in waiting_since order (the starvation check) */
	t->waiting_since = ktime_get_ns();
	list_add_tail(&t->custody_node, &c->tasks);
	t->custody_enclave = e;
	WRITE_ONCE(t->custody_cpu, cpu);
	t->state = COS_TASK_WAITING;
	return true;
}

/* Hand @t to the fair policy: FAIR, at the tail of the fallback list.  Under t->lock. */
void cos_fallback_add(struct cos_slot *t)
{
	cos_task_set_state(t, COS_TASK_FAIR);
	scoped_guard(raw_spinlock, &cos_fallback_lock) {
		WRITE_ONCE(t->fallback, true);
		list_add_tail(&t->fallback_node, &cos_fallback_list);
		WRITE_ONCE(cos_fallback_pending, cos_fallback_pending + 1);
	}
	cos_status_sync(t);
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

/*
 * Pop the task at the head of @e's custody list of @cpu (it is then on none), or NULL.  The
 * caller takes t->lock after: never both locks at once this way round.  Context: IRQs off;
 * takes that list's custody lock.  A task on a custody list is in use: its detach takes it off
 * first.
 */
struct cos_slot *cos_custody_pop(struct cos_enclave *e, int cpu)
{
	struct cos_custody *c = per_cpu_ptr(e->custody, cpu);
	struct cos_slot *t;

	guard(raw_spinlock)(&c->lock);
	t = list_first_entry_or_null(&c->tasks, struct cos_slot, custody_node);
	if (t) {
		list_del_init(&t->custody_node);
		WRITE_ONCE(t->custody_cpu, -1);
	}
	return t;
}

/**
 * cos_custody_oldest() - the task in @e's custody that has waited longest
 * @e: the enclave
 * @oldest: filled with its pid, state, CPU and waiting_since
 *
 * Each list is in waiting_since order, but a task that waits for its throttled group counts
 * only from the group's release (cos_group_ready_since(), never earlier than its
 * waiting_since): a throttled head may look younger than the unthrottled task behind it.  So
 * each list is read from its head up to its first unthrottled task, which no later task can
 * be older than.
 * Context: any, IRQs off (the stall timer); takes each of @e's custody locks in turn.
 * Return: whether any task is in its custody.
 */
bool cos_custody_oldest(struct cos_enclave *e, struct cos_waiting *oldest)
{
	bool found = false;
	u64 since;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct cos_custody *c = per_cpu_ptr(e->custody, cpu);
		struct cos_slot *t;

		guard(raw_spinlock)(&c->lock);
		/* on a custody list, a task is in use: its detach takes it off first */
		list_for_each_entry(t, &c->tasks, custody_node) {
			/* written under t->lock, which we do not hold: a snapshot */
			u64 gid = READ_ONCE(t->throttled_gid);

			since = gid ? cos_group_ready_since(gid, t->waiting_since) : t->waiting_since;
			if (!found || (s64)(since - oldest->since) < 0) {
				found = true;
				*oldest = (struct cos_waiting){
					.since = since,
					.pid = t->p->pid,
					.state = READ_ONCE(t->state),
					.cpu = READ_ONCE(t->cpu),
				};
			}
			if (!gid)
				break;
		}
	}
	return found;
}
