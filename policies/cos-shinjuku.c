// SPDX-License-Identifier: GPL-2.0
/*
 * cos-shinjuku.c — the Shinjuku lord: a centralized preemptive multi-level FIFO over the
 * enclave, one FIFO per request class, class 1 first.  A task runs until it blocks; the lord
 * preempts it (to the back of its class's queue) when a more urgent class waits, or when it is
 * over the slice while its own class waits, so short requests never wait behind long ones for
 * more than a slice.  See docs/writing-a-policy.md.
 *
 * Classes come from the app hints (hint_class, 1 = most urgent; none: the default class).  A
 * task in a critical section is not preempted (it would hold its lock while it waits), and one
 * the kernel took off its CPU, or that woke up, in a section is placed first of all.  A task
 * that holds a hinted lock (cos_mutex, libcos-lock.so: nr_locks) is treated the same for
 * --lock-cap-us from when the lord first sees it holding one (its waiters would only block
 * behind it): no re-placement renews that, only a look that finds it holding none, so no
 * holder keeps a CPU for ever.  The lord wakes when a spared holder's cap ends.
 *
 * Preemption is the lord's decision, not a kernel slice.  The tick (a quarter slice) finds the
 * tasks over their slice; it runs only while a task waits or is latched, so an idle lord sleeps.
 *
 * A preemption costs a lord round trip (the shoot, the switch, the message back), during which
 * the CPU switches twice instead of working.  So the slice in use is never shorter than
 * SJ_RTT_SLICES round trips as measured here: from the shoot that preempts to the lord's
 * handling of the preempted task's message, averaged.  The same binary then keeps its --slice-us
 * on a machine whose round trip is a few microseconds and stretches it where the round trip is
 * hundreds (an emulator, an overloaded lord CPU).
 *
 * A preemption that makes others wait does not pay either: a lock holder preempted over its
 * slice leaves the tasks that need its lock to block one after another.  A task that blocks on
 * a CPU whose task this lord keeps preempted is marked as blocked behind it; the module says
 * who woke a task (cos_task.waker), and when that is the task it blocked behind, that task's
 * preemption made it wait: its slice doubles, up to 2^SJ_BACKOFF_MAX times, at most once per
 * preemption; each preemption with no such wake-up halves it again.  A more urgent class still
 * preempts at once.
 *
 * Wake rule COS_WAKE_IDLE (unless --no-wake-rules), with no kernel slice: the lord would give a
 * free CPU to that task at once too, and class matters only when tasks wait, when the kernel
 * leaves every waking task to the lord.  Its slice counts from the message's time.
 *
 * Latch (--latch N, default 1): while tasks still wait after both passes, the most urgent is
 * latched behind each busy CPU's task.  Class order holds: when a CPU's task must make room, the
 * preemption pass starts that CPU's first latched task if it is as urgent as any waiting one,
 * and a more urgent task that arrives later still preempts at once.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "lord_main.h"

#define SJ_CLASSES_MAX	8
#define SJ_RTT_SLICES	4	/* the slice in use is at least this many lord round trips */
#define SJ_BACKOFF_MAX	6	/* a convoy's cause runs at most 64 slices ... */
#define SJ_LOCK_SLICES	4	/* a lock holder's default reprieve, in slices (as the
				 * lock-handoff reference: 20 ms against 5) */
#define SJ_SLICE_CAP_NS	20000000ull	/* ... and no task's slice, floor and back-off
					 * included, exceeds 20 ms or an eighth of starve_ms
					 * (unless --slice-us asks for more) */

struct shinjuku {
	struct cos_taskq runq[SJ_CLASSES_MAX];	/* [0] = class 1, the most urgent */
	unsigned int classes;			/* in use */
	unsigned int default_class;		/* of a task that gives none (1-based) */
	const int *cpus;		/* the enclave (struct lord_main's) */
	int nr_cpus;
	unsigned long long slice_ns;	/* --slice-us */
	unsigned long long rtt_ns;	/* the lord's preemption round trip, a moving average */
	unsigned long long preempt_at[LORD_MAX_CPUS];	/* when the lord last preempted there */
	struct cos_task *preempted_on[LORD_MAX_CPUS];	/* whom, over its slice (and its gen) */
	unsigned int preempted_gen[LORD_MAX_CPUS];
	int fixed_slice;		/* --fixed-slice: no round-trip floor */
	unsigned long long slice_cap_ns;	/* see SJ_SLICE_CAP_NS */
	unsigned int latch;		/* --latch: tasks latched behind each CPU's at most */
	unsigned long long lock_cap_ns;	/* --lock-cap-us: a lock holder's reprieve; 0: see
					 * sj_lock_cap() */
	unsigned long long preemptions, runnable, hinted, deferred, latched, convoys, lock_deferred;
};

/* The slice in use: --slice-us, or SJ_RTT_SLICES round trips if that is longer. */
static unsigned long long sj_slice(const struct shinjuku *j)
{
	unsigned long long floor = j->fixed_slice ? 0 : SJ_RTT_SLICES * j->rtt_ns;

	return j->slice_ns > floor ? j->slice_ns : floor;
}

/*
 * @t's slice: the one in use, doubled per back-off step, capped.  The cap keeps a measured
 * round trip that spiked (the average starts from one sample) times a back-off from keeping
 * a waiting task out past the starvation rule.
 */
static unsigned long long sj_task_slice(const struct shinjuku *j, unsigned int backoff)
{
	unsigned long long slice = sj_slice(j) << backoff;

	return slice < j->slice_cap_ns ? slice : j->slice_cap_ns;
}

/* Per task (the framework's task data). */
struct sj_task {
	unsigned int level;		/* 0-based class, set each time it becomes runnable */
	unsigned int backoff;		/* its slice: sj_task_slice(backoff) */
	bool convoy;			/* its last preemption made a task it woke block */
	unsigned long long preempted_at;	/* when this lord last preempted it (0: never) */
	struct cos_task *behind;	/* it last blocked while this task was kept preempted */
	unsigned int behind_gen;
	unsigned long long lock_seen;	/* when the lord first saw it hold a hinted lock; 0: it
					 * held none when last looked at */
};

/* A lock holder's reprieve: --lock-cap-us, or SJ_LOCK_SLICES slices in use. */
static unsigned long long sj_lock_cap(const struct shinjuku *j)
{
	return j->lock_cap_ns ? j->lock_cap_ns : SJ_LOCK_SLICES * sj_slice(j);
}

/*
 * Whether @st's task, whose hint is @h, is a lock holder within its reprieve (see the top
 * comment).  Its cap counts from the first look that found it holding, until one finds it free.
 */
static bool sj_lock_spared(const struct shinjuku *j, struct sj_task *st, const struct cos_hint *h,
			   unsigned long long now)
{
	if (!h->nr_locks) {
		st->lock_seen = 0;
		return false;
	}
	if (!st->lock_seen)
		st->lock_seen = now;
	return now - st->lock_seen < sj_lock_cap(j);
}

/*
 * @t blocked at @t->event_at on @t->cpu: behind the task this lord preempted there, if that one
 * had not started again by then.  (One latched behind @t starts when @t blocks, before the lord
 * hears of it: its placed_at is later than the block.)
 */
static void sj_blocked(struct cos_sched *s, struct cos_task *t)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);
	struct sj_task *st = t->data;
	unsigned long long at = t->event_at;
	struct cos_task *w;
	struct sj_task *ws;

	st->behind = NULL;
	if (t->cpu < 0 || t->cpu >= LORD_MAX_CPUS)
		return;
	w = j->preempted_on[t->cpu];
	if (!w || w == t || w->gen != j->preempted_gen[t->cpu])
		return;
	ws = w->data;
	if (ws->preempted_at <= at && (w->placed_at < ws->preempted_at || w->placed_at >= at)) {
		st->behind = w;
		st->behind_gen = w->gen;
	}
}

/* @t woke up: woken by the task it blocked behind, whose preemption made it wait (a lock). */
static void sj_convoy_check(struct shinjuku *j, struct cos_task *t)
{
	struct sj_task *st = t->data, *w;

	if (!t->waker || st->behind != t->waker || st->behind_gen != t->waker->gen)
		return;
	st->behind = NULL;
	w = t->waker->data;
	if (w->convoy)
		return;		/* once per preemption */
	w->convoy = true;
	j->convoys++;
	if (w->backoff < SJ_BACKOFF_MAX)
		w->backoff++;
}

/* This lord preempts @t over its slice: the last preemption's verdict, then this one's start. */
static void sj_preempting(struct sj_task *st, unsigned long long now)
{
	if (st->preempted_at && !st->convoy && st->backoff)
		st->backoff--;
	st->preempted_at = now;
	st->convoy = false;
}

/*
 * The task's queue: its class from its hint, else the default; read each time it queues.  A task
 * in a critical section goes first, whatever its class: it holds a lock others may wait for.
 */
static void sj_queue(struct cos_sched *s, struct cos_task *t, bool head)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);
	struct sj_task *st = t->data;
	unsigned int c = j->default_class;
	struct cos_hint h;

	if (cos_sched_task_hint(s, t, &h) == 0) {
		j->hinted++;
		if (h.hint_class)
			c = h.hint_class < j->classes ? h.hint_class : j->classes;
		/* its waiters wait for it */
		if ((h.flags & COS_HINT_F_CRITICAL) ||
		    (h.nr_locks && sj_lock_spared(j, st, &h, cos_now_ns()))) {
			cos_taskq_push_head(&j->runq[0], t);
			st->level = c - 1;
			return;
		}
	}
	st->level = c - 1;
	if (head)
		cos_taskq_push_head(&j->runq[st->level], t);
	else
		cos_taskq_push(&j->runq[st->level], t);
}

static void sj_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	j->runnable++;
	sj_convoy_check(j, t);
	sj_queue(s, t, false);
}

static void sj_yield(struct cos_sched *s, struct cos_task *t)
{
	sj_queue(s, t, false);
}

static void sj_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	/* the lord's own preemption came back: one round trip, into the average (1/8 weight) */
	if ((why & 0xff) == COS_PREEMPT_BY_COS && t->cpu >= 0 && t->cpu < LORD_MAX_CPUS &&
	    j->preempt_at[t->cpu]) {
		unsigned long long rtt = cos_now_ns() - j->preempt_at[t->cpu];

		j->rtt_ns = j->rtt_ns ? (7 * j->rtt_ns + rtt) / 8 : rtt;
		j->preempt_at[t->cpu] = 0;
	}
	/* over its slice or by a more urgent task: to the back; by the kernel: keep its place */
	sj_queue(s, t, why == COS_PREEMPT_BY_OTHER);
}

/* The most urgent waiting task allowed on @cpu, of level <= @max_level; its level in @level. */
static struct cos_task *sj_first(struct cos_sched *s, struct shinjuku *j, int cpu,
				 unsigned int max_level, unsigned int *level)
{
	for (unsigned int l = 0; l <= max_level && l < j->classes; l++) {
		struct cos_task *t = j->runq[l].head ? cos_sched_first_for(s, &j->runq[l], cpu) : NULL;

		if (t) {
			*level = l;
			return t;
		}
	}
	return NULL;
}

static bool sj_waiting(const struct shinjuku *j)
{
	for (unsigned int l = 0; l < j->classes; l++)
		if (j->runq[l].head)
			return true;
	return false;
}

/* The most urgent task latched first on another CPU that may run on @cpu, or NULL. */
static struct cos_task *sj_latched_for(struct cos_sched *s, struct shinjuku *j, int cpu)
{
	struct cos_task *best = NULL;

	for (int i = 0; i < j->nr_cpus; i++) {
		struct cos_task *t = cos_sched_cpu_latched(s, j->cpus[i])->head;

		if (t && cos_sched_task_may_run(s, t, cpu) &&
		    (!best || ((struct sj_task *)t->data)->level < ((struct sj_task *)best->data)->level))
			best = t;
	}
	return best;
}

/*
 * Idle CPUs first (a waiting task, else one latched elsewhere); then, while tasks still wait,
 * CPUs whose task should make room; then latches.
 */
static void sj_schedule(struct cos_sched *s)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);
	unsigned long long now = 0;
	unsigned int level;

	for (int i = 0; i < j->nr_cpus; i++) {
		int cpu = j->cpus[i];
		struct cos_task *t;

		if (cos_sched_cpu_task(s, cpu))
			continue;
		t = sj_first(s, j, cpu, j->classes - 1, &level);
		if (!t && j->latch)
			t = sj_latched_for(s, j, cpu);
		if (t)
			cos_sched_place(s, t, cpu, 0);
	}
	for (int i = 0; i < j->nr_cpus; i++) {
		int cpu = j->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu), *t;
		struct cos_task *latched = cos_sched_cpu_latched(s, cpu)->head;
		unsigned int max_level;
		struct sj_task *cs;
		struct cos_hint h;
		bool over;

		if (!cur || (!latched && !sj_waiting(j)))
			continue;
		cs = cur->data;
		/* its class as of now: a running task may have changed it, and one the wake rule
		 * started never went through sj_queue() */
		cs->level = j->default_class - 1;
		if (cos_sched_task_hint(s, cur, &h) == 0) {
			if (h.flags & COS_HINT_F_CRITICAL) {
				j->deferred++;	/* it holds a lock: let it leave the section */
				continue;
			}
			if (!now)
				now = cos_now_ns();
			/* a hinted lock's holder, up to its cap: preempted, it would stall its waiters */
			if (sj_lock_spared(j, cs, &h, now)) {
				j->lock_deferred++;
				cos_sched_wake_at(s, cs->lock_seen + sj_lock_cap(j));
				continue;
			}
			if (h.hint_class)
				cs->level = (h.hint_class < j->classes ? h.hint_class : j->classes) - 1;
		}
		if (!now)
			now = cos_now_ns();
		over = now - cur->placed_at >= sj_task_slice(j, cs->backoff);
		if (!over && cs->level == 0)
			continue;	/* nothing is more urgent */
		/* a more urgent class at once; the same class once it is over its slice */
		max_level = over ? cs->level : cs->level - 1;
		t = sj_first(s, j, cpu, max_level, &level);
		/* the CPU's first latched task goes first if it is as urgent (it waited longer) */
		if (latched && ((struct sj_task *)latched->data)->level <= (t ? level : max_level))
			t = latched;
		if (!t)
			continue;
		if (cos_sched_place(s, t, cpu, 0) == 0) {
			j->preemptions++;
			j->preempt_at[cpu] = now;
			if (over) {
				sj_preempting(cs, now);
				j->preempted_on[cpu] = cur;
				j->preempted_gen[cpu] = cur->gen;
			}
		}
	}
	for (int i = 0; j->latch && i < j->nr_cpus && sj_waiting(j); i++) {
		int cpu = j->cpus[i];
		struct cos_task *t;

		if (!cos_sched_cpu_task(s, cpu) || cos_sched_cpu_latched(s, cpu)->len >= j->latch)
			continue;
		t = sj_first(s, j, cpu, j->classes - 1, &level);
		if (t && cos_sched_latch(s, t, cpu, 0) == 0)
			j->latched++;
	}
}

static void sj_stats(struct cos_sched *s, struct lord_stats *st)
{
	static const char *const queued[SJ_CLASSES_MAX] = {
		"queued-1", "queued-2", "queued-3", "queued-4", "queued-5", "queued-6", "queued-7",
		"queued-8",
	};
	struct shinjuku *j = cos_sched_policy_ctx(s);

	lord_stat(st, "runnable", j->runnable);
	lord_stat(st, "hinted", j->hinted);
	lord_stat(st, "preemptions", j->preemptions);
	lord_stat(st, "deferred", j->deferred);
	lord_stat(st, "latched", j->latched);
	lord_stat(st, "convoys", j->convoys);
	lord_stat(st, "spared-holders", j->lock_deferred);
	lord_stat(st, "round-trip-us", j->rtt_ns / 1000);
	lord_stat(st, "slice-us", sj_slice(j) / 1000);
	for (unsigned int l = 0; l < j->classes; l++)
		lord_stat(st, queued[l], j->runq[l].len);
}

static struct shinjuku j;

static int sj_parse(int opt, const char *arg)
{
	unsigned long long v;

	if (opt == 'F') {
		j.fixed_slice = 1;
		return 0;
	}
	switch (opt) {
	case 's':
		if (lord_number(arg, 1, 3600ULL * 1000 * 1000, &v))
			return -1;
		j.slice_ns = v * 1000;
		return 0;
	case 'C':
		if (lord_number(arg, 1, SJ_CLASSES_MAX, &v))
			return -1;
		j.classes = (unsigned int)v;
		return 0;
	case 'D':
		if (lord_number(arg, 0, COS_HINT_CLASS_MAX, &v))
			return -1;
		j.default_class = (unsigned int)v;
		return 0;
	case 'L':
		if (lord_number(arg, 0, COS_SHOOT_LATCH_MAX, &v))
			return -1;
		j.latch = (unsigned int)v;
		return 0;
	case 'K':
		if (lord_number(arg, 1, 3600ULL * 1000 * 1000, &v))
			return -1;
		j.lock_cap_ns = v * 1000;
		return 0;
	}
	return -1;
}

static int sj_ready(struct lord_main *m)
{
	j.cpus = m->cpus;
	j.nr_cpus = m->nr_cpus;
	/* 0: the module's default starve_ms, 1000 (lord_main's --help says so too) */
	unsigned long long starve_ns = (m->sched_opts.lord.starve_ms ?: 1000) * 1000000ull;

	m->tick_ns = j.slice_ns / 4;	/* finds tasks over their slice */
	j.slice_cap_ns = SJ_SLICE_CAP_NS < starve_ns / 8 ? SJ_SLICE_CAP_NS : starve_ns / 8;
	if (j.slice_cap_ns < j.slice_ns)
		j.slice_cap_ns = j.slice_ns;	/* --slice-us is the user's to choose */
	m->sched_opts.flags |= COS_SCHED_F_HINTS;
	m->wake_rules = COS_WAKE_IDLE;		/* see the top comment */
	if (!j.default_class)
		j.default_class = j.classes > 1 ? 2 : 1;
	return j.slice_ns && j.default_class >= 1 && j.default_class <= j.classes ? 0 : -1;
}

static void sj_banner(FILE *out)
{
	fprintf(out, ", slice %llu us, %u classes (default %u), latch %u", j.slice_ns / 1000,
		j.classes, j.default_class, j.latch);
}

int main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "slice-us", required_argument, NULL, 's' },
		{ "classes", required_argument, NULL, 'C' },
		{ "default-class", required_argument, NULL, 'D' },
		{ "latch", required_argument, NULL, 'L' },
		{ "fixed-slice", no_argument, NULL, 'F' },
		{ "lock-cap-us", required_argument, NULL, 'K' },
		{ NULL, 0, NULL, 0 },
	};
	static struct lord_main m;
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "shinjuku",
		.task_runnable = sj_runnable,
		.task_preempted = sj_preempted,
		.task_yield = sj_yield,
		.task_blocked = sj_blocked,
		.schedule = sj_schedule,
		.task_data_size = sizeof(struct sj_task),
		.ctx = &j,
	};
	const char *scale = getenv("COS_TIME_SCALE");

	j.slice_ns = 30000ull * (scale && atoi(scale) > 0 ? atoi(scale) : 1);
	j.classes = 3;
	j.latch = 1;
	m.prog = "cos-shinjuku";
	m.about = "The Shinjuku lord: a preemptive FIFO per request class.  A COS task that held its CPU\n"
		  "longer than the slice yields it to the next waiting task of its class; a task of a more\n"
		  "urgent class (lower number, from the app hint, see cos_hint_set) preempts at once; a\n"
		  "task in a critical section (COS_HINT_F_CRITICAL) is not preempted, nor one holding a\n"
		  "hinted lock for up to --lock-cap-us, and one whose preemption left a task it then\n"
		  "woke blocked meanwhile (a lock) gets longer slices.";
	m.own_usage =
		"  -s, --slice-us N     preemption slice in us (default 30 x COS_TIME_SCALE), or 4 of\n"
		"                       the lord's round trips as measured while it runs if longer:\n"
		"                       a preemption must pay for the two switches it costs\n"
		"      --fixed-slice    use --slice-us as it is, however long a round trip takes\n"
		"      --classes N      request classes, 1 (most urgent) to N (default 3, at most 8)\n"
		"      --default-class N  class of a task without a hint (default 2)\n"
		"      --latch N        latch up to N waiting tasks behind each busy CPU's task (0-4,\n"
		"                       default 1): it starts there when that task blocks, with no\n"
		"                       round trip to the lord\n"
		"      --lock-cap-us N  a task holding a hinted lock (cos_mutex, libcos-lock.so) is\n"
		"                       not preempted for N us from when the lord first finds it\n"
		"                       holding one (default 4 slices; at least 1)\n";
	m.own_short = "s:";
	m.own_long = own;
	m.parse = sj_parse;
	m.ready = sj_ready;
	m.stats = sj_stats;
	m.banner = sj_banner;
	return lord_main(argc, argv, &policy, &m);
}
