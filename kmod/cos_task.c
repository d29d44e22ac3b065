// SPDX-License-Identifier: GPL-2.0
/*
 * cos_task.c — the core state every other file builds on: the task table (one slot per COS
 * task, mirrored read-only to the lord as the status table), its state machine and the lists
 * that index it, the per-CPU shoot slots (pending: shot, not yet taken by ops.dispatch; taken:
 * dispatched, not yet running) and the kick that makes a CPU reschedule, and the message
 * ring's producer side.  It calls only cos_uaccess.c (see the file order in cos.h).
 *
 * No path walks the table (except COS_IOC_GET_TASKS, which lists it): free slots come from a
 * FIFO of slot numbers (a freed slot is reused last, so a late message about it meets a new
 * generation rarely); the tasks in custody (WAITING, or QUEUED on a CPU) are on the custody
 * list in the order they started waiting, so the oldest is at its head (the starvation check);
 * the tasks handed to the fair policy and not yet taken by the shim are on the fallback list.
 * A task's state changes only through cos_task_set_state_locked(), which keeps the lists.
 *
 * Everything here runs under cos_lock (see cos.h), except cos_pending_none() (lock-free, see
 * there), cos_kick_cpus() (after unlocking) and COS_IOC_GET_TASKS's copies.  Memory
 * ordering with the lord:
 *   - ring: all fields of a message are written, then smp_store_release(&msg->seq); the lord
 *     reads seq with an acquire load, then the fields.  A slot is rewritten only after the lord
 *     published (release) a ctl->consumed at or past it; we read consumed with an acquire load.
 *   - status: a seqcount per entry; the writer makes it odd, smp_wmb(), writes the fields,
 *     smp_wmb(), makes it even.  The lord retries reads that saw an odd or changed count.
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/cleanup.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cos.h"

unsigned int cos_max_tasks = 4096;
module_param_named(max_tasks, cos_max_tasks, uint, 0444);
MODULE_PARM_DESC(max_tasks, "COS tasks tracked at once (status table entries, 64..1048576)");

DEFINE_RAW_SPINLOCK(cos_lock);
struct cos_enclave *cos_enclave;
struct cos_counters cos_counters;
struct cos_task *cos_tasks;
struct cos_task_status *cos_status;
/* Tasks with ->fallback set; written under cos_lock, read lock-free by cos_kf_fallback_take(). */
u32 cos_fallback_pending;

#define COS_GET_TASKS_CHUNK	256	/* slots COS_IOC_GET_TASKS reads per cos_lock hold */

static LIST_HEAD(cos_custody);		/* WAITING and QUEUED tasks, oldest waiting first */
static LIST_HEAD(cos_fallback_list);	/* ->fallback tasks, in the order they were handed over */
static u32 *cos_free_slots;		/* FIFO of free slot numbers: [cos_max_tasks] */
static u32 cos_free_head, cos_free_count;

/*
 * [nr_cpu_ids]: the task shot to that CPU and not yet taken by its ops.dispatch.  Written under
 * cos_lock (WRITE_ONCE); read under it, or lock-free by cos_pending_none().
 */
static struct cos_task **cos_pending;
/*
 * [nr_cpu_ids]: the shot task ops.dispatch took on that CPU, until it starts running there.
 * sched_ext calls ops.dispatch before it puts the preempted task back (ops.stopping), so this
 * is how stopping knows that a shoot preempted it.  Written under cos_lock (WRITE_ONCE); read
 * under it, or lock-free by cos_pending_none().
 */
static struct cos_task **cos_taken;
static DEFINE_PER_CPU(call_single_data_t, cos_kick_csd);

static void cos_kick_fn(void *info)
{
	struct task_struct *curr = current;

	if (!is_idle_task(curr))
		curr->scx.slice = 0;
	set_tsk_need_resched(curr);
	set_preempt_need_resched();
}

int cos_tasks_init(void)
{
	u32 i;

	cos_tasks = vzalloc(array_size(cos_max_tasks, sizeof(*cos_tasks)));
	cos_status = vmalloc_user(PAGE_ALIGN(array_size(cos_max_tasks, sizeof(*cos_status))));
	cos_free_slots = vmalloc(array_size(cos_max_tasks, sizeof(*cos_free_slots)));
	cos_pending = kcalloc(nr_cpu_ids, sizeof(*cos_pending), GFP_KERNEL);
	cos_taken = kcalloc(nr_cpu_ids, sizeof(*cos_taken), GFP_KERNEL);
	if (!cos_tasks || !cos_status || !cos_free_slots || !cos_pending || !cos_taken) {
		cos_tasks_exit();
		return -ENOMEM;
	}
	for_each_possible_cpu(i)
		INIT_CSD(per_cpu_ptr(&cos_kick_csd, i), cos_kick_fn, NULL);
	for (i = 0; i < cos_max_tasks; i++) {
		INIT_LIST_HEAD(&cos_tasks[i].node);
		cos_free_slots[i] = i;
	}
	cos_free_head = 0;
	cos_free_count = cos_max_tasks;
	return 0;
}

void cos_tasks_exit(void)
{
	vfree(cos_tasks);
	vfree(cos_status);
	vfree(cos_free_slots);
	kfree(cos_pending);
	kfree(cos_taken);
	cos_tasks = NULL;
	cos_status = NULL;
	cos_free_slots = NULL;
	cos_pending = NULL;
	cos_taken = NULL;
}

/* Kick @cpus (preempt what runs there).  Any context; not under cos_lock. */
void cos_kick_cpus(const struct cpumask *cpus)
{
	int cpu;

	for_each_cpu(cpu, cpus) {
		if (!cpu_online(cpu))
			continue;
		/* -EBUSY: a kick to that CPU is still in flight, which is as good. */
		smp_call_function_single_async(cpu, per_cpu_ptr(&cos_kick_csd, cpu));
	}
}

/*
 * Take @t out of its CPU's pending slot if it still waits there (not yet taken by ops.dispatch).
 * Returns whether it did.  Caller holds cos_lock.
 */
static bool cos_pending_forget_locked(struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	if (t->state != COS_TASK_QUEUED || cos_pending_peek_locked(t->cpu) != t)
		return false;
	WRITE_ONCE(cos_pending[t->cpu], NULL);
	return true;
}

/* @t leaves custody while queued: cancel its pending shoot (SHOOT_STALE).  Under cos_lock. */
void cos_pending_clear_locked(struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	if (cos_pending_forget_locked(t))
		cos_post(cos_enclave, COS_MSG_SHOOT_STALE, t->cpu, t, t->cpu);
}

/**
 * cos_pending_none() - nothing is shot to @cpu nor taken there: ops.dispatch's lock-free path
 * @cpu: the dispatching CPU
 *
 * Pairs with the shoot's store: a shoot stores cos_pending[@cpu] under cos_lock and kicks
 * @cpu only after dropping it (cos_shoot_commit(): cos_kick_cpus() after the unlock; a local
 * shoot, cos_lord_yield(), runs on @cpu itself).  So a dispatch that reads NULL here just
 * before the store is followed by the kick's schedule on @cpu, whose dispatch sees the store:
 * the IPI's queueing (llist_add, a full barrier) orders it.  cos_taken[@cpu] is set only by
 * @cpu's own dispatch, so a NULL read there is exact; while it is set, the locked path runs
 * and resets it as before (a taken task that never started must not stay behind).  A stale
 * non-NULL read of either only costs the locked path.
 * Context: any; lock-free.
 */
bool cos_pending_none(s32 cpu)
{
	return cpu < 0 || cpu >= nr_cpu_ids ||
	       (!READ_ONCE(cos_pending[cpu]) && !READ_ONCE(cos_taken[cpu]));
}

/* The task shot to @cpu and not yet taken, if any.  Caller holds cos_lock. */
struct cos_task *cos_pending_peek_locked(s32 cpu)
{
	lockdep_assert_held(&cos_lock);
	return cpu >= 0 && cpu < nr_cpu_ids ? cos_pending[cpu] : NULL;
}

/* The task shot to @cpu, if any; it stays QUEUED until it runs.  Caller holds cos_lock. */
struct cos_task *cos_pending_take_locked(s32 cpu)
{
	struct cos_task *t;

	lockdep_assert_held(&cos_lock);
	if (cpu < 0 || cpu >= nr_cpu_ids)
		return NULL;
	t = cos_pending[cpu];
	WRITE_ONCE(cos_pending[cpu], NULL);
	WRITE_ONCE(cos_taken[cpu], t);
	return t;
}

/* @t (a COS task) starts running on @cpu, or could not: the CPU's taken shoot is over. */
void cos_taken_clear_locked(s32 cpu)
{
	lockdep_assert_held(&cos_lock);
	if (cpu >= 0 && cpu < nr_cpu_ids)
		WRITE_ONCE(cos_taken[cpu], NULL);
}

/* @t's slot is freed: it may not stay behind as its CPU's taken shoot.  Caller holds cos_lock. */
static void cos_taken_forget_locked(const struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	if (t->cpu >= 0 && t->cpu < nr_cpu_ids && cos_taken[t->cpu] == t)
		WRITE_ONCE(cos_taken[t->cpu], NULL);
}

/* Is a shot task other than @t about to run on @cpu?  Caller holds cos_lock. */
bool cos_cpu_shot_locked(s32 cpu, const struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	if (cpu < 0 || cpu >= nr_cpu_ids)
		return false;
	return cos_pending[cpu] || (cos_taken[cpu] && cos_taken[cpu] != t);
}

/* Shoot @t to @cpu: it waits in the CPU's pending slot for ops.dispatch there.  Under cos_lock. */
void cos_pending_set_locked(s32 cpu, struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	WRITE_ONCE(cos_pending[cpu], t);
}

/**
 * cos_task_alloc_locked() - take the free slot freed longest ago
 *
 * Context: cos_lock held.  Return: the slot's task (state FREE, on no list), or NULL when the
 * table is full.
 */
static struct cos_task *cos_task_alloc_locked(void)
{
	u32 slot;

	lockdep_assert_held(&cos_lock);
	if (!cos_free_count)
		return NULL;
	slot = cos_free_slots[cos_free_head];
	cos_free_head = (cos_free_head + 1) % cos_max_tasks;
	cos_free_count--;
	return &cos_tasks[slot];
}

/**
 * cos_task_release_locked() - give @t's slot back (it must be FREE already)
 * @t: the task
 *
 * Context: cos_lock held.
 */
static void cos_task_release_locked(struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	WARN_ON_ONCE(t->state != COS_TASK_FREE || cos_free_count >= cos_max_tasks);
	cos_free_slots[(cos_free_head + cos_free_count) % cos_max_tasks] = cos_task_slot(t);
	cos_free_count++;
}

/**
 * cos_fallback_clear_locked() - @t no longer needs the shim to move it to the fair policy
 * @t: the task
 *
 * Context: cos_lock held.
 */
static void cos_fallback_clear_locked(struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	if (t->fallback) {
		t->fallback = false;
		list_del_init(&t->node);
		WRITE_ONCE(cos_fallback_pending, cos_fallback_pending - 1);
	}
}

/**
 * cos_task_set_state_locked() - the one way a task's state changes
 * @t: the task
 * @state: enum cos_task_state
 *
 * Keeps the lists: WAITING (re)starts the wait now, at the custody list's tail; QUEUED (a
 * WAITING task shot to a CPU) keeps its place there; any other state leaves it.  Any change
 * ends a fallback: the task is no longer where the shim would have to take it from.  The
 * caller publishes the change (cos_status_sync() or a message).
 * Context: cos_lock held.
 */
void cos_task_set_state_locked(struct cos_task *t, u32 state)
{
	lockdep_assert_held(&cos_lock);
	cos_fallback_clear_locked(t);
	if (state == COS_TASK_WAITING) {
		t->waiting_since = ktime_get_ns();
		list_move_tail(&t->node, &cos_custody);
	} else if (state != COS_TASK_QUEUED) {
		list_del_init(&t->node);
	}
	t->state = state;
}

/**
 * cos_task_attach_locked() - give COS task @p a slot: the TASK_NEW message, state BLOCKED
 * @p: a task whose policy is SCHED_EXT (a trusted pointer from the shim)
 * @runnable: whether it is runnable now (TASK_NEW's arg)
 *
 * Context: cos_lock held, IRQs off.  Return: its slot, or NULL when the table is full.
 */
struct cos_task *cos_task_attach_locked(struct task_struct *p, bool runnable)
{
	struct cos_task *t;

	lockdep_assert_held(&cos_lock);
	t = cos_task_alloc_locked();
	if (!t)
		return NULL;
	cos_counters.tasks++;
	t->p = p;
	t->gen++;
	cos_task_set_state_locked(t, COS_TASK_BLOCKED);
	t->cpu = task_cpu(p);
	t->next_msg = 0;
	t->runtime = 0;
	t->last_msg = COS_MSG_NONE;
	t->last_ts = 0;
	cos_post(cos_enclave, COS_MSG_TASK_NEW, t->cpu, t, runnable);
	return t;
}

/**
 * cos_task_detach_locked() - @t's task died or left SCHED_EXT: cancel its shoot, post
 * TASK_DEAD, free the slot
 * @t: a slot in use
 *
 * Context: cos_lock held, IRQs off.
 */
void cos_task_detach_locked(struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	cos_pending_clear_locked(t);
	cos_taken_forget_locked(t);
	cos_task_set_state_locked(t, COS_TASK_FREE);
	cos_counters.tasks--;
	cos_post(cos_enclave, COS_MSG_TASK_DEAD, smp_processor_id(), t, 0);
	t->p = NULL;
	cos_status_sync(t);
	cos_task_release_locked(t);
}

/**
 * cos_task_oldest_waiting_locked() - the task in custody that has waited longest, or NULL
 *
 * Context: cos_lock held.
 */
struct cos_task *cos_task_oldest_waiting_locked(void)
{
	lockdep_assert_held(&cos_lock);
	return list_first_entry_or_null(&cos_custody, struct cos_task, node);
}

/**
 * cos_fallback_all_locked() - hand every task in custody to the fair policy
 *
 * WAITING tasks and shot tasks still pending go to the fallback list, in the order they
 * started waiting, for the shim to take (cos_fallback_take_locked()); a shot task ops.dispatch
 * already took is in a local DSQ and runs as it is.  Walks the custody list, not the table.
 * Context: cos_lock held.
 */
void cos_fallback_all_locked(void)
{
	struct cos_task *t, *next;

	lockdep_assert_held(&cos_lock);
	list_for_each_entry_safe(t, next, &cos_custody, node) {
		if (t->state != COS_TASK_WAITING && !cos_pending_forget_locked(t))
			continue;
		cos_task_set_state_locked(t, COS_TASK_FAIR);
		t->fallback = true;
		list_add_tail(&t->node, &cos_fallback_list);
		WRITE_ONCE(cos_fallback_pending, cos_fallback_pending + 1);
		cos_status_sync(t);
	}
}

/**
 * cos_fallback_take_locked() - the task handed to the fair policy longest ago, off its list
 *
 * Context: cos_lock held.  Return: the task, or NULL when none waits for the shim.
 */
struct cos_task *cos_fallback_take_locked(void)
{
	struct cos_task *t;

	lockdep_assert_held(&cos_lock);
	t = list_first_entry_or_null(&cos_fallback_list, struct cos_task, node);
	if (t)
		cos_fallback_clear_locked(t);
	return t;
}

/* Publish @t into its status entry.  Caller holds cos_lock. */
void cos_status_sync(struct cos_task *t)
{
	struct cos_task_status *s = &cos_status[cos_task_slot(t)];
	u32 sc = READ_ONCE(s->seqcount);

	lockdep_assert_held(&cos_lock);
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

/* Write message @seq and publish it; returns its timestamp. */
static u64 cos_ring_write(struct cos_enclave *e, u64 seq, u32 type, s32 cpu,
			  struct cos_task *t, u64 arg)
{
	struct cos_msg *m = &e->ring[(seq - 1) & (e->ring_entries - 1)];
	u64 ts = ktime_get_ns();

	m->ts = ts;
	m->type = type;
	m->cpu = cpu;
	m->slot = t ? cos_task_slot(t) : 0;
	m->gen = t ? t->gen : 0;
	m->pid = t && t->p ? t->p->pid : 0;
	m->__pad = 0;
	m->arg = arg;
	smp_store_release(&m->seq, seq);	/* pairs with the lord's acquire load of seq */
	WRITE_ONCE(e->ctl->produced, seq);
	return ts;
}

/*
 * cos_overflow_end_locked - leave overflow once the lord has consumed everything: post one
 * OVERFLOW message (arg = messages lost) so that it resyncs from the status table, which by now
 * reflects everything that was dropped.  Posting it at the end rather than when the ring filled
 * matters: drops go on until the lord has caught up, and a resync done earlier would miss them.
 * Called by cos_post() and by the stall timer (in case nothing else is posted).  Under cos_lock.
 */
void cos_overflow_end_locked(struct cos_enclave *e, u64 consumed)
{
	lockdep_assert_held(&cos_lock);
	if (!e->overflowed || consumed < e->produced)
		return;
	e->overflowed = false;
	cos_ring_write(e, ++e->produced, COS_MSG_OVERFLOW, smp_processor_id(), NULL,
		       e->overflow_dropped);
	e->overflow_dropped = 0;
}

/*
 * cos_post - append a message about @t (NULL for enclave-wide messages) and update its status.
 * Never overwrites an unconsumed message: when the ring is full the message is dropped (counted
 * in ctl->dropped; the status table stays exact) and the enclave is in overflow until the lord
 * has consumed everything, see cos_overflow_end_locked().  Nothing else is written meanwhile, so
 * tasks touched while dropping get last_seq = the OVERFLOW message's seq: shoots of them are
 * refused (BEHIND) until the lord has consumed it and resynced.
 * Caller holds cos_lock.
 */
void cos_post(struct cos_enclave *e, u32 type, s32 cpu, struct cos_task *t, u64 arg)
{
	u64 consumed, ts;

	lockdep_assert_held(&cos_lock);
	if (!e || !e->registered) {
		if (t)
			cos_status_sync(t);
		return;
	}
	consumed = smp_load_acquire(&e->ctl->consumed);	/* pairs with the lord's release */
	if (consumed > e->produced)
		consumed = e->produced;		/* a lord that claims too much only hurts itself */
	cos_overflow_end_locked(e, consumed);
	if (e->overflowed || e->produced - consumed >= e->ring_entries - 1) {
		/* keep one slot free for the OVERFLOW message that ends this */
		e->overflowed = true;
		e->overflow_dropped++;
		WRITE_ONCE(e->ctl->dropped, e->ctl->dropped + 1);
		if (t) {
			t->last_seq = e->produced + 1;	/* the OVERFLOW that ends this */
			cos_status_sync(t);
		}
		goto wake;
	}
	ts = cos_ring_write(e, ++e->produced, type, cpu, t, arg);
	cos_counters.messages++;
	if (t) {
		t->last_seq = e->produced;
		t->last_msg = type;
		t->last_ts = ts;
		cos_status_sync(t);
	}
wake:
	if (atomic_read(&e->waiters))
		irq_work_queue(&e->wake_work);
}

/* Fill @info from @t.  Caller holds cos_lock; @t is in use (t->p valid, see struct cos_task). */
static void cos_task_info_fill(struct cos_task_info *info, const struct cos_task *t)
{
	lockdep_assert_held(&cos_lock);
	*info = (struct cos_task_info){
		.slot = cos_task_slot(t),
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
 * (COS_TASKS_BATCH_MAX entries) and fills it taking cos_lock (IRQs off) for at most
 * COS_GET_TASKS_CHUNK slots at a time, so the walk never holds off scheduling for long: each
 * entry is consistent, the batch is not one snapshot (nor were successive batches).  Copies
 * it out after dropping the lock.
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

	/* COS_GET_TASKS_CHUNK slots per cos_lock hold: IRQs stay off for a bounded time */
	for (i = args.start; i < cos_max_tasks && n < cap;) {
		u32 end = min_t(u32, i + COS_GET_TASKS_CHUNK, cos_max_tasks);

		scoped_guard(raw_spinlock_irqsave, &cos_lock) {
			for (; i < end && n < cap; i++)
				if (cos_tasks[i].state != COS_TASK_FREE)
					cos_task_info_fill(&buf[n++], &cos_tasks[i]);
		}
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
