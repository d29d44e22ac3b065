/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos.h — declarations shared by the files of cos.ko (not an ABI: that is uapi/linux/cos.h).
 *
 * Locking.  Two locks; every other shared word is a READ_ONCE copy written under cos_lock.
 *
 * cos_lock (raw spinlock, cos_task.c) protects the task table (cos_tasks) and its lists
 * (custody, fallback, free slots), the enclave's state and ring producer side, the per-CPU
 * pending and taken shoots (cos_task.c) and the counters.  Taken with IRQs off
 * (guard(raw_spinlock_irqsave); the stall hrtimer, IRQs being off there, guard(raw_spinlock)) by:
 *   - the kfuncs, from sched_ext ops, only for a COS task or the lord: attach/detach (ops
 *     select_cpu with pi_lock held, or enqueue/enable/disable/exit_task with the rq lock),
 *     enqueue, dequeue, running, stopping, quiescent, yield, set_cpumask, the lord's exit and
 *     non-wakeup enqueue; ops.dispatch only when something is shot to or taken on its CPU
 *     (cos_pending_none() checks lock-free first) or tasks were handed to the fair policy
 *     (cos_fallback_pending); ops.init/exit (cos_kf_shim_attached).  A task that is not a COS
 *     task never takes it;
 *   - the ioctls SHOOT, WAIT, REGISTER_LORD, UNREGISTER, GET_INFO, GET_TASKS (256 slots per
 *     hold), the stall hrtimer and the file's release.
 * Order: rq lock (or pi_lock) -> cos_lock.  Nothing under cos_lock takes an rq lock, sleeps,
 * allocates or wakes anybody up (wake-ups go through irq_work, kicks are sent after unlocking).
 *
 * e->shoot_mutex (per enclave) serialises the lord's shoot commits with cos_unregister(): both
 * use e->kick_mask, and a commit re-checks e->registered under it.  Order: shoot_mutex ->
 * cos_lock.
 */
#ifndef _KMOD_COS_H
#define _KMOD_COS_H

#include <linux/cleanup.h>
#include <linux/cos.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "cos_shim_intf.h"

extern raw_spinlock_t cos_lock;
extern unsigned int cos_max_tasks;

/* Module-private state of one task slot; cos_status[i] is its user-visible mirror. */
struct cos_task {
	struct task_struct *p;	/* valid while state != FREE: the shim detaches in exit_task */
	u32 gen;		/* bumped when the slot gets a new task */
	u32 state;		/* enum cos_task_state */
	s32 cpu;		/* queued/running/last CPU */
	u32 next_msg;		/* message for the next enqueue: PREEMPTED/YIELD, else RUNNABLE */
	u64 next_arg;
	u64 last_seq;		/* seq of the last message about this task */
	u64 last_ts;		/* when it was posted (0: none yet) */
	u32 last_msg;		/* its type (COS_MSG_NONE: none yet) */
	u64 run_start;		/* se.sum_exec_runtime when it started running */
	u64 runtime;		/* CPU time as a COS task */
	u64 slice;		/* slice of the pending shoot */
	u64 waiting_since;	/* when it last became WAITING (for the starvation check) */
	bool fallback;		/* in custody but handed to the fair policy: shim must take it */
	/*
	 * On one list of cos_task.c, under cos_lock: the custody list while WAITING or QUEUED (in
	 * waiting_since order), the fallback list while @fallback, else on none (empty).
	 */
	struct list_head node;
};

/* The enclave of the (single, for now) lord. */
struct cos_enclave {
	struct task_struct *lord;	/* the lord thread (referenced) */
	pid_t lord_tgid;
	s32 lord_cpu;
	bool registered;		/* false after unregister/release (under cos_lock and shoot_mutex) */
	bool active;			/* the lord has control (false while stalled or gone) */
	bool lord_dead;			/* the lord thread exited: never active again */
	u32 flags;			/* COS_LORD_F_* */
	cpumask_var_t cpus;
	cpumask_var_t lord_saved_mask;	/* the lord's affinity before registration */

	/*
	 * COS_IOC_SHOOT scratch, preallocated: no allocation per shoot.  shoot_mutex serialises the
	 * commits and cos_unregister(), which uses kick_mask too and clears @registered under it.
	 */
	struct mutex shoot_mutex;
	cpumask_var_t shoot_mask;
	cpumask_var_t kick_mask;
	cpumask_var_t timer_kick;	/* the stall timer's (under cos_lock) */

	/* ring (producer side under cos_lock) */
	struct cos_msg *ring;
	u32 ring_entries;
	u64 produced;			/* seq of the last message written */
	bool overflowed;		/* dropping until the lord consumed everything */
	u64 overflow_dropped;		/* messages dropped in this overflow */

	struct cos_task_status *status;	/* == cos_status (global, mapped read-only) */
	struct cos_shoot_slot *shoot;	/* nr_cpu_ids slots */
	struct cos_ctl *ctl;

	/* stall detection */
	u64 stall_ns;
	u64 starve_ns;
	u64 starve_checked_at;
	u64 seen_consumed;		/* ctl->consumed at the last check */
	u64 seen_at;			/* when it last changed (or when messages became pending) */
	struct hrtimer stall_timer;
	char stall_report[192];		/* the timer's, for the log after it drops cos_lock */

	/* COS_IOC_WAIT */
	wait_queue_head_t wq;
	struct irq_work wake_work;
	atomic_t waiters;
};

/* Counters for COS_IOC_GET_INFO, under cos_lock (read without it: a snapshot may tear). */
struct cos_counters {
	u64 messages, placed, refused, fallbacks;
	u32 tasks;
};

/* Defined in cos_task.c, the core state. */
extern struct cos_enclave *cos_enclave;	/* under cos_lock; NULL without a lord */
extern u32 cos_fallback_pending;		/* under cos_lock: tasks with ->fallback set */
extern struct cos_counters cos_counters;
extern struct cos_task *cos_tasks;
extern struct cos_task_status *cos_status;
/*
 * Defined in cos_lord.c: copies for lock-free reads in the shim's hot paths and GET_INFO
 * (written under cos_lock with WRITE_ONCE, read with READ_ONCE).
 */
extern pid_t cos_lord_pid;
extern s32 cos_lord_cpu;
extern bool cos_lord_active;
extern bool cos_shim_attached;
extern u32 cos_shim_caps;

/*
 * The files, bottom up; each calls only the ones before it (no call loop):
 *   cos_uaccess.c  ioctl argument copies
 *   cos_task.c     the task table and its state machine, the per-CPU shoot slots and kicks,
 *                  the ring producer and the status table
 *   cos_lord.c     the lord: registration, regions, WAIT, stall, fallback, the shim's coming
 *                  and going
 *   cos_shoot.c    COS_IOC_SHOOT (ioctl and io_uring)
 *   cos_kfuncs.c   the shim's kfuncs: adapters onto the files above
 *   cos_main.c     module init/exit and /dev/cos
 */

/* cos_uaccess.c (process context, may fault) */
long cos_user_size(const void __user *uarg, size_t min_size);
int cos_copy_in(void *kbuf, u32 ksize, const void __user *uarg, u32 usize);
int cos_copy_out(void __user *uarg, u32 usize, void *kbuf, u32 ksize);
int cos_copy_cpumask(struct cpumask *mask, const void __user *umask, u32 size);

/* cos_task.c: task table, its state lists, per-CPU shoot slots, messages (*_locked: cos_lock) */
int cos_tasks_init(void);
void cos_tasks_exit(void);
struct cos_task *cos_task_attach_locked(struct task_struct *p, bool runnable);
void cos_task_detach_locked(struct cos_task *t);
void cos_task_set_state_locked(struct cos_task *t, u32 state);
struct cos_task *cos_task_oldest_waiting_locked(void);
void cos_fallback_all_locked(void);
struct cos_task *cos_fallback_take_locked(void);
void cos_post(struct cos_enclave *e, u32 type, s32 cpu, struct cos_task *t, u64 arg);
void cos_overflow_end_locked(struct cos_enclave *e, u64 consumed);
void cos_status_sync(struct cos_task *t);
long cos_ioc_get_tasks(void __user *uarg);
static inline u32 cos_task_slot(const struct cos_task *t) { return t - cos_tasks; }
void cos_kick_cpus(const struct cpumask *cpus);
bool cos_pending_none(s32 cpu);
void cos_pending_set_locked(s32 cpu, struct cos_task *t);
void cos_pending_clear_locked(struct cos_task *t);
struct cos_task *cos_pending_take_locked(s32 cpu);
struct cos_task *cos_pending_peek_locked(s32 cpu);
void cos_taken_clear_locked(s32 cpu);
bool cos_cpu_shot_locked(s32 cpu, const struct cos_task *t);

/* cos_lord.c: registration, regions, stall, fallback */
long cos_ioc_register_lord(struct file *file, void __user *uarg);
long cos_ioc_unregister(struct file *file);
long cos_ioc_wait(struct file *file, void __user *uarg);
int cos_lord_mmap(struct file *file, struct vm_area_struct *vma);
void cos_lord_release(struct file *file);
void cos_fallback_locked(struct cos_enclave *e, struct cpumask *kick);
void cos_stall_locked(struct cos_enclave *e, u64 reason, struct cpumask *kick);
bool cos_lord_consumed(struct cos_enclave *e, u64 consumed);
void cos_lord_shim_changed_locked(bool attached, u32 caps);
void cos_lord_exited(struct task_struct *p);

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

#endif /* _KMOD_COS_H */
