// SPDX-License-Identifier: GPL-2.0
/*
 * cos-shinjuku.c — the Shinjuku lord (ghOSt's Shinjuku policy, COS's shinjuku lord): one
 * centralized preemptive FIFO over the enclave.  A task runs until it blocks; once it has held a
 * CPU longer than the slice while others wait, the lord preempts it by shooting the next waiting
 * task to its CPU, and it goes to the back of the queue.  Short requests thus never wait behind
 * long ones for more than a slice (Shinjuku, NSDI '19).
 *
 * Preemption is the lord's decision, not a kernel slice: a task that exceeded the slice keeps
 * its CPU while nobody waits.  The tick (a quarter slice) finds the tasks over their slice.
 */
#include <stdlib.h>

#include "lord_main.h"

struct shinjuku {
	struct cos_taskq runq;
	const int *cpus;		/* the enclave (struct lord_main's) */
	int nr_cpus;
	unsigned long long slice_ns;
	unsigned long long preemptions, runnable;
};

static void sj_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	j->runnable++;
	cos_taskq_push(&j->runq, t);
}

static void sj_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	/* over its slice: to the back; interrupted by the kernel (kthread, RT): keep its place */
	if (why == COS_PREEMPT_BY_OTHER)
		cos_taskq_push_head(&j->runq, t);
	else
		cos_taskq_push(&j->runq, t);
}

/* Idle CPUs first; then, while tasks still wait, CPUs whose task is over its slice. */
static void sj_schedule(struct cos_sched *s)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);
	unsigned long long now = 0;

	for (int i = 0; i < j->nr_cpus && j->runq.head; i++) {
		int cpu = j->cpus[i];
		struct cos_task *t;

		if (cos_sched_cpu_task(s, cpu))
			continue;
		t = cos_sched_first_for(s, &j->runq, cpu);
		if (t)
			cos_sched_place(s, t, cpu, 0);
	}
	for (int i = 0; i < j->nr_cpus && j->runq.head; i++) {
		int cpu = j->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu), *t;

		if (!cur)
			continue;
		if (!now)
			now = cos_now_ns();
		if (now - cur->placed_at < j->slice_ns)
			continue;
		t = cos_sched_first_for(s, &j->runq, cpu);
		if (t && cos_sched_place(s, t, cpu, 0) == 0)
			j->preemptions++;
	}
}

static void sj_stats(struct cos_sched *s, FILE *out)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	fprintf(out, "runnable %llu preemptions %llu | queued %u", j->runnable, j->preemptions,
		j->runq.len);
}

static struct shinjuku j;

static int sj_parse(int opt, const char *arg)
{
	if (opt != 's')
		return -1;
	j.slice_ns = strtoull(arg, NULL, 10) * 1000;
	return 0;
}

static int sj_ready(struct lord_main *m)
{
	j.cpus = m->cpus;
	j.nr_cpus = m->nr_cpus;
	m->tick_ns = m->sched_opts.tick_ns = j.slice_ns / 4;	/* finds tasks over their slice */
	return j.slice_ns ? 0 : -1;
}

static void sj_banner(FILE *out)
{
	fprintf(out, ", slice %llu us", j.slice_ns / 1000);
}

int main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "slice-us", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	static struct lord_main m;
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "shinjuku",
		.task_runnable = sj_runnable,
		.task_preempted = sj_preempted,
		.task_yield = sj_runnable,
		.schedule = sj_schedule,
		.ctx = &j,
	};
	const char *scale = getenv("COS_TIME_SCALE");

	j.slice_ns = 30000ull * (scale && atoi(scale) > 0 ? atoi(scale) : 1);
	m.prog = "cos-shinjuku";
	m.about = "The Shinjuku lord: one preemptive FIFO; a COS task that held its CPU longer than the\n"
		  "slice yields it to the next waiting task.";
	m.own_usage =
		"  -s, --slice-us N     preemption slice in us (default 30 x COS_TIME_SCALE: set that\n"
		"                       to ~20 in an emulated guest, which runs ~20x slower than metal)\n";
	m.own_short = "s:";
	m.own_long = own;
	m.parse = sj_parse;
	m.ready = sj_ready;
	m.stats = sj_stats;
	m.banner = sj_banner;
	return lord_main(argc, argv, &policy, &m);
}
