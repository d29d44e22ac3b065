// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * lock_preload.c — libcos-lock.so: an LD_PRELOAD interposer on pthread_mutex_lock(),
 * _trylock(), _timedlock() and _unlock(), so that an unmodified program publishes lock hints
 * (struct cos_hint's lock_held, nr_locks and lock_wait) as cos_mutex does.
 *
 *   LD_PRELOAD=/usr/lib/libcos-lock.so cosctl run -- ./server
 *
 * Each call goes to the C library's own function (dlsym(RTLD_NEXT)), with the calling thread's
 * hint record written around it: a trylock first, and only when that fails the wait is
 * published before the blocking call.  The record is made at a thread's first lock; libcos
 * takes a mutex of its own then, which passes through here unhinted (a thread-local guard).
 * See docs/writing-a-policy.md, "App hints".
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "internal.h"

static int (*real_lock)(pthread_mutex_t *);
static int (*real_trylock)(pthread_mutex_t *);
static int (*real_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*real_unlock)(pthread_mutex_t *);
static __thread int inside;	/* in libcos's own code: its locks go unhinted */

__attribute__((constructor)) static void resolve(void)
{
	real_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	real_trylock = dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	real_timedlock = dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
	real_unlock = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
}

/* The calling thread's record, or NULL while libcos itself locks (or cannot make one). */
static struct cos_hint *hint(void)
{
	struct cos_hint *h;

	if (inside)
		return NULL;
	inside = 1;
	h = cos_lock_hint();
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
		cos_hint_lock_acquired(h, m);
	return err;
}

/* Uncontended: one trylock and the owner's stores.  Contended: the wait is published first. */
static int lock_with(pthread_mutex_t *m, const struct timespec *abstime)
{
	struct cos_hint *h;
	int err;

	if (!real_lock)
		resolve();
	err = real_trylock(m);
	if (err != EBUSY) {
		if (held(err) && (h = hint()))
			cos_hint_lock_acquired(h, m);
		return err;
	}
	h = hint();
	cos_hint_lock_wait(h, m);
	err = abstime ? real_timedlock(m, abstime) : real_lock(m);
	if (held(err))
		cos_hint_lock_acquired(h, m);
	else
		cos_hint_lock_wait(h, NULL);
	return err;
}

COS_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	return lock_with(m, NULL);
}

COS_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	return lock_with(m, abstime);
}

COS_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct cos_hint *h;

	if (!real_unlock)
		resolve();
	if ((h = hint()))
		cos_hint_lock_released(h, m);
	return real_unlock(m);
}
