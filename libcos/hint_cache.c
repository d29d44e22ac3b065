// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * hint_cache.c — app hints, the lord's side: its cache of the apps' hint tables and of each
 * task's record, and the read of a record.  The lord's thread runs it (cos_sched_task_hint());
 * what may block, it asks of its finder thread (hint_finder.c).  See docs/writing-a-policy.md,
 * "App hints".
 *
 * The lord names a task's process by tgid and start time (pids are reused) and reads a record
 * with plain loads, no system call once its table is mapped (the seqcount: hint_table.c).  A
 * task without a record gets its cgroup's class, read once per task: one that moves keeps its
 * first cgroup's class; its cgroup's best class caps what its record says (class_capped()).
 *
 * Hostile input: the lord takes sizes and offsets from its own copy of what it checked (struct
 * hint_table), never from the page: the header's page count is read once and bounded, a record
 * is copied before it is looked at, and a table whose header no longer matches the copy is
 * dropped and not looked at again for that process (its tasks get their class default), and
 * counted (cos_sched_hint_bad_tables()).  The finder maps only a regular, sealed memfd of the
 * table's size (cos_hint_table_check()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hint_internal.h"

#define COS_HINT_RETRY_NS	50000000ull	/* a process without a table is looked at again after */

/*
 * A process's table as the lord knows it: mapped (@base), or known to be missing until
 * @retry_at (@base NULL: a process without hints costs no system call per lookup).  @size and
 * @checked are the lord's own: what the table was when it was checked (cos_hint_table_check()).
 * A @bad table's header changed since: no lookup uses it, its tasks let go of their records at
 * their next read, it is unmapped with the last, and the process is not looked at again.
 */
struct hint_table {
	int tgid;			/* 0 = unused entry */
	unsigned long long start;	/* the process's start time: tgid + start name a process */
	const char *base;
	size_t size;
	struct hint_header checked;	/* its header when mapped (pages: 0) */
	bool bad;
	unsigned int refs;		/* tasks whose record is in it */
	unsigned long long retry_at;	/* with @base NULL; never again once @bad */
};

struct hint_task {
	const struct cos_hint *rec;	/* NULL: not found (yet) */
	int table;			/* index into tables, with @rec */
	int tgid;			/* 0 = not read yet, -1 = gone */
	unsigned long long start;	/* its process's start time (clock ticks since boot) */
	bool cgroup_read;		/* @cgroup_class and @cgroup_best are known */
	unsigned int cgroup_class;	/* its cgroup's class, 0 = none */
	unsigned int cgroup_best;	/* the best class it may claim: 0 = any, HINT_BEST_NONE */
	bool asked;			/* the finder has a question about it */
	bool no_room;			/* its process's table did not fit (HINT_TABLES_MAX) */
	unsigned int ticket;		/* bumped when the slot is forgotten: older answers are not its */
};

struct cos_hint_cache {
	struct hint_table tables[HINT_TABLES_MAX];
	struct hint_task *tasks;	/* [max_tasks], by slot */
	unsigned int max_tasks;
	size_t page_size;		/* the lord's: a table's pages are this size (checked) */
	unsigned long long bad_tables;	/* dropped because their header changed */
	unsigned int in_flight;		/* questions not collected yet (the lord's thread only) */
	struct hint_finder finder;
};

int cos_hint_cache_new(struct cos_hint_cache **cp, unsigned int max_tasks, const cpu_set_t *cpus)
{
	struct cos_hint_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->tasks = calloc(max_tasks, sizeof(*c->tasks));
	if (!c || !c->tasks) {
		free(c);
		return -ENOMEM;
	}
	c->max_tasks = max_tasks;
	c->page_size = sysconf(_SC_PAGESIZE);
	cos_hint_finder_init(&c->finder, cpus);
	*cp = c;
	return 0;
}

/* ---------------------------------------------------------------- tables */

/* Tell the finder whether table @i is mapped. */
static void table_known(struct cos_hint_cache *c, int i)
{
	struct hint_table *tb = &c->tables[i];

	cos_hint_finder_known(&c->finder, i, tb->base ? tb->tgid : 0, tb->start);
}

static void table_unmap(struct cos_hint_cache *c, struct hint_table *tb)
{
	if (tb->base) {
		munmap((void *)tb->base, tb->size);
		tb->base = NULL;
		table_known(c, tb - c->tables);
	}
}

static void table_drop(struct cos_hint_cache *c, struct hint_table *tb)
{
	table_unmap(c, tb);
	memset(tb, 0, sizeof(*tb));
}

/* @tb is not to be used, nor its process looked at again; counted once. */
static void table_mark_bad(struct cos_hint_cache *c, struct hint_table *tb)
{
	tb->bad = true;
	tb->retry_at = ~0ull;
	c->bad_tables++;
}

/*
 * Has @tb's header changed since it was checked?  Then it is @bad from now on (see struct
 * hint_table), counted once, and unmapped if no record is in use.
 */
static bool table_tampered(struct cos_hint_cache *c, struct hint_table *tb)
{
	struct hint_header now;

	if (tb->bad)
		return true;
	cos_hint_header_copy(&now, tb->base);
	now.pages = 0;
	if (!memcmp(&now, &tb->checked, sizeof(now)))
		return false;
	table_mark_bad(c, tb);
	if (!tb->refs)
		table_unmap(c, tb);
	return true;
}

/* The table entry of process (@tgid, @start), or -1. */
static int table_at(struct cos_hint_cache *c, int tgid, unsigned long long start)
{
	for (int i = 0; i < HINT_TABLES_MAX; i++)
		if (c->tables[i].tgid == tgid && c->tables[i].start == start)
			return i;
	return -1;
}

/*
 * An entry for a table of a new process with @tgid: an unused one, after dropping an earlier
 * process's with the same tgid, else one nobody's record is in.  -1 with no room.
 */
static int table_room(struct cos_hint_cache *c, int tgid)
{
	int free_i = -1;

	for (int k = 0; k < HINT_TABLES_MAX; k++) {
		struct hint_table *tb = &c->tables[k];

		if (tb->tgid == tgid && !tb->refs)
			table_drop(c, tb);	/* that pid's earlier process: gone */
		if (free_i < 0 && !tb->tgid)
			free_i = k;
	}
	for (int k = 0; free_i < 0 && k < HINT_TABLES_MAX; k++)
		if (!c->tables[k].refs)
			free_i = k;	/* nobody's record is in it: may be evicted */
	return free_i;
}

/*
 * Keep the header of table @i, just mapped, as the lord's own copy.  The finder checked it
 * (cos_hint_table_check()); what it holds now is what counts: a table that no longer passes is
 * unmapped and known as bad.
 */
static void table_checked(struct cos_hint_cache *c, int i)
{
	struct hint_table *tb = &c->tables[i];

	cos_hint_header_copy(&tb->checked, tb->base);
	tb->checked.pages = 0;
	if (tb->size != (size_t)COS_HINT_PAGES * c->page_size ||
	    !cos_hint_header_ok(&tb->checked, c->page_size)) {
		table_mark_bad(c, tb);
		munmap((void *)tb->base, tb->size);
		tb->base = NULL;
		tb->size = 0;
		return;
	}
	table_known(c, i);
}

/*
 * The finder's answer about process (@tgid, @start)'s table: mapped at @base, or missing
 * (@base NULL: looked at again after COS_HINT_RETRY_NS).  Kept in its entry, or a new one
 * (table_room()); a second mapping of a table already known is unmapped.  -ENOSPC (and
 * unmapped) with no room.
 */
static int table_put(struct cos_hint_cache *c, int tgid, unsigned long long start,
		     const char *base, size_t size, unsigned long long now)
{
	int i = table_at(c, tgid, start);
	struct hint_table *tb;

	if (i >= 0 && (c->tables[i].base || c->tables[i].bad)) {	/* known, or not to be used */
		if (base)
			munmap((void *)base, size);
		return 0;
	}
	if (i < 0)
		i = table_room(c, tgid);
	if (i < 0) {
		if (base)
			munmap((void *)base, size);
		return -ENOSPC;
	}
	tb = &c->tables[i];
	table_drop(c, tb);
	tb->tgid = tgid;
	tb->start = start;
	tb->base = base;
	tb->size = base ? size : 0;
	tb->retry_at = base ? 0 : now + COS_HINT_RETRY_NS;
	if (base)
		table_checked(c, i);
	return 0;
}

/* ---------------------------------------------------------------- tasks' records */

/* Let go of @ht's record (its table's last: unmapped; a bad one stays known as bad). */
static void record_put(struct cos_hint_cache *c, struct hint_task *ht)
{
	struct hint_table *tb = &c->tables[ht->table];

	ht->rec = NULL;
	if (--tb->refs)
		return;
	if (tb->bad)
		table_unmap(c, tb);
	else
		table_drop(c, tb);
}

void cos_hint_cache_forget(struct cos_hint_cache *c, unsigned int slot)
{
	struct hint_task *ht;
	unsigned int ticket;

	if (!c || slot >= c->max_tasks)
		return;
	ht = &c->tasks[slot];
	if (ht->rec)
		record_put(c, ht);
	ticket = ht->ticket + 1;
	memset(ht, 0, sizeof(*ht));
	ht->ticket = ticket;
}

void cos_hint_cache_free(struct cos_hint_cache *c)
{
	if (!c)
		return;
	cos_hint_finder_stop(&c->finder);
	for (unsigned int i = 0; i < HINT_TABLES_MAX; i++)
		table_drop(c, &c->tables[i]);
	cos_hint_finder_destroy(&c->finder);
	free(c->tasks);
	free(c);
}

/* Ask the finder about @ht (slot @slot, thread @tid), unless a question is in flight. */
static void find_ask(struct cos_hint_cache *c, unsigned int slot, struct hint_task *ht, int tid,
		     bool want_table, bool want_cgroup)
{
	if (ht->asked || c->in_flight >= HINT_FIND_MAX)
		return;
	if (cos_hint_finder_ask(&c->finder, &(struct hint_find){
			.slot = slot,
			.ticket = ht->ticket,
			.tid = tid,
			.tgid = ht->tgid > 0 ? ht->tgid : 0,
			.start = ht->start,
			.want_table = want_table,
			.want_cgroup = want_cgroup,
		}))
		return;
	ht->asked = true;
	c->in_flight++;
}

/* Take the finder's answer @a into the cache. */
static void find_take(struct cos_hint_cache *c, const struct hint_find *a,
		      unsigned long long now)
{
	struct hint_task *ht = &c->tasks[a->slot];
	bool mine = ht->ticket == a->ticket;	/* else the slot has another task now */
	int err = 0;

	c->in_flight--;
	if (mine) {
		ht->asked = false;
		ht->tgid = a->tgid;
		ht->start = a->start;
		if (a->want_cgroup) {
			ht->cgroup_class = a->cgroup_class;
			ht->cgroup_best = a->cgroup_best;
			ht->cgroup_read = true;
		}
	}
	if (a->want_table && a->tgid > 0)
		err = table_put(c, a->tgid, a->start, a->base, a->size, now);
	else if (a->base)
		munmap((void *)a->base, a->size);
	if (mine)
		ht->no_room = err == -ENOSPC;
}

/* Take the finder's answers into the cache. */
static void find_collect(struct cos_hint_cache *c, unsigned long long now)
{
	struct hint_find got[HINT_FIND_MAX];
	unsigned int n = cos_hint_finder_answers(&c->finder, got);

	for (unsigned int i = 0; i < n; i++)
		find_take(c, &got[i], now);
}

/*
 * @tid's record in table @i, for @ht: the page whose tid is @tid, or -ENOENT.  The page count
 * once, bounded by the size mapped; offsets from the lord's page size.
 */
static int record_find(struct cos_hint_cache *c, struct hint_task *ht, int i, int tid)
{
	struct hint_table *tb = &c->tables[i];
	unsigned int pages;

	pages = __atomic_load_n(&((const struct hint_header *)tb->base)->pages, __ATOMIC_ACQUIRE);
	if (pages > tb->size / c->page_size)
		pages = tb->size / c->page_size;
	for (unsigned int p = 1; p < pages; p++) {
		const struct cos_hint *h =
			(const struct cos_hint *)(tb->base + (size_t)p * c->page_size);

		if (__atomic_load_n(&h->tid, __ATOMIC_ACQUIRE) == tid) {
			ht->rec = h;
			ht->table = i;
			tb->refs++;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Find @tid's record: its process's table, then the page whose tid is @tid.  -EAGAIN while the
 * finder looks (the process, or its table, not known yet).
 */
static int hint_lookup(struct cos_hint_cache *c, unsigned int slot, struct hint_task *ht, int tid,
		       unsigned long long now)
{
	struct hint_table *tb;
	int i;

	if (ht->tgid < 0)
		return -ESRCH;
	if (ht->no_room)
		return -ENOSPC;
	i = ht->tgid ? table_at(c, ht->tgid, ht->start) : -1;
	if (i < 0) {
		/* the cgroup's class with the first question: a task without a record gets it */
		find_ask(c, slot, ht, tid, true, !ht->cgroup_read);
		return -EAGAIN;
	}
	tb = &c->tables[i];
	if (!tb->base || table_tampered(c, tb)) {
		/* none when last looked: still none until the finder says otherwise */
		if (!tb->bad && now >= tb->retry_at)
			find_ask(c, slot, ht, tid, true, false);
		return -ENOENT;
	}
	return record_find(c, ht, i, tid);
}

/* @class as a task under @best may have it (the finder's cgroup_class()): capped, or none. */
static unsigned int class_capped(unsigned int class, unsigned int best)
{
	if (!class || !best)
		return class;
	if (best == HINT_BEST_NONE)
		return 0;
	return class < best ? best : class;
}

/* A consistent copy of @rec (the seqcount's reader), or -EAGAIN after 1000 tries. */
static int record_copy(const struct cos_hint *rec, struct cos_hint *out)
{
	for (int tries = 0; tries < 1000; tries++) {
		unsigned int s1 = __atomic_load_n(&rec->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1)
			continue;
		memcpy(out, (const void *)rec, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&rec->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return 0;
	}
	return -EAGAIN;
}

/*
 * Slot @slot's thread exited and its page went to another: not its record any more.  Its
 * process and cgroup stay known (the cap among them).
 */
static void record_lost(struct cos_hint_cache *c, unsigned int slot)
{
	struct hint_task *ht = &c->tasks[slot], keep = *ht;

	cos_hint_cache_forget(c, slot);
	ht->tgid = keep.tgid;
	ht->start = keep.start;
	ht->cgroup_read = keep.cgroup_read;
	ht->cgroup_class = keep.cgroup_class;
	ht->cgroup_best = keep.cgroup_best;
}

unsigned long long cos_hint_cache_bad_tables(const struct cos_hint_cache *c)
{
	return c ? c->bad_tables : 0;
}

void cos_hint_cache_settle(struct cos_hint_cache *c)
{
	cos_hint_finder_settle(&c->finder);
}

int cos_hint_cache_read(struct cos_hint_cache *c, unsigned int slot, int tid,
			struct cos_hint *out, unsigned long long now)
{
	struct hint_task *ht;
	int err;

	if (slot >= c->max_tasks)
		return -EINVAL;
	find_collect(c, now);
	ht = &c->tasks[slot];
	if (ht->rec && table_tampered(c, &c->tables[ht->table]))
		record_put(c, ht);	/* the class default from now on (hint_lookup(): -ENOENT) */
	if (!ht->rec) {
		/* no system call: the finder looks (at most every COS_HINT_RETRY_NS for a table) */
		err = hint_lookup(c, slot, ht, tid, now);
		if (err == -ENOSPC || err == -ESRCH)
			return err;
		if (err) {
			if (!ht->cgroup_class)
				return err == -EAGAIN ? -EAGAIN : -ENOENT;
			memset(out, 0, sizeof(*out));
			out->tid = tid;
			out->hint_class = class_capped(ht->cgroup_class, ht->cgroup_best);
			return 0;
		}
	}
	if (record_copy(ht->rec, out))
		return -EAGAIN;		/* the writer is stuck mid-update (or very busy) */
	if (out->tid != tid) {
		record_lost(c, slot);
		return -ENOENT;
	}
	out->hint_class = class_capped(out->hint_class, ht->cgroup_best);
	return 0;
}
