// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * hint_lock.c — lock hints, the app's side: cos_mutex, the calls that publish an app's own
 * lock, and the handoff (an unlock that woke a waiter yields the CPU to it).  The app's
 * threads run it, on every lock and unlock; libcos-lock.so's interposer (lock_preload.c) runs
 * the same writers, inlined from internal.h, around the C library's mutexes.  See
 * docs/writing-a-policy.md, "App hints", and docs/design.md, section 5.3, for the order of the
 * stores.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

COS_EXPORT void cos_hint_lock_wait(struct cos_hint *h, const void *lock)
{
	if (h)
		hint_lock_wait(h, lock);
}

COS_EXPORT void cos_hint_lock_acquired(struct cos_hint *h, const void *lock)
{
	if (h)
		hint_lock_acquired(h, lock);
}

COS_EXPORT void cos_hint_lock_released(struct cos_hint *h, const void *lock)
{
	(void)lock;
	if (h)
		hint_lock_released(h);
}

/* Make the calling thread's record, keeping errno: the lock calls must not change it. */
struct cos_hint *cos_lock_hint_slow(void)
{
	int saved = errno;
	struct cos_hint *h = cos_hint_self();

	errno = saved;
	return h;
}

COS_EXPORT int cos_mutex_init(struct cos_mutex *m)
{
	return pthread_mutex_init(&m->m, NULL);
}

COS_EXPORT int cos_mutex_lock(struct cos_mutex *m)
{
	struct cos_hint *h = cos_lock_hint();
	int err;

	/*
	 * The wait is published before every lock, not after a failed trylock: a trylock costs
	 * more than the store (1.2 ns against 0.3), and a lord that reads a wait that lasted no
	 * longer than the uncontended lock finds it gone when it could act on it.
	 */
	if (h)
		hint_lock_wait(h, m);
	err = pthread_mutex_lock(&m->m);
	if (h)
		err ? hint_lock_wait(h, NULL) : hint_lock_acquired(h, m);
	return err;
}

COS_EXPORT int cos_mutex_trylock(struct cos_mutex *m)
{
	int err = pthread_mutex_trylock(&m->m);
	struct cos_hint *h;

	if (!err && (h = cos_lock_hint()))
		hint_lock_acquired(h, m);
	return err;
}

int cos_lock_handoff = -1;

int cos_lock_handoff_read(void)
{
	const char *v = getenv("COS_LOCK_HANDOFF");
	int mode = !v ? COS_LOCK_HANDOFF_AUTO : !strcmp(v, "1") ? 1 : !strcmp(v, "0") ? 0 :
		   COS_LOCK_HANDOFF_AUTO;

	__atomic_store_n(&cos_lock_handoff, mode, __ATOMIC_RELAXED);
	return mode;
}

#define COS_TASK_RECHECK	256	/* contended unlocks between two looks at the policy */

/*
 * Whether the calling thread is a COS task: its policy, looked at again every
 * COS_TASK_RECHECK contended unlocks (a thread seldom changes its policy; cosctl run sets it
 * before the program starts).  Under the default scheduler a yield would only reorder fair
 * tasks; under a lord without the handoff it does nothing.
 */
bool cos_lock_handoff_auto(void)
{
	static __thread unsigned int left __attribute__((tls_model("initial-exec")));
	static __thread bool cos_task __attribute__((tls_model("initial-exec")));

	if (!left) {
		cos_task = sched_getscheduler(0) == COS_SCHED_EXT;
		left = COS_TASK_RECHECK;
	}
	left--;
	return cos_task;
}

COS_EXPORT int cos_mutex_unlock(struct cos_mutex *m)
{
	struct cos_hint *h = cos_lock_hint();
	bool yield = cos_lock_contended(&m->m) && cos_lock_handoff_on();
	int err;

	if (h)
		hint_lock_released(h);
	err = pthread_mutex_unlock(&m->m);
	if (yield && !err)
		sched_yield();		/* the woken waiter first (COS_LOCK_HANDOFF) */
	return err;
}

COS_EXPORT int cos_mutex_destroy(struct cos_mutex *m)
{
	return pthread_mutex_destroy(&m->m);
}
