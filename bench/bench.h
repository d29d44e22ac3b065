/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench.h — the small library every cos-bench-* program shares (bench/bench.c): the clock,
 * pinning, the benchmarks' enclave, option values checked the same way, percentiles computed the
 * same way, and CSV files opened the same way.  Not installed: the benchmarks are built per
 * kernel beside the tests (Makefile) and shipped in the benchmark pack.
 * See docs/performance.md.
 */
#ifndef COS_BENCH_H
#define COS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The most online CPUs (CPU 0 and the enclave) a benchmark runs on: arrays indexed by CPU. */
#define BENCH_MAX_CPUS	64

/* CLOCK_MONOTONIC in ns: every cos benchmark measures on this clock. */
uint64_t bench_now_ns(void);

/* Allow the calling thread on CPUs @first..@last only; 0 or -1 with errno. */
int bench_pin(int first, int last);

/*
 * The enclave of every cos benchmark: every online CPU but CPU 0, that is CPUs 1..N-1 of N
 * online CPUs; CPU 0 runs the lord, the request generator or the waker.  Returns its size N - 1,
 * or 0 when this machine has none to give (fewer than 2 online CPUs, or more than
 * BENCH_MAX_CPUS), after saying why on stderr as @prog unless @prog is NULL.
 */
int bench_enclave_size(const char *prog);

/* The enclave of @size CPUs, for texts, into @buf: "CPU 1" or "CPUs 1-<size>". */
const char *bench_enclave_cpus(char *buf, size_t len, int size);

/* For --help texts: a line naming this machine's enclave, when it has one a benchmark can use. */
void bench_usage_enclave(FILE *f);

/*
 * Option values.  Each parses all of @arg (a number and nothing else) and checks @min..@max;
 * on failure it says "<prog>: --<opt> <arg>: ..." on stderr and returns false, leaving *@out
 * alone.  bench_opt_list() splits a comma-separated list of integers into @out (at most @max_n).
 */
bool bench_opt_int(const char *prog, const char *opt, const char *arg, long min, long max,
		   int *out);
bool bench_opt_u64(const char *prog, const char *opt, const char *arg, uint64_t min,
		   uint64_t max, uint64_t *out);
bool bench_opt_double(const char *prog, const char *opt, const char *arg, double min,
		      double max, double *out);
int bench_opt_list(const char *prog, const char *opt, const char *arg, long min, long max,
		   int *out, int max_n);

/*
 * Comma-separated names: the next item of *@list (its length in *@len), advancing *@list past
 * it; NULL at the end.  For --modes/--submit style options.
 */
const char *bench_list_next(const char **list, size_t *len);

/* Sort @n samples ascending. */
void bench_sort_u64(uint64_t *v, size_t n);

/*
 * The @p quantile (0..1) of @n samples sorted ascending, in µs from ns: element
 * floor((n - 1) * p), as every cos benchmark reports it (p = 0.5 is the lower median of an even
 * count); 0 for no samples.
 */
double bench_pct_us(const uint64_t *sorted, size_t n, double p);

/*
 * A CSV file for the samples: created (truncated) with its @header line written, or NULL after
 * saying "<prog>: <path>: <why>" on stderr.
 */
FILE *bench_csv_open(const char *prog, const char *path, const char *header);

/*
 * A CSV file a run appends one row to: opened for appending, with @header written first if
 * the file is new or empty; or NULL after saying "<prog>: <path>: <why>" on stderr.
 */
FILE *bench_csv_append(const char *prog, const char *path, const char *header);

/*
 * The lock hints a run was started with, for its row: @preload 1 under LD_PRELOAD=
 * libcos-lock.so, @handoff 1 with COS_LOCK_HANDOFF=1 (a contended unlock yields).
 */
void bench_lock_env(int *preload, int *handoff);

#endif
