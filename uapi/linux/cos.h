/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cos.h — the one cos ABI: what the module (kmod/), the BPF shim and libcos share.
 * See docs/abi.md.
 *
 * Nothing here is copied by hand anywhere else.  Only fixed-width types, so the BPF shim can
 * include it after vmlinux.h.
 *
 * Extensible structs.  Every ioctl argument starts with a __u32 @size that user space sets to
 * sizeof() of the struct as it was compiled.  The module accepts any @size that is a multiple of 8,
 * at least the struct's *_SIZE_VER0 and at most COS_STRUCT_SIZE_MAX, and answers -EINVAL otherwise
 * ("unknown size").  Output fields are written up to min(@size, the module's size); bytes past the
 * module's size are zeroed and @size is set to the number of bytes the module filled.  Input fields
 * past the module's size must be zero (else -E2BIG), so old modules refuse requests they would
 * misread.  The ioctl number encodes the struct size too; the module ignores those bits and
 * dispatches on the command number, so binaries built against other versions of this header reach
 * the same command.
 */
#ifndef _UAPI_LINUX_COS_H
#define _UAPI_LINUX_COS_H

#ifndef __VMLINUX_H__		/* BPF programs get these types from vmlinux.h */
#include <linux/types.h>
#include <linux/ioctl.h>
#endif

/* Bumped on any incompatible change; the shim refuses to attach to a module of another version. */
#define COS_ABI_VERSION		2

#define COS_DEVICE_NAME		"cos"
#define COS_DEVICE_PATH		"/dev/cos"

/* The sched_ext ops name of the shim, as seen in /sys/kernel/sched_ext/root/ops. */
#define COS_SHIM_NAME		"cos"

#define COS_STRUCT_SIZE_MAX	4096

/* Feature bits (struct cos_info.features). */
#define COS_FEAT_KFUNCS		(1ULL << 0)	/* kfunc set for the shim registered */
#define COS_FEAT_LORD		(1ULL << 1)	/* a lord can register now (see COS_SHIM_CAP_FAIR_DSQ) */
#define COS_FEAT_SHIM_ATTACHED	(1ULL << 2)	/* the shim is attached right now */
#define COS_FEAT_CPU_MSGS	(1ULL << 3)	/* COS_LORD_F_CPU_MSGS is known (CPU hotplug) */
#define COS_FEAT_WAKE_RULES	(1ULL << 4)	/* struct cos_ctl.wake_rules is honoured */
#define COS_FEAT_SHOOT_REPLACE	(1ULL << 5)	/* COS_SHOOT_F_REPLACE is known */
#define COS_FEAT_SHOOT_LATCH	(1ULL << 6)	/* COS_SHOOT_F_LATCH is known */
#define COS_FEAT_BANDWIDTH	(1ULL << 7)	/* the attached shim enforces cgroups' cpu.max, for
						 * COS tasks too (COS_MSG_TASK_THROTTLED ...) */
#define COS_FEAT_LAZY_WAKE	(1ULL << 8)	/* COS_LORD_F_LAZY_WAKE is known */
#define COS_FEAT_WAKER		(1ULL << 9)	/* struct cos_msg.waker is filled in */
#define COS_FEAT_ENCLAVES	(1ULL << 11)	/* several enclaves at once (COS_ENCLAVES_MAX),
						 * COS_SHOOT_OTHER_ENCLAVE, the enclave ids in
						 * struct cos_task_status and cos_task_info */
#define COS_FEAT_ENCLAVE_NAMES	(1ULL << 10)	/* struct cos_lord_args.name and
						 * COS_IOC_GET_ENCLAVES are known */
#define COS_FEAT_WAKE_HANDOFF	(1ULL << 12)	/* the wake rule COS_WAKE_HANDOFF is known */
#define COS_FEAT_WAKE_PREEMPT	(1ULL << 14)	/* the wake rule COS_WAKE_PREEMPT and
						 * COS_SHOOT_F_URGENT are known */
#define COS_FEAT_WAKE_HANDOFF_BLOCK (1ULL << 13) /* the wake rule COS_WAKE_HANDOFF_BLOCK is
						 * known */
#define COS_FEAT_WAKE_NEXT	(1ULL << 15)	/* the wake rule COS_WAKE_NEXT is known */

/**
 * struct cos_info - what this module offers (COS_IOC_GET_INFO)
 * @size:		in: sizeof(struct cos_info) as the caller knows it; out: bytes filled
 * @abi_version:	COS_ABI_VERSION of the module
 * @features:		COS_FEAT_* bits
 * @nr_cpu_ids:		number of possible CPU ids (width of every cpumask in this ABI)
 * @kernel_version:	LINUX_VERSION_CODE the module was built against
 * @max_tasks:		entries of the status table (module parameter max_tasks)
 * Since VER2 — the lord, and counters since the module was loaded:
 * @lord_pid:		thread id of the lord, 0 without one
 * @lord_cpu:		its CPU, -1 without one
 * @enclave_cpus:	number of CPUs in its enclave
 * @tasks:		COS tasks known now (slots in use)
 * @messages:		messages posted to lords
 * @placed:		tasks placed by COS_IOC_SHOOT
 * @refused:		shoot slots refused (any status but OK and EMPTY)
 * @fallbacks:		times tasks went back to the fair policy (lord death, stall, unregister)
 * Since VER3:
 * @dropped:		messages lost to a full ring (each lord's ring resyncs: COS_MSG_OVERFLOW)
 * @stalls:		times a lord was declared stalled (COS_MSG_LORD_STALL)
 */
struct cos_info {
	__u32 size;
	__u32 abi_version;
	__u64 features;
	__u32 nr_cpu_ids;
	__u32 kernel_version;
	__u32 max_tasks;
	__u32 __reserved;
	__s32 lord_pid;
	__s32 lord_cpu;
	__u32 enclave_cpus;
	__u32 tasks;
	__u64 messages;
	__u64 placed;
	__u64 refused;
	__u64 fallbacks;
	__u64 dropped;
	__u64 stalls;
};
#define COS_INFO_SIZE_VER0	24
#define COS_INFO_SIZE_VER1	32
#define COS_INFO_SIZE_VER2	80
#define COS_INFO_SIZE_VER3	96

/*
 * ---------------------------------------------------------------- the lord
 *
 * A lord is the thread that called COS_IOC_REGISTER_LORD; it schedules the COS tasks (tasks with
 * policy SCHED_EXT) on the CPUs of its enclave.  It talks to the module through four regions it
 * maps from the same file descriptor, at the page offsets REGISTER_LORD returns:
 *
 *   ring     read-only    kernel -> lord messages (struct cos_msg), a power-of-two array
 *   status   read-only    one struct cos_task_status per task slot: the authoritative state of
 *                         the enclave's tasks (another enclave's task's slot reads FREE)
 *   shoot    read-write   one struct cos_shoot_slot per CPU id: what the lord wants run there
 *   ctl      read-write   struct cos_ctl: consumed sequence number, heartbeat, counters
 *
 * A task is named by its slot (index into the status table) and the slot's generation; pids are
 * only for humans (they are reused, slots are reused too but the generation changes).
 */

/* Message types (struct cos_msg.type). */
enum cos_msg_type {
	COS_MSG_NONE = 0,
	COS_MSG_TASK_NEW,	/* a COS task appeared; arg = 1 if runnable, 0 if blocked */
	COS_MSG_TASK_RUNNABLE,	/* woke up (or became a COS task runnable): waits for a shoot;
				 * arg = COS_RUNNABLE_BYPASS if the kernel ran it directly */
	COS_MSG_TASK_BLOCKED,	/* went to sleep */
	COS_MSG_TASK_PREEMPTED,	/* was running, is runnable again; arg = COS_PREEMPT_BY_* */
	COS_MSG_TASK_YIELD,	/* gave up its CPU with sched_yield(); runnable */
	COS_MSG_TASK_DEAD,	/* exited or left SCHED_EXT; its slot may be reused */
	COS_MSG_TASK_AFFINITY,	/* its allowed CPUs changed (read them with sched_getaffinity) */
	COS_MSG_SHOOT_FAILED,	/* a placed task could not start; arg = CPU; task waits again */
	COS_MSG_SHOOT_STALE,	/* a placed task left before it started; arg = CPU */
	COS_MSG_LORD_STALL,	/* the lord stalled (arg = COS_STALL_*): tasks went to the fair policy */
	COS_MSG_OVERFLOW,	/* the ring was full and about arg messages were lost (a loss racing
				 * the end may count in the next OVERFLOW; ctl->dropped is exact);
				 * the ring has room again: resync from the status table (posted
				 * when the overflow ends, so the table already reflects everything
				 * that was lost) */
	COS_MSG_TASK_RUNNING,	/* a shot task started on arg = CPU (only with COS_LORD_F_RUNNING_MSGS) */
	COS_MSG_CPU_OFFLINE,	/* enclave (or lord) CPU arg went offline: shoots to it are refused
				 * (BAD_CPU) and one pending there was cancelled (SHOOT_STALE); only
				 * with COS_LORD_F_CPU_MSGS */
	COS_MSG_CPU_ONLINE,	/* CPU arg is back online (only with COS_LORD_F_CPU_MSGS) */
	COS_MSG_TASK_PLACED,	/* started on CPU (u32)arg by the lord's wake rules (struct
				 * cos_ctl.wake_rules), without a shoot: it is QUEUED there, like a
				 * shot task (TASK_RUNNING follows with COS_LORD_F_RUNNING_MSGS); its
				 * slice is ctl->wake_slice_ns.  It woke up, or, with
				 * COS_PLACED_F_HANDOFF in arg, it was waiting and the task running
				 * there yielded or blocked after waking it, or after it had yielded
				 * that CPU to that task (COS_WAKE_HANDOFF, COS_WAKE_HANDOFF_BLOCK) */
	COS_MSG_TASK_THROTTLED,	/* runnable (or preempted, or refused a shoot: COS_SHOOT_THROTTLED),
				 * but its bandwidth group arg (a cgroup id, the nearest throttled
				 * one up its tree) is out of budget: shoots of it are refused until
				 * COS_MSG_GROUP_UNTHROTTLED for arg; it waits in the kernel */
	COS_MSG_GROUP_THROTTLED,	/* bandwidth group arg (cgroup id) ran out of budget in its
				 * period, and COS tasks of it wait (posted before the first
				 * TASK_THROTTLED naming it) */
	COS_MSG_GROUP_UNTHROTTLED,	/* group arg has budget again: its TASK_THROTTLED tasks may
				 * be shot (one still throttled by an ancestor is refused again,
				 * and a TASK_THROTTLED names that ancestor) */
	COS_MSG_NR_TYPES,
};

/*
 * COS_MSG_TASK_RUNNABLE.arg: sched_ext runs exiting and migration-disabled tasks on their CPU
 * without asking the scheduler; the lord learns it when the task is already running.
 */
#define COS_RUNNABLE_BYPASS	1

/* COS_MSG_LORD_STALL.arg */
#define COS_STALL_UNCONSUMED	1	/* messages pending for stall_ms while the lord consumed
						 * none and got no CPU time */
#define COS_STALL_STARVED	2	/* a task waited for a shoot longer than starve_ms */

/* COS_MSG_TASK_PREEMPTED.arg */
#define COS_PREEMPT_BY_COS	1	/* another COS task was shot to its CPU */
#define COS_PREEMPT_BY_OTHER	2	/* a task of a higher class (RT, DL, stop) or a kthread */
#define COS_PREEMPT_BY_SLICE	3	/* its slice ran out */
/*
 * Or'ed into BY_OTHER: the CPU's latch held tasks, and the preempted task went back to its head
 * (still QUEUED there): it resumes on that CPU after what preempted it, before the tasks
 * latched behind it, without a shoot.  Or'ed into BY_COS: an urgent task the wake rules
 * started there displaced it (COS_WAKE_PREEMPT), and it went back to that CPU's latch behind
 * that task and the one COS_WAKE_NEXT queued at the latch's head, if any, before the tasks the
 * lord latched.  Either way it runs out the rest of its slice.  The lord may leave it or
 * shoot it again (see "Latch").
 */
#define COS_PREEMPT_F_LATCHED	(1U << 8)

/*
 * Or'ed into COS_MSG_TASK_PLACED.arg (the CPU, in the low 32 bits): the task was not waking
 * but waiting, and the wake rule COS_WAKE_HANDOFF started it on the CPU of the task that had
 * woken it, which yielded (that task's COS_MSG_TASK_YIELD follows), or COS_WAKE_HANDOFF_BLOCK
 * did, when that task blocked (its COS_MSG_TASK_BLOCKED follows).
 */
#define COS_PLACED_F_HANDOFF	(1ULL << 32)
/*
 * Or'ed into COS_MSG_TASK_PLACED.arg: the wake rule COS_WAKE_PREEMPT started the waking task in
 * place of this lord's task running on that CPU, which was not urgent (its
 * COS_MSG_TASK_PREEMPTED, COS_PREEMPT_BY_COS, follows).
 */
#define COS_PLACED_F_PREEMPT	(1ULL << 33)
/*
 * Or'ed into COS_MSG_TASK_PLACED.arg: the wake rule COS_WAKE_NEXT did not start the waking task
 * but queued it next on that CPU, at the head of its latch, behind this lord's urgent task
 * running there.  It is QUEUED there as a latched task: it starts when that task stops
 * (TASK_RUNNING follows with COS_LORD_F_RUNNING_MSGS), after any shoot to that CPU meanwhile.
 */
#define COS_PLACED_F_NEXT	(1ULL << 34)

/**
 * struct cos_msg - one message in the ring (64 bytes)
 * @seq:	sequence number, 1, 2, 3, ...; the message in ring slot (seq - 1) & (entries - 1)
 *		is valid when @seq equals the number the lord expects next.  The module writes every
 *		other field first and @seq last with a release store; the lord reads @seq with an
 *		acquire load, then the rest.  The module never overwrites a slot the lord has not
 *		consumed (struct cos_ctl.consumed), so a slot is stable once its @seq matches.
 * @ts:		CLOCK_MONOTONIC nanoseconds of the event
 * @type:	enum cos_msg_type
 * @cpu:	CPU the event happened on
 * @slot, @gen:	the task (status table index and generation); 0/0 for LORD_STALL, OVERFLOW
 * @pid:	the task's pid (thread id), for humans and tools
 * @waker:	COS_MSG_TASK_RUNNABLE of a wake-up: the thread id of the task that woke it, when
 *		the module saw the wake-up in that task's context (COS_FEAT_WAKER); 0 when it did
 *		not (a wake-up from an interrupt, or one the kernel handed to the woken task's CPU)
 *		and for every other message.  Zero before COS_FEAT_WAKER.
 * @arg:	per type, see enum cos_msg_type
 */
struct cos_msg {
	__u64 seq;
	__u64 ts;
	__u32 type;
	__u32 cpu;
	__u32 slot;
	__u32 gen;
	__u32 pid;
	__u32 waker;
	__u64 arg;
	__u64 __reserved[2];
};

/* struct cos_task_status.state */
enum cos_task_state {
	COS_TASK_FREE = 0,	/* slot unused */
	COS_TASK_BLOCKED,	/* sleeping */
	COS_TASK_WAITING,	/* runnable, waiting for the lord to shoot it */
	COS_TASK_QUEUED,	/* shot, about to start on @cpu */
	COS_TASK_RUNNING,	/* running on @cpu */
	COS_TASK_FAIR,		/* runnable under the shim's fair policy (no lord, or lord stalled) */
};

/**
 * struct cos_task_status - authoritative state of one task slot (48 bytes)
 * @seqcount:	odd while the module updates the entry.  Read it (acquire), copy the fields,
 *		read it again (acquire after the copy); retry if it changed or was odd.
 * @gen:	the slot's generation: changes whenever the slot gets a new task, and when
 *		its task moves to another enclave (to each lord it is then a new task)
 * @state:	enum cos_task_state
 * @cpu:	CPU it runs or is queued on, or last ran on
 * @pid:	thread id
 * @enclave_id:	the lord's enclave (struct cos_lord_args.enclave_id) while the entry is in
 *		use, 0 when FREE (since COS_FEAT_ENCLAVES; each enclave has its own table)
 * @last_seq:	sequence number of the last message about this task
 * @runtime_ns:	CPU time as a COS task
 */
struct cos_task_status {
	__u32 seqcount;
	__u32 gen;
	__u32 state;
	__u32 cpu;
	__u32 pid;
	__u32 enclave_id;
	__u64 last_seq;
	__u64 runtime_ns;
	__u64 __reserved;
};

/* struct cos_shoot_slot.flags */
#define COS_SHOOT_F_VALID	(1U << 0)	/* this slot holds a request (cleared by the module) */
#define COS_SHOOT_F_REPLACE	(1U << 1)	/* a task shot earlier to this CPU that has not
						 * started yet waits again (COS_MSG_SHOOT_STALE,
						 * arg = CPU) and this one takes its place,
						 * instead of COS_SHOOT_BUSY (COS_FEAT_SHOOT_REPLACE) */
#define COS_SHOOT_F_LATCH	(1U << 2)	/* queue the task behind what runs on this CPU
						 * instead of preempting it (COS_FEAT_SHOOT_LATCH):
						 * see "Latch" below */
#define COS_SHOOT_F_URGENT	(1U << 3)	/* the task is urgent from this shoot on
						 * (COS_FEAT_WAKE_PREEMPT): COS_WAKE_PREEMPT may
						 * start it in place of a task that is not; a
						 * shoot without it makes it not urgent */

/* Tasks one CPU's latch holds at most (COS_SHOOT_LATCH_FULL beyond). */
#define COS_SHOOT_LATCH_MAX	4

/* struct cos_shoot_slot.status: written by the module after COS_IOC_SHOOT */
enum cos_shoot_status {
	COS_SHOOT_OK = 0,	/* placed: the task starts on this CPU */
	COS_SHOOT_EMPTY,	/* the slot held no request (COS_SHOOT_F_VALID clear) */
	COS_SHOOT_BAD_SLOT,	/* task slot index out of range or free */
	COS_SHOOT_BAD_GEN,	/* generation does not match: the task is gone or the slot reused */
	COS_SHOOT_NOT_WAITING,	/* the task is blocked, already queued or running */
	COS_SHOOT_BAD_CPU,	/* CPU neither in the enclave nor the lord's own CPU */
	COS_SHOOT_AFFINITY,	/* CPU not in the task's allowed CPUs */
	COS_SHOOT_BEHIND,	/* the lord has not consumed the task's latest message */
	COS_SHOOT_STALE_SEQ,	/* COS_SHOOT_STRICT and the lord has not consumed everything */
	COS_SHOOT_BUSY,		/* a task shot earlier to this CPU has not started yet */
	COS_SHOOT_BAD_FLAGS,	/* unknown flags or reserved fields set */
	COS_SHOOT_NO_LORD,	/* control is with the fair policy (stalled lord) */
	COS_SHOOT_LATCH_FULL,	/* COS_SHOOT_F_LATCH: the CPU's latch holds COS_SHOOT_LATCH_MAX */
	COS_SHOOT_THROTTLED,	/* its bandwidth group is out of budget: COS_MSG_TASK_THROTTLED
				 * follows (the task waits for its group's GROUP_UNTHROTTLED) */
	COS_SHOOT_OTHER_ENCLAVE,	/* the task belongs to another enclave (COS_FEAT_ENCLAVES) */
};

/**
 * struct cos_shoot_slot - the lord's request for one CPU (128 bytes, own cache lines)
 * @flags:	COS_SHOOT_F_*; the lord sets COS_SHOOT_F_VALID, the module clears it when it has
 *		taken the request (whatever the outcome)
 * @slot, @gen:	the task to run
 * @slice_ns:	how long it may run before it is preempted (0 = until it blocks or yields)
 * @status:	enum cos_shoot_status, written by the module
 *
 * The module reads a slot once (a copy) during COS_IOC_SHOOT and never again.
 *
 * Local shoot: the slot of the lord's own CPU (not in the enclave) gives that CPU to the task
 * once the ioctl returns; the lord runs again when the task blocks, yields or is preempted, or
 * when its slice ends.  A local shoot's slice is at most stall_ms / 2 (0 gets that), so that
 * the lord is back before it could be declared stalled.
 *
 * Latch (COS_SHOOT_F_LATCH): the task does not preempt the COS task running on the CPU; it
 * waits behind it, in the CPU's latch (first in, first out, at most COS_SHOOT_LATCH_MAX
 * tasks), and starts there when that CPU next picks a task: its COS task blocks, yields or
 * ends its slice.  No message to the lord, no IPI: the lord learns it from the status table
 * (or COS_MSG_TASK_RUNNING).  A task shot without the flag goes before the latched ones.
 * Where no COS task runs (idle, or a fair task) the first latched task starts at once, as with
 * a plain shoot.  A latched task stays QUEUED and may be shot again (to another CPU, or without
 * the flag to run now): it leaves the latch only if that shoot succeeds.  One that changes
 * before it starts (dequeued, affinity, exit) or whose CPU goes offline leaves it with
 * COS_MSG_SHOOT_STALE; one that cannot start when its turn comes gets COS_MSG_SHOOT_FAILED.
 * A latched task counts as waiting for the starvation check (struct cos_lord_args.starve_ms):
 * behind a task with no slice it may wait long.  Not with COS_SHOOT_F_REPLACE (BAD_FLAGS),
 * nor on the lord's CPU (BAD_CPU).
 */
struct cos_shoot_slot {
	__u32 flags;
	__u32 slot;
	__u32 gen;
	__u32 status;
	__u64 slice_ns;
	__u64 __reserved[13];
};

/*
 * struct cos_ctl.wake_rules: how the kernel may start a waking COS task without a round trip to
 * the lord.  Only while no task of the lord's waits for a shoot (so the lord's queue order is
 * kept: a waking task never passes one that waits), and only on a CPU of the enclave (never
 * the lord's) that is online, in the task's allowed set, and free: no COS task runs there, is
 * shot there or was started there and not yet running.  The task then goes to the head of
 * that CPU's local queue, ahead of every task of the fair policy (as a shoot would put it),
 * and the lord gets COS_MSG_TASK_PLACED instead of TASK_RUNNABLE.  Unknown bits are ignored
 * (COS_FEAT_WAKE_RULES says the module knows these).
 */
#define COS_WAKE_PREV		(1U << 0)	/* on the CPU it last ran on, if free */
#define COS_WAKE_IDLE		(1U << 1)	/* on any free CPU: one that runs nothing first,
					 * then one that runs a fair task; the one it
					 * last ran on first in each */
/*
 * COS_WAKE_HANDOFF (COS_FEAT_WAKE_HANDOFF) is a rule about a yield, not a wake-up, and applies
 * while tasks wait too: a COS task that calls sched_yield() on a CPU of the enclave hands that
 * CPU to the last task it woke there, if that task still waits for this lord (no shoot took
 * it), may run there, and no task is shot or latched there.  The woken task starts there at
 * once (TASK_PLACED with COS_PLACED_F_HANDOFF, slice ctl->wake_slice_ns), and the yielding one
 * waits for the lord (TASK_YIELD).  Meant for a lock's release: the waiter that the unlock
 * woke runs while the lock is free, before the releaser can take it back.  The CPU is then owed
 * back: if the task handed it yields (or, with COS_WAKE_HANDOFF_BLOCK, blocks) before it wakes
 * another task, the CPU goes back to the yielder on the same conditions.  Without it (or
 * with nothing to hand over), a yield leaves the task running and only makes its next
 * preemption a TASK_YIELD.
 */
#define COS_WAKE_HANDOFF	(1U << 2)
/*
 * COS_WAKE_HANDOFF_BLOCK (COS_FEAT_WAKE_HANDOFF_BLOCK): the same handoff when the task blocks
 * instead of yielding: its CPU goes to the last task it woke there, on the same conditions.
 * Meant for chains of wake-ups (a condition variable's signal and wait, a pipe's write and
 * read): the woken task starts at once on the CPU its waker leaves, with no round trip to the
 * lord.  The blocked task's COS_MSG_TASK_BLOCKED follows the handoff's TASK_PLACED.
 */
#define COS_WAKE_HANDOFF_BLOCK	(1U << 3)
/*
 * COS_WAKE_PREEMPT (COS_FEAT_WAKE_PREEMPT): a waking task that the lord's last shoot of it
 * marked urgent (COS_SHOOT_F_URGENT), and that the rules above do not start, takes a CPU of the
 * enclave it may run on whose running task is this lord's and not urgent, with nothing shot
 * there or started and not yet running (the CPU it last ran on first).  It starts there at
 * once (TASK_PLACED with COS_PLACED_F_PREEMPT, slice ctl->wake_slice_ns), and the task it
 * displaces resumes after it, from that CPU's latch, with the rest of its slice
 * (TASK_PREEMPTED, COS_PREEMPT_BY_COS | COS_PREEMPT_F_LATCHED), or, with the latch full,
 * waits for the lord (COS_PREEMPT_BY_COS).  It applies while tasks wait too: urgency is the
 * lord's order.  Meant for latency-critical tasks beside best-effort ones: neither the
 * displacement nor the displaced task's return costs a round trip to the lord.
 */
#define COS_WAKE_PREEMPT	(1U << 4)
/*
 * COS_WAKE_NEXT (COS_FEAT_WAKE_NEXT), beside COS_WAKE_PREEMPT (alone it does nothing): an urgent
 * waking task that COS_WAKE_PREEMPT cannot start, because this lord's urgent tasks run on the
 * CPUs it may take, goes next on one of them whose latch is empty and where nothing is shot or
 * started and not yet running (the CPU it last ran on first): at the head of that CPU's latch,
 * QUEUED, with slice ctl->wake_slice_ns (TASK_PLACED with COS_PLACED_F_NEXT).  It starts when
 * the urgent task there stops, as a latched task does, with no round trip to the lord; the lord
 * may shoot it elsewhere meanwhile (see "Latch").  A task that finds no such CPU waits for the
 * lord.  Meant for several latency-critical tasks on few CPUs: the second to wake takes the CPU
 * when the first blocks.
 */
#define COS_WAKE_NEXT		(1U << 5)

/**
 * struct cos_ctl - the control page
 * @consumed:	lord -> module: sequence number of the last message the lord has handled.  The
 *		lord writes it with a release store after handling messages; the module reads it
 *		with an acquire load before reusing ring slots and for stall detection.
 * @wake_rules:	lord -> module: COS_WAKE_* (0 = every waking task waits for a shoot); read
 *		(READ_ONCE) at each wake-up of a COS task: a change applies to the next one
 * @wake_slice_ns: lord -> module: the slice of a task the wake rules placed (0 = no limit)
 * @produced:	module -> lord: the highest sequence number written so far (CPUs write the ring
 *		concurrently: one below it may still be in flight; read each message's @seq)
 * @dropped:	module -> lord: messages lost to overflow, ever
 * @stalls:	module -> lord: times the lord was declared stalled
 * @lord_active: module -> lord: 1 while the lord schedules, 0 while the fair policy does
 */
struct cos_ctl {
	__u64 consumed;
	__u32 wake_rules;
	__u32 __lord_pad;
	__u64 wake_slice_ns;
	__u64 __lord_reserved[5];
	__u64 produced;
	__u64 dropped;
	__u64 stalls;
	__u32 lord_active;
	__u32 __pad;
	__u64 __module_reserved[4];
};

/* struct cos_lord_args.flags */
#define COS_LORD_F_RUNNING_MSGS	(1U << 0)	/* post COS_MSG_TASK_RUNNING when a shot task starts */
#define COS_LORD_F_CPU_MSGS	(1U << 1)	/* post COS_MSG_CPU_OFFLINE/ONLINE for the enclave's
						 * and the lord's CPUs (COS_FEAT_CPU_MSGS) */
/*
 * Wake a lord sleeping in COS_IOC_WAIT only for messages that ask a decision: a TASK_BLOCKED or
 * TASK_PLACED posted while no task waits for any lord (and the ring is less than half full) is
 * written but wakes nobody; the lord reads it with the next message that wakes it, or at its
 * WAIT's timeout.  The stall rule then counts only the messages that woke it.  A latched task
 * may start behind its own CPU's task rather than be moved to a CPU that fell idle meanwhile.
 * (COS_FEAT_LAZY_WAKE)
 */
#define COS_LORD_F_LAZY_WAKE	(1U << 2)

/**
 * struct cos_lord_args - COS_IOC_REGISTER_LORD
 * @size:		sizeof(struct cos_lord_args)
 * @flags:		COS_LORD_F_*
 * @lord_cpu:		in: the CPU the lord runs on (the calling thread is pinned there)
 * @stall_ms:		in: stall timeout in ms (0 = default 20, at most 10000): messages wait that
 *			long while the lord neither consumes any nor gets CPU time
 * @starve_ms:		in: longest a runnable task may wait for a shoot before the lord counts as
 *			stalled (0 = default 1000, at most 10000; sched_ext's own watchdog, which
 *			would eject the whole scheduler, waits 30 s)
 * @ring_entries:	in: ring size, a power of two 64..1048576 (0 = default 4096);
 *			out: the size used
 * @cpumask_size:	in: bytes at @cpumask (at least enough for the enclave's highest CPU)
 * @cpumask:		in: user pointer to the enclave's CPU bitmap (bit i = CPU i, as in
 *			sched_setaffinity), must not include @lord_cpu
 * @ring_off, @status_off, @shoot_off, @ctl_off:	out: mmap offsets (bytes, page aligned)
 * @ring_size, @status_size, @shoot_size, @ctl_size:	out: mmap lengths (bytes)
 * @max_tasks:		out: entries in the status table
 * @nr_cpu_ids:		out: entries in the shoot area
 * @name:		in: the enclave's name, NUL-terminated, 1-15 of [A-Za-z0-9_.-] (all
 *			zero: the calling thread's comm, any other character replaced by '_');
 *			no two enclaves have the same name (EEXIST).  Since COS_FEAT_ENCLAVE_NAMES.
 * @enclave_id:		out: the enclave's id, unique until the module is unloaded (never 0)
 */
struct cos_lord_args {
	__u32 size;
	__u32 flags;
	__u32 lord_cpu;
	__u32 stall_ms;
	__u32 ring_entries;
	__u32 cpumask_size;
	__u64 cpumask;
	__u64 ring_off;
	__u64 ring_size;
	__u64 status_off;
	__u64 status_size;
	__u64 shoot_off;
	__u64 shoot_size;
	__u64 ctl_off;
	__u64 ctl_size;
	__u32 max_tasks;
	__u32 nr_cpu_ids;
	__u32 starve_ms;
	__u32 __pad;
	char name[16];
	__u32 enclave_id;
	__u32 __pad2;
};
#define COS_LORD_ARGS_SIZE_VER0	112
#define COS_LORD_ARGS_SIZE_VER1	136	/* @name, @enclave_id */
#define COS_ENCLAVE_NAME_LEN	16

/*
 * Several enclaves at once (COS_FEAT_ENCLAVES): at most COS_ENCLAVES_MAX lords, each with CPUs
 * of its own.  No CPU is in two enclaves, nor in one enclave and the lord CPU of another
 * (lords may share a lord CPU).  A COS task belongs to the enclave that owns the first of its
 * allowed CPUs that any enclave owns: restrict a task to an enclave's CPUs to put it there
 * (cosctl run --enclave, the OCI hook).  A task that moves (its affinity changed, or an
 * enclave came or went) is TASK_DEAD to the enclave it leaves and gets a new generation: the
 * other lord learns it as a new task at its next RUNNABLE.  A lord's shoot of another
 * enclave's task is refused, COS_SHOOT_OTHER_ENCLAVE.
 */
#define COS_ENCLAVES_MAX	8

/* struct cos_shoot_args.flags */
#define COS_SHOOT_STRICT	(1U << 0)	/* refuse all unless the lord consumed every message */

/**
 * struct cos_shoot_args - COS_IOC_SHOOT
 * @size:	sizeof(struct cos_shoot_args)
 * @flags:	COS_SHOOT_STRICT
 * @consumed:	the last sequence number the lord has handled (also stored into cos_ctl)
 * @cpumask_size, @cpumask:	the CPUs whose shoot slots to commit (bitmap as above)
 *
 * Return of the ioctl: the number of tasks placed (>= 0), or -1 with errno for a bad call
 * (nothing is placed then): EINVAL (size, flags, mask wider than the kernel's CPUs), EFAULT,
 * EPERM (the caller is not the lord of this file).
 */
struct cos_shoot_args {
	__u32 size;
	__u32 flags;
	__u64 consumed;
	__u32 cpumask_size;
	__u32 __pad;
	__u64 cpumask;
};
#define COS_SHOOT_ARGS_SIZE_VER0	32

/*
 * COS_IOC_SHOOT through io_uring (IORING_OP_URING_CMD on the lord's /dev/cos file, any SQE
 * size): sqe->cmd_op = COS_URING_SHOOT and the SQE's command area holds struct cos_uring_shoot.
 * Same semantics as the ioctl; the CQE's res is the ioctl's return value (tasks placed, or a
 * negative errno).  A module without it answers -EOPNOTSUPP: use the ioctl.
 */
#define COS_URING_SHOOT		0x02	/* the command number of COS_IOC_SHOOT */

/**
 * struct cos_uring_shoot - the command area of a COS_URING_SHOOT SQE (16 bytes)
 * @args:	user pointer to a struct cos_shoot_args, read during the submission
 * @flags:	0
 */
struct cos_uring_shoot {
	__u64 args;
	__u32 flags;
	__u32 __reserved;
};

/**
 * struct cos_wait_args - COS_IOC_WAIT: sleep until a message is unconsumed or @timeout_ns
 * @size:	sizeof(struct cos_wait_args)
 * @flags:	0
 * @consumed:	the last sequence number the lord has handled
 * @timeout_ns:	0 = do not sleep; 2^63 - 1 or more = no timeout (until a message or a signal)
 * Return of the ioctl: 1 if messages are pending, 0 on timeout, -1/EINTR on a signal.
 */
struct cos_wait_args {
	__u32 size;
	__u32 flags;
	__u64 consumed;
	__u64 timeout_ns;
};
#define COS_WAIT_ARGS_SIZE_VER0	24

/**
 * struct cos_task_info - one COS task as COS_IOC_GET_TASKS reports it (80 bytes)
 * @slot, @gen:		its status table slot and generation
 * @state:		enum cos_task_state
 * @cpu:		CPU it runs or is queued on, or last ran on
 * @pid, @tgid:		thread id and process id
 * @last_msg:		enum cos_msg_type of the last message about it (COS_MSG_NONE if none
 *			was posted: no lord, or dropped in an overflow)
 * @enclave_id:		the registered enclave it belongs to, 0 for none (COS_FEAT_ENCLAVES)
 * @last_seq:		sequence number of that message
 * @last_ts:		CLOCK_MONOTONIC ns of that message (0 if none)
 * @runtime_ns:		CPU time as a COS task
 * @comm:		its command name, NUL-terminated
 */
struct cos_task_info {
	__u32 slot;
	__u32 gen;
	__u32 state;
	__u32 cpu;
	__s32 pid;
	__s32 tgid;
	__u32 last_msg;
	__u32 enclave_id;
	__u64 last_seq;
	__u64 last_ts;
	__u64 runtime_ns;
	char comm[16];
	__u64 __reserved;
};

/**
 * struct cos_tasks_args - COS_IOC_GET_TASKS: list the COS tasks, a batch per call
 * @size:	sizeof(struct cos_tasks_args)
 * @flags:	0
 * @start:	in: first slot to look at (0 for the first call)
 * @next:	out: where the next call starts; max_tasks when the table was walked to its end
 * @capacity:	in: entries at @tasks (the module fills at most 256 per call)
 * @count:	out: entries filled, in slot order
 * @tasks:	in: user pointer to struct cos_task_info[@capacity]
 *
 * Each entry is consistent in itself; the list is not a snapshot of the whole table (tasks may
 * come and go between batches).  Needs no lord.  Errors: EINVAL (size, flags, @start past the
 * table, @capacity 0), EFAULT.
 */
struct cos_tasks_args {
	__u32 size;
	__u32 flags;
	__u32 start;
	__u32 next;
	__u32 capacity;
	__u32 count;
	__u64 tasks;
};
#define COS_TASKS_ARGS_SIZE_VER0	32
#define COS_TASKS_BATCH_MAX		256

/**
 * struct cos_group_info - one bandwidth group (a cgroup with a cpu controller), COS_IOC_GET_GROUPS
 * @id:			the cgroup's id (its directory's inode number in cgroupfs)
 * @parent_id:		its parent's, 0 for the root
 * @period_ns:		cpu.max's period
 * @quota_ns:		cpu.max's quota, COS_GROUP_NO_QUOTA for "max"
 * @burst_ns:		cpu.max.burst
 * @runtime_ns:		budget left in the current period (< 0: debt from an overrun)
 * @usage_ns:		CPU time its tasks used under the shim, in all (its subtree's included)
 * @last_usage_ns:	of that, in its last complete period (limited groups only, else 0)
 * @throttled_ns:	time spent throttled, in all
 * @nr_throttled:	times throttled
 * @overrun_ns:		CPU time its tasks ran beyond its budget, in all (the delay before a
 *			throttled group's running tasks stop: limited groups only)
 * @weight:		cpu.weight
 * @flags:		COS_GROUP_F_*
 *
 * The counters start when the shim attaches (or the cgroup appears under it).
 */
struct cos_group_info {
	__u64 id;
	__u64 parent_id;
	__u64 period_ns;
	__u64 quota_ns;
	__u64 burst_ns;
	__s64 runtime_ns;
	__u64 usage_ns;
	__u64 last_usage_ns;
	__u64 throttled_ns;
	__u64 nr_throttled;
	__u32 weight;
	__u32 flags;
	__u64 overrun_ns;
};
#define COS_GROUP_NO_QUOTA	(~0ULL)
#define COS_GROUP_F_THROTTLED	(1U << 0)	/* out of budget now */

/**
 * struct cos_groups_args - COS_IOC_GET_GROUPS: list the bandwidth groups, a batch per call
 * @size:	sizeof(struct cos_groups_args)
 * @flags:	0
 * @start:	in: first cgroup id to look at (0 for the first call)
 * @next:	out: where the next call starts; 0 when there is none
 * @capacity:	in: entries at @groups (the module fills at most 256 per call)
 * @count:	out: entries filled, in cgroup id order
 * @groups:	in: user pointer to struct cos_group_info[@capacity]
 *
 * The groups exist while the shim is attached (sched_ext tells it of each cgroup).  Each entry
 * is consistent in itself; the list is not a snapshot.  Needs no lord.  Errors: EINVAL (size,
 * flags, @capacity 0), EFAULT, ENOMEM.
 */
struct cos_groups_args {
	__u32 size;
	__u32 flags;
	__u64 start;
	__u64 next;
	__u32 capacity;
	__u32 count;
	__u64 groups;
};
#define COS_GROUPS_ARGS_SIZE_VER0	40
#define COS_GROUPS_BATCH_MAX		256

/**
 * struct cos_enclave_info - one enclave as COS_IOC_GET_ENCLAVES reports it (224 bytes)
 * @id:			its id (struct cos_lord_args.enclave_id)
 * @lord_pid:		the lord thread's id (as seen from the init pid namespace)
 * @lord_cpu:		the CPU the lord runs on
 * @flags:		COS_ENCLAVE_F_*
 * @name:		its name, NUL-terminated
 * @nr_cpus:		CPUs in the enclave
 * @waiting:		its COS tasks waiting for the lord right now
 * @produced:		messages posted to its ring
 * @dropped:		of those, dropped while the ring was full
 * @stalls:		times its lord was found stalled
 * @placed:		tasks its lord's shoots placed
 * @refused:		shoot slots refused (a status other than OK or EMPTY)
 * @fallbacks:		times its tasks were handed to the fair policy (stall, unregister, death)
 * @cpus:		the enclave's CPUs, a bitmap (bit i = CPU i) of the first 1024 CPU ids;
 *			COS_ENCLAVE_F_CPUS_CUT when it has CPUs beyond (@nr_cpus counts all)
 */
struct cos_enclave_info {
	__u32 id;
	__s32 lord_pid;
	__s32 lord_cpu;
	__u32 flags;
	char name[16];
	__u32 nr_cpus;
	__u32 waiting;
	__u64 produced;
	__u64 dropped;
	__u64 stalls;
	__u64 placed;
	__u64 refused;
	__u64 fallbacks;
	__u64 cpus[16];
	__u64 __reserved;
};
#define COS_ENCLAVE_F_ACTIVE	(1U << 0)	/* its lord has control (not stalled, not gone) */
#define COS_ENCLAVE_F_CPUS_CUT	(1U << 1)	/* @cpus lists only the first 1024 CPU ids */

/**
 * struct cos_enclaves_args - COS_IOC_GET_ENCLAVES: list the registered enclaves
 * @size:	sizeof(struct cos_enclaves_args)
 * @flags:	0
 * @capacity:	in: entries at @enclaves
 * @count:	out: the enclaves registered; entries filled: the smaller of @count and @capacity
 *		(call again with a larger @capacity when @count is larger)
 * @entry_size:	in: sizeof(struct cos_enclave_info) as the caller knows it (at least 88:
 *		the fields up to @fallbacks); longer entries get zeros past the module's
 * @__pad:	0
 * @enclaves:	in: user pointer to @capacity entries of @entry_size bytes
 *
 * A snapshot taken under the module's lock.  Needs no privilege: names, CPUs and counters are
 * what `cosctl status` shows any user.  Errors: EINVAL (size, flags, @entry_size), EFAULT.
 */
struct cos_enclaves_args {
	__u32 size;
	__u32 flags;
	__u32 capacity;
	__u32 count;
	__u32 entry_size;
	__u32 __pad;
	__u64 enclaves;
};
#define COS_ENCLAVES_ARGS_SIZE_VER0	32
#define COS_ENCLAVE_INFO_SIZE_MIN	88

/**
 * struct cos_shim_bind - COS_IOC_SHIM_BIND: the shim the module is to serve
 * @map_id:	the id of the struct_ops map (struct sched_ext_ops) about to be attached
 * @flags:	0
 *
 * libcos loads the shim, names its map here, then attaches it.  The module serves only the
 * programs of that map (its kfuncs answer any other program as for a task that is not a COS
 * task), so a look-alike scheduler attached some other way gets nothing of it.  Only the next
 * attach may bind: a later SHIM_BIND replaces an unused one.
 */
struct cos_shim_bind {
	__u32 map_id;
	__u32 flags;
};

#define COS_IOC_MAGIC		0xCE

#ifndef __VMLINUX_H__
/* Get struct cos_info.  Errors: EINVAL (size), EFAULT (pointer). */
#define COS_IOC_GET_INFO	_IOWR(COS_IOC_MAGIC, 0x00, struct cos_info)
/* Become the lord of an enclave.  Errors: EPERM (no CAP_SYS_NICE), EBUSY (a CPU of the enclave,
 * or its lord CPU, is another enclave's or its lord's; or this file has a lord already), EEXIST
 * (an enclave has the name), ENOSPC (COS_ENCLAVES_MAX enclaves registered), ENXIO (no shim), EOPNOTSUPP (the shim cannot give shot tasks
 * priority on this kernel), EINVAL (size, flags, CPUs; a caller under SCHED_EXT: a lord is never
 * a COS task), EFAULT, ENOMEM. */
#define COS_IOC_REGISTER_LORD	_IOWR(COS_IOC_MAGIC, 0x01, struct cos_lord_args)
/* Commit shoot slots. */
#define COS_IOC_SHOOT		_IOW(COS_IOC_MAGIC, 0x02, struct cos_shoot_args)
/* Wait for messages. */
#define COS_IOC_WAIT		_IOW(COS_IOC_MAGIC, 0x03, struct cos_wait_args)
/* Give up the enclave (also done when the file is released).  Errors: EPERM (not the lord). */
#define COS_IOC_UNREGISTER	_IO(COS_IOC_MAGIC, 0x04)
/* List COS tasks (struct cos_tasks_args); the caller needs CAP_SYS_NICE (at the call, not only
 * at open).  Errors: EPERM, EINVAL, EFAULT, ENOMEM. */
#define COS_IOC_GET_TASKS	_IOWR(COS_IOC_MAGIC, 0x05, struct cos_tasks_args)
/* List bandwidth groups (struct cos_groups_args); the caller needs CAP_SYS_NICE (at the call).
 * Errors: EPERM, EINVAL, EFAULT, ENOMEM. */
#define COS_IOC_GET_GROUPS	_IOWR(COS_IOC_MAGIC, 0x06, struct cos_groups_args)
/* Name the shim's struct_ops map before attaching it (struct cos_shim_bind); the caller needs
 * CAP_SYS_ADMIN.  Errors: EPERM, EINVAL (flags, id 0), EBUSY (a shim is bound), EFAULT. */
#define COS_IOC_SHIM_BIND	_IOW(COS_IOC_MAGIC, 0x07, struct cos_shim_bind)
/* List the enclaves (struct cos_enclaves_args).  Errors: EINVAL, EFAULT.  Since
 * COS_FEAT_ENCLAVE_NAMES. */
#define COS_IOC_GET_ENCLAVES	_IOWR(COS_IOC_MAGIC, 0x08, struct cos_enclaves_args)
#endif

#endif /* _UAPI_LINUX_COS_H */
