// SPDX-License-Identifier: GPL-2.0
/*
 * cos-fifo.c — the FIFO lord (COS's fifo lord): runnable COS tasks run in arrival order on the
 * enclave's CPUs, each until it blocks, yields or is preempted (run to block), or for --slice-us.
 * One global queue by default; --per-cpu keeps a queue per CPU (a task returns to the CPU it
 * last ran on, idle CPUs steal from the longest queue).
 *
 * Wake rule COS_WAKE_IDLE (unless --no-wake-rules): while no task waits, a waking task starts at
 * once on a free enclave CPU (an idle one first, the one it last ran on first), without a round
 * trip to the lord.
 * That is what this lord would do with it anyway (the first free CPU for the queue's head), and
 * the kernel applies it only while nobody waits, so arrival order is kept; the kernel gives it
 * the --slice-us slice, as a shoot would.
 *
 * Put workloads under it with `cosctl run -- CMD` (their threads become SCHED_EXT tasks).
 */
#include <stdlib.h>

#include "lord_main.h"

struct fifo {
	struct cos_taskq global;
	struct cos_taskq percpu[LORD_MAX_CPUS];
	const int *cpus;		/* the enclave (struct lord_main's) */
	int nr_cpus;
	const char *in_enclave;
	int per_cpu;
	unsigned long long slice_ns;
	unsigned long long runnable, blocked, preempted;
};

static struct cos_taskq *queue_for(struct fifo *f, struct cos_task *t)
{
	if (!f->per_cpu)
		return &f->global;
	/* its last CPU's queue; one outside the enclave (it ran under the fair policy) -> the first */
	return t->cpu >= 0 && t->cpu < LORD_MAX_CPUS && f->in_enclave[t->cpu] ? &f->percpu[t->cpu] :
									    &f->percpu[f->cpus[0]];
}

static void fifo_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->runnable++;
	cos_taskq_push(queue_for(f, t), t);
}

static void fifo_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->preempted++;
	/* preempted by a kthread or another class: it did not use up its turn, keep it first */
	if (why == COS_PREEMPT_BY_OTHER)
		cos_taskq_push_head(queue_for(f, t), t);
	else
		cos_taskq_push(queue_for(f, t), t);
}

static void fifo_blocked(struct cos_sched *s, struct cos_task *t)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->blocked++;
}

static void fifo_schedule(struct cos_sched *s)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	for (int i = 0; i < f->nr_cpus; i++) {
		int cpu = f->cpus[i];
		struct cos_task *t;

		if (cos_sched_cpu_task(s, cpu))
			continue;
		if (!f->per_cpu) {
			t = cos_sched_first_for(s, &f->global, cpu);
		} else {
			t = cos_sched_first_for(s, &f->percpu[cpu], cpu);
			for (int j = 0; !t && j < f->nr_cpus; j++)	/* steal */
				t = cos_sched_first_for(s, &f->percpu[f->cpus[j]], cpu);
		}
		if (t)
			cos_sched_place(s, t, cpu, f->slice_ns);
	}
}

static void fifo_stats(struct cos_sched *s, FILE *out)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	fprintf(out, "runnable %llu blocked %llu preempted %llu | queued %u", f->runnable, f->blocked,
		f->preempted, f->per_cpu ? 0 : f->global.len);
}

static struct fifo f;
static struct lord_main m;

static int fifo_parse(int opt, const char *arg)
{
	switch (opt) {
	case 'p': f.per_cpu = 1; return 0;
	case 's': f.slice_ns = strtoull(arg, NULL, 10) * 1000; return 0;
	}
	return -1;
}

static int fifo_ready(struct lord_main *lm)
{
	f.cpus = lm->cpus;
	f.nr_cpus = lm->nr_cpus;
	f.in_enclave = lm->in_enclave;
	lm->wake_rules = COS_WAKE_IDLE;		/* see the top comment */
	lm->wake_slice_ns = f.slice_ns;
	return 0;
}

static void fifo_banner(FILE *out)
{
	fprintf(out, ", %s queue, %s", f.per_cpu ? "per-CPU" : "global", f.slice_ns ? "sliced" : "run to block");
}

int main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "per-cpu", no_argument, NULL, 'p' },
		{ "slice-us", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "fifo",
		.task_runnable = fifo_runnable,
		.task_preempted = fifo_preempted,
		.task_yield = fifo_runnable,
		.task_blocked = fifo_blocked,
		.schedule = fifo_schedule,
		.ctx = &f,
	};

	m.prog = "cos-fifo";
	m.about = "The FIFO lord: COS tasks run in arrival order on the enclave's CPUs until they block.";
	m.own_usage =
		"  -p, --per-cpu        a queue per CPU (tasks return to their last CPU; idle CPUs steal)\n"
		"  -s, --slice-us N     preempt a task after N us of CPU (default 0: run to block)\n";
	m.own_short = "ps:";
	m.own_long = own;
	m.parse = fifo_parse;
	m.ready = fifo_ready;
	m.stats = fifo_stats;
	m.banner = fifo_banner;
	return lord_main(argc, argv, &policy, &m);
}
