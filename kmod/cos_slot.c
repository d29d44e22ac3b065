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

static unsigned int cos_max_tasks_per_cgroup;
module_param_named(max_tasks_per_cgroup, cos_max_tasks_per_cgroup, uint, 0444);
MODULE_PARM_DESC(max_tasks_per_cgroup,
		 "COS tasks one cgroup other than the root one may have at once, whoever runs them "
		 "(0: max_tasks / 4)");

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
 * cos_root_reserve free slots to root.  Slots per cgroup, so that no container can fill the
 * table (root in a container without a user namespace is root to the per-user rule): a cgroup
 * other than the root one may hold at most cos_cgroup_limit slots, whoever runs its tasks; a
 * task counts in the cgroup it was in when it got its slot.  Each counted in an open-addressing
 * table (linear probing; an entry, once used, is never emptied, so a probe never stops early;
 * one whose count is 0 is reused only when the table has no empty entry left), under
 * cos_slots_lock.  At most cos_max_tasks keys can hold slots at once: each table has room.
 */
struct cos_quota {
	u64 key;			/* its table's none: never used */
	u32 tasks;
};
struct cos_quota_table {
	struct cos_quota *e;
	u64 none;			/* the key of an entry never used */
};
#define COS_UID_NONE	U32_MAX
#define COS_ROOT_CGROUP	1		/* cgroup v2's root: the host's own processes */
static struct cos_quota_table cos_uids = { .none = COS_UID_NONE };
static struct cos_quota_table cos_cgroups = { .none = 0 };	/* no cgroup has id 0 */
static u32 cos_quota_size;		/* a power of two >= cos_max_tasks */
static u32 cos_user_limit, cos_root_reserve, cos_cgroup_limit;

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

/* @key's entry in @q: found, or made.  Caller holds cos_slots_lock. */
static struct cos_quota *cos_quota_entry(struct cos_quota_table *q, u64 key)
{
	u32 i, h = hash_64(key, ilog2(cos_quota_size));
	struct cos_quota *idle = NULL;

	lockdep_assert_held(&cos_slots_lock);
	for (i = 0; i < cos_quota_size; i++) {
		struct cos_quota *u = &q->e[(h + i) & (cos_quota_size - 1)];

		if (u->key == key)
			return u;
		if (u->key == q->none) {
			u->key = key;
			return u;
		}
		if (!u->tasks && !idle)
			idle = u;
	}
	/* full of keys that held slots once: reuse one that holds none now (there is one) */
	if (idle)
		idle->key = key;
	return idle;
}

/*
 * Take the free slot freed longest ago for a task of user @uid in cgroup @cgid.  Return: the
 * slot; -ENOSPC when the table is full (for a user other than root: all but root's reserve),
 * -EDQUOT when @uid holds cos_user_limit slots already (lock-free when nothing was released
 * since its last refusal) or @cgid cos_cgroup_limit.
 */
struct cos_slot *cos_slot_alloc(u32 uid, u64 cgid)
{
	struct cos_quota *u = NULL, *g = NULL;
	struct cos_slot *t;
	u32 slot;

	if (uid && cos_slot_refused(uid))
		return ERR_PTR(-EDQUOT);
	guard(raw_spinlock_irqsave)(&cos_slots_lock);
	if (cos_free_count <= (uid ? cos_root_reserve : 0))
		return ERR_PTR(-ENOSPC);
	if (uid) {
		u = cos_quota_entry(&cos_uids, uid);
		if (WARN_ON_ONCE(!u))
			return ERR_PTR(-EDQUOT);
		if (u->tasks >= cos_user_limit) {
			WRITE_ONCE(cos_refused[hash_32(uid, COS_REFUSED_BITS)],
				   (u64)uid << 32 | cos_slots_released);
			return ERR_PTR(-EDQUOT);
		}
	}
	if (cgid != COS_ROOT_CGROUP) {
		g = cos_quota_entry(&cos_cgroups, cgid);
		if (WARN_ON_ONCE(!g) || g->tasks >= cos_cgroup_limit)
			return ERR_PTR(-EDQUOT);
		g->tasks++;
	}
	if (u)
		u->tasks++;
	slot = cos_free_slots[cos_free_head];
	cos_free_head = (cos_free_head + 1) % cos_max_tasks;
	cos_free_count--;
	cos_counters.tasks++;
	t = &cos_slots[slot];
	t->uid = uid;
	t->slot_cgid = cgid;
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
		cos_quota_entry(&cos_uids, t->uid)->tasks--;
	if (t->slot_cgid != COS_ROOT_CGROUP)
		cos_quota_entry(&cos_cgroups, t->slot_cgid)->tasks--;
}

/* Allocate the table, the status table and the free FIFO.  Context: module init. */
int cos_slots_init(void)
{
	u32 i;

	cos_slots = vzalloc(array_size(cos_max_tasks, sizeof(*cos_slots)));
	cos_free_slots = vmalloc(array_size(cos_max_tasks, sizeof(*cos_free_slots)));
	cos_quota_size = roundup_pow_of_two(cos_max_tasks);
	cos_uids.e = vmalloc(array_size(cos_quota_size, sizeof(*cos_uids.e)));
	cos_cgroups.e = vmalloc(array_size(cos_quota_size, sizeof(*cos_cgroups.e)));
	cos_cpu_owner = kcalloc(nr_cpu_ids, sizeof(*cos_cpu_owner), GFP_KERNEL);
	if (!cos_slots || !cos_free_slots || !cos_uids.e || !cos_cgroups.e || !cos_cpu_owner) {
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
	for (i = 0; i < cos_quota_size; i++) {
		cos_uids.e[i] = (struct cos_quota){ .key = COS_UID_NONE };
		cos_cgroups.e[i] = (struct cos_quota){ .key = 0 };
	}
	cos_user_limit = min(cos_max_tasks_per_user ?: cos_max_tasks / 4, cos_max_tasks);
	cos_cgroup_limit = min(cos_max_tasks_per_cgroup ?: cos_max_tasks / 4, cos_max_tasks);
	cos_root_reserve = cos_max_tasks / 8;
	return 0;
}

/* Free what cos_slots_init() allocated.  Context: module init (failure) and exit. */
void cos_slots_exit(void)
{
	vfree(cos_slots);
	vfree(cos_free_slots);
	vfree(cos_uids.e);
	vfree(cos_cgroups.e);
	kfree(cos_cpu_owner);
	cos_cpu_owner = NULL;
	cos_uids.e = NULL;
	cos_cgroups.e = NULL;
	cos_slots = NULL;
	cos_free_slots = NULL;
}

/* Is the table full?  Lock-free: a snapshot (attach asks again under cos_slots_lock). */
bool cos_slots_full(void)
{
	return !READ_ONCE(cos_free_count);
}
