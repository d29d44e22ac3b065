/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rogue_bind.bpf.c — a sched_ext scheduler named like cos's shim that calls its kfuncs as the
 * shim does (ops.init: cos_kf_shim_attached; ops.select_cpu: cos_kf_task_attach and _detach
 * for a COS task; ops.exit), for test_kfuncs: which of its calls cos.ko honours.  Its programs sit
 * in two struct_ops maps, cos_rogue_a and cos_rogue_b.  The test attaches cos_rogue_a: the
 * kernel ties the programs to it, cos.ko binds to it as to its shim and serves it.  The test
 * then tries to attach cos_rogue_b too (refused: a scheduler runs), which puts the programs in
 * a second map: they belong to no single map any more and cos.ko must ignore them, though the
 * scheduler they implement is still the one attached.
 *
 * What the kfuncs answered is left in the global `rogue` for the test to read.
 * See docs/testing.md.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/cos.h>
#include "cos_shim_intf.h"
#include "shim_compat.h"

char _license[] SEC("license") = "GPL";

/* What the kfuncs answered (.data, read and reset by the test through the map). */
struct {
	s32 attach_ret;		/* the last cos_kf_task_attach() answer (1: not called since reset) */
	u32 attach_calls;
} rogue = { .attach_ret = 1 };

SEC("struct_ops.s/cos_init")
s32 BPF_PROG(cos_init)
{
	cos_kf_shim_attached(true, COS_SHIM_CAP_FAIR_DSQ);
	return 0;
}

/* Every wake-up of a COS task (the test's) asks for a slot and gives it back. */
SEC("struct_ops/cos_select_cpu")
s32 BPF_PROG(cos_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	s32 slot;

	if (p->policy == 7) {	/* SCHED_EXT */
		slot = cos_kf_task_attach(p, true);
		if (slot >= 0)
			cos_kf_task_detach(p, slot);
		rogue.attach_ret = slot;
		rogue.attach_calls++;
	}
	return prev_cpu;
}

SEC("struct_ops/cos_enqueue")
void BPF_PROG(cos_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, 5000000, enq_flags);
}

SEC("struct_ops/cos_exit")
void BPF_PROG(cos_exit, struct scx_exit_info *ei)
{
	cos_kf_shim_attached(false, 0);
}

SEC(".struct_ops.link")
struct sched_ext_ops cos_rogue_a = {
	.init		= (void *)cos_init,
	.select_cpu	= (void *)cos_select_cpu,
	.enqueue	= (void *)cos_enqueue,
	.exit		= (void *)cos_exit,
	.name		= "cos_rogue_a",
};

SEC(".struct_ops.link")
struct sched_ext_ops cos_rogue_b = {
	.init		= (void *)cos_init,
	.select_cpu	= (void *)cos_select_cpu,
	.enqueue	= (void *)cos_enqueue,
	.exit		= (void *)cos_exit,
	.name		= "cos_rogue_b",
};
