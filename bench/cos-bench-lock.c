// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-lock.c — mutex scenarios, to compare schedulers (and lock-aware lords) on programs
 * whose threads share locks: the lock-handoff reference's scenarios, written for cos.
 *
 *   uncontended  one thread takes and gives back one mutex: ns per operation
 *   contended    --threads threads take one mutex around an empty section: ns per lock
 *   handoff      two threads pass a turn through a mutex and a condition variable: ns per pass
 *   cs           --threads threads loop: --cs-us inside the mutex, --work-us outside;
 *                throughput and each lock's wait (mean, p99, max)
 *   burst        --threads threads sleep, then all want the mutex at once, --rounds times
 *   oversub      like cs, meant with threads 2-3x the CPUs and long sections (the defaults)
 *
 * ns/op is the wall time per operation: per lock or unlock uncontended, per lock taken
 * otherwise (per pass in handoff).
 *
 * --lock pthread (a pthread_mutex_t: run it under LD_PRELOAD=libcos-lock.so to publish hints
 * with no change) or cos (cos_mutex: hints from libcos); the row says whether the interposer
 * and COS_LOCK_HANDOFF=1 (a contended unlock yields to the waiter it woke) were on.  One result line, and --csv appends
 * one row (the header when the file is new).  Context switches are the process's (getrusage).
 * A benchmark: it asserts nothing about time.  See docs/performance.md.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cos.h>

#include "bench.h"

#define PROG		"cos-bench-lock"
#define SAMPLES_MAX	(1u << 16)	/* waits kept per thread for the p99; mean and max see all */

enum scenario { UNCONTENDED, CONTENDED, HANDOFF, CS, BURST, OVERSUB };
static const char *const scenario_names[] = { "uncontended", "contended", "handoff", "cs",
					      "burst", "oversub" };

static struct {
	enum scenario scenario;
	bool cos;		/* --lock cos */
	int threads, rounds;
	uint64_t cs_ns, work_ns, run_ns;
} opt = { .scenario = CS, .threads = 0, .rounds = 20, .cs_ns = 5000, .work_ns = 5000,
	  .run_ns = 2000000000ull };

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static struct cos_mutex cmutex = COS_MUTEX_INITIALIZER;
static volatile int stop;
static pthread_barrier_t start_line;

static inline void lock(void)
{
	if (opt.cos)
		cos_mutex_lock(&cmutex);
	else
		pthread_mutex_lock(&plock);
}

static inline void unlock(void)
{
	if (opt.cos)
		cos_mutex_unlock(&cmutex);
	else
		pthread_mutex_unlock(&plock);
}

/* Busy for @ns on this clock (a critical section's or the work's length). */
static void spin_ns(uint64_t ns)
{
	uint64_t end = bench_now_ns() + ns;

	while (bench_now_ns() < end)
		;
}

struct worker {
	pthread_t tid;
	int id;
	uint64_t ops, wait_sum, wait_max;
	uint64_t wait_max_at;		/* when the longest wait ended */
	uint64_t *waits;
	size_t nr_waits;
};

/* One lock taken: its wait counted. */
static void took(struct worker *w, uint64_t asked, uint64_t got)
{
	uint64_t wait = got - asked;

	w->ops++;
	w->wait_sum += wait;
	if (wait > w->wait_max) {
		w->wait_max = wait;
		w->wait_max_at = got;
	}
	if (w->nr_waits < SAMPLES_MAX)
		w->waits[w->nr_waits++] = wait;
}

static void *cs_worker(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start_line);
	while (!stop) {
		uint64_t asked = bench_now_ns(), got;

		lock();
		got = bench_now_ns();
		spin_ns(opt.cs_ns);
		unlock();
		took(w, asked, got);
		if (opt.work_ns)
			spin_ns(opt.work_ns);
	}
	return NULL;
}

static volatile unsigned long shared_counter;

static void *contended_worker(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start_line);
	while (!stop) {
		for (int i = 0; i < 1000; i++) {
			lock();
			shared_counter++;
			unlock();
		}
		w->ops += 1000;
	}
	return NULL;
}

static void *burst_worker(void *arg)
{
	struct worker *w = arg;

	for (int r = 0; r < opt.rounds; r++) {
		pthread_barrier_wait(&start_line);	/* all at once */
		uint64_t asked = bench_now_ns();

		lock();
		took(w, asked, bench_now_ns());
		spin_ns(opt.cs_ns);
		unlock();
		pthread_barrier_wait(&start_line);	/* the round's end */
		if (w->id == 0)
			usleep(1000);			/* the others wait at the next start */
	}
	return NULL;
}

static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
static int turn;

/* Two threads pass the turn: each waits for its own, then gives the other one. */
static void *handoff_worker(void *arg)
{
	struct worker *w = arg;
	pthread_mutex_t *m = opt.cos ? &cmutex.m : &plock;	/* the condition needs the mutex */

	pthread_barrier_wait(&start_line);
	for (;;) {
		lock();
		while (turn != w->id && !stop)
			pthread_cond_wait(&turn_cv, m);
		if (stop) {
			pthread_cond_broadcast(&turn_cv);
			unlock();
			return NULL;
		}
		turn = !w->id;
		w->ops++;
		pthread_cond_signal(&turn_cv);
		unlock();
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--scenario S] [--lock pthread|cos] [--threads N] [--cs-us C]\n"
		"                      [--work-us W] [--seconds S] [--rounds R] [--csv FILE]\n"
		"                      [--label NAME]\n"
		"Mutex scenarios: how a scheduler serves threads that share a lock.\n"
		"  --scenario S   uncontended, contended, handoff, cs (default), burst, oversub\n"
		"  --lock L       pthread (default; LD_PRELOAD=libcos-lock.so publishes its hints)\n"
		"                 or cos (cos_mutex)\n"
		"  --threads N    threads (default: cs 8, contended 4, burst the CPUs, oversub 3 x\n"
		"                 the CPUs; uncontended 1 and handoff 2 always)\n"
		"  --cs-us C      critical section in us (default 5; oversub 50)\n"
		"  --work-us W    work outside the section in us (default 5; oversub 50)\n"
		"  --seconds S    how long (default 2; fractions allowed)\n"
		"  --rounds R     bursts (default 20)\n"
		"  --csv FILE     append one row (with the header if FILE is new)\n"
		"  --label NAME   the row's first column (the scheduler, say; default -)\n"
		"Prints: ops/s, ns per operation, the lock's wait (mean, p99, max in us), the\n"
		"process's context switches and the fewest and most locks one thread took.\n");
}

static bool parse_scenario(const char *arg)
{
	for (size_t i = 0; i < sizeof(scenario_names) / sizeof(scenario_names[0]); i++)
		if (!strcmp(arg, scenario_names[i])) {
			opt.scenario = i;
			return true;
		}
	fprintf(stderr, PROG ": --scenario %s: not one of uncontended, contended, handoff, cs, "
		"burst, oversub\n", arg);
	return false;
}

static uint64_t csw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 'S' },
		{ "lock", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "cs-us", required_argument, NULL, 'c' },
		{ "work-us", required_argument, NULL, 'w' },
		{ "seconds", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "csv", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool ok = true, cs_set = false, work_set = false;
	int cs_us = 5, work_us = 5, c, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double seconds = 2;
	const char *csv = NULL, *label = "-";
	struct worker *w;
	uint64_t t0, t1, c0, c1, ops = 0, wait_sum = 0, wait_max = 0, wait_max_at = 0, *all = NULL;
	uint64_t stop_late = 0;	/* how late the main thread stopped the run */
	uint64_t ops_min = UINT64_MAX, ops_max = 0;
	size_t nr_all = 0;
	void *(*fn)(void *);

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'S': ok = parse_scenario(optarg); break;
		case 'l':
			ok = !strcmp(optarg, "pthread") || !strcmp(optarg, "cos");
			opt.cos = !strcmp(optarg, "cos");
			if (!ok)
				fprintf(stderr, PROG ": --lock %s: pthread or cos\n", optarg);
			break;
		case 't': ok = bench_opt_int(PROG, "threads", optarg, 1, 4096, &opt.threads); break;
		case 'c': ok = bench_opt_int(PROG, "cs-us", optarg, 0, 1000000, &cs_us); cs_set = true; break;
		case 'w': ok = bench_opt_int(PROG, "work-us", optarg, 0, 1000000, &work_us); work_set = true; break;
		case 's': ok = bench_opt_double(PROG, "seconds", optarg, 0.01, 3600, &seconds); break;
		case 'r': ok = bench_opt_int(PROG, "rounds", optarg, 1, 1000000, &opt.rounds); break;
		case 'o': csv = optarg; break;
		case 'L': label = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (opt.scenario == OVERSUB) {
		cs_us = cs_set ? cs_us : 50;
		work_us = work_set ? work_us : 50;
	}
	opt.cs_ns = cs_us * 1000ull;
	opt.work_ns = work_us * 1000ull;
	opt.run_ns = seconds * 1e9;
	if (!opt.threads)
		opt.threads = opt.scenario == CS ? 8 : opt.scenario == CONTENDED ? 4 :
			      opt.scenario == BURST ? ncpu : opt.scenario == OVERSUB ? 3 * ncpu : 1;
	if (opt.scenario == UNCONTENDED)
		opt.threads = 1;
	if (opt.scenario == HANDOFF)
		opt.threads = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	c0 = csw();
	if (opt.scenario == UNCONTENDED) {
		/* lock and unlock, 1000 pairs a clock read, until the time is up */
		uint64_t pairs = 0, end;

		t0 = bench_now_ns();
		end = t0 + opt.run_ns;
		do {
			for (int i = 0; i < 1000; i++) {
				lock();
				unlock();
			}
			pairs += 1000;
		} while ((t1 = bench_now_ns()) < end);
		ops = 2 * pairs;	/* an operation: a lock or an unlock */
	ops_min = ops_max = ops;
		goto report;
	}
	w = calloc(opt.threads, sizeof(*w));
	if (!w)
		return 1;
	fn = opt.scenario == CONTENDED ? contended_worker : opt.scenario == HANDOFF ? handoff_worker :
	     opt.scenario == BURST ? burst_worker : cs_worker;
	/* the process's hint table before its threads: a lord that found none looks again later */
	if (opt.cos && !cos_hint_self())
		fprintf(stderr, PROG ": no hint record: %s (the locks go unhinted)\n", strerror(errno));
	pthread_barrier_init(&start_line, NULL, opt.threads + (opt.scenario != BURST));
	for (int i = 0; i < opt.threads; i++) {
		w[i].id = i;
		if (fn == cs_worker || fn == burst_worker)
			w[i].waits = malloc(SAMPLES_MAX * sizeof(uint64_t));
		if ((fn == cs_worker || fn == burst_worker) && !w[i].waits)
			return 1;
		errno = pthread_create(&w[i].tid, NULL, fn, &w[i]);
		if (errno) {
			fprintf(stderr, PROG ": thread %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	t0 = bench_now_ns();
	if (opt.scenario != BURST) {
		pthread_barrier_wait(&start_line);
		t0 = bench_now_ns();
		usleep(opt.run_ns / 1000);
		stop = 1;
		/* how long this thread, woken into the run queue, waited for a CPU to stop the run */
		stop_late = bench_now_ns() - t0 - opt.run_ns;
	}
	for (int i = 0; i < opt.threads; i++)
		pthread_join(w[i].tid, NULL);
	t1 = bench_now_ns();
	all = malloc(opt.threads * (size_t)SAMPLES_MAX * sizeof(uint64_t));
	for (int i = 0; i < opt.threads; i++) {
		ops += w[i].ops;
		ops_min = w[i].ops < ops_min ? w[i].ops : ops_min;
		ops_max = w[i].ops > ops_max ? w[i].ops : ops_max;
		wait_sum += w[i].wait_sum;
		if (w[i].wait_max > wait_max) {
			wait_max = w[i].wait_max;
			wait_max_at = w[i].wait_max_at;
		}
		if (all && w[i].nr_waits) {
			memcpy(all + nr_all, w[i].waits, w[i].nr_waits * sizeof(uint64_t));
			nr_all += w[i].nr_waits;
		}
	}
report:
	c1 = csw();
	{
		double secs = (t1 - t0) / 1e9, mean = ops && nr_all ? wait_sum / 1e3 / ops : 0, p99 = 0;
		int preload, handoff;
		FILE *f;

		if (nr_all) {
			bench_sort_u64(all, nr_all);
			p99 = bench_pct_us(all, nr_all, 0.99);
		}
		printf("%s lock=%s threads=%d cs_us=%d work_us=%d cpus=%d: %.0f ops/s, %.2f ns/op, "
		       "wait mean %.1f us p99 %.1f us max %.1f us, %.0f context switches/s, "
		       "ops per thread %llu-%llu, longest wait ended at %.0f ms of %.0f, "
		       "stopped %.1f ms late\n",
		       scenario_names[opt.scenario], opt.cos ? "cos" : "pthread", opt.threads, cs_us,
		       work_us, ncpu, ops / secs, ops ? (double)(t1 - t0) / ops : 0,
		       mean, p99, wait_max / 1e3, (c1 - c0) / secs, (unsigned long long)ops_min,
		       (unsigned long long)ops_max, wait_max_at > t0 ? (wait_max_at - t0) / 1e6 : 0,
		       secs * 1e3, stop_late / 1e6);
		if (!csv)
			return 0;
		bench_lock_env(&preload, &handoff);
		f = bench_csv_append(PROG, csv, "label,scenario,lock,preload,handoff,threads,cs_us,"
				     "work_us,cpus,seconds,ops,ops_per_s,ns_per_op,wait_mean_us,"
				     "wait_p99_us,wait_max_us,csw,ops_min,ops_max,stop_late_ms");
		if (!f)
			return 1;
		fprintf(f, "%s,%s,%s,%d,%d,%d,%d,%d,%d,%.3f,%llu,%.0f,%.2f,%.2f,%.2f,%.2f,%llu,%llu,%llu,"
			   "%.1f\n",
			label, scenario_names[opt.scenario], opt.cos ? "cos" : "pthread", preload,
			handoff, opt.threads, cs_us, work_us, ncpu, secs, (unsigned long long)ops,
			ops / secs, ops ? (double)(t1 - t0) / ops : 0, mean, p99, wait_max / 1e3,
			(unsigned long long)(c1 - c0), (unsigned long long)ops_min,
			(unsigned long long)ops_max, stop_late / 1e6);
		fclose(f);
	}
	return 0;
}
