// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-waits.bpf.c — how long each runnable thread waits for a CPU, under any scheduler.
 *
 * A thread starts waiting when it wakes (sched_wakeup, sched_wakeup_new) or when it is switched
 * out still runnable (preempted, or a yield); it stops when it is switched in.  Each wait goes
 * into its thread's record: count, sum, longest, and a histogram in powers of two of
 * microseconds.  The same definition as `perf sched latency`, counted in the kernel instead of
 * written out per event.  A switch-out that blocks forgets the start, so a wake-up stamped while
 * the thread still ran (a wake-up of a running task) never counts.  Beside the waits, each
 * thread's time on a CPU, the CPUs it ran on and its migrations (sched_migrate_task): where a
 * server and its client run.  The user part is bench/cos-bench-waits.c; the record is struct
 * waits_rec (cos-bench-waits.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cos-bench-waits.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WAITS_MAX_THREADS);
	__type(key, u32);		/* thread id */
	__type(value, u64);		/* when it became runnable, ns */
} waits_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WAITS_MAX_THREADS);
	__type(key, u32);		/* thread id */
	__type(value, struct waits_rec);
} waits_recs SEC(".maps");

/* What each CPU runs since when: the time on a CPU of the thread switched out next. */
struct waits_oncpu {
	u32 tid;
	u64 since;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct waits_oncpu);
} waits_cpu SEC(".maps");

/* Threads whose record did not fit (the table was full): the user part says so. */
__u64 waits_lost;

/* @p's record, made if it has none (the table full: NULL, counted in waits_lost). */
static __always_inline struct waits_rec *waits_rec_of(struct task_struct *p)
{
	struct waits_rec *r, zero = {};
	u32 tid = p->pid;

	r = bpf_map_lookup_elem(&waits_recs, &tid);
	if (r)
		return r;
	zero.tgid = p->tgid;
	__builtin_memcpy(zero.comm, p->comm, sizeof(zero.comm));
	bpf_map_update_elem(&waits_recs, &tid, &zero, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&waits_recs, &tid);
	if (!r)
		__sync_fetch_and_add(&waits_lost, 1);
	return r;
}

static __always_inline void waits_stamp(u32 tid)
{
	u64 now = bpf_ktime_get_ns();

	if (tid)	/* the idle task never waits */
		bpf_map_update_elem(&waits_start, &tid, &now, BPF_ANY);
}

static __always_inline u32 waits_bucket(u64 ns)
{
	u64 us = ns / 1000;
	u32 b = 0;

	/* bucket b: [2^(b-1), 2^b) us; bucket 0: under 1 us */
	while (us && b < WAITS_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(waits_wakeup, struct task_struct *p)
{
	waits_stamp(p->pid);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(waits_wakeup_new, struct task_struct *p)
{
	waits_stamp(p->pid);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(waits_migrate, struct task_struct *p, int dest_cpu)
{
	struct waits_rec *r;

	if (!p->pid)
		return 0;
	r = waits_rec_of(p);
	if (r)
		__sync_fetch_and_add(&r->migrations, 1);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(waits_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	u32 tid = prev->pid, zero = 0, cpu = bpf_get_smp_processor_id();
	struct waits_oncpu *on = bpf_map_lookup_elem(&waits_cpu, &zero);
	struct waits_rec *r;
	u64 now = bpf_ktime_get_ns(), *start, d;

	/* still on its runqueue (preempted: even if it was on its way to sleep) */
	if (preempt || prev_state == 0)
		waits_stamp(tid);
	else if (tid)
		bpf_map_delete_elem(&waits_start, &tid);
	if (on && tid && on->tid == tid && on->since) {
		r = waits_rec_of(prev);
		if (r)
			r->run_ns += now - on->since;
	}

	tid = next->pid;
	if (on) {
		on->tid = tid;
		on->since = now;
	}
	if (!tid)
		return 0;
	r = waits_rec_of(next);
	if (!r)
		return 0;
	/* one thread is switched in on one CPU at a time: no other writer of these fields */
	__builtin_memcpy(r->comm, next->comm, sizeof(r->comm));
	if (cpu < 64)
		r->cpus |= 1ULL << cpu;
	start = bpf_map_lookup_elem(&waits_start, &tid);
	if (!start)
		return 0;
	d = now - *start;
	bpf_map_delete_elem(&waits_start, &tid);
	r->n++;
	r->sum_ns += d;
	if (d > r->max_ns)
		r->max_ns = d;
	r->hist[waits_bucket(d) & (WAITS_BUCKETS - 1)]++;
	return 0;
}
