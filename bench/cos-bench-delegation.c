// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-delegation.c — delegation latency: how long from a lord's decision until the task
 * runs on the chosen CPU, beside the default scheduler's cross-CPU wake-up latency, in one boot.
 * The enclave is every online CPU but CPU 0.  See docs/performance.md.
 *
 *   default phase (no sched_ext scheduler): a waker pinned to CPU 0 stamps t0 and FUTEX_WAKEs a
 *     target thread allowed on the enclave CPUs; the target stamps t1 when it runs.
 *   cos phase (shim attached, this thread is the lord on CPU 0): the lord wakes the target (a
 *     COS task in a child process), sees its RUNNABLE message, stamps t0 just before
 *     COS_IOC_SHOOT to the next enclave CPU (round robin); the target stamps t1 when it runs.
 *
 * Both phases run with H non-COS CPU hogs (hog i pinned to CPU i, H at most the enclave size).
 * Latency = t1 - t0 on CLOCK_MONOTONIC.  Output: the enclave, then one line per (phase, hogs)
 * with p50/p99/max in µs, and the ratio cos/default.  With --submit ioctl,uring the cos phase
 * runs once per way of committing shoots (COS_IOC_SHOOT, or io_uring's uring_cmd), each also
 * reporting the time spent in the shoot call itself.
 *   cos-wake phase (--submit wake): the lord sets the wake rule COS_WAKE_IDLE and wakes the
 *     target with FUTEX_WAKE as the default phase does, stamping t0 just before the wake: the
 *     kernel starts the target on a free enclave CPU (TASK_PLACED) with no shoot; should it
 *     not (no free CPU), the lord shoots it when it says RUNNABLE.  Latency is wake -> running,
 *     as in the default phase, so the ratio compares like with like.
 * --submit none runs the default phase alone, under whatever scheduler is attached (a peer's,
 * started by bench/run), named by --label.
 * --csv DIR writes every sample.  A benchmark: it asserts nothing about time.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cos.h"

#define PROG		"cos-bench-delegation"
#define MAX_SHOOTS	100000
#define MAX_HOG_COUNTS	8	/* entries of --hogs */

struct shared {
	_Atomic uint32_t word;		/* futex: the round the target may run */
	_Atomic uint32_t asleep;	/* the round the target is about to wait for */
	_Atomic uint32_t done;		/* the last round the target finished */
	_Atomic int ready;
	_Atomic int setattr_err;
	uint64_t t1[MAX_SHOOTS];
	int cpu[MAX_SHOOTS];
};

static void futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* The target: waits for each round, stamps when it runs. */
static void target_loop(struct shared *sh, int rounds)
{
	for (int r = 1; r <= rounds; r++) {
		atomic_store(&sh->asleep, r);
		while (atomic_load(&sh->word) < (uint32_t)r)
			futex_wait(&sh->word, r - 1);
		sh->t1[r - 1] = bench_now_ns();
		sh->cpu[r - 1] = sched_getcpu();
		atomic_store(&sh->done, r);
	}
}

static pid_t spawn_hog(int cpu)
{
	pid_t pid = fork();

	if (pid == 0) {
		bench_pin(cpu, cpu);
		for (;;)
			__asm__ __volatile__("" ::: "memory");
	}
	return pid;
}

struct stats {
	double p50, p99, max;
};

/* Drop the rounds marked UINT64_MAX (with their CPU and call time); returns how many are left. */
static int keep_measured(uint64_t *lat, int *cpu, uint64_t *call, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (lat[i] == UINT64_MAX)
			continue;
		lat[k] = lat[i];
		cpu[k] = cpu[i];
		call[k] = call[i];
		k++;
	}
	return k;
}

static struct stats summarize(uint64_t *lat, int n)
{
	struct stats s;

	bench_sort_u64(lat, n);
	s.p50 = bench_pct_us(lat, n, 0.5);
	s.p99 = bench_pct_us(lat, n, 0.99);
	s.max = bench_pct_us(lat, n, 1);
	return s;
}

static void write_csv(const char *dir, const char *phase, int hogs, const uint64_t *lat,
		      const int *cpu, int n)
{
	char path[512];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/delegation-%s-%dhogs.csv", dir, phase, hogs);
	f = bench_csv_open("cos-bench-delegation", path, "round,latency_ns,cpu");
	if (!f)
		return;
	for (int i = 0; i < n; i++)
		fprintf(f, "%d,%llu,%d\n", i, (unsigned long long)lat[i], cpu[i]);
	fclose(f);
}

static struct shared *shared_new(void)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(sh, 0, sizeof(*sh));
	return sh;
}

/* Default scheduler: cross-CPU futex wake-up latency, the target on the @enclave CPUs 1.. */
static int run_default(int enclave, int rounds, uint64_t *lat, int *cpu)
{
	struct shared *sh = shared_new();
	pid_t child;
	int st;

	bench_pin(0, 0);
	child = fork();
	if (child == 0) {
		bench_pin(1, enclave);
		target_loop(sh, rounds);
		_exit(0);
	}
	for (int r = 1; r <= rounds; r++) {
		uint64_t t0;

		while (atomic_load(&sh->asleep) < (uint32_t)r)
			;
		usleep(200);		/* let it really block in FUTEX_WAIT */
		t0 = bench_now_ns();
		atomic_store(&sh->word, r);
		futex_wake(&sh->word);
		while (atomic_load(&sh->done) < (uint32_t)r)
			;
		lat[r - 1] = sh->t1[r - 1] - t0;
		cpu[r - 1] = sh->cpu[r - 1];
	}
	waitpid(child, &st, 0);
	munmap(sh, sizeof(*sh));
	return 0;
}

/*
 * The way "wake": commit with the ioctl, but with the wake rule COS_WAKE_IDLE set, and measure
 * from the FUTEX_WAKE (see the top comment).
 */
#define SUBMIT_WAKE	100

/*
 * cos: the lord wakes the target, waits for RUNNABLE, stamps and shoots to the next CPU; with
 * SUBMIT_WAKE it stamps at the wake and the kernel starts the target (or the lord shoots it).
 * *placed counts the rounds the kernel's wake rule started.
 */
static int run_cos(int enclave, int rounds, int stall_ms, unsigned submit, uint64_t *lat,
		   int *cpu, uint64_t *call, int *placed)
{
	bool wake_rule = submit == SUBMIT_WAKE;
	struct shared *sh = shared_new();
	struct cos_lord_opts o = { .size = sizeof(o) };
	struct cos_lord *lord;
	cpu_set_t set;
	uint32_t slot = 0, gen = 0;
	bool blocked = false, known = false;
	pid_t child;
	int err, st, next_cpu = 1, failed = 0;

	CPU_ZERO(&set);
	for (int c = 1; c <= enclave; c++)
		CPU_SET(c, &set);
	o.lord_cpu = 0;
	o.enclave = &set;
	o.enclave_size = sizeof(set);
	o.stall_ms = stall_ms;
	o.submit = wake_rule ? COS_SUBMIT_IOCTL : submit;
	*placed = 0;
	err = cos_lord_register(&lord, &o);
	if (err) {
		fprintf(stderr, "cos-bench-delegation: cannot register a lord: %s\n", cos_strerror(err));
		return err;
	}
	if (wake_rule && (err = cos_lord_set_wake_rules(lord, COS_WAKE_IDLE, 0))) {
		fprintf(stderr, "cos-bench-delegation: %s\n", cos_strerror(err));
		cos_lord_destroy(lord);
		return err;
	}
	/* The target lives in another process: a lord must not schedule its own threads. */
	child = fork();
	if (child == 0) {
		struct sched_param sp = { 0 };

		bench_pin(1, enclave);
		atomic_store(&sh->setattr_err,
			     sched_setscheduler(0, COS_SCHED_EXT, &sp) ? errno : 0);
		atomic_store(&sh->ready, 1);
		target_loop(sh, rounds);
		_exit(0);
	}
	while (!atomic_load(&sh->ready))
		usleep(100);
	if (atomic_load(&sh->setattr_err)) {
		fprintf(stderr, "cos-bench-delegation: SCHED_EXT: %s\n",
			strerror(atomic_load(&sh->setattr_err)));
		kill(child, SIGKILL);
		waitpid(child, &st, 0);
		cos_lord_destroy(lord);
		return -EINVAL;
	}
	for (int r = 1; r <= rounds && !failed; r++) {
		bool runnable = false, woken = false, shot = false, kernel_placed = false;
		uint64_t t0 = 0, deadline = bench_now_ns() + 5000000000ull;

		/* wake the target once it sleeps (its BLOCKED message); shoot it once RUNNABLE */
		while (atomic_load(&sh->done) < (uint32_t)r) {
			const struct cos_msg *m;

			if (bench_now_ns() > deadline) {
				fprintf(stderr, "cos-bench-delegation: round %d: the target never ran\n", r);
				failed = 1;
				break;
			}
			while ((m = cos_lord_peek(lord))) {
				if (m->pid == (uint32_t)child) {
					known = true;
					slot = m->slot;
					gen = m->gen;
					if (m->type == COS_MSG_TASK_BLOCKED)
						blocked = true;
					else if (m->type == COS_MSG_TASK_PLACED)
						kernel_placed = true;
					else if (m->type == COS_MSG_TASK_RUNNABLE ||
						 m->type == COS_MSG_TASK_PREEMPTED ||
						 m->type == COS_MSG_TASK_YIELD ||
						 m->type == COS_MSG_SHOOT_FAILED ||
						 m->type == COS_MSG_SHOOT_STALE)
						runnable = true, blocked = false;
				}
				cos_lord_consume(lord);
			}
			cos_lord_publish(lord);
			/*
			 * A task that became SCHED_EXT while running comes under the lord at its
			 * next wake-up: before that there is no BLOCKED message to wait for.
			 */
			if (!woken && !known && atomic_load(&sh->asleep) >= (uint32_t)r) {
				usleep(1000);
				blocked = true;
			}
			if (!woken && blocked && atomic_load(&sh->asleep) >= (uint32_t)r) {
				woken = true;
				blocked = false;
				if (wake_rule)
					t0 = bench_now_ns();
				atomic_store(&sh->word, r);
				futex_wake(&sh->word);
			}
			if (runnable) {
				uint64_t tc = bench_now_ns();

				runnable = false;
				if (!wake_rule)
					t0 = tc;
				cos_lord_prepare(lord, next_cpu, slot, gen, 0);
				if (cos_lord_shoot(lord, 0) != 1) {
					runnable = true;	/* behind on a message: drain, retry */
				} else {
					call[r - 1] = bench_now_ns() - tc;
					shot = true;
					next_cpu = next_cpu % enclave + 1;
				}
			}
		}
		if (!failed) {
			/*
			 * A round whose target ran without our shoot (the fair policy took it after a
			 * stall, say) measures nothing: marked, left out and counted by the caller.
			 */
			if (wake_rule && kernel_placed && !shot) {
				shot = true;		/* the kernel started it: no call */
				call[r - 1] = 0;
				(*placed)++;
			}
			lat[r - 1] = shot && sh->t1[r - 1] >= t0 ? sh->t1[r - 1] - t0 : UINT64_MAX;
			cpu[r - 1] = sh->cpu[r - 1];
		}
	}
	if (failed)
		kill(child, SIGKILL);
	waitpid(child, &st, 0);
	if (cos_lord_submit(lord) != o.submit) {
		fprintf(stderr, "cos-bench-delegation: io_uring shoots are not available here "
			"(io_uring disabled, or a module without uring_cmd)\n");
		failed = 1;
	}
	cos_lord_destroy(lord);
	munmap(sh, sizeof(*sh));
	return failed ? -ETIMEDOUT : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cos-bench-delegation [--shoots N] [--hogs LIST] [--submit LIST] [--stall-ms MS]\n"
		"                            [--csv DIR] [--label NAME]\n"
		"Delegation latency (lord's SHOOT -> task running) vs the default scheduler's\n"
		"cross-CPU futex wake-up latency, side by side in this boot.  Needs root, cos.ko,\n"
		"sched_ext, 2 to %d online CPUs and no sched_ext scheduler attached.  The lord\n"
		"and the waker run on CPU 0, the targets on the enclave: CPUs 1..N-1 (every CPU\n"
		"but CPU 0) of N online CPUs.\n", BENCH_MAX_CPUS);
	bench_usage_enclave(f);
	fprintf(f,
		"  --shoots N     rounds per configuration (default 2000)\n"
		"  --hogs LIST    comma-separated hog counts, each 0..N-1 (default 0,N-1); hog i\n"
		"                 spins on CPU i\n"
		"  --submit LIST  how the lord commits shoots, comma-separated: ioctl, uring\n"
		"                 (io_uring uring_cmd), wake (the wake rule COS_WAKE_IDLE: the kernel\n"
		"                 starts the woken target itself; measured from the FUTEX_WAKE, as\n"
		"                 the default phase); default ioctl.  Each gets its cos row, and a\n"
		"                 'call' row: time spent in cos_lord_shoot() itself.  none: only the\n"
		"                 futex wake-up, under whatever scheduler runs now (a peer's)\n"
		"  --label NAME   the futex wake-up phase's name in the table and the CSV files\n"
		"                 (default: default)\n"
		"  --stall-ms MS  the lord's stall timeout (default 1000: emulated CPUs pause)\n"
		"  --csv DIR      write every sample to DIR/delegation-<phase>-<hogs>hogs.csv\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "shoots", required_argument, NULL, 'n' },
		{ "hogs", required_argument, NULL, 'H' },
		{ "stall-ms", required_argument, NULL, 's' },
		{ "submit", required_argument, NULL, 'S' },
		{ "csv", required_argument, NULL, 'c' },
		{ "label", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int rounds = 2000, hogs[MAX_HOG_COUNTS], nhogs = 0, enclave, c;
	int stall_ms = 1000;
	const char *csv = NULL, *hog_list = NULL, *submit_list = "ioctl", *label = "default";
	char default_hogs[16], enclave_cpus[32];
	unsigned submits[3];
	int nsubmits = 0;
	size_t n;
	static uint64_t lat[MAX_SHOOTS], call[MAX_SHOOTS];
	static int cpus[MAX_SHOOTS];

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!bench_opt_int(PROG, "rounds", optarg, 10, MAX_SHOOTS, &rounds))
				return 2;
			break;
		case 'H': hog_list = optarg; break;
		case 's':
			if (!bench_opt_int(PROG, "stall-ms", optarg, 1, 60000, &stall_ms))
				return 2;
			break;
		case 'S': submit_list = optarg; break;
		case 'c': csv = optarg; break;
		case 'l':
			if (!*optarg || strchr(optarg, '/')) {
				fprintf(stderr, "%s: --label: a name, not a path\n", PROG);
				return 2;
			}
			label = optarg;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	enclave = bench_enclave_size(PROG);
	if (!enclave)
		return 2;
	bench_enclave_cpus(enclave_cpus, sizeof(enclave_cpus), enclave);
	snprintf(default_hogs, sizeof(default_hogs), "0,%d", enclave);
	if (!hog_list)
		hog_list = default_hogs;
	nhogs = bench_opt_list(PROG, "hogs", hog_list, 0, enclave, hogs, MAX_HOG_COUNTS);
	if (nhogs < 0) {
		fprintf(stderr, "%s: one hog per enclave CPU at most (%s)\n", PROG, enclave_cpus);
		return 2;
	}
	bool wake_only = !strcmp(submit_list, "none");

	for (const char *p = wake_only ? "" : submit_list, *item; (item = bench_list_next(&p, &n));) {
		if (nsubmits == 3)
			break;
		if (n == 5 && !strncmp(item, "ioctl", 5))
			submits[nsubmits++] = COS_SUBMIT_IOCTL;
		else if (n == 5 && !strncmp(item, "uring", 5))
			submits[nsubmits++] = COS_SUBMIT_URING;
		else if (n == 4 && !strncmp(item, "wake", 4))
			submits[nsubmits++] = SUBMIT_WAKE;
		else {
			fprintf(stderr, "%s: --submit: unknown way '%.*s' (ioctl, uring, wake; or none)\n", PROG,
				(int)n, item);
			return 2;
		}
	}
	if ((!nsubmits && !wake_only) || optind != argc) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("enclave: %s; the lord and the waker on CPU 0\n", enclave_cpus);
	printf("%-8s %5s %7s %10s %10s %10s\n", "phase", "hogs", "rounds", "p50_us", "p99_us", "max_us");
	for (int h = 0; h < nhogs; h++) {
		struct stats d, s;
		pid_t hog_pids[BENCH_MAX_CPUS];
		struct cos_shim *shim;
		int err = 0, n;

		for (int i = 0; i < hogs[h]; i++)
			hog_pids[i] = spawn_hog(1 + i);
		run_default(enclave, rounds, lat, cpus);
		write_csv(csv, label, hogs[h], lat, cpus, rounds);
		d = summarize(lat, rounds);
		printf("%-8s %5d %7d %10.1f %10.1f %10.1f\n", label, hogs[h], rounds, d.p50, d.p99, d.max);

		for (int m = 0; m < nsubmits && !err; m++) {
			const char *name = submits[m] == COS_SUBMIT_URING ? "cos-ur" :
					   submits[m] == SUBMIT_WAKE ? "cos-wake" : "cos";
			int placed = 0;

			err = cos_shim_attach(&shim, NULL);
			if (err) {
				fprintf(stderr, "cos-bench-delegation: cannot attach the shim: %s\n",
					cos_strerror(err));
				break;
			}
			err = run_cos(enclave, rounds, stall_ms, submits[m], lat, cpus, call, &placed);
			cos_shim_detach(shim);
			if (err)
				break;
			n = keep_measured(lat, cpus, call, rounds);
			if (n < 10) {
				fprintf(stderr, "cos-bench-delegation: only %d of %d rounds ran by a shoot\n",
					n, rounds);
				err = 1;
				break;
			}
			write_csv(csv, name, hogs[h], lat, cpus, n);
			s = summarize(lat, n);
			printf("%-8s %5d %7d %10.1f %10.1f %10.1f", name, hogs[h], n, s.p50, s.p99, s.max);
			if (n < rounds)
				printf("   (%d rounds left out: the target ran without the shoot)", rounds - n);
			if (submits[m] == SUBMIT_WAKE)
				printf("   (%d started by the wake rule, %d shot)", placed, n - placed);
			printf("\n");
			printf("ratio    %5d %7s %10.2f %10.2f %10.2f   (%s / default)\n", hogs[h], "",
			       s.p50 / d.p50, s.p99 / d.p99, s.max / d.max, name);
			s = summarize(call, n);
			if (submits[m] != SUBMIT_WAKE)
				printf("call     %5d %7s %10.1f %10.1f %10.1f   (time in cos_lord_shoot, %s)\n",
				       hogs[h], "", s.p50, s.p99, s.max,
				       submits[m] == COS_SUBMIT_URING ? "io_uring" : "ioctl");
		}
		for (int i = 0; i < hogs[h]; i++) {
			kill(hog_pids[i], SIGKILL);
			waitpid(hog_pids[i], NULL, 0);
		}
		if (err)
			return 1;
	}
	return 0;
}
