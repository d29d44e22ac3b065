// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * lock_preload.c — libcos-lock.so: an LD_PRELOAD interposer on pthread_mutex_lock(),
 * _trylock(), _timedlock(), _clocklock() and _unlock(), so that an unmodified program publishes
 * lock hints
 * (struct cos_hint's lock_held, nr_locks and lock_wait) as cos_mutex does.  Every call that can
 * take a mutex is interposed: one that took it unseen would leave nr_locks behind its unlock.
 *
 *   LD_PRELOAD=/usr/lib/libcos-lock.so cosctl run -- ./server
 *
 * Each call goes to the C library's own function (dlsym(RTLD_NEXT)), with the calling thread's
 * hint record written around it: the wait before the call, the lock held after it.  The
 * process's table is made at load, a thread's record at its first lock; libcos takes a mutex
 * of its own then, which passes through here unhinted (a thread-local guard).  A COS task's
 * unlock that wakes a waiter yields the CPU after it (COS_LOCK_HANDOFF: 1 any thread's, 0
 * none).
 * See docs/writing-a-policy.md, "App hints".
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "internal.h"

static int (*real_lock)(pthread_mutex_t *);
static int (*real_trylock)(pthread_mutex_t *);
static int (*real_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*real_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
static int (*real_unlock)(pthread_mutex_t *);
static __thread int inside __attribute__((tls_model("initial-exec")));	/* in libcos's own
								 * code: its locks go unhinted */

static void resolve(void)
{
	real_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	real_trylock = dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	real_timedlock = dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
	real_clocklock = dlsym(RTLD_NEXT, "pthread_mutex_clocklock");
	real_unlock = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
}

/*
 * At load: the real functions, and the process's hint table made now, before its threads run.
 * A lord that looks for a table and finds none looks again only some time later
 * (COS_HINT_RETRY_NS); made at the first lock instead, the first locks would go unseen.
 */
__attribute__((constructor)) static void preload_init(void)
{
	resolve();
	inside = 1;
	cos_lock_hint_slow();
	inside = 0;
}

/* The calling thread's record, or NULL while libcos itself locks (or cannot make one). */
static inline struct cos_hint *hint(void)
{
	struct cos_hint *h;

	if (cos_my_hint)
		return cos_my_hint;
	if (inside)
		return NULL;
	inside = 1;
	h = cos_lock_hint_slow();
	inside = 0;
	return h;
}

/* A lock call's outcome: held (0, or a robust mutex's EOWNERDEAD), else not. */
static bool held(int err)
{
	return !err || err == EOWNERDEAD;
}

COS_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct cos_hint *h;
	int err;

	if (!real_trylock)
		resolve();
	err = real_trylock(m);
	if (held(err) && (h = hint()))
		hint_lock_acquired(h, m);
	return err;
}

/* How a lock call waits: without a limit, until a CLOCK_REALTIME time, or a given clock's. */
enum lock_kind { LOCK, TIMEDLOCK, CLOCKLOCK };

/* The wait published before the call (as cos_mutex_lock(): cheaper than a trylock first). */
static int lock_with(pthread_mutex_t *m, enum lock_kind kind, clockid_t clock,
		     const struct timespec *abstime)
{
	struct cos_hint *h;
	int err;

	if (!real_lock)
		resolve();
	h = hint();
	if (h)
		hint_lock_wait(h, m);
	err = kind == TIMEDLOCK ? real_timedlock(m, abstime) :
	      kind == CLOCKLOCK ? real_clocklock(m, clock, abstime) : real_lock(m);
	if (h)
		held(err) ? hint_lock_acquired(h, m) : hint_lock_wait(h, NULL);
	return err;
}

COS_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	return lock_with(m, LOCK, 0, NULL);
}

COS_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	return lock_with(m, TIMEDLOCK, 0, abstime);
}

COS_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
				       const struct timespec *abstime)
{
	return lock_with(m, CLOCKLOCK, clock, abstime);
}

COS_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	bool yield = cos_lock_contended(m) && cos_lock_handoff_on();
	struct cos_hint *h;
	int err;

	if (!real_unlock)
		resolve();
	if ((h = hint()))
		hint_lock_released(h);
	err = real_unlock(m);
	if (yield && !err)
		sched_yield();		/* the woken waiter first (COS_LOCK_HANDOFF) */
	return err;
}
