// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * hint_app.c — app hints, the app's side: the process's hint table and the calling thread's
 * record in it, written with plain stores.  The app's threads run it (through cos_hint_self()
 * and the calls that write a record); the lord only reads what it writes (hint_cache.c).  See
 * docs/writing-a-policy.md, "App hints", and docs/abi.md, "App hint pages".
 *
 * One hint table per process (its format: hint_table.c), made at the first cos_hint_self(), or
 * the one the process inherited across exec.  Each thread claims a page (its tid marks it) and
 * gives it back at exit.  A child after fork() drops the parent's table (pthread_atfork) and
 * makes its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hint_internal.h"

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
 * A table inherited across exec (cosctl run --policy-class keeps its own open for the command):
 * use it, so that the record it made for this thread, and the lord's view, stay valid.
 */
static int adopt_table(void)
{
	int fd, inherited;
	size_t size;
	char *p;

	page_size = sysconf(_SC_PAGESIZE);
	fd = cos_hint_table_find("/proc/self/fd", O_RDWR, &inherited, &size);
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

/* The record on page @i of the table. */
static struct cos_hint *table_record(unsigned int i)
{
	return (struct cos_hint *)(table + (size_t)i * page_size);
}

/* Among the first @n pages: the record made for @tid already (before exec), or NULL. */
static struct cos_hint *record_of(pid_t tid, unsigned int n)
{
	for (unsigned int i = 1; i < n; i++) {
		struct cos_hint *c = table_record(i);

		if (__atomic_load_n(&c->tid, __ATOMIC_ACQUIRE) == tid)
			return c;
	}
	return NULL;
}

/*
 * Take @c if it is free (tid 0): marked taken (tid -1) until it is clean.  Atomic, though under
 * table_lock: an inherited table may be shared with the process that made it.
 */
static bool record_take(struct cos_hint *c)
{
	int zero = 0;

	return __atomic_compare_exchange_n(&c->tid, &zero, -1, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_RELAXED);
}

/*
 * A record to claim: a page freed by an exited thread among the first @n (the header's count as
 * read), else a new one, counted in the header.  NULL when the table is full.
 */
static struct cos_hint *record_claim(unsigned int n)
{
	struct hint_header *hd = (struct hint_header *)table;

	for (unsigned int i = 1; i < n; i++)
		if (record_take(table_record(i)))
			return table_record(i);
	while (n < COS_HINT_PAGES) {
		if (__atomic_compare_exchange_n(&hd->pages, &n, n + 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			struct cos_hint *c = table_record(n);

			/* visible as free (tid 0) from now: claim it like a freed page */
			if (record_take(c))
				return c;
			n++;
		}
	}
	return NULL;
}

/* Make @h, just claimed, a clean record (even seq, class/prio 0, no flags), then @tid's. */
static void record_init(struct cos_hint *h, pid_t tid)
{
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

COS_EXPORT struct cos_hint *cos_hint_self(void)
{
	struct cos_hint *h;
	unsigned int n;
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
	/* our record if the table has one already, else a freed page, else a new one */
	n = __atomic_load_n(&((struct hint_header *)table)->pages, __ATOMIC_ACQUIRE);
	if (n > COS_HINT_PAGES)		/* an inherited table is shared: bound what it says */
		n = COS_HINT_PAGES;
	h = record_of(tid, n);
	if (!h && (h = record_claim(n)))
		record_init(h, tid);
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
