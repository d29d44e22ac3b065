// SPDX-License-Identifier: GPL-2.0
/*
 * cos_task.c — the task table (one slot per COS task, mirrored read-only to the lord as the
 * status table) and the message ring's producer side.
 *
 * Everything here runs under cos_lock (see cos.h).  Memory ordering with the lord:
 *   - ring: all fields of a message are written, then smp_store_release(&msg->seq); the lord
 *     reads seq with an acquire load, then the fields.  A slot is rewritten only after the lord
 *     published (release) a ctl->consumed at or past it; we read consumed with an acquire load.
 *   - status: a seqcount per entry; the writer makes it odd, smp_wmb(), writes the fields,
 *     smp_wmb(), makes it even.  The lord retries reads that saw an odd or changed count.
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cos.h"

DEFINE_RAW_SPINLOCK(cos_lock);
struct cos_task *cos_tasks;
struct cos_task_status *cos_status;

int cos_tasks_init(void)
{
	cos_tasks = vzalloc(array_size(cos_max_tasks, sizeof(*cos_tasks)));
	cos_status = vmalloc_user(PAGE_ALIGN(array_size(cos_max_tasks, sizeof(*cos_status))));
	if (!cos_tasks || !cos_status) {
		cos_tasks_exit();
		return -ENOMEM;
	}
	return 0;
}

void cos_tasks_exit(void)
{
	vfree(cos_tasks);
	vfree(cos_status);
	cos_tasks = NULL;
	cos_status = NULL;
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
 * (COS_TASKS_BATCH_MAX entries), fills it under cos_lock (IRQs off; the walk is at most
 * max_tasks slots) and copies it out after dropping the lock.
 * Return: 0, -EINVAL (size, flags, start, capacity), -EFAULT, -ENOMEM.
 */
long cos_ioc_get_tasks(void __user *uarg)
{
	long usize = cos_user_size(uarg, COS_TASKS_ARGS_SIZE_VER0);
	struct cos_tasks_args args;
	struct cos_task_info *buf;
	unsigned long irqflags;
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

	raw_spin_lock_irqsave(&cos_lock, irqflags);
	for (i = args.start; i < cos_max_tasks && n < cap; i++)
		if (cos_tasks[i].state != COS_TASK_FREE)
			cos_task_info_fill(&buf[n++], &cos_tasks[i]);
	raw_spin_unlock_irqrestore(&cos_lock, irqflags);

	args.next = i;
	args.count = n;
	if (copy_to_user(u64_to_user_ptr(args.tasks), buf, array_size(n, sizeof(*buf))))
		ret = -EFAULT;
	else
		ret = cos_copy_out(uarg, usize, &args, sizeof(args));
	kvfree(buf);
	return ret;
}
