// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * hint_finder.c — the lord's finder: a thread of the lord's process that does the lookups the
 * lord's hint cache needs and that may block (struct hint_finder says why the lord's thread
 * must not).  The finder's thread runs finder_main() and the lookups below it; the lord's
 * thread runs the cos_hint_finder_*() calls, which only start, ask, collect and stop.  See
 * docs/writing-a-policy.md, "App hints".
 *
 * A task's process: its tgid and start time (pids are reused).  Its table: found among
 * /proc/<tgid>/fd, checked (hint_table.c) and mapped read-only.  Opening another process's fd
 * needs ptrace access (root, or CAP_SYS_PTRACE).
 *
 * A task's cgroup's class: xattr COS_HINT_CGROUP_XATTR, written by cos-oci-hook.  Only root can
 * write trusted.* xattrs, so a container cannot give itself a class.  Nor can it claim a better
 * one in its own records than the operator allowed: the nearest COS_HINT_CGROUP_BEST_XATTR up
 * the task's cgroup path, read with the class, caps what its record says (a cgroup the
 * container made below its own is covered too).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "hint_internal.h"

/* ---------------------------------------------------------------- the finder's thread */

/* @tid's process: its Tgid (/proc/<tid>/status) and start time. */
static int process_of(int tid, int *tgid, unsigned long long *start)
{
	char path[64], buf[512];
	FILE *f;

	*tgid = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "Tgid: %d", tgid) == 1)
			break;
	fclose(f);
	if (*tgid <= 0)
		return -ESRCH;
	return cos_proc_start_time(*tgid, start);
}

/* Map @tgid's table read-only. */
static int table_open(int tgid, const char **basep, size_t *sizep)
{
	char dir[64];
	int fd, found;
	void *p;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", tgid);
	fd = cos_hint_table_find(dir, O_RDONLY, &found, sizep);
	if (fd < 0)
		return fd;
	p = mmap(NULL, *sizep, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*basep = p;
	return 0;
}

/*
 * The class in xattr @name of cgroup directory @dir: 1..COS_HINT_CLASS_MAX, @none for "none"
 * (where @none is not 0), 0 for a value that is no class (empty, too long, not a number).
 * *@present: whether @dir has the xattr at all.
 */
static unsigned int class_xattr(const char *dir, const char *name, unsigned int none,
				bool *present)
{
	char val[16], *end;
	unsigned long class;
	ssize_t n;

	n = getxattr(dir, name, val, sizeof(val) - 1);
	*present = n >= 0 || errno == ERANGE;	/* ERANGE: there, and longer than any class */
	if (n <= 0)
		return 0;
	val[n] = '\0';
	if (none && !strcmp(val, "none"))
		return none;
	errno = 0;
	class = strtoul(val, &end, 10);
	return *end || errno || val[0] < '0' || val[0] > '9' || class > COS_HINT_CLASS_MAX ? 0 :
	       (unsigned int)class;
}

/*
 * @tid's cgroup's class (COS_HINT_CGROUP_XATTR, 0 without one), and in *@best the best class
 * it may claim: the nearest COS_HINT_CGROUP_BEST_XATTR up its cgroup path (0 = none found).
 * A bad value counts as none found for the class, and as "none" for the cap (fail closed).
 */
static unsigned int cgroup_class(int tid, unsigned int *best)
{
	char cg[PATH_MAX], dir[PATH_MAX + 32];
	size_t root = strlen(COS_HINT_CGROUP_ROOT);
	unsigned int class;
	bool present;

	*best = 0;
	if (cos_proc_cgroup(tid, cg, sizeof(cg)) || cg[0] != '/')
		return 0;
	snprintf(dir, sizeof(dir), "%s%s", COS_HINT_CGROUP_ROOT, strcmp(cg, "/") ? cg : "");
	class = class_xattr(dir, COS_HINT_CGROUP_XATTR, 0, &present);
	for (;;) {		/* up to the root, one step (a '/') at a time */
		unsigned int cap = class_xattr(dir, COS_HINT_CGROUP_BEST_XATTR, HINT_BEST_NONE,
					       &present);
		char *slash;

		if (present) {
			*best = cap ? cap : HINT_BEST_NONE;
			break;
		}
		slash = strrchr(dir + root, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return class;
}

/* Does the lord have (@tgid, @start)'s table mapped?  Under the finder's lock. */
static bool finder_knows(struct hint_finder *f, int tgid, unsigned long long start)
{
	for (int i = 0; i < HINT_TABLES_MAX; i++)
		if (f->known[i].tgid == tgid && f->known[i].start == start)
			return true;
	return false;
}

/* Answer @a: the finder's thread, no lock held but to look at @f->known (the rest may block). */
static void find_answer(struct hint_finder *f, struct hint_find *a)
{
	bool known;

	if (!a->tgid && process_of(a->tid, &a->tgid, &a->start))
		a->tgid = -1;
	if (a->want_table && a->tgid > 0) {
		pthread_mutex_lock(&f->lock);
		known = finder_knows(f, a->tgid, a->start);	/* another thread of it asked first */
		pthread_mutex_unlock(&f->lock);
		if (known)
			a->want_table = false;
		else if (table_open(a->tgid, &a->base, &a->size))
			a->base = NULL;
	}
	if (a->want_cgroup)
		a->cgroup_class = cgroup_class(a->tid, &a->cgroup_best);
}

static void *finder_main(void *arg)
{
	struct hint_finder *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct hint_find a;

		while (f->ask_head == f->ask_tail && !f->stop)
			pthread_cond_wait(&f->work, &f->lock);
		if (f->stop)
			break;
		a = f->asked[f->ask_head++ % HINT_FIND_MAX];
		f->busy++;
		pthread_mutex_unlock(&f->lock);
		find_answer(f, &a);
		pthread_mutex_lock(&f->lock);
		f->busy--;
		f->answered[f->ans_tail++ % HINT_FIND_MAX] = a;	/* room: in_flight bounds both */
		__atomic_store_n(&f->nr_answered, f->ans_tail - f->ans_head, __ATOMIC_RELEASE);
		if (f->ask_head == f->ask_tail && !f->busy)
			pthread_cond_broadcast(&f->idle);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* ---------------------------------------------------------------- the lord's thread */

/* A finder not started yet, to run on @cpus (NULL: where the lord's thread may). */
void cos_hint_finder_init(struct hint_finder *f, const cpu_set_t *cpus)
{
	if (cpus)
		f->cpus = *cpus;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->idle, NULL);
}

/*
 * Start the finder, with no signals (they are the lord thread's) and the default policy, on
 * @f->cpus: not the lord's CPU, where it would run only while the lord's thread sleeps, and
 * not the enclave's, which are the COS tasks'.
 */
static int finder_start(struct hint_finder *f)
{
	sigset_t all, old;
	pthread_attr_t attr;
	int err;

	if (f->started)
		return 0;
	if (pthread_attr_init(&attr))
		return -ENOMEM;
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&f->thread, &attr, finder_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	/* a cpuset that allows none of them leaves it where it is, beside the lord */
	if (CPU_COUNT(&f->cpus))
		pthread_setaffinity_np(f->thread, sizeof(f->cpus), &f->cpus);
	pthread_setname_np(f->thread, "cos-hint-finder");	/* top -H, ps -L */
	f->started = true;
	return 0;
}

/* Stop the finder's thread and unmap the tables of answers nobody collected. */
void cos_hint_finder_stop(struct hint_finder *f)
{
	if (!f->started)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->work);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	for (; f->ans_head != f->ans_tail; f->ans_head++) {
		struct hint_find *a = &f->answered[f->ans_head % HINT_FIND_MAX];

		if (a->base)
			munmap((void *)a->base, a->size);
	}
}

/* After cos_hint_finder_stop(), and after the last cos_hint_finder_known(). */
void cos_hint_finder_destroy(struct hint_finder *f)
{
	pthread_cond_destroy(&f->work);
	pthread_cond_destroy(&f->idle);
	pthread_mutex_destroy(&f->lock);
}

/*
 * Ask @q (starting the finder at the first question).  The caller keeps fewer than
 * HINT_FIND_MAX in flight.  -errno if the finder cannot start: nothing asked.
 */
int cos_hint_finder_ask(struct hint_finder *f, const struct hint_find *q)
{
	int err = finder_start(f);

	if (err)
		return err;
	pthread_mutex_lock(&f->lock);
	f->asked[f->ask_tail++ % HINT_FIND_MAX] = *q;
	pthread_cond_signal(&f->work);
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* Take the answers given so far into @got (room for HINT_FIND_MAX); how many. */
unsigned int cos_hint_finder_answers(struct hint_finder *f, struct hint_find *got)
{
	unsigned int n = 0;

	if (!__atomic_load_n(&f->nr_answered, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&f->lock);
	for (; f->ans_head != f->ans_tail; f->ans_head++)
		got[n++] = f->answered[f->ans_head % HINT_FIND_MAX];
	__atomic_store_n(&f->nr_answered, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* The lord's table entry @i holds (@tgid, @start)'s table mapped now (@tgid 0: none). */
void cos_hint_finder_known(struct hint_finder *f, int i, int tgid, unsigned long long start)
{
	pthread_mutex_lock(&f->lock);
	f->known[i].tgid = tgid;
	f->known[i].start = start;
	pthread_mutex_unlock(&f->lock);
}

/* Wait until the finder has answered every question asked. */
void cos_hint_finder_settle(struct hint_finder *f)
{
	pthread_mutex_lock(&f->lock);
	while (f->started && (f->ask_head != f->ask_tail || f->busy))
		pthread_cond_wait(&f->idle, &f->lock);
	pthread_mutex_unlock(&f->lock);
}
