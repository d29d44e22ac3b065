// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-shinjuku.c — Shinjuku tail latency: an open-loop RocksDB request server with a
 * dispersive mix (by default 99.5 % short GETs, 0.5 % long SCANs), as in the Shinjuku paper
 * (NSDI '19) and ghOSt's Shinjuku experiments.  See docs/performance.md.
 *
 * The generator thread (on CPU 0) makes requests at Poisson arrival times for --seconds and hands
 * each to an idle worker, or queues it in a FIFO when every worker is busy.  --workers W threads
 * (default: one per enclave CPU) on the enclave (every CPU but CPU 0) serve them from one
 * RocksDB database (a GET of --get-keys random keys, or a SCAN of --scan-keys consecutive keys
 * from a random one) and take the next queued request when done.  With one worker per CPU a
 * SCAN holds its CPU until done; with many workers the scheduler decides who runs (time-sharing
 * under the default scheduler; under cos-shinjuku with --sched-ext the workers are COS tasks,
 * preempted after the lord's slice, and with --hints each worker publishes its request's class:
 * 1 for a GET, 3 for a SCAN, and 1 while it sleeps).
 *
 * Latency = completion - the request's scheduled arrival (so a late generator counts against the
 * server, not for it).  Output: one line with the enclave, the achieved throughput, how busy the
 * enclave CPUs were while requests arrived (/proc/stat), and p50/p99/p99.9 of the short and long
 * requests; --csv FILE writes every request.  --calibrate measures the capacity: requests per
 * second with one worker per enclave CPU serving back to back (the bench offers fractions of
 * it).  A benchmark: it asserts nothing about time.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "bench.h"

#define PROG "cos-bench-shinjuku"
#include "cos.h"

#define MAX_WORKERS	256
#define VALUE_SIZE	100

enum { REQ_GET, REQ_SCAN };

struct request {
	uint64_t arrival;		/* scheduled, CLOCK_MONOTONIC ns */
	uint64_t done;			/* 0 = not finished */
	uint32_t key;
	uint8_t type;
};

struct worker {
	_Atomic uint32_t go;		/* futex: 1 = @req is assigned */
	int req;			/* -1 = stop */
	pthread_t thread;
	int err;
	const char *what;		/* with err: the call that failed */
};

static struct {
	rocksdb_t *db;
	rocksdb_readoptions_t *ro;
	int keys, get_keys, scan_keys;	/* parsed by bench_opt_int() */
	int enclave;			/* the workers' CPUs 1..enclave; the generator on CPU 0 */
	bool sched_ext, hints;
	bool pin;			/* worker i on CPU 1 + i % enclave only */
	struct request *reqs;
	struct worker workers[MAX_WORKERS];
	int nworkers;
	pthread_mutex_t lock;		/* protects fifo, idle */
	int *fifo, head, tail;		/* queued request indices */
	int idle[MAX_WORKERS], nidle;
	_Atomic bool stopping;
	_Atomic uint64_t completed;
	_Atomic uint64_t checksum;	/* keeps the reads from being optimised away */
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double rng_unit(uint64_t *s)	/* (0, 1] */
{
	return ((rng_next(s) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

static int key_name(char *buf, uint32_t k)
{
	return sprintf(buf, "key%010u", k);
}

static int db_open(const char *path, unsigned int keys)
{
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_writeoptions_t *wo;
	char *err = NULL, key[32], val[VALUE_SIZE];
	size_t len;
	char *probe;

	rocksdb_options_set_create_if_missing(o, 1);
	g.db = rocksdb_open(o, path, &err);
	rocksdb_options_destroy(o);
	if (err) {
		fprintf(stderr, "cos-bench-shinjuku: rocksdb_open %s: %s\n", path, err);
		free(err);
		return -1;
	}
	g.ro = rocksdb_readoptions_create();
	/* filled already? (the last key is there) */
	probe = rocksdb_get(g.db, g.ro, key, key_name(key, keys - 1), &len, &err);
	if (probe) {
		rocksdb_free(probe);
		return 0;
	}
	free(err);
	err = NULL;
	wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_disable_WAL(wo, 1);
	for (uint32_t k = 0; k < keys && !err; k++) {
		memset(val, 'a' + k % 26, sizeof(val));
		rocksdb_put(g.db, wo, key, key_name(key, k), val, sizeof(val), &err);
	}
	rocksdb_writeoptions_destroy(wo);
	if (!err) {
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();

		rocksdb_flush(g.db, fo, &err);	/* reads come from SST files, as in a real store */
		rocksdb_flushoptions_destroy(fo);
	}
	if (err) {
		fprintf(stderr, "cos-bench-shinjuku: filling %s: %s\n", path, err);
		free(err);
		return -1;
	}
	return 0;
}

static void serve(const struct request *r)
{
	char key[32], *err = NULL;
	uint64_t sum = 0;
	size_t len;

	if (r->type == REQ_GET) {
		for (int i = 0; i < g.get_keys; i++) {
			uint32_t k = (r->key + i * 7919u) % g.keys;
			char *v = rocksdb_get(g.db, g.ro, key, key_name(key, k), &len, &err);

			if (v)
				sum += (unsigned char)v[0] + len;
			rocksdb_free(v);
			free(err);
			err = NULL;
		}
	} else {
		rocksdb_iterator_t *it = rocksdb_create_iterator(g.db, g.ro);

		rocksdb_iter_seek(it, key, key_name(key, r->key));
		for (int i = 0; i < g.scan_keys; i++) {
			if (!rocksdb_iter_valid(it))
				rocksdb_iter_seek_to_first(it);
			sum += (unsigned char)rocksdb_iter_value(it, &len)[0] + len;
			rocksdb_iter_next(it);
		}
		rocksdb_iter_destroy(it);
	}
	atomic_fetch_add_explicit(&g.checksum, sum, memory_order_relaxed);
}

static void futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * A worker: wait for a request (go, paired with the generator's release store), serve it and
 * every queued one, then put itself on the idle stack (under g.lock) and wait again.
 */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct cos_hint *hint = NULL;
	int cpu = 1 + (int)(w - g.workers) % g.enclave;

	if (g.pin ? bench_pin(cpu, cpu) : bench_pin(1, g.enclave)) {
		w->err = errno;
		w->what = "sched_setaffinity";
		return NULL;
	}
	if (g.sched_ext) {
		struct sched_param sp = { 0 };

		if (sched_setscheduler(0, COS_SCHED_EXT, &sp)) {
			w->err = errno;
			w->what = "SCHED_EXT (is the shim attached?)";
			return NULL;
		}
	}
	if (g.hints && !(hint = cos_hint_self())) {
		w->err = errno;
		w->what = "cos_hint_self";
		return NULL;
	}
	for (;;) {
		int r;

		while (!atomic_load_explicit(&w->go, memory_order_acquire))
			futex_wait(&w->go, 0);
		atomic_store_explicit(&w->go, 0, memory_order_relaxed);
		r = w->req;
		if (r < 0)
			return NULL;
		while (r >= 0) {
			struct request *q = &g.reqs[r];

			if (hint)
				cos_hint_set(hint, q->type == REQ_GET ? 1 : 3, 0, 0);
			serve(q);
			q->done = bench_now_ns();
			atomic_fetch_add(&g.completed, 1);
			pthread_mutex_lock(&g.lock);
			/*
			 * Checked under g.lock: main sets stopping before it takes the lock to wake
			 * the idle workers, so a worker never goes idle after that wake-up round.
			 */
			if (atomic_load(&g.stopping)) {
				pthread_mutex_unlock(&g.lock);
				return NULL;
			}
			if (g.head < g.tail)
				r = g.fifo[g.head++];
			else {
				r = -1;
				g.idle[g.nidle++] = w - g.workers;
			}
			pthread_mutex_unlock(&g.lock);
			/*
			 * Going to sleep: the next request is most likely short, and the lord queues
			 * the worker by the class it shows when it wakes up.
			 */
			if (hint && r < 0)
				cos_hint_set(hint, 1, 0, 0);
		}
	}
}

static void hand_out(int r)
{
	struct worker *w = NULL;

	pthread_mutex_lock(&g.lock);
	if (g.nidle)
		w = &g.workers[g.idle[--g.nidle]];
	else
		g.fifo[g.tail++] = r;
	pthread_mutex_unlock(&g.lock);
	if (w) {
		w->req = r;
		atomic_store_explicit(&w->go, 1, memory_order_release);
		futex_wake(&w->go);
	}
}

/* Busy (non-idle) jiffies and all jiffies of the enclave (the workers' CPUs), from /proc/stat. */
static void cpu_times(unsigned long long *busy, unsigned long long *all)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[512];

	*busy = *all = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long v[8] = { 0 };
		int cpu;

		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9 ||
		    cpu < 1 || cpu > g.enclave)
			continue;
		for (int i = 0; i < 8; i++)
			*all += v[i];
		*busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];	/* not idle, iowait */
	}
	if (f)
		fclose(f);
}

/*
 * Calibration: the server's capacity, closed loop.  One worker per enclave CPU serves requests
 * back to back for a while (no arrivals, no wake-ups), every (1000 / P)-th one a SCAN, so the mix
 * is exact; capacity = requests done per second.  Each kind's mean service time is measured in
 * the same run, with every CPU busy (in an emulator the CPUs share host cores: a request alone
 * runs faster than under load).
 */
struct calib {
	pthread_t thread;
	int cpu;
	unsigned int every;		/* a SCAN every @every requests */
	uint64_t n[2], ns[2];		/* per REQ_*: done, time spent */
};

static void *calib_main(void *arg)
{
	struct calib *c = arg;
	struct request r = { 0 };
	uint64_t seed = 42 + c->cpu;

	bench_pin(c->cpu, c->cpu);
	/* start the SCANs at different places in each worker's sequence */
	for (uint64_t i = c->cpu * c->every / g.enclave; !atomic_load(&g.stopping); i++) {
		uint64_t t = bench_now_ns();

		r.type = c->every && i % c->every == 0 ? REQ_SCAN : REQ_GET;
		r.key = rng_next(&seed) % g.keys;
		serve(&r);
		if (atomic_load(&g.stopping))
			break;		/* cut short by the end: not counted */
		c->ns[r.type] += bench_now_ns() - t;
		c->n[r.type]++;
	}
	return NULL;
}

static void calibrate(double seconds, unsigned int permille)
{
	struct calib c[BENCH_MAX_CPUS];
	uint64_t n[2] = { 0 }, ns[2] = { 0 }, t;
	char enclave_cpus[32];

	for (int i = 0; i < 200; i++) {	/* warm the block cache */
		struct request r = { .key = (uint32_t)(i * 7919u) % g.keys };

		serve(&r);
	}
	t = bench_now_ns();
	for (int i = 0; i < g.enclave; i++) {
		c[i] = (struct calib){ .cpu = 1 + i, .every = permille ? 1000 / permille : 0 };
		pthread_create(&c[i].thread, NULL, calib_main, &c[i]);
	}
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&g.stopping, true);
	for (int i = 0; i < g.enclave; i++) {
		pthread_join(c[i].thread, NULL);
		for (int k = 0; k < 2; k++)
			n[k] += c[i].n[k], ns[k] += c[i].ns[k];
	}
	t = bench_now_ns() - t;
	printf("calibrate: capacity_rps=%.1f get_us=%.1f scan_us=%.1f (%llu GETs, %llu SCANs on %s "
	       "in %.1f s)\n", (n[0] + n[1]) / (t / 1e9), n[0] ? ns[0] / 1000.0 / n[0] : 0,
	       n[1] ? ns[1] / 1000.0 / n[1] : 0, (unsigned long long)n[0], (unsigned long long)n[1],
	       bench_enclave_cpus(enclave_cpus, sizeof(enclave_cpus), g.enclave), t / 1e9);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cos-bench-shinjuku --calibrate [--seconds S] [--scan-permille P] [--db DIR] ...\n"
		"       cos-bench-shinjuku --rate R [--workers W] [--seconds S] [--scan-permille P]\n"
		"                          [--sched-ext [--hints]] [--csv FILE] [--db DIR] ...\n"
		"An open-loop RocksDB request server with a mix of short GETs and long SCANs;\n"
		"reports throughput and p50/p99/p99.9.  Poisson arrivals come from CPU 0, the\n"
		"workers run on the enclave: CPUs 1..N-1 (every CPU but CPU 0) of N online CPUs,\n"
		"2 to %d.\n", BENCH_MAX_CPUS);
	bench_usage_enclave(f);
	fprintf(f,
		"  --calibrate        measure the capacity (requests/s, closed loop, one worker on\n"
		"                     each enclave CPU, for --seconds) and the mean GET and SCAN\n"
		"                     times, and exit\n"
		"  --rate R           requests per second\n"
		"  --workers W        worker threads, 1..%d (default N-1: one per enclave CPU)\n"
		"  --pin              worker i runs only on CPU 1 + i mod (N-1) (default: each\n"
		"                     may run on every enclave CPU)\n"
		"  --seconds S        how long requests arrive (default 10)\n"
		"  --scan-permille P  SCANs per 1000 requests (default 5)\n"
		"  --get-keys N       random keys a short request (GET) reads (default 1)\n"
		"  --scan-keys N      consecutive keys a SCAN reads (default 2000)\n"
		"  --keys N           keys in the database (default 100000; filled if missing)\n"
		"  --db DIR           the database (default /tmp/cos-bench-rocksdb)\n"
		"  --sched-ext        the workers make themselves COS tasks (run a lord first)\n"
		"  --hints            and publish their request's class: GET 1, SCAN 3 (1 asleep)\n"
		"  --drain-s S        wait at most S seconds for queued requests after the last\n"
		"                     arrival (default 20); the rest are reported unfinished\n"
		"  --seed X           of the arrivals and keys (default 1)\n"
		"  --csv FILE         every request: type,arrival_us,latency_us (-1: unfinished)\n",
		MAX_WORKERS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calibrate", no_argument, NULL, 'C' },
		{ "rate", required_argument, NULL, 'r' },
		{ "workers", required_argument, NULL, 'w' },
		{ "pin", no_argument, NULL, 'P' },
		{ "seconds", required_argument, NULL, 's' },
		{ "scan-permille", required_argument, NULL, 'p' },
		{ "scan-keys", required_argument, NULL, 'k' },
		{ "get-keys", required_argument, NULL, 'g' },
		{ "keys", required_argument, NULL, 'K' },
		{ "db", required_argument, NULL, 'd' },
		{ "sched-ext", no_argument, NULL, 'x' },
		{ "hints", no_argument, NULL, 'H' },
		{ "drain-s", required_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 'S' },
		{ "csv", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = "/tmp/cos-bench-rocksdb", *csv = NULL;
	double rate = 0, seconds = 10, drain_s = 20;
	int permille = 5;
	bool do_calibrate = false, workers_given = false, ok = true;
	char enclave_cpus[32];
	uint64_t seed = 1, *lat_get, *lat_scan, t0, t, last_done = 0;
	unsigned long long busy0, all0, busy1, all1;
	int c, n, max_reqs, ngets = 0, nscans = 0, unfinished = 0;

	g.keys = 100000;
	g.get_keys = 1;
	g.scan_keys = 2000;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'C': do_calibrate = true; break;
		case 'r': ok = bench_opt_double(PROG, "rate", optarg, 1e-3, 1e6, &rate); break;
		case 'w':
			ok = bench_opt_int(PROG, "workers", optarg, 1, MAX_WORKERS, &g.nworkers);
			workers_given = true;
			break;
		case 's': ok = bench_opt_double(PROG, "seconds", optarg, 1e-3, 3600, &seconds); break;
		case 'p': ok = bench_opt_int(PROG, "scan-permille", optarg, 0, 1000, &permille); break;
		case 'k': ok = bench_opt_int(PROG, "scan-keys", optarg, 1, 1000000, &g.scan_keys); break;
		case 'g': ok = bench_opt_int(PROG, "get-keys", optarg, 1, 1000000, &g.get_keys); break;
		case 'K': ok = bench_opt_int(PROG, "keys", optarg, 10, 100000000, &g.keys); break;
		case 'd': db = optarg; break;
		case 'P': g.pin = true; break;
		case 'x': g.sched_ext = true; break;
		case 'H': g.hints = true; break;
		case 'D': ok = bench_opt_double(PROG, "drain-s", optarg, 0, 3600, &drain_s); break;
		case 'S': ok = bench_opt_u64(PROG, "seed", optarg, 1, UINT64_MAX, &seed); break;
		case 'c': csv = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok)
			return 2;
	}
	if (!do_calibrate && rate <= 0) {
		fprintf(stderr, "%s: --rate is needed (or --calibrate)\n", PROG);
		return 2;
	}
	if (g.hints && !g.sched_ext) {
		fprintf(stderr, "%s: --hints needs --sched-ext\n", PROG);
		return 2;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	g.enclave = bench_enclave_size(PROG);
	if (!g.enclave)
		return 2;
	if (!workers_given)
		g.nworkers = g.enclave;	/* one per enclave CPU */
	/*
	 * Keep freed memory in the process: glibc would otherwise give arena tops back and fault
	 * them in again, and the workers would queue on mmap_lock.
	 */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	if (db_open(db, g.keys))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (do_calibrate) {
		calibrate(seconds, permille);
		return 0;
	}

	max_reqs = (int)(rate * seconds * 1.2) + 100;	/* Poisson: far above the mean */
	g.reqs = calloc(max_reqs, sizeof(*g.reqs));
	g.fifo = calloc(max_reqs, sizeof(*g.fifo));
	lat_get = calloc(max_reqs, sizeof(*lat_get));
	lat_scan = calloc(max_reqs, sizeof(*lat_scan));
	if (!g.reqs || !g.fifo || !lat_get || !lat_scan) {
		fprintf(stderr, "cos-bench-shinjuku: out of memory for %d requests\n", max_reqs);
		return 1;
	}
	bench_pin(0, 0);
	for (int i = 0; i < g.nworkers; i++) {
		int err = pthread_create(&g.workers[i].thread, NULL, worker_main, &g.workers[i]);

		if (err) {
			fprintf(stderr, "cos-bench-shinjuku: pthread_create: %s\n", strerror(err));
			return 1;
		}
		pthread_mutex_lock(&g.lock);
		g.idle[g.nidle++] = i;
		pthread_mutex_unlock(&g.lock);
	}
	usleep(200000);		/* the workers are set up (and under the lord) and asleep */
	for (int i = 0; i < g.nworkers; i++) {
		if (g.workers[i].err) {
			fprintf(stderr, "cos-bench-shinjuku: worker %d: %s: %s\n", i, g.workers[i].what,
				strerror(g.workers[i].err));
			return 1;
		}
	}

	/* the generator: Poisson arrivals, absolute times, never catching up by skipping */
	cpu_times(&busy0, &all0);
	t0 = bench_now_ns() + 10000000;
	t = t0;
	n = 0;
	while (t < t0 + (uint64_t)(seconds * 1e9) && n < max_reqs) {
		struct timespec ts = { .tv_sec = t / 1000000000ull, .tv_nsec = t % 1000000000ull };
		struct request *q = &g.reqs[n];

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		q->arrival = t;
		q->key = rng_next(&seed) % g.keys;
		q->type = rng_next(&seed) % 1000 < (uint64_t)permille ? REQ_SCAN : REQ_GET;
		hand_out(n++);
		t += (uint64_t)(-log(rng_unit(&seed)) / rate * 1e9);
	}
	cpu_times(&busy1, &all1);	/* over the arrivals only: the drain would dilute it */
	while (atomic_load(&g.completed) < (uint64_t)n && bench_now_ns() < t + (uint64_t)(drain_s * 1e9))
		usleep(10000);

	/* stop: busy workers leave after their request, idle ones are told to */
	atomic_store(&g.stopping, true);
	pthread_mutex_lock(&g.lock);
	for (int i = 0; i < g.nidle; i++) {
		struct worker *w = &g.workers[g.idle[i]];

		w->req = -1;
		atomic_store_explicit(&w->go, 1, memory_order_release);
		futex_wake(&w->go);
	}
	pthread_mutex_unlock(&g.lock);
	for (int i = 0; i < g.nworkers; i++)
		pthread_join(g.workers[i].thread, NULL);

	FILE *out = csv ? bench_csv_open(PROG, csv, "type,arrival_us,latency_us") : NULL;

	for (int i = 0; i < n; i++) {
		const struct request *q = &g.reqs[i];
		uint64_t l = q->done ? q->done - q->arrival : 0;

		if (!q->done)
			unfinished++;
		else if (q->type == REQ_GET)
			lat_get[ngets++] = l;
		else
			lat_scan[nscans++] = l;
		if (q->done > last_done)
			last_done = q->done;
		if (out)
			fprintf(out, "%s,%.1f,%.1f\n", q->type == REQ_GET ? "get" : "scan",
				(q->arrival - t0) / 1000.0, q->done ? l / 1000.0 : -1.0);
	}
	if (out)
		fclose(out);
	bench_sort_u64(lat_get, ngets);
	bench_sort_u64(lat_scan, nscans);
	printf("workers %d on %s offered %.0f/s achieved %.0f/s requests %d unfinished %d "
	       "busy %.1f%% | get p50 %.1f p99 %.1f p99.9 %.1f us | scan n %d p50 %.1f p99 %.1f "
	       "us\n",
	       g.nworkers, bench_enclave_cpus(enclave_cpus, sizeof(enclave_cpus), g.enclave), rate,
	       (n - unfinished) / ((last_done > t0 ? last_done - t0 : 1) / 1e9), n, unfinished,
	       all1 > all0 ? 100.0 * (busy1 - busy0) / (all1 - all0) : 0,
	       bench_pct_us(lat_get, ngets, 0.5), bench_pct_us(lat_get, ngets, 0.99), bench_pct_us(lat_get, ngets, 0.999),
	       nscans, bench_pct_us(lat_scan, nscans, 0.5), bench_pct_us(lat_scan, nscans, 0.99));
	rocksdb_readoptions_destroy(g.ro);
	rocksdb_close(g.db);
	return 0;
}
