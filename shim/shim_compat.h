/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shim_compat.h — the one place where the shim meets kernel API drift.
 *
 * Every sched_ext kfunc the shim calls is declared here, weak, with the signature of the kernels
 * we support (7.2, 7.3).  cos.ko's own kfuncs are declared in cos_shim_intf.h.  bpftool's
 * vmlinux.h does not emit every kfunc prototype, so the shim does not rely on it for kfuncs.
 * Add a wrapper here when a kfunc is renamed or gains arguments.
 * See docs/design.md, "Kernel API drift".
 */
#ifndef _COS_SHIM_COMPAT_H
#define _COS_SHIM_COMPAT_H

/* sched_ext */
extern s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) __weak __ksym;
extern s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags,
				  bool *is_idle) __weak __ksym;
extern void scx_bpf_dsq_insert(struct task_struct *p, u64 dsq_id, u64 slice,
			       u64 enq_flags) __weak __ksym;
extern void scx_bpf_dsq_insert_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime,
				     u64 enq_flags) __weak __ksym;
extern void scx_bpf_kick_cpu(s32 cpu, u64 flags) __weak __ksym;
extern const struct cpumask *scx_bpf_get_idle_cpumask(void) __weak __ksym;
extern void scx_bpf_put_idle_cpumask(const struct cpumask *idle_mask) __weak __ksym;
extern void scx_bpf_destroy_dsq(u64 dsq_id) __weak __ksym;
extern s32 scx_bpf_pick_idle_cpu(const struct cpumask *cpus_allowed, u64 flags) __weak __ksym;
extern bool scx_bpf_test_and_clear_cpu_idle(s32 cpu) __weak __ksym;
extern int bpf_iter_scx_dsq_new(struct bpf_iter_scx_dsq *it, u64 dsq_id, u64 flags) __weak __ksym;
extern struct task_struct *bpf_iter_scx_dsq_next(struct bpf_iter_scx_dsq *it) __weak __ksym;
extern void bpf_iter_scx_dsq_destroy(struct bpf_iter_scx_dsq *it) __weak __ksym;
extern void scx_bpf_dsq_move_set_vtime(struct bpf_iter_scx_dsq *it__iter, u64 vtime) __weak __ksym;
extern bool scx_bpf_dsq_move_vtime(struct bpf_iter_scx_dsq *it__iter, struct task_struct *p,
				   u64 dsq_id, u64 enq_flags) __weak __ksym;

/*
 * Debian's 7.2.x BTF describes a few kfuncs (scx_bpf_create_dsq, scx_bpf_kick_cpu, ..._pick_*;
 * on 7.2.11 also scx_bpf_select_cpu_dfl) with the implicit trailing 'aux' argument but without
 * the "<name>_impl" twin the verifier looks for.  No BPF program can call them there ("cannot
 * find function scx_bpf_create_dsq_impl in BTF").  So they are weak: test with cos_have().
 */
#define cos_have(kfunc) bpf_ksym_exists(kfunc)

extern bool scx_bpf_dsq_move_to_local(u64 dsq_id) __weak __ksym;
extern s32 scx_bpf_dsq_nr_queued(u64 dsq_id) __weak __ksym;
extern s32 scx_bpf_task_cpu(const struct task_struct *p) __weak __ksym;
extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

#endif /* _COS_SHIM_COMPAT_H */
