/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos-bench-waits.h — the record cos-bench-waits.bpf.c keeps per thread and its user part
 * (cos-bench-waits.c) reads.  Included by both: plain types only.
 */
#ifndef COS_BENCH_WAITS_H
#define COS_BENCH_WAITS_H

#define WAITS_MAX_THREADS	16384	/* threads recorded at most (then counted as lost) */
#define WAITS_BUCKETS		32	/* a power of two: hist[b] counts waits in [2^(b-1), 2^b) us */

/* One thread's runnable waits, and where and how long it ran. */
struct waits_rec {
	unsigned int tgid;		/* its process */
	char comm[16];			/* its name when it last ran */
	unsigned long long n;		/* waits */
	unsigned long long sum_ns;	/* their total */
	unsigned long long max_ns;	/* the longest */
	unsigned long long run_ns;	/* time on a CPU */
	unsigned long long migrations;	/* moves to another CPU (sched_migrate_task) */
	unsigned long long cpus;	/* the CPUs it ran on, CPU n as bit n (n < 64) */
	unsigned int hist[WAITS_BUCKETS];	/* bucket 0: under 1 us */
};

#endif
