// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-bandwidth.c — COS's sandbox benchmark, scaled: one latency-sensitive "server"
 * thread does a fixed amount of work, over and over, beside N CPU-bound "submissions" in a
 * cgroup the caller may cap with cpu.max (COS's case: a code-judging service that caps
 * untrusted programs).  See docs/performance.md.
 *
 * The submissions are child processes that move themselves into --cgroup and spin; the server
 * is this process's thread, in its own cgroup.  Both are pinned to the benchmarks' enclave.
 * Each repetition the server does --work-ms of computation (calibrated before the submissions
 * start) in 10 chunks with a 1 ms sleep between them; its wall time is one sample.  The
 * submissions' CPU rate comes from the cgroup's cpu.stat.  With --measure-s there is no server:
 * the submissions' rate is the result (the accuracy of a cap).  Run it under `cosctl run --` to
 * make both COS tasks of a lord.  A benchmark: it asserts nothing about time.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define PROG "cos-bench-bandwidth"
#define CHUNKS 10
#define MAX_SUBS 1024

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cos-bench-bandwidth --cgroup DIR [--submissions N] [--reps R] [--work-ms W]\n"
		"                           [--label NAME] [--csv FILE] [--measure-s S]\n"
		"A server thread's completion time for a fixed work beside N CPU-bound submissions\n"
		"in cgroup DIR (cap it with its cpu.max first).\n"
		"  --cgroup DIR       the submissions' cgroup v2 directory (required)\n"
		"  --submissions N    submissions (default: 10)\n"
		"  --reps R           server repetitions (default 20)\n"
		"  --work-ms W        the server's computation per repetition, in ms of CPU (default 50)\n"
		"  --label NAME       the configuration's name in the output (default: run)\n"
		"  --csv FILE         write label,rep,server_ns for every repetition\n"
		"  --measure-s S      no server: only the submissions' CPU rate over S seconds\n");
	bench_usage_enclave(f);
}

static volatile uint64_t sink;

static void spin(uint64_t loops)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < loops; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

/* Loops of spin() per ms on this (idle) CPU: the best of a few tries. */
static uint64_t calibrate(void)
{
	uint64_t best = 0;

	for (int i = 0; i < 5; i++) {
		uint64_t t0 = bench_now_ns(), n = 1000000, dt;

		spin(n);
		dt = bench_now_ns() - t0;
		if (dt && n * 1000000 / dt > best)
			best = n * 1000000 / dt;
	}
	return best ?: 1;
}

static uint64_t usage_us(const char *cgroup)
{
	char path[4096], key[64];
	unsigned long long v;
	uint64_t usage = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu.stat", cgroup);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", key, &v) == 2)
		if (!strcmp(key, "usage_usec"))
			usage = v;
	fclose(f);
	return usage;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'g' },
		{ "submissions", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "work-ms", required_argument, NULL, 'w' },
		{ "label", required_argument, NULL, 'l' },
		{ "csv", required_argument, NULL, 'o' },
		{ "measure-s", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int subs = 10, reps = 20, work_ms = 50, measure_s = 0, ne, c;
	const char *cgroup = NULL, *label = "run", *csv = NULL;
	pid_t pids[MAX_SUBS];
	uint64_t *samples, per_ms, u0, u1, t0, t1;
	char procs[4096];
	bool ok = true;
	FILE *out = NULL;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			cgroup = optarg;
			break;
		case 'n':
			ok &= bench_opt_int(PROG, "submissions", optarg, 0, MAX_SUBS, &subs);
			break;
		case 'r':
			ok &= bench_opt_int(PROG, "reps", optarg, 1, 100000, &reps);
			break;
		case 'w':
			ok &= bench_opt_int(PROG, "work-ms", optarg, 1, 100000, &work_ms);
			break;
		case 'l':
			label = optarg;
			break;
		case 'o':
			csv = optarg;
			break;
		case 'm':
			ok &= bench_opt_int(PROG, "measure-s", optarg, 1, 3600, &measure_s);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!ok || optind != argc || !cgroup) {
		if (ok && !cgroup)
			fprintf(stderr, PROG ": --cgroup is required\n");
		usage(stderr);
		return 2;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
	if (access(procs, W_OK)) {
		fprintf(stderr, PROG ": %s: %s (a cgroup v2 directory, as root)\n", procs,
			strerror(errno));
		return 1;
	}
	ne = bench_enclave_size(PROG);
	if (!ne)
		return 1;
	if (bench_pin(1, ne)) {
		fprintf(stderr, PROG ": cannot pin to the enclave: %s\n", strerror(errno));
		return 1;
	}
	if (csv && !(out = bench_csv_open(PROG, csv, "label,rep,server_ns")))
		return 1;
	samples = calloc(reps, sizeof(*samples));
	if (!samples)
		return 1;
	per_ms = calibrate();

	for (int i = 0; i < subs; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			int fd = open(procs, O_WRONLY);

			if (fd < 0 || write(fd, "0", 1) != 1)
				_exit(1);
			close(fd);
			for (;;)
				spin(1000000);
		}
		if (pids[i] < 0) {
			fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
			subs = i;
			ok = false;
			break;
		}
	}
	usleep(measure_s ? 1000000 : 200000);	/* the submissions settle */
	u0 = usage_us(cgroup);
	t0 = bench_now_ns();
	if (measure_s) {
		reps = 0;
		sleep(measure_s);
	}
	for (int r = 0; ok && r < reps; r++) {
		uint64_t start = bench_now_ns();

		for (int k = 0; k < CHUNKS; k++) {
			spin(per_ms * work_ms / CHUNKS);
			if (k < CHUNKS - 1)
				usleep(1000);
		}
		samples[r] = bench_now_ns() - start;
		if (out)
			fprintf(out, "%s,%d,%llu\n", label, r, (unsigned long long)samples[r]);
		usleep(10000);
	}
	u1 = usage_us(cgroup);
	t1 = bench_now_ns();
	for (int i = 0; i < subs; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < subs; i++)
		waitpid(pids[i], NULL, 0);
	if (out)
		fclose(out);
	if (!ok)
		return 1;

	if (measure_s) {
		printf("%s: %d submissions used %.2f %% of a CPU in %d s\n", label, subs,
		       100.0 * (u1 - u0) * 1000 / (t1 - t0), measure_s);
		free(samples);
		return 0;
	}
	double mean = 0;
	for (int r = 0; r < reps; r++)
		mean += samples[r] / 1e6 / reps;
	bench_sort_u64(samples, reps);
	printf("%s: server %d x %d ms of work beside %d submissions: mean %.1f ms, p50 %.1f ms, "
	       "p99 %.1f ms; submissions used %.1f %% of a CPU\n", label, reps, work_ms, subs, mean,
	       bench_pct_us(samples, reps, 0.5) / 1000, bench_pct_us(samples, reps, 0.99) / 1000,
	       100.0 * (u1 - u0) * 1000 / (t1 - t0));
	free(samples);
	return 0;
}
