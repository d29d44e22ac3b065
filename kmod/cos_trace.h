/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos_trace.h — cos.ko's tracepoints (system "cos", /sys/kernel/tracing/events/cos/): what the
 * module did for each decision the lord made, and what it decided by itself.  `cosctl trace`
 * records them beside sched_switch and the lords' decision records; docs/tracing.md lists what
 * each field means.  Disabled, each costs a static branch; none allocates.
 *
 * Included by the files that fire them, but cos_lord.c, which calls cos_trace.c's wrappers (that
 * file says why); cos_main.c defines CREATE_TRACE_POINTS.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM cos

#if !defined(_COS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _COS_TRACE_H

#include <linux/cpumask.h>
#include <linux/tracepoint.h>
#include <linux/cos.h>

/* The enums user space reads numbers of: each value's name once, for the format and printk. */
#define COS_TRACE_MSGS						\
	EM(COS_MSG_TASK_NEW,		"TASK_NEW")		\
	EM(COS_MSG_TASK_RUNNABLE,	"TASK_RUNNABLE")	\
	EM(COS_MSG_TASK_BLOCKED,	"TASK_BLOCKED")		\
	EM(COS_MSG_TASK_PREEMPTED,	"TASK_PREEMPTED")	\
	EM(COS_MSG_TASK_YIELD,		"TASK_YIELD")		\
	EM(COS_MSG_TASK_DEAD,		"TASK_DEAD")		\
	EM(COS_MSG_TASK_AFFINITY,	"TASK_AFFINITY")	\
	EM(COS_MSG_SHOOT_FAILED,	"SHOOT_FAILED")		\
	EM(COS_MSG_SHOOT_STALE,		"SHOOT_STALE")		\
	EM(COS_MSG_LORD_STALL,		"LORD_STALL")		\
	EM(COS_MSG_OVERFLOW,		"OVERFLOW")		\
	EM(COS_MSG_TASK_RUNNING,	"TASK_RUNNING")		\
	EM(COS_MSG_CPU_OFFLINE,		"CPU_OFFLINE")		\
	EM(COS_MSG_CPU_ONLINE,		"CPU_ONLINE")		\
	EM(COS_MSG_TASK_PLACED,		"TASK_PLACED")		\
	EM(COS_MSG_TASK_THROTTLED,	"TASK_THROTTLED")	\
	EM(COS_MSG_GROUP_THROTTLED,	"GROUP_THROTTLED")	\
	EMe(COS_MSG_GROUP_UNTHROTTLED,	"GROUP_UNTHROTTLED")

#define COS_TRACE_SHOOTS					\
	EM(COS_SHOOT_OK,		"OK")			\
	EM(COS_SHOOT_EMPTY,		"EMPTY")		\
	EM(COS_SHOOT_BAD_FLAGS,		"BAD_FLAGS")		\
	EM(COS_SHOOT_NO_LORD,		"NO_LORD")		\
	EM(COS_SHOOT_BAD_CPU,		"BAD_CPU")		\
	EM(COS_SHOOT_BAD_SLOT,		"BAD_SLOT")		\
	EM(COS_SHOOT_BAD_GEN,		"BAD_GEN")		\
	EM(COS_SHOOT_NOT_WAITING,	"NOT_WAITING")		\
	EM(COS_SHOOT_AFFINITY,		"AFFINITY")		\
	EM(COS_SHOOT_BUSY,		"BUSY")			\
	EM(COS_SHOOT_STALE_SEQ,		"STALE_SEQ")		\
	EM(COS_SHOOT_BEHIND,		"BEHIND")		\
	EM(COS_SHOOT_OTHER_ENCLAVE,	"OTHER_ENCLAVE")	\
	EM(COS_SHOOT_LATCH_FULL,	"LATCH_FULL")		\
	EMe(COS_SHOOT_THROTTLED,	"THROTTLED")

#ifndef _COS_TRACE_ONCE
#define _COS_TRACE_ONCE
/* cos_wake_rule's @how: started by a rule, or why none did (cos_task.c) */
enum cos_trace_wake {
	COS_TRACE_WAKE_FREE,		/* started on its CPU, which was free */
	COS_TRACE_WAKE_DISPLACE,	/* started in place of a task that is not urgent */
	COS_TRACE_WAKE_NEXT,		/* latched next, behind an urgent task */
	COS_TRACE_WAKE_NO_LORD,		/* no enclave with a lord in control to start it in */
	COS_TRACE_WAKE_OTHERS_WAIT,	/* tasks wait for the lord: the rules keep their order */
	COS_TRACE_WAKE_NO_RULE,		/* the lord set no rule that applies to it */
	COS_TRACE_WAKE_CPU_BUSY,	/* its CPU runs a task it may not displace */
	COS_TRACE_WAKE_LOST,		/* another task took its CPU first */
	COS_TRACE_WAKE_THROTTLED,	/* its bandwidth group is out of budget */
};

/* cos_kick's @why (cos_cpu.c) */
enum cos_trace_kick {
	COS_TRACE_KICK_SHOOT,		/* a task was shot there */
	COS_TRACE_KICK_LATCH,		/* a task was latched on a CPU that will not dispatch */
	COS_TRACE_KICK_PREEMPT,		/* preempt what runs (fallback, unregistration) */
	COS_TRACE_KICK_THROTTLE,	/* its task's group may be throttled */
};
#endif

#define COS_TRACE_WAKES						\
	EM(COS_TRACE_WAKE_FREE,		"free")			\
	EM(COS_TRACE_WAKE_DISPLACE,	"displace")		\
	EM(COS_TRACE_WAKE_NEXT,		"next")			\
	EM(COS_TRACE_WAKE_NO_LORD,	"none:no_lord")		\
	EM(COS_TRACE_WAKE_OTHERS_WAIT,	"none:others_wait")	\
	EM(COS_TRACE_WAKE_NO_RULE,	"none:no_rule")		\
	EM(COS_TRACE_WAKE_CPU_BUSY,	"none:cpu_busy")	\
	EM(COS_TRACE_WAKE_LOST,		"none:lost")		\
	EMe(COS_TRACE_WAKE_THROTTLED,	"none:throttled")

#define COS_TRACE_KICKS						\
	EM(COS_TRACE_KICK_SHOOT,	"shoot")		\
	EM(COS_TRACE_KICK_LATCH,	"latch")		\
	EM(COS_TRACE_KICK_PREEMPT,	"preempt")		\
	EMe(COS_TRACE_KICK_THROTTLE,	"throttle")

#undef EM
#undef EMe
#define EM(a, b)	TRACE_DEFINE_ENUM(a);
#define EMe(a, b)	TRACE_DEFINE_ENUM(a);
COS_TRACE_MSGS
COS_TRACE_SHOOTS
COS_TRACE_WAKES
COS_TRACE_KICKS
#undef EM
#undef EMe
#define EM(a, b)	{ a, b },
#define EMe(a, b)	{ a, b }

/**
 * cos_post - a message about a task (or the enclave) for the lord
 * @enclave: the enclave's id
 * @type: COS_MSG_*
 * @cpu: where it happened
 * @pid: the task's thread id (0: an enclave-wide message)
 * @seq: its sequence number in the ring; 0: dropped, the ring was full
 * @arg: the message's arg
 * @woke: whether it woke the lord (a lazy message does not, cos_post_lazy())
 *
 * Context: any, IRQs off; the task's t->lock held (cos_ring.c).
 */
TRACE_EVENT(cos_post,
	TP_PROTO(u32 enclave, u32 type, s32 cpu, pid_t pid, u64 seq, u64 arg, bool woke),
	TP_ARGS(enclave, type, cpu, pid, seq, arg, woke),
	TP_STRUCT__entry(
		__field(u32, enclave)
		__field(u32, type)
		__field(s32, cpu)
		__field(pid_t, pid)
		__field(u64, seq)
		__field(u64, arg)
		__field(bool, woke)
	),
	TP_fast_assign(
		__entry->enclave = enclave;
		__entry->type = type;
		__entry->cpu = cpu;
		__entry->pid = pid;
		__entry->seq = seq;
		__entry->arg = arg;
		__entry->woke = woke;
	),
	TP_printk("enclave=%u type=%s cpu=%d pid=%d seq=%llu arg=%#llx woke=%d",
		  __entry->enclave, __print_symbolic(__entry->type, COS_TRACE_MSGS),
		  __entry->cpu, __entry->pid, __entry->seq, __entry->arg, __entry->woke)
);

/**
 * cos_shoot - one shoot slot of a COS_IOC_SHOOT, committed
 * @enclave: the lord's enclave
 * @cpu: the slot's CPU
 * @pid: the task the slot names (0: no such task)
 * @slot: the task's slot, as the lord wrote it
 * @flags: COS_SHOOT_F_*
 * @slice: the slice the lord asked for (ns; 0: no limit)
 * @status: COS_SHOOT_* (OK: placed)
 *
 * Context: COS_IOC_SHOOT or its io_uring command; the enclave's e->lock held, IRQs off.
 */
TRACE_EVENT(cos_shoot,
	TP_PROTO(u32 enclave, s32 cpu, pid_t pid, u32 slot, u32 flags, u64 slice, u32 status),
	TP_ARGS(enclave, cpu, pid, slot, flags, slice, status),
	TP_STRUCT__entry(
		__field(u32, enclave)
		__field(s32, cpu)
		__field(pid_t, pid)
		__field(u32, slot)
		__field(u32, flags)
		__field(u32, status)
		__field(u64, slice)
	),
	TP_fast_assign(
		__entry->enclave = enclave;
		__entry->cpu = cpu;
		__entry->pid = pid;
		__entry->slot = slot;
		__entry->flags = flags;
		__entry->status = status;
		__entry->slice = slice;
	),
	TP_printk("enclave=%u cpu=%d pid=%d slot=%u flags=%#x slice=%llu status=%s",
		  __entry->enclave, __entry->cpu, __entry->pid, __entry->slot, __entry->flags,
		  __entry->slice, __print_symbolic(__entry->status, COS_TRACE_SHOOTS))
);

/**
 * cos_dispatch - a CPU's ops.dispatch takes the task shot (or latched) to it
 * @cpu: the CPU
 * @pid: the task
 * @slice: its slice (ns; 0: no limit)
 * @latched: taken off the CPU's latch rather than its pending slot
 *
 * Context: ops.dispatch (@cpu's rq lock held, IRQs off).
 */
TRACE_EVENT(cos_dispatch,
	TP_PROTO(s32 cpu, pid_t pid, u64 slice, bool latched),
	TP_ARGS(cpu, pid, slice, latched),
	TP_STRUCT__entry(
		__field(s32, cpu)
		__field(pid_t, pid)
		__field(u64, slice)
		__field(bool, latched)
	),
	TP_fast_assign(
		__entry->cpu = cpu;
		__entry->pid = pid;
		__entry->slice = slice;
		__entry->latched = latched;
	),
	TP_printk("cpu=%d pid=%d slice=%llu latched=%d", __entry->cpu, __entry->pid,
		  __entry->slice, __entry->latched)
);

/**
 * cos_select_cpu - the wake rules chose a CPU for a waking COS task (ops.select_cpu)
 * @pid: the task
 * @prev_cpu: the CPU it last ran on
 * @cpu: the CPU chosen (-1: none; it stays on @prev_cpu)
 *
 * Context: ops.select_cpu (@pid's pi_lock held, IRQs off).
 */
TRACE_EVENT(cos_select_cpu,
	TP_PROTO(pid_t pid, s32 prev_cpu, s32 cpu),
	TP_ARGS(pid, prev_cpu, cpu),
	TP_STRUCT__entry(
		__field(pid_t, pid)
		__field(s32, prev_cpu)
		__field(s32, cpu)
	),
	TP_fast_assign(
		__entry->pid = pid;
		__entry->prev_cpu = prev_cpu;
		__entry->cpu = cpu;
	),
	TP_printk("pid=%d prev_cpu=%d cpu=%d", __entry->pid, __entry->prev_cpu, __entry->cpu)
);

/**
 * cos_wake_rule - a waking COS task: started by a wake rule, or why none did
 * @enclave: its enclave (0: none)
 * @pid: the task
 * @cpu: the CPU it woke on
 * @how: enum cos_trace_wake
 *
 * Context: ops.enqueue (the task's rq lock and t->lock held, IRQs off).
 */
TRACE_EVENT(cos_wake_rule,
	TP_PROTO(u32 enclave, pid_t pid, s32 cpu, u32 how),
	TP_ARGS(enclave, pid, cpu, how),
	TP_STRUCT__entry(
		__field(u32, enclave)
		__field(pid_t, pid)
		__field(s32, cpu)
		__field(u32, how)
	),
	TP_fast_assign(
		__entry->enclave = enclave;
		__entry->pid = pid;
		__entry->cpu = cpu;
		__entry->how = how;
	),
	TP_printk("enclave=%u pid=%d cpu=%d how=%s", __entry->enclave, __entry->pid, __entry->cpu,
		  __print_symbolic(__entry->how, COS_TRACE_WAKES))
);

/**
 * cos_kick - cos.ko interrupts a CPU so that it reschedules
 * @cpu: the CPU
 * @why: enum cos_trace_kick
 *
 * Context: any, under no lock of cos.ko (before the IPI is sent).
 */
TRACE_EVENT(cos_kick,
	TP_PROTO(s32 cpu, u32 why),
	TP_ARGS(cpu, why),
	TP_STRUCT__entry(
		__field(s32, cpu)
		__field(u32, why)
	),
	TP_fast_assign(
		__entry->cpu = cpu;
		__entry->why = why;
	),
	TP_printk("cpu=%d why=%s", __entry->cpu, __print_symbolic(__entry->why, COS_TRACE_KICKS))
);

/**
 * cos_stall - a lord was declared stalled: its tasks go to the fair policy
 * @enclave: the enclave
 * @reason: COS_STALL_*
 * @report: what the kernel saw (as `cosctl status` shows it)
 *
 * Context: the stall timer (hard IRQ), the enclave's e->lock held.
 */
TRACE_EVENT(cos_stall,
	TP_PROTO(u32 enclave, u64 reason, const char *report),
	TP_ARGS(enclave, reason, report),
	TP_STRUCT__entry(
		__field(u32, enclave)
		__field(u64, reason)
		__string(report, report)
	),
	TP_fast_assign(
		__entry->enclave = enclave;
		__entry->reason = reason;
		__assign_str(report);
	),
	TP_printk("enclave=%u reason=%s: %s", __entry->enclave,
		  __print_symbolic(__entry->reason, { COS_STALL_UNCONSUMED, "unconsumed" },
				   { COS_STALL_STARVED, "starved" }), __get_str(report))
);

/**
 * cos_fallback - a lord lost control: its waiting tasks go to the fair policy
 * @enclave: the enclave
 * @tasks: how many
 *
 * Context: the enclave's e->lock held, IRQs off (stall, the lord's exit, unregistration).
 */
TRACE_EVENT(cos_fallback,
	TP_PROTO(u32 enclave, u32 tasks),
	TP_ARGS(enclave, tasks),
	TP_STRUCT__entry(
		__field(u32, enclave)
		__field(u32, tasks)
	),
	TP_fast_assign(
		__entry->enclave = enclave;
		__entry->tasks = tasks;
	),
	TP_printk("enclave=%u tasks=%u", __entry->enclave, __entry->tasks)
);

/**
 * cos_enclave - a lord registered its enclave, or the enclave ended
 * @id: the enclave's id
 * @name: its name
 * @lord: the lord's thread id
 * @lord_cpu: the lord's CPU
 * @cpus: the enclave's CPUs
 * @registered: true at registration, false at its end
 *
 * Context: process context (COS_IOC_REGISTER_LORD, unregistration); cos_lock and the
 * enclave's e->lock held, IRQs off.
 */
TRACE_EVENT(cos_enclave,
	TP_PROTO(u32 id, const char *name, pid_t lord, s32 lord_cpu, const struct cpumask *cpus,
		 bool registered),
	TP_ARGS(id, name, lord, lord_cpu, cpus, registered),
	TP_STRUCT__entry(
		__field(u32, id)
		__string(name, name)
		__field(pid_t, lord)
		__field(s32, lord_cpu)
		__bitmask(cpus, nr_cpumask_bits)
		__field(bool, registered)
	),
	TP_fast_assign(
		__entry->id = id;
		__assign_str(name);
		__entry->lord = lord;
		__entry->lord_cpu = lord_cpu;
		__assign_bitmask(cpus, cpumask_bits(cpus), nr_cpumask_bits);
		__entry->registered = registered;
	),
	TP_printk("id=%u name=%s lord=%d lord_cpu=%d cpus=%s registered=%d", __entry->id,
		  __get_str(name), __entry->lord, __entry->lord_cpu, __get_bitmask(cpus),
		  __entry->registered)
);

#endif /* _COS_TRACE_H */

/* outside the guard: define_trace.h reads this header again */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE cos_trace
#include <trace/define_trace.h>
