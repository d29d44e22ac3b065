// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-lord.c — lord throughput: how many shoots per second one lord thread gets placed and
 * started, committing them one CPU per call or every enclave CPU in one call (the multi-CPU
 * mask), through COS_IOC_SHOOT or io_uring.  See docs/performance.md.
 *
 * The enclave is every online CPU but CPU 0.  Child processes run T CPU-bound COS tasks (T = 2
 * per enclave CPU, so a waiting task is always there).  The lord on CPU 0 keeps every enclave
 * CPU busy with a new task: as soon as a CPU's last shot task has started (COS_MSG_TASK_RUNNING,
 * asked for with COS_LORD_F_RUNNING_MSGS), it shoots the longest-waiting task there, which
 * preempts the one running.  Each mode runs for --seconds, counted from when every task has come
 * under the lord:
 *
 *   ioctl-1     one COS_IOC_SHOOT per CPU
 *   ioctl-mask  once every CPU's last task has started, one COS_IOC_SHOOT for all of them
 *   uring-1     one io_uring COS_URING_SHOOT per CPU
 *   uring-mask  the same through one io_uring COS_URING_SHOOT
 *   pair        two enclaves at once (4 CPUs or more): lord A on CPU 0 with CPUs 1..h-1, lord
 *               B on CPU h with CPUs h+1..N-1 (h = N / 2), each as ioctl-1 with its own tasks;
 *               first each alone, then both together.  Rows pair-a-alone, pair-b-alone,
 *               pair-a, pair-b: each lord's rate beside the other over its rate alone is what
 *               two enclaves cost each other (nothing on the path is shared by both).  Then
 *               pair-a-b-stalled: A beside a lord B that stops once its tasks came (declared
 *               stalled, its tasks run under the fair policy on its CPUs): a stalled
 *               enclave's cost to the others.  And the control, pair-a-hogs: A beside plain
 *               CPU-bound processes on B's lord CPU and CPUs, no second lord: as many busy CPUs
 *               as pair-a, so what pair-a loses beyond it is what the second enclave costs
 *               (under an emulator on fewer host cores than vCPUs, the busy vCPUs alone cost
 *               much: they wait for a host core).
 *
 * Per mode: shoots placed per second (status OK), tasks started per second (RUNNING messages),
 * commit calls per second, shoots per call, and the lord's time in the commit call per shoot
 * placed (what batching saves).  The rate is bounded by how fast the target CPUs start the tasks
 * (a mask waits for the slowest), the call time by the lord alone.  The first output line names
 * the enclave.  --csv FILE writes one row per mode.  A benchmark: it asserts nothing about time.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
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

#define PROG "cos-bench-lord"
#include "cos.h"

#define MAX_TASKS	(2 * BENCH_MAX_CPUS)
#define START_TIMEOUT_NS 10000000000ull	/* for every task to come under the lord */

static int enclave_size;		/* the enclave: CPUs 1..enclave_size; the lord on CPU 0 */

/* One lord's layout: its CPU, its enclave CPUs first..first+ncpu-1, 2 COS tasks per CPU. */
struct layout {
	const char *name;		/* the enclave's name */
	int lord_cpu, first, ncpu;
	bool stall;			/* once its tasks came, the lord stops: declared stalled */
};
#define NTASKS(l)	(2 * (l)->ncpu)

struct mode {
	const char *name;
	unsigned int submit;		/* COS_SUBMIT_* */
	bool mask;			/* all CPUs in one call, once all are ready */
};

static const struct mode modes[] = {
	{ "ioctl-1", COS_SUBMIT_IOCTL, false },
	{ "ioctl-mask", COS_SUBMIT_IOCTL, true },
	{ "uring-1", COS_SUBMIT_URING, false },
	{ "uring-mask", COS_SUBMIT_URING, true },
	{ "pair", COS_SUBMIT_IOCTL, false },
};
#define NMODES	(sizeof(modes) / sizeof(modes[0]))

struct result {
	unsigned long long placed, started, calls, refused;
	unsigned long long call_ns;	/* time spent in cos_lord_shoot() */
	double seconds;
};

/* Lord-side view of one task of the child. */
struct task {
	uint32_t slot, gen;
	bool waiting;			/* runnable, not shot: may be placed */
	uint64_t since;			/* when it started waiting (to pick the longest waiting) */
};

/* NTASKS processes (not the lord's threads): each becomes a COS task of @l and spins. */
static pid_t spawn_tasks(const struct layout *l, pid_t *pids)
{
	for (int i = 0; i < NTASKS(l); i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return -errno;
		if (pids[i] == 0) {
			struct sched_param sp = { 0 };

			bench_pin(l->first, l->first + l->ncpu - 1);	/* @l's enclave claims them */
			if (sched_setscheduler(0, COS_SCHED_EXT, &sp))
				_exit(3);
			usleep(1000);	/* come under the lord at this wake-up */
			for (;;)
				__asm__ __volatile__("" ::: "memory");
		}
	}
	return 0;
}

/*
 * Stop the tasks: SIGKILL, then give up the enclave (a killed COS task needs a CPU to exit: the
 * fair policy gives it one once the lord is gone), then reap them.
 */
static void end_tasks(const struct layout *l, pid_t *pids, struct cos_lord *lord)
{
	for (int i = 0; i < NTASKS(l); i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	cos_lord_destroy(lord);
	for (int i = 0; i < NTASKS(l); i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
}

static int task_of(const struct layout *l, const pid_t *pids, uint32_t pid)
{
	for (int i = 0; i < NTASKS(l); i++)
		if ((uint32_t)pids[i] == pid)
			return i;
	return -1;
}

/* The longest-waiting task, or -1. */
static int pick(const struct layout *l, struct task *t)
{
	int best = -1;

	for (int i = 0; i < NTASKS(l); i++)
		if (t[i].waiting && (best < 0 || t[i].since < t[best].since))
			best = i;
	return best;
}

static bool all_ready(const struct layout *l, const bool *ready)
{
	for (int c = l->first; c < l->first + l->ncpu; c++)
		if (!ready[c])
			return false;
	return true;
}

/* Is @cpu one of @l's enclave CPUs? */
static bool in_enclave(const struct layout *l, uint64_t cpu)
{
	return cpu >= (uint64_t)l->first && cpu < (uint64_t)(l->first + l->ncpu);
}

static int run_mode(const struct mode *m, const struct layout *l, double seconds,
		    struct result *res)
{
	struct cos_lord_opts o = { .size = sizeof(o) };
	struct task tasks[MAX_TASKS] = { 0 };
	int on_cpu[BENCH_MAX_CPUS];		/* task shot to each CPU, -1 none */
	bool ready[BENCH_MAX_CPUS];		/* its last shot task started (or none was shot) */
	pid_t pids[MAX_TASKS] = { 0 };
	bool seen[MAX_TASKS] = { 0 };
	struct cos_lord *lord;
	cpu_set_t set;
	uint64_t t0, end;
	int err, known = 0;

	memset(res, 0, sizeof(*res));
	CPU_ZERO(&set);
	for (int c = l->first; c < l->first + l->ncpu; c++)
		CPU_SET(c, &set);
	o.lord_cpu = l->lord_cpu;
	o.name = l->name;
	o.enclave = &set;
	o.enclave_size = sizeof(set);
	o.stall_ms = 1000;
	o.flags = COS_LORD_F_RUNNING_MSGS;
	o.submit = m->submit;
	err = cos_lord_register(&lord, &o);
	if (err) {
		fprintf(stderr, "cos-bench-lord: cannot register a lord: %s\n", cos_strerror(err));
		return err;
	}
	if (cos_lord_submit(lord) != m->submit) {
		fprintf(stderr, "cos-bench-lord: io_uring shoots are not available here "
			"(io_uring disabled, or a module without uring_cmd)\n");
		cos_lord_destroy(lord);
		return -EOPNOTSUPP;
	}
	err = spawn_tasks(l, pids);
	if (err) {
		fprintf(stderr, "cos-bench-lord: fork: %s\n", strerror(-err));
		goto out;
	}
	for (int c = 0; c < BENCH_MAX_CPUS; c++)
		on_cpu[c] = -1, ready[c] = true;

	/*
	 * The clock starts once every task has come under the lord (its first message seen), so
	 * that a slow start (a loaded or emulated machine forking and switching T processes) is
	 * not measured and every mode starts with T tasks to place.
	 */
	t0 = bench_now_ns();
	end = UINT64_MAX;
	for (;;) {
		const struct cos_msg *msg;
		uint64_t now = bench_now_ns();
		int batch[BENCH_MAX_CPUS], nbatch = 0;
		bool go;

		if (now >= end)
			break;
		if (known < NTASKS(l) && now > t0 + START_TIMEOUT_NS) {
			fprintf(stderr, "cos-bench-lord: only %d of %d tasks came under the lord in %llu s\n",
				known, NTASKS(l), START_TIMEOUT_NS / 1000000000ull);
			err = -ETIMEDOUT;
			goto out;
		}
		while ((msg = cos_lord_peek(lord))) {
			int i = task_of(l, pids, msg->pid);

			if (i >= 0) {
				if (!seen[i]) {
					seen[i] = true;
					known++;
				}
				tasks[i].slot = msg->slot;
				tasks[i].gen = msg->gen;
				switch (msg->type) {
				case COS_MSG_TASK_NEW:
				case COS_MSG_TASK_RUNNABLE:
				case COS_MSG_TASK_PREEMPTED:
				case COS_MSG_TASK_YIELD:
				case COS_MSG_SHOOT_FAILED:
				case COS_MSG_SHOOT_STALE:
					if (msg->type != COS_MSG_TASK_NEW || msg->arg) {
						tasks[i].waiting = true;
						tasks[i].since = now;
					}
					break;
				default:
					break;
				}
				if (msg->type == COS_MSG_SHOOT_FAILED || msg->type == COS_MSG_SHOOT_STALE) {
					if (in_enclave(l, msg->arg))
						ready[msg->arg] = true;
				}
				if (msg->type == COS_MSG_TASK_RUNNING && in_enclave(l, msg->arg) &&
				    on_cpu[msg->arg] == i) {
					ready[msg->arg] = true;
					res->started++;
				}
			}
			cos_lord_consume(lord);
		}
		if (end == UINT64_MAX) {
			if (known < NTASKS(l)) {
				cos_lord_publish(lord);
				continue;
			}
			t0 = now;
			end = t0 + (uint64_t)(seconds * 1e9);
			if (l->stall) {		/* consume nothing, shoot nothing: stalled */
				struct timespec ts = { (time_t)((end - t0) / 1000000000ull),
						       (long)((end - t0) % 1000000000ull) };

				while (nanosleep(&ts, &ts) && errno == EINTR)
					;
				break;
			}
		}
		go = !m->mask || all_ready(l, ready);	/* mask: all CPUs in one call */
		for (int c = l->first; c < l->first + l->ncpu; c++) {
			int i;

			if (!ready[c] || !go || (i = pick(l, tasks)) < 0)
				continue;
			tasks[i].waiting = false;
			on_cpu[c] = i;
			ready[c] = false;
			batch[nbatch++] = c;
		}
		/* commit: each CPU alone, or (mask) all of them in one call */
		for (int b = 0; b < nbatch; b++) {
			int c = batch[b], i = on_cpu[c], placed;
			uint64_t t;

			cos_lord_prepare(lord, c, tasks[i].slot, tasks[i].gen, 0);
			if (m->mask && b < nbatch - 1)
				continue;
			t = bench_now_ns();
			placed = cos_lord_shoot(lord, 0);
			res->call_ns += bench_now_ns() - t;
			res->calls++;
			if (placed < 0) {
				fprintf(stderr, "cos-bench-lord: shoot: %s\n", cos_strerror(placed));
				err = placed;
				goto out;
			}
			res->placed += placed;
			for (int k = m->mask ? 0 : b; k <= b; k++) {
				if (cos_lord_shoot_status(lord, batch[k]) == COS_SHOOT_OK)
					continue;
				/* the task's next message says when it may be shot again */
				res->refused++;
				ready[batch[k]] = true;
				on_cpu[batch[k]] = -1;
			}
		}
		if (!nbatch)
			cos_lord_publish(lord);
	}
	res->seconds = (bench_now_ns() - t0) / 1e9;
out:
	end_tasks(l, pids, lord);
	return err;
}

/* One lord of the pair, in a thread of its own (the thread is the lord). */
struct pair_run {
	const struct mode *m;
	struct layout l;
	double seconds;
	struct result r;
	int err;
	pthread_t thread;
};

static void *pair_thread(void *arg)
{
	struct pair_run *p = arg;

	p->err = run_mode(p->m, &p->l, p->seconds, &p->r);
	return NULL;
}

/* Run the pair's two lords at once, each in a thread of its own; 0 or the first error. */
static int run_both(struct pair_run *a, struct pair_run *b)
{
	if (pthread_create(&a->thread, NULL, pair_thread, a) ||
	    pthread_create(&b->thread, NULL, pair_thread, b)) {
		fprintf(stderr, "cos-bench-lord: cannot start the pair's lord threads\n");
		return -EAGAIN;
	}
	pthread_join(a->thread, NULL);
	pthread_join(b->thread, NULL);
	return a->err ?: b->err;
}

/* Plain CPU-bound processes on CPUs @first..@last (not COS tasks); their pids in @pids. */
static void spawn_hogs(int first, int last, pid_t *pids)
{
	for (int c = first; c <= last; c++) {
		pid_t p = fork();

		if (p == 0) {
			bench_pin(c, c);
			for (;;)
				__asm__ __volatile__("" ::: "memory");
		}
		pids[c - first] = p;
	}
}

static void end_hogs(int n, pid_t *pids)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
}

/* The pair's rows: alone, both at once, beside a stalled B, beside hogs (the file's comment). */
static int run_pair(const struct mode *m, double seconds, struct result res[6])
{
	pid_t hogs[BENCH_MAX_CPUS] = { 0 };
	int n = enclave_size + 1, h = n / 2, err;
	struct pair_run a = { .m = m, .seconds = seconds,
			      .l = { .name = "bench-a", .lord_cpu = 0, .first = 1, .ncpu = h - 1 } },
			b = { .m = m, .seconds = seconds,
			      .l = { .name = "bench-b", .lord_cpu = h, .first = h + 1,
				     .ncpu = n - h - 1 } };

	a.err = run_mode(m, &a.l, seconds, &res[0]);
	b.err = a.err ?: run_mode(m, &b.l, seconds, &res[1]);
	if (a.err || b.err)
		return a.err ?: b.err;
	err = run_both(&a, &b);
	res[2] = a.r;
	res[3] = b.r;
	if (err)
		return err;
	b.l.stall = true;
	err = run_both(&a, &b);
	res[4] = a.r;
	if (err)
		return err;
	spawn_hogs(h, n - 1, hogs);
	a.err = run_mode(m, &a.l, seconds, &res[5]);
	end_hogs(n - h, hogs);
	return a.err;
}

/* @r's shoots per second over @base's (0 without a base). */
static double rate_ratio(const struct result *r, const struct result *base)
{
	return base->placed && r->seconds ? (r->placed / r->seconds) / (base->placed / base->seconds)
					  : 0;
}

static void print_row(FILE *out, const char *name, const struct result *r)
{
	printf("%-12s %10.0f %10.0f %9.0f %11.2f %12.1f %8llu\n", name,
	       r->placed / r->seconds, r->started / r->seconds, r->calls / r->seconds,
	       r->calls ? (double)r->placed / r->calls : 0,
	       r->placed ? r->call_ns / 1000.0 / r->placed : 0, r->refused);
	if (out)
		fprintf(out, "%s,%.3f,%llu,%llu,%llu,%llu,%llu\n", name, r->seconds, r->placed,
			r->started, r->calls, r->refused, r->call_ns);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cos-bench-lord [--seconds S] [--modes LIST] [--csv FILE]\n"
		"Lord throughput: shoots placed and tasks started per second by one lord\n"
		"thread on CPU 0 keeping the enclave busy, CPUs 1..N-1 (every CPU but CPU 0)\n"
		"of N online CPUs, with 2 CPU-bound COS tasks per enclave CPU.  Needs root,\n"
		"cos.ko, sched_ext, 2 to %d online CPUs and no sched_ext scheduler attached\n"
		"(it attaches the shim itself).\n", BENCH_MAX_CPUS);
	bench_usage_enclave(f);
	fprintf(f,
		"  --seconds S   per mode (default 5)\n"
		"  --modes LIST  comma-separated, default all: ioctl-1, ioctl-mask, uring-1, uring-mask,\n"
		"                pair (-mask: every enclave CPU in one call; pair: two lords on\n"
		"                two halves, each alone then both at once, 4 CPUs or more)\n"
		"  --csv FILE    one row per mode\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "modes", required_argument, NULL, 'm' },
		{ "csv", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *mode_list = "ioctl-1,ioctl-mask,uring-1,uring-mask,pair", *csv = NULL;
	double seconds = 5;
	bool selected[NMODES] = { 0 };
	char enclave_cpus[32];
	FILE *out = NULL;
	int c, rc = 0;
	size_t n;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!bench_opt_double(PROG, "seconds", optarg, 0.1, 600, &seconds))
				return 2;
			break;
		case 'm': mode_list = optarg; break;
		case 'c': csv = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	enclave_size = bench_enclave_size(PROG);
	if (!enclave_size)
		return 2;
	for (const char *p = mode_list, *item; (item = bench_list_next(&p, &n));) {
		bool found = false;

		for (size_t i = 0; i < NMODES; i++) {
			if (strlen(modes[i].name) == n && !strncmp(item, modes[i].name, n))
				found = selected[i] = true;
		}
		if (!found) {
			fprintf(stderr, "%s: --modes: unknown mode '%.*s'\n", PROG, (int)n, item);
			usage(stderr);
			return 2;
		}
	}
	if (csv) {
		out = bench_csv_open(PROG, csv, "mode,seconds,placed,started,calls,refused,call_ns");
		if (!out)
			return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("enclave: %s, %d COS tasks; the lord on CPU 0\n",
	       bench_enclave_cpus(enclave_cpus, sizeof(enclave_cpus), enclave_size),
	       2 * enclave_size);
	printf("%-12s %10s %10s %9s %11s %12s %8s\n", "mode", "shoots/s", "started/s", "calls/s",
	       "shoots/call", "us/shoot", "refused");
	for (size_t i = 0; i < NMODES && !rc; i++) {
		const struct mode *m = &modes[i];
		const struct layout all = { .name = "bench", .lord_cpu = 0, .first = 1,
					    .ncpu = enclave_size };
		static const char *const pair_rows[6] = {
			"pair-a-alone", "pair-b-alone", "pair-a", "pair-b", "pair-a-b-stalled",
			"pair-a-hogs" };
		bool pair = !strcmp(m->name, "pair");
		struct cos_shim *shim;
		struct result r[6];
		int err;

		if (!selected[i])
			continue;
		if (pair && enclave_size < 3) {
			fprintf(stderr, "%s: pair needs 4 CPUs or more (two lords, one CPU each "
				"at least): skipped\n", PROG);
			continue;
		}
		err = cos_shim_attach(&shim, NULL);
		if (err) {
			fprintf(stderr, "cos-bench-lord: cannot attach the shim: %s\n", cos_strerror(err));
			rc = 1;
			break;
		}
		err = pair ? run_pair(m, seconds, r) : run_mode(m, &all, seconds, &r[0]);
		cos_shim_detach(shim);
		if (err) {
			rc = 1;
			break;
		}
		for (int k = 0; k < (pair ? 6 : 1); k++)
			print_row(out, pair ? pair_rows[k] : m->name, &r[k]);
		if (pair)
			printf("pair: each lord beside the other / alone: A %.2f, B %.2f; A beside a "
			       "stalled B / alone: %.2f; A beside hogs / alone: %.2f; A beside B / "
			       "A beside hogs: %.2f\n", rate_ratio(&r[2], &r[0]),
			       rate_ratio(&r[3], &r[1]), rate_ratio(&r[4], &r[0]),
			       rate_ratio(&r[5], &r[0]), rate_ratio(&r[2], &r[5]));
	}
	if (out)
		fclose(out);
	return rc;
}
