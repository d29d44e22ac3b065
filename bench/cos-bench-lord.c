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
 *
 * Per mode: shoots placed per second (status OK), tasks started per second (RUNNING messages),
 * commit calls per second, shoots per call, and the lord's time in the commit call per shoot
 * placed (what batching saves).  The rate is bounded by how fast the target CPUs start the tasks
 * (a mask waits for the slowest), the call time by the lord alone.  The first output line names
 * the enclave.  --csv FILE writes one row per mode.  A benchmark: it asserts nothing about time.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define PROG "cos-bench-lord"
#include "cos.h"

#define MAX_TASKS	(2 * BENCH_MAX_CPUS)
#define START_TIMEOUT_NS 10000000000ull	/* for every task to come under the lord */

static int enclave_size;		/* the enclave: CPUs 1..enclave_size; the lord on CPU 0 */
static int ntasks;			/* COS tasks: 2 per enclave CPU */

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

/* ntasks processes (not the lord's threads): each becomes a COS task and spins. */
static pid_t spawn_tasks(pid_t *pids)
{
	for (int i = 0; i < ntasks; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return -errno;
		if (pids[i] == 0) {
			struct sched_param sp = { 0 };

			bench_pin(1, enclave_size);
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
static void end_tasks(pid_t *pids, struct cos_lord *lord)
{
	for (int i = 0; i < ntasks; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	cos_lord_destroy(lord);
	for (int i = 0; i < ntasks; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
}

static int task_of(const pid_t *pids, uint32_t pid)
{
	for (int i = 0; i < ntasks; i++)
		if ((uint32_t)pids[i] == pid)
			return i;
	return -1;
}

/* The longest-waiting task, or -1. */
static int pick(struct task *t)
{
	int best = -1;

	for (int i = 0; i < ntasks; i++)
		if (t[i].waiting && (best < 0 || t[i].since < t[best].since))
			best = i;
	return best;
}

static bool all_ready(const bool *ready)
{
	for (int c = 1; c <= enclave_size; c++)
		if (!ready[c])
			return false;
	return true;
}

static int run_mode(const struct mode *m, double seconds, struct result *res)
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
	for (int c = 1; c <= enclave_size; c++)
		CPU_SET(c, &set);
	o.lord_cpu = 0;
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
	err = spawn_tasks(pids);
	if (err) {
		fprintf(stderr, "cos-bench-lord: fork: %s\n", strerror(-err));
		goto out;
	}
	for (int c = 0; c <= enclave_size; c++)
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
		if (known < ntasks && now > t0 + START_TIMEOUT_NS) {
			fprintf(stderr, "cos-bench-lord: only %d of %d tasks came under the lord in %llu s\n",
				known, ntasks, START_TIMEOUT_NS / 1000000000ull);
			err = -ETIMEDOUT;
			goto out;
		}
		while ((msg = cos_lord_peek(lord))) {
			int i = task_of(pids, msg->pid);

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
					if (msg->arg <= (uint64_t)enclave_size)
						ready[msg->arg] = true;
				}
				if (msg->type == COS_MSG_TASK_RUNNING &&
				    msg->arg <= (uint64_t)enclave_size &&
				    on_cpu[msg->arg] == i) {
					ready[msg->arg] = true;
					res->started++;
				}
			}
			cos_lord_consume(lord);
		}
		if (end == UINT64_MAX) {
			if (known < ntasks) {
				cos_lord_publish(lord);
				continue;
			}
			t0 = now;
			end = t0 + (uint64_t)(seconds * 1e9);
		}
		go = !m->mask || all_ready(ready);	/* mask: all CPUs in one call */
		for (int c = 1; c <= enclave_size; c++) {
			int i;

			if (!ready[c] || !go || (i = pick(tasks)) < 0)
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
	end_tasks(pids, lord);
	return err;
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
		"  --modes LIST  comma-separated, default all: ioctl-1, ioctl-mask, uring-1, uring-mask\n"
		"                (-mask: every enclave CPU in one call)\n"
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
	const char *mode_list = "ioctl-1,ioctl-mask,uring-1,uring-mask", *csv = NULL;
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
	ntasks = 2 * enclave_size;
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
	       bench_enclave_cpus(enclave_cpus, sizeof(enclave_cpus), enclave_size), ntasks);
	printf("%-11s %10s %10s %9s %11s %12s %8s\n", "mode", "shoots/s", "started/s", "calls/s",
	       "shoots/call", "us/shoot", "refused");
	for (size_t i = 0; i < NMODES && !rc; i++) {
		const struct mode *m = &modes[i];
		struct cos_shim *shim;
		struct result r;
		int err;

		if (!selected[i])
			continue;
		err = cos_shim_attach(&shim, NULL);
		if (err) {
			fprintf(stderr, "cos-bench-lord: cannot attach the shim: %s\n", cos_strerror(err));
			rc = 1;
			break;
		}
		err = run_mode(m, seconds, &r);
		cos_shim_detach(shim);
		if (err) {
			rc = 1;
			break;
		}
		printf("%-11s %10.0f %10.0f %9.0f %11.2f %12.1f %8llu\n", m->name,
		       r.placed / r.seconds, r.started / r.seconds, r.calls / r.seconds,
		       r.calls ? (double)r.placed / r.calls : 0,
		       r.placed ? r.call_ns / 1000.0 / r.placed : 0, r.refused);
		if (out)
			fprintf(out, "%s,%.3f,%llu,%llu,%llu,%llu,%llu\n", m->name, r.seconds, r.placed,
				r.started, r.calls, r.refused, r.call_ns);
	}
	if (out)
		fclose(out);
	return rc;
}
