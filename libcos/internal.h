/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * internal.h — helpers shared by libcos's files; not installed.
 */
#ifndef COS_INTERNAL_H
#define COS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cos.h"

#define COS_EXPORT __attribute__((visibility("default")))

/* Record a detailed message for @err (negative errno) and return @err. */
int cos_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read a one-line sysfs file into @buf without the newline; -errno on failure. */
int cos_read_line(const char *path, char *buf, size_t len);

/*
 * Set up partial mode's cpuset partition with the CPUs of @set (partition.c); reuses one with
 * the same CPUs.  cos_shim_attach() calls it before attaching.
 */
int cos_partition_setup(const void *set, size_t setsize);

/* Does COS_PARTITION_PATH exist (-ENOENT if not), and did cos make it (1) or another (0)? */
int cos_partition_ours(void);

/* cos_sys_status() with every path below @root (for tests: a fake sysfs/dev tree). */
int cos_sys_status_at(const char *root, struct cos_sys_status *st);

/*
 * How the policy framework (sched.c) reaches the kernel: the real backend wraps cos_lord_*;
 * the unit tests replay a recorded trace through a fake one.
 */
#include <sched.h>
struct cos_backend {
	const struct cos_msg *(*peek)(void *b);
	void (*consume)(void *b);
	void (*publish)(void *b);
	int (*task_status)(void *b, unsigned int slot, struct cos_task_status *out);
	/*
	 * @flags: COS_SHOOT_F_LATCH (else the latest placement replaces an unstarted one),
	 * COS_SHOOT_F_URGENT
	 */
	int (*prepare)(void *b, int cpu, unsigned int slot, unsigned int gen,
		       unsigned long long slice_ns, unsigned int flags);
	int (*shoot)(void *b);			/* placed count or -errno */
	unsigned int (*shoot_status)(void *b, int cpu);
	int (*wait)(void *b, unsigned long long timeout_ns);
	int (*affinity)(void *b, int pid, cpu_set_t *set);
	/* a task's hint (cos_sched_task_hint()); NULL: the hint tables, read by the lord */
	int (*hint)(void *b, unsigned int slot, int pid, struct cos_hint *out);
};

int cos_sched_create_backend(struct cos_sched **sp, const struct cos_policy *policy,
			     const struct cos_backend *be, void *b, const struct cos_sched_opts *opts,
			     unsigned int max_tasks, unsigned int nr_cpus);
int cos_sched_step(struct cos_sched *s);
/* replay.c: the books' times a recording gives (BOOK), and the framework's last tick */
void cos_sched_replay_seed(struct cos_sched *s, unsigned int slot, unsigned long long placed_at,
			   unsigned long long runnable_at);
void cos_sched_replay_tick(struct cos_sched *s, unsigned long long last_tick);
void cos_sched_free(struct cos_sched *s);
void cos_sched_set_lord(struct cos_sched *s, struct cos_lord *lord, const char *name);

/*
 * The clock of cos_now_ns(): a recording lord thread keeps each reading of a step (trace.c),
 * a replay gives back the recorded ones (replay.c).  NULL: the real clock, nothing else.
 */
struct cos_clock {
	unsigned long long (*now)(struct cos_clock *c, unsigned long long real);
};
extern __thread struct cos_clock *cos_clock_hook __attribute__((tls_model("initial-exec")));
/* cos_trace_observing()'s depth: reads meanwhile bypass the hook's record and replay */
extern __thread unsigned int cos_clock_observing __attribute__((tls_model("initial-exec")));
unsigned long long cos_clock_real(void);

/* trace.c: the decision records' ring (cos_trace.h), written by the lord thread only */
#include "cos_trace.h"
struct cos_trace {
	struct cos_trace_header *hdr;	/* the shared mapping: header, then the ring */
	unsigned char *data;
	size_t map_size;
	__u64 mask;			/* the ring's bytes - 1 */
	__u64 head;			/* what the lord published (never read back from the ring) */
	__u64 pos;			/* where this step's next record goes (not published) */
	__u64 tail;			/* the reader's tail as last read, bounded */
	__u64 lost;			/* steps dropped since the last one kept */
	__u64 lost_total;		/* steps dropped in all (the header's copy is the reader's) */
	bool full;			/* this step did not fit: it is dropped */
	bool booked;			/* the BOOK records are written */
	struct cos_clock clock;
};
int cos_trace_new(struct cos_trace **tp, size_t bytes, int *fd);
void cos_trace_free(struct cos_trace *t);
void cos_trace_step_begin(struct cos_trace *t);
/* A record of @type at the step's end (payload zeroed), or NULL: the step does not fit. */
void *cos_trace_put(struct cos_trace *t, unsigned int type, unsigned int cpu,
		    unsigned long long ts);
/* Publish the step (@keep) or drop it; a step that did not fit is counted lost. */
void cos_trace_step_end(struct cos_trace *t, bool keep, unsigned int nr_msgs,
			unsigned int nr_placed);

/* hint_lock.c: the calling thread's record for the lock hints, NULL if it cannot have one */
struct cos_hint *cos_lock_hint_slow(void);
/* hint_app.c: the calling thread's record once it exists */
extern __thread struct cos_hint *cos_my_hint __attribute__((tls_model("initial-exec")));

/* The calling thread's record for the lock calls: one thread-local load once it exists. */
static inline struct cos_hint *cos_lock_hint(void)
{
	return cos_my_hint ? cos_my_hint : cos_lock_hint_slow();
}

/*
 * The lock hints' writers, inlined into cos_mutex's calls (hint_lock.c) and the interposer's (their
 * cost is these stores).  They leave the seqcount alone: each field is one aligned word a lord
 * reads on its own, and the order of the stores keeps what it reads coherent (release: the lock
 * named before the count says one is held; the count cleared before the name).  A lock is five
 * stores, an unlock one or two.
 */
static inline void hint_lock_wait(struct cos_hint *h, const void *lock)
{
	if (lock)	/* a new wait: counted before it is named */
		__atomic_store_n(&h->lock_waits, h->lock_waits + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->lock_wait, (unsigned long long)(uintptr_t)lock, __ATOMIC_RELAXED);
}

static inline void hint_lock_acquired(struct cos_hint *h, const void *lock)
{
	__atomic_store_n(&h->lock_wait, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->lock_held, (unsigned long long)(uintptr_t)lock, __ATOMIC_RELAXED);
	__atomic_store_n(&h->nr_locks, h->nr_locks + 1, __ATOMIC_RELEASE);
}

static inline void hint_lock_released(struct cos_hint *h)
{
	unsigned int n = h->nr_locks;

	if (!n)
		return;		/* unmatched (a lock taken before the record existed): not counted */
	__atomic_store_n(&h->nr_locks, n - 1, __ATOMIC_RELEASE);
	/* the lock taken last stays named while others are held: the lord sees an owner */
	if (n == 1)
		__atomic_store_n(&h->lock_held, 0, __ATOMIC_RELAXED);
}

/*
 * hint_lock.c: whether an unlock that may have woken a waiter yields the CPU right after it, so
 * that the kernel's handoff (COS_WAKE_HANDOFF) runs the woken waiter there before the releaser
 * takes the lock again (a lord acting on the wake alone comes a round trip late).
 * COS_LOCK_HANDOFF in the environment, read once: 1 always, 0 never, unset (or anything else)
 * when the calling thread is a COS task (SCHED_EXT; cos_lock_handoff_auto()).  Ask only after
 * cos_lock_contended(): the automatic answer may cost a system call.
 */
#define COS_LOCK_HANDOFF_AUTO	2
extern int cos_lock_handoff;		/* -1: not read yet, 0: off, 1: on, 2: auto */
int cos_lock_handoff_read(void);
bool cos_lock_handoff_auto(void);

static inline bool cos_lock_handoff_on(void)
{
	int v = __atomic_load_n(&cos_lock_handoff, __ATOMIC_RELAXED);

	if (v < 0)
		v = cos_lock_handoff_read();
	return v == COS_LOCK_HANDOFF_AUTO ? cos_lock_handoff_auto() : v;
}

/*
 * Whether glibc's lock word of @m says a waiter may sleep on it (2): the unlock will wake one.
 * The normal, recursive, error-checking and adaptive kinds; never robust, PI or PP mutexes,
 * whose word is the owner's tid.
 */
static inline bool cos_lock_contended(pthread_mutex_t *m)
{
	return !(m->__data.__kind & 0x70) && __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 2;
}

/* hint_cache.c: the lord's cache of hint tables and records (per task slot) */
struct cos_hint_cache;
/* @cpus: where its finder thread runs (NULL: where the caller may) */
int cos_hint_cache_new(struct cos_hint_cache **cp, unsigned int max_tasks, const cpu_set_t *cpus);
void cos_hint_cache_free(struct cos_hint_cache *c);
void cos_hint_cache_forget(struct cos_hint_cache *c, unsigned int slot);
int cos_hint_cache_read(struct cos_hint_cache *c, unsigned int slot, int tid,
			struct cos_hint *out, unsigned long long now);
/* Wait until the finder has answered every question (tests: the next read sees its answers). */
void cos_hint_cache_settle(struct cos_hint_cache *c);
/* Tables dropped because their header changed after it was checked (0 for a NULL cache). */
unsigned long long cos_hint_cache_bad_tables(const struct cos_hint_cache *c);

#endif /* COS_INTERNAL_H */
