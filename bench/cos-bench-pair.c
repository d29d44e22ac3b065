// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-pair.c — UnixBench context1-style pipe ping-pong: --pairs N pairs of processes,
 * each pair passing a counter back and forth through two pipes for --seconds S.  One result
 * line (round trips per second, all pairs together, and the slowest pair's); --csv appends a
 * row.  Run it under `cosctl run --` to make the pairs COS tasks.  A benchmark: it asserts
 * nothing about time.  See docs/performance.md.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define PROG		"cos-bench-pair"
#define PAIRS_MAX	64

struct shared {
	volatile int stop;
	uint64_t trips[PAIRS_MAX];	/* round trips, written by each pair's first process */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cos-bench-pair [--pairs N] [--seconds S] [--label L] [--csv FILE]\n"
		"Pipe ping-pong between the two processes of each of N pairs (UnixBench context1).\n"
		"  --pairs N     pairs (1-%d, default 1)\n"
		"  --seconds S   how long (default 2; fractions allowed)\n"
		"  --label L     the scheduler's name, for the csv row (default \"-\")\n"
		"  --csv FILE    append label,pairs,seconds,trips,trips_per_s,slowest_pair_per_s\n",
		PAIRS_MAX);
}

/* One side of a pair: read a counter, pass it on incremented; the first side starts. */
static void side(struct shared *sh, int pair, int rd, int wr, bool first)
{
	uint64_t v = 0;

	if (first && write(wr, &v, sizeof(v)) != sizeof(v))
		_exit(1);
	while (!sh->stop) {
		if (read(rd, &v, sizeof(v)) != sizeof(v))
			_exit(sh->stop ? 0 : 1);
		v++;
		if (first)
			sh->trips[pair] = v / 2;
		if (write(wr, &v, sizeof(v)) != sizeof(v))
			_exit(sh->stop ? 0 : 1);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pairs", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 's' },
		{ "label", required_argument, NULL, 'l' },
		{ "csv", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int pairs = 1, c, bad = 0;
	double seconds = 2, secs, total = 0, slowest = -1;
	const char *label = "-", *csv = NULL;
	pid_t pids[2 * PAIRS_MAX];
	uint64_t start[PAIRS_MAX];
	struct shared *sh;
	uint64_t t0, t1;
	bool ok = true;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': ok = bench_opt_int(PROG, "pairs", optarg, 1, PAIRS_MAX, &pairs); break;
		case 's': ok = bench_opt_double(PROG, "seconds", optarg, 0.01, 3600, &seconds); break;
		case 'l': label = optarg; break;
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
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror(PROG ": mmap");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < pairs; i++) {
		int a[2], b[2];

		if (pipe(a) || pipe(b)) {
			perror(PROG ": pipe");
			return 1;
		}
		for (int k = 0; k < 2; k++) {
			pid_t p = fork();

			if (p < 0) {
				perror(PROG ": fork");
				return 1;
			}
			if (p == 0)	/* the first side reads b and writes a; the second the reverse */
				side(sh, i, k ? a[0] : b[0], k ? b[1] : a[1], !k);
			pids[2 * i + k] = p;
		}
		close(a[0]);
		close(a[1]);
		close(b[0]);
		close(b[1]);
	}
	usleep(100000);			/* every pair under way */
	for (int i = 0; i < pairs; i++)
		start[i] = sh->trips[i];
	t0 = bench_now_ns();
	usleep((useconds_t)(seconds * 1e6));
	for (int i = 0; i < pairs; i++)
		start[i] = sh->trips[i] - start[i];
	t1 = bench_now_ns();
	sh->stop = 1;
	secs = (t1 - t0) / 1e9;
	for (int i = 0; i < pairs; i++) {
		total += start[i];
		if (slowest < 0 || start[i] < slowest)
			slowest = start[i];
	}
	for (int i = 0; i < 2 * pairs; i++) {
		int st;

		kill(pids[i], SIGKILL);	/* a side blocked in read() would wait for ever */
		waitpid(pids[i], &st, 0);
		bad |= WIFEXITED(st) && WEXITSTATUS(st);
	}
	printf("pairs=%d: %.0f round trips/s, slowest pair %.0f/s\n", pairs, total / secs,
	       slowest / secs);
	if (csv) {
		FILE *f = bench_csv_append(PROG, csv,
					 "label,pairs,seconds,trips,trips_per_s,slowest_pair_per_s");

		if (!f)
			return 1;
		fprintf(f, "%s,%d,%.3f,%.0f,%.1f,%.1f\n", label, pairs, secs, total, total / secs,
			slowest / secs);
		fclose(f);
	}
	return bad;
}
