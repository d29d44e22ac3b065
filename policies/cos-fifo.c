// SPDX-License-Identifier: GPL-2.0
/*
 * cos-fifo.c — the FIFO lord: runnable COS tasks run in arrival order on the enclave's CPUs,
 * each until it blocks, yields or is preempted, or until its turn is over while others wait
 * (--slice-us, 5 ms by default: round robin among equals, so one busy thread cannot hold a CPU
 * that others wait for; 0 runs each task until it blocks).  The turn is the lord's decision,
 * not a kernel slice: a task nobody waits for runs on, with no round trip through the lord.
 * One global queue by default;
 * --per-cpu keeps a queue per CPU (a task returns to its last CPU, idle CPUs steal from the
 * longest queue).  See docs/writing-a-policy.md.
 *
 * Wake rule COS_WAKE_IDLE (unless --no-wake-rules): while no task waits, a waking task starts at
 * once on a free enclave CPU, without a round trip to the lord.  This lord would do the same, and
 * the kernel applies the rule only while nobody waits, so arrival order is kept.
 *
 * Latch (--latch N, 1 by default): while tasks wait and every CPU is busy, up to N of them are
 * latched behind each CPU's task, which the CPU starts itself when its task blocks or ends its
 * slice: no CPU idles for a round trip to the lord between a task that blocks and the next.  A
 * latched task is bound to its CPU, so an idle CPU with an empty queue takes the oldest latched
 * task of the CPU with the longest latch.  Arrival order holds per CPU only.  Woken first, only
 * woken tasks are latched.
 *
 * Woken first (on unless --no-wake-first): a task that wakes or is new goes before the tasks
 * whose turn ended, and ends a busy task's turn after a quarter, as a fair scheduler's wake-up
 * preemption would; threads that hand a lock to each other then wait a quarter turn for it, not
 * a round (in plain arrival order, a lock convoy: every waiter a whole round of busy turns).  A
 * task whose turn ended goes first once it has waited a turn per task of its queue.
 *
 * Put workloads under it with `cosctl run -- CMD` (their threads become SCHED_EXT tasks).
 *
 * Its decision records (`cosctl trace`, cos-replay) give each placement a reason: FIFO_IDLE, a
 * free CPU takes the first waiting task; FIFO_STOLEN, a free CPU takes a task latched behind
 * another; FIFO_TURN, a task's turn is over; FIFO_LATCH, a waiting task is latched.
 */
#include <stdlib.h>

#include <cos_trace.h>

#include "lord_main.h"

enum fifo_reason { FIFO_IDLE = 1, FIFO_STOLEN, FIFO_TURN, FIFO_LATCH };

/*
 * A queue: tasks whose turn ended (or that yielded) in arrival order, and the woken and new
 * ones apart, in theirs.  With --no-wake-first every task goes to @turned.
 */
struct fifo_q {
	struct cos_taskq woken, turned;
};

struct fifo {
	struct fifo_q global;
	struct fifo_q percpu[LORD_MAX_CPUS];
	const int *cpus;		/* the enclave (struct lord_main's) */
	int nr_cpus;
	const char *in_enclave;
	int per_cpu;
	int wake_first;			/* woken tasks before turned ones (--no-wake-first: 0) */
	unsigned int latch;		/* --latch: tasks latched behind each CPU's at most */
	unsigned long long slice_ns;	/* a turn while others wait; 0: run to block */
	unsigned long long runnable, blocked, preempted, latched, stolen, turns;
	unsigned long long woken_first;	/* a woken task went before a turned one */
	unsigned long long early_turns;	/* a turn ended early for a woken task */
};

static struct fifo_q *queue_for(struct fifo *f, struct cos_task *t)
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
	struct fifo_q *q = queue_for(f, t);

	f->runnable++;
	cos_taskq_push(f->wake_first ? &q->woken : &q->turned, t);
}

static void fifo_yield(struct cos_sched *s, struct cos_task *t)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->runnable++;
	cos_taskq_push(&queue_for(f, t)->turned, t);
}

static void fifo_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->preempted++;
	/* preempted by a kthread or another class: it did not use up its turn, keep it first */
	if (why == COS_PREEMPT_BY_OTHER)
		cos_taskq_push_head(f->wake_first ? &queue_for(f, t)->woken : &queue_for(f, t)->turned,
				    t);
	else
		cos_taskq_push(&queue_for(f, t)->turned, t);
}

static void fifo_blocked(struct cos_sched *s, struct cos_task *t)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->blocked++;
}

/*
 * The first task of @q for @cpu: a woken one before one whose turn ended, unless that one has
 * waited a turn for each task of its queue (as long as arrival order would have let it wait,
 * plus a turn): woken tasks cannot keep it waiting longer than that.
 */
static bool fifo_aged(const struct fifo *f, const struct fifo_q *q, const struct cos_task *turned)
{
	return f->slice_ns && cos_now_ns() - turned->runnable_at >= q->turned.len * f->slice_ns;
}

static struct cos_task *fifo_first_in(struct cos_sched *s, struct fifo *f, struct fifo_q *q,
				      int cpu)
{
	struct cos_task *woken = cos_sched_first_for(s, &q->woken, cpu);
	struct cos_task *turned = cos_sched_first_for(s, &q->turned, cpu);

	if (!woken || !turned)
		return woken ?: turned;
	if (fifo_aged(f, q, turned))
		return turned;
	f->woken_first++;
	return woken;
}

/* The first waiting task for @cpu: its own queue, else (per-CPU queues) any other's. */
static struct cos_task *fifo_first(struct cos_sched *s, struct fifo *f, int cpu)
{
	struct cos_task *t;

	if (!f->per_cpu)
		return fifo_first_in(s, f, &f->global, cpu);
	t = fifo_first_in(s, f, &f->percpu[cpu], cpu);
	for (int j = 0; !t && j < f->nr_cpus; j++)	/* steal */
		t = fifo_first_in(s, f, &f->percpu[f->cpus[j]], cpu);
	return t;
}

/* The oldest task latched on the CPU with the longest latch that may run on @cpu, or NULL. */
static struct cos_task *fifo_latched_for(struct cos_sched *s, struct fifo *f, int cpu)
{
	const struct cos_taskq *best = NULL;

	for (int j = 0; j < f->nr_cpus; j++) {
		const struct cos_taskq *q = cos_sched_cpu_latched(s, f->cpus[j]);

		if (q->len && (!best || q->len > best->len) && cos_sched_first_for(s, q, cpu))
			best = q;
	}
	return best ? cos_sched_first_for(s, best, cpu) : NULL;
}

static bool fifo_woken(const struct fifo *f, const struct cos_task *t)
{
	if (!f->per_cpu)
		return t->q == &f->global.woken;
	for (int i = 0; i < f->nr_cpus; i++)
		if (t->q == &f->percpu[f->cpus[i]].woken)
			return true;
	return false;
}

static bool fifo_waiting(const struct fifo *f)
{
	if (!f->per_cpu)
		return f->global.woken.head || f->global.turned.head;
	for (int i = 0; i < f->nr_cpus; i++)
		if (f->percpu[f->cpus[i]].woken.head || f->percpu[f->cpus[i]].turned.head)
			return true;
	return false;
}

/*
 * Idle CPUs first; then, while tasks still wait (in a queue, or latched behind a CPU's task),
 * the CPUs whose task has had its turn (the framework's tick, a quarter turn, brings the lord
 * here while tasks wait or are latched); then latches.
 */
static void fifo_schedule(struct cos_sched *s)
{
	struct fifo *f = cos_sched_policy_ctx(s);
	unsigned long long now = 0;
	bool waiting;

	for (int i = 0; i < f->nr_cpus; i++) {
		int cpu = f->cpus[i];
		struct cos_task *t;

		if (cos_sched_cpu_task(s, cpu))
			continue;
		t = fifo_first(s, f, cpu);
		cos_sched_reason(s, FIFO_IDLE);
		if (!t && f->latch && (t = fifo_latched_for(s, f, cpu))) {
			f->stolen++;
			cos_sched_reason(s, FIFO_STOLEN);
		}
		if (t)
			cos_sched_place(s, t, cpu, 0);
	}
	waiting = fifo_waiting(f);
	for (int i = 0; f->slice_ns && i < f->nr_cpus; i++) {
		int cpu = f->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu), *t;

		/* its turn is over: the task latched behind it (it waited longer), else the first */
		t = cos_sched_cpu_latched(s, cpu)->head;
		if (!cur || (!t && !waiting))
			continue;
		if (!now)
			now = cos_now_ns();
		/* a woken task (unless --no-wake-first) ends the turn after a quarter (a tick), as a
		 * fair scheduler's wake-up preemption would: a lock it waited for was just freed.
		 * The latched task is a woken one too. */
		if (now - cur->placed_at < f->slice_ns) {
			if (!f->wake_first || now - cur->placed_at < f->slice_ns / 4 ||
			    (!t && !cos_sched_first_for(s, f->per_cpu ? &f->percpu[cpu].woken :
									&f->global.woken, cpu)))
				continue;
			f->early_turns++;
		}
		if (t && f->wake_first) {	/* only woken tasks are latched: an aged one first */
			struct fifo_q *q = f->per_cpu ? &f->percpu[cpu] : &f->global;
			struct cos_task *turned = cos_sched_first_for(s, &q->turned, cpu);

			if (turned && fifo_aged(f, q, turned))
				t = turned;
		}
		if (!t)
			t = fifo_first(s, f, cpu);
		cos_sched_reason(s, FIFO_TURN);
		if (t && cos_sched_place(s, t, cpu, 0) == 0)
			f->turns++;
		waiting = fifo_waiting(f);
	}
	if (!f->latch)
		return;
	waiting = fifo_waiting(f);
	for (int i = 0; i < f->nr_cpus && waiting; i++) {
		int cpu = f->cpus[i];
		struct cos_task *t;

		if (!cos_sched_cpu_task(s, cpu) || cos_sched_cpu_latched(s, cpu)->len >= f->latch)
			continue;
		t = fifo_first(s, f, cpu);
		/* a task whose turn ended waits for the next turn's end, where a woken one would go
		 * before it: latched, it would keep those waiting behind it */
		if (t && f->wake_first && !fifo_woken(f, t))
			continue;
		cos_sched_reason(s, FIFO_LATCH);
		if (t && cos_sched_latch(s, t, cpu, 0) == 0)
			f->latched++;
	}
}

static void fifo_stats(struct cos_sched *s, struct lord_stats *st)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	lord_stat(st, "runnable", f->runnable);
	lord_stat(st, "blocked", f->blocked);
	lord_stat(st, "preempted", f->preempted);
	lord_stat(st, "latched", f->latched);
	lord_stat(st, "stolen", f->stolen);
	lord_stat(st, "turns", f->turns);
	lord_stat(st, "woken-first", f->woken_first);
	lord_stat(st, "early-turns", f->early_turns);
	lord_stat(st, "queued", f->per_cpu ? 0 : f->global.woken.len + f->global.turned.len);
}

#define FIFO_SLICE_NS	(5ULL * 1000 * 1000)	/* the kernel's fair slice is 3-5 ms too */

static struct fifo f = { .slice_ns = FIFO_SLICE_NS, .wake_first = 1, .latch = 1 };
static struct lord_main m;

static int fifo_parse(int opt, const char *arg)
{
	unsigned long long v;

	switch (opt) {
	case 'p': f.per_cpu = 1; return 0;
	case 'W': f.wake_first = 1; return 0;
	case 'w': f.wake_first = 0; return 0;
	case 's':
		if (lord_number(arg, 0, 10ULL * 1000 * 1000, &v))
			return -1;
		f.slice_ns = v * 1000;
		return 0;
	case 'L':
		if (lord_number(arg, 0, COS_SHOOT_LATCH_MAX, &v))
			return -1;
		f.latch = (unsigned int)v;
		return 0;
	}
	return -1;
}

static int fifo_ready(struct lord_main *lm)
{
	f.cpus = lm->cpus;
	f.nr_cpus = lm->nr_cpus;
	f.in_enclave = lm->in_enclave;
	lm->wake_rules = COS_WAKE_IDLE;		/* see the top comment */
	lm->wake_slice_ns = 0;			/* turns are the lord's (fifo_schedule()) */
	if (f.slice_ns)
		lm->tick_ns = f.slice_ns / 4;	/* while tasks wait: finds turns that are over */
	return 0;
}

static void fifo_banner(FILE *out)
{
	fprintf(out, ", %s queue, ", f.per_cpu ? "per-CPU" : "global");
	if (f.slice_ns)
		fprintf(out, "slice %llu us", f.slice_ns / 1000);
	else
		fputs("run to block", out);
	if (f.latch)
		fprintf(out, ", latch %u", f.latch);
	fputs(f.wake_first ? ", woken tasks first" : ", arrival order", out);
}

int main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "per-cpu", no_argument, NULL, 'p' },
		{ "slice-us", required_argument, NULL, 's' },
		{ "latch", required_argument, NULL, 'L' },
		{ "wake-first", no_argument, NULL, 'W' },	/* the default; kept for scripts */
		{ "no-wake-first", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "fifo",
		.task_runnable = fifo_runnable,
		.task_preempted = fifo_preempted,
		.task_yield = fifo_yield,
		.task_blocked = fifo_blocked,
		.schedule = fifo_schedule,
		.ctx = &f,
	};

	m.prog = "cos-fifo";
	m.about = "The FIFO lord: COS tasks run in arrival order on the enclave's CPUs, in turns.";
	m.own_usage =
		"  -p, --per-cpu        a queue per CPU (tasks return to their last CPU; idle CPUs steal)\n"
		"  -s, --slice-us N     a task's turn while others wait: after N us on its CPU it\n"
		"                       makes room for the first waiting task (default 5000; 0: run\n"
		"                       each task until it blocks, which lets one busy thread hold a\n"
		"                       CPU that others wait for)\n"
		"      --latch N        latch up to N waiting tasks behind each busy CPU's task (0-4,\n"
		"                       default 1): it starts there without a round trip to the lord\n"
		"      --no-wake-first  plain arrival order: a woken task waits behind the tasks whose\n"
		"                       turn ended (by default it goes first and ends a busy task's\n"
		"                       turn after a quarter; each of those waits at most a turn per\n"
		"                       task of its queue, and one)\n";
	m.own_short = "ps:";
	m.own_long = own;
	m.parse = fifo_parse;
	m.ready = fifo_ready;
	m.stats = fifo_stats;
	m.banner = fifo_banner;
	return lord_main(argc, argv, &policy, &m);
}
