// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-waits.c — the longest wait of every runnable thread, under whatever scheduler runs.
 *
 * Loads cos-bench-waits.bpf.c (a libbpf skeleton) on the kernel's sched_wakeup,
 * sched_wakeup_new and sched_switch tracepoints, which every scheduler class passes through, so
 * the default scheduler, a sched_ext peer and a cos lord are measured the same way.  Records
 * until SIGINT or SIGTERM (or --seconds), then prints the threads that waited longest and,
 * with --csv, every thread's waits with its histogram, its time on a CPU, the CPUs it ran on
 * and its migrations.  `make bench` (BENCH=apps) runs it beside each server.  A benchmark: it
 * asserts nothing about time.  See docs/performance.md.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include "cos-bench-waits.h"
#include "cos-bench-waits.skel.h"

#define PROG "cos-bench-waits"
#define MAX_COMMS 32

struct thread {
	unsigned int tid;
	struct waits_rec r;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cos-bench-waits [--seconds S] [--comm NAMES] [--top N] [--csv FILE]\n"
		"How long each runnable thread waits for a CPU (from its wake-up, or from being switched\n"
		"out while runnable, to being switched in), under whatever scheduler runs.  Records until\n"
		"SIGINT or SIGTERM, or for S seconds; says \"recording\" on stderr once it does.\n"
		"  --seconds S   stop after S seconds (default: at the signal)\n"
		"  --comm NAMES  only threads with one of these comma-separated names (as the kernel\n"
		"                keeps them: their first 15 characters)\n"
		"  --top N       print the N threads that waited longest (default 10)\n"
		"  --csv FILE    every thread that ran: tid,pid,comm,waits,total_us,max_us,hist,run_us,\n"
		"                migrations,cpus, where hist is space-separated U:COUNT pairs, COUNT\n"
		"                waits shorter than U us (and at least U/2), run_us its time on a CPU\n"
		"                and cpus the CPUs it ran on (space-separated, those below 64)\n"
		"The last line: threads, waits, the longest wait in us and its thread, the mean wait.\n");
}

static bool comm_wanted(const char *comm, char comms[][16], int ncomms)
{
	if (!ncomms)
		return true;
	for (int i = 0; i < ncomms; i++)
		if (!strncmp(comm, comms[i], 15))
			return true;
	return false;
}

static int by_max_desc(const void *a, const void *b)
{
	const struct thread *x = a, *y = b;

	return x->r.max_ns < y->r.max_ns ? 1 : x->r.max_ns > y->r.max_ns ? -1 : 0;
}

/* Every record of @map whose thread is wanted, into *@out (malloc'ed); the count, or -1. */
static int read_threads(int map, char comms[][16], int ncomms, struct thread **out)
{
	unsigned int key, next, *prev = NULL;
	size_t n = 0, cap = 256;
	struct thread *t = malloc(cap * sizeof(*t));

	if (!t)
		return -1;
	while (!bpf_map_get_next_key(map, prev, &next)) {
		key = next;
		prev = &key;
		if (n == cap) {
			struct thread *m = realloc(t, 2 * cap * sizeof(*t));

			if (!m) {
				free(t);
				return -1;
			}
			t = m;
			cap *= 2;
		}
		if (bpf_map_lookup_elem(map, &key, &t[n].r))
			continue;	/* gone meanwhile */
		t[n].r.comm[sizeof(t[n].r.comm) - 1] = '\0';
		if (!comm_wanted(t[n].r.comm, comms, ncomms))
			continue;
		t[n].tid = key;
		n++;
	}
	*out = t;
	return (int)n;
}

static void write_csv(FILE *f, const struct thread *t, int n)
{
	for (int i = 0; i < n; i++) {
		fprintf(f, "%u,%u,%s,%llu,%.1f,%.1f,", t[i].tid, t[i].r.tgid, t[i].r.comm, t[i].r.n,
			t[i].r.sum_ns / 1e3, t[i].r.max_ns / 1e3);
		for (int b = 0, first = 1; b < WAITS_BUCKETS; b++) {
			if (!t[i].r.hist[b])
				continue;
			fprintf(f, "%s%llu:%u", first ? "" : " ", 1ull << b, t[i].r.hist[b]);
			first = 0;
		}
		fprintf(f, ",%.1f,%llu,", t[i].r.run_ns / 1e3, t[i].r.migrations);
		for (int cpu = 0, first = 1; cpu < 64; cpu++) {
			if (!(t[i].r.cpus >> cpu & 1))
				continue;
			fprintf(f, "%s%d", first ? "" : " ", cpu);
			first = 0;
		}
		fputc('\n', f);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "comm", required_argument, NULL, 'c' },
		{ "top", required_argument, NULL, 't' },
		{ "csv", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char comms[MAX_COMMS][16];
	int seconds = 0, top = 10, ncomms = 0, c, n, sig, rc = 1;
	unsigned long long waits = 0, sum_ns = 0;
	const char *csv = NULL, *list, *item;
	struct cos_bench_waits_bpf *skel;
	struct thread *t = NULL;
	struct timespec to;
	FILE *out = NULL;
	sigset_t stop;
	size_t len;
	bool ok = true;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': ok = bench_opt_int(PROG, "seconds", optarg, 1, 86400, &seconds); break;
		case 't': ok = bench_opt_int(PROG, "top", optarg, 0, 100000, &top); break;
		case 'c':
			for (list = optarg; (item = bench_list_next(&list, &len));) {
				if (!len || len > 15 || ncomms == MAX_COMMS) {
					fprintf(stderr, "%s: --comm %s: at most %d names of 1 to 15 characters\n",
						PROG, optarg, MAX_COMMS);
					return 2;
				}
				memcpy(comms[ncomms], item, len);
				comms[ncomms++][len] = '\0';
			}
			break;
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
	/* the signals wait in the mask until sigtimedwait() takes them */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	if (csv && !(out = bench_csv_open(PROG, csv,
						   "tid,pid,comm,waits,total_us,max_us,hist,run_us,migrations,cpus")))
		return 1;
	skel = cos_bench_waits_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "%s: cannot load the BPF program: %s (root, and a kernel with BTF, are needed)\n",
			PROG, strerror(errno));
		goto out;
	}
	if (cos_bench_waits_bpf__attach(skel)) {
		fprintf(stderr, "%s: cannot attach to the scheduler's tracepoints: %s\n", PROG,
			strerror(errno));
		goto out;
	}
	fprintf(stderr, "%s: recording\n", PROG);
	to.tv_sec = seconds ? seconds : 365 * 86400;
	to.tv_nsec = 0;
	do
		sig = sigtimedwait(&stop, NULL, &to);
	while (sig < 0 && errno == EINTR);
	cos_bench_waits_bpf__detach(skel);
	n = read_threads(bpf_map__fd(skel->maps.waits_recs), comms, ncomms, &t);
	if (n < 0) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		goto out;
	}
	qsort(t, n, sizeof(*t), by_max_desc);
	if (out)
		write_csv(out, t, n);
	printf("%8s %8s %-16s %10s %12s %12s %12s %10s\n", "tid", "pid", "comm", "waits", "mean_us",
	       "max_us", "run_us", "migrations");
	for (int i = 0; i < n; i++) {
		waits += t[i].r.n;
		sum_ns += t[i].r.sum_ns;
		if (i < top)
			printf("%8u %8u %-16s %10llu %12.1f %12.1f %12.1f %10llu\n", t[i].tid, t[i].r.tgid,
			       t[i].r.comm, t[i].r.n, t[i].r.n ? t[i].r.sum_ns / 1e3 / t[i].r.n : 0.0,
			       t[i].r.max_ns / 1e3, t[i].r.run_ns / 1e3, t[i].r.migrations);
	}
	if (skel->bss->waits_lost)
		fprintf(stderr, "%s: %llu threads not recorded: more than %d threads\n", PROG,
			(unsigned long long)skel->bss->waits_lost, WAITS_MAX_THREADS);
	if (n)
		printf("threads %d waits %llu longest_us %.1f longest %s/%u mean_us %.1f\n", n, waits,
		       t[0].r.max_ns / 1e3, t[0].r.comm, t[0].tid, waits ? sum_ns / 1e3 / waits : 0.0);
	else
		printf("threads 0 waits 0 longest_us 0.0 longest - mean_us 0.0\n");
	rc = 0;
out:
	free(t);
	if (out && fclose(out)) {
		fprintf(stderr, "%s: %s: %s\n", PROG, csv, strerror(errno));
		rc = 1;
	}
	cos_bench_waits_bpf__destroy(skel);
	return rc;
}
