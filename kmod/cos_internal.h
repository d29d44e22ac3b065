/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos_internal.h — declarations shared by the files of cos.ko.  Not an ABI: that is
 * uapi/linux/cos.h.  See docs/design.md, "Locking" and "Which file owns what".
 *
 * Locking.  No lock of cos.ko is taken for a task that is not a COS task, and none is
 * machine-wide on a COS task's scheduling path.  Every lock is a raw spinlock taken with IRQs
 * off, except shoot_mutex.  The locks, outermost first:
 *
 *   cos_register_mutex (global, cos_lord.c)  serialises COS_IOC_REGISTER_LORD: a file's
 *       "registered once" check and its publication of the enclave.
 *   e->shoot_mutex (per enclave; cos_shoot.c, cos_lord.c)  serialises shoot commits with
 *       cos_unregister().  Both use e->kick_mask; a commit re-checks e->registered under it.
 *   cos_lock (global, cos_slot.c)  the registry of enclaves (cos_enclaves[], cos_cpu_owner[],
 *       cos_owned_cpus, cos_lord_pids[]; RCU-published) and the shim's binding and presence
 *       (cos_kfuncs.c).  Taken by REGISTER_LORD, UNREGISTER,
 *       GET_INFO, GET_ENCLAVES, SHIM_BIND, ops.init/exit, the lord thread's exit and CPU
 *       hotplug, to find an enclave and keep it registered.  Never by a shoot, a WAIT, the
 *       stall timer or a task's scheduling event.
 *   e->lock (per enclave, struct cos_enclave)  the lord's side of one enclave: active,
 *       lord_dead, registered, orphaned, offline, the stall bookkeeping, its counters, and
 *       the growth of the latches of its CPUs.  Taken by its SHOOT and WAIT, its stall
 *       hrtimer, and inside cos_lock by the registry's paths above.
 *   t->lock (per task slot, struct cos_slot)  the slot's fields, its status entry, and the
 *       pending/taken words that name it.  Taken by every kfunc about a COS task (rq lock or
 *       pi_lock held), the shoot of that task, ops.dispatch when something was shot to its
 *       CPU, ops.yield for the task a yield hands its CPU to (after the yielder's own t->lock
 *       is dropped), the fallback and GET_TASKS.  One at a time, except COS_SHOOT_F_REPLACE: under
 *       e->lock, the shot task's, then the replaced one's, nested (cos_pending_replace()).
 *   custody lock (per CPU, cos_custody.c)  that CPU's custody list and its tasks'
 *       t->custody_cpu.  Taken inside t->lock when a task starts or stops waiting; alone by the
 *       fallback (pop, drop, then t->lock) and the starvation check.
 *   latch lock (per CPU, cos_cpu.c)  that CPU's latch, its tasks' t->latch_cpu, and armed.
 *       Taken inside t->lock by the shoot, by whatever takes a task off a latch (dequeue,
 *       detach, fallback, offline) and by ops.running there.  Alone by that CPU's ops.dispatch:
 *       peek, drop, t->lock, then the latch lock again (never the other way round).
 *   cos_fallback_lock (global, cos_custody.c)  the fallback list, t->fallback and
 *       cos_fallback_pending.  Taken inside t->lock, or alone by ops.dispatch when the list is
 *       not empty.
 *   cos_slots_lock (global, cos_slot.c)  the free-slot FIFO, the task count, the slots per
 *       user.  Taken alone, by attach and detach.
 *   cos_bw.lock (global, cos_group.c)  the throttled and released group lists, each group's
 *       throttled, lord_told, nr_parked and throttle times, the refill timer's expiry.  Taken
 *       when a group runs out or is refilled, and by ops.dispatch when a group was released.
 *       Also inside t->lock while a COS task is told it is throttled (cos_group_hold_throttled()):
 *       the release's GROUP_UNTHROTTLED, posted under it too, cannot overtake that
 *       TASK_THROTTLED; and when a parked task stops waiting (cos_group_unpark()).
 *   g->lock (per group, cos_group.c)  the group's budget.  Taken alone by the charge (each
 *       ops.stopping/tick in a limited group) and the reservation, or inside cos_bw.lock.
 *   g->share_lock (per group, cos_group.c)  the group's runnable count and active weight for
 *       cpu.weight.  Taken alone, one group at a time.
 *   The group xarray's own lock is taken only in process context (ops.cgroup_init/exit).
 *
 * Order: rq lock (or pi_lock) -> t->lock.  cos_register_mutex -> shoot_mutex -> cos_lock -> e->lock -> t->lock -> custody lock |
 * latch lock | cos_fallback_lock (never two of the last three at once).  t->lock -> cos_bw.lock
 * -> g->lock.
 *
 * The message ring is lock-free (multi-producer, cos_post()).  An enclave is freed only after
 * an RCU grace period (cos_lord_release()): the scheduling path reads the registry with IRQs
 * off, an RCU-sched read side.  Nothing under these locks takes an rq lock, sleeps, allocates
 * or wakes anybody up: wake-ups go through irq_work, kicks are sent after unlocking.
 */
#ifndef _KMOD_COS_H
#define _KMOD_COS_H

#include <linux/atomic.h>
#include <linux/cleanup.h>
#include <linux/cos.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "cos_shim_intf.h"

extern raw_spinlock_t cos_lock;
extern unsigned int cos_max_tasks;

/*
 * Module-private state of one task slot; entry i of its enclave's status table is its
 * user-visible mirror (cos_status_sync()).  Every
 * field is written under @lock (see the lock list above); @p is also read lock-free
 * (cos_task_slice()).
 */
struct cos_slot {
	raw_spinlock_t lock;
	struct task_struct *p;	/* valid while state != FREE: the shim detaches in exit_task */
	u32 uid;		/* its user when it got the slot (cos_slots_lock) */
	u64 slot_cgid;		/* its cgroup then (cos_slots_lock): the slot counts there */
	u32 gen;		/* bumped when the slot gets a new task */
	u32 state;		/* enum cos_task_state */
	s32 cpu;		/* queued/running/last CPU */
	u32 next_msg;		/* message for the next enqueue: PREEMPTED/YIELD, else RUNNABLE */
	u64 next_arg;
	u32 waker;		/* the next RUNNABLE's cos_msg.waker (cos_ring_write() clears it) */
	u64 last_seq;		/* seq of the last message about this task */
	u64 last_ts;		/* when it was posted (0: none yet) */
	u32 last_msg;		/* its type (COS_MSG_NONE: none yet) */
	u64 run_start;		/* se.sum_exec_runtime when it started running */
	u64 runtime;		/* CPU time as a COS task */
	u64 slice;		/* slice of the pending shoot */
	u64 slice_left;		/* what it had left of @slice when preempted (0: no limit) */
	bool displaced;		/* preempted by an urgent task the wake rules started */
	u64 waiting_since;	/* when it last became WAITING (for the starvation check) */
	u64 cgid;		/* its cgroup (bandwidth group) at its last enqueue */
	u64 throttled_gid;	/* the group TASK_THROTTLED named, while it waits for it; else 0 */
	u32 throttled_idx;	/* with @throttled_gid: the enclave (registry index) it was parked in */
	/*
	 * While WAITING or QUEUED: on the custody list of CPU @custody_cpu (else -1), in
	 * waiting_since order; both under that CPU's custody lock (and written under @lock too,
	 * except by the fallback's pop).
	 */
	s32 custody_cpu;
	/* whose custody list, while custody_cpu >= 0; whose nr_waiting counts it, while WAITING */
	struct cos_enclave *custody_enclave;
	struct list_head custody_node;
	/*
	 * While QUEUED in a CPU's latch (COS_SHOOT_F_LATCH): that CPU, else -1; written under
	 * @lock and that latch's lock, read under either.
	 */
	s32 latch_cpu;
	/* In custody but handed to the fair policy: the shim must take it (cos_fallback_lock). */
	bool fallback;
	struct list_head fallback_node;
	/* QUEUED by the wake rules (cos_wake_place()), not by a shoot; under @lock. */
	bool placed;
	/*
	 * Marked urgent by its lord's last shoot (COS_SHOOT_F_URGENT): written under @lock, read
	 * lock-free by COS_WAKE_PREEMPT and COS_WAKE_NEXT (cos_wake_preempts(),
	 * cos_cpu_preemptible(), cos_cpu_next_open()).
	 */
	bool urgent;
	/*
	 * The enclave the task belongs to, as its lord was told (TASK_NEW, RUNNABLE): its id
	 * (0: none) and registry index; under @lock.  cos_task_enclave() finds it while it is
	 * registered; cos_task_rehome() moves the task when its affinity says another.
	 */
	u32 home_id;
	u32 home_idx;
};

/* One CPU's custody list of an enclave: WAITING and QUEUED tasks, oldest waiting first. */
struct cos_custody {
	raw_spinlock_t lock;
	struct list_head tasks;
};

/* The oldest task in custody, as the stall check reports it (cos_custody_oldest()). */
struct cos_waiting {
	u64 since;
	pid_t pid;
	u32 state;
	s32 cpu;
};

/* e->head: the ring is in overflow (dropping) */
#define COS_RING_OVF	BIT_ULL(63)

/* An enclave: one lord, its CPUs, its tasks (see docs/design.md, "Several enclaves"). */
struct cos_enclave {
	raw_spinlock_t lock;		/* the lord's side of the enclave (see the lock list) */
	u32 id;				/* struct cos_lord_args.enclave_id (never 0) */
	u32 idx;			/* its index in cos_enclaves[] while registered */
	char name[COS_ENCLAVE_NAME_LEN];	/* NUL-terminated, [A-Za-z0-9_.-] */
	struct task_struct *lord;	/* the lord thread (referenced) */
	pid_t lord_tgid;
	s32 lord_cpu;
	bool registered;		/* false after unregister/release (under e->lock, cos_lock
					 * and shoot_mutex) */
	bool active;			/* the lord has control (false while stalled or gone); under
					 * e->lock, read by cos_task_wait() under a custody lock */
	bool lord_dead;			/* the lord thread exited: never active again */
	bool orphaned;			/* the shim's binding was orphaned: not active until a
					 * shim attaches again (cos_lord_orphaned_locked());
					 * under e->lock */
	u32 flags;			/* COS_LORD_F_* */
	cpumask_var_t cpus;
	cpumask_var_t offline;		/* of cpus and lord_cpu, the offline ones (under e->lock) */
	cpumask_var_t lord_saved_mask;	/* the lord's affinity before registration */

	/*
	 * COS_IOC_SHOOT scratch, preallocated: no allocation per shoot.  shoot_mutex serialises the
	 * commits and cos_unregister(), which uses kick_mask too and clears @registered under it.
	 */
	struct mutex shoot_mutex;
	cpumask_var_t shoot_mask;
	cpumask_var_t kick_mask;
	cpumask_var_t latch_kick;	/* the commit's latches to CPUs not armed (shoot_mutex) */
	cpumask_var_t timer_kick;	/* the stall timer's (under e->lock) */
	cpumask_var_t exit_kick;	/* the lord's exit's (cos_lord_exited(), once) */

	/* ring: lock-free producers (cos_post()) */
	struct cos_msg *ring;
	u32 ring_entries;
	atomic64_t head;		/* seq of the last message reserved, | COS_RING_OVF */
	atomic64_t ovf_dropped;		/* messages dropped in this overflow */
	atomic64_t dropped;		/* messages dropped in all (ctl->dropped) */
	atomic64_t urgent;		/* COS_LORD_F_LAZY_WAKE: the newest seq that woke the lord */
	/*
	 * Its tasks in COS_TASK_WAITING: the wake rules apply only while none waits, so that a
	 * waking task never passes one the lord has not placed yet.  Changed under the task's
	 * t->lock (cos_task_wait(), cos_task_set_state()), read lock-free.  One count per enclave:
	 * nothing on a task's path is shared by every enclave's tasks.
	 */
	atomic_t nr_waiting;
	struct cos_custody __percpu *custody;	/* its tasks in custody, by enqueuing CPU */

	struct cos_task_status *status;	/* its tasks' entries, by slot (mapped read-only) */
	struct cos_shoot_slot *shoot;	/* nr_cpu_ids slots */
	struct cos_ctl *ctl;

	/* GET_ENCLAVES' counters, under e->lock (the module's sums are cos_counters) */
	u64 placed, refused, fallbacks;

	/* stall detection */
	u64 stall_ns;
	u64 starve_ns;
	u64 starve_checked_at;
	u64 seen_consumed;		/* ctl->consumed at the last check */
	u64 seen_runtime;		/* the lord thread's sum_exec_runtime at the last check */
	u64 seen_at;			/* when either last changed (or messages became pending) */
	struct hrtimer stall_timer;
	char stall_report[192];		/* the timer's, for the log after it drops e->lock */

	/* COS_IOC_WAIT */
	wait_queue_head_t wq;
	struct irq_work wake_work;

	/*
	 * The lord thread's exit (under an rq lock, where nothing may wake a worker) queues
	 * exit_irq, which queues exit_work, which unregisters the enclave in process context:
	 * a new lord may register at once, though the dead one's file is still open.
	 */
	struct irq_work exit_irq;
	struct work_struct exit_work;
	atomic_t waiters;
};

/*
 * Counters for COS_IOC_GET_INFO, since load: placed and refused per CPU (each commit adds to
 * its CPU's, under its enclave's e->lock, IRQs off: no line shared by two lords), fallbacks
 * and stalls atomic (rare); tasks under cos_slots_lock (read without it: a snapshot may
 * tear).  Messages (per CPU) and dropped (atomic) are cos_ring.c's.
 */
struct cos_counters {
	atomic64_t fallbacks, stalls;
	u32 tasks;
};
struct cos_shoot_counts {
	u64 placed, refused;
};
DECLARE_PER_CPU(struct cos_shoot_counts, cos_shoot_counts);

/*
 * The registry (cos_slot.c; written under cos_lock by cos_lord.c, read under it or RCU-sched):
 * the registered enclaves by index; for each CPU of an enclave, that enclave; the union of
 * their CPUs; each index's lord thread id (0: none), for the lock-free "is it a lord?".
 * Registration publishes an enclave's owner words before its bits in cos_owned_cpus, and
 * unregistration clears the bits first: a reader that races with either finds the enclave or
 * none, never a freed one (cos_lord_release() waits for RCU-sched readers before the free).
 */
extern struct cos_enclave __rcu *cos_enclaves[COS_ENCLAVES_MAX];
extern struct cos_enclave __rcu **cos_cpu_owner;
extern struct cpumask cos_owned_cpus;
extern pid_t cos_lord_pids[COS_ENCLAVES_MAX];
extern atomic_t cos_lords_active;	/* enclaves whose lord has control (e->active) */
extern u32 cos_fallback_pending;		/* cos_custody.c's; under cos_fallback_lock: tasks
						 * with ->fallback */

/* Registry index @i's enclave.  Context: cos_lock held. */
static inline struct cos_enclave *cos_registry(int i)
{
	return rcu_dereference_protected(cos_enclaves[i], lockdep_is_held(&cos_lock));
}

/*
 * The enclave task @p's allowed CPUs put it in (the first CPU an enclave owns), or NULL.
 * cos_owned_cpus is read racily: a registration or unregistration in flight gives the enclave
 * or none.  Context: RCU-sched (IRQs off: the scheduling path) or cos_lock; lock-free.
 */
static inline struct cos_enclave *cos_task_home(const struct task_struct *p)
{
	unsigned int cpu = data_race(cpumask_first_and(p->cpus_ptr, &cos_owned_cpus));

	return cpu < nr_cpu_ids ? rcu_dereference_sched(cos_cpu_owner[cpu]) : NULL;
}

/* The registered enclave at index @idx with id @id, or NULL.  Context: RCU-sched; lock-free. */
static inline struct cos_enclave *cos_enclave_at(u32 idx, u32 id)
{
	struct cos_enclave *e;

	if (!id || idx >= COS_ENCLAVES_MAX)
		return NULL;
	e = rcu_dereference_sched(cos_enclaves[idx]);
	return e && e->id == id ? e : NULL;
}

/*
 * The enclave whose lord was told of @t (t->home_id) while it is registered, or NULL: where
 * its events are posted.  Context: @t->lock held, IRQs off (RCU-sched); lock-free.
 */
static inline struct cos_enclave *cos_task_enclave(const struct cos_slot *t)
{
	return cos_enclave_at(t->home_idx, t->home_id);
}

/* Is @p a registered lord thread?  Context: any, IRQs off; lock-free (COS_ENCLAVES_MAX reads). */
static inline int cos_lord_index(const struct task_struct *p)
{
	int i;

	for (i = 0; i < COS_ENCLAVES_MAX; i++)
		if (p->pid && READ_ONCE(cos_lord_pids[i]) == p->pid)
			return i;
	return -1;
}
extern struct cos_counters cos_counters;
extern struct cos_slot *cos_slots;
/* Defined in cos_slot.c, written by cos_lord.c under cos_lock, read with READ_ONCE. */
extern bool cos_shim_attached;
extern u32 cos_shim_caps;

/*
 * The files, bottom up; each calls only the ones before it (no call loop):
 *   cos_trace.c    cos_lord.c's tracepoints, out of line (the others call theirs inline)
 *   cos_uaccess.c  ioctl argument copies
 *   cos_group.c    CPU bandwidth groups: cgroups' cpu.max and cpu.weight, the budget engine
 *   cos_slot.c     the task table (slots, per-user limits) and the state the files share
 *   cos_ring.c     the message ring's producer side and the status table
 *   cos_custody.c  the custody and fallback lists; a task's state changes
 *   cos_cpu.c      each CPU's pending, taken and running task, its latch, the kicks
 *   cos_task.c     the verbs about a task (the shim's events), the shoot, GET_TASKS
 *   cos_lord.c     the lord: registration, regions, WAIT, stall, fallback, the shim's coming
 *                  and going
 *   cos_shoot.c    COS_IOC_SHOOT (ioctl and io_uring)
 *   cos_kfuncs.c   the shim's kfuncs: adapters onto the files above
 *   cos_main.c     module init/exit and /dev/cos
 */

/*
 * Test delays (debugfs cos/delay_*, microseconds, 0 = none; cos_main.c): each widens one race
 * window for the tests.  cos_test_delay() sleeps (process context); cos_test_delay_atomic()
 * spins (any context).  Each costs one read when off.
 */
static inline void cos_test_delay(const u32 *us)
{
	u32 v = READ_ONCE(*us);

	if (unlikely(v))
		fsleep(v);
}

static inline void cos_test_delay_atomic(const u32 *us)
{
	u32 v = READ_ONCE(*us);

	if (unlikely(v))
		udelay(v);
}

/* cos_trace.c: the tracepoints cos_lord.c fires (kmod/cos_trace.h has each one's context) */
void cos_trace_stall(struct cos_enclave *e, u64 reason);
void cos_trace_fallback(struct cos_enclave *e, u32 tasks);
void cos_trace_enclave(struct cos_enclave *e, bool registered);

/* cos_uaccess.c (process context, may fault) */
long cos_user_size(const void __user *uarg, size_t min_size);
int cos_copy_in(void *kbuf, u32 ksize, const void __user *uarg, u32 usize);
int cos_copy_out(void __user *uarg, u32 usize, void *kbuf, u32 ksize);
int cos_copy_cpumask(struct cpumask *mask, const void __user *umask, u32 size);

/*
 * cos_group.c: bandwidth groups, named by cgroup id.  What it needs of the files above it comes
 * as hooks, set once at module init (cos_task.c's):
 * @unthrottled posts GROUP_UNTHROTTLED for group @id (called under cos_bw.lock, IRQs off).
 * @kick_idle makes every idle CPU reschedule (after cos_bw.lock is dropped).
 * @kick_spent ends the slice of what runs on this CPU (a budget timer, hard IRQ).
 * @kick_throttled makes @cpu end its task's slice if that task's chain is throttled (a charge,
 * IRQs off, under no lock of cos_group.c).
 */
struct cos_group_hooks {
	void (*unthrottled)(u64 id);
	void (*kick_idle)(void);
	void (*kick_spent)(void);
	void (*kick_throttled)(int cpu);
};
extern bool cos_bw_stop_at_tick;
extern bool cos_bw_no_reserve;
extern atomic_t cos_group_init_fail;
void cos_groups_init(const struct cos_group_hooks *hooks);
void cos_groups_exit(void);
void cos_groups_clear(void);
int cos_group_init(u64 id, u64 parent_id, u32 weight);
void cos_group_exit(u64 id);
void cos_group_set_bandwidth(u64 id, u64 period_us, u64 quota_us, u64 burst_us);
void cos_group_set_weight(u64 id, u32 weight);
bool cos_group_charge(u64 id, u64 ns);
u64 cos_group_throttled(u64 id);
u64 cos_group_budget(u64 id);
void cos_group_stopped(void);
u64 cos_group_running_throttled(void);
void cos_group_runnable(u64 id, u32 weight);
void cos_group_quiescent(u64 id, u32 weight);
u64 cos_group_share(u64 id, u32 weight);
u64 cos_group_released(void);
long cos_ioc_get_groups(void __user *uarg);
bool cos_group_hold_throttled(u64 id, bool *first);
void cos_group_unhold(void);
void cos_group_park(u64 id, u32 idx);
void cos_group_unpark(u64 id, u32 idx);
int cos_groups_parked_now(u32 idx);
u64 cos_group_ready_since(u64 id, u64 since);

/* cos_slot.c: the task table and the state the module shares */
int cos_slots_init(void);
void cos_slots_exit(void);
bool cos_slots_full(void);
struct cos_slot *cos_slot_alloc(u32 uid, u64 cgid);
void cos_slot_release(struct cos_slot *t);
static inline u32 cos_slot_nr(const struct cos_slot *t) { return t - cos_slots; }
/* Slot @slot's entry, or NULL for a slot number out of range.  Context: any. */
static inline struct cos_slot *cos_slot_at(s32 slot)
{
	return slot >= 0 && slot < cos_max_tasks ? &cos_slots[slot] : NULL;
}
static inline bool cos_cpu_valid(s32 cpu)
{
	return cpu >= 0 && cpu < nr_cpu_ids;
}

/* cos_ring.c: the message ring's producer side and the status table */
void cos_status_sync(struct cos_slot *t);
void cos_status_leave(struct cos_enclave *e, struct cos_slot *t);
void cos_post(struct cos_enclave *e, u32 type, s32 cpu, struct cos_slot *t, u64 arg);
void cos_post_lazy(struct cos_enclave *e, u32 type, s32 cpu, struct cos_slot *t, u64 arg);
void cos_ring_wake_now(struct cos_enclave *e);
void cos_ring_poke(struct cos_enclave *e);
u64 cos_ring_produced(struct cos_enclave *e);
u64 cos_ring_pending_to(struct cos_enclave *e);
u64 cos_messages_total(void);
u64 cos_dropped_total(void);

/* cos_custody.c: the custody and fallback lists, a task's state changes */
int cos_custody_alloc(struct cos_enclave *e);
void cos_custody_free(struct cos_enclave *e);
int cos_tasks_waiting(struct cos_enclave *e);
void cos_task_unpark(struct cos_slot *t);
void cos_task_set_state(struct cos_slot *t, u32 state);
bool cos_task_wait(struct cos_slot *t, struct cos_enclave *e);
void cos_fallback_add(struct cos_slot *t);
s32 cos_fallback_take(void);
struct cos_slot *cos_custody_pop(struct cos_enclave *e, int cpu);
bool cos_custody_oldest(struct cos_enclave *e, struct cos_waiting *oldest);

/* cos_cpu.c: each CPU's pending, taken and running task, its latch, the kicks */
extern u32 cos_delay_latch_take_us;
int cos_cpus_init(void);
void cos_cpus_exit(void);
int cos_hold_dispatch(int cpu);
int cos_held_cpu(void);
void cos_kick_cpus(const struct cpumask *cpus);
void cos_kick_shot_cpus(const struct cpumask *cpus);
void cos_kick_latch_cpus(const struct cpumask *cpus);
void cos_kick_idle(void);
void cos_kick_spent(void);
void cos_kick_throttled(int cpu);
bool cos_latch_remove(struct cos_slot *t);
bool cos_latch_resume(struct cos_slot *t, s32 cpu, bool displaced);
bool cos_latch_next(struct cos_slot *t, s32 cpu, u32 enclave_id);
bool cos_latch_room(struct cos_enclave *e, const struct cos_slot *t, s32 cpu);
bool cos_pending_forget(struct cos_slot *t);
void cos_pending_clear(struct cos_slot *t);
bool cos_pending_none(s32 cpu);
bool cos_cpu_shot(s32 cpu, const struct cos_slot *t);
bool cos_cpu_shot_by(s32 cpu, const struct cos_enclave *e);
void cos_taken_clear(s32 cpu);
void cos_taken_forget(struct cos_slot *t);
bool cos_cpu_pending(s32 cpu, const struct cos_slot *t);
bool cos_cpu_free(s32 cpu);
bool cos_cpu_preemptible(s32 cpu, u32 enclave_id);
bool cos_cpu_next_open(s32 cpu, u32 enclave_id);
bool cos_cpu_displacing(s32 cpu);
bool cos_taken_claim(s32 cpu, struct cos_slot *t);
bool cos_pending_hand(struct cos_slot *t, s32 cpu);
void cos_cpu_running(s32 cpu, struct cos_slot *t);
void cos_cpu_placed_running(s32 cpu, struct task_struct *p);
void cos_cpu_stopped(s32 cpu, struct cos_slot *t);
struct task_struct *cos_dispatch_take(s32 cpu, u64 *slice);
bool cos_pending_put(struct cos_enclave *e, struct cos_slot *t, s32 cpu, u32 flags, bool *kick);
void cos_pending_cancel(struct cos_enclave *e, s32 cpu);
pid_t cos_pending_pid(s32 cpu);

/* cos_task.c: the verbs about a task, the shoot, the fallback, GET_TASKS */
extern bool cos_no_displaced_resume;
int cos_tasks_init(void);
void cos_tasks_exit(void);
s32 cos_task_attach(struct task_struct *p, bool runnable);
void cos_task_detach(struct task_struct *p, s32 slot);
s32 cos_task_select_cpu(struct task_struct *p, s32 slot, s32 prev_cpu,
			const struct cpumask *idle);
enum cos_enq cos_task_enqueue(struct task_struct *p, s32 slot, bool wake, u64 cgid);
extern const struct cos_group_hooks cos_task_group_hooks;
void cos_task_dequeue(struct task_struct *p, s32 slot);
u64 cos_task_slice(struct task_struct *p, s32 slot);
void cos_dispatch_failed(struct task_struct *p, s32 slot, s32 cpu);
void cos_task_running(struct task_struct *p, s32 slot, s32 cpu);
void cos_task_stopping(struct task_struct *p, s32 slot, bool runnable);
void cos_task_quiescent(struct task_struct *p, s32 slot, bool sleep);
bool cos_task_yield(struct task_struct *p, s32 slot);
void cos_task_affinity(struct task_struct *p, s32 slot);
pid_t cos_slot_pid(struct cos_enclave *e, u32 slot, u32 gen);
u32 cos_task_shoot(struct cos_enclave *e, u32 slot, u32 gen, s32 cpu, u64 slice, u64 consumed,
		   u32 flags, bool *kick);
u32 cos_fallback_all(struct cos_enclave *e);
long cos_ioc_get_tasks(void __user *uarg);

/* cos_lord.c: registration, regions, stall, fallback */
long cos_ioc_register_lord(struct file *file, void __user *uarg);
long cos_ioc_get_enclaves(void __user *uarg);
long cos_ioc_unregister(struct file *file);
long cos_ioc_wait(struct file *file, void __user *uarg);
int cos_lord_mmap(struct file *file, struct vm_area_struct *vma);
void cos_lord_release(struct file *file);
void cos_fallback_locked(struct cos_enclave *e, struct cpumask *kick);
void cos_stall_locked(struct cos_enclave *e, u64 reason, struct cpumask *kick);
bool cos_lord_consumed(struct cos_enclave *e, u64 consumed);
void cos_lord_shim_changed_locked(bool attached, u32 caps);
void cos_lord_orphaned_locked(struct cpumask *kick);
void cos_lord_info(struct cos_info *info);
s32 cos_lord_first_cpu(void);
void cos_lord_exited(struct task_struct *p);
void cos_lord_cpu_hotplug(s32 cpu, bool online);
extern atomic_t cos_enclaves_live;
extern u32 cos_delay_register_us, cos_delay_release_us, cos_delay_exit_work_us;

/*
 * The enclave of a lord's /dev/cos file, or NULL: published once by COS_IOC_REGISTER_LORD
 * (smp_store_release, once the enclave is set up and registered), cleared only by the file's
 * release, when no ioctl or mmap of it can be running.
 */
static inline struct cos_enclave *cos_file_enclave(struct file *file)
{
	return smp_load_acquire(&file->private_data);
}

/* cos_shoot.c */
long cos_ioc_shoot(struct file *file, void __user *uarg);
struct io_uring_cmd;
int cos_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

/* cos_kfuncs.c */
int cos_kfuncs_init(void);
long cos_ioc_shim_bind(void __user *uarg);

#endif /* _KMOD_COS_H */
