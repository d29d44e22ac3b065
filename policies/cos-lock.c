// SPDX-License-Identifier: GPL-2.0
/*
 * cos-lock.c — the lock-aware lord: a FIFO in turns (as cos-fifo) that reads the lock hints
 * (struct cos_hint: nr_locks, lock_wait; written by cos_mutex and by libcos-lock.so for an
 * unmodified program) so that a lock's owner and its waiters are not the scheduler's victims.
 * See docs/writing-a-policy.md.
 *
 * - An owner (a task holding a hinted lock, or in a critical section) is not preempted at the
 *   end of its turn.  Its reprieve is capped (--cap-us, 4 turns: the lock-handoff reference's
 *   20 ms against 5), counted from when the lord first finds it holding, which no re-placement
 *   renews, and at most the cap of the CPU's turn (a chain of handoffs among owners is one
 *   turn): no owner keeps a CPU for ever.  The lord wakes when a spared owner's cap ends.
 * - An owner that lost its CPU anyway (to the kernel, or past its cap) runs first: its waiters
 *   could only block behind it.
 * - A waiter (lock_wait set: woken by the lock's release, or taken off its CPU before it got
 *   the lock) runs next, before the tasks that merely queued: one woken by a COS task with no
 *   CPU free takes its waker's CPU (a handoff), unless the waker holds a lock itself.  The releaser then cannot take the lock back before the
 *   waiter that the kernel woke for it runs: that barging is what lets one waiter starve.
 * - Every wait is bounded: a task queued longer than --max-wait-us goes before all others and
 *   takes the CPU of the task that has run longest (spared owners excepted).  A waiter's wait
 *   counts from when it began (struct cos_hint's lock_waits tells one wait from the next), not
 *   from its last queueing: one the lock escapes turn after turn is overdue all the same.
 *   Together with the cap, a task waits for a CPU at most the bound and, while others are
 *   overdue before it, their turns (each at most the cap).  The bound is one turn by default:
 *   with many more tasks than CPUs every task reaches it, and the CPU goes round by age (a
 *   task that merely woke waits no longer behind the owners and waiters than that).
 *
 * What a lord cannot do: it reads a hint a round trip before its shoot lands, so a handoff
 * aimed between two critical sections often lands inside the next one (glibc's mutex lets the
 * releaser take it back first), and the waiter blocks again.  COS_LOCK_HANDOFF=1 in the
 * workload's environment closes that gap from the app's side: a contended unlock yields its
 * CPU, and the wake rule COS_WAKE_HANDOFF has the kernel start the waiter that unlock woke on
 * that CPU at once, while the lock is free, with no round trip.
 *
 * Wake rules COS_WAKE_IDLE (unless --no-wake-rules): while no task waits, a waking task starts
 * on a free CPU with no round trip; the rules above matter only when CPUs are short.  And
 * COS_WAKE_HANDOFF (unless --no-handoff or --no-wake-rules), above; COS_WAKE_HANDOFF_BLOCK
 * (also unless --no-block-handoff): a task that blocks right after a wake-up (a condition
 * variable's signal and wait, a pipe's write and read) leaves its CPU to the task it woke,
 * with no round trip.  Neither waits for the lord's order: the lord takes the CPU back at the
 * end of the turn, or for an overdue task, and a handoff does not start a new turn (a chain of
 * them is one turn of the CPU).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lord_main.h"

#define LK_SLICE_NS	(5ULL * 1000 * 1000)	/* a turn while others wait (the reference's) */
#define LK_CAP_TURNS	4	/* an owner's reprieve: 4 turns (20 ms against 5) */
#define LK_LOOKUP_POLL_NS	(1000 * 1000)	/* lk_resort() */

struct lockpol {
	struct cos_taskq first;		/* owners (at the head) and woken waiters, before ... */
	struct cos_taskq runq;		/* ... the tasks that queued, in arrival order */
	const int *cpus;		/* the enclave (struct lord_main's) */
	int nr_cpus;
	unsigned long long slice_ns;	/* --slice-us */
	unsigned long long cap_ns;	/* --cap-us */
	unsigned long long max_wait_ns;	/* --max-wait-us */
	bool no_handoff;		/* --no-handoff */
	bool no_block_handoff;		/* --no-block-handoff */
	unsigned long long turn_at[LORD_MAX_CPUS];	/* when the CPU's turn began (lord_turn()) */
	unsigned long long runnable, turns, spared, capped, handoffs, bounded, owners, waiters;
	unsigned long long unknown, resorted;	/* lk_queue(), lk_resort() */
	unsigned int nr_unsorted;	/* run queue tasks whose record is being looked up (at most) */
};

/* Per task (the framework's task data). */
struct lk_task {
	unsigned long long lock_seen;	/* when the lord first found it holding; 0: holding
					 * nothing when last looked at */
	unsigned long long queued_at;	/* when it last entered a queue; a waiter: when its
					 * wait began (wait_since) */
	unsigned long long wait_since;	/* when the lord first found its wait (lock_waits) */
	unsigned long long wait_count;	/* that wait's lock_waits; 0: none known */
	struct cos_task *waker;		/* a woken waiter's waker (and its gen), else NULL */
	unsigned int waker_gen;
	bool unsorted;			/* woken, in the run queue, its record being looked up */
};

/*
 * @t's hint, or a zeroed one (no record: no locks, no wait).  Returns whether the record is
 * still being looked up (-EAGAIN: a new task's, for the first milliseconds).
 */
static bool lk_hint(struct cos_sched *s, struct cos_task *t, struct cos_hint *h)
{
	int err = cos_sched_task_hint(s, t, h);

	if (err)
		*h = (struct cos_hint){ 0 };
	return err == -EAGAIN;
}

static bool lk_holds(const struct cos_hint *h)
{
	return h->nr_locks || (h->flags & COS_HINT_F_CRITICAL);
}

/*
 * Whether @t (hint @h; @unknown: still being looked up) is an owner within its reprieve.  Its
 * cap counts from the first look that found it holding, until a look finds it holding nothing.
 * A task whose record is still being looked up counts as holding: the cap bounds that too, and
 * an owner is not preempted for a lookup that was slower than its turn.
 */
static bool lk_spared(const struct lockpol *l, struct lk_task *lt, const struct cos_hint *h,
		      bool unknown, unsigned long long now)
{
	if (!lk_holds(h) && !unknown) {
		lt->lock_seen = 0;
		return false;
	}
	if (!lt->lock_seen)
		lt->lock_seen = now;
	return now - lt->lock_seen < l->cap_ns;
}

/*
 * File @t, queued since @since, by its hint @h (@unknown: still being looked up): an owner at
 * the head of the first queue (before its waiters), a waiter (woken, or preempted before it
 * got its lock) at its tail, any other task at the tail of the run queue.  A preempted task
 * whose record is still being looked up (the first milliseconds of a task) is taken for an
 * owner; a woken one waits in the run queue until lk_resort() finds its record.  @waker and
 * @waker_gen: who woke it (NULL: not woken by a COS task).
 */
static void lk_file(struct lockpol *l, struct cos_task *t, const struct cos_hint *h, bool unknown,
		    bool woken, struct cos_task *waker, unsigned int waker_gen,
		    unsigned long long since, unsigned long long now)
{
	struct lk_task *lt = t->data;

	lt->queued_at = since;
	lt->waker = NULL;
	lt->unsorted = false;
	if (lk_holds(h) || (unknown && !woken)) {
		lk_spared(l, lt, h, unknown, now);	/* starts its cap if this is the first look */
		l->owners++;
		cos_taskq_push_head(&l->first, t);
		return;
	}
	lt->lock_seen = 0;
	/*
	 * On its way to a lock: woken by its release, or taken off its CPU (or out of a handoff)
	 * before it got it.  Behind the runq it would lose its turn at the lock again.
	 */
	if (h->lock_wait) {
		/*
		 * Aged from when its wait began, not from this turn's: a waiter that the releaser
		 * or another waiter beats to the lock again and again reaches the bound all the
		 * same.  The same count of waits means it has not had the lock in between.
		 */
		if (!h->lock_waits || h->lock_waits != lt->wait_count) {
			lt->wait_count = h->lock_waits;
			lt->wait_since = since;
		}
		lt->queued_at = lt->wait_since;
		lt->waker = woken ? waker : NULL;
		lt->waker_gen = waker_gen;
		l->waiters++;
		cos_taskq_push(&l->first, t);
		return;
	}
	if (unknown) {
		lt->unsorted = true;
		lt->waker = waker;
		lt->waker_gen = waker_gen;
		l->nr_unsorted++;
	}
	cos_taskq_push(&l->runq, t);
}

/* Into a queue, by the hint as it is now (lk_file()). */
static void lk_queue(struct cos_sched *s, struct cos_task *t, bool woken)
{
	struct lockpol *l = cos_sched_policy_ctx(s);
	unsigned long long now = cos_now_ns();
	struct cos_task *waker = woken ? t->waker : NULL;
	struct cos_hint h;
	bool unknown = lk_hint(s, t, &h);

	if (unknown)
		l->unknown++;
	lk_file(l, t, &h, unknown, woken, waker, waker ? waker->gen : 0, now, now);
}

/*
 * The tasks woken while their record was being looked up wait in the run queue, as tasks
 * that merely woke; once a record is found, an owner or a waiter among them moves to the first
 * queue, with its waker (a handoff) and its age, as if it had been found at once.  A lookup
 * takes the finder milliseconds (a new thread) to tens of them (a new process under load):
 * the lord looks again every LK_LOOKUP_POLL_NS while one is under way.
 */
static void lk_resort(struct cos_sched *s, struct lockpol *l, unsigned long long now)
{
	unsigned int left = 0;
	struct cos_task *t, *next;

	if (!l->nr_unsorted)
		return;
	for (t = l->runq.head; t; t = next) {
		struct lk_task *lt = t->data;
		struct cos_hint h;

		next = t->q_next;
		if (!lt->unsorted)
			continue;
		if (lk_hint(s, t, &h)) {
			left++;
			continue;
		}
		lt->unsorted = false;
		if (!lk_holds(&h) && !h.lock_wait)
			continue;
		cos_taskq_remove(t);
		l->resorted++;
		lk_file(l, t, &h, false, true, lt->waker, lt->waker_gen, lt->queued_at, now);
	}
	l->nr_unsorted = left;	/* the others left the run queue meanwhile */
	if (left)
		cos_sched_wake_at(s, now + LK_LOOKUP_POLL_NS);
}

static void lk_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct lockpol *l = cos_sched_policy_ctx(s);

	l->runnable++;
	lk_queue(s, t, true);
}

static void lk_requeue(struct cos_sched *s, struct cos_task *t)
{
	lk_queue(s, t, false);
}

static void lk_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	lk_queue(s, t, false);
}

/*
 * The task allowed on @cpu that waited past the bound, the longest waiting first, else NULL:
 * the run queue's first (arrival order), or one in the first queue (owners go to its head).
 */
static struct cos_task *lk_overdue(struct cos_sched *s, struct lockpol *l, int cpu,
				   unsigned long long now)
{
	struct cos_task *best = cos_sched_first_for(s, &l->runq, cpu), *t;
	unsigned long long since;

	since = best ? ((struct lk_task *)best->data)->queued_at : now;
	for (t = l->first.head; t; t = t->q_next) {
		unsigned long long at = ((struct lk_task *)t->data)->queued_at;

		if (at < since && cos_sched_task_may_run(s, t, cpu)) {
			best = t;
			since = at;
		}
	}
	return best && now - since >= l->max_wait_ns ? best : NULL;
}

/* When the longest waiting task reaches the bound (0: none waits). */
static unsigned long long lk_due(const struct lockpol *l)
{
	unsigned long long at = 0;
	const struct cos_task *t = l->runq.head;

	if (t)
		at = ((const struct lk_task *)t->data)->queued_at;
	for (t = l->first.head; t; t = t->q_next) {
		unsigned long long q = ((const struct lk_task *)t->data)->queued_at;

		if (!at || q < at)
			at = q;
	}
	return at ? at + l->max_wait_ns : 0;
}

/* The task to run next on @cpu: one overdue, else the first queue's, else the run queue's. */
static struct cos_task *lk_next(struct cos_sched *s, struct lockpol *l, int cpu,
				unsigned long long now, bool *overdue)
{
	struct cos_task *t = lk_overdue(s, l, cpu, now);

	*overdue = t;
	if (!t)
		t = cos_sched_first_for(s, &l->first, cpu);
	if (!t)
		t = cos_sched_first_for(s, &l->runq, cpu);
	return t;
}

/*
 * A woken waiter with no free CPU takes its waker's, unless the waker holds a lock (then it
 * is an owner at work, and the waiter waits its turn in the first queue).
 */
static void lk_handoffs(struct cos_sched *s, struct lockpol *l)
{
	struct cos_task *t, *next;

	for (t = l->first.head; t; t = next) {
		struct lk_task *lt = t->data;
		struct cos_task *w = lt->waker;
		struct cos_hint h;

		next = t->q_next;
		if (!w || w->gen != lt->waker_gen || cos_sched_cpu_task(s, w->cpu) != w ||
		    !cos_sched_task_may_run(s, t, w->cpu))
			continue;
		lk_hint(s, t, &h);
		if (!h.lock_wait)
			continue;	/* an owner, or a waiter that got its lock meanwhile */
		lk_hint(s, w, &h);
		if (lk_holds(&h))
			continue;
		if (cos_sched_place(s, t, w->cpu, 0) == 0)	/* the waker's turn goes on */
			l->handoffs++;
	}
}

/* Place @t on @cpu: a new turn there. */
static int lk_place(struct cos_sched *s, struct lockpol *l, struct cos_task *t, int cpu)
{
	int err = cos_sched_place(s, t, cpu, 0);

	if (!err)
		l->turn_at[cpu] = cos_now_ns();
	return err;
}

/*
 * Idle CPUs first; then handoffs; then, while tasks wait, the CPUs whose task had its turn
 * (the tick, a quarter turn, brings the lord here) or must make room for an overdue task.
 */
static void lk_schedule(struct cos_sched *s)
{
	struct lockpol *l = cos_sched_policy_ctx(s);
	unsigned long long now = cos_now_ns(), due;
	bool overdue;

	lk_resort(s, l, now);
	for (int i = 0; i < l->nr_cpus; i++) {
		int cpu = l->cpus[i];
		struct cos_task *t;

		if (cos_sched_cpu_task(s, cpu))
			continue;
		t = lk_next(s, l, cpu, now, &overdue);
		if (t)
			lk_place(s, l, t, cpu);
	}
	if (!l->no_handoff && l->first.head)
		lk_handoffs(s, l);
	for (int i = 0; i < l->nr_cpus && (l->first.head || l->runq.head); i++) {
		int cpu = l->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu), *t;
		unsigned long long turn;
		struct lk_task *ct;
		struct cos_hint h;
		bool over, held, unknown;

		if (!cur)
			continue;
		ct = cur->data;
		unknown = lk_hint(s, cur, &h);
		held = lk_holds(&h) || unknown;
		turn = lord_turn(&l->turn_at[cpu], cur);
		/*
		 * An owner within its cap keeps the CPU, unless the turn it continues (a chain of
		 * handoffs from owner to owner, each with a cap of its own) is past the cap.
		 */
		if (lk_spared(l, ct, &h, unknown, now) && now - turn < l->cap_ns) {
			l->spared++;
			cos_sched_wake_at(s, ct->lock_seen + l->cap_ns < turn + l->cap_ns ?
					  ct->lock_seen + l->cap_ns : turn + l->cap_ns);
			continue;
		}
		over = now - turn >= l->slice_ns;
		t = lk_next(s, l, cpu, now, &overdue);
		/* an overdue task waits a quarter turn for one just placed (no ping-pong) */
		if (!t || (!over && !(overdue && now - turn >= l->slice_ns / 4)))
			continue;
		if (lk_place(s, l, t, cpu))
			continue;
		if (overdue)
			l->bounded++;
		else if (held)
			l->capped++;
		else
			l->turns++;
	}
	/* the longest waiting task's bound, if it must wake the lord before the tick */
	due = lk_due(l);
	if (due > now)
		cos_sched_wake_at(s, due);
}

static void lk_stats(struct cos_sched *s, struct lord_stats *st)
{
	struct lockpol *l = cos_sched_policy_ctx(s);

	lord_stat(st, "runnable", l->runnable);
	lord_stat(st, "owners-first", l->owners);
	lord_stat(st, "waiters-first", l->waiters);
	lord_stat(st, "handoffs", l->handoffs);
	lord_stat(st, "turns", l->turns);
	lord_stat(st, "spared", l->spared);
	lord_stat(st, "capped", l->capped);
	lord_stat(st, "bounded", l->bounded);
	lord_stat(st, "unknown", l->unknown);
	lord_stat(st, "resorted", l->resorted);
	lord_stat(st, "queued-first", l->first.len);
	lord_stat(st, "queued", l->runq.len);
}

static struct lockpol l = { .slice_ns = LK_SLICE_NS };

static int lk_parse(int opt, const char *arg)
{
	unsigned long long v;

	if (opt == 'H' || opt == 'B') {
		*(opt == 'H' ? &l.no_handoff : &l.no_block_handoff) = true;
		return 0;
	}
	if (lord_number(arg, 1, 3600ULL * 1000 * 1000, &v))
		return -1;
	switch (opt) {
	case 's': l.slice_ns = v * 1000; return 0;
	case 'C': l.cap_ns = v * 1000; return 0;
	case 'W': l.max_wait_ns = v * 1000; return 0;
	default: return -1;
	}
}

static int lk_ready(struct lord_main *lm)
{
	l.cpus = lm->cpus;
	l.nr_cpus = lm->nr_cpus;
	if (!l.cap_ns)
		l.cap_ns = LK_CAP_TURNS * l.slice_ns;
	if (!l.max_wait_ns)
		l.max_wait_ns = l.slice_ns;	/* one turn: see the top comment */
	/* the top comment */
	lm->wake_rules = COS_WAKE_IDLE;
	if (!l.no_handoff)
		lm->wake_rules |= COS_WAKE_HANDOFF | (l.no_block_handoff ? 0 : COS_WAKE_HANDOFF_BLOCK);
	lm->wake_slice_ns = 0;			/* turns are the lord's */
	lm->tick_ns = l.slice_ns / 4;		/* while tasks wait: finds turns that are over */
	lm->sched_opts.flags |= COS_SCHED_F_HINTS;
	return 0;
}

static void lk_banner(FILE *out)
{
	fprintf(out, ", turn %llu us, owner cap %llu us, max wait %llu us%s", l.slice_ns / 1000,
		l.cap_ns / 1000, l.max_wait_ns / 1000, l.no_handoff ? ", no handoff" :
		l.no_block_handoff ? ", no handoff at a block" : "");
}

int main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "slice-us", required_argument, NULL, 's' },
		{ "cap-us", required_argument, NULL, 'C' },
		{ "max-wait-us", required_argument, NULL, 'W' },
		{ "no-handoff", no_argument, NULL, 'H' },
		{ "no-block-handoff", no_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "lock",
		.task_runnable = lk_runnable,
		.task_preempted = lk_preempted,
		.task_yield = lk_requeue,
		.schedule = lk_schedule,
		.task_data_size = sizeof(struct lk_task),
		.ctx = &l,
	};
	static struct lord_main m;

	m.prog = "cos-lock";
	m.about = "The lock-aware lord: a FIFO in turns that reads the lock hints (cos_mutex, or any\n"
		  "pthread mutex under LD_PRELOAD=libcos-lock.so).  A lock's owner keeps its CPU past\n"
		  "its turn, up to a cap; an owner that lost its CPU runs first, then the waiters its\n"
		  "unlock woke (on the releaser's CPU when none is free); no task waits past a bound.\n"
		  "Run workloads with COS_LOCK_HANDOFF=1 too: a contended unlock then yields its CPU\n"
		  "and the kernel starts the waiter it woke there at once, which a lord alone cannot\n"
		  "time.";
	m.own_usage =
		"  -s, --slice-us N     a task's turn while others wait (default 5000)\n"
		"      --cap-us N       an owner keeps its CPU at most N us from when the lord first\n"
		"                       finds it holding a lock (default 4 turns)\n"
		"      --max-wait-us N  a task queued this long goes first and takes the CPU of the\n"
		"                       task that has run longest, owners within their cap excepted\n"
		"                       (default: one turn)\n"
		"      --no-handoff     a woken waiter waits for a free CPU instead of taking its\n"
		"                       releaser's (neither the lord's handoff nor the kernel's at\n"
		"                       a yield or a block)\n"
		"      --no-block-handoff  a task that blocks leaves its CPU to the lord, not to\n"
		"                       the task it woke last (COS_WAKE_HANDOFF_BLOCK off)\n";
	m.own_short = "s:";
	m.own_long = own;
	m.parse = lk_parse;
	m.ready = lk_ready;
	m.stats = lk_stats;
	m.banner = lk_banner;
	return lord_main(argc, argv, &policy, &m);
}
