// SPDX-License-Identifier: GPL-2.0
/*
 * bench.c — the helpers every cos-bench-* program shares (declared and described in bench.h).
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int bench_pin(int first, int last)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	for (int c = first; c <= last; c++)
		CPU_SET(c, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

int bench_enclave_size(const char *prog)
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

const char *bench_enclave_cpus(char *buf, size_t len, int size)
{
	if (size > 1)
		snprintf(buf, len, "CPUs 1-%d", size);
	else
		snprintf(buf, len, "CPU 1");
	return buf;
}

void bench_usage_enclave(FILE *f)
{
	int size = bench_enclave_size(NULL);
	char cpus[32];

	if (size)
		fprintf(f, "Here N = %d: the enclave is %s.\n", size + 1,
			bench_enclave_cpus(cpus, sizeof(cpus), size));
}

bool bench_opt_int(const char *prog, const char *opt, const char *arg, long min, long max,
		   int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (end == arg || *end || errno || v < min || v > max) {
		fprintf(stderr, "%s: --%s %s: must be an integer from %ld to %ld\n", prog, opt, arg,
			min, max);
		return false;
	}
	*out = (int)v;
	return true;
}

bool bench_opt_u64(const char *prog, const char *opt, const char *arg, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (end == arg || *end || errno || arg[strspn(arg, " \t")] == '-' || v < min || v > max) {
		fprintf(stderr, "%s: --%s %s: must be an integer from %llu to %llu\n", prog, opt,
			arg, (unsigned long long)min, (unsigned long long)max);
		return false;
	}
	*out = v;
	return true;
}

bool bench_opt_double(const char *prog, const char *opt, const char *arg, double min,
		      double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v < min || v > max) {
		fprintf(stderr, "%s: --%s %s: must be a number from %g to %g\n", prog, opt, arg, min,
			max);
		return false;
	}
	*out = v;
	return true;
}

int bench_opt_list(const char *prog, const char *opt, const char *arg, long min, long max,
		   int *out, int max_n)
{
	const char *p = arg;
	int n = 0;

	for (;;) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || (*end && *end != ',') || errno || v < min || v > max || n == max_n) {
			fprintf(stderr, "%s: --%s %s: must be a comma-separated list of at most %d "
				"integers from %ld to %ld\n", prog, opt, arg, max_n, min, max);
			return -1;
		}
		out[n++] = (int)v;
		if (!*end)
			return n;
		p = end + 1;
	}
}

const char *bench_list_next(const char **list, size_t *len)
{
	const char *item = *list;

	if (!*item)
		return NULL;
	*len = strcspn(item, ",");
	*list = item[*len] ? item + *len + 1 : item + *len;
	return item;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void bench_sort_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
}

double bench_pct_us(const uint64_t *sorted, size_t n, double p)
{
	return n ? sorted[(size_t)((n - 1) * p)] / 1000.0 : 0;
}

FILE *bench_csv_open(const char *prog, const char *path, const char *header)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return NULL;
	}
	fprintf(f, "%s\n", header);
	return f;
}

FILE *bench_csv_append(const char *prog, const char *path, const char *header)
{
	FILE *f = fopen(path, "a");

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return NULL;
	}
	if (ftell(f) == 0)	/* "a" opens at the end: 0 is a new or empty file */
		fprintf(f, "%s\n", header);
	return f;
}

void bench_lock_env(int *preload, int *handoff)
{
	const char *pre = getenv("LD_PRELOAD"), *h = getenv("COS_LOCK_HANDOFF");

	*preload = pre && strstr(pre, "libcos-lock") != NULL;
	*handoff = h && !strcmp(h, "1");
}
