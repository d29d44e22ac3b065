// SPDX-License-Identifier: GPL-2.0
/*
 * cos_trace.c — cos_lord.c's tracepoints, out of line.  Where cos_lord.c includes cos_trace.h
 * itself, the module's BTF keeps a copy of struct task_struct that kmod/btf-rededup.c cannot
 * fold into vmlinux's (on the debug kernel: an order effect of pahole's, see kmod/Kbuild), and
 * the shim could not pass task pointers.  These events are rare: a call costs nothing here.
 */
#include "cos_internal.h"
#include "cos_trace.h"

/* trace_cos_stall() for cos_lord.c.  Context: as the tracepoint's. */
void cos_trace_stall(u32 enclave, u64 reason, const char *report)
{
	trace_cos_stall(enclave, reason, report);
}

/* trace_cos_fallback() for cos_lord.c.  Context: as the tracepoint's. */
void cos_trace_fallback(u32 enclave, u32 tasks)
{
	trace_cos_fallback(enclave, tasks);
}

/* trace_cos_enclave() for cos_lord.c.  Context: as the tracepoint's. */
void cos_trace_enclave(u32 id, const char *name, pid_t lord, s32 lord_cpu,
		       const struct cpumask *cpus, bool registered)
{
	trace_cos_enclave(id, name, lord, lord_cpu, cpus, registered);
}
