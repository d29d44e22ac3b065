// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-waits.bpf.c — how long each runnable thread waits for a CPU, under any scheduler.
 *
 * A thread starts waiting when it wakes (sched_wakeup, sched_wakeup_new) or when it is switched
 * out still runnable (preempted, or a yield); it stops when it is switched in.  Each wait goes
 * into its thread's record: count, sum, longest, and a histogram in powers of two of
 * microseconds.  The same definition as `perf sched latency`, counted in the kernel instead of
 * written out per event.  A switch-out that blocks forgets the start, so a wake-up stamped while
 * the thread still ran (a wake-up of a running task) never counts.  The user part is
 * bench/cos-bench-waits.c; the record is struct waits_rec there too.
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

/* Threads whose record did not fit (the table was full): the user part says so. */
__u64 waits_lost;

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

SEC("tp_btf/sched_switch")
int BPF_PROG(waits_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	u32 tid = prev->pid;
	struct waits_rec *r, zero = {};
	u64 *start, d;

	/* still on its runqueue (preempted: even if it was on its way to sleep) */
	if (preempt || prev_state == 0)
		waits_stamp(tid);
	else if (tid)
		bpf_map_delete_elem(&waits_start, &tid);

	tid = next->pid;
	if (!tid)
		return 0;
	start = bpf_map_lookup_elem(&waits_start, &tid);
	if (!start)
		return 0;
	d = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&waits_start, &tid);
	r = bpf_map_lookup_elem(&waits_recs, &tid);
	if (!r) {
		zero.tgid = next->tgid;
		if (bpf_map_update_elem(&waits_recs, &tid, &zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&waits_recs, &tid)) {
			__sync_fetch_and_add(&waits_lost, 1);
			return 0;
		}
		r = bpf_map_lookup_elem(&waits_recs, &tid);
		if (!r)
			return 0;
	}
	/* one thread is switched in on one CPU at a time: no other writer of its record */
	__builtin_memcpy(r->comm, next->comm, sizeof(r->comm));
	r->n++;
	r->sum_ns += d;
	if (d > r->max_ns)
		r->max_ns = d;
	r->hist[waits_bucket(d) & (WAITS_BUCKETS - 1)]++;
	return 0;
}
