/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos_shim.bpf.c — the cos BPF shim: the sched_ext scheduler that cos.ko drives.
 *
 * A. Role.  A kernel module cannot register sched_ext_ops or call scx_bpf_* itself, so this
 *    small scheduler is cos's hands on the run queues.  libcos embeds it as a libbpf skeleton
 *    and attaches it; cos.ko offers it kfuncs (cos_kf_*, kmod/cos_kfuncs.c).
 *
 * B. Mode.  Full mode (no SCX_OPS_SWITCH_PARTIAL): every SCHED_NORMAL/BATCH/IDLE/EXT task runs on
 *    sched_ext.  Tasks not delegated to a lord get a simple weighted fair policy: one shared DSQ
 *    ordered by virtual time; a task's vtime advances by the CPU time it used (measured from
 *    se.sum_exec_runtime, not from the slice left: the core may refill a slice to its own
 *    default, and a charge computed from it would underflow and starve the task) scaled by
 *    100/weight, and is clamped to at most one slice behind the global clock on enqueue, so
 *    sleepers cannot bank credit.  An idle CPU found at wake-up gets the task directly on its local DSQ.  Where the
 *    kernel offers no scx_bpf_create_dsq (Debian 7.2.x, see shim_compat.h) the shared queue is
 *    the built-in global DSQ, which is FIFO: round-robin with equal slices, weights ignored.
 *
 * C. ABI.  ops.init asks the module for its ABI version and fails (the attach fails) unless it is
 *    the COS_ABI_VERSION this shim was built with; a test can change the expected version
 *    through the read-only cos_abi_expected before load.
 *
 * D. Exit.  ops.exit copies the exit kind, reason and message into cos_exit_* so that libcos can
 *    say why the scheduler stopped.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/cos.h>
#include "shim_compat.h"

char _license[] SEC("license") = "GPL";

#define COS_FAIR_DSQ	0
#define COS_EPROTO	71	/* errno values are not in vmlinux.h */

const volatile __u64 cos_slice_ns = 5ULL * 1000 * 1000;
const volatile __u32 cos_abi_expected = COS_ABI_VERSION;

/* Set by ops.init: 1 if the fair policy orders by vtime, 0 if it fell back to FIFO (see B). */
__u32 cos_fair_vtime;

/* Written once by ops.exit; read by libcos after detach (see D). */
__s64 cos_exit_kind;
char cos_exit_reason[128];
char cos_exit_msg[256];

/* Global virtual time: the largest vtime of any task that started running. */
static u64 cos_vtime_now;

/* Per task: its se.sum_exec_runtime when it last started running. */
struct cos_task_ctx {
	u64 exec_at_start;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cos_task_ctx);
} cos_task_ctxs SEC(".maps");

SEC("struct_ops/cos_select_cpu")
s32 BPF_PROG(cos_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cos_slice_ns, 0);
	return cpu;
}

SEC("struct_ops/cos_enqueue")
void BPF_PROG(cos_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 vtime = p->scx.dsq_vtime;

	if (!cos_have(scx_bpf_create_dsq)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, cos_slice_ns, enq_flags);
		return;
	}

	if ((s64)(vtime - (cos_vtime_now - cos_slice_ns)) < 0)
		vtime = cos_vtime_now - cos_slice_ns;
	scx_bpf_dsq_insert_vtime(p, COS_FAIR_DSQ, cos_slice_ns, vtime, enq_flags);
}

SEC("struct_ops/cos_dispatch")
void BPF_PROG(cos_dispatch, s32 cpu, struct task_struct *prev)
{
	if (cos_have(scx_bpf_create_dsq))
		scx_bpf_dsq_move_to_local(COS_FAIR_DSQ);
	/* else the core consumes SCX_DSQ_GLOBAL by itself */
}

SEC("struct_ops/cos_running")
void BPF_PROG(cos_running, struct task_struct *p)
{
	struct cos_task_ctx *tctx;

	if ((s64)(p->scx.dsq_vtime - cos_vtime_now) > 0)
		cos_vtime_now = p->scx.dsq_vtime;
	tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (tctx)
		tctx->exec_at_start = p->se.sum_exec_runtime;
}

SEC("struct_ops/cos_stopping")
void BPF_PROG(cos_stopping, struct task_struct *p, bool runnable)
{
	struct cos_task_ctx *tctx;
	u64 used;

	tctx = bpf_task_storage_get(&cos_task_ctxs, p, 0, 0);
	if (!tctx)
		return;
	used = p->se.sum_exec_runtime - tctx->exec_at_start;
	p->scx.dsq_vtime += used * 100 / (p->scx.weight ?: 1);
}

SEC("struct_ops/cos_enable")
void BPF_PROG(cos_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = cos_vtime_now;
}

/* Sleepable: scx_bpf_create_dsq() may allocate. */
SEC("struct_ops.s/cos_init")
s32 BPF_PROG(cos_init)
{
	if (cos_kf_abi_version() != cos_abi_expected)
		return -COS_EPROTO;
	cos_fair_vtime = cos_have(scx_bpf_create_dsq);
	return cos_fair_vtime ? scx_bpf_create_dsq(COS_FAIR_DSQ, -1) : 0;
}

SEC("struct_ops/cos_exit")
void BPF_PROG(cos_exit, struct scx_exit_info *ei)
{
	cos_exit_kind = ei->kind;
	bpf_probe_read_kernel_str(cos_exit_reason, sizeof(cos_exit_reason), ei->reason);
	bpf_probe_read_kernel_str(cos_exit_msg, sizeof(cos_exit_msg), ei->msg);
}

SEC(".struct_ops.link")
struct sched_ext_ops cos_ops = {
	.select_cpu	= (void *)cos_select_cpu,
	.enqueue	= (void *)cos_enqueue,
	.dispatch	= (void *)cos_dispatch,
	.running	= (void *)cos_running,
	.stopping	= (void *)cos_stopping,
	.enable		= (void *)cos_enable,
	.init		= (void *)cos_init,
	.exit		= (void *)cos_exit,
	.name		= COS_SHIM_NAME,
};
