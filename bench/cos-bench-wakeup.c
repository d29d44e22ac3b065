// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-wakeup.c — cyclictest-style timer wake-up latency of the calling thread, in rounds.
 *
 * The thread sleeps until an absolute CLOCK_MONOTONIC deadline every --interval-us and records
 * how late it woke.  Unlike cyclictest it never changes its own scheduling policy, so it can be
 * measured as a COS task (`cosctl run -- cos-bench-wakeup …`) as well as under the default
 * scheduler.  Per round: p50/p99/max; at the end the per-round P99 statistic (mean, median,
 * standard deviation of the rounds' P99s) and the wake-ups over 1 ms.  --work-us W spins W us
 * after each wake-up: a latency-critical task's short work (cos-lcbe's benchmark).  --csv FILE
 * keeps every sample.  The last line is the process's CPU time and context switches
 * (getrusage): what its wake-ups cost the CPU it shares.  A benchmark: it
 * asserts nothing about time.  See docs/performance.md.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

#define PROG "cos-bench-wakeup"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cos-bench-wakeup [--rounds R] [--loops L] [--interval-us I] [--cpu C] [--csv FILE]\n"
		"Timer wake-up latency of this thread (cyclictest-style, without changing its policy).\n"
		"  --rounds R       rounds (default 10)\n"
		"  --loops L        wake-ups per round (default 500)\n"
		"  --interval-us I  period in us (default 1000)\n"
		"  --work-us W      spin W us after each wake-up (default 0)\n"
		"  --cpu C          pin to CPU C first (default: leave the affinity alone)\n"
		"  --csv FILE       write round,sample,latency_ns for every wake-up\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "loops", required_argument, NULL, 'l' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "work-us", required_argument, NULL, 'w' },
		{ "csv", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int rounds = 10, loops = 500, interval_us = 1000, cpu = -1, work_us = 0, c;
	unsigned long long over_1ms = 0;
	bool ok = true;
	const char *csv = NULL;
	uint64_t *lat;
	double *p99s;
	FILE *out = NULL;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': ok = bench_opt_int(PROG, "rounds", optarg, 1, 100000, &rounds); break;
		case 'l': ok = bench_opt_int(PROG, "loops", optarg, 10, 10000000, &loops); break;
		case 'i': ok = bench_opt_int(PROG, "interval-us", optarg, 10, 10000000, &interval_us); break;
		case 'c': ok = bench_opt_int(PROG, "cpu", optarg, 0, 65535, &cpu); break;
		case 'w': ok = bench_opt_int(PROG, "work-us", optarg, 0, 1000000, &work_us); break;
		case 'o': csv = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok)
			return 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (cpu >= 0) {
		if (bench_pin(cpu, cpu)) {
			fprintf(stderr, "%s: CPU %d: %s\n", PROG, cpu, strerror(errno));
			return 1;
		}
	}
	if (csv && !(out = bench_csv_open(PROG, csv, "round,sample,latency_ns")))
		return 1;
	lat = calloc(loops, sizeof(*lat));
	p99s = calloc(rounds, sizeof(*p99s));
	if (!lat || !p99s)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("policy %d\n%5s %10s %10s %10s\n", sched_getscheduler(0), "round", "p50_us", "p99_us",
	       "max_us");
	for (int r = 0; r < rounds; r++) {
		uint64_t next = bench_now_ns() + interval_us * 1000ull;

		for (int i = 0; i < loops; i++) {
			struct timespec ts = { .tv_sec = next / 1000000000ull, .tv_nsec = next % 1000000000ull };
			uint64_t t;

			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			t = bench_now_ns();
			lat[i] = t - next;
			over_1ms += lat[i] > 1000000;
			while (bench_now_ns() - t < work_us * 1000ull)
				;
			if (out)
				fprintf(out, "%d,%d,%llu\n", r, i, (unsigned long long)lat[i]);
			next += interval_us * 1000ull;
			if (next < t)		/* overran a whole period: restart from now */
				next = t + interval_us * 1000ull;
		}
		bench_sort_u64(lat, loops);
		p99s[r] = bench_pct_us(lat, loops, 0.99);
		printf("%5d %10.1f %10.1f %10.1f\n", r, bench_pct_us(lat, loops, 0.5), p99s[r],
		       bench_pct_us(lat, loops, 1));
	}
	{
		double mean = 0, var = 0, median;

		for (int r = 0; r < rounds; r++)
			mean += p99s[r] / rounds;
		for (int r = 0; r < rounds; r++)
			var += (p99s[r] - mean) * (p99s[r] - mean) / rounds;
		qsort(p99s, rounds, sizeof(*p99s), cmp_double);
		median = rounds % 2 ? p99s[rounds / 2] : (p99s[rounds / 2 - 1] + p99s[rounds / 2]) / 2;
		printf("per-round p99: mean %.1f us, median %.1f us, stdev %.1f us; over 1 ms: %llu\n",
		       mean, median, sqrt(var), over_1ms);
	}
	{
		struct rusage ru;

		if (getrusage(RUSAGE_SELF, &ru) == 0)
			printf("rusage: user %.3f s, system %.3f s, voluntary switches %ld, "
			       "involuntary %ld\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
			       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_nvcsw, ru.ru_nivcsw);
	}
	if (out)
		fclose(out);
	free(lat);
	free(p99s);
	return 0;
}
