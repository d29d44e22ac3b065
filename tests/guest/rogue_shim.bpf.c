/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rogue_shim.bpf.c — a sched_ext scheduler that is not cos's shim but is named like it (its
 * programs "cos_*", so cos.ko's kfunc filter lets them call the kfuncs), for test_kfuncs: what
 * it may hand the kfuncs, and from where.  Built five times (Makefile):
 *
 *   ROGUE_SCALAR   a number cast to a task pointer
 *   ROGUE_WALKED   a task pointer read from memory (p->real_parent), not given by sched_ext
 *   ROGUE_WRONGOP  ops.enqueue calls a dispatch kfunc (cos_kf_fallback_take)
 *   ROGUE_UNNAMED  the genuine call from a program not named "cos_*"
 *   none of these  the task sched_ext gave ops.enqueue: the genuine use, which must load
 *
 * The test only loads it (the verifier's verdict); it never attaches.  See docs/testing.md.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/cos.h>
#include "cos_shim_intf.h"

char _license[] SEC("license") = "GPL";

#ifdef ROGUE_UNNAMED
#define cos_enqueue rogue_enqueue
#endif

SEC("struct_ops/cos_enqueue")
void BPF_PROG(cos_enqueue, struct task_struct *p, u64 enq_flags)
{
#if defined(ROGUE_SCALAR)
	cos_kf_enqueue((struct task_struct *)(unsigned long)(enq_flags | 0xffff888000000000ULL), -1, 0, 1);
#elif defined(ROGUE_WALKED)
	cos_kf_enqueue(p->real_parent, -1, 0, 1);
#elif defined(ROGUE_WRONGOP)
	cos_kf_enqueue(p, -1, enq_flags, 1);
	cos_kf_fallback_take();
#else
	cos_kf_enqueue(p, -1, enq_flags, 1);
#endif
}

SEC(".struct_ops.link")
struct sched_ext_ops cos_rogue_ops = {
	.enqueue	= (void *)cos_enqueue,
	.name		= "cos_rogue",
};
