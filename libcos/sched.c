// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * sched.c — the policy framework: cos_sched_run() turns the lord's messages into policy
 * callbacks, commits the policy's placements and keeps the per-task and per-CPU books.
 * See docs/writing-a-policy.md, "The framework".
 *
 * Books.  tasks[slot] mirrors the kernel's task table as far as the messages told (identity =
 * slot + generation); cpus[cpu] is a CPU (struct sched_cpu): its task, running or placed there,
 * and the tasks latched behind it, in the kernel's order.  A CPU becomes free on the next message
 * that says its task left, or passes to the first latched task.  A task a kthread preempted and
 * the kernel latched back (COS_PREEMPT_F_LATCHED) stays its CPU's task, QUEUED (resuming); a
 * task placed there meanwhile runs first and the kernel keeps the other latched first, with no
 * message: the books move it to the head of the CPU's latch, or it would never be placed again.
 * A waking urgent task the kernel queued next on a CPU (COS_PLACED_F_NEXT) goes to the head
 * of its latch likewise, and a task an urgent one displaced (COS_PREEMPT_BY_COS with
 * COS_PREEMPT_F_LATCHED) behind that one if it is still there (queued_next), else to the head.
 * A message with a newer generation than the slot's means a reuse was missed (only after an
 * overflow): the old task is reported dead, the new one new.  An older generation is ignored.
 *
 * Resync (OVERFLOW or LORD_STALL): every known task is reported dead, the books are cleared,
 * and the status table is read back.  Policies need no resync code of their own.
 *
 * The kernel is reached through struct cos_backend (internal.h): the real one (sched_lord.c)
 * wraps cos_lord_*; the unit tests replay a recorded trace through a fake one.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * One CPU in the books, and the placement on it that the current step commits (place(),
 * commit()).
 */
struct sched_cpu {
	struct cos_task *task;		/* running or placed here */
	struct cos_task *resuming;	/* task, latched back, not started */
	struct cos_taskq latched;	/* tasks latched behind task */
	struct cos_task *placing;	/* placed in the current step */
	struct cos_taskq *placing_from;	/* the latch a re-placed task left */
	unsigned long long placing_slice;	/* its slice (for the recent events) */
	bool placing_latch;		/* that placement is a latch */
};

struct cos_sched {
	const struct cos_policy *policy;
	const struct cos_backend *be;
	void *b;
	/*
	 * Decision records (cos_trace.h, trace.c), beside what every step reads.  trace_want is
	 * the ring a reader asked for, set by any thread under trace_lock; the lord thread
	 * compares it with trace, lock-free, at each step, and adopts it under trace_lock
	 * (trace_adopt()).  trace is the lord thread's: written only under trace_lock, read by
	 * other threads only under it.
	 */
	struct cos_trace *trace_want;
	struct cos_trace *trace;
	unsigned int reason;		/* cos_sched_reason(): for the next placement */
	struct cos_lord *lord;		/* NULL with a fake backend */
	int gone;			/* the module's answer that ended the loop (lord_gone()) */
	unsigned int max_tasks, nr_cpus;
	int lord_cpu;
	cpu_set_t enclave;
	cpu_set_t offline;		/* CPUs the module said went offline (COS_MSG_CPU_OFFLINE) */
	struct cos_task *tasks;		/* [max_tasks]; state COS_TASK_FREE = unknown */
	unsigned int *by_pid;		/* [pid_mask + 1]: slot + 1 of each live task by pid (0: empty),
					 * open addressing, linear probing (pid_add(), pid_find()) */
	unsigned int pid_mask;
	cpu_set_t *allowed;		/* [max_tasks] */
	char *data;			/* [max_tasks * task_data_size] */
	struct sched_cpu *cpus;		/* [nr_cpus] */
	bool *queued_next;		/* [max_tasks]: latched by COS_WAKE_NEXT, no news since */
	struct learn_key *order;	/* [max_tasks]: learn()'s and trace_books()' sorting */
	int nr_placing;
	unsigned int nr_waiting;	/* tasks in COS_TASK_WAITING (task_set_state()) */
	unsigned long long wake_placed;	/* COS_MSG_TASK_PLACED handled */
	unsigned long long wake_handoffs;	/* of those, with COS_PLACED_F_HANDOFF */
	unsigned long long wake_preempts;	/* of those, with COS_PLACED_F_PREEMPT */
	unsigned long long wake_nexts;	/* TASK_PLACED with COS_PLACED_F_NEXT (not started) */
	unsigned long long refused[COS_SHOOT_OTHER_ENCLAVE + 1];	/* st.failed by COS_SHOOT_* status */
	/*
	 * Bandwidth: the group (cgroup id) a task waits for since COS_MSG_TASK_THROTTLED, 0 if
	 * none.  Such a task is booked BLOCKED (the policy saw task_blocked) until its group's
	 * COS_MSG_GROUP_UNTHROTTLED gives it back as runnable: policies need no code for it.
	 */
	unsigned long long *throttled_on;	/* [max_tasks] */
	unsigned int nr_throttled;		/* entries of throttled_on that are set */
	unsigned long long not_started;	/* COS_MSG_SHOOT_FAILED handled */
	unsigned long long stale;	/* COS_MSG_SHOOT_STALE handled */
	unsigned long long tick_ns, spin_ns, last_tick;
	unsigned long long wake_at;	/* cos_sched_wake_at() this step, 0 = none */
	unsigned int flags;
	volatile sig_atomic_t stop;
	volatile sig_atomic_t stats_req;
	struct cos_sched_stats st;
	struct cos_hint_cache *hints;	/* made at the first cos_sched_task_hint() */
	bool signals;			/* COS_SCHED_F_SIGNALS handlers installed */
	struct sigaction old_int, old_term, old_usr1;
	/* the last COS_SCHED_RECENT messages and shoots, for a bug report (cos_sched_recent()) */
	struct cos_sched_event recent[COS_SCHED_RECENT];
	unsigned long long nr_recent;	/* recorded so far: the next goes to [nr_recent % N] */
	pthread_mutex_t trace_lock;	/* guards trace_want; see trace below */
	char name[COS_ENCLAVE_NAME_LEN];	/* the enclave's ("" if none) */
};

/* A waiting task and where it goes in the order the policy learns the waiting ones. */
struct learn_key {
	unsigned long long key, key2;
	unsigned int slot;
	unsigned int rank;		/* trace_books(): its place in the order, from 1 */
};

static int learn_key_cmp(const void *a, const void *b)
{
	const struct learn_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->key2 != y->key2)
		return x->key2 < y->key2 ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* ---------------------------------------------------------------- task queues */

COS_EXPORT void cos_taskq_push(struct cos_taskq *q, struct cos_task *t)
{
	cos_taskq_remove(t);
	t->q = q;
	t->q_next = NULL;
	t->q_prev = q->tail;
	if (q->tail)
		q->tail->q_next = t;
	else
		q->head = t;
	q->tail = t;
	q->len++;
}

COS_EXPORT void cos_taskq_push_head(struct cos_taskq *q, struct cos_task *t)
{
	cos_taskq_remove(t);
	t->q = q;
	t->q_prev = NULL;
	t->q_next = q->head;
	if (q->head)
		q->head->q_prev = t;
	else
		q->tail = t;
	q->head = t;
	q->len++;
}

COS_EXPORT void cos_taskq_remove(struct cos_task *t)
{
	struct cos_taskq *q = t->q;

	if (!q)
		return;
	if (t->q_prev)
		t->q_prev->q_next = t->q_next;
	else
		q->head = t->q_next;
	if (t->q_next)
		t->q_next->q_prev = t->q_prev;
	else
		q->tail = t->q_prev;
	q->len--;
	t->q = NULL;
	t->q_next = t->q_prev = NULL;
}

COS_EXPORT struct cos_task *cos_taskq_pop(struct cos_taskq *q)
{
	struct cos_task *t = q->head;

	if (t)
		cos_taskq_remove(t);
	return t;
}

/* ---------------------------------------------------------------- books */

COS_EXPORT unsigned long long cos_now_ns(void)
{
	struct timespec ts;
	unsigned long long now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;

	/* recorded in a traced step, or the recording's in a replay (internal.h) */
	if (__builtin_expect(cos_clock_hook != NULL, 0) && !cos_clock_observing)
		return cos_clock_hook->now(cos_clock_hook, now);
	return now;
}

/* ---------------------------------------------------------------- decision records */

/* The records of what the framework read from the kernel: a replay gives them back. */
static void trace_status(struct cos_sched *s, unsigned int type, unsigned int slot, int ret,
			 const struct cos_task_status *ts)
{
	struct cos_trace_status *r = cos_trace_put(s->trace, type, 0, cos_clock_real());

	if (r) {
		r->slot = slot;
		r->ret = ret;
		r->st = *ts;
	}
}

static void trace_affinity(struct cos_sched *s, int pid, int ret, const cpu_set_t *set)
{
	struct cos_trace_affinity *r = cos_trace_put(s->trace, COS_TREC_AFFINITY, 0,
						     cos_clock_real());

	if (!r)
		return;
	r->pid = pid;
	r->ret = ret;
	for (unsigned int cpu = 0; cpu < COS_TRACE_CPU_WORDS * 64 && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set))
			r->cpus[cpu / 64] |= 1ull << (cpu % 64);
}

/*
 * The waiting tasks into s->order, in slot order, each with its rank (from 1) in the order of
 * the policy's queues: place in its queue, then since when runnable.  How many.
 */
static unsigned int books_rank_waiting(struct cos_sched *s)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->max_tasks; i++) {
		const struct cos_task *t = &s->tasks[i];
		unsigned long long pos = 0;

		if (t->state != COS_TASK_WAITING)
			continue;
		if (t->q)
			for (const struct cos_task *p = t->q_prev; p && pos < s->max_tasks; p = p->q_prev)
				pos++;
		s->order[n++] = (struct learn_key){ .key = pos, .key2 = t->runnable_at, .slot = i };
	}
	qsort(s->order, n, sizeof(*s->order), learn_key_cmp);
	for (unsigned int k = 0; k < n; k++)	/* its rank, then back in slot order */
		s->order[k] = (struct learn_key){ .key = 0, .key2 = 0, .slot = s->order[k].slot,
						  .rank = k + 1 };
	qsort(s->order, n, sizeof(*s->order), learn_key_cmp);
	return n;
}

/*
 * What the lord knew when the recording began, which a replay learns first: each task (its
 * state, CPU, when it was placed and became runnable) and its allowed CPUs.  Not the offline
 * CPUs, nor which tasks were latched or throttled: a replay may differ until those have changed.
 *
 * The waiting tasks' st.last_seq gives their order as the policy's queues held them (place in
 * its queue, then since when runnable): learn() hands them to the replayed policy in that
 * order, as it hands a kernel's table in the order of its messages, so each of the policy's
 * queues is rebuilt as it was, whatever the slots.
 */
static bool trace_books(struct cos_sched *s)
{
	unsigned int n = books_rank_waiting(s);

	for (unsigned int i = 0, k = 0; i < s->max_tasks; i++) {
		const struct cos_task *t = &s->tasks[i];
		struct cos_task_status ts = { .gen = t->gen, .state = t->state, .pid = (__u32)t->pid,
					      .cpu = (__u32)t->cpu };
		struct cos_trace_status *r;

		if (t->state == COS_TASK_FREE)
			continue;
		if (k < n && s->order[k].slot == i)
			ts.last_seq = s->order[k++].rank;
		r = cos_trace_put(s->trace, COS_TREC_BOOK, 0, cos_clock_real());
		if (r) {
			r->slot = i;
			r->st = ts;
			r->placed_at = t->placed_at;
			r->runnable_at = t->runnable_at;
		}
		trace_affinity(s, t->pid, 0, &s->allowed[i]);
	}
	s->trace->hdr->last_tick_ns = s->last_tick;
	s->trace->booked = true;
	return true;
}

/* Take the ring a reader asked for, or let go of the one that ended (the lord thread). */
static void trace_adopt(struct cos_sched *s)
{
	struct cos_trace *old;

	pthread_mutex_lock(&s->trace_lock);
	old = s->trace;
	s->trace = s->trace_want;
	pthread_mutex_unlock(&s->trace_lock);
	if (old != s->trace)
		cos_trace_free(old);
}

COS_EXPORT int cos_sched_trace_start(struct cos_sched *s, size_t ring_bytes, const char *args)
{
	struct cos_trace_header *h;
	struct cos_trace *t;
	int fd, err;

	pthread_mutex_lock(&s->trace_lock);
	if (s->trace_want) {
		pthread_mutex_unlock(&s->trace_lock);
		return cos_fail(-EBUSY, "this lord is recording already (one reader at a time)");
	}
	err = cos_trace_new(&t, ring_bytes, &fd);
	if (err) {
		pthread_mutex_unlock(&s->trace_lock);
		return err;
	}
	h = t->hdr;
	h->lord_pid = getpid();
	h->lord_cpu = s->lord_cpu;
	h->nr_cpus = s->nr_cpus;
	h->max_tasks = s->max_tasks;
	h->tick_ns = s->tick_ns;
	for (unsigned int cpu = 0; cpu < COS_TRACE_CPU_WORDS * 64 && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &s->enclave))
			h->enclave_cpus[cpu / 64] |= 1ull << (cpu % 64);
	snprintf(h->enclave, sizeof(h->enclave), "%s",
		 s->name[0] ? s->name : program_invocation_short_name);
	snprintf(h->policy, sizeof(h->policy), "%s", program_invocation_short_name);
	snprintf(h->args, sizeof(h->args), "%s", args ? args : "");
	__atomic_store_n(&s->trace_want, t, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->trace_lock);
	return fd;
}

COS_EXPORT void cos_sched_trace_stop(struct cos_sched *s)
{
	pthread_mutex_lock(&s->trace_lock);
	if (s->trace_want != s->trace)
		cos_trace_free(s->trace_want);	/* never adopted: nobody else has it */
	__atomic_store_n(&s->trace_want, NULL, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->trace_lock);
}

COS_EXPORT void cos_sched_reason(struct cos_sched *s, unsigned int reason)
{
	s->reason = reason;
}

/* Every change of a known task's state goes through here: it keeps nr_waiting. */
static void task_set_state(struct cos_sched *s, struct cos_task *t, unsigned int state)
{
	if (t->state == COS_TASK_WAITING)
		s->nr_waiting--;
	if (state == COS_TASK_WAITING)
		s->nr_waiting++;
	t->state = state;
}

/* Is @t in a CPU's latch (the books')?  The only queues in s->cpus are the latches. */
static bool task_latched(const struct cos_sched *s, const struct cos_task *t)
{
	const char *q = (const char *)t->q;

	return q >= (const char *)s->cpus && q < (const char *)(s->cpus + s->nr_cpus);
}

/* @t (NULL: none) holds @cpu in the books now: the CPU's latched-back task, if any, does not. */
static void cpu_book(struct cos_sched *s, unsigned int cpu, struct cos_task *t)
{
	s->cpus[cpu].task = t;
	s->cpus[cpu].resuming = NULL;
}

/* @t left its CPU: the first task latched there (if any) runs there now. */
static void release_cpu(struct cos_sched *s, struct cos_task *t)
{
	struct cos_task *next;

	if (t->cpu < 0 || (unsigned int)t->cpu >= s->nr_cpus || s->cpus[t->cpu].task != t)
		return;
	next = cos_taskq_pop(&s->cpus[t->cpu].latched);
	cpu_book(s, t->cpu, next);
	if (next) {
		s->queued_next[next->slot] = false;
		next->placed_at = cos_now_ns();	/* it starts now: a slice counts from here */
		next->placed_by = COS_PLACED_BY_LORD;
	}
}

static void refresh_affinity(struct cos_sched *s, struct cos_task *t)
{
	cpu_set_t *set = &s->allowed[t->slot];
	int ret = s->be->affinity(s->b, t->pid, set);

	if (ret)
		CPU_ZERO(set);	/* gone: it dies soon, and may run nowhere meanwhile */
	if (s->trace)
		trace_affinity(s, t->pid, ret, set);
}

/* The pid index: a message's waker is a thread id, the books are by slot. */
static unsigned int pid_home(const struct cos_sched *s, int pid)
{
	return ((unsigned int)pid * 2654435761u) & s->pid_mask;
}

static void pid_add(struct cos_sched *s, const struct cos_task *t)
{
	unsigned int i = pid_home(s, t->pid);

	while (s->by_pid[i])	/* never full: twice the slots */
		i = (i + 1) & s->pid_mask;
	s->by_pid[i] = t->slot + 1;
}

/* Remove @t's entry, moving up the entries after it that probed past it (no tombstones). */
static void pid_del(struct cos_sched *s, const struct cos_task *t)
{
	unsigned int i = pid_home(s, t->pid), j;

	while (s->by_pid[i] && s->by_pid[i] != t->slot + 1)
		i = (i + 1) & s->pid_mask;
	if (!s->by_pid[i])
		return;
	for (j = (i + 1) & s->pid_mask; s->by_pid[j]; j = (j + 1) & s->pid_mask) {
		unsigned int h = pid_home(s, s->tasks[s->by_pid[j] - 1].pid);

		/* the entry at j may fill the hole at i if its home is not in (i, j] */
		if (((j - h) & s->pid_mask) >= ((j - i) & s->pid_mask)) {
			s->by_pid[i] = s->by_pid[j];
			i = j;
		}
	}
	s->by_pid[i] = 0;
}

static struct cos_task *pid_find(struct cos_sched *s, int pid)
{
	for (unsigned int i = pid_home(s, pid); pid > 0 && s->by_pid[i]; i = (i + 1) & s->pid_mask) {
		struct cos_task *t = &s->tasks[s->by_pid[i] - 1];

		if (t->pid == pid)
			return t;
	}
	return NULL;
}

static struct cos_task *task_new(struct cos_sched *s, unsigned int slot, unsigned int gen,
				 int pid, int cpu)
{
	struct cos_task *t = &s->tasks[slot];

	memset(t, 0, sizeof(*t));	/* FREE before: not counted as waiting */
	s->queued_next[slot] = false;
	t->slot = slot;
	t->gen = gen;
	t->pid = pid;
	t->cpu = cpu;
	task_set_state(s, t, COS_TASK_BLOCKED);
	pid_add(s, t);
	if (s->policy->task_data_size) {
		t->data = s->data + (size_t)slot * s->policy->task_data_size;
		memset(t->data, 0, s->policy->task_data_size);
	}
	refresh_affinity(s, t);
	s->st.tasks++;
	if (s->policy->task_new)
		s->policy->task_new(s, t);
	return t;
}

/* @t no longer waits for a throttled group (any message about it says where it is now). */
static void task_unthrottle(struct cos_sched *s, struct cos_task *t)
{
	if (s->throttled_on[t->slot]) {
		s->throttled_on[t->slot] = 0;
		s->nr_throttled--;
	}
}

static void task_dead(struct cos_sched *s, struct cos_task *t)
{
	task_unthrottle(s, t);
	release_cpu(s, t);
	cos_taskq_remove(t);
	task_set_state(s, t, COS_TASK_BLOCKED);	/* not waiting: it cannot be placed from the callback */
	if (s->policy->task_dead)
		s->policy->task_dead(s, t);
	cos_taskq_remove(t);
	cos_hint_cache_forget(s->hints, t->slot);
	pid_del(s, t);
	task_set_state(s, t, COS_TASK_FREE);
	s->st.tasks--;
}

static void make_runnable(struct cos_sched *s, struct cos_task *t, unsigned int type,
			  unsigned long long arg, unsigned long long ts)
{
	release_cpu(s, t);
	cos_taskq_remove(t);		/* a latched one leaves the latch */
	task_set_state(s, t, COS_TASK_WAITING);
	t->runnable_at = ts;
	if (type == COS_MSG_TASK_PREEMPTED && s->policy->task_preempted)
		s->policy->task_preempted(s, t, (unsigned int)arg);
	else if (type == COS_MSG_TASK_YIELD && s->policy->task_yield)
		s->policy->task_yield(s, t);
	else if (s->policy->task_runnable)
		s->policy->task_runnable(s, t);
}

/*
 * Learn every live task from the status table (the books are empty).  The waiting ones go to
 * the policy in the order of their last messages (st.last_seq), the order in which they
 * became runnable, not in slot order: a policy's queue starts as the kernel saw it fill.
 */
static void learn(struct cos_sched *s)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->max_tasks; i++) {
		struct cos_task_status ts;
		struct cos_task *t;

		int ret = s->be->task_status(s->b, i, &ts);

		if (s->trace && !ret && ts.state != COS_TASK_FREE)
			trace_status(s, COS_TREC_STATUS, i, ret, &ts);
		if (ret || ts.state == COS_TASK_FREE)
			continue;
		t = task_new(s, i, ts.gen, ts.pid, ts.cpu);
		if (ts.state == COS_TASK_WAITING) {
			s->order[n++] = (struct learn_key){ .key = ts.last_seq, .slot = i };
		} else if ((ts.state == COS_TASK_QUEUED || ts.state == COS_TASK_RUNNING) &&
			   ts.cpu < s->nr_cpus) {
			task_set_state(s, t, ts.state);
			/* a queued task behind another: latched (the table does not say) */
			if (ts.state == COS_TASK_QUEUED && s->cpus[ts.cpu].task)
				cos_taskq_push(&s->cpus[ts.cpu].latched, t);
			else
				s->cpus[ts.cpu].task = t;
		}
	}
	qsort(s->order, n, sizeof(*s->order), learn_key_cmp);
	for (unsigned int k = 0; k < n; k++)
		make_runnable(s, &s->tasks[s->order[k].slot], COS_MSG_TASK_RUNNABLE, 0, cos_now_ns());
}

/* Forget everything and learn it again. */
static void resync(struct cos_sched *s)
{
	s->st.resyncs++;
	for (unsigned int i = 0; i < s->max_tasks; i++)
		if (s->tasks[i].state != COS_TASK_FREE)
			task_dead(s, &s->tasks[i]);
	for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++)
		cpu_book(s, cpu, NULL);		/* latches: emptied by task_dead */
	memset(s->queued_next, 0, s->max_tasks * sizeof(*s->queued_next));
	learn(s);
}

/* The task a message is about, creating or replacing the slot's entry as its gen says. */
static struct cos_task *msg_task(struct cos_sched *s, const struct cos_msg *m)
{
	struct cos_task *t;

	if (m->slot >= s->max_tasks)
		return NULL;
	t = &s->tasks[m->slot];
	if (t->state != COS_TASK_FREE && t->gen == m->gen)
		return t;
	/*
	 * An older generation: a message the status table had already overtaken when a resync
	 * read it (they stay in the ring after OVERFLOW).  Ignore it.
	 */
	if (t->state != COS_TASK_FREE && (int)(m->gen - t->gen) < 0)
		return NULL;
	if (t->state != COS_TASK_FREE)
		task_dead(s, t);		/* its DEAD was lost in an overflow */
	if (m->type == COS_MSG_TASK_DEAD)
		return NULL;
	return task_new(s, m->slot, m->gen, m->pid, m->cpu);
}

/*
 * COS_WAKE_NEXT queued waking @t at the head of @cpu's latch, behind the urgent task running
 * there (COS_PLACED_F_NEXT): booked latched there, first.  It starts when that task leaves
 * (release_cpu()), or, should the books not show that task, its TASK_RUNNING books it.
 */
static void task_placed_next(struct cos_sched *s, struct cos_task *t, unsigned int cpu)
{
	release_cpu(s, t);
	cos_taskq_remove(t);
	task_set_state(s, t, COS_TASK_QUEUED);
	t->cpu = (int)cpu;
	s->wake_nexts++;
	if (cpu < s->nr_cpus) {
		cos_taskq_push_head(&s->cpus[cpu].latched, t);
		s->queued_next[t->slot] = true;
	}
}

/*
 * @t, preempted on @cpu, resumes there from the latch (COS_PREEMPT_F_LATCHED): at the head;
 * displaced by an urgent task (@displaced), behind the task COS_WAKE_NEXT queued at the head,
 * if one is, as the kernel puts it.
 */
static void latch_resumed(struct cos_sched *s, unsigned int cpu, struct cos_task *t,
			  bool displaced)
{
	struct cos_taskq *q = &s->cpus[cpu].latched;
	struct cos_task *head = q->head;

	cos_taskq_remove(t);
	if (!displaced || !head || !s->queued_next[head->slot]) {
		cos_taskq_push_head(q, t);
		return;
	}
	/* behind the head: pop it, put @t first, the head back before it */
	cos_taskq_pop(q);
	cos_taskq_push_head(q, t);
	cos_taskq_push_head(q, head);
}

/*
 * The kernel started @t on a free CPU by the wake rules (COS_MSG_TASK_PLACED): booked as if the
 * policy had placed it there.  Unless the policy placed another task on that CPU after the
 * message was posted: that shoot preempts @t (or failed), and @t's next message says which.
 * A task the books still show on the CPU left it before @t came (its message is on its way and
 * will not free the CPU: release_cpu() checks whose it is).
 */
static void task_placed(struct cos_sched *s, struct cos_task *t, const struct cos_msg *m)
{
	unsigned int cpu = (unsigned int)m->arg;
	struct cos_task *cur;

	if (m->arg & COS_PLACED_F_NEXT) {
		task_placed_next(s, t, cpu);
		return;
	}
	release_cpu(s, t);
	cos_taskq_remove(t);
	task_set_state(s, t, COS_TASK_QUEUED);
	t->cpu = (int)cpu;
	t->placed_at = m->ts;
	t->placed_by = m->arg & COS_PLACED_F_HANDOFF ? COS_PLACED_BY_HANDOFF :
		       m->arg & COS_PLACED_F_PREEMPT ? COS_PLACED_BY_PREEMPT : COS_PLACED_BY_RULE;
	s->wake_placed++;
	s->wake_handoffs += !!(m->arg & COS_PLACED_F_HANDOFF);
	s->wake_preempts += !!(m->arg & COS_PLACED_F_PREEMPT);
	if (cpu >= s->nr_cpus)
		return;
	cur = s->cpus[cpu].task;
	if (cur && cur != t && cur->state == COS_TASK_QUEUED && cur->placed_at > m->ts)
		return;
	cpu_book(s, cpu, t);
}

/* Group @gid has budget again: its tasks are runnable, for the policy to place. */
static void group_unthrottled(struct cos_sched *s, unsigned long long gid, unsigned long long ts)
{
	for (unsigned int i = 0; i < s->max_tasks && s->nr_throttled; i++) {
		struct cos_task *t = &s->tasks[i];

		if (s->throttled_on[i] != gid)
			continue;
		task_unthrottle(s, t);
		if (t->state == COS_TASK_BLOCKED)
			make_runnable(s, t, COS_MSG_TASK_RUNNABLE, 0, ts);
	}
}

/* Keep @ev among the recent events (the oldest goes). */
static void record(struct cos_sched *s, const struct cos_sched_event *ev)
{
	s->recent[s->nr_recent++ % COS_SCHED_RECENT] = *ev;
}

/* Keep message @m among the recent events. */
static void record_msg(struct cos_sched *s, const struct cos_msg *m)
{
	record(s, &(struct cos_sched_event){ .ts = m->ts, .kind = COS_SCHED_EV_MSG,
		.type = m->type, .slot = m->slot, .gen = m->gen, .pid = m->pid, .cpu = m->cpu,
		.arg = m->arg });
}

/* A message about the enclave or the lord, not a task: the books it changes.  Whether it was. */
static bool msg_enclave(struct cos_sched *s, const struct cos_msg *m)
{
	switch (m->type) {
	case COS_MSG_LORD_STALL:
		s->st.stalls++;
		resync(s);
		return true;
	case COS_MSG_OVERFLOW:
		resync(s);
		return true;
	case COS_MSG_CPU_OFFLINE:	/* no task places there until it is back */
		if (m->arg < CPU_SETSIZE)
			CPU_SET(m->arg, &s->offline);
		return true;
	case COS_MSG_CPU_ONLINE:
		if (m->arg < CPU_SETSIZE)
			CPU_CLR(m->arg, &s->offline);
		return true;
	case COS_MSG_GROUP_THROTTLED:	/* its tasks' TASK_THROTTLED follow */
		return true;
	case COS_MSG_GROUP_UNTHROTTLED:
		group_unthrottled(s, m->arg, m->ts);
		return true;
	}
	return false;
}

/* What any message about @t says: it is not throttled nor queued next, who woke it, when. */
static void msg_task_news(struct cos_sched *s, struct cos_task *t, const struct cos_msg *m)
{
	task_unthrottle(s, t);
	s->queued_next[t->slot] = false;	/* news of it: the kernel's queued-next mark is gone */
	t->waker = m->type == COS_MSG_TASK_RUNNABLE && m->waker ? pid_find(s, (int)m->waker) : NULL;
	t->event_at = m->ts;
}

/* COS_MSG_TASK_NEW: msg_task() reported it; RUNNABLE follows if it waits. */
static void msg_task_new(struct cos_sched *s, struct cos_task *t)
{
	if (s->flags & COS_SCHED_F_HINTS) {
		struct cos_hint h;

		cos_sched_task_hint(s, t, &h);	/* the finder starts looking now */
	}
}

/*
 * COS_MSG_TASK_RUNNABLE, TASK_YIELD, SHOOT_FAILED, SHOOT_STALE, and a TASK_PREEMPTED not
 * latched back: @t waits for a CPU, for the policy to place.
 */
static void msg_task_waits(struct cos_sched *s, struct cos_task *t, const struct cos_msg *m)
{
	s->not_started += m->type == COS_MSG_SHOOT_FAILED;
	s->stale += m->type == COS_MSG_SHOOT_STALE;
	release_cpu(s, t);
	t->cpu = m->cpu;
	make_runnable(s, t, m->type, m->arg, m->ts);
}

/*
 * COS_MSG_TASK_PREEMPTED: latched back on its CPU (COS_PREEMPT_F_LATCHED), @t resumes there,
 * first, or still as the CPU's task; otherwise it waits.
 */
static void msg_task_preempted(struct cos_sched *s, struct cos_task *t, const struct cos_msg *m)
{
	if (!(m->arg & COS_PREEMPT_F_LATCHED) || m->cpu >= s->nr_cpus) {
		msg_task_waits(s, t, m);
		return;
	}
	if (s->cpus[m->cpu].task != t) {
		release_cpu(s, t);
		latch_resumed(s, m->cpu, t, (m->arg & ~(unsigned long long)COS_PREEMPT_F_LATCHED) ==
			      COS_PREEMPT_BY_COS);
	} else {
		s->cpus[m->cpu].resuming = t;	/* unless a task is placed first */
	}
	task_set_state(s, t, COS_TASK_QUEUED);
	t->cpu = m->cpu;
}

/*
 * COS_MSG_TASK_BLOCKED, and TASK_THROTTLED: @t waits in the kernel for its group (@m->arg),
 * blocked for the policy.
 */
static void msg_task_blocked(struct cos_sched *s, struct cos_task *t, const struct cos_msg *m)
{
	if (m->type == COS_MSG_TASK_THROTTLED) {
		s->throttled_on[t->slot] = m->arg;
		s->nr_throttled++;
	}
	release_cpu(s, t);
	cos_taskq_remove(t);
	task_set_state(s, t, COS_TASK_BLOCKED);
	t->cpu = m->cpu;
	if (s->policy->task_blocked)
		s->policy->task_blocked(s, t);
}

/* COS_MSG_TASK_AFFINITY: @t's allowed CPUs changed. */
static void msg_task_affinity(struct cos_sched *s, struct cos_task *t)
{
	refresh_affinity(s, t);
	if (s->policy->task_affinity)
		s->policy->task_affinity(s, t);
}

/*
 * COS_MSG_TASK_RUNNING: @t started.  A latched one started before the books saw its CPU free
 * (not after a lost message): it holds the CPU now, unless a task was placed there after it
 * started.
 */
static void msg_task_running(struct cos_sched *s, struct cos_task *t, const struct cos_msg *m)
{
	struct sched_cpu *c;
	struct cos_task *cur;

	if (t->state == COS_TASK_QUEUED)
		task_set_state(s, t, COS_TASK_RUNNING);
	if (m->cpu >= s->nr_cpus)
		return;
	c = &s->cpus[m->cpu];
	if (c->resuming == t)
		c->resuming = NULL;
	if (!task_latched(s, t))
		return;
	cur = c->task;
	cos_taskq_remove(t);
	if (cur && cur != t && cur->state == COS_TASK_QUEUED && cur->placed_at > m->ts)
		return;		/* placed there after it started: that shoot preempts it */
	cpu_book(s, m->cpu, t);
	t->placed_at = m->ts;
	t->placed_by = COS_PLACED_BY_LORD;
}

/* One message: what it is about, then the books its type changes. */
static void handle(struct cos_sched *s, const struct cos_msg *m)
{
	struct cos_task *t;

	record_msg(s, m);
	s->st.messages++;
	if (msg_enclave(s, m))
		return;
	t = msg_task(s, m);
	if (!t)
		return;
	msg_task_news(s, t, m);
	switch (m->type) {
	case COS_MSG_TASK_NEW:
		msg_task_new(s, t);
		break;
	case COS_MSG_TASK_PREEMPTED:
		msg_task_preempted(s, t, m);
		break;
	case COS_MSG_TASK_RUNNABLE:
	case COS_MSG_TASK_YIELD:
	case COS_MSG_SHOOT_FAILED:
	case COS_MSG_SHOOT_STALE:
		msg_task_waits(s, t, m);
		break;
	case COS_MSG_TASK_THROTTLED:
	case COS_MSG_TASK_BLOCKED:
		msg_task_blocked(s, t, m);
		break;
	case COS_MSG_TASK_DEAD:
		task_dead(s, t);
		break;
	case COS_MSG_TASK_AFFINITY:
		msg_task_affinity(s, t);
		break;
	case COS_MSG_TASK_RUNNING:
		msg_task_running(s, t, m);
		break;
	case COS_MSG_TASK_PLACED:
		task_placed(s, t, m);
		break;
	}
}

/* ---------------------------------------------------------------- placing */

/* The record of a placement (@flags: the shoot's) with the policy's reason. */
static void trace_place(struct cos_sched *s, const struct cos_task *t, int cpu,
			unsigned long long slice_ns, unsigned int flags)
{
	struct cos_trace_place *r = cos_trace_put(s->trace, COS_TREC_PLACE, (unsigned int)cpu,
						  cos_clock_real());

	if (r) {
		r->slot = t->slot;
		r->gen = t->gen;
		r->pid = t->pid;
		r->flags = flags;
		r->reason = s->reason;
		r->slice_ns = slice_ns;
	}
}

static int place(struct cos_sched *s, struct cos_task *t, int cpu, unsigned long long slice_ns,
		 bool latch)
{
	bool latched = task_latched(s, t);
	struct sched_cpu *c;
	unsigned int flags;
	int ret;

	if (cpu < 0 || (unsigned int)cpu >= s->nr_cpus ||
	    (!CPU_ISSET(cpu, &s->enclave) && cpu != s->lord_cpu) || CPU_ISSET(cpu, &s->offline) ||
	    (latch && cpu == s->lord_cpu))
		return -EINVAL;
	c = &s->cpus[cpu];
	if (c->placing || (t->state != COS_TASK_WAITING && !latched))
		return -EBUSY;
	if (latch && t->q != &c->latched && c->latched.len >= COS_SHOOT_LATCH_MAX)
		return -ENOSPC;
	if (!CPU_ISSET(cpu, &s->allowed[t->slot]))
		return -EPERM;
	flags = (latch ? COS_SHOOT_F_LATCH : 0) | (t->urgent ? COS_SHOOT_F_URGENT : 0);
	ret = s->be->prepare(s->b, cpu, t->slot, t->gen, slice_ns, flags);
	if (ret)
		return ret == -EOPNOTSUPP ? ret : -EINVAL;
	if (s->trace)
		trace_place(s, t, cpu, slice_ns, flags);
	c->placing_from = latched ? t->q : NULL;
	s->queued_next[t->slot] = false;	/* the lord's now */
	cos_taskq_remove(t);
	task_set_state(s, t, COS_TASK_QUEUED);	/* until the shoot says otherwise */
	c->placing = t;
	c->placing_latch = latch;
	c->placing_slice = slice_ns;
	s->nr_placing++;
	return 0;
}

COS_EXPORT int cos_sched_place(struct cos_sched *s, struct cos_task *t, int cpu,
			       unsigned long long slice_ns)
{
	int ret = place(s, t, cpu, slice_ns, false);

	s->reason = 0;		/* cos_sched_reason() names one placement */
	return ret;
}

COS_EXPORT int cos_sched_latch(struct cos_sched *s, struct cos_task *t, int cpu,
			       unsigned long long slice_ns)
{
	int ret = place(s, t, cpu, slice_ns, true);

	s->reason = 0;
	return ret;
}

COS_EXPORT const struct cos_taskq *cos_sched_cpu_latched(const struct cos_sched *s, int cpu)
{
	static const struct cos_taskq none;

	return cpu >= 0 && (unsigned int)cpu < s->nr_cpus ? &s->cpus[cpu].latched : &none;
}

/*
 * Does the module's answer @err mean this lord is no longer registered, for good?  -EPERM: not
 * the registered lord of its file (declared dead, unregistered); -ENODEV, -ESHUTDOWN: the
 * enclave or the module is going away; -EBADF: its file is gone.  Each ends cos_sched_run():
 * spinning on refused calls helps no task, and a lord that exits is restarted by its unit.
 */
static bool lord_gone(int err)
{
	return err == -EPERM || err == -ENODEV || err == -ESHUTDOWN || err == -EBADF;
}

/* The record and the recent event of the shoot's answer @status for @t on @cpu. */
static void shot_record(struct cos_sched *s, unsigned int cpu, const struct cos_task *t,
			unsigned int status, unsigned long long now)
{
	const struct sched_cpu *c = &s->cpus[cpu];

	if (s->trace) {
		struct cos_trace_shot *r = cos_trace_put(s->trace, COS_TREC_SHOT, cpu, now);

		if (r) {
			r->slot = t->slot;
			r->gen = t->gen;
			r->status = status;
		}
	}
	record(s, &(struct cos_sched_event){ .ts = now, .kind = COS_SCHED_EV_SHOOT,
		.type = status, .slot = t->slot, .gen = t->gen, .pid = t->pid, .cpu = (int)cpu,
		.arg = c->placing_slice, .flags = (c->placing_latch ?
		COS_SHOOT_F_LATCH : 0) | (t->urgent ? COS_SHOOT_F_URGENT : 0) });
}

/* @t was placed on @cpu (COS_SHOOT_OK): it holds the CPU, or is latched behind its task. */
static void shot_placed(struct cos_sched *s, unsigned int cpu, struct cos_task *t,
			unsigned long long now)
{
	struct sched_cpu *c = &s->cpus[cpu];
	struct cos_task *cur;

	s->st.placed++;
	t->cpu = cpu;
	t->placed_at = now;
	t->placed_by = COS_PLACED_BY_LORD;
	if (c->placing_latch && c->task && c->task != t) {
		cos_taskq_push(&c->latched, t);	/* behind what runs there */
		return;
	}
	cur = c->task;
	/* latched back there (no message comes), or preempted (one follows) */
	if (cur && cur != t && c->resuming == cur && cur->state == COS_TASK_QUEUED)
		cos_taskq_push_head(&c->latched, cur);
	else if (cur && cur != t)
		task_set_state(s, cur, COS_TASK_RUNNING);
	cpu_book(s, cpu, t);
}

/*
 * @t was not placed (@status): back to the latch it left (@from, if any) or to the policy, or
 * to wait for the message about it.
 */
static void shot_refused(struct cos_sched *s, struct cos_task *t, struct cos_taskq *from,
			 unsigned int status)
{
	s->st.failed++;
	if (status < sizeof(s->refused) / sizeof(s->refused[0]))
		s->refused[status]++;
	if (from && status == COS_SHOOT_NOT_WAITING) {
		/*
		 * It left that latch: it started there, silently, when the task before it
		 * stopped.  That task's message is on its way; at the head, it books this
		 * one on the CPU.  Booked blocked, it would be lost until its next message.
		 */
		cos_taskq_push_head(from, t);
		return;
	}
	if (from && status != COS_SHOOT_NO_LORD && status != COS_SHOOT_BAD_GEN &&
	    status != COS_SHOOT_BAD_SLOT) {
		cos_taskq_push(from, t);	/* refused: the kernel keeps it latched there */
		return;
	}
	switch (status) {
	case COS_SHOOT_AFFINITY:
		refresh_affinity(s, t);
		/* fall through */
	case COS_SHOOT_BUSY:
	case COS_SHOOT_LATCH_FULL:
	case COS_SHOOT_STALE_SEQ:
	case COS_SHOOT_NO_LORD:
	case COS_SHOOT_EMPTY:
	case COS_SHOOT_BAD_CPU:	/* went offline: CPU_OFFLINE is on its way, no task message */
		/* still waiting: back to the policy */
		task_set_state(s, t, COS_TASK_WAITING);
		if (s->policy->task_runnable)
			s->policy->task_runnable(s, t);
		break;
	default:
		/*
		 * BEHIND / NOT_WAITING: a message about it is on its way and tells what it
		 * does; BAD_GEN / BAD_SLOT: it died (TASK_DEAD follows).
		 */
		task_set_state(s, t, COS_TASK_BLOCKED);
		break;
	}
}

/* Commit this step's placements; failed ones go back to the policy (or wait for a message). */
static void commit(struct cos_sched *s)
{
	struct cos_trace_shoot *shoot = NULL;
	unsigned long long now;
	unsigned int cpu;
	int ret;

	if (!s->nr_placing)
		return;
	if (s->trace && (shoot = cos_trace_put(s->trace, COS_TREC_SHOOT, 0, cos_clock_real())))
		shoot->nr = (unsigned int)s->nr_placing;
	ret = s->be->shoot(s->b);
	s->st.shoot_calls++;
	if (ret < 0 && lord_gone(ret) && !s->gone)
		s->gone = ret;
	now = cos_now_ns();
	if (shoot) {
		shoot->ret = ret;
		shoot->end_ns = now;
	}
	for (cpu = 0; cpu < s->nr_cpus && s->nr_placing; cpu++) {
		struct sched_cpu *c = &s->cpus[cpu];
		struct cos_task *t = c->placing;
		struct cos_taskq *from = c->placing_from;
		unsigned int status;

		if (!t)
			continue;
		c->placing = NULL;
		c->placing_from = NULL;
		s->nr_placing--;
		status = ret < 0 ? COS_SHOOT_NO_LORD : s->be->shoot_status(s->b, cpu);
		shot_record(s, cpu, t, status, now);
		if (status == COS_SHOOT_OK)
			shot_placed(s, cpu, t, now);
		else
			shot_refused(s, t, from, status);
	}
}

/* ---------------------------------------------------------------- the loop */

/* Handle each message the kernel posted, a copy of it (recorded first in a traced step). */
static int handle_messages(struct cos_sched *s)
{
	const struct cos_msg *m;
	int n = 0;

	while ((m = s->be->peek(s->b))) {
		struct cos_msg copy = *m;

		s->be->consume(s->b);
		if (s->trace) {
			struct cos_trace_msg *r = cos_trace_put(s->trace, COS_TREC_MSG, copy.cpu,
								cos_clock_real());

			if (r)
				r->msg = copy;
		}
		handle(s, &copy);
		n++;
	}
	return n;
}

/* The policy's tick, if it has one and one is due; whether it ticked. */
static bool tick(struct cos_sched *s)
{
	unsigned long long now;

	if (!s->tick_ns || !s->policy->tick)
		return false;
	now = cos_now_ns();
	if (now - s->last_tick < s->tick_ns)
		return false;
	s->last_tick = now;
	s->policy->tick(s, now);
	return true;
}

/* One iteration: messages, tick, schedule, commit.  Returns the number of messages handled. */
int cos_sched_step(struct cos_sched *s)
{
	bool ticked, books = false;
	int n, placed;

	if (__atomic_load_n(&s->trace_want, __ATOMIC_RELAXED) != s->trace)
		trace_adopt(s);
	if (s->trace) {
		cos_trace_step_begin(s->trace);
		if (!s->trace->booked)
			books = trace_books(s);
	}
	s->wake_at = 0;		/* the policy asks again in this step if it still needs it */
	s->reason = 0;
	n = handle_messages(s);
	s->be->publish(s->b);
	ticked = tick(s);
	if (s->trace)
		cos_trace_put(s->trace, COS_TREC_SCHEDULE, 0, cos_clock_real());
	s->policy->schedule(s);
	placed = s->nr_placing;
	commit(s);
	/* kept: a step that handled, ticked or decided something, and the first (the books) */
	if (s->trace) {
		cos_trace_step_end(s->trace, n || ticked || placed || books, (unsigned int)n,
				   (unsigned int)placed);
		if (books && s->trace->full)
			s->trace->booked = false;	/* dropped with the step: again */
	}
	return n;
}

static struct cos_sched *signal_target;

static void on_signal(int sig)
{
	if (!signal_target)
		return;
	if (sig == SIGUSR1)
		signal_target->stats_req = 1;
	else
		signal_target->stop = 1;
}

/*
 * COS_SCHED_F_SIGNALS: from creation to destruction, so that a Ctrl-C that comes before (or
 * between) cos_sched_run() calls stops the lord cleanly instead of killing it.
 */
static void signals_install(struct cos_sched *s)
{
	struct sigaction sa = { .sa_handler = on_signal };

	signal_target = s;
	sigemptyset(&sa.sa_mask);	/* no SA_RESTART: COS_IOC_WAIT returns EINTR */
	sigaction(SIGINT, &sa, &s->old_int);
	sigaction(SIGTERM, &sa, &s->old_term);
	sigaction(SIGUSR1, &sa, &s->old_usr1);
	s->signals = true;
}

static void signals_restore(struct cos_sched *s)
{
	if (!s->signals)
		return;
	sigaction(SIGINT, &s->old_int, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
	sigaction(SIGUSR1, &s->old_usr1, NULL);
	signal_target = NULL;
	s->signals = false;
}

/*
 * How long an idle lord blocks.  The tick only while a task waits for a CPU (or is latched
 * behind one): a policy places or preempts only for a waiting task, and a task that becomes
 * runnable posts a message, which ends the wait at once.  Otherwise at most COS_SCHED_IDLE_NS
 * (the statistics tick), so that an idle lord with a short tick does not wake at its rate.
 */
#define COS_SCHED_IDLE_NS	100000000ull

static unsigned long long idle_timeout(const struct cos_sched *s)
{
	unsigned long long t = s->tick_ns ? s->tick_ns : COS_SCHED_IDLE_NS;
	bool latched = false;

	/* a latched task waits too: behind a task the policy may want to preempt for it */
	for (unsigned int c = 0; c < s->nr_cpus && !latched && !s->nr_waiting; c++)
		latched = s->cpus[c].latched.len;
	if (!s->nr_waiting && !latched && t < COS_SCHED_IDLE_NS)
		t = COS_SCHED_IDLE_NS;	/* nothing to tick for: the statistics' period at least */
	if (s->wake_at) {	/* the policy's own deadline, if sooner */
		unsigned long long now = cos_now_ns();

		if (s->wake_at <= now)
			return 1000;	/* passed: at once (1 us, not a spin) */
		if (s->wake_at - now < t)
			t = s->wake_at - now;
	}
	return t;
}

/* The loop's end when the module no longer serves this lord: say what happened. */
static int lord_ended(struct cos_sched *s, const char *call)
{
	return cos_fail(s->gone, "%s: %s: this lord is no longer registered (declared dead, or its "
			"enclave or the module went away); its tasks are under the fair policy",
			call, strerror(-s->gone));
}

COS_EXPORT int cos_sched_run(struct cos_sched *s)
{
	unsigned long long idle_since = cos_now_ns();
	int ret;

	while (!s->stop) {
		unsigned long long placed_before = s->st.placed;
		bool waiting = s->nr_waiting;

		/*
		 * Spin on only after a decision: a placement, or messages while a task waited.  A
		 * stream of messages that ask nothing (a server blocking and waking through the wake
		 * rule) must not keep the lord's CPU busy.
		 */
		if ((cos_sched_step(s) && (waiting || s->nr_waiting)) || s->st.placed != placed_before) {
			if (s->gone)
				return lord_ended(s, "COS_IOC_SHOOT");
			idle_since = cos_now_ns();
			continue;
		}
		if (s->gone)
			return lord_ended(s, "COS_IOC_SHOOT");
		if (cos_now_ns() - idle_since < s->spin_ns)
			continue;
		/* idle: block until a message comes (or the next tick: idle_timeout()) */
		s->st.waits++;
		ret = s->be->wait(s->b, idle_timeout(s));
		if (ret < 0 && lord_gone(ret)) {
			s->gone = ret;
			return lord_ended(s, "COS_IOC_WAIT");
		}
	}
	return 0;
}

COS_EXPORT unsigned long long cos_sched_wake_placed(const struct cos_sched *s)
{
	return s->wake_placed;
}

COS_EXPORT unsigned long long cos_sched_wake_handoffs(const struct cos_sched *s)
{
	return s->wake_handoffs;
}

COS_EXPORT unsigned long long cos_sched_wake_preempts(const struct cos_sched *s)
{
	return s->wake_preempts;
}

COS_EXPORT unsigned long long cos_sched_wake_nexts(const struct cos_sched *s)
{
	return s->wake_nexts;
}

COS_EXPORT unsigned long long cos_sched_hint_bad_tables(const struct cos_sched *s)
{
	return cos_hint_cache_bad_tables(s->hints);
}

COS_EXPORT unsigned long long cos_sched_shoot_failures(const struct cos_sched *s, int status)
{
	if (status == COS_SCHED_NOT_STARTED)
		return s->not_started;
	if (status == COS_SCHED_STALE)
		return s->stale;
	if (status <= COS_SHOOT_OK || status >= (int)(sizeof(s->refused) / sizeof(s->refused[0])))
		return 0;
	return s->refused[status];
}

COS_EXPORT void cos_sched_stop(struct cos_sched *s)
{
	s->stop = 1;
}

COS_EXPORT bool cos_sched_stats_requested(struct cos_sched *s)
{
	if (!s->stats_req)
		return false;
	s->stats_req = 0;
	return true;
}

COS_EXPORT void cos_sched_wake_at(struct cos_sched *s, unsigned long long at_ns)
{
	if (at_ns && (!s->wake_at || at_ns < s->wake_at))
		s->wake_at = at_ns;
}

COS_EXPORT struct cos_task *cos_sched_cpu_task(const struct cos_sched *s, int cpu)
{
	return cpu >= 0 && (unsigned int)cpu < s->nr_cpus ? s->cpus[cpu].task : NULL;
}

COS_EXPORT int cos_sched_cpus(const struct cos_sched *s, int *cpus, int max)
{
	int n = 0;

	for (unsigned int c = 0; c < s->nr_cpus && n < max; c++)
		if (CPU_ISSET(c, &s->enclave))
			cpus[n++] = c;
	return n;
}

COS_EXPORT bool cos_sched_task_may_run(const struct cos_sched *s, const struct cos_task *t, int cpu)
{
	return cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &s->allowed[t->slot]) &&
	       !CPU_ISSET(cpu, &s->offline);
}

COS_EXPORT int cos_sched_helper_cpus(const struct cos_sched *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (unsigned int c = 0; c < s->nr_cpus; c++)	/* at most CPU_SETSIZE */
		if ((int)c != s->lord_cpu && !CPU_ISSET(c, &s->enclave) && !CPU_ISSET(c, &s->offline))
			CPU_SET(c, set);
	return CPU_COUNT(set);
}

COS_EXPORT int cos_sched_task_hint(struct cos_sched *s, const struct cos_task *t,
				   struct cos_hint *out)
{
	unsigned long long now;
	int ret;

	if (!s->be->hint && !s->hints) {
		cpu_set_t cpus;

		cos_sched_helper_cpus(s, &cpus);
		if (cos_hint_cache_new(&s->hints, s->max_tasks, &cpus))
			return -ENOMEM;
	}
	now = cos_now_ns();
	ret = s->be->hint ? s->be->hint(s->b, t->slot, t->pid, out) :
			    cos_hint_cache_read(s->hints, t->slot, t->pid, out, now);
	if (s->trace) {
		struct cos_trace_hint *r = cos_trace_put(s->trace, COS_TREC_HINT, 0, cos_clock_real());

		if (r) {
			r->slot = t->slot;
			r->ret = ret;
			if (!ret)
				r->hint = *out;
		}
	}
	return ret;
}

COS_EXPORT struct cos_task *cos_sched_first_for(const struct cos_sched *s,
						 const struct cos_taskq *q, int cpu)
{
	for (struct cos_task *t = q->head; t; t = t->q_next)
		if (cos_sched_task_may_run(s, t, cpu))
			return t;
	return NULL;
}

COS_EXPORT void *cos_sched_policy_ctx(const struct cos_sched *s)
{
	return s->policy->ctx;
}

COS_EXPORT struct cos_lord *cos_sched_lord(const struct cos_sched *s)
{
	return s->lord;
}

COS_EXPORT int cos_sched_recent(const struct cos_sched *s, struct cos_sched_event *ev, int max)
{
	unsigned long long first = s->nr_recent > COS_SCHED_RECENT ? s->nr_recent - COS_SCHED_RECENT : 0;
	int n = 0;

	if (s->nr_recent - first > (unsigned long long)(max > 0 ? max : 0))
		first = s->nr_recent - (unsigned long long)(max > 0 ? max : 0);
	for (unsigned long long i = first; i < s->nr_recent; i++)
		ev[n++] = s->recent[i % COS_SCHED_RECENT];
	return n;
}

COS_EXPORT void cos_sched_get_stats(const struct cos_sched *s, struct cos_sched_stats *st)
{
	*st = s->st;
}

/* ---------------------------------------------------------------- creation */

/* The books for @s->max_tasks slots and @s->nr_cpus CPUs, empty; false without memory. */
static bool books_alloc(struct cos_sched *s)
{
	unsigned int max_tasks = s->max_tasks;
	size_t data_size = s->policy->task_data_size;

	s->tasks = calloc(max_tasks, sizeof(*s->tasks));
	for (s->pid_mask = 1; s->pid_mask < 2 * max_tasks; s->pid_mask <<= 1)
		;
	s->by_pid = calloc(s->pid_mask, sizeof(*s->by_pid));
	s->pid_mask--;
	s->allowed = calloc(max_tasks, sizeof(*s->allowed));
	s->throttled_on = calloc(max_tasks, sizeof(*s->throttled_on));
	s->data = data_size ? calloc(max_tasks, data_size) : NULL;
	s->cpus = calloc(s->nr_cpus, sizeof(*s->cpus));
	s->queued_next = calloc(max_tasks, sizeof(*s->queued_next));
	s->order = calloc(max_tasks, sizeof(*s->order));
	return s->tasks && s->by_pid && s->allowed && s->throttled_on && (!data_size || s->data) &&
	       s->cpus && s->queued_next && s->order;
}

int cos_sched_create_backend(struct cos_sched **sp, const struct cos_policy *policy,
			     const struct cos_backend *be, void *b, const struct cos_sched_opts *opts,
			     unsigned int max_tasks, unsigned int nr_cpus)
{
	struct cos_sched *s;

	*sp = NULL;
	if (!policy || policy->size < offsetof(struct cos_policy, schedule) + sizeof(void *) ||
	    !policy->schedule)
		return cos_fail(-EINVAL, "a policy needs at least a schedule callback");
	if (nr_cpus > CPU_SETSIZE)
		nr_cpus = CPU_SETSIZE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return cos_fail(-ENOMEM, "out of memory");
	s->policy = policy;
	s->be = be;
	s->b = b;
	s->max_tasks = max_tasks;
	s->nr_cpus = nr_cpus;
	s->lord_cpu = opts->lord.lord_cpu;
	CPU_ZERO(&s->enclave);
	memcpy(&s->enclave, opts->lord.enclave,
	       opts->lord.enclave_size < sizeof(s->enclave) ? opts->lord.enclave_size : sizeof(s->enclave));
	s->tick_ns = opts->tick_ns;
	s->spin_ns = opts->flags & COS_SCHED_F_NO_SPIN ? 0 : opts->spin_ns ?: 50000;
	s->flags = opts->flags;
	pthread_mutex_init(&s->trace_lock, NULL);
	if (!books_alloc(s)) {
		cos_sched_free(s);
		return cos_fail(-ENOMEM, "out of memory for %u task slots", max_tasks);
	}
	learn(s);		/* tasks that exist already */
	if (s->flags & COS_SCHED_F_SIGNALS)
		signals_install(s);
	*sp = s;
	return 0;
}

void cos_sched_replay_seed(struct cos_sched *s, unsigned int slot, unsigned long long placed_at,
			   unsigned long long runnable_at)
{
	if (slot < s->max_tasks && s->tasks[slot].state != COS_TASK_FREE) {
		s->tasks[slot].placed_at = placed_at;
		s->tasks[slot].runnable_at = runnable_at;
	}
}

void cos_sched_replay_tick(struct cos_sched *s, unsigned long long last_tick)
{
	s->last_tick = last_tick;
}

void cos_sched_set_lord(struct cos_sched *s, struct cos_lord *lord, const char *name)
{
	s->lord = lord;
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
}

void cos_sched_free(struct cos_sched *s)
{
	if (!s)
		return;
	signals_restore(s);
	if (s->trace_want != s->trace)
		cos_trace_free(s->trace_want);
	cos_trace_free(s->trace);
	pthread_mutex_destroy(&s->trace_lock);
	cos_hint_cache_free(s->hints);
	free(s->tasks);
	free(s->by_pid);
	free(s->allowed);
	free(s->throttled_on);
	free(s->data);
	free(s->cpus);
	free(s->queued_next);
	free(s->order);
	free(s);
}
