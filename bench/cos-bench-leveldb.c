// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-leveldb.c — LevelDB's db_bench fillrandom and readrandom, on Debian's LevelDB
 * (libleveldb1d, through its C API): Debian packages the library but not db_bench.
 *
 * As db_bench: 16-byte keys ("%016d") drawn uniformly from [0, --num), 100-byte values half
 * compressible, default options (a 4 MiB write buffer, Snappy), every thread on one shared
 * database, each doing --num operations (fillrandom: writes without sync; readrandom: reads of
 * a database that --fill filled first with the keys in order).  --keys sets the key range
 * apart from --num (db_bench has one number for both), so that runs with more threads and
 * fewer operations each read the same database.  LevelDB serialises its
 * writers and its version set behind one pthread mutex (port::Mutex): under
 * LD_PRELOAD=libcos-lock.so its owner and waiters are published as lock hints, unmodified.
 * Prints micros/op and ops/s as db_bench does; --csv appends one row.  See docs/performance.md.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

#include "bench.h"

#define PROG		"cos-bench-leveldb"
#define VALUE_SIZE	100

static leveldb_t *db;
static int num = 100000, keys;	/* operations per thread; keys drawn from [0, keys) */
static bool reads;
static char values[1 << 20];	/* db_bench's RandomGenerator: half-compressible data */

struct worker {
	pthread_t tid;
	unsigned int seed;
	uint64_t done, found;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	char key[32];
	size_t pos = 0;

	for (int i = 0; i < num; i++) {
		int k = rand_r(&w->seed) % keys;
		char *err = NULL;

		snprintf(key, sizeof(key), "%016d", k);
		if (reads) {
			size_t len;
			char *v = leveldb_get(db, ro, key, 16, &len, &err);

			w->found += v != NULL;
			leveldb_free(v);
		} else {
			if (pos + VALUE_SIZE > sizeof(values))
				pos = 0;
			leveldb_put(db, wo, key, 16, values + pos, VALUE_SIZE, &err);
			pos += VALUE_SIZE;
		}
		if (err) {
			fprintf(stderr, PROG ": %s\n", err);
			leveldb_free(err);
			exit(1);
		}
		w->done++;
	}
	leveldb_writeoptions_destroy(wo);
	leveldb_readoptions_destroy(ro);
	return NULL;
}

/* Half-compressible bytes, as db_bench's CompressibleString(0.5): random runs repeated. */
static void make_values(void)
{
	unsigned int seed = 301;

	for (size_t i = 0; i < sizeof(values); i += VALUE_SIZE) {
		for (int j = 0; j < VALUE_SIZE / 2 && i + j < sizeof(values); j++)
			values[i + j] = ' ' + rand_r(&seed) % 95;
		for (int j = VALUE_SIZE / 2; j < VALUE_SIZE && i + j < sizeof(values); j++)
			values[i + j] = values[i + j - VALUE_SIZE / 2];
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --db DIR [--benchmark fillrandom|readrandom] [--threads N]\n"
		"                         [--num N] [--keys K] [--fill] [--csv FILE] [--label NAME]\n"
		"db_bench's fillrandom and readrandom on Debian's LevelDB (its C API).\n"
		"  --db DIR         the database (created if missing)\n"
		"  --benchmark B    fillrandom (default) or readrandom\n"
		"  --threads N      threads, each doing --num operations (default 1)\n"
		"  --num N          operations per thread (default 100000)\n"
		"  --keys K         keys drawn from [0, K) (default --num, as db_bench)\n"
		"  --fill           first write the K keys in order (for readrandom)\n"
		"  --csv FILE       append one row (with the header if FILE is new)\n"
		"  --label NAME     the row's first column (default -)\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "benchmark", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 't' },
		{ "num", required_argument, NULL, 'n' },
		{ "keys", required_argument, NULL, 'k' },
		{ "fill", no_argument, NULL, 'f' },
		{ "csv", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *csv = NULL, *label = "-", *bench = "fillrandom";
	int threads = 1, c;
	bool ok = true, fill = false;
	leveldb_options_t *o;
	struct worker *w;
	char *err = NULL;
	uint64_t t0, t1, done = 0, found = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'b':
			bench = optarg;
			ok = !strcmp(optarg, "fillrandom") || !strcmp(optarg, "readrandom");
			if (!ok)
				fprintf(stderr, PROG ": --benchmark %s: fillrandom or readrandom\n", optarg);
			break;
		case 't': ok = bench_opt_int(PROG, "threads", optarg, 1, 1024, &threads); break;
		case 'n': ok = bench_opt_int(PROG, "num", optarg, 1, 100000000, &num); break;
		case 'k': ok = bench_opt_int(PROG, "keys", optarg, 1, 100000000, &keys); break;
		case 'f': fill = true; break;
		case 'o': csv = optarg; break;
		case 'L': label = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok)
			return 2;
	}
	if (optind < argc || !dir) {
		fprintf(stderr, optind < argc ? PROG ": unexpected argument '%s'\n" :
			PROG ": --db DIR is required\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	reads = !strcmp(bench, "readrandom");
	if (!keys)
		keys = num;
	make_values();
	o = leveldb_options_create();
	leveldb_options_set_create_if_missing(o, 1);
	db = leveldb_open(o, dir, &err);
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", dir, err);
		return 1;
	}
	if (fill) {
		leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
		char key[32];

		for (int i = 0; i < keys && !err; i++) {
			snprintf(key, sizeof(key), "%016d", i);
			leveldb_put(db, wo, key, 16, values + (i * VALUE_SIZE) % (sizeof(values) - VALUE_SIZE),
				    VALUE_SIZE, &err);
		}
		leveldb_writeoptions_destroy(wo);
		if (err) {
			fprintf(stderr, PROG ": fill: %s\n", err);
			return 1;
		}
	}
	w = calloc(threads, sizeof(*w));
	if (!w)
		return 1;
	t0 = bench_now_ns();
	for (int i = 0; i < threads; i++) {
		w[i].seed = 1000 + i;
		errno = pthread_create(&w[i].tid, NULL, worker, &w[i]);
		if (errno) {
			fprintf(stderr, PROG ": thread %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		done += w[i].done;
		found += w[i].found;
	}
	t1 = bench_now_ns();
	leveldb_close(db);
	leveldb_options_destroy(o);
	{
		double secs = (t1 - t0) / 1e9;
		int preload, handoff;
		FILE *f;

		printf("%-12s : %11.3f micros/op; %.0f ops/s; threads %d%s\n", bench,
		       secs * 1e6 * threads / done, done / secs, threads,
		       reads ? (found == done ? "" : " (some keys not found)") : "");
		if (!csv)
			return 0;
		bench_lock_env(&preload, &handoff);
		f = bench_csv_append(PROG, csv, "label,benchmark,preload,handoff,threads,num,keys,"
				     "seconds,ops,ops_per_s,micros_per_op");
		if (!f)
			return 1;
		fprintf(f, "%s,%s,%d,%d,%d,%d,%d,%.3f,%llu,%.0f,%.3f\n", label, bench, preload,
			handoff, threads, num, keys, secs, (unsigned long long)done, done / secs,
			secs * 1e6 * threads / done);
		fclose(f);
	}
	return 0;
}
