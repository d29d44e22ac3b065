// SPDX-License-Identifier: GPL-2.0
/*
 * cos_slot.c — the task table: one slot per COS task, mirrored read-only to the lord as the
 * status table.  Slots come from a FIFO of free slots, with a limit per user.  Also the state
 * the whole module shares (cos_lock, the registry of enclaves, the counters).
 *
 * A freed slot is reused last, so a late message about it rarely meets a new generation.
 * No path walks the table except COS_IOC_GET_TASKS.  cos_slots_lock protects the free FIFO,
 * the per-user counts and cos_counters.tasks; it is taken alone, by attach and detach.
 *
 * See docs/design.md, "The task state machine" (Identity).
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/cred.h>
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
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
/* the registry of enclaves (cos_internal.h) */
struct cos_enclave __rcu *cos_enclaves[COS_ENCLAVES_MAX];
struct cos_enclave __rcu **cos_cpu_owner;
struct cpumask cos_owned_cpus;
pid_t cos_lord_pids[COS_ENCLAVES_MAX];
atomic_t cos_lords_active;
/* the shim's state for lock-free reads (cos_internal.h) */
bool cos_shim_attached;
u32 cos_shim_caps;
struct cos_counters cos_counters;
DEFINE_PER_CPU(struct cos_shoot_counts, cos_shoot_counts);
struct cos_slot *cos_slots;

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

/*
 * A user at its limit is refused without cos_slots_lock until a slot is released: a task
 * refused a slot asks again at each of its events, and a user with thousands of SCHED_EXT
 * threads would otherwise take the lock, IRQs off, for each.  @cos_slots_released counts
 * releases; a refusal of @uid records (@uid << 32 | that count) in its entry of
 * @cos_refused.  While the count has not moved, no count of any user has gone down, so the
 * answer stands.  Both written under cos_slots_lock, read lock-free (one word each).
 */
#define COS_REFUSED_BITS	6
static u64 cos_refused[1 << COS_REFUSED_BITS];
static u32 cos_slots_released;

/* Was @uid (not root) refused with no slot released since?  Lock-free. */
static bool cos_slot_refused(u32 uid)
{
	u64 r = READ_ONCE(cos_refused[hash_32(uid, COS_REFUSED_BITS)]);

	return r == ((u64)uid << 32 | READ_ONCE(cos_slots_released));
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
 * @uid holds cos_user_limit slots already (lock-free when nothing was released since its last
 * refusal).
 */
struct cos_slot *cos_slot_alloc(u32 uid)
{
	struct cos_uid_slots *u = NULL;
	struct cos_slot *t;
	u32 slot;

	if (uid && cos_slot_refused(uid))
		return ERR_PTR(-EDQUOT);
	guard(raw_spinlock_irqsave)(&cos_slots_lock);
	if (cos_free_count <= (uid ? cos_root_reserve : 0))
		return ERR_PTR(-ENOSPC);
	if (uid) {
		u = cos_uid_entry(uid);
		if (WARN_ON_ONCE(!u))
			return ERR_PTR(-EDQUOT);
		if (u->tasks >= cos_user_limit) {
			WRITE_ONCE(cos_refused[hash_32(uid, COS_REFUSED_BITS)],
				   (u64)uid << 32 | cos_slots_released);
			return ERR_PTR(-EDQUOT);
		}
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
void cos_slot_release(struct cos_slot *t)
{
	guard(raw_spinlock_irqsave)(&cos_slots_lock);
	WARN_ON_ONCE(cos_free_count >= cos_max_tasks);
	cos_free_slots[(cos_free_head + cos_free_count) % cos_max_tasks] = cos_slot_nr(t);
	cos_free_count++;
	WRITE_ONCE(cos_slots_released, cos_slots_released + 1);
	cos_counters.tasks--;
	if (t->uid)
		cos_uid_entry(t->uid)->tasks--;
}

/* Allocate the table, the status table and the free FIFO.  Context: module init. */
int cos_slots_init(void)
{
	u32 i;

	cos_slots = vzalloc(array_size(cos_max_tasks, sizeof(*cos_slots)));
	cos_free_slots = vmalloc(array_size(cos_max_tasks, sizeof(*cos_free_slots)));
	cos_uids_size = roundup_pow_of_two(cos_max_tasks);
	cos_uids = vmalloc(array_size(cos_uids_size, sizeof(*cos_uids)));
	cos_cpu_owner = kcalloc(nr_cpu_ids, sizeof(*cos_cpu_owner), GFP_KERNEL);
	if (!cos_slots || !cos_free_slots || !cos_uids || !cos_cpu_owner) {
		cos_slots_exit();
		return -ENOMEM;
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

/* Free what cos_slots_init() allocated.  Context: module init (failure) and exit. */
void cos_slots_exit(void)
{
	vfree(cos_slots);
	vfree(cos_free_slots);
	vfree(cos_uids);
	kfree(cos_cpu_owner);
	cos_cpu_owner = NULL;
	cos_uids = NULL;
	cos_slots = NULL;
	cos_free_slots = NULL;
}

/* Is the table full?  Lock-free: a snapshot (attach asks again under cos_slots_lock). */
bool cos_slots_full(void)
{
	return !READ_ONCE(cos_free_count);
}
