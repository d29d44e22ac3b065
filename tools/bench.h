/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench.h — the few helpers every cos-bench-* program shares: a monotonic clock in ns, a qsort
 * comparator for samples, pinning the calling thread to a CPU range.  Header-only (static).
 */
#ifndef COS_TOOLS_BENCH_H
#define COS_TOOLS_BENCH_H

#include <sched.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns: every cos benchmark measures on this clock. */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* qsort() comparator of uint64_t samples, ascending. */
static inline int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Allow the calling thread on CPUs @first..@last only. */
static inline int bench_pin(int first, int last)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	for (int c = first; c <= last; c++)
		CPU_SET(c, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

#endif
