// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * hint.c — app hints: a task publishes a small record (class, priority, critical section,
 * deadline) in a page of its own; the lord reads it with plain loads, no system call on either
 * side once set up.  See docs/abi.md, "App hint pages", and docs/writing-a-policy.md, "App hints".
 *
 * The app's side: one hint table per process, a memfd named COS_HINT_MEMFD_NAME, sealed at its
 * full size so that it cannot shrink under a reader.  Page 0 is a header; each thread claims
 * another page (its tid marks it) and gives it back at exit.  A child after fork() drops the
 * parent's table (pthread_atfork) and makes its own.
 *
 * The lord's side: it names a task's process by tgid and start time (pids are reused), finds
 * the table among /proc/<tgid>/fd, checks header and seals and maps it read-only.  Opening
 * another process's fd needs ptrace access (root, or CAP_SYS_PTRACE).  Those lookups in /proc
 * are the finder's, a thread of the lord's process: the lord's own thread never blocks on
 * them (see struct hint_finder).
 *
 * A task without a record gets its cgroup's class (xattr COS_HINT_CGROUP_XATTR, written by
 * cos-oci-hook), read once per task: one that moves keeps its first cgroup's class.  Only root
 * can write trusted.* xattrs, so a container cannot give itself a class.  Nor can it claim a
 * better one in its own records than the operator allowed: the nearest
 * COS_HINT_CGROUP_BEST_XATTR up the task's cgroup path, read with the class, caps what its
 * record says (a cgroup the container made below its own is covered too).
 *
 * Ordering: the writer makes seq odd, fences (release), writes the fields and makes seq even
 * with a release store; the reader loads seq (acquire), copies, fences (acquire), reloads seq and
 * retries if it changed or was odd — the contract of the kernel's status table.
 *
 * Hostile input: a table is memory the app (any user: a COS task needs no privilege) may keep
 * writing after the lord checked it.  The lord takes sizes and offsets from its own copy of
 * what it checked (struct hint_table), never from the page: the header's page count is read
 * once and bounded, a record is copied before it is looked at, and a table whose header no
 * longer matches the copy is dropped and not looked at again for that process (its tasks get
 * their class default), and counted (cos_sched_hint_bad_tables()).  The table's size is fixed
 * (COS_HINT_PAGES pages, exactly), and the finder maps only a regular, sealed memfd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"

#define HINT_MAGIC		"COSHINT1"
#define COS_HINT_RETRY_NS	50000000ull	/* a process without a table is looked at again after */

struct hint_header {
	char magic[8];
	unsigned int version;		/* 1 */
	unsigned int page_size;
	unsigned int pages;		/* pages ever claimed, including this header (atomic) */
	unsigned int max_pages;
};

/* Is @hd (a copy, not the shared page) the header of a table for pages of @ps bytes? */
static bool header_ok(const struct hint_header *hd, size_t ps)
{
	return !memcmp(hd->magic, HINT_MAGIC, sizeof(hd->magic)) && hd->version == 1 &&
	       hd->page_size == ps && hd->max_pages == COS_HINT_PAGES;
}

/* A copy of the header at @base, taken once: what is checked is what is used. */
static void header_copy(struct hint_header *hd, const char *base)
{
	memcpy(hd, base, sizeof(*hd));
	__atomic_signal_fence(__ATOMIC_ACQUIRE);	/* no load of @base after this is merged into it */
	hd->pages = __atomic_load_n(&((const struct hint_header *)base)->pages, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------- the app's side */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char *table;			/* this process's table, mapped read-write */
static int table_fd = -1;		/* kept open: the lord finds the table among our fds */
static pid_t table_pid;			/* the process that made it (fork makes a new one) */
static size_t page_size;
static pthread_key_t page_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* initial-exec: one load from the thread pointer, also in libcos.so and libcos-lock.so (a
 * general-dynamic access there would call __tls_get_addr on every lock) */
__thread struct cos_hint *cos_my_hint __attribute__((tls_model("initial-exec")));

/* At thread exit: give the page back (tid 0 = free). */
static void release_page(void *p)
{
	struct cos_hint *h = p;

	if (h && table_pid == getpid())
		__atomic_store_n(&h->tid, 0, __ATOMIC_RELEASE);
}

/*
 * In a child after fork: the parent's table is not ours.  Unmap it and close its fd, so that the
 * lord does not find the parent's table among the child's fds; a new one is made on demand.
 */
static void forget_parent_table(void)
{
	if (table) {
		munmap(table, (size_t)COS_HINT_PAGES * page_size);
		close(table_fd);
		table = NULL;
		table_fd = -1;
	}
	cos_my_hint = NULL;
}

static void make_key(void)
{
	pthread_key_create(&page_key, release_page);
	pthread_atfork(NULL, NULL, forget_parent_table);
}

static int make_table(void)
{
	size_t size;
	int fd, err;
	char *p;

	page_size = sysconf(_SC_PAGESIZE);
	size = (size_t)COS_HINT_PAGES * page_size;
	fd = memfd_create(COS_HINT_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		close(fd);
		return err;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	struct hint_header *hd = (struct hint_header *)p;

	table_fd = fd;	/* stays open: it is how the lord finds the table (/proc/<pid>/fd) */

	hd->version = 1;
	hd->page_size = page_size;
	hd->max_pages = COS_HINT_PAGES;
	hd->pages = 1;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(hd->magic, HINT_MAGIC, sizeof(hd->magic));
	table = p;
	table_pid = getpid();
	return 0;
}

/*
 * Is @fd a hint table we may map: a regular file (a memfd: it has seals), sealed against
 * shrinking (else it could shrink under a reader: SIGBUS), of exactly COS_HINT_PAGES pages,
 * with a good header?  Its size in @size.  Both sides use it: the app on a table it inherited,
 * the lord on an app's.
 */
static bool table_check(int fd, size_t *size)
{
	size_t ps = sysconf(_SC_PAGESIZE), want = (size_t)COS_HINT_PAGES * ps;
	struct hint_header hd;
	struct stat stt;
	const char *p;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &stt) || !S_ISREG(stt.st_mode) ||
	    stt.st_size != (off_t)want)
		return false;
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return false;
	header_copy(&hd, p);
	munmap((void *)p, ps);
	*size = want;
	return header_ok(&hd, ps);
}

/*
 * Open (@oflags) the first good hint table among the fds listed in @fd_dir (/proc/<pid>/fd): the
 * memfd named COS_HINT_MEMFD_NAME.  Its number there in @found, its size in @size.
 * Returns the new fd (O_CLOEXEC) or -ENOENT.
 */
static int table_find(const char *fd_dir, int oflags, int *found, size_t *size)
{
	static const char want[] = "/memfd:" COS_HINT_MEMFD_NAME " (deleted)";
	char path[64 + sizeof(((struct dirent *)0)->d_name)], target[128];
	struct dirent *de;
	struct stat st;
	int fd = -1;
	DIR *d = opendir(fd_dir);

	if (!d)
		return -ENOENT;
	while (fd < 0 && (de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", fd_dir, de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, want))
			continue;
		/*
		 * Any file can be named so (a FIFO at "/memfd:cos-hints" in a container's root):
		 * only a regular one is opened, and without blocking (a FIFO swapped in after the
		 * stat() opens at once, and table_check() refuses it).
		 */
		if (stat(path, &st) || !S_ISREG(st.st_mode) ||
		    (fd = open(path, oflags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
			continue;
		if (!table_check(fd, size)) {
			close(fd);
			fd = -1;
			continue;
		}
		*found = atoi(de->d_name);
	}
	closedir(d);
	return fd < 0 ? -ENOENT : fd;
}

/*
 * A table inherited across exec (cosctl run --policy-class keeps its own open for the command):
 * use it, so that the record it made for this thread, and the lord's view, stay valid.
 */
static int adopt_table(void)
{
	int fd, inherited;
	size_t size;
	char *p;

	page_size = sysconf(_SC_PAGESIZE);
	fd = table_find("/proc/self/fd", O_RDWR, &inherited, &size);
	if (fd < 0)
		return fd;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	close(inherited);	/* ours now through @fd (O_CLOEXEC): not for what we exec */
	table = p;
	table_fd = fd;
	table_pid = getpid();
	return 0;
}

COS_EXPORT int cos_hint_keep_on_exec(void)
{
	int ret;

	pthread_mutex_lock(&table_lock);
	if (!table || table_pid != getpid())
		ret = -ENOENT;
	else
		ret = fcntl(table_fd, F_SETFD, 0) ? -errno : 0;
	pthread_mutex_unlock(&table_lock);
	return ret;
}

COS_EXPORT struct cos_hint *cos_hint_self(void)
{
	struct hint_header *hd;
	struct cos_hint *h = NULL;
	unsigned int i, n;
	int err = 0;
	pid_t tid;

	/*
	 * The fast path, one thread-local load: every lock call comes here.  A child after fork()
	 * finds it NULL (forget_parent_table(), an atfork handler); getpid() would be a system
	 * call per lock.
	 */
	if (cos_my_hint)
		return cos_my_hint;
	tid = gettid();
	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&table_lock);
	if (!table || table_pid != getpid())	/* first use, or a child after fork */
		err = adopt_table() == 0 ? 0 : make_table();
	if (err) {
		pthread_mutex_unlock(&table_lock);
		errno = -err;
		return NULL;
	}
	hd = (struct hint_header *)table;
	/*
	 * Our record if the table has one already (made for us before exec), else a page freed by
	 * an exited thread, else a new one.  Claims are atomic: an inherited table may be shared
	 * with the process that made it.
	 */
	n = __atomic_load_n(&hd->pages, __ATOMIC_ACQUIRE);
	if (n > COS_HINT_PAGES)		/* an inherited table is shared: bound what it says */
		n = COS_HINT_PAGES;
	for (i = 1; i < n && !h; i++) {
		struct cos_hint *c = (struct cos_hint *)(table + (size_t)i * page_size);

		if (__atomic_load_n(&c->tid, __ATOMIC_ACQUIRE) == tid)
			h = c;
	}
	if (h)
		goto out;
	for (i = 1; i < n && !h; i++) {
		struct cos_hint *c = (struct cos_hint *)(table + (size_t)i * page_size);
		int zero = 0;

		if (__atomic_compare_exchange_n(&c->tid, &zero, -1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			h = c;
	}
	while (!h && n < COS_HINT_PAGES) {
		if (__atomic_compare_exchange_n(&hd->pages, &n, n + 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			struct cos_hint *c = (struct cos_hint *)(table + (size_t)n * page_size);
			int zero = 0;

			/* visible as free (tid 0) from now: claim it like a freed page */
			if (__atomic_compare_exchange_n(&c->tid, &zero, -1, false, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED))
				h = c;
			n++;
		}
	}
	if (h) {
		/* a clean record (even seq, class/prio 0, no flags), then it is ours */
		unsigned int seq = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);

		__atomic_store_n(&h->seq, seq | 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		h->flags = 0;
		h->hint_class = 0;
		h->prio = 0;
		h->deadline_ns = 0;
		h->nr_locks = 0;
		h->lock_held = 0;
		h->lock_wait = 0;
		__atomic_store_n(&h->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&h->tid, tid, __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&table_lock);
	if (!h) {
		errno = ENOSPC;
		return NULL;
	}
	cos_my_hint = h;
	pthread_setspecific(page_key, h);
	return h;
}

/* Writer side of the seqcount: odd, fields, even. */
static void hint_write_begin(struct cos_hint *h)
{
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);	/* odd before the fields change */
}

static void hint_write_end(struct cos_hint *h)
{
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);	/* fields, then even */
}

COS_EXPORT void cos_hint_set(struct cos_hint *h, unsigned int hint_class, int prio,
			     unsigned long long deadline_ns)
{
	hint_write_begin(h);
	__atomic_store_n(&h->hint_class, hint_class, __ATOMIC_RELAXED);
	__atomic_store_n(&h->prio, prio, __ATOMIC_RELAXED);
	__atomic_store_n(&h->deadline_ns, deadline_ns, __ATOMIC_RELAXED);
	hint_write_end(h);
}

COS_EXPORT void cos_hint_critical(struct cos_hint *h, bool inside)
{
	hint_write_begin(h);
	__atomic_store_n(&h->flags, inside ? h->flags | COS_HINT_F_CRITICAL
					   : h->flags & ~COS_HINT_F_CRITICAL, __ATOMIC_RELAXED);
	hint_write_end(h);
}

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

/* ---------------------------------------------------------------- the lord's side */

#define HINT_TABLES_MAX	64

/*
 * A process's table as the lord knows it: mapped (@base), or known to be missing until
 * @retry_at (@base NULL: a process without hints costs no system call per lookup).  @size and
 * @checked are the lord's own: what the table was when it was checked (table_check()).  A
 * @bad table's header changed since: no lookup uses it, its tasks let go of their records at
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

#define HINT_FIND_MAX	256	/* questions to the finder in flight at most */
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
 * task until the kernel declared the lord stalled.  The lord asks (find_ask()) and collects
 * the answers at its next read (find_collect()): a task's hint shows one look later.  The
 * rings and counters are under @lock; @nr_answered is also read without it.
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
	if (cpus)
		c->finder.cpus = *cpus;
	pthread_mutex_init(&c->finder.lock, NULL);
	pthread_cond_init(&c->finder.work, NULL);
	pthread_cond_init(&c->finder.idle, NULL);
	*cp = c;
	return 0;
}

/* Tell the finder whether table @i is mapped (the lord's thread). */
static void table_known(struct cos_hint_cache *c, int i)
{
	struct hint_table *tb = &c->tables[i];

	pthread_mutex_lock(&c->finder.lock);
	c->finder.known[i].tgid = tb->base ? tb->tgid : 0;
	c->finder.known[i].start = tb->start;
	pthread_mutex_unlock(&c->finder.lock);
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

/*
 * Has @tb's header changed since it was checked?  Then it is @bad from now on (see struct
 * hint_table), counted once, and unmapped if no record is in use.  The lord's thread.
 */
static bool table_tampered(struct cos_hint_cache *c, struct hint_table *tb)
{
	struct hint_header now;

	if (tb->bad)
		return true;
	header_copy(&now, tb->base);
	now.pages = 0;
	if (!memcmp(&now, &tb->checked, sizeof(now)))
		return false;
	tb->bad = true;
	tb->retry_at = ~0ull;
	c->bad_tables++;
	if (!tb->refs)
		table_unmap(c, tb);
	return true;
}

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

static void finder_stop(struct hint_finder *f)
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

void cos_hint_cache_free(struct cos_hint_cache *c)
{
	if (!c)
		return;
	finder_stop(&c->finder);
	for (unsigned int i = 0; i < HINT_TABLES_MAX; i++)
		table_drop(c, &c->tables[i]);
	pthread_cond_destroy(&c->finder.work);
	pthread_cond_destroy(&c->finder.idle);
	pthread_mutex_destroy(&c->finder.lock);
	free(c->tasks);
	free(c);
}

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
	fd = table_find(dir, O_RDONLY, &found, sizep);
	if (fd < 0)
		return fd;
	p = mmap(NULL, *sizep, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*basep = p;
	return 0;
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
 * The finder's answer about process (@tgid, @start)'s table: mapped at @base, or missing
 * (@base NULL: looked at again after COS_HINT_RETRY_NS).  Kept in its entry, or a new one (an
 * earlier process's with the same tgid, or one nobody's record is in, makes room); a second
 * mapping of a table already known is unmapped.  -ENOSPC (and unmapped) with no room.
 */
static int table_put(struct cos_hint_cache *c, int tgid, unsigned long long start,
		     const char *base, size_t size, unsigned long long now)
{
	int i = table_at(c, tgid, start), free_i = -1;
	struct hint_table *tb;

	if (i >= 0 && (c->tables[i].base || c->tables[i].bad)) {	/* known, or not to be used */
		if (base)
			munmap((void *)base, size);
		return 0;
	}
	for (int k = 0; i < 0 && k < HINT_TABLES_MAX; k++) {
		tb = &c->tables[k];
		if (tb->tgid == tgid && !tb->refs)
			table_drop(c, tb);	/* that pid's earlier process: gone */
		if (free_i < 0 && !tb->tgid)
			free_i = k;
	}
	for (int k = 0; i < 0 && free_i < 0 && k < HINT_TABLES_MAX; k++)
		if (!c->tables[k].refs)
			free_i = k;	/* nobody's record is in it: may be evicted */
	if (i < 0)
		i = free_i;
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
	if (base) {
		/* checked by the finder (table_check()); what it holds now is what counts */
		header_copy(&tb->checked, base);
		tb->checked.pages = 0;
		if (size != (size_t)COS_HINT_PAGES * c->page_size || !header_ok(&tb->checked, c->page_size)) {
			tb->bad = true;
			tb->retry_at = ~0ull;
			c->bad_tables++;
			munmap((void *)base, size);
			tb->base = NULL;
			tb->size = 0;
			return 0;
		}
		table_known(c, i);
	}
	return 0;
}

static void *finder_main(void *arg);

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

/* Ask the finder about @ht (slot @slot, thread @tid), unless a question is in flight. */
static void find_ask(struct cos_hint_cache *c, unsigned int slot, struct hint_task *ht, int tid,
		     bool want_table, bool want_cgroup)
{
	struct hint_finder *f = &c->finder;

	if (ht->asked || c->in_flight >= HINT_FIND_MAX || finder_start(f))
		return;
	pthread_mutex_lock(&f->lock);
	f->asked[f->ask_tail++ % HINT_FIND_MAX] = (struct hint_find){
		.slot = slot,
		.ticket = ht->ticket,
		.tid = tid,
		.tgid = ht->tgid > 0 ? ht->tgid : 0,
		.start = ht->start,
		.want_table = want_table,
		.want_cgroup = want_cgroup,
	};
	pthread_cond_signal(&f->work);
	pthread_mutex_unlock(&f->lock);
	ht->asked = true;
	c->in_flight++;
}

/* Take the finder's answers into the cache.  The lord's thread. */
static void find_collect(struct cos_hint_cache *c, unsigned long long now)
{
	struct hint_finder *f = &c->finder;
	struct hint_find got[HINT_FIND_MAX];
	unsigned int n = 0;

	if (!__atomic_load_n(&f->nr_answered, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&f->lock);
	for (; f->ans_head != f->ans_tail; f->ans_head++)
		got[n++] = f->answered[f->ans_head % HINT_FIND_MAX];
	__atomic_store_n(&f->nr_answered, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&f->lock);
	for (unsigned int i = 0; i < n; i++) {
		struct hint_find *a = &got[i];
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
}

/*
 * Find @tid's record: its process's table, then the page whose tid is @tid.  -EAGAIN while the
 * finder looks (the process, or its table, not known yet).
 */
static int hint_lookup(struct cos_hint_cache *c, unsigned int slot, struct hint_task *ht, int tid,
		       unsigned long long now)
{
	struct hint_table *tb;
	unsigned int pages;
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
	/* the page count once, bounded by the size mapped; offsets from the lord's page size */
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

/* @class as a task under @best may have it (cgroup_class()): capped, or none at all. */
static unsigned int class_capped(unsigned int class, unsigned int best)
{
	if (!class || !best)
		return class;
	if (best == HINT_BEST_NONE)
		return 0;
	return class < best ? best : class;
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

unsigned long long cos_hint_cache_bad_tables(const struct cos_hint_cache *c)
{
	return c ? c->bad_tables : 0;
}

void cos_hint_cache_settle(struct cos_hint_cache *c)
{
	struct hint_finder *f = &c->finder;

	pthread_mutex_lock(&f->lock);
	while (f->started && (f->ask_head != f->ask_tail || f->busy))
		pthread_cond_wait(&f->idle, &f->lock);
	pthread_mutex_unlock(&f->lock);
}

int cos_hint_cache_read(struct cos_hint_cache *c, unsigned int slot, int tid,
			struct cos_hint *out, unsigned long long now)
{
	struct hint_task *ht;
	int err, tries;

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
	for (tries = 0; tries < 1000; tries++) {
		unsigned int s1 = __atomic_load_n(&ht->rec->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1)
			continue;
		memcpy(out, (const void *)ht->rec, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&ht->rec->seq, __ATOMIC_RELAXED);
		if (s1 != s2)
			continue;
		if (out->tid != tid) {
			/*
			 * The thread exited and its page went to another: not ours any more.
			 * Its process and cgroup stay known (the cap among them).
			 */
			struct hint_task keep = *ht;

			cos_hint_cache_forget(c, slot);
			ht->tgid = keep.tgid;
			ht->start = keep.start;
			ht->cgroup_read = keep.cgroup_read;
			ht->cgroup_class = keep.cgroup_class;
			ht->cgroup_best = keep.cgroup_best;
			return -ENOENT;
		}
		out->hint_class = class_capped(out->hint_class, ht->cgroup_best);
		return 0;
	}
	return -EAGAIN;		/* the writer is stuck mid-update (or very busy) */
}
