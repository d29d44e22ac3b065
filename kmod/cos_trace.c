// SPDX-License-Identifier: GPL-2.0
/*
 * cos_trace.c — cos_lord.c's tracepoints, out of line.  Where cos_lord.c includes cos_trace.h
 * itself, the module's BTF keeps a copy of struct task_struct that kmod/btf-rededup.c cannot
 * fold into vmlinux's (on the debug kernel: an order effect of pahole's, see kmod/Kbuild), and
 * the shim could not pass task pointers.  These events are rare: a call costs nothing here.
 */
#include "cos_internal.h"
#include "cos_trace.h"

/* @e's lord declared stalled for @reason (cos_stall).  Caller holds e->lock. */
void cos_trace_stall(struct cos_enclave *e, u64 reason)
{
	lockdep_assert_held(&e->lock);
	trace_cos_stall(e->id, reason, e->stall_report);
}

/* @tasks of @e's handed to the fair policy (cos_fallback).  Caller holds e->lock. */
void cos_trace_fallback(struct cos_enclave *e, u32 tasks)
{
	lockdep_assert_held(&e->lock);
	trace_cos_fallback(e->id, tasks);
}

/* @e registered, or its end (cos_enclave).  Caller holds e->lock (inside the registry's lock). */
void cos_trace_enclave(struct cos_enclave *e, bool registered)
{
	lockdep_assert_held(&e->lock);
	trace_cos_enclave(e->id, e->name, e->lord->pid, e->lord_cpu, e->cpus, registered);
}
