// SPDX-License-Identifier: GPL-2.0
/*
 * cos-lcbe.c — latency-critical over best-effort: a latency-critical (LC) task that wakes runs
 * at once, on a free CPU or in place of a best-effort (BE) task; BE tasks share what LC leaves,
 * in short slices.  See docs/writing-a-policy.md.
 *
 * - A task is LC if its class (the app hint's hint_class, or its cgroup's trusted.cos.class,
 *   which cos-oci-hook writes from io.cos.class) is at most --lc-class (default 1); every other
 *   task is BE, a task with no class too unless --default-lc.  A task's first wake-ups, while
 *   the lord still looks for its hints, count as its class's default.
 * - LC tasks run in arrival order, each until it blocks: no slice.  One that finds no free CPU
 *   takes the CPU of the BE task that has run longest; the BE task goes back to the head of its
 *   queue (it lost its turn to no fault of its own).  After its first placement the kernel does
 *   that itself at the task's wake-ups, with no round trip: the lord marks LC tasks urgent
 *   (cos_task.urgent) and asks for the wake rules COS_WAKE_PREEMPT and COS_WAKE_NEXT (unless
 *   --no-wake-preempt): the first starts a waking urgent task in place of a running task that
 *   is not urgent; the second queues it next behind a running urgent one, so that it starts
 *   when that one blocks.
 * - BE tasks run in arrival order, each for --be-slice-us (200) at a time: a kernel slice, so
 *   the turn ends with no round trip, and the next BE task is latched behind each busy CPU's
 *   task (COS_SHOOT_F_LATCH), so the CPU starts it itself.  A BE task nobody waits for gets no
 *   slice: it runs on until a task waits.
 * - The floor: LC gets at most 100 - --be-floor percent (default 10) of the enclave's CPU time
 *   over the last --window-ms (100) while BE tasks wait (queued, or latched).  Past that line an
 *   LC task waits as a BE task does, with BE slices and without preempting (the lord turns
 *   COS_WAKE_PREEMPT, and with it COS_WAKE_NEXT, off meanwhile), until LC's share falls half
 *   the floor under it (so BE gets about 1-1.5 times its floor while LC would take it all).
 *   cpu.max composes: the kernel throttles a group's tasks whatever their class
 *   (TASK_THROTTLED), and the floor counts the time that ran.
 *
 * Wake rule COS_WAKE_IDLE (unless --no-wake-rules): while no task waits, a waking task starts at
 * once on a free CPU, as this lord would start it; with the BE slice as the kernel's slice, which
 * an LC task's short work does not reach (one that does comes back PREEMPTED and runs again).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lord_main.h"

#define LB_BE_SLICE_NS	(200ULL * 1000)		/* the reference's BE timeslice */
#define LB_WINDOW_NS	(100ULL * 1000 * 1000)
#define LB_BUCKETS	10			/* the window, in buckets of LC time */

struct lcbe {
	struct cos_taskq lc, be;	/* waiting, in arrival order */
	const int *cpus;		/* the enclave (struct lord_main's) */
	int nr_cpus;
	unsigned int lc_class;		/* --lc-class: classes 1..lc_class are LC */
	bool default_lc;		/* --default-lc */
	unsigned long long be_slice_ns;	/* --be-slice-us */
	unsigned int be_floor;		/* --be-floor, percent */
	unsigned long long window_ns;	/* --window-ms */
	unsigned long long bucket_ns[LB_BUCKETS];	/* LC time that ended in each bucket */
	unsigned long long bucket_start;		/* when the current bucket began */
	unsigned int bucket;				/* the current one */
	bool floored;			/* LC over its share while BE waits: LC waits as BE */
	bool no_wake_preempt;		/* --no-wake-preempt */
	const struct lord_main *lm;	/* its wake rules, as lord_main settled them */
	/* be_lost: BE tasks that lost their CPU to LC back here (not resumed by the kernel) */
	/* lc_marked: LC tasks found unmarked in a latch and marked (lb_mark_latched()) */
	unsigned long long lc_runnable, be_runnable, lc_preempts, be_lost, be_turns, latched,
		floored_wakes, floor_hits, lc_marked;
};

/* Per task (the framework's task data). */
struct lb_task {
	bool lc;			/* its class, as of its last wake-up */
	bool unsliced;			/* placed by this lord with no slice, since it last stopped */
	unsigned long long slice_ns;	/* the slice of its last placement (0: none) */
	unsigned long long left_ns;	/* what an LC task left it of that, for its next (0: all) */
};

/* Is @t latency-critical?  Its hint's class, or its cgroup's; the default without either. */
static bool lb_is_lc(struct cos_sched *s, const struct lcbe *l, struct cos_task *t)
{
	struct cos_hint h;

	if (cos_sched_task_hint(s, t, &h) || !h.hint_class)
		return l->default_lc;
	return h.hint_class <= l->lc_class;
}

/* Roll the window's buckets forward to @now (an event older than the current bucket: none). */
static void lb_roll(struct lcbe *l, unsigned long long now)
{
	unsigned long long len = l->window_ns / LB_BUCKETS;

	if (now <= l->bucket_start)
		return;

	for (int i = 0; i < LB_BUCKETS && now - l->bucket_start >= len; i++) {
		l->bucket = (l->bucket + 1) % LB_BUCKETS;
		l->bucket_ns[l->bucket] = 0;
		l->bucket_start += len;
	}
	if (now - l->bucket_start >= len) {	/* idle for a whole window */
		for (int i = 0; i < LB_BUCKETS; i++)
			l->bucket_ns[i] = 0;
		l->bucket_start = now;
	}
}

/* @t, an LC task, stopped running at @at: its time on the CPU goes into the window. */
static void lb_account(struct lcbe *l, struct cos_task *t, unsigned long long at)
{
	struct lb_task *lt = t->data;

	lt->unsliced = false;
	if (!lt->lc || !t->placed_at || at <= t->placed_at)
		return;
	lb_roll(l, at);
	/* all of it in the current bucket: a run longer than the window counts as the window */
	l->bucket_ns[l->bucket] += at - t->placed_at < l->window_ns ? at - t->placed_at :
								   l->window_ns;
}

/*
 * LC's share of the enclave over the window, in percent: the time of LC runs that ended in it,
 * and of those running now (counted from their start, at most a window).
 */
static unsigned int lb_lc_share(struct cos_sched *s, struct lcbe *l, unsigned long long now)
{
	unsigned long long sum = 0;

	lb_roll(l, now);
	for (int i = 0; i < LB_BUCKETS; i++)
		sum += l->bucket_ns[i];
	for (int i = 0; i < l->nr_cpus; i++) {
		struct cos_task *cur = cos_sched_cpu_task(s, l->cpus[i]);

		if (cur && ((struct lb_task *)cur->data)->lc && cur->placed_at < now)
			sum += now - cur->placed_at < l->window_ns ? now - cur->placed_at :
								    l->window_ns;
	}
	return (unsigned int)(sum * 100 / (l->window_ns * (unsigned long long)l->nr_cpus));
}

/* Does a BE task wait, in the queue or latched behind a CPU's task? */
static bool lb_be_waiting(struct cos_sched *s, const struct lcbe *l)
{
	if (l->be.head)
		return true;
	for (int i = 0; i < l->nr_cpus; i++)
		if (cos_sched_cpu_latched(s, l->cpus[i])->head)
			return true;
	return false;
}

/*
 * Into its queue, its class looked at again (the first looks at a task's hints may come before
 * the lord found them): LC unless the floor holds LC back; at the head if @first.
 */
static void lb_queue(struct cos_sched *s, struct cos_task *t, bool first)
{
	struct lcbe *l = cos_sched_policy_ctx(s);
	struct lb_task *lt = t->data;
	struct cos_taskq *q;

	lt->lc = lb_is_lc(s, l, t);
	q = lt->lc && !l->floored ? &l->lc : &l->be;
	if (lt->lc && l->floored)
		l->floored_wakes++;
	if (first)
		cos_taskq_push_head(q, t);
	else
		cos_taskq_push(q, t);
}

static void lb_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct lcbe *l = cos_sched_policy_ctx(s);
	struct lb_task *lt = t->data;

	lb_queue(s, t, false);
	lt->lc ? l->lc_runnable++ : l->be_runnable++;
}

static void lb_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct lcbe *l = cos_sched_policy_ctx(s);
	struct lb_task *lt = t->data;
	unsigned long long ran = t->event_at > t->placed_at ? t->event_at - t->placed_at : 0;
	struct cos_task *now_there = cos_sched_cpu_task(s, t->cpu);
	bool lost = why == COS_PREEMPT_BY_COS && !lt->lc && !l->floored && now_there &&
		    ((struct lb_task *)now_there->data)->lc;

	lb_account(l, t, t->event_at);
	/*
	 * Its turn is over (its slice) or it yielded: the back; else it lost its CPU: the head.
	 * A BE task an LC task took the CPU from gets the rest of its turn only: LC tasks that
	 * keep taking it must not restart its turn each time, or the BE tasks behind it would
	 * never run.
	 */
	lt->left_ns = lost && lt->slice_ns > ran ? lt->slice_ns - ran : 0;
	l->be_lost += lost;
	lb_queue(s, t, why != COS_PREEMPT_BY_SLICE);
}

static void lb_yield(struct cos_sched *s, struct cos_task *t)
{
	struct lcbe *l = cos_sched_policy_ctx(s);

	lb_account(l, t, t->event_at);
	lb_queue(s, t, false);
}

static void lb_blocked(struct cos_sched *s, struct cos_task *t)
{
	lb_account(cos_sched_policy_ctx(s), t, t->event_at);
}

/*
 * The slice of @t, placed now: none for LC, nor for BE while no other task waits; the rest of
 * its turn for a BE task an LC task took the CPU from.
 */
static unsigned long long lb_slice(const struct lcbe *l, const struct cos_task *t)
{
	unsigned int others = l->be.len + l->lc.len - (t->q ? 1 : 0);
	const struct lb_task *lt = t->data;

	if (lt->lc && !l->floored)
		return 0;
	if (!others)
		return 0;
	return lt->left_ns ?: l->be_slice_ns;
}

/* Place @t on @cpu with its slice (cos_sched_place()'s return). */
static int lb_place(struct cos_sched *s, struct lcbe *l, struct cos_task *t, int cpu)
{
	unsigned long long slice = lb_slice(l, t);
	int err;

	/* the kernel's COS_WAKE_PREEMPT starts it at its next wake-ups as this lord would */
	t->urgent = ((struct lb_task *)t->data)->lc && !l->floored;
	err = cos_sched_place(s, t, cpu, slice);

	if (!err) {
		struct lb_task *lt = t->data;

		lt->unsliced = !slice;
		lt->slice_ns = slice;
		lt->left_ns = 0;
	}
	return err;
}

/*
 * Is @cur, running, LC?  Looked at again while the books say BE: the kernel may have started it
 * since the lord last saw it (its class not found then), and an LC task must be neither
 * displaced nor made to take turns as BE.
 */
static bool lb_running_lc(struct cos_sched *s, const struct lcbe *l, struct cos_task *cur)
{
	struct lb_task *ct = cur->data;

	if (!ct->lc)
		ct->lc = lb_is_lc(s, l, cur);
	return ct->lc;
}

/* The CPU of the BE task that has run longest (not placed in this step), or -1. */
static int lb_victim(struct cos_sched *s, struct lcbe *l, struct cos_task *t)
{
	unsigned long long oldest = ~0ULL;
	int best = -1;

	for (int i = 0; i < l->nr_cpus; i++) {
		int cpu = l->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu);

		if (!cur || lb_running_lc(s, l, cur) || !cos_sched_task_may_run(s, t, cpu))
			continue;
		if (cur->placed_at < oldest) {
			oldest = cur->placed_at;
			best = cpu;
		}
	}
	return best;
}

/*
 * The kernel starts a task with the urgency of the lord's last placement of it, and resumes a
 * displaced one from the latch without the lord: an LC task first placed as BE (its class not
 * found yet) would stay unmarked while the kernel serves it.  One the books show latched is
 * marked now: placed in place of a BE task running there (or on the CPU, if free), else
 * latched again behind the LC task, urgent.
 */
static void lb_mark_latched(struct cos_sched *s, struct lcbe *l, int cpu)
{
	struct cos_task *cur = cos_sched_cpu_task(s, cpu), *t, *next;

	for (t = cos_sched_cpu_latched(s, cpu)->head; t; t = next) {
		next = t->q_next;
		if (t->urgent || !lb_is_lc(s, l, t))
			continue;
		((struct lb_task *)t->data)->lc = true;
		if (!cur || !lb_running_lc(s, l, cur)) {
			if (lb_place(s, l, t, cpu))
				continue;
			cur = t;
		} else {
			t->urgent = true;
			if (cos_sched_latch(s, t, cpu, 0)) {
				t->urgent = false;
				continue;
			}
		}
		l->lc_marked++;
	}
}

/*
 * Free CPUs first, LC before BE; then each LC task still waiting takes a BE task's CPU (not
 * while floored); then the next BE task is latched behind each busy CPU's task.
 */
static void lb_schedule(struct cos_sched *s)
{
	struct lcbe *l = cos_sched_policy_ctx(s);
	unsigned long long now = cos_now_ns();
	struct cos_task *t;

	if (l->be_floor) {
		unsigned int share = lb_lc_share(s, l, now), line = 100 - l->be_floor;
		bool was = l->floored;

		/*
		 * Floored past the line while BE waits, until half the floor under it (BE may
		 * run meanwhile, and LC be on its way back to the queue)
		 */
		l->floored = was ? share + l->be_floor / 2 > line :
				   share > line && lb_be_waiting(s, l);
		l->floor_hits += l->floored && !was;
		if (l->floored != was && (l->lm->wake_rules & COS_WAKE_PREEMPT))
			cos_sched_set_wake_rules(s, l->floored ? l->lm->wake_rules & ~COS_WAKE_PREEMPT :
					      l->lm->wake_rules, l->lm->wake_slice_ns);
		if (l->floored && !was) {	/* LC waiting now waits as BE, behind those waiting */
			while ((t = cos_taskq_pop(&l->lc)))
				cos_taskq_push(&l->be, t);
		} else if (was && !l->floored) {	/* and back, in the order they wait */
			struct cos_task *next;

			for (t = l->be.head; t; t = next) {
				next = t->q_next;
				if (((struct lb_task *)t->data)->lc) {
					cos_taskq_remove(t);
					cos_taskq_push(&l->lc, t);
				}
			}
		}
	}
	if (!l->floored)
		for (int i = 0; i < l->nr_cpus; i++)
			lb_mark_latched(s, l, l->cpus[i]);
	for (int i = 0; i < l->nr_cpus; i++) {
		int cpu = l->cpus[i];

		if (cos_sched_cpu_task(s, cpu))
			continue;
		t = cos_sched_first_for(s, &l->lc, cpu);
		if (!t)
			t = cos_sched_first_for(s, &l->be, cpu);
		if (t)
			lb_place(s, l, t, cpu);
	}
	while ((t = l->lc.head)) {
		int cpu = lb_victim(s, l, t);

		if (cpu < 0 || lb_place(s, l, t, cpu))
			break;
		l->lc_preempts++;
	}
	for (int i = 0; i < l->nr_cpus; i++) {
		int cpu = l->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu);
		const struct cos_taskq *latched = cos_sched_cpu_latched(s, cpu);
		struct lb_task *ct;

		if (!cur)
			continue;
		ct = cur->data;
		t = latched->head ?: cos_sched_first_for(s, &l->be, cpu);	/* latched: longer */
		if (!t)
			continue;
		/* placed with no slice while nobody waited: its turn ends here, from the lord */
		if (ct->unsliced && (!lb_running_lc(s, l, cur) || l->floored)) {
			if (now - cur->placed_at < l->be_slice_ns)
				cos_sched_wake_at(s, cur->placed_at + l->be_slice_ns);
			else if (lb_place(s, l, t, cpu) == 0)
				l->be_turns++;
			continue;
		}
		/*
		 * Only a BE task: a latched task's placed_at is its latch, not its start, and the
		 * floor would count an LC task's wait in the latch as LC time.
		 */
		if (latched->len || ((struct lb_task *)t->data)->lc)
			continue;
		t->urgent = false;
		if (cos_sched_latch(s, t, cpu, l->be_slice_ns) == 0)
			l->latched++;
	}
}

static void lb_stats(struct cos_sched *s, struct lord_stats *st)
{
	struct lcbe *l = cos_sched_policy_ctx(s);

	lord_stat(st, "lc-runnable", l->lc_runnable);
	lord_stat(st, "be-runnable", l->be_runnable);
	lord_stat(st, "lc-preempts", l->lc_preempts);
	lord_stat(st, "be-lost", l->be_lost);
	lord_stat(st, "be-turns", l->be_turns);
	lord_stat(st, "latched", l->latched);
	lord_stat(st, "lc-marked", l->lc_marked);
	lord_stat(st, "floor-hits", l->floor_hits);
	lord_stat(st, "floored-wakes", l->floored_wakes);
	lord_stat(st, "lc-share-pct", lb_lc_share(s, l, cos_now_ns()));
	lord_stat(st, "queued-lc", l->lc.len);
	lord_stat(st, "queued-be", l->be.len);
}

static struct lcbe l = {
	.lc_class = 1, .be_slice_ns = LB_BE_SLICE_NS, .be_floor = 10, .window_ns = LB_WINDOW_NS,
};

/* A whole number in [@min, @max] from @arg, or -1. */
static int lb_parse(int opt, const char *arg)
{
	unsigned long long v;

	switch (opt) {
	case 'D':
		l.default_lc = true;
		return 0;
	case 'P':
		l.no_wake_preempt = true;
		return 0;
	case 'c':
		if (lord_number(arg, 1, COS_HINT_CLASS_MAX, &v))
			return -1;
		l.lc_class = (unsigned int)v;
		return 0;
	case 's':
		if (lord_number(arg, 10, 1000 * 1000, &v))
			return -1;
		l.be_slice_ns = v * 1000;
		return 0;
	case 'f':
		if (lord_number(arg, 0, 99, &v))
			return -1;
		l.be_floor = (unsigned int)v;
		return 0;
	case 'w':
		if (lord_number(arg, 10, 10000, &v))
			return -1;
		l.window_ns = v * 1000 * 1000;
		return 0;
	}
	return -1;
}

static int lb_ready(struct lord_main *lm)
{
	l.cpus = lm->cpus;
	l.nr_cpus = lm->nr_cpus;
	l.bucket_start = cos_now_ns();
	l.lm = lm;
	lm->wake_rules = COS_WAKE_IDLE;	/* the top comment */
	if (!l.no_wake_preempt)
		lm->wake_rules |= COS_WAKE_PREEMPT | COS_WAKE_NEXT;
	lm->wake_slice_ns = l.be_slice_ns;
	lm->tick_ns = l.window_ns / LB_BUCKETS;	/* the floor's window moves on */
	lm->sched_opts.flags |= COS_SCHED_F_HINTS;
	return 0;
}

static void lb_banner(FILE *out)
{
	fprintf(out, ", LC: class 1-%u%s, BE slice %llu us, BE floor %u %% of %llu ms", l.lc_class,
		l.default_lc ? " and none" : "", l.be_slice_ns / 1000, l.be_floor,
		l.window_ns / 1000000);
}

int main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "lc-class", required_argument, NULL, 'c' },
		{ "default-lc", no_argument, NULL, 'D' },
		{ "be-slice-us", required_argument, NULL, 's' },
		{ "be-floor", required_argument, NULL, 'f' },
		{ "window-ms", required_argument, NULL, 'w' },
		{ "no-wake-preempt", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "lcbe",
		.task_runnable = lb_runnable,
		.task_preempted = lb_preempted,
		.task_yield = lb_yield,
		.task_blocked = lb_blocked,
		.schedule = lb_schedule,
		.task_data_size = sizeof(struct lb_task),
		.ctx = &l,
	};
	static struct lord_main m;

	m.prog = "cos-lcbe";
	m.about = "Latency-critical over best-effort: a latency-critical (LC) task that wakes runs at\n"
		  "once, on a free CPU or in place of a best-effort (BE) task; BE tasks share what LC\n"
		  "leaves in short slices, and keep a floor of the CPU time while they wait.  Classes\n"
		  "come from app hints (cosctl run --policy-class N) or the cgroup's\n"
		  "trusted.cos.class (io.cos.class for containers).";
	m.own_usage =
		"  -c, --lc-class N     classes 1..N are latency-critical (default 1)\n"
		"      --default-lc     a task without a class is LC (default: BE)\n"
		"  -s, --be-slice-us N  a BE task's turn while others wait (10-1000000, default 200)\n"
		"      --be-floor PCT   BE keeps PCT % of the enclave's CPU time while it waits: past\n"
		"                       100 - PCT % LC waits as BE does (0-99, default 10; 0: none)\n"
		"      --window-ms N    the floor's window (10-10000, default 100)\n"
		"      --no-wake-preempt  an LC task that wakes with no CPU free waits for this lord\n"
		"                       to displace a BE task or to follow an LC one, not the kernel\n"
		"                       (COS_WAKE_PREEMPT and COS_WAKE_NEXT off)\n";
	m.own_short = "c:s:";
	m.own_long = own;
	m.parse = lb_parse;
	m.ready = lb_ready;
	m.stats = lb_stats;
	m.banner = lb_banner;
	return lord_main(argc, argv, &policy, &m);
}
