// SPDX-License-Identifier: GPL-2.0
/*
 * cos-bench-framework.c — what the policy framework (libcos's cos_sched) costs per step, with
 * its decision records off and on: the lord's loop without the kernel, through the framework's
 * backend seam (an in-memory kernel), so that only libcos's own time is measured.  Each step
 * handles two messages (a task blocks on a CPU, another wakes) and places the woken task on
 * the freed CPU: one decision, one shoot.  Modes:
 *
 *   off        no reader: the recording's cost is a load and a compare per step
 *   on         a reader thread drains the ring every millisecond (`cosctl trace`'s way)
 *
 * Rows are nanoseconds per step, the best and the median of --runs runs.  Runs anywhere (no
 * cos.ko, no privilege).  See docs/performance.md.
 */
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h"

#define NR_CPUS		4
#define NR_TASKS	8

/* The kernel: a task blocks on CPU c, the task placed there next starts. */
struct kernel {
	struct cos_msg ring[4];
	int head, tail;
	unsigned long long seq;
	int on_cpu[NR_CPUS];		/* slot running there, -1: none */
	int blocked[NR_TASKS];		/* slots asleep, a FIFO */
	int nr_blocked, first_blocked;
	int prepared_cpu, prepared_slot;
};

static void post(struct kernel *k, unsigned int type, int slot, int cpu)
{
	struct cos_msg *m = &k->ring[k->tail++ % 4];

	memset(m, 0, sizeof(*m));
	m->seq = ++k->seq;
	m->type = type;
	m->slot = (unsigned int)slot;
	m->gen = 1;
	m->pid = 1000 + slot;
	m->cpu = (unsigned int)cpu;
}

static const struct cos_msg *k_peek(void *b)
{
	struct kernel *k = b;

	return k->head == k->tail ? NULL : &k->ring[k->head % 4];
}
static void k_consume(void *b) { ((struct kernel *)b)->head++; }
static void k_publish(void *b) { }
static int k_status(void *b, unsigned int slot, struct cos_task_status *out)
{
	memset(out, 0, sizeof(*out));
	return 0;
}
static int k_prepare(void *b, int cpu, unsigned int slot, unsigned int gen,
		     unsigned long long slice_ns, unsigned int flags)
{
	struct kernel *k = b;

	k->prepared_cpu = cpu;
	k->prepared_slot = (int)slot;
	return 0;
}
static int k_shoot(void *b)
{
	struct kernel *k = b;

	k->on_cpu[k->prepared_cpu] = k->prepared_slot;
	return 1;
}
static unsigned int k_shoot_status(void *b, int cpu) { return COS_SHOOT_OK; }
static int k_wait(void *b, unsigned long long t) { return 0; }
static int k_affinity(void *b, int pid, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (int c = 0; c < NR_CPUS; c++)
		CPU_SET(c, set);
	return 0;
}

static const struct cos_backend backend = {
	.peek = k_peek, .consume = k_consume, .publish = k_publish, .task_status = k_status,
	.prepare = k_prepare, .shoot = k_shoot, .shoot_status = k_shoot_status, .wait = k_wait,
	.affinity = k_affinity,
};

/* The policy: FIFO on free CPUs. */
static struct cos_taskq queue;
static void fw_runnable(struct cos_sched *s, struct cos_task *t) { cos_taskq_push(&queue, t); }
static void fw_schedule(struct cos_sched *s)
{
	for (int cpu = 0; cpu < NR_CPUS && queue.head; cpu++)
		if (!cos_sched_cpu_task(s, cpu))
			cos_sched_place(s, queue.head, cpu, 0);
}

/* One step of the scenario: the task on CPU (step % NR_CPUS) blocks, the longest asleep wakes. */
static void scenario(struct kernel *k, unsigned long i)
{
	int cpu = (int)(i % NR_CPUS), slot = k->on_cpu[cpu];

	post(k, COS_MSG_TASK_BLOCKED, slot, cpu);
	k->on_cpu[cpu] = -1;
	k->blocked[(k->first_blocked + k->nr_blocked++) % NR_TASKS] = slot;
	post(k, COS_MSG_TASK_RUNNABLE, k->blocked[k->first_blocked], cpu);
	k->first_blocked = (k->first_blocked + 1) % NR_TASKS;
	k->nr_blocked--;
}

static atomic_int reader_stop;

struct reader {
	struct cos_trace_header *ring;
	size_t size;
	int out;
};

static void *reader_thread(void *arg)
{
	struct reader *r = arg;

	while (!atomic_load(&reader_stop)) {
		cos_trace_drain(r->ring, r->size, r->out);
		usleep(1000);
	}
	cos_trace_drain(r->ring, r->size, r->out);
	return NULL;
}

/* ns per step of @steps steps, recording or not. */
static double run(unsigned long steps, int on)
{
	struct cos_policy p = { .size = sizeof(p), .name = "bench", .task_runnable = fw_runnable,
				.task_yield = fw_runnable, .schedule = fw_schedule };
	struct cos_sched_opts o = { .size = sizeof(o) };
	struct kernel k = { 0 };
	struct reader r = { 0 };
	pthread_t reader;
	struct cos_sched *s;
	cpu_set_t enclave;
	uint64_t t0, t1;
	int fd = -1;

	CPU_ZERO(&enclave);
	for (int c = 0; c < NR_CPUS; c++)
		CPU_SET(c, &enclave);
	o.lord.enclave = &enclave;
	o.lord.enclave_size = sizeof(enclave);
	o.lord.lord_cpu = NR_CPUS;
	memset(&queue, 0, sizeof(queue));
	if (cos_sched_create_backend(&s, &p, &backend, &k, &o, 64, NR_CPUS + 1))
		exit(1);
	/* the tasks: CPUs busy with 0..3, 4..7 asleep */
	for (int i = 0; i < NR_TASKS; i++) {
		post(&k, COS_MSG_TASK_NEW, i, NR_CPUS);
		post(&k, COS_MSG_TASK_RUNNABLE, i, NR_CPUS);
		cos_sched_step(s);
		if (i >= NR_CPUS) {
			post(&k, COS_MSG_TASK_BLOCKED, i, NR_CPUS);
			cos_sched_step(s);
			k.blocked[k.nr_blocked++] = i;
		}
	}
	if (on) {
		struct stat st;

		fd = cos_sched_trace_start(s, 0, "bench");
		if (fd < 0 || fstat(fd, &st))
			exit(1);
		r.size = (size_t)st.st_size;
		r.ring = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		r.out = open("/dev/null", O_WRONLY);
		if (r.ring == MAP_FAILED || cos_trace_save_header(r.ring, r.size, r.out))
			exit(1);
		atomic_store(&reader_stop, 0);
		pthread_create(&reader, NULL, reader_thread, &r);
	}
	t0 = bench_now_ns();
	for (unsigned long i = 0; i < steps; i++) {
		scenario(&k, i);
		cos_sched_step(s);
	}
	t1 = bench_now_ns();
	if (on) {
		atomic_store(&reader_stop, 1);
		pthread_join(reader, NULL);
		if (r.ring->lost_steps)
			fprintf(stderr, "cos-bench-framework: %llu steps lost\n",
				(unsigned long long)r.ring->lost_steps);
		munmap(r.ring, r.size);
		close(r.out);
		close(fd);
	}
	cos_sched_free(s);
	return (double)(t1 - t0) / (double)steps;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "steps", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int steps = 2000000, runs = 5;
	double t[2][64];
	int c;

	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!bench_opt_int("cos-bench-framework", "--steps", optarg, 1000, 1000000000, &steps))
				return 2;
			break;
		case 'r':
			if (!bench_opt_int("cos-bench-framework", "--runs", optarg, 1, 64, &runs))
				return 2;
			break;
		case 'h':
			printf("usage: cos-bench-framework [--steps N] [--runs N]\n\n"
			       "The policy framework's time per step (two messages, one placement, one\n"
			       "shoot) on an in-memory kernel, decision records off and on: ns per step,\n"
			       "best and median of --runs (5) runs of --steps (2000000) steps.\n");
			return 0;
		default:
			fprintf(stderr, "Try 'cos-bench-framework --help' for more.\n");
			return 2;
		}
	}
	/* interleaved: off, on, off, on, ... so that drift hits both alike */
	for (int i = 0; i < runs; i++)
		for (int on = 0; on < 2; on++)
			t[on][i] = run((unsigned long)steps, on);
	printf("%-6s %12s %12s\n", "mode", "best ns", "median ns");
	for (int on = 0; on < 2; on++) {
		qsort(t[on], (size_t)runs, sizeof(double), cmp);
		printf("%-6s %12.1f %12.1f\n", on ? "on" : "off", t[on][0], t[on][runs / 2]);
	}
	return 0;
}
