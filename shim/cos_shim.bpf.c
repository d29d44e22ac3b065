/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos_shim.bpf.c — the cos BPF shim: the sched_ext scheduler that cos.ko drives.
 *
 * A kernel module cannot register sched_ext_ops nor call scx_bpf_*, so this small scheduler is
 * cos's hands on the run queues.  libcos embeds it as a libbpf skeleton and attaches it.  It
 * runs in full mode (every SCHED_NORMAL/BATCH/IDLE/EXT task is on sched_ext) or, when libcos
 * sets SCX_OPS_SWITCH_PARTIAL, in partial mode (only SCHED_EXT tasks, the COS tasks; the lord and
 * per-CPU kthreads then stay on the fair class and never reach these ops).
 *
 * COS tasks (policy SCHED_EXT) get a slot in cos.ko's task table, kept in task-local storage;
 * every event of theirs goes to cos.ko through a kfunc (cos_kf_*, kmod/cos_kfuncs.c).  The shim
 * decides nothing about them: cos.ko says where each goes (enum cos_enq) and what each CPU runs
 * next (cos_kf_dispatch()).  Three tiers: per-CPU kthreads and the lord, then shot COS tasks at
 * the head of their CPU's local DSQ, then everything else.
 *
 * Everything else gets a weighted fair policy: one DSQ ordered by virtual time, where a task
 * waits only while no CPU it may run on idles (cos_fair_to_idle()).  cgroups' cpu.max and
 * cpu.weight apply to it through cos.ko's bandwidth groups (kmod/cos_group.c): a throttled
 * group's tasks park in a DSQ of the group's own.  Kernel API drift is met in
 * shim_compat.h: a kfunc this kernel lacks costs a feature, not the attach.
 *
 * See docs/design.md, "The shim".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/cos.h>
#include "cos_shim_intf.h"
#include "shim_compat.h"

char _license[] SEC("license") = "GPL";

_Static_assert(COS_SHIM_OPS_ENQ_LAST == SCX_OPS_ENQ_LAST, "libcos clears the shim's ENQ_LAST");
_Static_assert(COS_SHIM_OPS_SWITCH_PARTIAL == SCX_OPS_SWITCH_PARTIAL, "libcos sets partial mode");

#define COS_FAIR_DSQ	0
#define COS_LORD_DSQ	1	/* the lord, parked while its local shoot runs */
#define COS_EPROTO	71	/* errno values are not in vmlinux.h */
#define COS_SCHED_EXT	7	/* SCHED_EXT policy */
#define COS_PF_KTHREAD	0x00200000	/* PF_KTHREAD: task flags are not in vmlinux.h */
#define COS_NO_SLOT	(-1)
#define COS_FALLBACK_BATCH 16	/* fallback tasks one dispatch drains at most */
#define COS_FAIR_WAIT_NS	(1000ULL * 1000 * 1000)	/* the longest wait the lag bound allows */
#define COS_FAIR_MIN_SLICE_NS	(1000ULL * 1000)	/* a fair slice shrinks to this at least */
#define COS_GROUP_DSQ(cgid)	((1ULL << 48) | (cgid))	/* a throttled group's parked tasks */
#define COS_RELEASE_BATCH	8	/* released groups one dispatch drains at most */
#define COS_DSQ_ITER		(&___it)	/* bpf_for_each()'s iterator (libbpf's bpf_helpers.h) */

const volatile __u64 cos_slice_ns = 5ULL * 1000 * 1000;
const volatile __u32 cos_abi_expected = COS_ABI_VERSION;	/* a test may change it */
const volatile __u32 cos_nr_cpus = 1;	/* online CPUs when libcos loaded the shim */

/* Set by ops.init: 1 if the fair policy orders by vtime, 0 if it fell back to the FIFO global
 * DSQ (no scx_bpf_create_dsq; cos.ko then refuses lords). */
__u32 cos_fair_vtime;
/* Set by ops.init: 1 if throttled groups' tasks are parked (needs the DSQ iterator too). */
__u32 cos_bw_enforced;

/* Written once by ops.exit; read by libcos (struct cos_exit_info). */
struct cos_exit_info cos_exit_info SEC(".data");

static bool cos_is_pcpu_kthread(const struct task_struct *p)
{
	return (p->flags & COS_PF_KTHREAD) && p->nr_cpus_allowed == 1;
}

/*
 * How many cgroups have a quota, and how many a weight other than 100: while none does,
 * ops.running, ops.stopping and ops.tick call no group kfunc.  Counted from the cgroup ops.
 * Each cgroup's two flags live in its cgroup storage and change by atomic exchange, so ops
 * racing on one cgroup (cpu.max writers hold only sched_ext's read side) count it once.  A
 * cgroup whose storage cannot be had counts in both for good.  A count read a moment stale
 * costs one charge at most, as cos.ko's own counts do.
 */
__u64 cos_nr_limited, cos_nr_weighted;	/* 64-bit: the BPF atomics this clang emits */

struct cos_cgroup_ctx {
	__u64 limited;		/* 1 if its cpu.max has a quota */
	__u64 weighted;		/* 1 if its cpu.weight is not 100 */
};

struct {
	__uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cos_cgroup_ctx);
} cos_cgroup_ctxs SEC(".maps");

/* Global virtual time: the largest vtime of any task that started running. */
static u64 cos_vtime_now;

/* What runs on a CPU, as the fair policy sees it; read from other CPUs (a moment stale). */
struct cos_cpu_ctx {
	u32 movable;		/* a fair task that may run on other CPUs too */
	u32 lord_preempt;	/* the lord was put first here and has not started yet: the task
				 * it preempts resumes here after it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cos_cpu_ctx);
} cos_cpu_ctxs SEC(".maps");

/* @cpu's context, this CPU's if @cpu < 0 */
static struct cos_cpu_ctx *cos_cpu_ctx(s32 cpu)
{
	u32 zero = 0;

	return cpu < 0 ? bpf_map_lookup_elem(&cos_cpu_ctxs, &zero) :
			 bpf_map_lookup_percpu_elem(&cos_cpu_ctxs, &zero, cpu);
}

struct cos_task_ctx {
	u64 exec_at_start;	/* se.sum_exec_runtime when it last started running */
	u64 exec_charged;	/* se.sum_exec_runtime at its last bandwidth charge */
	u64 share_cgid;		/* counted runnable in this cgroup's share, 0 if not */
	u32 share_weight;	/* with this weight */
	s32 slot;		/* slot in cos.ko's task table, COS_NO_SLOT if not a COS task */
	bool budgeted;		/* ops.running asked cos_kf_group_budget() */
	bool fair;		/* queued last by the fair policy: its sched_yield() is the policy's */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cos_task_ctx);
} cos_task_ctxs SEC(".maps");

static struct cos_task_ctx *cos_ctx(struct task_struct *p)
{
	struct cos_task_ctx *tctx;

	tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, 0);
	if (tctx)
		return tctx;
	tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (tctx)
		tctx->slot = COS_NO_SLOT;
	return tctx;
}

/* The task's slot if it is a COS task; attaches or detaches it when its policy changed. */
static s32 cos_slot(struct task_struct *p, struct cos_task_ctx *tctx, bool runnable)
{
	bool is_cos = p->policy == COS_SCHED_EXT;

	if (is_cos && tctx->slot < 0)
		tctx->slot = cos_kf_task_attach(p, runnable);
	else if (!is_cos && tctx->slot >= 0) {
		cos_kf_task_detach(p, tctx->slot);
		tctx->slot = COS_NO_SLOT;
	}
	return tctx->slot;
}

/* @p's cgroup (of its cpu controller: its task group's), as cos.ko knows groups. */
static u64 cos_task_cgid(struct task_struct *p)
{
	return p->sched_task_group->css.cgroup->kn->id;
}

/* The group where @p must park because it or an ancestor is throttled, 0 if none. */
static u64 cos_parked_group(struct task_struct *p)
{
	return cos_bw_enforced ? cos_kf_group_throttled(cos_task_cgid(p)) : 0;
}

/*
 * Count @p, a fair task about to run or wait, among its cgroup's runnable tasks for
 * cpu.weight's shares, once: ops.quiescent counts it out.  Only while some cgroup weighs other
 * than 100.  A task runnable when that starts (or handed back by cos.ko at ops.dispatch) is
 * counted at its next enqueue: a busy task's is at its slice's end.
 */
static void cos_share_runnable(struct task_struct *p, struct cos_task_ctx *tctx)
{
	if (!cos_nr_weighted || !cos_fair_vtime || !tctx || tctx->share_cgid)
		return;
	tctx->share_cgid = cos_task_cgid(p);
	tctx->share_weight = p->scx.weight;
	cos_kf_group_runnable(tctx->share_cgid, tctx->share_weight);
}

static bool cos_have_idle_pick(void)
{
	return cos_have(scx_bpf_kick_cpu) && cos_have(scx_bpf_test_and_clear_cpu_idle) &&
	       cos_have(scx_bpf_pick_idle_cpu) && cos_have(scx_bpf_get_idle_cpumask);
}

/* Whether any CPU idles. */
static bool cos_some_cpu_idles(void)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool some = !bpf_cpumask_empty(idle);

	scx_bpf_put_idle_cpumask(idle);
	return some;
}

/*
 * @p, a fair task about to wait in the fair DSQ: a CPU that idles runs it now instead, its own
 * first (SCX_DSQ_LOCAL_ON moves it and wakes that CPU).  Without this it waits until a busy CPU
 * reschedules while another idles: the core wakes a CPU only for its local DSQ.  A task that
 * may run only on its CPU, woken while a fair task that may run elsewhere holds that CPU and
 * another idles, preempts that task rather than wait for its slice to end, as EEVDF's wake-up
 * preemption would: a server pinned to its CPU does not wait a slice behind its own client,
 * which may go on elsewhere.  False if @p is to wait in the DSQ.
 */
static bool cos_fair_to_idle(struct task_struct *p, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p), idle;
	struct cos_cpu_ctx *cctx;

	if (!cos_have_idle_pick())
		return false;
	if (scx_bpf_test_and_clear_cpu_idle(cpu)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, cos_slice_ns, enq_flags);
		return true;
	}
	if (p->nr_cpus_allowed > 1 && !p->migration_disabled) {	/* else it may not move */
		idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (idle < 0)
			return false;
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | idle, cos_slice_ns, enq_flags);
		return true;
	}
	cctx = cos_cpu_ctx(cpu);
	if ((enq_flags & SCX_ENQ_WAKEUP) && cctx && cctx->movable && cos_some_cpu_idles())
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	return false;
}

/*
 * A fair task's slice: cos_slice_ns while at most one task per CPU waits, shorter as more do
 * (each waits about cos_slice_ns per round, as under EEVDF), COS_FAIR_MIN_SLICE_NS at least.
 */
static u64 cos_fair_slice(void)
{
	s32 waiting = cos_have(scx_bpf_dsq_nr_queued) ? scx_bpf_dsq_nr_queued(COS_FAIR_DSQ) : 0;
	u64 slice = cos_slice_ns * cos_nr_cpus / ((waiting > 0 ? waiting : 0) + cos_nr_cpus);

	return slice < COS_FAIR_MIN_SLICE_NS ? COS_FAIR_MIN_SLICE_NS : slice;
}

/*
 * The lord woke on @cpu and preempts what runs there, for a moment: it handles its messages and
 * sleeps again.  The fair task it preempts stays behind it (cos_fair_insert()), as under EEVDF,
 * instead of going to the shared DSQ, where another CPU would take it: a busy task beside the
 * lord moved to an idle enclave CPU at the lord's wake-ups, and back when a COS task ran there.
 * Not for per-CPU kthreads: ksoftirqd may run long.
 */
static void cos_lord_preempts(s32 cpu)
{
	struct cos_cpu_ctx *cctx = cos_cpu_ctx(cpu);

	if (cctx)
		cctx->lord_preempt = 1;
}

/*
 * The floor of a queued task's vtime, one fair slice behind the clock: a task that slept comes
 * back with at most a turn's credit.  With cos_slice_ns it came back up to 5 ms ahead of a task
 * that was preempted, which then waited while each task that had slept spent that: PostgreSQL's
 * backends blocking for their client between queries.
 */
static u64 cos_fair_floor(void)
{
	return cos_vtime_now - cos_fair_slice();
}

static void cos_fair_insert(struct task_struct *p, u64 enq_flags)
{
	struct cos_task_ctx *tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, 0);
	struct cos_cpu_ctx *cctx;
	u64 vtime = p->scx.dsq_vtime;
	u64 parked = cos_parked_group(p);
	u64 floor;

	if (tctx)
		tctx->fair = true;

	if (enq_flags & SCX_ENQ_LAST && !parked) {
		/* nothing else to run here: it goes on (a shared DSQ would leave the CPU idle) */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_slice_ns, enq_flags);
		return;
	}
	/* preempted by the lord (cos_lord_preempts()), on this CPU: it resumes after it */
	cctx = cos_cpu_ctx(-1);
	if (!(enq_flags & SCX_ENQ_WAKEUP) && !parked && cctx && cctx->lord_preempt &&
	    scx_bpf_task_cpu(p) == bpf_get_smp_processor_id()) {
		cctx->lord_preempt = 0;
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_fair_slice(), enq_flags);
		return;
	}
	if (!cos_have(scx_bpf_create_dsq)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, cos_slice_ns, enq_flags);
		return;
	}
	if (!parked && cos_fair_to_idle(p, enq_flags))
		return;
	floor = cos_fair_floor();
	if ((s64)(vtime - floor) < 0) {
		vtime = floor;
	} else if (cos_have(scx_bpf_dsq_nr_queued)) {
		s32 waiting = scx_bpf_dsq_nr_queued(COS_FAIR_DSQ);
		/* the lag bound: no task waits much longer than COS_FAIR_WAIT_NS */
		u64 lag_max = COS_FAIR_WAIT_NS * cos_nr_cpus / (waiting > 0 ? waiting + 1 : 1);

		if ((s64)(vtime - (cos_vtime_now + lag_max)) > 0)
			vtime = cos_vtime_now + lag_max;
	}
	scx_bpf_dsq_insert_vtime(p, parked ? COS_GROUP_DSQ(parked) : COS_FAIR_DSQ,
				 parked ? cos_slice_ns : cos_fair_slice(), vtime, enq_flags);
}

/*
 * Group @id was refilled: its parked tasks go back to the fair DSQ, each with its vtime
 * clamped to cos_fair_floor(), or to an ancestor's DSQ if that is still throttled.  An
 * idle CPU is kicked for each task but the first (this CPU's): the refill's kick woke every
 * idle CPU at once, and those that dispatched before this drain found nothing and went idle.
 */
static void cos_group_drain(u64 id)
{
	struct task_struct *p;
	bool first = true;
	u64 floor = cos_fair_floor();

	if (!cos_have(bpf_iter_scx_dsq_new))
		return;
	bpf_for_each(scx_dsq, p, COS_GROUP_DSQ(id), 0) {
		u64 parked = cos_kf_group_throttled(cos_task_cgid(p));
		u64 vtime = p->scx.dsq_vtime;
		s32 cpu;

		if ((s64)(vtime - floor) < 0)
			vtime = floor;
		scx_bpf_dsq_move_set_vtime(COS_DSQ_ITER, vtime);
		if (!scx_bpf_dsq_move_vtime(COS_DSQ_ITER, p,
					    parked ? COS_GROUP_DSQ(parked) : COS_FAIR_DSQ, 0) || parked)
			continue;
		if (!first && cos_have(scx_bpf_pick_idle_cpu) && cos_have(scx_bpf_kick_cpu)) {
			cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
			if (cpu >= 0)
				scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		}
		first = false;
	}
}

SEC("struct_ops/cos_select_cpu")
s32 BPF_PROG(cos_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct cos_task_ctx *tctx = cos_ctx(p);
	bool is_idle = false;
	s32 cpu, slot;

	/*
	 * Tasks the lord places stay where they are until it shoots them (no direct dispatch to an
	 * idle CPU), or go where its wake rules start them (the enqueue there, COS_ENQ_PLACED).
	 * Attach first, or a task that just became SCHED_EXT would slip past the lord.
	 */
	if (tctx && (slot = cos_slot(p, tctx, true)) >= 0 && cos_kf_lord_active()) {
		const struct cpumask *idle;

		if (!cos_have(scx_bpf_get_idle_cpumask))
			return prev_cpu;	/* no wake rules without the idle mask */
		idle = scx_bpf_get_idle_cpumask();
		cpu = cos_kf_select_cpu(p, slot, prev_cpu, idle);
		scx_bpf_put_idle_cpumask(idle);
		return cpu >= 0 ? cpu : prev_cpu;
	}
	if (!cos_have(scx_bpf_select_cpu_dfl))
		return prev_cpu;	/* hidden by this kernel's BTF (Debian 7.2.11): no idle pick */
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	/*
	 * A sync wake-up's pick is the waker's CPU, busy, even while another CPU idles: take the
	 * idle one, as EEVDF's select_idle_sibling() does.
	 */
	if (!is_idle && cos_have_idle_pick()) {
		s32 idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);

		if (idle >= 0) {
			cpu = idle;
			is_idle = true;
		}
	}
	if (is_idle && !cos_parked_group(p)) {	/* a throttled one parks at enqueue */
		cos_share_runnable(p, tctx);	/* no ops.enqueue follows */
		if (tctx)
			tctx->fair = true;
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_slice_ns, 0);
	}
	return cpu;
}

SEC("struct_ops/cos_enqueue")
void BPF_PROG(cos_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct cos_task_ctx *tctx = cos_ctx(p);
	s32 slot = tctx ? cos_slot(p, tctx, true) : COS_NO_SLOT;

	if (tctx)
		tctx->fair = false;	/* until cos_fair_insert() */
	if (cos_is_pcpu_kthread(p)) {
		/*
		 * Short work others may wait for: it preempts whatever runs, COS tasks too.  A busy
		 * one does not keep its CPU: when its slice ends, ops.dispatch runs (and moves a
		 * fair task to the local DSQ) before it is put back here.
		 */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | scx_bpf_task_cpu(p), cos_slice_ns,
				   enq_flags | SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
		return;
	}
	switch (cos_kf_enqueue(p, slot, enq_flags, cos_task_cgid(p))) {
	case COS_ENQ_CUSTODY:
		return;		/* waits for the lord's shoot, queued nowhere */
	case COS_ENQ_PLACED:	/* the wake rules start it here (sched_ext lets it run here) */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_kf_task_slice(p, slot) ?: SCX_SLICE_INF,
				   enq_flags | SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
		return;
	case COS_ENQ_LORD_YIELD:
		/* behind the local shoot: in the local DSQ, ops.tick would end the shot slice */
		scx_bpf_dsq_insert(p, COS_LORD_DSQ, cos_slice_ns, enq_flags);
		return;
	case COS_ENQ_LORD:
		if (enq_flags & SCX_ENQ_WAKEUP) {
			enq_flags |= SCX_ENQ_HEAD | SCX_ENQ_PREEMPT;
			cos_lord_preempts(scx_bpf_task_cpu(p));
		}
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | scx_bpf_task_cpu(p), cos_slice_ns,
				   enq_flags);
		return;
	case COS_ENQ_FAIR:
		break;
	}
	cos_share_runnable(p, tctx);
	cos_fair_insert(p, enq_flags);
}

SEC("struct_ops/cos_dequeue")
void BPF_PROG(cos_dequeue, struct task_struct *p, u64 deq_flags)
{
	struct cos_task_ctx *tctx = cos_ctx(p);

	if (tctx && tctx->slot >= 0)
		cos_kf_dequeue(p, tctx->slot);
}

SEC("struct_ops/cos_dispatch")
void BPF_PROG(cos_dispatch, s32 cpu, struct task_struct *prev)
{
	struct task_struct *p;
	bool shot = false;
	u64 slice = 0;
	s32 pid;
	int i;

	p = cos_kf_dispatch(cpu, &slice);
	if (p) {
		struct cos_task_ctx *tctx = cos_ctx(p);
		s32 slot = tctx ? tctx->slot : COS_NO_SLOT;

		/* Dispatching where the task may not run would eject the scheduler: re-check. */
		if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
		    (!p->migration_disabled || scx_bpf_task_cpu(p) == cpu)) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice ?: SCX_SLICE_INF, SCX_ENQ_HEAD);
			shot = true;
		} else {
			cos_kf_dispatch_failed(p, slot, cpu);
		}
		bpf_task_release(p);
	}
	for (i = 0; i < COS_FALLBACK_BATCH; i++) {
		pid = cos_kf_fallback_take();
		if (!pid)
			break;
		p = bpf_task_from_pid(pid);
		if (!p)
			continue;	/* exiting: exit_task cleans up */
		cos_fair_insert(p, 0);
		bpf_task_release(p);
	}
	for (i = 0; i < COS_RELEASE_BATCH && cos_bw_enforced; i++) {
		u64 id = cos_kf_group_released();

		if (!id)
			break;
		cos_group_drain(id);
	}
	if (shot)
		return;		/* nothing behind it, or ops.tick would end its slice */
	if (cos_have(scx_bpf_create_dsq)) {
		scx_bpf_dsq_move_to_local(COS_LORD_DSQ);
		scx_bpf_dsq_move_to_local(COS_FAIR_DSQ);
	}
	/* else the core consumes SCX_DSQ_GLOBAL by itself (and cos.ko refuses lords) */
}

SEC("struct_ops/cos_running")
void BPF_PROG(cos_running, struct task_struct *p)
{
	struct cos_task_ctx *tctx = cos_ctx(p);
	struct cos_cpu_ctx *cctx = cos_cpu_ctx(-1);

	if ((s64)(p->scx.dsq_vtime - cos_vtime_now) > 0)
		cos_vtime_now = p->scx.dsq_vtime;
	if (cctx) {
		cctx->movable = tctx && tctx->slot < 0 && p->nr_cpus_allowed > 1 &&
				!(p->flags & COS_PF_KTHREAD);
		/* a preempted task was enqueued before the next one runs: the mark is spent */
		cctx->lord_preempt = 0;
	}
	if (!tctx)
		return;
	tctx->exec_at_start = p->se.sum_exec_runtime;
	tctx->exec_charged = p->se.sum_exec_runtime;
	if (cos_bw_enforced && cos_nr_limited) {
		/* it stops when its share of the budget is spent, and is charged */
		u64 budget = cos_kf_group_budget(cos_task_cgid(p));

		if (budget < p->scx.slice)
			p->scx.slice = budget;
		tctx->budgeted = true;
	}
	if (tctx->slot >= 0)
		cos_kf_running(p, tctx->slot, scx_bpf_task_cpu(p));
}

SEC("struct_ops/cos_stopping")
void BPF_PROG(cos_stopping, struct task_struct *p, bool runnable)
{
	struct cos_task_ctx *tctx = cos_ctx(p);
	struct cos_cpu_ctx *cctx = cos_cpu_ctx(-1);
	u64 used;
	u32 weight = p->scx.weight;

	if (cctx)
		cctx->movable = 0;
	if (!tctx)
		return;
	/* the charge first: it draws on this CPU's reservation, whose rest the stop gives back */
	if (cos_nr_limited)
		cos_kf_group_charge(cos_task_cgid(p), p->se.sum_exec_runtime - tctx->exec_charged);
	tctx->exec_charged = p->se.sum_exec_runtime;
	if (tctx->budgeted) {
		cos_kf_group_stopped();
		tctx->budgeted = false;
	}
	used = p->se.sum_exec_runtime - tctx->exec_at_start;
	if (cos_nr_weighted) {
		/* used * 100 * ONE / share in two steps: the product overflows after ~47 min */
		u64 share = cos_kf_group_share(cos_task_cgid(p), weight) ?: 1;

		p->scx.dsq_vtime += used / share * 100 * COS_GROUP_SHARE_ONE +
				    used % share * 100 * COS_GROUP_SHARE_ONE / share;
	}
	else
		p->scx.dsq_vtime += used * 100 / (weight ?: 1);
	if (tctx->slot >= 0)
		cos_kf_stopping(p, tctx->slot, runnable);
}

/*
 * The tick rule: a COS task gives way at the tick to whatever waits in its CPU's local DSQ, a
 * tier above it.  A kthread's SCX_ENQ_PREEMPT can be lost: the core drops the rq lock while it
 * flushes the dispatch buffer, and the shot task is inserted at the head after the kthread.
 * Such a kthread then waits at most a tick.  ops.dispatch puts nothing else behind a shot
 * task, so nothing else ends its slice early.  The fair floor: a COS task that has run
 * COS_FAIR_WAIT_NS without a stop gives way to the fair tier if a task waits there (it may be
 * one that can run only on this CPU).  Any task is also charged what it ran since its last
 * charge, and stops if that throttled its group.
 */
SEC("struct_ops/cos_tick")
void BPF_PROG(cos_tick, struct task_struct *p)
{
	struct cos_task_ctx *tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, 0);
	bool throttled = false;

	if (!tctx)
		return;
	if (cos_nr_limited)
		throttled = cos_kf_group_charge(cos_task_cgid(p),
						p->se.sum_exec_runtime - tctx->exec_charged);
	tctx->exec_charged = p->se.sum_exec_runtime;
	if (throttled && cos_bw_enforced && !cos_is_pcpu_kthread(p))
		p->scx.slice = 0;
	if (tctx->slot < 0 || !cos_have(scx_bpf_dsq_nr_queued))
		return;
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) > 0)
		p->scx.slice = 0;
	/* the fair floor: a task that may run only here must not wait for sched_ext's watchdog */
	else if (p->se.sum_exec_runtime - tctx->exec_at_start >= COS_FAIR_WAIT_NS &&
		 scx_bpf_dsq_nr_queued(COS_FAIR_DSQ) > 0)
		p->scx.slice = 0;
}

SEC("struct_ops/cos_quiescent")
void BPF_PROG(cos_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct cos_task_ctx *tctx = cos_ctx(p);

	if (!tctx)
		return;
	if (tctx->share_cgid) {
		cos_kf_group_quiescent(tctx->share_cgid, tctx->share_weight);
		tctx->share_cgid = 0;
	}
	if (tctx->slot >= 0)
		cos_kf_quiescent(p, tctx->slot, deq_flags & SCX_DEQ_SLEEP);
}

SEC("struct_ops/cos_yield")
bool BPF_PROG(cos_yield, struct task_struct *from, struct task_struct *to)
{
	struct cos_task_ctx *tctx = cos_ctx(from);

	/* handed to the task it woke (COS_WAKE_HANDOFF): its CPU's ops.dispatch takes that one */
	if (tctx && tctx->slot >= 0 && cos_kf_yield(from, tctx->slot)) {
		from->scx.slice = 0;
		return false;
	}
	/*
	 * A task of the fair policy (a COS task too while no lord has it) that calls sched_yield():
	 * its slice ends, and it goes behind every task that has started running and a fair slice
	 * (of its weight) further, as EEVDF pushes the yielder's deadline by a slice.  Threads that
	 * yield in a loop then take one turn each, whatever each turn cost; behind only the clock
	 * they went in order of the CPU time of their turns, and one whose turn ran long waited
	 * for hundreds of the others'.  With ops.yield defined the core does none of this itself.
	 * A lord's task runs on, the lord decides (docs/design.md, "The handoff at a yield").
	 * yield_to() (@to set) is not supported, as without ops.yield.
	 */
	if (!to && (!tctx || tctx->fair)) {
		if ((s64)(from->scx.dsq_vtime - cos_vtime_now) < 0)
			from->scx.dsq_vtime = cos_vtime_now;
		from->scx.dsq_vtime += cos_fair_slice() * 100 / (from->scx.weight ?: 1);
		from->scx.slice = 0;
	}
	return false;
}

SEC("struct_ops/cos_set_cpumask")
void BPF_PROG(cos_set_cpumask, struct task_struct *p, const struct cpumask *cpumask)
{
	struct cos_task_ctx *tctx = cos_ctx(p);

	if (tctx && tctx->slot >= 0)
		cos_kf_set_cpumask(p, tctx->slot);
}

/*
 * CPU hotplug.  Without these two ops sched_ext ejects the scheduler when a CPU goes offline or
 * comes back ("cpu N going offline, exiting scheduler").  With them it keeps the shim and
 * moves an outgoing CPU's tasks itself; cos.ko keeps shoots off the CPU and tells the lord.
 */
SEC("struct_ops/cos_cpu_online")
void BPF_PROG(cos_cpu_online, s32 cpu)
{
	cos_kf_cpu_hotplug(cpu, true);
}

SEC("struct_ops/cos_cpu_offline")
void BPF_PROG(cos_cpu_offline, s32 cpu)
{
	cos_kf_cpu_hotplug(cpu, false);
}

SEC("struct_ops/cos_enable")
void BPF_PROG(cos_enable, struct task_struct *p)
{
	struct cos_task_ctx *tctx = cos_ctx(p);

	p->scx.dsq_vtime = cos_vtime_now;
	if (tctx)
		cos_slot(p, tctx, false);
}

/* @p leaves sched_ext (a real-time policy, or the shim is detaching): it is no COS task now. */
SEC("struct_ops/cos_disable")
void BPF_PROG(cos_disable, struct task_struct *p)
{
	struct cos_task_ctx *tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, 0);

	if (tctx && tctx->slot >= 0) {
		cos_kf_task_detach(p, tctx->slot);
		tctx->slot = COS_NO_SLOT;
	}
}

SEC("struct_ops/cos_exit_task")
void BPF_PROG(cos_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct cos_task_ctx *tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, 0);

	if (tctx && tctx->slot >= 0) {
		cos_kf_task_detach(p, tctx->slot);
		tctx->slot = COS_NO_SLOT;
	}
	cos_kf_exit_task(p);
}

/* Count @cgrp in cos_nr_limited and cos_nr_weighted as @limited and @weighted say (-1: as is). */
static void cos_cgroup_count(struct cgroup *cgrp, s32 limited, s32 weighted)
{
	struct cos_cgroup_ctx *c;
	u64 was;

	c = bpf_cgrp_storage_get(&cos_cgroup_ctxs, cgrp, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c) {
		__sync_fetch_and_add(&cos_nr_limited, 1);
		__sync_fetch_and_add(&cos_nr_weighted, 1);
		return;
	}
	if (limited >= 0) {
		was = __sync_lock_test_and_set(&c->limited, (u64)limited);
		if (was != (u64)limited)
			__sync_fetch_and_add(&cos_nr_limited, limited ? 1 : (u64)-1);
	}
	if (weighted >= 0) {
		was = __sync_lock_test_and_set(&c->weighted, (u64)weighted);
		if (was != (u64)weighted)
			__sync_fetch_and_add(&cos_nr_weighted, weighted ? 1 : (u64)-1);
	}
}

/*
 * cgroups: cos.ko's bandwidth groups.  Sleepable: cos.ko allocates the group,
 * scx_bpf_create_dsq() its DSQ.  A cgroup's id is its kernfs node's; its parent is the cgroup
 * of its parent css.
 */
SEC("struct_ops.s/cos_cgroup_init")
s32 BPF_PROG(cos_cgroup_init, struct cgroup *cgrp, struct scx_cgroup_init_args *args)
{
	struct cgroup_subsys_state *parent = cgrp->self.parent;
	u64 id = cgrp->kn->id;
	s32 ret;

	if (cos_bw_enforced && cos_have(scx_bpf_create_dsq)) {	/* cos_have: see shim_compat.h */
		ret = scx_bpf_create_dsq(COS_GROUP_DSQ(id), -1);
		if (ret)
			return ret;
	}
	ret = cos_kf_cgroup_init(id, parent ? parent->cgroup->kn->id : 0, args->weight);
	if (ret) {
		if (cos_bw_enforced && cos_have(scx_bpf_destroy_dsq))
			scx_bpf_destroy_dsq(COS_GROUP_DSQ(id));
		return ret;
	}
	cos_kf_cgroup_set_bandwidth(id, args->bw_period_us, args->bw_quota_us, args->bw_burst_us);
	cos_cgroup_count(cgrp, args->bw_quota_us != COS_BW_QUOTA_INF && args->bw_period_us,
			 args->weight != 100);
	return 0;
}

SEC("struct_ops/cos_cgroup_exit")
void BPF_PROG(cos_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = cgrp->kn->id;

	cos_kf_cgroup_exit(id);
	cos_cgroup_count(cgrp, 0, 0);
	if (cos_bw_enforced && cos_have(scx_bpf_destroy_dsq))
		scx_bpf_destroy_dsq(COS_GROUP_DSQ(id));		/* empty: a cgroup with tasks stays */
}

SEC("struct_ops/cos_cgroup_set_bandwidth")
void BPF_PROG(cos_cgroup_set_bandwidth, struct cgroup *cgrp, u64 period_us, u64 quota_us,
	      u64 burst_us)
{
	cos_kf_cgroup_set_bandwidth(cgrp->kn->id, period_us, quota_us, burst_us);
	cos_cgroup_count(cgrp, quota_us != COS_BW_QUOTA_INF && period_us, -1);
}

SEC("struct_ops/cos_cgroup_set_weight")
void BPF_PROG(cos_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	cos_kf_cgroup_set_weight(cgrp->kn->id, weight);
	cos_cgroup_count(cgrp, -1, weight != 100);
}

/* Sleepable: scx_bpf_create_dsq() may allocate. */
SEC("struct_ops.s/cos_init")
s32 BPF_PROG(cos_init)
{
	s32 ret;

	if (cos_kf_abi_version() != cos_abi_expected)
		return -COS_EPROTO;
	cos_fair_vtime = cos_have(scx_bpf_create_dsq);
	cos_bw_enforced = cos_fair_vtime && cos_have(bpf_iter_scx_dsq_new);
	ret = cos_fair_vtime ? scx_bpf_create_dsq(COS_FAIR_DSQ, -1) : 0;
	if (!ret && cos_fair_vtime)
		ret = scx_bpf_create_dsq(COS_LORD_DSQ, -1);
	/* -EPERM: the module expects another map (COS_IOC_SHIM_BIND); fail the attach */
	if (!ret)
		ret = cos_kf_shim_attached(true, (cos_fair_vtime ? COS_SHIM_CAP_FAIR_DSQ : 0) |
						 (cos_bw_enforced ? COS_SHIM_CAP_BANDWIDTH : 0));
	return ret;
}

SEC("struct_ops/cos_exit")
void BPF_PROG(cos_exit, struct scx_exit_info *ei)
{
	cos_kf_shim_attached(false, 0);
	bpf_probe_read_kernel_str(cos_exit_info.reason, sizeof(cos_exit_info.reason), ei->reason);
	bpf_probe_read_kernel_str(cos_exit_info.msg, sizeof(cos_exit_info.msg), ei->msg);
	cos_exit_info.exit_code = ei->exit_code;
	/* kind last, with a full barrier: see struct cos_exit_info */
	__sync_val_compare_and_swap(&cos_exit_info.kind, cos_exit_info.kind, ei->kind);
}

SEC(".struct_ops.link")
struct sched_ext_ops cos_ops = {
	.select_cpu	= (void *)cos_select_cpu,
	.enqueue	= (void *)cos_enqueue,
	.dequeue	= (void *)cos_dequeue,
	.dispatch	= (void *)cos_dispatch,
	.running	= (void *)cos_running,
	.stopping	= (void *)cos_stopping,
	.tick		= (void *)cos_tick,
	.quiescent	= (void *)cos_quiescent,
	.yield		= (void *)cos_yield,
	.set_cpumask	= (void *)cos_set_cpumask,
	.cpu_online	= (void *)cos_cpu_online,
	.cpu_offline	= (void *)cos_cpu_offline,
	.enable		= (void *)cos_enable,
	.disable	= (void *)cos_disable,
	.exit_task	= (void *)cos_exit_task,
	.cgroup_init	= (void *)cos_cgroup_init,
	.cgroup_exit	= (void *)cos_cgroup_exit,
	.cgroup_set_weight = (void *)cos_cgroup_set_weight,
	.cgroup_set_bandwidth = (void *)cos_cgroup_set_bandwidth,
	.init		= (void *)cos_init,
	.exit		= (void *)cos_exit,
	.flags		= COS_SHIM_OPS_ENQ_LAST,	/* a throttled task must leave an idle CPU */
	.name		= COS_SHIM_NAME,
};
