// SPDX-License-Identifier: GPL-2.0
/*
 * cos_ring.c — the producer side of the message ring (kernel -> lord) and the status table
 * entries the lord resyncs from.
 *
 * The ring is multi-producer and lock-free: cos_post() reserves a sequence number with a
 * cmpxchg on e->head.  A message's fields are written, then smp_store_release(&msg->seq); the
 * lord reads seq with an acquire load, then the fields.  A slot is rewritten only after the
 * lord published (release) a ctl->consumed at or past its old message; producers read it with
 * an acquire load.  A full ring drops messages until the lord has consumed everything, then
 * posts one OVERFLOW; the status table stays exact meanwhile.
 *
 * A post wakes a lord sleeping in COS_IOC_WAIT, unless the lord asked for lazy wake-ups
 * (COS_LORD_F_LAZY_WAKE) and the message asks no decision (cos_post_lazy()).  Then e->urgent
 * holds the newest seq that did wake it, and the stall rule waits for the lord to consume
 * that far only (cos_ring_pending_to()).
 *
 * A status entry has a seqcount, written under t->lock: odd, smp_wmb(), the fields,
 * smp_wmb(), even.  The lord retries a read that saw an odd or changed count.
 *
 * See docs/design.md, "The message ring and the status table".
 */
#include <linux/atomic.h>
#include <linux/irq_work.h>
#include <linux/ktime.h>
#include <linux/percpu.h>

#include "cos_internal.h"
#include "cos_trace.h"

/* Messages posted, per CPU (summed by GET_INFO): no shared counter on the post path. */
static DEFINE_PER_CPU(u64, cos_messages);
/* Messages dropped by full rings, every enclave's (only while one overflows). */
static atomic64_t cos_dropped;

/* Write @t's entry in @e's status table, as FREE if @gone.  Caller holds t->lock. */
static void cos_status_write(struct cos_enclave *e, struct cos_slot *t, bool gone)
{
	struct cos_task_status *s = &e->status[cos_slot_nr(t)];
	u32 sc = READ_ONCE(s->seqcount);

	lockdep_assert_held(&t->lock);
	WRITE_ONCE(s->seqcount, sc + 1);
	smp_wmb();	/* count odd before fields change; pairs with the lord's acquire loads */
	WRITE_ONCE(s->gen, t->gen);
	WRITE_ONCE(s->state, gone ? COS_TASK_FREE : t->state);
	WRITE_ONCE(s->cpu, t->cpu);
	WRITE_ONCE(s->pid, !gone && t->p ? t->p->pid : 0);
	WRITE_ONCE(s->enclave_id, gone ? 0 : t->home_id);
	WRITE_ONCE(s->last_seq, t->last_seq);
	WRITE_ONCE(s->runtime_ns, t->runtime);
	smp_wmb();	/* fields before the count turns even */
	WRITE_ONCE(s->seqcount, sc + 2);
}

/*
 * Publish @t into its entry of its enclave's status table (none without an enclave): a lord
 * maps its own table, and sees no other enclave's tasks.  Caller holds t->lock, IRQs off.
 */
void cos_status_sync(struct cos_slot *t)
{
	struct cos_enclave *e;

	lockdep_assert_held(&t->lock);
	e = cos_task_enclave(t);
	if (e)
		cos_status_write(e, t, false);
}

/* @t leaves @e (TASK_DEAD posted): its entry there says FREE.  Caller holds t->lock. */
void cos_status_leave(struct cos_enclave *e, struct cos_slot *t)
{
	cos_status_write(e, t, true);
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
	m->waker = 0;
	if (t) {
		if (type == COS_MSG_TASK_RUNNABLE)
			m->waker = t->waker;
		t->waker = 0;
	}
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

/* Raise e->urgent to @seq (it only grows; producers finish out of order).  Lock-free. */
static void cos_ring_mark_urgent(struct cos_enclave *e, u64 seq)
{
	s64 old = atomic64_read(&e->urgent);

	while (old < (s64)seq && !atomic64_try_cmpxchg(&e->urgent, &old, seq))
		;
}

/*
 * How far the lord must consume for nothing to be pending that asked for it: every message,
 * or with COS_LORD_F_LAZY_WAKE the newest one that woke it.  Context: any.
 */
u64 cos_ring_pending_to(struct cos_enclave *e)
{
	u64 produced = cos_ring_produced(e);

	if (!(e->flags & COS_LORD_F_LAZY_WAKE))
		return produced;
	return min_t(u64, atomic64_read(&e->urgent), produced);
}

/*
 * May a message that asks no decision (cos_post_lazy()), at @seq in @e's ring, wait for the
 * lord's next wake-up?  Only if the lord asked for that (COS_LORD_F_LAZY_WAKE), and while the
 * ring is less than half full, so that a sleeping lord never lets it overflow.
 */
static bool cos_msg_may_wait(struct cos_enclave *e, u64 seq)
{
	if (!(e->flags & COS_LORD_F_LAZY_WAKE))
		return false;
	/* a lord that claims more than was produced only hurts itself: then seq - consumed wraps */
	return seq - READ_ONCE(e->ctl->consumed) < e->ring_entries / 2;
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
 * is in overflow.  A full ring drops every message until the lord has consumed everything;
 * then one OVERFLOW (arg: messages lost) tells it to resync from the status table.  Ending it
 * that late matters: a resync done while drops go on would miss them.  The producer whose
 * cmpxchg ends the overflow writes the OVERFLOW at the seq after the last one.
 *
 * A drop must be in the status table before the lord can read that OVERFLOW.  So the dropper
 * syncs @t's status first (last_seq = the OVERFLOW's seq: shoots of @t are refused BEHIND
 * until the lord has consumed it).  Only then it checks, with a cmpxchg of e->head to itself,
 * that the overflow has not ended meanwhile; if it has, it tries again, now to post.
 * Sets *@ovf_end when it wrote that OVERFLOW (which must wake the lord).
 * Return: the seq reserved for the message, or 0 when it is dropped.
 */
static u64 cos_ring_reserve(struct cos_enclave *e, s32 cpu, struct cos_slot *t, bool *ovf_end)
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
			*ovf_end = true;
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

/* Wake a lord sleeping in COS_IOC_WAIT after a message was reserved in @e's ring. */
static void cos_ring_wake(struct cos_enclave *e)
{
	/*
	 * The successful cmpxchg of e->head in cos_ring_reserve() or cos_ring_poke() is fully
	 * ordered: the new head is visible before we read the waiters' count; pairs with
	 * cos_ioc_wait()'s smp_mb__after_atomic() between its count and its read of the head.
	 */
	if (atomic_read(&e->waiters))
		irq_work_queue(&e->wake_work);
}

/**
 * cos_ring_poke() - end @e's overflow if the lord has consumed everything
 * @e: the enclave
 *
 * COS_IOC_WAIT and the stall timer call it, in case no message is posted for a while after
 * the lord caught up: the OVERFLOW it writes wakes a lord sleeping in WAIT, which would
 * otherwise sleep past it and be declared stalled.
 * Context: any, IRQs off; lock-free.
 */
void cos_ring_poke(struct cos_enclave *e)
{
	u64 head = atomic64_read(&e->head), seq = head & ~COS_RING_OVF;

	if ((head & COS_RING_OVF) && smp_load_acquire(&e->ctl->consumed) >= seq &&
	    atomic64_try_cmpxchg(&e->head, &head, seq + 1)) {
		cos_ring_write(e, seq + 1, COS_MSG_OVERFLOW, smp_processor_id(), NULL,
			       atomic64_xchg(&e->ovf_dropped, 0));
		if (e->flags & COS_LORD_F_LAZY_WAKE)
			cos_ring_mark_urgent(e, seq + 1);
		cos_ring_wake(e);
	}
}

/*
 * __cos_post() - post a message about @t (NULL for enclave-wide ones) and update its status
 * @e: the enclave (NULL, or unregistered: only the status is updated)
 * @type: COS_MSG_*; @cpu: where it happened; @t: the task; @arg: the message's arg
 * @lazy: it asks the lord no decision (cos_post_lazy())
 *
 * Never overwrites an unconsumed message: when the ring is full the message is dropped
 * (counted in ctl->dropped; the status table stays exact), see cos_ring_reserve().  Wakes a
 * lord sleeping in COS_IOC_WAIT, unless @lazy and the message may wait (cos_msg_may_wait()).
 * Context: any, IRQs off; @t's t->lock held; lock-free otherwise (queues an irq_work to wake
 * a lord sleeping in COS_IOC_WAIT).
 */
static void __cos_post(struct cos_enclave *e, u32 type, s32 cpu, struct cos_slot *t, u64 arg,
		       bool lazy)
{
	bool ovf_end = false, wake;
	u64 seq, ts;

	if (t)
		lockdep_assert_held(&t->lock);
	if (!e || !READ_ONCE(e->registered)) {
		if (t)
			cos_status_sync(t);
		return;
	}
	seq = cos_ring_reserve(e, cpu, t, &ovf_end);
	if (seq) {
		ts = cos_ring_write(e, seq, type, cpu, t, arg);
		if (t) {
			t->last_seq = seq;
			t->last_msg = type;
			t->last_ts = ts;
			cos_status_sync(t);
		}
	}
	/* a dropped message wakes the lord: the ring is full, it must catch up */
	wake = !(lazy && seq && !ovf_end && cos_msg_may_wait(e, seq));
	trace_cos_post(e->id, type, cpu, t && t->p ? t->p->pid : 0, seq, arg, wake);
	if (!wake)
		return;
	if (e->flags & COS_LORD_F_LAZY_WAKE)
		cos_ring_mark_urgent(e, seq ?: cos_ring_produced(e));
	cos_ring_wake(e);
}

/**
 * cos_post() - post a message about @t (NULL for enclave-wide ones) and update its status
 * @e: the enclave (NULL, or unregistered: only the status is updated)
 * @type: COS_MSG_*; @cpu: where it happened; @t: the task; @arg: the message's arg
 *
 * See __cos_post(); the message wakes the lord.
 * Context: any, IRQs off; @t's t->lock held.
 */
void cos_post(struct cos_enclave *e, u32 type, s32 cpu, struct cos_slot *t, u64 arg)
{
	__cos_post(e, type, cpu, t, arg, false);
}

/**
 * cos_post_lazy() - cos_post() for a message that asks the lord no decision
 * @e, @type, @cpu, @t, @arg: as cos_post()
 *
 * With COS_LORD_F_LAZY_WAKE it wakes no lord (while the ring is less than half full): the lord
 * reads it with the next message that wakes it, the ring keeping the order.  Callers decide
 * what asks no decision (cos_task.c: a task that blocked or that the wake rules started, while
 * no task waits for a lord).
 * Context: any, IRQs off; @t's t->lock held.
 */
void cos_post_lazy(struct cos_enclave *e, u32 type, s32 cpu, struct cos_slot *t, u64 arg)
{
	__cos_post(e, type, cpu, t, arg, true);
}

/**
 * cos_ring_wake_now() - wake @e's lord for everything posted so far
 * @e: the enclave (NULL or unregistered: nothing to do)
 *
 * For a caller whose cos_post_lazy() turned out to matter: a task started waiting meanwhile,
 * and its own message may have come before the lazy one, which the lord must see too.
 * Context: any, IRQs off; lock-free.
 */
void cos_ring_wake_now(struct cos_enclave *e)
{
	if (!e || !READ_ONCE(e->registered) || !(e->flags & COS_LORD_F_LAZY_WAKE))
		return;
	cos_ring_mark_urgent(e, cos_ring_produced(e));
	cos_ring_wake(e);
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
