// SPDX-License-Identifier: GPL-2.0
/*
 * cos-pair.c — the pair lord: tasks that wake each other (a pipe's two ends, a request and its
 * reply) share a CPU, and unrelated tasks spread over the enclave.  See
 * docs/writing-a-policy.md.
 *
 * The kernel does the common case: the wake rules COS_WAKE_HANDOFF_BLOCK and COS_WAKE_HANDOFF
 * hand a CPU to the task its running task woke when that one blocks (a write then a read) or
 * yields, and back, with no round trip.  No COS_WAKE_IDLE: it would start a woken partner on
 * another free CPU, which is what splits a pair.
 *
 * The lord:
 * - learns partners from the waker a wake-up names (struct cos_task.waker): a task woken by a
 *   task of this lord takes it for its partner;
 * - leaves a waking task whose partner runs (or is placed) on a CPU to the kernel's handoff for
 *   --grace-us; then gives it a free CPU (the partner follows it there by the next handoff),
 *   or latches it behind the partner: the CPU starts it when the partner blocks;
 * - else on its partner's last CPU, or its own, if free; else on the next free CPU in turn, so
 *   that new tasks, and so new pairs, spread;
 * - while tasks wait, gives a CPU to the first of them when the CPU's turn is over
 *   (--slice-us, 5 ms), a chain of handoffs counting as one turn.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "lord_main.h"

#define PR_SLICE_NS	(5ULL * 1000 * 1000)
#define PR_GRACE_NS	(1000ULL * 1000)	/* a woken task waits this long for the handoff */

struct pairpol {
	struct cos_taskq q;		/* waiting, in arrival order */
	const int *cpus;		/* the enclave (struct lord_main's) */
	int nr_cpus;
	const char *in_enclave;
	unsigned long long slice_ns;	/* --slice-us */
	unsigned long long grace_ns;	/* --grace-us */
	unsigned long long turn_at[LORD_MAX_CPUS];	/* when the CPU's turn began */
	int next;			/* the next free CPU to try first (index into cpus) */
	unsigned long long runnable, partnered, latched, together, spread, turns;
};

/* Per task (the framework's task data). */
struct pr_task {
	struct cos_task *partner;	/* the task that last woke it (and its gen), else NULL */
	unsigned int partner_gen;
};

/* @t's partner, if it is still that task. */
static struct cos_task *pr_partner(struct cos_task *t)
{
	struct pr_task *pt = t->data;

	return pt->partner && pt->partner->gen == pt->partner_gen &&
	       pt->partner->state != COS_TASK_FREE ? pt->partner : NULL;
}

static void pr_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct pairpol *p = cos_sched_policy_ctx(s);
	struct pr_task *pt = t->data;

	p->runnable++;
	if (t->waker && t->waker != t) {
		p->partnered += pt->partner != t->waker;
		pt->partner = t->waker;
		pt->partner_gen = t->waker->gen;
	}
	cos_taskq_push(&p->q, t);
}

static void pr_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct pairpol *p = cos_sched_policy_ctx(s);

	/* taken off its CPU by a kthread or the kernel: it did not use up its turn */
	if (why == COS_PREEMPT_BY_OTHER)
		cos_taskq_push_head(&p->q, t);
	else
		cos_taskq_push(&p->q, t);
}

static void pr_yield(struct cos_sched *s, struct cos_task *t)
{
	cos_taskq_push(&((struct pairpol *)cos_sched_policy_ctx(s))->q, t);
}

static bool pr_free(struct cos_sched *s, const struct pairpol *p, const struct cos_task *t, int cpu)
{
	return cpu >= 0 && cpu < LORD_MAX_CPUS && p->in_enclave[cpu] &&
	       !cos_sched_cpu_task(s, cpu) && cos_sched_task_may_run(s, t, cpu);
}

/* Place @t on @cpu: a new turn there. */
static bool pr_place(struct cos_sched *s, struct pairpol *p, struct cos_task *t, int cpu)
{
	if (cos_sched_place(s, t, cpu, 0))
		return false;
	p->turn_at[cpu] = cos_now_ns();
	return true;
}

/* @t on the next free CPU in turn, so that unrelated tasks, and so pairs, spread. */
static bool pr_spread(struct cos_sched *s, struct pairpol *p, struct cos_task *t)
{
	for (int i = 0; i < p->nr_cpus; i++) {
		int k = (p->next + i) % p->nr_cpus, cpu = p->cpus[k];

		if (pr_free(s, p, t, cpu) && pr_place(s, p, t, cpu)) {
			p->next = (k + 1) % p->nr_cpus;
			p->spread++;
			return true;
		}
	}
	return false;
}

/*
 * Where @t goes now: behind its running partner, or on a free CPU, its partner's last, its own
 * last, or the next in turn.  Beside a running partner it first waits for the kernel's
 * handoff, which comes when the partner blocks, for --grace-us (a latched task would make the
 * kernel refuse the handoff, so latching at once would put the lord in every pass of a
 * ping-pong); then it takes a free CPU, where the partner follows it by the next handoff, or
 * is latched behind the partner.  Returns whether it was placed or latched.
 */
static bool pr_start(struct cos_sched *s, struct pairpol *p, struct cos_task *t,
		     unsigned long long now)
{
	struct cos_task *mate = pr_partner(t);

	if (mate && mate->cpu >= 0 && cos_sched_cpu_task(s, mate->cpu) == mate &&
	    cos_sched_task_may_run(s, t, mate->cpu)) {
		if (now - t->runnable_at < p->grace_ns) {
			cos_sched_wake_at(s, t->runnable_at + p->grace_ns);
			return false;
		}
		/* no handoff came: its partner works on; a free CPU if there is one, or behind it */
		if (pr_spread(s, p, t))
			return true;
		if (!cos_sched_cpu_latched(s, mate->cpu)->len &&
		    cos_sched_latch(s, t, mate->cpu, 0) == 0) {
			p->latched++;
			p->together++;
			return true;
		}
		return false;
	}
	if (mate && pr_free(s, p, t, mate->cpu) && pr_place(s, p, t, mate->cpu)) {
		p->together++;
		return true;
	}
	if (pr_free(s, p, t, t->cpu) && pr_place(s, p, t, t->cpu))
		return true;
	return pr_spread(s, p, t);
}

/* The first waiting task that may run on @cpu, except one waiting there for a handoff. */
static struct cos_task *pr_first_for(struct cos_sched *s, struct pairpol *p, int cpu,
				     unsigned long long now)
{
	for (struct cos_task *t = p->q.head; t; t = t->q_next) {
		struct cos_task *mate = pr_partner(t);

		if (!cos_sched_task_may_run(s, t, cpu))
			continue;
		if (mate && mate->cpu == cpu && now - t->runnable_at < p->grace_ns)
			continue;
		return t;
	}
	return NULL;
}

/*
 * Each waiting task, in arrival order, where pr_start() puts it; then, while tasks still wait,
 * the CPUs whose turn is over take the first that may run there.
 */
static void pr_schedule(struct cos_sched *s)
{
	struct pairpol *p = cos_sched_policy_ctx(s);
	unsigned long long now = cos_now_ns();
	struct cos_task *t, *next;

	for (t = p->q.head; t; t = next) {
		next = t->q_next;
		pr_start(s, p, t, now);
	}
	if (!p->q.head)
		return;
	for (int i = 0; i < p->nr_cpus && p->q.head; i++) {
		int cpu = p->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu);

		if (!cur || now - lord_turn(&p->turn_at[cpu], cur) < p->slice_ns)
			continue;
		t = pr_first_for(s, p, cpu, now);
		if (t && pr_place(s, p, t, cpu))
			p->turns++;
	}
}

static void pr_stats(struct cos_sched *s, struct lord_stats *st)
{
	struct pairpol *p = cos_sched_policy_ctx(s);

	lord_stat(st, "runnable", p->runnable);
	lord_stat(st, "partnered", p->partnered);
	lord_stat(st, "together", p->together);
	lord_stat(st, "latched", p->latched);
	lord_stat(st, "spread", p->spread);
	lord_stat(st, "turns", p->turns);
	lord_stat(st, "queued", p->q.len);
}

static struct pairpol p = { .slice_ns = PR_SLICE_NS, .grace_ns = PR_GRACE_NS };

static int pr_parse(int opt, const char *arg)
{
	unsigned long long us;

	if (opt != 's' && opt != 'g')
		return -1;
	if (lord_number(arg, opt == 's', 10ULL * 1000 * 1000, &us))
		return -1;
	*(opt == 's' ? &p.slice_ns : &p.grace_ns) = us * 1000;
	return 0;
}

static int pr_ready(struct lord_main *lm)
{
	p.cpus = lm->cpus;
	p.nr_cpus = lm->nr_cpus;
	p.in_enclave = lm->in_enclave;
	lm->wake_rules = COS_WAKE_HANDOFF | COS_WAKE_HANDOFF_BLOCK;	/* the top comment */
	lm->wake_slice_ns = 0;
	lm->tick_ns = p.slice_ns / 4;	/* while tasks wait: finds turns that are over */
	return 0;
}

static void pr_banner(FILE *out)
{
	fprintf(out, ", slice %llu us, grace %llu us", p.slice_ns / 1000, p.grace_ns / 1000);
}

int main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "slice-us", required_argument, NULL, 's' },
		{ "grace-us", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "pair",
		.task_runnable = pr_runnable,
		.task_preempted = pr_preempted,
		.task_yield = pr_yield,
		.schedule = pr_schedule,
		.task_data_size = sizeof(struct pr_task),
		.ctx = &p,
	};
	static struct lord_main m;

	m.prog = "cos-pair";
	m.about = "The pair lord: tasks that wake each other (a pipe's two ends) share a CPU, handed\n"
		  "over by the kernel when one blocks or yields; unrelated tasks spread.";
	m.own_usage =
		"  -s, --slice-us N     a CPU's turn while tasks wait (default 5000; a chain of\n"
		"                       handoffs is one turn)\n"
		"      --grace-us N     a task woken by its running partner waits this long for the\n"
		"                       kernel's handoff before the lord latches it behind the\n"
		"                       partner (default 1000; 0: latch at once)\n";
	m.own_short = "s:";
	m.own_long = own;
	m.parse = pr_parse;
	m.ready = pr_ready;
	m.stats = pr_stats;
	m.banner = pr_banner;
	return lord_main(argc, argv, &policy, &m);
}
