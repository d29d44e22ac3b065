/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos_shim.bpf.c — the cos BPF shim: the sched_ext scheduler that cos.ko drives.
 *
 * A. Role.  A kernel module cannot register sched_ext_ops or call scx_bpf_* itself, so this
 *    small scheduler is cos's hands on the run queues.  libcos embeds it as a libbpf skeleton
 *    and attaches it; cos.ko offers it kfuncs (cos_kf_*, kmod/cos_kfuncs.c) and keeps all state
 *    user space sees.  The shim decides nothing about COS tasks: it asks the module.
 *
 * B. Mode.  Full mode (no SCX_OPS_SWITCH_PARTIAL): every SCHED_NORMAL/BATCH/IDLE/EXT task runs on
 *    sched_ext.  Tasks not delegated to a lord get a simple weighted fair policy: one shared DSQ
 *    ordered by virtual time; a task's vtime advances by the CPU time it used (measured from
 *    se.sum_exec_runtime, not from the slice left: the core may refill a slice to its own
 *    default, and a charge computed from it would underflow and starve the task) scaled by
 *    100/weight, and is clamped to at most one slice behind the global clock on enqueue, so
 *    sleepers cannot bank credit, and to at most COS_FAIR_WAIT_NS x CPUs / waiting tasks ahead
 *    of it: the global clock advances about CPUs / waiting as fast as real time, so no task
 *    waits much longer than COS_FAIR_WAIT_NS for its turn however far its weight put it ahead
 *    (a nice-19 kthread charged 100x its run time waited 37 s beside 250 tasks, and sched_ext's
 *    watchdog ejected the shim); under light load weights apply in full.  An idle CPU found at
 *    wake-up gets the task directly on its local DSQ.  Where the kernel offers no scx_bpf_create_dsq (Debian 7.2.12, see
 *    shim_compat.h) the shared queue is the built-in global DSQ, which is FIFO: round-robin
 *    with equal slices, weights ignored; sched_ext drains it before calling ops.dispatch, so a
 *    shot task could not go first there, and cos.ko refuses lords (COS_SHIM_CAP_FAIR_DSQ).
 *
 * C. COS tasks (policy SCHED_EXT) get a slot in the module's task table (kept in task-local
 *    storage) and every event of theirs goes to the module, which posts it to the lord.  When
 *    cos_kf_enqueue() says CUSTODY the task is queued nowhere: it waits for the lord.  The lord's
 *    shoot leaves it in the target CPU's pending slot and kicks that CPU; its ops.dispatch takes
 *    it (cos_kf_dispatch, by pid), re-checks that it may run there, and puts it at the head of the local
 *    DSQ — ahead of every fair task.  Tasks the module hands back to the fair policy (lord
 *    stalled or dead) are drained by ops.dispatch on any CPU (cos_kf_fallback_take).
 *    Wake rules (struct cos_ctl.wake_rules): for a waking COS task ops.select_cpu returns the
 *    free enclave CPU the module names (cos_kf_select_cpu, given sched_ext's idle mask so that
 *    it can prefer a CPU running nothing), and ops.enqueue there puts the task
 *    at the head of that local DSQ, preempting, when the module says COS_ENQ_PLACED: no round
 *    trip to the lord, no IPI, no migration (the task is enqueued on the CPU it starts on, which
 *    sched_ext guarantees it may run on).
 *
 * D. Tiers: per-CPU kthreads and the lord, then shot COS tasks, then everything else.  A per-CPU
 *    kthread (ksoftirqd, a bound kworker completing I/O the lord waits for, ...) goes to the head
 *    of its CPU's local DSQ and preempts whatever runs there, COS tasks included: such work is
 *    short and may be what everyone else waits for.  The lord goes to its CPU's local DSQ too:
 *    at the head with preemption when it wakes, at the tail when its slice ends.  Nothing of
 *    these tiers goes through a shared queue, whose CPUs nobody would kick.  One exception: a
 *    lord that shot a task to its own CPU (local shoot) is put back with COS_ENQ_LORD_YIELD and
 *    parks in COS_LORD_DSQ; ops.dispatch on its CPU inserts the shot task, and the next dispatch
 *    there, when that task stops, moves the lord back: it runs again at once.  sched_ext calls
 *    ops.dispatch before it puts the lord back, so the module answers LORD_YIELD also while the
 *    shot task is taken and not yet running; in the local DSQ the lord would have ops.tick end
 *    the shot task's slice at the next tick.
 *    The kthread's ENQ_PREEMPT can be lost: the core drops the rq lock while it flushes the
 *    dispatch buffer, a kthread inserted then is passed by the shot task, inserted at the head
 *    after it with a fresh slice — SCX_SLICE_INF for a run-to-block lord, so the kthread would
 *    wait until the COS task blocks (seen: a kworker starved 30 s, sched_ext's watchdog ejected
 *    the scheduler).  So ops.dispatch moves nothing else to the local DSQ once it has put a shot
 *    task there (the lord and fair tasks are moved by the dispatch that runs when the local DSQ
 *    is empty again, the same moment they would have run), and ops.tick ends a running COS
 *    task's slice whenever its CPU's local DSQ is not empty: whatever waits there is a tier
 *    above it, and waits at most a tick.
 *
 * E. ABI.  ops.init fails (the attach fails) unless the module's ABI version is the one this shim
 *    was built with; a test can change the expected version through cos_abi_expected.  ops.exit
 *    records how the shim left in cos_exit_info (struct cos_exit_info, kmod/cos_shim_intf.h: the
 *    "user exit info" convention of the kernel's tools/sched_ext) for libcos.
 *
 * F. Bandwidth (cgroup v2 cpu.max, cpu.weight; kmod/cos_group.c keeps the budgets).  The cgroup
 *    ops tell the module each cgroup with a cpu controller, its limits and weight; every task's
 *    CPU time is charged to its cgroup at ops.stopping and ops.tick (what ran since the last
 *    charge, from se.sum_exec_runtime as for vtime).  A running task stops when its chain's
 *    budget is spent, not at a tick: ops.running has the module reserve this CPU's share of
 *    the budget left (cos_kf_group_budget(): a slice of it, which the CPU's budget timer
 *    renews while the task runs on, or ends its slice when nothing is left), the charges
 *    draw on that first, and ops.stopping gives back the rest after its charge
 *    (cos_kf_group_stopped()); a task that started with no reservation is kicked when its
 *    group throttles, and the tick ends the slice of a throttled task.  A throttled task the fair
 *    policy runs (any non-COS task, and a COS task while no lord has control) parks in that
 *    group's DSQ (COS_GROUP_DSQ(cgroup id), created by ops.cgroup_init) instead of the fair
 *    DSQ; when the module's refill timer releases the group it kicks the idle CPUs, and
 *    ops.dispatch moves the parked tasks back to the fair DSQ (or to another throttled
 *    ancestor's DSQ).  A COS task under a lord waits in custody, and the lord is told
 *    (cos_kf_enqueue() gets the cgroup: TASK_THROTTLED, GROUP_THROTTLED/UNTHROTTLED).
 *    cpu.weight shares the CPUs as CFS's groups do: while some cgroup weighs other than 100,
 *    the fair policy's vtime charge is divided by the task's effective weight
 *    (cos_kf_group_share(): its group's share of its parent's, and so on up, over what its
 *    runnable siblings weigh), for which the module counts each group's runnable fair tasks:
 *    the shim counts a task in at ops.select_cpu's direct dispatch or ops.enqueue
 *    (cos_kf_group_runnable()) and out at ops.quiescent.  Needs scx_bpf_create_dsq
 *    (COS_SHIM_CAP_BANDWIDTH); without it (Debian 7.2.12) groups are tracked, not enforced.
 *    SCX_OPS_ENQ_LAST makes a throttled task leave a CPU that has nothing else to run; libcos
 *    clears it where nothing is enforced (7.2.12 strands a task that ops.enqueue puts on the
 *    local DSQ under ENQ_LAST as the CPU goes idle, see libcos/shim.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/cos.h>
#include "cos_shim_intf.h"
#include "shim_compat.h"

char _license[] SEC("license") = "GPL";

_Static_assert(COS_SHIM_OPS_ENQ_LAST == SCX_OPS_ENQ_LAST, "libcos clears the shim's ENQ_LAST");

#define COS_FAIR_DSQ	0
#define COS_LORD_DSQ	1	/* the lord, parked while its local shoot runs */
#define COS_EPROTO	71	/* errno values are not in vmlinux.h */
#define COS_SCHED_EXT	7	/* SCHED_EXT policy */
#define COS_PF_KTHREAD	0x00200000	/* PF_KTHREAD: task flags are not in vmlinux.h */
#define COS_NO_SLOT	(-1)
#define COS_FALLBACK_BATCH 16	/* fallback tasks one dispatch drains at most */
#define COS_FAIR_WAIT_NS	(1000ULL * 1000 * 1000)	/* the longest wait the lag allows (B) */
#define COS_GROUP_DSQ(cgid)	((1ULL << 48) | (cgid))	/* a throttled group's parked tasks (F) */
#define COS_RELEASE_BATCH	8	/* released groups one dispatch drains at most */
#define COS_DSQ_ITER		(&___it)	/* bpf_for_each()'s iterator (libbpf's bpf_helpers.h) */

const volatile __u64 cos_slice_ns = 5ULL * 1000 * 1000;
const volatile __u32 cos_abi_expected = COS_ABI_VERSION;
const volatile __u32 cos_nr_cpus = 1;	/* online CPUs when libcos loaded the shim */

/* Set by ops.init: 1 if the fair policy orders by vtime, 0 if it fell back to FIFO (see B). */
__u32 cos_fair_vtime;
/* Set by ops.init: 1 if throttled groups' tasks are parked (see F). */
__u32 cos_bw_enforced;

/* Written once by ops.exit (cos_exit_record()); read by libcos (see E). */
struct cos_exit_info cos_exit_info SEC(".data");

static bool cos_is_pcpu_kthread(const struct task_struct *p)
{
	return (p->flags & COS_PF_KTHREAD) && p->nr_cpus_allowed == 1;
}

/*
 * How many cgroups have a quota, and how many a weight other than 100 (see F): while none
 * does, ops.running, ops.stopping and ops.tick call no group kfunc (under TCG a fair task's
 * ops.stopping took 846 ns before the groups, 2,002 ns with the calls).  Counted from the
 * cgroup ops; each cgroup's own two flags live in its cgroup storage and change by atomic
 * exchange, so ops racing on one cgroup (cpu.max writers hold only sched_ext's read side)
 * count it once.  A cgroup whose storage cannot be had counts in both for good.  A count read
 * a moment stale costs one charge at most, as the module's own counts do (kmod/cos_group.c).
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

struct cos_task_ctx {
	u64 exec_at_start;	/* se.sum_exec_runtime when it last started running */
	u64 exec_charged;	/* se.sum_exec_runtime at its last bandwidth charge (see F) */
	u64 share_cgid;		/* counted runnable in this cgroup's share, 0 if not (see F) */
	u32 share_weight;	/* with this weight */
	s32 slot;		/* slot in cos.ko's task table, COS_NO_SLOT if not a COS task */
	bool budgeted;		/* ops.running asked cos_kf_group_budget() (see F) */
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

/* @p's cgroup (of its cpu controller: its task group's), as the module knows groups (see F). */
static u64 cos_task_cgid(struct task_struct *p)
{
	return p->sched_task_group->css.cgroup->kn->id;
}

/* The group where @p must park because it or an ancestor is throttled, 0 if none (see F). */
static u64 cos_parked_group(struct task_struct *p)
{
	return cos_bw_enforced ? cos_kf_group_throttled(cos_task_cgid(p)) : 0;
}

/*
 * Count @p, a fair task about to run or wait, among its cgroup's runnable tasks for
 * cpu.weight's shares (see F), once: ops.quiescent counts it out.  Only while some cgroup
 * weighs other than 100; a task runnable when that starts (or handed back by the module at
 * ops.dispatch) is counted at its next enqueue: a busy task's is at its slice's end.
 */
static void cos_share_runnable(struct task_struct *p, struct cos_task_ctx *tctx)
{
	if (!cos_nr_weighted || !cos_fair_vtime || !tctx || tctx->share_cgid)
		return;
	tctx->share_cgid = cos_task_cgid(p);
	tctx->share_weight = p->scx.weight;
	cos_kf_group_runnable(tctx->share_cgid, tctx->share_weight);
}

static void cos_fair_insert(struct task_struct *p, u64 enq_flags)
{
	u64 vtime = p->scx.dsq_vtime;
	u64 parked = cos_parked_group(p);

	if (enq_flags & SCX_ENQ_LAST && !parked) {
		/* nothing else to run here: it goes on (a shared DSQ would leave the CPU idle) */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_slice_ns, enq_flags);
		return;
	}
	if (!cos_have(scx_bpf_create_dsq)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, cos_slice_ns, enq_flags);
		return;
	}
	if ((s64)(vtime - (cos_vtime_now - cos_slice_ns)) < 0) {
		vtime = cos_vtime_now - cos_slice_ns;
	} else if (cos_have(scx_bpf_dsq_nr_queued)) {
		s32 waiting = scx_bpf_dsq_nr_queued(COS_FAIR_DSQ);
		u64 lag_max = COS_FAIR_WAIT_NS * cos_nr_cpus / (waiting > 0 ? waiting + 1 : 1);

		if ((s64)(vtime - (cos_vtime_now + lag_max)) > 0)
			vtime = cos_vtime_now + lag_max;
	}
	scx_bpf_dsq_insert_vtime(p, parked ? COS_GROUP_DSQ(parked) : COS_FAIR_DSQ, cos_slice_ns,
				 vtime, enq_flags);
}

/*
 * Group @id was refilled: its parked tasks go back to the fair DSQ, each with its vtime
 * clamped as cos_fair_insert() would, or to an ancestor's DSQ if that is still throttled.  An
 * idle CPU is kicked for each task but the first (this CPU's): the refill's kick woke every
 * idle CPU at once, and those that dispatched before this drain found nothing and went back
 * to idle (a 250 % cap on 3 CPUs measured 224 % before these kicks).
 */
static void cos_group_drain(u64 id)
{
	struct task_struct *p;
	bool first = true;

	if (!cos_have(bpf_iter_scx_dsq_new))
		return;
	bpf_for_each(scx_dsq, p, COS_GROUP_DSQ(id), 0) {
		u64 parked = cos_kf_group_throttled(cos_task_cgid(p));
		u64 vtime = p->scx.dsq_vtime;
		s32 cpu;

		if ((s64)(vtime - (cos_vtime_now - cos_slice_ns)) < 0)
			vtime = cos_vtime_now - cos_slice_ns;
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
	 * idle CPU), or go where its wake rules start them (the enqueue there does it, see C).
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
	if (is_idle && !cos_parked_group(p)) {	/* a throttled one parks at enqueue (see F) */
		cos_share_runnable(p, tctx);	/* no ops.enqueue follows */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_slice_ns, 0);
	}
	return cpu;
}

SEC("struct_ops/cos_enqueue")
void BPF_PROG(cos_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct cos_task_ctx *tctx = cos_ctx(p);
	s32 slot = tctx ? cos_slot(p, tctx, true) : COS_NO_SLOT;

	if (cos_is_pcpu_kthread(p)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | scx_bpf_task_cpu(p), cos_slice_ns,
				   enq_flags | SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
		return;
	}
	switch (cos_kf_enqueue(p, slot, enq_flags, cos_task_cgid(p))) {
	case COS_ENQ_CUSTODY:
		return;		/* waits for the lord's shoot (see C) */
	case COS_ENQ_PLACED:	/* started by the lord's wake rules, as if shot here (see C) */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_kf_task_slice(p, slot) ?: SCX_SLICE_INF,
				   enq_flags | SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
		return;
	case COS_ENQ_LORD_YIELD:
		/* after the local shoot, which ops.dispatch puts first (see D) */
		scx_bpf_dsq_insert(p, COS_LORD_DSQ, cos_slice_ns, enq_flags);
		return;
	case COS_ENQ_LORD:
		if (enq_flags & SCX_ENQ_WAKEUP)
			enq_flags |= SCX_ENQ_HEAD | SCX_ENQ_PREEMPT;
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
		return;		/* nothing behind it, or ops.tick would end its slice (see D) */
	if (cos_have(scx_bpf_create_dsq)) {
		scx_bpf_dsq_move_to_local(COS_LORD_DSQ);
		scx_bpf_dsq_move_to_local(COS_FAIR_DSQ);
	}
	/* else the core consumes SCX_DSQ_GLOBAL by itself (and there are no lords, see B) */
}

SEC("struct_ops/cos_running")
void BPF_PROG(cos_running, struct task_struct *p)
{
	struct cos_task_ctx *tctx = cos_ctx(p);

	if ((s64)(p->scx.dsq_vtime - cos_vtime_now) > 0)
		cos_vtime_now = p->scx.dsq_vtime;
	if (!tctx)
		return;
	tctx->exec_at_start = p->se.sum_exec_runtime;
	tctx->exec_charged = p->se.sum_exec_runtime;
	if (cos_bw_enforced && cos_nr_limited) {
		/* it stops when its share of the budget is spent, and is charged (see F) */
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
	u64 used;
	u32 weight = p->scx.weight;

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
	if (cos_nr_weighted)
		p->scx.dsq_vtime += used * 100 * COS_GROUP_SHARE_ONE /
				    (cos_kf_group_share(cos_task_cgid(p), weight) ?: 1);
	else
		p->scx.dsq_vtime += used * 100 / (weight ?: 1);
	if (tctx->slot >= 0)
		cos_kf_stopping(p, tctx->slot, runnable);
}

/*
 * A COS task gives way at the tick to whatever waits in its CPU's local DSQ (see D); any task
 * is charged what it ran since its last charge, and stops if that throttled its group (see F).
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
	if (tctx->slot >= 0 && cos_have(scx_bpf_dsq_nr_queued) &&
	    scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) > 0)
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

	if (tctx && tctx->slot >= 0)
		cos_kf_yield(from, tctx->slot);
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
 * comes back ("cpu N going offline, exiting scheduler"); with them it keeps the shim, moves the
 * tasks of an outgoing CPU itself, and cos.ko keeps shoots off the CPU and tells the lord.
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
 * cgroups (see F).  Sleepable: the module allocates the group, scx_bpf_create_dsq() its DSQ.
 * A cgroup's id is its kernfs node's; its parent is the cgroup of its parent css.
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
	if (!ret)
		cos_kf_shim_attached(true, (cos_fair_vtime ? COS_SHIM_CAP_FAIR_DSQ : 0) |
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
	.flags		= COS_SHIM_OPS_ENQ_LAST,	/* a throttled task must leave an idle CPU (F) */
	.name		= COS_SHIM_NAME,
};
