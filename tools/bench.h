/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench.h — the few helpers every cos-bench-* program shares: a monotonic clock in ns, a qsort
 * comparator for samples, pinning the calling thread to a CPU range, and the enclave the
 * benchmarks use (every online CPU but CPU 0).  Header-only (static).
 */
#ifndef COS_TOOLS_BENCH_H
#define COS_TOOLS_BENCH_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* The most online CPUs (CPU 0 and the enclave) a benchmark runs on: arrays indexed by CPU. */
#define BENCH_MAX_CPUS	64

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

/*
 * The enclave of every cos benchmark: every online CPU but CPU 0, that is CPUs 1..N-1 of N
 * online CPUs; CPU 0 runs the lord, the request generator or the waker.  Returns its size N - 1,
 * or 0 when this machine has none to give (fewer than 2 online CPUs, or more than
 * BENCH_MAX_CPUS), after saying why on stderr as @prog unless @prog is NULL.
 */
static inline int bench_enclave_size(const char *prog)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n >= 2 && n <= BENCH_MAX_CPUS)
		return (int)(n - 1);
	if (prog && n < 2)
		fprintf(stderr, "%s: needs at least 2 online CPUs (CPU 0 and an enclave of CPUs "
			"1..N-1), this machine has %ld\n", prog, n);
	else if (prog)
		fprintf(stderr, "%s: runs on at most %d online CPUs (an enclave of CPUs "
			"1..%d), this machine has %ld\n", prog, BENCH_MAX_CPUS, BENCH_MAX_CPUS - 1,
			n);
	return 0;
}

/* The enclave of @size CPUs, for texts, into @buf: "CPU 1" or "CPUs 1-<size>". */
static inline const char *bench_enclave_cpus(char *buf, size_t len, int size)
{
	if (size > 1)
		snprintf(buf, len, "CPUs 1-%d", size);
	else
		snprintf(buf, len, "CPU 1");
	return buf;
}

/* For --help texts: a line naming this machine's enclave, when it has one a benchmark can use. */
static inline void bench_usage_enclave(FILE *f)
{
	int size = bench_enclave_size(NULL);
	char cpus[32];

	if (size)
		fprintf(f, "Here N = %d: the enclave is %s.\n", size + 1,
			bench_enclave_cpus(cpus, sizeof(cpus), size));
}

#endif
