// SPDX-License-Identifier: GPL-2.0
/*
 * cos_group.c — CPU bandwidth groups: cgroup v2's cpu.max and cpu.weight under the shim.
 * In full mode CFS's bandwidth control does not apply: the kernel only reports these values
 * to the BPF scheduler, and this file enforces them.
 *
 * Groups.  One struct cos_group per cgroup with a cpu controller, found by cgroup id in
 * cos_groups (RCU lookups on the scheduling path).  A group points at its parent, which
 * outlives it.
 *
 * Budget.  A group with a quota has @runtime, the CPU time left in its period.  The shim
 * charges each task's CPU time to its chain; periods roll over lazily.  A group out of budget
 * is throttled until the refill timer releases it.
 *
 * Reservation.  Charges come only at ticks and stops, so a CPU reserves a slice of its chain's
 * budget when a task starts there, and its budget timer takes the next slice or ends the
 * task's slice.  So a chain never hands out more than its budget.
 *
 * Weight.  A task's effective weight for the fair policy is the product of its shares down its
 * chain, as in CFS's group scheduling: each group sums the weights of its active entities.
 *
 * Locking: g->lock, cos_bw.lock and g->share_lock (cos_internal.h).  Nothing here takes an rq
 * lock, sleeps or allocates, except ops.cgroup_init.  What this file needs of the files above
 * it comes as hooks (struct cos_group_hooks).  See docs/design.md, "CPU bandwidth".
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/cleanup.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "cos_internal.h"

struct cos_group {
	u64 id;				/* the cgroup's id (kernfs node id) */
	struct cos_group *parent;	/* NULL for the root; exits after this one */
	u32 weight;			/* cpu.weight, 1..10000 (100: default); set under @share_lock */
	raw_spinlock_t lock;
	/* under @share_lock: the fair policy's shares (see "Weight") */
	raw_spinlock_t share_lock;
	s64 active_weight;		/* its runnable fair tasks' and active children's weights */
	int nr_active;			/* how many (< 0 for a moment if a change overtook another) */
	u32 counted_weight;		/* the weight it adds to its parent's @active_weight */
	atomic_t nr_running;		/* CPUs running a task of it or below it (budgeted; not root) */
	/* under cos_bw.lock */
	/* COS tasks in custody told they wait for it, by enclave (registry index; see "Parked") */
	u32 nr_parked[COS_ENCLAVES_MAX];
	/* under @lock */
	u64 period_ns;
	u64 quota_ns;			/* COS_GROUP_NO_QUOTA: no limit */
	u64 burst_ns;
	s64 runtime;			/* budget left in this period; < 0: debt */
	u64 period_end;			/* when the current period ends (ktime_get_ns()) */
	u64 __percpu *usage;		/* CPU time charged, in all: each CPU its own, IRQs off */
	u64 period_usage;		/* charged in the current period (limited groups) */
	u64 last_usage;			/* charged in the last complete period */
	u64 overrun_ns;			/* charged beyond the budget, in all */
	/* under cos_bw.lock */
	bool throttled;			/* on cos_bw.throttled; read lock-free by the shim's checks */
	bool lord_told;			/* GROUP_THROTTLED posted: post GROUP_UNTHROTTLED */
	u64 released_at;		/* when it was last released */
	u64 throttled_at;
	u64 throttled_ns;		/* time spent throttled, in all */
	u64 nr_throttled;		/* times throttled */
	struct list_head node;		/* on cos_bw.throttled or .released, else empty */
	struct rcu_head rcu;
};

static DEFINE_XARRAY(cos_groups);
static const struct cos_group_hooks *cos_group_hooks;
static atomic_t cos_groups_limited = ATOMIC_INIT(0);	/* groups with a quota */
/* non-root groups of weight != 100; while 0 every task weighs the same, whatever its group */
static atomic_t cos_groups_weighted = ATOMIC_INIT(0);
/*
 * Parked: COS tasks in custody told they wait for a throttled group (TASK_THROTTLED) cannot be
 * placed by the lord until its release, so they must not hold the wake rules off for everyone
 * (cos_tasks_waiting()).  They are counted by enclave, as the waiting tasks are: another
 * enclave's parked tasks must not hide this one's waiting ones.  @cos_groups_parked[i] is the
 * sum of @nr_parked[i] over the groups throttled now: written under cos_bw.lock as tasks park
 * and unpark and groups throttle and release; read lock-free.
 */
static atomic_t cos_groups_parked[COS_ENCLAVES_MAX];

static struct {
	raw_spinlock_t lock;
	struct list_head throttled;	/* groups out of budget */
	struct list_head released;	/* refilled, parked tasks not yet taken back by the shim */
	struct hrtimer timer;		/* refills the throttled groups at their period ends */
	u64 armed_at;			/* its expiry, U64_MAX when it will not fire again */
} cos_bw = {
	.lock = __RAW_SPIN_LOCK_UNLOCKED(cos_bw.lock),
	.throttled = LIST_HEAD_INIT(cos_bw.throttled),
	.released = LIST_HEAD_INIT(cos_bw.released),
	.armed_at = U64_MAX,
};

/* @g's parked tasks count (@sign 1) or no longer count (-1) for their enclaves.  cos_bw.lock. */
static void cos_group_parked_add(const struct cos_group *g, int sign)
{
	int i;

	lockdep_assert_held(&cos_bw.lock);
	for (i = 0; i < COS_ENCLAVES_MAX; i++)
		if (g->nr_parked[i])
			atomic_add(sign * (int)g->nr_parked[i], &cos_groups_parked[i]);
}

/*
 * Per CPU, while some group has a quota: the cgroup of the task running there (0 if none was
 * budgeted; its chain counts this CPU in @nr_running meanwhile), its reservation (see
 * "Reservation"), and @timer, which fires when the reservation is used.  Written by that CPU
 * alone, IRQs off: its ops.running, ops.tick and ops.stopping (rq lock held) and @timer's
 * callback (hard IRQ, pinned: it cannot run while the others do).  Also by cos_groups_clear(),
 * once no op runs and the timer is cancelled.  @cgid is read lock-free by other CPUs' charges
 * (cos_group_kick_running()).
 */
struct cos_group_cpu {
	u64 cgid;
	u64 reserved;			/* taken from each limited group of @cgid's chain, uncharged */
	u64 reserved_at;		/* when the last of it was taken */
	struct hrtimer timer;
};
static DEFINE_PER_CPU(struct cos_group_cpu, cos_group_cpus);

/*
 * debugfs switches for benchmarks (cos_main.c), read lock-free.  cos/bw_stop_at_tick: no
 * budget timer is armed and no CPU kicked when a group throttles; its tasks stop at their next
 * tick.  cos/bw_no_reserve: a CPU reserves nothing.  Its timer is armed for its share of the
 * budget left, and its task's slice capped at that; the charges draw on the groups, and the
 * charge that throttles a group kicks every CPU running its tasks.
 */
bool cos_bw_stop_at_tick;
bool cos_bw_no_reserve;

/* A CPU's share of a budget is at least this (or the budget, if less): no stop storm. */
#define COS_GROUP_MIN_SHARE_NS	(500 * NSEC_PER_USEC)
/* A reservation is at most this, as CFS's run queues take 5 ms of a group's runtime at a time. */
#define COS_GROUP_RESERVE_NS	(5 * NSEC_PER_MSEC)

static bool cos_group_reserving(void)
{
	return !READ_ONCE(cos_bw_stop_at_tick) && !READ_ONCE(cos_bw_no_reserve);
}

/*
 * debugfs cos/group_init_fail (fault injection for the tests, kmod/cos_main.c): the next that
 * many cos_group_init() calls fail with -ENOMEM, as when the allocation fails.
 */
atomic_t cos_group_init_fail = ATOMIC_INIT(0);

/* The group of cgroup @id, or NULL.  Context: an RCU read side (IRQs off counts). */
static struct cos_group *cos_group_find(u64 id)
{
	return id <= ULONG_MAX ? xa_load(&cos_groups, id) : NULL;
}

/*
 * Roll @g's periods forward to @now: a quota per period passed, up to quota + burst; debt at
 * most one quota deep.  Caller holds g->lock; @g has a quota.
 */
static void cos_group_roll(struct cos_group *g, u64 now)
{
	u64 n;

	lockdep_assert_held(&g->lock);
	if (now < g->period_end)
		return;
	n = (now - g->period_end) / g->period_ns + 1;
	g->last_usage = n == 1 ? g->period_usage : 0;
	g->period_usage = 0;
	g->period_end += n * g->period_ns;
	g->runtime += (s64)min(n, 2ULL) * (s64)g->quota_ns;	/* two quotas clear any debt */
	g->runtime = min_t(s64, g->runtime, g->quota_ns + g->burst_ns);
}

/*
 * Arm the refill timer for @when unless it fires earlier.  @armed_at says when, not the
 * hrtimer's state: while the callback runs the timer is not queued, and the callback decides
 * under cos_bw.lock whether it restarts.  A start while it runs wins over its restart (the
 * hrtimer core keeps the timer enqueued), and is earlier, so nothing is late.
 * Caller holds cos_bw.lock.
 */
static void cos_group_arm(u64 when)
{
	lockdep_assert_held(&cos_bw.lock);
	if (cos_bw.armed_at <= when)
		return;
	cos_bw.armed_at = when;
	hrtimer_start(&cos_bw.timer, ns_to_ktime(when), HRTIMER_MODE_ABS_HARD);
}

/*
 * @g ran out of budget: throttle it unless a refill came first.  Takes cos_bw.lock, g->lock.
 * Return: whether this call throttled it.
 */
static bool cos_group_throttle(struct cos_group *g, u64 now)
{
	guard(raw_spinlock_irqsave)(&cos_bw.lock);
	guard(raw_spinlock)(&g->lock);
	cos_group_roll(g, now);
	if (g->throttled || g->runtime > 0 || g->quota_ns == COS_GROUP_NO_QUOTA)
		return false;
	g->throttled = true;
	g->throttled_at = now;
	g->nr_throttled++;
	cos_group_parked_add(g, 1);	/* still waiting from its last throttling */
	list_move_tail(&g->node, &cos_bw.throttled);	/* from released (not yet taken), or none */
	cos_group_arm(g->period_end);
	return true;
}

/*
 * @g was just throttled: the other CPUs running a task of @g or below it stop that task now,
 * not at their next tick (this CPU's is stopping, or its tick ends it).  A stale @cgid costs at
 * most one needless kick: the kick checks again there (cos_group_running_throttled()).
 * Context: a charge, IRQs off, RCU read side.
 */
static void cos_group_kick_running(struct cos_group *g)
{
	int cpu, self = raw_smp_processor_id();
	struct cos_group *r;

	lockdep_assert_irqs_disabled();
	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "cos_group_kick_running() outside RCU");
	for_each_online_cpu(cpu) {
		if (cpu == self)
			continue;
		for (r = cos_group_find(READ_ONCE(per_cpu_ptr(&cos_group_cpus, cpu)->cgid)); r;
		     r = r->parent) {
			if (r == g) {
				cos_group_hooks->kick_throttled(cpu);
				break;
			}
		}
	}
}

/*
 * @g has budget again (or no limit): off the throttled list, onto the released one for the
 * shim; the lord hears of it if it heard of the throttling.  Posted under cos_bw.lock, so that
 * a TASK_THROTTLED posted under it (cos_group_hold_throttled()) cannot follow it in the ring.
 * Caller holds cos_bw.lock and g->lock.
 */
static void cos_group_release(struct cos_group *g, u64 now)
{
	lockdep_assert_held(&cos_bw.lock);
	lockdep_assert_held(&g->lock);
	g->throttled = false;
	cos_group_parked_add(g, -1);	/* the lord may place them again */
	g->throttled_ns += now - g->throttled_at;
	g->released_at = now;
	list_move_tail(&g->node, &cos_bw.released);
	if (g->lord_told) {
		g->lord_told = false;
		cos_group_hooks->unthrottled(g->id);
	}
}

/*
 * The refill timer (hard-irq context): every throttled group whose period ended gets its
 * quota; those with budget again are released and the idle CPUs kicked.  It re-arms itself
 * for the earliest period end among those still throttled.
 */
static enum hrtimer_restart cos_group_timer_fn(struct hrtimer *timer)
{
	u64 now = ktime_get_ns(), next = U64_MAX;
	struct cos_group *g, *tmp;
	bool released = false;

	scoped_guard(raw_spinlock, &cos_bw.lock) {
		list_for_each_entry_safe(g, tmp, &cos_bw.throttled, node) {
			guard(raw_spinlock)(&g->lock);
			cos_group_roll(g, now);
			if (g->runtime > 0 || g->quota_ns == COS_GROUP_NO_QUOTA) {
				cos_group_release(g, now);
				released = true;
			} else {
				next = min(next, g->period_end);
			}
		}
		cos_bw.armed_at = next;
		if (next != U64_MAX)
			hrtimer_set_expires(timer, ns_to_ktime(next));
	}
	if (released)
		cos_group_hooks->kick_idle();
	return next != U64_MAX ? HRTIMER_RESTART : HRTIMER_NORESTART;
}

static void cos_group_deactivate(struct cos_group *g);

/* RCU callback of cos_group_exit(): no lookup can find @head's group any more. */
static void cos_group_free(struct rcu_head *head)
{
	struct cos_group *g = container_of(head, struct cos_group, rcu);

	free_percpu(g->usage);
	kfree(g);
}

/**
 * cos_group_init() - a cgroup with a cpu controller appeared (or the shim attached)
 * @id: its cgroup id
 * @parent_id: its parent's (0 for the root)
 * @weight: its cpu.weight
 *
 * Context: ops.cgroup_init, process context, may sleep (allocates); parents come first.
 * Return: 0, -ENOMEM, -EEXIST (a group of that id exists), or -ENOENT (a parent id given
 * whose group does not exist).
 */
int cos_group_init(u64 id, u64 parent_id, u32 weight)
{
	struct cos_group *g, *parent = NULL;
	int ret;

	might_sleep();
	if (!id || id > ULONG_MAX)
		return -EINVAL;
	if (parent_id) {
		parent = xa_load(&cos_groups, parent_id);
		if (!parent)
			return -ENOENT;
	}
	if (atomic_dec_if_positive(&cos_group_init_fail) >= 0)
		return -ENOMEM;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	g->usage = alloc_percpu(u64);
	if (!g->usage) {
		kfree(g);
		return -ENOMEM;
	}
	g->id = id;
	g->parent = parent;
	g->weight = weight ?: 100;
	raw_spin_lock_init(&g->lock);
	raw_spin_lock_init(&g->share_lock);
	g->quota_ns = COS_GROUP_NO_QUOTA;
	g->period_ns = 100 * NSEC_PER_MSEC;
	INIT_LIST_HEAD(&g->node);
	ret = xa_insert(&cos_groups, id, g, GFP_KERNEL);
	if (ret) {
		free_percpu(g->usage);
		kfree(g);
		return ret == -EBUSY ? -EEXIST : ret;
	}
	if (parent && g->weight != 100)
		atomic_inc(&cos_groups_weighted);
	return 0;
}

/**
 * cos_group_exit() - cgroup @id is gone (or the shim is leaving)
 * @id: its cgroup id
 *
 * Its children have gone first; it has no tasks.  Freed after an RCU grace period: the
 * scheduling path looks groups up under RCU.
 * Context: ops.cgroup_exit, process context; takes cos_bw.lock.
 */
void cos_group_exit(u64 id)
{
	struct cos_group *g = id <= ULONG_MAX ? xa_erase(&cos_groups, id) : NULL;

	if (!g)
		return;
	cos_group_deactivate(g);
	scoped_guard(raw_spinlock_irqsave, &cos_bw.lock) {
		list_del_init(&g->node);
		if (g->throttled)	/* it has no tasks: none should be parked */
			cos_group_parked_add(g, -1);
		g->throttled = false;
		if (g->quota_ns != COS_GROUP_NO_QUOTA)
			atomic_dec(&cos_groups_limited);
	}
	if (g->parent && g->weight != 100)
		atomic_dec(&cos_groups_weighted);
	call_rcu(&g->rcu, cos_group_free);
}

/**
 * cos_group_set_bandwidth() - cgroup @id's cpu.max (and cpu.max.burst) changed
 * @id: its cgroup id
 * @period_us: the period
 * @quota_us: the quota per period, COS_BW_QUOTA_INF for "max"
 * @burst_us: the burst
 *
 * The kernel has validated the values (cpu.max's own limits).  A new limit starts a new
 * period with a full quota; a group that is throttled is released at once if the limit went
 * away or grew.
 * Context: ops.cgroup_init or ops.cgroup_set_bandwidth, process context; takes cos_bw.lock and
 * g->lock.
 */
void cos_group_set_bandwidth(u64 id, u64 period_us, u64 quota_us, u64 burst_us)
{
	bool had, has = quota_us != COS_BW_QUOTA_INF && period_us;
	u64 now = ktime_get_ns();
	struct cos_group *g;
	bool released = false;

	guard(rcu)();
	g = cos_group_find(id);
	if (!g)
		return;
	scoped_guard(raw_spinlock_irqsave, &cos_bw.lock) {
		guard(raw_spinlock)(&g->lock);
		had = g->quota_ns != COS_GROUP_NO_QUOTA;
		g->period_ns = (period_us ?: 100000) * NSEC_PER_USEC;
		/* read lock-free first by cos_group_charge() */
		WRITE_ONCE(g->quota_ns, has ? quota_us * NSEC_PER_USEC : COS_GROUP_NO_QUOTA);
		g->burst_ns = has ? burst_us * NSEC_PER_USEC : 0;
		g->runtime = has ? g->quota_ns : 0;
		g->period_end = now + g->period_ns;
		if (g->throttled) {
			cos_group_release(g, now);
			released = true;
		}
	}
	if (had != has)
		atomic_add(has ? 1 : -1, &cos_groups_limited);
	if (released)
		cos_group_hooks->kick_idle();
}

/**
 * cos_group_set_weight() - cgroup @id's cpu.weight changed
 * @id: its cgroup id
 * @weight: the new weight, 1..10000
 *
 * An active group's parent's sum changes by the difference (see "Weight").
 * Context: ops.cgroup_set_weight, process context; takes g->share_lock, then its parent's.
 */
void cos_group_set_weight(u64 id, u32 weight)
{
	struct cos_group *g;
	u32 old, counted = 0;

	weight = weight ?: 100;
	guard(rcu)();
	g = cos_group_find(id);
	if (!g)
		return;
	scoped_guard(raw_spinlock_irqsave, &g->share_lock) {
		old = g->weight;
		WRITE_ONCE(g->weight, weight);
		if (g->nr_active > 0) {
			counted = g->counted_weight;
			g->counted_weight = weight;
		}
	}
	if (g->parent && (old != 100) != (weight != 100))
		atomic_add(weight != 100 ? 1 : -1, &cos_groups_weighted);
	if (counted && g->parent) {
		guard(raw_spinlock_irqsave)(&g->parent->share_lock);
		WRITE_ONCE(g->parent->active_weight,
			   g->parent->active_weight + (s64)weight - counted);
	}
}

/*
 * An entity of weight @w became runnable or active under @g (@add), or stopped being so.  @g's
 * sum and count change; when @g itself turns active or inactive, so do its parent's, and so on
 * up to the root.  The root keeps no sum: a root task's effective weight is its own, and the
 * root's sum cancels out of every other.  Each level is changed under its own share_lock, one
 * at a time.  So a count may dip below 0 when a change overtakes the one it undoes.  A level
 * passes itself up as active when its count goes from 0 to 1, as inactive when it returns to
 * 0, and with the weight it was counted with: every sum ends exact.
 */
static void cos_group_activity(struct cos_group *g, u32 w, bool add)
{
	while (g && g->parent) {
		u32 up;

		scoped_guard(raw_spinlock_irqsave, &g->share_lock) {
			WRITE_ONCE(g->active_weight, g->active_weight + (add ? (s64)w : -(s64)w));
			if (add) {
				if (g->nr_active++ != 0)
					return;
				up = g->counted_weight = g->weight;
			} else {
				if (--g->nr_active != 0)
					return;
				up = g->counted_weight;
			}
		}
		w = up;
		g = g->parent;
	}
}

/* @g is going away: whatever it still counts leaves its parent's sum (see "Weight"). */
static void cos_group_deactivate(struct cos_group *g)
{
	u32 counted = 0;

	scoped_guard(raw_spinlock_irqsave, &g->share_lock) {
		if (g->nr_active > 0)
			counted = g->counted_weight;
		g->nr_active = 0;
		g->active_weight = 0;
	}
	if (counted)
		cos_group_activity(g->parent, counted, false);
}

/**
 * cos_group_runnable() - a fair task of weight @weight in cgroup @id is runnable
 * @id: its cgroup
 * @weight: its weight (p->scx.weight), which cos_group_quiescent() must get back
 *
 * Context: the shim's ops.select_cpu or ops.enqueue (IRQs off); takes the chain's
 * share_locks, one at a time.
 */
void cos_group_runnable(u64 id, u32 weight)
{
	lockdep_assert_irqs_disabled();
	guard(rcu)();
	cos_group_activity(cos_group_find(id), weight, true);
}

/**
 * cos_group_quiescent() - the task cos_group_runnable() counted is not runnable any more
 * @id: the cgroup it was counted in
 * @weight: the weight it was counted with
 *
 * Nothing if the group is gone (its exit took its counts away).
 * Context: the shim's ops.quiescent (IRQs off); takes the chain's share_locks, one at a time.
 */
void cos_group_quiescent(u64 id, u32 weight)
{
	lockdep_assert_irqs_disabled();
	guard(rcu)();
	cos_group_activity(cos_group_find(id), weight, false);
}

/**
 * cos_group_charge() - charge @ns of CPU time to cgroup @id and its ancestors
 * @id: the cgroup of the task that ran
 * @ns: how long it ran since its last charge
 *
 * What this CPU reserved for the chain pays first (see "Reservation"); every group of the
 * chain that has a quota loses the rest of @ns from its budget.  One that has none left while
 * this CPU has no reservation left either is throttled (cos_group_throttle()).  Usage is
 * counted per CPU: only a group with a quota is locked, so the root and the other groups
 * without one are no machine-wide lock on every tick and stop.
 * Context: the shim's ops.stopping (before cos_group_stopped()) or ops.tick, on the task's CPU,
 * its rq lock held, IRQs off; takes the locks of the chain's groups with a quota, one at a
 * time (cos_bw.lock too when one runs out).
 * Return: whether the task should stop: its chain is throttled and this CPU holds no
 * reservation for it.
 */
bool cos_group_charge(u64 id, u64 ns)
{
	struct cos_group_cpu *c = this_cpu_ptr(&cos_group_cpus);
	u64 now, beyond = ns, left = 0;
	bool throttled = false;
	struct cos_group *g;

	lockdep_assert_irqs_disabled();	/* this CPU's record: its rq lock is held */
	if (!atomic_read(&cos_groups_limited) || !ns)
		return false;
	if (c->cgid == id && c->reserved) {
		u64 paid = min(ns, c->reserved);

		c->reserved -= paid;
		beyond -= paid;
		left = c->reserved;
	}
	now = ktime_get_ns();
	guard(rcu)();
	for (g = cos_group_find(id); g; g = g->parent) {
		bool out = false;

		u64 *usage = this_cpu_ptr(g->usage);

		WRITE_ONCE(*usage, *usage + ns);	/* read by cos_group_info_fill() */
		/* a quota set meanwhile starts with a full budget: missing this charge is fair */
		if (READ_ONCE(g->quota_ns) == COS_GROUP_NO_QUOTA)
			continue;
		scoped_guard(raw_spinlock_irqsave, &g->lock) {
			if (g->quota_ns != COS_GROUP_NO_QUOTA) {
				cos_group_roll(g, now);
				g->period_usage += ns;
				g->overrun_ns += g->runtime <= 0 ? beyond :
						 beyond > g->runtime ? beyond - g->runtime : 0;
				g->runtime = max_t(s64, g->runtime - (s64)beyond, -(s64)g->quota_ns);
				out = g->runtime <= 0 && !left;
			}
		}
		if (out && !READ_ONCE(g->throttled) && cos_group_throttle(g, now) &&
		    !READ_ONCE(cos_bw_stop_at_tick))
			cos_group_kick_running(g);
		throttled |= READ_ONCE(g->throttled);
	}
	return throttled && !left;
}

/**
 * cos_group_throttled() - is cgroup @id or an ancestor throttled?
 * @id: a task's cgroup
 *
 * Context: the shim's ops.select_cpu, ops.enqueue or ops.dispatch; lock-free (a group throttled
 * a moment ago may be missed: its tasks stop at their next tick).
 * Return: the id of the nearest throttled group (where the task parks), 0 if none.
 */
u64 cos_group_throttled(u64 id)
{
	struct cos_group *g;

	if (!atomic_read(&cos_groups_limited))
		return 0;
	guard(rcu)();
	for (g = cos_group_find(id); g; g = g->parent)
		if (READ_ONCE(g->throttled))
			return g->id;
	return 0;
}

/*
 * This CPU's share of the budget @id's chain has left: the least budget of its groups with a
 * quota, over the CPUs now running a task of that group (this one included).  At least
 * COS_GROUP_MIN_SHARE_NS, or that budget if less.  If all the CPUs run on, each share is used
 * about when the budget is.  @count: count this CPU in the chain's @nr_running first
 * (ops.running).  @spent: set to the group whose budget it is.  Caller: IRQs off, RCU read
 * side; takes the groups' locks one at a time.
 * Return: the share (0 if a group of the chain is spent), U64_MAX if none has a quota.
 */
static u64 cos_group_share_left(u64 id, u64 now, bool count, struct cos_group **spent)
{
	u64 budget = U64_MAX;
	struct cos_group *g, *least = NULL;
	int nr;

	lockdep_assert_irqs_disabled();
	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "cos_group_share_left() outside RCU");
	/* not the root: it has no cpu.max, and every CPU would share its line */
	for (g = cos_group_find(id); g && g->parent; g = g->parent) {
		if (count)
			atomic_inc(&g->nr_running);
		guard(raw_spinlock_irqsave)(&g->lock);
		if (g->quota_ns == COS_GROUP_NO_QUOTA)
			continue;
		cos_group_roll(g, now);
		if (max_t(s64, g->runtime, 0) < budget) {
			budget = max_t(s64, g->runtime, 0);
			least = g;
		}
	}
	if (!least)
		return U64_MAX;
	*spent = least;
	nr = atomic_read(&least->nr_running);
	if (nr > 1)
		budget = max(budget / nr, min_t(u64, budget, COS_GROUP_MIN_SHARE_NS));
	return budget;
}

/*
 * This CPU reserves its next slice of @id's chain's budget (see "Reservation"): its share of
 * what is left, at most COS_GROUP_RESERVE_NS, taken from each group of the chain with a quota
 * and added to its record @c.  A chain with nothing left is throttled.  CPUs that take the last
 * of a budget at once may each take it (a group's lock is dropped between reading and taking):
 * the excess is carried as debt.  @count: as for cos_group_share_left().  Caller: this CPU,
 * IRQs off, RCU read side; takes the groups' locks one at a time, and cos_bw.lock when it
 * throttles.
 * Return: the slice (0 if none was left), U64_MAX if no group of the chain has a quota.
 */
static u64 cos_group_take(struct cos_group_cpu *c, u64 id, u64 now, bool count)
{
	struct cos_group *g, *spent = NULL;
	u64 share = cos_group_share_left(id, now, count, &spent);

	if (share == U64_MAX)
		return share;
	share = min(share, COS_GROUP_RESERVE_NS);
	if (!share) {
		cos_group_throttle(spent, now);
		return 0;
	}
	for (g = cos_group_find(id); g && g->parent; g = g->parent) {
		guard(raw_spinlock_irqsave)(&g->lock);
		if (g->quota_ns != COS_GROUP_NO_QUOTA) {
			cos_group_roll(g, now);
			g->runtime -= share;
		}
	}
	c->reserved += share;
	c->reserved_at = now;
	return share;
}

/*
 * The unused @ns of a reservation taken at @at goes back to each group of @id's chain with a
 * quota whose period has not ended since.  Caller: IRQs off, RCU read side; takes the groups'
 * locks one at a time.
 */
static void cos_group_give_back(u64 id, u64 ns, u64 at, u64 now)
{
	struct cos_group *g;

	lockdep_assert_irqs_disabled();
	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "cos_group_give_back() outside RCU");
	for (g = cos_group_find(id); g && g->parent; g = g->parent) {
		guard(raw_spinlock_irqsave)(&g->lock);
		if (g->quota_ns == COS_GROUP_NO_QUOTA)
			continue;
		cos_group_roll(g, now);
		if (at >= g->period_end - g->period_ns)
			g->runtime = min_t(s64, g->runtime + ns, g->quota_ns + g->burst_ns);
	}
}

/**
 * cos_group_budget() - a task of cgroup @id starts on this CPU: its budget here
 * @id: the task's cgroup
 *
 * Records @id as this CPU's running cgroup (counted in its chain's @nr_running until
 * cos_group_stopped()).  Reserves this CPU's share of the chain's budget and arms this CPU's
 * budget timer for it (see "Reservation").  A chain with nothing left to reserve is throttled
 * (other CPUs hold the rest, and run on until theirs is used); the timer then ends the task's
 * slice at once.  With debugfs cos/bw_no_reserve the timer is armed for the share and nothing
 * is taken; with cos/bw_stop_at_tick no timer is armed.
 * Context: the shim's ops.running, the rq lock held, IRQs off; takes the groups' locks one at
 * a time, and cos_bw.lock when it throttles.
 * Return: the time the task may run here before the budget stops it: 0 if a group of the
 * chain is spent, U64_MAX if none has a quota or the timer takes the next slices; else the
 * share (the shim caps the task's slice at it).
 */
u64 cos_group_budget(u64 id)
{
	struct cos_group_cpu *c = this_cpu_ptr(&cos_group_cpus);
	bool reserve = cos_group_reserving();
	struct cos_group *spent;
	u64 now, share;

	lockdep_assert_irqs_disabled();	/* this CPU's record: its rq lock is held */
	if (!atomic_read(&cos_groups_limited))
		return U64_MAX;
	now = ktime_get_ns();
	scoped_guard(rcu)
		share = reserve ? cos_group_take(c, id, now, true) :
				  cos_group_share_left(id, now, true, &spent);
	WRITE_ONCE(c->cgid, id);
	if (share == U64_MAX || (!share && !reserve))
		return share;
	if (!READ_ONCE(cos_bw_stop_at_tick))	/* at once if none: the callback ends the slice */
		hrtimer_start(&c->timer, ns_to_ktime(share), HRTIMER_MODE_REL_PINNED_HARD);
	return reserve && share ? U64_MAX : share;
}

/**
 * cos_group_stopped() - the task cos_group_budget() saw start on this CPU stops
 *
 * Its chain counts this CPU out of @nr_running and gets back what this CPU reserved and did not
 * use (see "Reservation"; the stop's charge came first).  The groups are there still: a task's
 * cgroup cannot go while it runs there, and a cgroup move stops it first.
 * Context: the shim's ops.stopping, after cos_group_charge(), the rq lock held, IRQs off;
 * takes the groups' locks one at a time when a reservation is left.
 */
void cos_group_stopped(void)
{
	struct cos_group_cpu *c = this_cpu_ptr(&cos_group_cpus);
	u64 id, unused;
	struct cos_group *g;

	lockdep_assert_irqs_disabled();
	id = READ_ONCE(c->cgid);
	WRITE_ONCE(c->cgid, 0);
	unused = c->reserved;
	c->reserved = 0;
	/* its callback runs on this CPU, in hard IRQ: not now */
	hrtimer_try_to_cancel(&c->timer);
	if (!id)
		return;
	guard(rcu)();
	if (unused)
		cos_group_give_back(id, unused, c->reserved_at, ktime_get_ns());
	for (g = cos_group_find(id); g && g->parent; g = g->parent)
		atomic_dec(&g->nr_running);
}

/**
 * cos_group_running_throttled() - is the task running here in a throttled chain?
 *
 * As far as this CPU's record says (cos_group_budget()); one that holds a reservation for the
 * chain runs its task on until it is used (see "Reservation").  Context: this CPU, IRQs off.
 * Return: the nearest throttled group's id, 0 if none or while a reservation is left.
 */
u64 cos_group_running_throttled(void)
{
	u64 id;

	lockdep_assert_irqs_disabled();
	id = READ_ONCE(this_cpu_ptr(&cos_group_cpus)->cgid);
	return id && !this_cpu_ptr(&cos_group_cpus)->reserved ? cos_group_throttled(id) : 0;
}

/*
 * A CPU's budget timer (hard IRQ on that CPU): its task used its reservation, or its share of
 * the budget (cos_group_budget()).  While its chain has budget left, the next slice is
 * reserved and the task runs on; else the group is throttled (a stop's charge throttles it
 * without reservations) and the task's slice ends.
 */
static enum hrtimer_restart cos_group_cpu_timer_fn(struct hrtimer *timer)
{
	struct cos_group_cpu *c = this_cpu_ptr(&cos_group_cpus);
	u64 id = READ_ONCE(c->cgid), share = 0;

	if (id && cos_group_reserving()) {
		scoped_guard(rcu)
			share = cos_group_take(c, id, ktime_get_ns(), false);
		if (share == U64_MAX)	/* no quota any more: the task runs on */
			return HRTIMER_NORESTART;
		if (share) {
			hrtimer_forward_now(timer, ns_to_ktime(share));
			return HRTIMER_RESTART;
		}
	}
	cos_group_hooks->kick_spent();
	return HRTIMER_NORESTART;
}

/**
 * cos_group_share() - a task's effective weight for the fair policy's vtime
 * @id: the task's cgroup
 * @weight: its own weight (p->scx.weight, 100 at nice 0)
 *
 * @weight times, for each group of its chain below the root, the group's weight over the
 * weights of that group's active entities (see "Weight"); a root task's is @weight.  A sum
 * read below the entity's own weight (not counted yet, or read during a change) counts as
 * that weight: the task alone there.
 * Context: the shim's ops.stopping (the rq lock held, IRQs off); lock-free (the sums read
 * once each, a moment stale at worst; no lookup at all while every group weighs 100).
 * Return: the effective weight in 1/COS_GROUP_SHARE_ONE units, 1..10000 * COS_GROUP_SHARE_ONE.
 */
u64 cos_group_share(u64 id, u32 weight)
{
	const u64 max = 10000ULL * COS_GROUP_SHARE_ONE;
	u64 w = (u64)weight * COS_GROUP_SHARE_ONE;
	struct cos_group *g;
	u32 mine = weight;

	lockdep_assert_irqs_disabled();
	if (!atomic_read(&cos_groups_weighted))
		return w;
	guard(rcu)();
	for (g = cos_group_find(id); g && g->parent; g = g->parent) {
		s64 sum = READ_ONCE(g->active_weight);
		u32 gw = READ_ONCE(g->weight);

		w = clamp_t(u64, w * gw / max_t(s64, sum, mine ?: 1), 1, max);
		mine = gw;
	}
	return w;
}

/**
 * cos_group_released() - take one refilled group whose parked tasks go back to the fair queue
 *
 * Context: the shim's ops.dispatch; takes cos_bw.lock when the list is not empty.
 * Return: its cgroup id, 0 if none.
 */
u64 cos_group_released(void)
{
	struct cos_group *g;

	if (list_empty_careful(&cos_bw.released))
		return 0;
	guard(raw_spinlock_irqsave)(&cos_bw.lock);
	g = list_first_entry_or_null(&cos_bw.released, struct cos_group, node);
	if (!g)
		return 0;
	list_del_init(&g->node);
	return g->id;
}

static void cos_group_info_fill(struct cos_group_info *info, struct cos_group *g)
{
	u64 now, usage = 0;
	int cpu;

	for_each_possible_cpu(cpu)	/* each CPU's count is one aligned word: no torn reads */
		usage += READ_ONCE(*per_cpu_ptr(g->usage, cpu));

	guard(raw_spinlock_irqsave)(&cos_bw.lock);
	guard(raw_spinlock)(&g->lock);
	now = ktime_get_ns();	/* under the locks: not before a throttled_at set meanwhile */
	if (g->quota_ns != COS_GROUP_NO_QUOTA)
		cos_group_roll(g, now);
	*info = (struct cos_group_info){
		.id = g->id,
		.parent_id = g->parent ? g->parent->id : 0,
		.period_ns = g->period_ns,
		.quota_ns = g->quota_ns,
		.burst_ns = g->burst_ns,
		.runtime_ns = g->runtime,
		.usage_ns = usage,
		.last_usage_ns = g->last_usage,
		.throttled_ns = g->throttled_ns + (g->throttled ? now - g->throttled_at : 0),
		.nr_throttled = g->nr_throttled,
		.overrun_ns = g->overrun_ns,
		.weight = READ_ONCE(g->weight),
		.flags = g->throttled ? COS_GROUP_F_THROTTLED : 0,
	};
}

/**
 * cos_ioc_get_groups() - COS_IOC_GET_GROUPS: copy out a batch of groups, in cgroup id order
 * @uarg: user pointer to struct cos_groups_args
 *
 * Context: process context, may sleep and fault.  Allocates a bounded bounce buffer
 * (COS_GROUPS_BATCH_MAX entries) and fills it under RCU, taking each group's locks (cos_bw.lock,
 * g->lock, IRQs off) in turn; copies it out after.
 * Return: 0, -EINVAL (size, flags, capacity), -EFAULT, -ENOMEM.
 */
long cos_ioc_get_groups(void __user *uarg)
{
	long usize = cos_user_size(uarg, COS_GROUPS_ARGS_SIZE_VER0);
	struct cos_groups_args args;
	struct cos_group_info *buf;
	struct cos_group *g;
	unsigned long id;
	u32 n = 0, cap;
	int ret;

	if (usize < 0)
		return usize;
	ret = cos_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || !args.capacity)
		return -EINVAL;
	cap = min_t(u32, args.capacity, COS_GROUPS_BATCH_MAX);
	buf = kvmalloc_array(cap, sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	args.next = 0;
	if (args.start <= ULONG_MAX) {
		guard(rcu)();
		xa_for_each_start(&cos_groups, id, g, args.start) {
			if (n == cap) {
				args.next = id;
				break;
			}
			cos_group_info_fill(&buf[n++], g);
		}
	}
	args.count = n;
	if (copy_to_user(u64_to_user_ptr(args.groups), buf, array_size(n, sizeof(*buf))))
		ret = -EFAULT;
	else
		ret = cos_copy_out(uarg, usize, &args, sizeof(args));
	kvfree(buf);
	return ret;
}

/**
 * cos_group_hold_throttled() - keep group @id throttled while a COS task is told so
 * @id: the group TASK_THROTTLED is about to name
 * @first: set when the lord was not told yet that @id is throttled (post GROUP_THROTTLED first)
 *
 * On true, cos_bw.lock is held (IRQs off) until cos_group_unhold(): the caller posts its
 * messages meanwhile, and the release, which posts GROUP_UNTHROTTLED under the same lock, comes
 * after them in the ring.  On false the group is no longer throttled (nothing held).
 * Context: a COS task's enqueue or shoot, its t->lock held (t->lock -> cos_bw.lock), IRQs off.
 */
bool cos_group_hold_throttled(u64 id, bool *first)
{
	struct cos_group *g;

	lockdep_assert_irqs_disabled();
	*first = false;
	guard(rcu)();
	g = cos_group_find(id);
	if (!g)
		return false;
	raw_spin_lock(&cos_bw.lock);
	if (!g->throttled) {
		raw_spin_unlock(&cos_bw.lock);
		return false;
	}
	*first = !g->lord_told;
	g->lord_told = true;
	return true;
}

/*
 * A COS task in the custody of enclave @idx (its registry index) is told it waits for group
 * @id, held throttled by cos_group_hold_throttled() (see "Parked").  Caller holds cos_bw.lock
 * (the hold).
 */
void cos_group_park(u64 id, u32 idx)
{
	struct cos_group *g;

	lockdep_assert_held(&cos_bw.lock);
	if (WARN_ON_ONCE(idx >= COS_ENCLAVES_MAX))
		return;
	guard(rcu)();
	g = cos_group_find(id);
	if (g) {	/* the hold found it: found again */
		g->nr_parked[idx]++;
		atomic_inc(&cos_groups_parked[idx]);
	}
}

/*
 * A task cos_group_park() counted for group @id and enclave @idx no longer waits for it
 * (placed, gone, or waiting afresh).  Context: its t->lock held (t->lock -> cos_bw.lock), IRQs
 * off; takes cos_bw.lock.
 */
void cos_group_unpark(u64 id, u32 idx)
{
	struct cos_group *g;

	if (WARN_ON_ONCE(idx >= COS_ENCLAVES_MAX))
		return;
	guard(rcu)();
	g = cos_group_find(id);
	if (!g)		/* gone: cos_group_exit() took its count out */
		return;
	guard(raw_spinlock_irqsave)(&cos_bw.lock);
	if (!WARN_ON_ONCE(!g->nr_parked[idx])) {
		g->nr_parked[idx]--;
		if (g->throttled)
			atomic_dec(&cos_groups_parked[idx]);
	}
}

/*
 * Tasks in the custody of enclave @idx that wait for a group throttled now (see "Parked").
 * Lock-free.
 */
int cos_groups_parked_now(u32 idx)
{
	return idx < COS_ENCLAVES_MAX ? atomic_read(&cos_groups_parked[idx]) : 0;
}

/* The end of cos_group_hold_throttled()'s hold: drops cos_bw.lock. */
void cos_group_unhold(void)
{
	lockdep_assert_held(&cos_bw.lock);
	raw_spin_unlock(&cos_bw.lock);
}

/**
 * cos_group_ready_since() - since when a task that waits on group @id could have been shot
 * @id: the group TASK_THROTTLED named
 * @since: when the task started waiting
 *
 * For the starvation check: a task cannot starve while its group is throttled (now), nor
 * before its group's release.  Context: any, IRQs off; lock-free (one group's words).
 * Return: a time comparable with ktime_get_ns().
 */
u64 cos_group_ready_since(u64 id, u64 since)
{
	struct cos_group *g;

	guard(rcu)();
	g = cos_group_find(id);
	if (!g)
		return since;
	if (READ_ONCE(g->throttled))
		return ktime_get_ns();
	return max(since, READ_ONCE(g->released_at));
}

/* Module init: @hooks are cos_task.c's (struct cos_group_hooks). */
void cos_groups_init(const struct cos_group_hooks *hooks)
{
	int cpu;

	cos_group_hooks = hooks;
	hrtimer_setup(&cos_bw.timer, cos_group_timer_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_HARD);
	for_each_possible_cpu(cpu)
		hrtimer_setup(&per_cpu_ptr(&cos_group_cpus, cpu)->timer, cos_group_cpu_timer_fn,
			      CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
}

/**
 * cos_groups_clear() - forget every group
 *
 * The shim left (sched_ext exits every cgroup before ops.exit, so normally nothing is left), or
 * the module goes; no op runs any more, and the CPUs' budget timers are cancelled.
 * Context: process context; takes the table's lock and cos_bw.lock.
 */
void cos_groups_clear(void)
{
	struct cos_group *g;
	unsigned long id;
	int cpu;

	/* a parent may exit before its child: keep every group freed meanwhile until the end */
	scoped_guard(rcu)
		xa_for_each(&cos_groups, id, g)
			cos_group_exit(id);
	for_each_possible_cpu(cpu) {
		struct cos_group_cpu *c = per_cpu_ptr(&cos_group_cpus, cpu);

		hrtimer_cancel(&c->timer);	/* waits out a callback that restarts it */
		WRITE_ONCE(c->cgid, 0);
		c->reserved = 0;
	}
}

/* Module exit: no shim is attached (it holds a module reference). */
void cos_groups_exit(void)
{
	cos_groups_clear();
	hrtimer_cancel(&cos_bw.timer);
	rcu_barrier();		/* the cos_group_free()s of cos_group_exit() */
}
