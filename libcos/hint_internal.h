/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * hint_internal.h — what the app hint files share (hint_table.c, hint_app.c, hint_cache.c,
 * hint_finder.c): the table's header, and the lord's finder as its cache holds it.  Not
 * installed.  See docs/abi.md, "App hint pages".
 */
#ifndef COS_HINT_INTERNAL_H
#define COS_HINT_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

/* ---------------------------------------------------------------- the table (hint_table.c) */

#define HINT_MAGIC		"COSHINT1"

/* Page 0 of a hint table. */
struct hint_header {
	char magic[8];
	unsigned int version;		/* 1 */
	unsigned int page_size;
	unsigned int pages;		/* pages ever claimed, including this header (atomic) */
	unsigned int max_pages;
};

bool cos_hint_header_ok(const struct hint_header *hd, size_t ps);
void cos_hint_header_copy(struct hint_header *hd, const char *base);
bool cos_hint_table_check(int fd, size_t *size);
int cos_hint_table_find(const char *fd_dir, int oflags, int *found, size_t *size);

/* ---------------------------------------------------------------- the finder (hint_finder.c) */

#define HINT_TABLES_MAX	64		/* tables the lord keeps (mapped, or missing) */
#define HINT_FIND_MAX	256		/* questions to the finder in flight at most */
#define HINT_BEST_NONE	UINT_MAX	/* COS_HINT_CGROUP_BEST_XATTR "none": no class at all */

/* One question to the finder, and its answer. */
struct hint_find {
	unsigned int slot, ticket;	/* who asked: the slot, and its ticket then */
	int tid;
	int tgid;			/* in: 0 = find it and the start time; out: -1 = gone */
	unsigned long long start;
	bool want_table;		/* map the process's table */
	bool want_cgroup;		/* read the class of the task's cgroup */
	const char *base;		/* out: the table, mapped read-only, or NULL */
	size_t size;
	unsigned int cgroup_class;	/* out */
	unsigned int cgroup_best;	/* out */
};

/*
 * The finder: a thread of the lord's process that does the lord's lookups in /proc (a task's
 * process, its table, its cgroup's class).  The lord's own thread never does them: a task that
 * waits for the lord may hold what such a lookup needs (a dentry of /proc/<pid>/fd it is
 * looking up itself, in d_alloc_parallel()), and a lord blocked on it would not place that
 * task until the kernel declared the lord stalled.  The lord asks (cos_hint_finder_ask()) and
 * collects the answers at its next read (cos_hint_finder_answers()): a task's hint shows one
 * look later.  The rings and counters are under @lock; @nr_answered is also read without it.
 */
struct hint_finder {
	pthread_t thread;
	bool started, stop;
	cpu_set_t cpus;			/* where it runs (none: where the lord's thread may) */
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a question came, or stop */
	pthread_cond_t idle;		/* every question answered (cos_hint_cache_settle()) */
	struct hint_find asked[HINT_FIND_MAX], answered[HINT_FIND_MAX];	/* rings */
	unsigned int ask_head, ask_tail, ans_head, ans_tail, busy;
	unsigned int nr_answered;	/* ans_tail - ans_head, for a look without the lock */
	/* the processes whose table the lord has mapped (tgid 0: none): not opened again */
	struct { int tgid; unsigned long long start; } known[HINT_TABLES_MAX];
};

/* The lord's thread calls these; the finder's thread runs only what they start. */
void cos_hint_finder_init(struct hint_finder *f, const cpu_set_t *cpus);
void cos_hint_finder_stop(struct hint_finder *f);
void cos_hint_finder_destroy(struct hint_finder *f);
int cos_hint_finder_ask(struct hint_finder *f, const struct hint_find *q);
unsigned int cos_hint_finder_answers(struct hint_finder *f, struct hint_find *got);
void cos_hint_finder_known(struct hint_finder *f, int i, int tgid, unsigned long long start);
void cos_hint_finder_settle(struct hint_finder *f);

#endif /* COS_HINT_INTERNAL_H */
