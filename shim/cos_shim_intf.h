/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos_shim_intf.h — the contract between cos.ko and its shim, and only that: the values the
 * module's kfuncs and the shim pass each other, and the kfuncs' prototypes.  Both sides include
 * it (kmod/cos_internal.h for the module, shim/cos_shim.bpf.c after vmlinux.h; libcos/shim.c
 * for the shim's exit info and load-time flags only).  It is not installed.
 *
 * Each kfunc is declared once, through COS_KFUNC() or COS_KFUNC_BOUND().  The module compiles
 * the list as prototypes of its definitions in cos_kfuncs.c, so a definition whose signature
 * differs fails the build; the shim compiles it as __ksym externs.  The kernel-doc of each
 * kfunc is at its definition.  The interface is versioned by COS_ABI_VERSION, which the shim
 * checks through cos_kf_abi_version().  See docs/design.md, "The module ↔ shim interface".
 */
#ifndef _COS_SHIM_INTF_H
#define _COS_SHIM_INTF_H

/* What cos_kf_enqueue() tells the shim to do with a runnable task. */
enum cos_enq {
	COS_ENQ_FAIR		= 0,	/* the shim's fair policy runs it */
	COS_ENQ_CUSTODY		= 1,	/* it waits for the lord: the shim queues it nowhere */
	COS_ENQ_LORD		= 2,	/* it is the lord: run it first on its CPU */
	COS_ENQ_LORD_YIELD	= 3,	/* the lord, yielding to its local shoot: run it after */
	COS_ENQ_PLACED		= 4,	/* the wake rules started it on its CPU: at the head of
					 * the local DSQ, preempting, with cos_kf_task_slice() */
};

/* Shim capabilities, a mask passed to cos_kf_shim_attached(). */
enum cos_shim_cap {
	/*
	 * The fair policy has its own DSQ, drained by ops.dispatch after the lord's shot tasks.
	 * Without it fair tasks sit in the built-in global DSQ, which sched_ext drains before
	 * it asks ops.dispatch, so a shot task could not preempt them: lords are refused.
	 */
	COS_SHIM_CAP_FAIR_DSQ	= 1U << 0,
	/*
	 * The shim enforces cgroups' cpu.max for the tasks of its fair policy: it parks a
	 * throttled group's tasks in a DSQ of the group's own (needs scx_bpf_create_dsq too).
	 */
	COS_SHIM_CAP_BANDWIDTH	= 1U << 1,
};

/* quota_us as sched_ext's cgroup ops report "max" (RUNTIME_INF, not in the public headers) */
#define COS_BW_QUOTA_INF	(~0ULL)

/* cos_kf_group_share()'s unit: a weight of 1 (a root task at nice 0 weighs 100) */
#define COS_GROUP_SHARE_ONE	65536ULL

/*
 * The shim's struct_ops flags, fixed at load, for libcos (user space has no sched_ext header):
 * SCX_OPS_ENQ_LAST's value, which it clears where bandwidth cannot be enforced (libcos/shim.c),
 * and SCX_OPS_SWITCH_PARTIAL's; the shim asserts that they agree.
 */
#define COS_SHIM_OPS_ENQ_LAST	2ULL
/* SCX_OPS_SWITCH_PARTIAL's value: libcos sets it for partial mode (only SCHED_EXT tasks) */
#define COS_SHIM_OPS_SWITCH_PARTIAL	8ULL

/*
 * How the shim left (the "user exit info" convention of the kernel's tools/sched_ext).
 * ops.exit copies sched_ext's struct scx_exit_info into the shim's struct cos_exit_info: the
 * strings first, @kind last with a full barrier, so a reader that sees @kind set sees the rest.
 * libcos reads it after attaching (ops.init failed) and after detaching.
 */
#define COS_EXIT_REASON_LEN	128
#define COS_EXIT_MSG_LEN	1024
struct cos_exit_info {
	long long kind;		/* enum scx_exit_kind; 0 while the shim runs (64-bit: BPF's
				 * compare-and-swap barrier needs a 64-bit word before cpu v3) */
	long long exit_code;	/* scx_bpf_exit()'s code, or SCX_ECODE_* from the kernel */
	char reason[COS_EXIT_REASON_LEN];
	char msg[COS_EXIT_MSG_LEN];
};

/*
 * COS_KFUNC_BOUND: a kfunc bound to the attached shim.  The module's definition takes one more
 * argument, last, that the shim does not pass: the calling program's struct bpf_prog_aux,
 * which the verifier supplies (KF_IMPLICIT_ARGS; the BPF-visible prototype is the one without
 * it).  The kfunc acts only for a program of the struct_ops map that attached (cos_kf_bound(),
 * kmod/cos_kfuncs.c).
 */
#if defined(__VMLINUX_H__)	/* the shim (BPF) */
#define COS_KFUNC(ret, name, ...)	extern ret name(__VA_ARGS__) __ksym
#define COS_KFUNC_BOUND(ret, name, ...)	extern ret name(__VA_ARGS__) __ksym
#define COS_KFUNC_BOUND0(ret, name)	extern ret name(void) __ksym
#elif defined(__KERNEL__)	/* cos.ko */
struct bpf_prog_aux;
#define COS_KFUNC(ret, name, ...)	ret name(__VA_ARGS__)
#define COS_KFUNC_BOUND(ret, name, ...)	ret name(__VA_ARGS__, struct bpf_prog_aux *aux)
#define COS_KFUNC_BOUND0(ret, name)	ret name(struct bpf_prog_aux *aux)
#endif

#if defined(__VMLINUX_H__) || defined(__KERNEL__)	/* libcos takes only struct cos_exit_info */
COS_KFUNC(u32, cos_kf_abi_version, void);
COS_KFUNC_BOUND(s32, cos_kf_shim_attached, bool attached, u32 caps);
COS_KFUNC_BOUND(s32, cos_kf_task_attach, struct task_struct *p, bool runnable);
COS_KFUNC_BOUND(void, cos_kf_task_detach, struct task_struct *p, s32 slot);
COS_KFUNC_BOUND(void, cos_kf_exit_task, struct task_struct *p);
COS_KFUNC_BOUND(s32, cos_kf_select_cpu, struct task_struct *p, s32 slot, s32 prev_cpu,
		const struct cpumask *idle);
COS_KFUNC_BOUND(enum cos_enq, cos_kf_enqueue, struct task_struct *p, s32 slot, u64 enq_flags, u64 cgid);
COS_KFUNC_BOUND(void, cos_kf_dequeue, struct task_struct *p, s32 slot);
COS_KFUNC_BOUND(struct task_struct *, cos_kf_dispatch, s32 cpu, u64 *slice);
COS_KFUNC_BOUND(u64, cos_kf_task_slice, struct task_struct *p, s32 slot);
COS_KFUNC_BOUND(void, cos_kf_dispatch_failed, struct task_struct *p, s32 slot, s32 cpu);
COS_KFUNC_BOUND0(s32, cos_kf_fallback_take);
COS_KFUNC_BOUND(void, cos_kf_running, struct task_struct *p, s32 slot, s32 cpu);
COS_KFUNC_BOUND(void, cos_kf_stopping, struct task_struct *p, s32 slot, bool runnable);
COS_KFUNC_BOUND(void, cos_kf_cpu_hotplug, s32 cpu, bool online);
COS_KFUNC_BOUND(void, cos_kf_quiescent, struct task_struct *p, s32 slot, bool sleep);
COS_KFUNC_BOUND(bool, cos_kf_yield, struct task_struct *p, s32 slot);
COS_KFUNC_BOUND(void, cos_kf_set_cpumask, struct task_struct *p, s32 slot);
COS_KFUNC_BOUND(s32, cos_kf_cgroup_init, u64 id, u64 parent_id, u32 weight);
COS_KFUNC_BOUND(void, cos_kf_cgroup_exit, u64 id);
COS_KFUNC_BOUND(void, cos_kf_cgroup_set_bandwidth, u64 id, u64 period_us, u64 quota_us,
		u64 burst_us);
COS_KFUNC_BOUND(void, cos_kf_cgroup_set_weight, u64 id, u32 weight);
COS_KFUNC_BOUND(bool, cos_kf_group_charge, u64 id, u64 ns);
COS_KFUNC_BOUND(u64, cos_kf_group_throttled, u64 id);
COS_KFUNC_BOUND(u64, cos_kf_group_budget, u64 id);
COS_KFUNC_BOUND0(void, cos_kf_group_stopped);
COS_KFUNC_BOUND(u64, cos_kf_group_share, u64 id, u32 weight);
COS_KFUNC_BOUND(void, cos_kf_group_runnable, u64 id, u32 weight);
COS_KFUNC_BOUND(void, cos_kf_group_quiescent, u64 id, u32 weight);
COS_KFUNC_BOUND0(u64, cos_kf_group_released);
COS_KFUNC(s32, cos_kf_lord_cpu, void);
COS_KFUNC(bool, cos_kf_lord_active, void);

#undef COS_KFUNC
#undef COS_KFUNC_BOUND
#undef COS_KFUNC_BOUND0
#endif

#endif /* _COS_SHIM_INTF_H */
