// test_hint.cpp — app hints (libcos/hint_*.c) on the host: a thread publishes its record, the
// lord's cache finds it through /proc and reads consistent copies, a record follows its thread
// (exit frees the page, a new thread reuses it), a forked child has a table of its own, an
// unsealed table (one that could shrink under the reader) is refused, cos_mutex publishes
// its owner and waiters, and the finder thread runs where it is told.
// Host unit tests: see docs/testing.md.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <atomic>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <csignal>
#include <pthread.h>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern "C" {
#include "internal.h"
}
#include "hand_table.h"

namespace {

/* A thread that takes its record, runs @fn on it, then waits until told to exit. */
struct HintThread {
	std::atomic<int> tid{0};
	std::atomic<bool> quit{false};
	std::thread th;

	template <typename F> explicit HintThread(F fn)
	{
		th = std::thread([this, fn] {
			cos_hint *h = cos_hint_self();
			if (h)
				fn(h);
			tid = h ? gettid() : -1;
			while (!quit)
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
		});
		while (!tid)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	~HintThread() { stop(); }
	void stop()
	{
		quit = true;
		if (th.joinable())
			th.join();
	}
};

struct Cache {
	cos_hint_cache *c = nullptr;
	Cache() { REQUIRE(cos_hint_cache_new(&c, 64, nullptr) == 0); }
	~Cache() { cos_hint_cache_free(c); }
};

/*
 * cos_hint_cache_read() as a lord sees it once the finder has answered: a first read asks the
 * finder and says -EAGAIN; the read after the finder settles has the answer.
 */
int cache_read(cos_hint_cache *c, unsigned int slot, int tid, cos_hint *out, unsigned long long now)
{
	int err = cos_hint_cache_read(c, slot, tid, out, now);

	for (int i = 0; err == -EAGAIN && i < 3; i++) {
		cos_hint_cache_settle(c);
		err = cos_hint_cache_read(c, slot, tid, out, now);
	}
	return err;
}

constexpr unsigned long long LATER = 1000000000ull;	/* past the 50 ms retry of a miss */

/* Does @f come true within 2 s (polled every ms)? */
template <typename F> bool eventually(F f)
{
	for (int i = 0; i < 2000; i++) {
		if (f())
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return false;
}

/* A child process that runs @setup (returns the tid it published for, or -1), then waits. */
struct Child {
	pid_t pid = -1;
	int tid = 0;
	int p[2], go[2];

	template <typename F> explicit Child(F setup)
	{
		REQUIRE(pipe(p) == 0);
		REQUIRE(pipe(go) == 0);
		pid = fork();
		if (pid == 0) {
			int t = setup();
			(void)!write(p[1], &t, sizeof(t));
			char b;
			(void)!read(go[0], &b, 1);
			_exit(0);
		}
		REQUIRE(read(p[0], &tid, sizeof(tid)) == sizeof(tid));
	}
	~Child()
	{
		(void)!write(go[1], "x", 1);
		waitpid(pid, nullptr, 0);
		close(p[0]), close(p[1]), close(go[0]), close(go[1]);
	}
};

} // namespace

TEST_CASE("a thread's hint reaches the lord's cache", "[hint]")
{
	HintThread a([](cos_hint *h) {
		cos_hint_set(h, 1, -5, 123456789ull);
		cos_hint_critical(h, true);
	});
	REQUIRE(a.tid > 0);
	Cache c;
	cos_hint out;
	REQUIRE(cache_read(c.c, 3, a.tid, &out, 1) == 0);
	CHECK(out.tid == a.tid);
	CHECK(out.hint_class == 1);
	CHECK(out.prio == -5);
	CHECK(out.deadline_ns == 123456789ull);
	CHECK(out.flags == COS_HINT_F_CRITICAL);
	CHECK((out.seq & 1) == 0);
	/* a thread without a record: not found, and not looked up again for 50 ms */
	CHECK(cache_read(c.c, 4, gettid(), &out, 1) == -ENOENT);
	CHECK(cache_read(c.c, 4, gettid(), &out, 2) == -ENOENT);
	/* the main thread takes one: found once the retry time has come */
	cos_hint *mine = cos_hint_self();
	REQUIRE(mine);
	CHECK(cos_hint_self() == mine);			/* one record per thread */
	cos_hint_set(mine, 2, 0, 0);
	CHECK(cache_read(c.c, 4, gettid(), &out, LATER) == 0);
	CHECK(out.hint_class == 2);
	/* updates are seen at once, without another lookup */
	cos_hint_critical(mine, true);
	REQUIRE(cache_read(c.c, 4, gettid(), &out, LATER) == 0);
	CHECK(out.flags == COS_HINT_F_CRITICAL);
	cos_hint_critical(mine, false);
	REQUIRE(cache_read(c.c, 4, gettid(), &out, LATER) == 0);
	CHECK(out.flags == 0);
	CHECK(cache_read(c.c, 64, gettid(), &out, LATER) == -EINVAL);	/* slot range */
}

TEST_CASE("the lord's thread asks the finder and does not wait for it", "[hint]")
{
	HintThread a([](cos_hint *h) { cos_hint_set(h, 3, 0, 0); });
	REQUIRE(a.tid > 0);
	Cache c;
	cos_hint out;
	/* the first look only asks: the answer comes with a later look, no wait in between */
	CHECK(cos_hint_cache_read(c.c, 7, a.tid, &out, 1) == -EAGAIN);
	cos_hint_cache_settle(c.c);
	REQUIRE(cos_hint_cache_read(c.c, 7, a.tid, &out, 1) == 0);
	CHECK(out.hint_class == 3);
	/* a slot forgotten while its question is in flight: the old answer is not the new task's */
	CHECK(cos_hint_cache_read(c.c, 8, a.tid, &out, 1) == -EAGAIN);
	cos_hint_cache_forget(c.c, 8);
	cos_hint_cache_settle(c.c);
	CHECK(cos_hint_cache_read(c.c, 8, gettid() + 1000000, &out, 1) == -EAGAIN);	/* asked anew */
	cos_hint_cache_settle(c.c);
	CHECK(cos_hint_cache_read(c.c, 8, gettid() + 1000000, &out, 1) == -ESRCH);	/* no such thread */
}

/* The thread of this process named @name (its comm), or 0. */
static int thread_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int tid = 0;

	while (d && !tid && (de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strcmp(comm, (std::string(name) + "\n").c_str()) == 0)
			tid = atoi(de->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

TEST_CASE("the finder runs on the CPUs it is given, under its own name", "[hint]")
{
	HintThread a([](cos_hint *h) { cos_hint_set(h, 2, 0, 0); });
	REQUIRE(a.tid > 0);
	cpu_set_t mine, want, got;
	REQUIRE(sched_getaffinity(0, sizeof(mine), &mine) == 0);
	CPU_ZERO(&want);
	for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
		if (CPU_ISSET(cpu, &mine)) {
			CPU_SET(cpu, &want);	/* the last CPU this process may use */
			break;
		}
	cos_hint_cache *c = nullptr;
	REQUIRE(cos_hint_cache_new(&c, 8, &want) == 0);
	cos_hint out;
	CHECK(thread_named("cos-hint-finder") == 0);	/* started at the first question */
	CHECK(cos_hint_cache_read(c, 1, a.tid, &out, 1) == -EAGAIN);
	cos_hint_cache_settle(c);
	int finder = thread_named("cos-hint-finder");
	REQUIRE(finder > 0);
	REQUIRE(sched_getaffinity(finder, sizeof(got), &got) == 0);
	CHECK(CPU_EQUAL(&got, &want));
	CHECK(cos_hint_cache_read(c, 1, a.tid, &out, 1) == 0);
	CHECK(out.hint_class == 2);
	cos_hint_cache_free(c);
	CHECK(thread_named("cos-hint-finder") == 0);	/* joined */
}

TEST_CASE("a record belongs to its thread: exit frees it, the reader notices", "[hint]")
{
	Cache c;
	cos_hint out;
	HintThread a([](cos_hint *h) { cos_hint_set(h, 7, 0, 0); });
	int a_tid = a.tid;
	REQUIRE(cache_read(c.c, 1, a_tid, &out, 1) == 0);
	CHECK(out.hint_class == 7);
	a.stop();
	/* its page is free (or another thread's): the cached record is not A's any more */
	CHECK(cache_read(c.c, 1, a_tid, &out, 2) == -ENOENT);
	HintThread b([](cos_hint *h) { cos_hint_set(h, 9, 0, 0); });
	REQUIRE(cache_read(c.c, 2, b.tid, &out, 3) == 0);
	CHECK(out.hint_class == 9);				/* a fresh record, not A's class */
	CHECK(out.tid == b.tid);
	cos_hint_cache_forget(c.c, 2);
	REQUIRE(cache_read(c.c, 2, b.tid, &out, 4) == 0);	/* looked up again */
}

TEST_CASE("a forked child publishes in a table of its own", "[hint]")
{
	REQUIRE(cos_hint_self());		/* the parent's table exists */
	Child child([] {
		cos_hint *h = cos_hint_self();	/* a new table: not the inherited mapping */
		if (h)
			cos_hint_set(h, 42, 1, 0);
		return h ? (int)gettid() : -1;
	});
	REQUIRE(child.tid == child.pid);
	Cache c;
	cos_hint out;
	CHECK(cache_read(c.c, 0, child.tid, &out, 1) == 0);
	CHECK(out.hint_class == 42);
}

TEST_CASE("an unsealed table is not read (it could shrink under the lord)", "[hint][errors]")
{
	Child child([] {
		/* a table that looks right but has no seals, with a record for this thread */
		long ps = sysconf(_SC_PAGESIZE);
		int fd = memfd_create(COS_HINT_MEMFD_NAME, MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, 2 * ps))
			return -1;
		char *m = (char *)mmap(nullptr, 2 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return -1;
		unsigned int hdr[6] = {0};
		memcpy(hdr, "COSHINT1", 8);
		hdr[2] = 1, hdr[3] = ps, hdr[4] = 2, hdr[5] = 2;
		memcpy(m, hdr, sizeof(hdr));
		auto *h = (cos_hint *)(m + ps);
		h->tid = gettid();
		h->hint_class = 5;
		return (int)gettid();
	});
	REQUIRE(child.tid == child.pid);
	Cache c;
	cos_hint out;
	CHECK(cache_read(c.c, 0, child.tid, &out, 1) == -ENOENT);
	/* looked at again once the retry is due, and none meanwhile: -ENOENT, not -EAGAIN */
	CHECK(cos_hint_cache_read(c.c, 0, child.tid, &out, LATER) == -ENOENT);
	cos_hint_cache_settle(c.c);
	CHECK(cos_hint_cache_read(c.c, 0, child.tid, &out, LATER) == -ENOENT);
}

namespace {

/*
 * A process that makes its hint table by hand, as a hostile app may: sealed, of @pages_total
 * pages, with records for its main thread (class 5) and a second thread (class 6), and that
 * rewrites its own header when told.  Any user can do this: its table is its own memory.
 */
struct HostileTable {
	pid_t pid = -1;
	int tids[2] = {0, 0};
	int p[2], cmd[2];

	explicit HostileTable(size_t pages_total = COS_HINT_PAGES)
	{
		REQUIRE(pipe(p) == 0);
		REQUIRE(pipe(cmd) == 0);
		pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);	/* not left behind by a lord that crashed */
			close(p[0]), close(cmd[1]);
			_exit(child(pages_total));
		}
		REQUIRE(read(p[0], tids, sizeof(tids)) == sizeof(tids));
	}
	~HostileTable()
	{
		(void)!write(cmd[1], "q", 1);
		waitpid(pid, nullptr, 0);
		close(p[0]), close(p[1]), close(cmd[0]), close(cmd[1]);
	}
	/* Tell it to write @v at 32-bit word @word of its header; wait until it has. */
	void poke(int word, unsigned int v)
	{
		char c[5] = {(char)('0' + word)};
		memcpy(c + 1, &v, 4);
		REQUIRE(write(cmd[1], c, 5) == 5);
		REQUIRE(read(p[0], c, 1) == 1);
	}

	int child(size_t pages_total)
	{
		long ps = sysconf(_SC_PAGESIZE);
		char *m = hand_table(pages_total, 3, 3);
		if (!m)
			return 1;
		int go[2];
		if (pipe(go))
			return 1;
		pthread_t th;
		auto second = [](void *arg) -> void * {
			char b;
			(void)!read(*(int *)arg, &b, 1);
			return nullptr;
		};
		int tids_out[2] = {(int)gettid(), 0}, second_tid = 0;
		if (pthread_create(&th, nullptr, second, &go[0]))
			return 1;
		/* the second thread's tid: the other entry of /proc/self/task */
		for (int i = 0; i < 1000 && !second_tid; i++) {
			DIR *d = opendir("/proc/self/task");
			struct dirent *de;
			while (d && (de = readdir(d)))
				if (de->d_name[0] != '.' && atoi(de->d_name) != tids_out[0])
					second_tid = atoi(de->d_name);
			if (d)
				closedir(d);
		}
		tids_out[1] = second_tid;
		for (int i = 0; i < 2; i++) {
			auto *h = (cos_hint *)(m + (i + 1) * ps);
			h->tid = tids_out[i];
			h->hint_class = 5 + i;
		}
		(void)!write(p[1], tids_out, sizeof(tids_out));
		for (;;) {
			char c[5];
			if (read(cmd[0], c, 1) != 1 || c[0] == 'q')
				break;
			if (read(cmd[0], c + 1, 4) != 4)
				break;
			memcpy(m + 4 * (c[0] - '0'), c + 1, 4);
			(void)!write(p[1], "k", 1);
		}
		(void)!write(go[1], "x", 1);
		pthread_join(th, nullptr);
		return 0;
	}
};

} // namespace

TEST_CASE("hostile tables: a header rewritten after the check is dropped and never used", "[hint][errors]")
{
	/* words of the header: 0-1 magic, 2 version, 3 page_size, 4 pages, 5 max_pages */
	auto [word, value] = GENERATE(table<int, unsigned int>({
		{3, 0},			/* page_size 0: the lord divided by it (SIGFPE) */
		{3, 1},			/* page_size 1 */
		{5, 0xffffffffu},	/* max_pages */
		{0, 0},			/* magic */
	}));
	CAPTURE(word, value);
	HostileTable app;
	REQUIRE(app.tids[1] > 0);
	Cache c;
	cos_hint out;
	REQUIRE(cache_read(c.c, 0, app.tids[0], &out, 1) == 0);
	CHECK(out.hint_class == 5);
	CHECK(cos_hint_cache_bad_tables(c.c) == 0);
	app.poke(word, value);
	/* a new thread's lookup, then the record found before: both dropped, not crashed */
	CHECK(cache_read(c.c, 1, app.tids[1], &out, 2) == -ENOENT);
	CHECK(cache_read(c.c, 0, app.tids[0], &out, 3) == -ENOENT);
	CHECK(cos_hint_cache_bad_tables(c.c) == 1);
	/* the process is not looked at again, even once the header is put back */
	app.poke(word, word == 3 ? sysconf(_SC_PAGESIZE) : word == 5 ? COS_HINT_PAGES : 0x48534f43);
	CHECK(cache_read(c.c, 1, app.tids[1], &out, LATER) == -ENOENT);
	CHECK(cos_hint_cache_bad_tables(c.c) == 1);
}

TEST_CASE("hostile tables: a page count past the table is bounded", "[hint][errors]")
{
	HostileTable app;
	REQUIRE(app.tids[1] > 0);
	app.poke(4, 0xffffffffu);	/* pages: how many the app claims to have handed out */
	Cache c;
	cos_hint out;
	REQUIRE(cache_read(c.c, 1, app.tids[1], &out, 1) == 0);
	CHECK(out.hint_class == 6);
	CHECK(cache_read(c.c, 2, gettid() + 1000000, &out, 1) != 0);	/* walks 1023 pages, not 4 G */
	CHECK(cos_hint_cache_bad_tables(c.c) == 0);	/* legal: it only grows */
}

TEST_CASE("hostile tables: a table of another size is not mapped", "[hint][errors]")
{
	HostileTable app(4 * COS_HINT_PAGES);	/* 16 MiB: the lord would have mapped and walked it */
	REQUIRE(app.tids[0] > 0);
	Cache c;
	cos_hint out;
	CHECK(cache_read(c.c, 0, app.tids[0], &out, 1) == -ENOENT);
}

TEST_CASE("hostile tables: a FIFO named like a table does not block the finder", "[hint][errors]")
{
	/* a FIFO at /memfd:cos-hints, opened for reading (no writer) and unlinked: its fd reads
	 * "/memfd:cos-hints (deleted)", as a table's does, and opening it to read blocks */
	const char *path = "/memfd:" COS_HINT_MEMFD_NAME;
	unlink(path);
	REQUIRE(mkfifo(path, 0600) == 0);
	Child app([path] {
		int fd = open(path, O_RDONLY | O_NONBLOCK);
		unlink(path);
		return fd < 0 ? -1 : (int)gettid();
	});
	unlink(path);
	REQUIRE(app.tid > 0);
	Cache c;
	cos_hint out;
	int err = cos_hint_cache_read(c.c, 0, app.tid, &out, 1);
	/* the answer comes, and says there is no table (2 s: a finder blocked in open() never answers) */
	for (int i = 0; i < 2000 && err == -EAGAIN; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		err = cos_hint_cache_read(c.c, 0, app.tid, &out, 1);
	}
	CHECK(err == -ENOENT);
	if (err == -EAGAIN) {
		/* unblock the finder's open() so that the cache can be freed */
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/fd", app.pid);
		DIR *d = opendir(dir);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			char fd[330], target[128] = "";
			snprintf(fd, sizeof(fd), "%s/%s", dir, de->d_name);
			if (readlink(fd, target, sizeof(target) - 1) > 0 && strstr(target, COS_HINT_MEMFD_NAME)) {
				int w = open(fd, O_WRONLY | O_NONBLOCK);
				if (w >= 0)
					close(w);
			}
		}
		if (d)
			closedir(d);
	}
}

TEST_CASE("lock hints: cos_mutex publishes its owner and its waiter, and clears them", "[hint][lock]")
{
	static cos_mutex m = COS_MUTEX_INITIALIZER;
	static cos_mutex inner = COS_MUTEX_INITIALIZER;
	const unsigned long long lm = (uintptr_t)&m, li = (uintptr_t)&inner;
	Cache c;
	cos_hint out;
	cos_hint *mine = cos_hint_self();
	REQUIRE(mine);

	unsigned long long waits = mine->lock_waits;
	REQUIRE(cos_mutex_lock(&m) == 0);
	REQUIRE(cache_read(c.c, 5, gettid(), &out, LATER) == 0);
	CHECK(out.nr_locks == 1);
	CHECK(out.lock_held == lm);
	CHECK(out.lock_wait == 0);
	CHECK(out.lock_waits == waits + 1);	/* each lock counts one wait, published or not */
	/* nested: the last taken is named until it goes, the outer one stays held */
	REQUIRE(cos_mutex_lock(&inner) == 0);
	REQUIRE(cache_read(c.c, 5, gettid(), &out, LATER) == 0);
	CHECK(out.nr_locks == 2);
	CHECK(out.lock_held == li);

	/* another thread blocks on the inner one: its record names it as the lock it waits for */
	std::atomic<int> waiter{0}, lock_rc{-1}, unlock_rc{-1};
	std::atomic<bool> got{false};
	std::thread t([&] {	/* no Catch2 assertion off the main thread */
		cos_hint_self();
		waiter = gettid();
		lock_rc = cos_mutex_lock(&inner);
		got = true;
		unlock_rc = cos_mutex_unlock(&inner);
	});
	while (!waiter)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	CHECK(eventually([&] {
		return cache_read(c.c, 6, waiter, &out, LATER) == 0 && out.lock_wait == li;
	}));
	CHECK(out.nr_locks == 0);
	CHECK(out.lock_waits >= 1);
	unsigned long long its_waits = out.lock_waits;
	/* the same wait, looked at again: the same count */
	REQUIRE(cache_read(c.c, 6, waiter, &out, LATER) == 0);
	CHECK(out.lock_waits == its_waits);
	CHECK_FALSE(got);
	REQUIRE(cos_mutex_unlock(&inner) == 0);
	t.join();
	CHECK(got);
	CHECK(lock_rc == 0);
	CHECK(unlock_rc == 0);
	REQUIRE(cache_read(c.c, 5, gettid(), &out, LATER) == 0);
	CHECK(out.nr_locks == 1);
	CHECK(out.lock_held == li);	/* the last taken, while one is still held */
	REQUIRE(cos_mutex_unlock(&m) == 0);
	REQUIRE(cache_read(c.c, 5, gettid(), &out, LATER) == 0);
	CHECK(out.nr_locks == 0);
	CHECK(out.lock_held == 0);
	CHECK(out.lock_wait == 0);
	CHECK(out.lock_waits == waits + 2);	/* unlocks count nothing */

	/* trylock of a held mutex fails and publishes nothing */
	REQUIRE(cos_mutex_lock(&m) == 0);
	int try_rc = -1;
	std::thread([&] { try_rc = cos_mutex_trylock(&m); }).join();
	CHECK(try_rc == EBUSY);
	REQUIRE(cos_mutex_unlock(&m) == 0);
	/* a release without an acquire (a foreign lock) leaves the count at 0 */
	cos_hint_lock_released(mine, &m);
	REQUIRE(cache_read(c.c, 5, gettid(), &out, LATER) == 0);
	CHECK(out.nr_locks == 0);
	cos_hint_lock_acquired(nullptr, &m);	/* no record: nothing to do, no crash */
}

TEST_CASE("COS_LOCK_HANDOFF: read once, 1, 0 or a COS task's; a mutex a waiter sleeps on reads as contended", "[hint][lock]")
{
	static cos_mutex m = COS_MUTEX_INITIALIZER;
	setenv("COS_LOCK_HANDOFF", "1", 1);
	cos_lock_handoff = -1;
	CHECK(cos_lock_handoff_on());
	setenv("COS_LOCK_HANDOFF", "0", 1);
	CHECK(cos_lock_handoff_on());		/* read once */
	cos_lock_handoff = -1;
	CHECK_FALSE(cos_lock_handoff_on());
	/* unset, or not 0 or 1: a COS task's unlocks yield; this thread is not one */
	for (const char *v : {(const char *)nullptr, "yes"}) {
		CAPTURE(v ? v : "(unset)");
		v ? setenv("COS_LOCK_HANDOFF", v, 1) : unsetenv("COS_LOCK_HANDOFF");
		cos_lock_handoff = -1;
		CHECK_FALSE(cos_lock_handoff_on());
		CHECK(cos_lock_handoff == COS_LOCK_HANDOFF_AUTO);
		CHECK(cos_lock_handoff_auto() == (sched_getscheduler(0) == COS_SCHED_EXT));
	}
	unsetenv("COS_LOCK_HANDOFF");

	CHECK_FALSE(cos_lock_contended(&m.m));
	REQUIRE(cos_mutex_lock(&m) == 0);
	CHECK_FALSE(cos_lock_contended(&m.m));	/* held, nobody waits */
	std::atomic<bool> got{false};
	setenv("COS_LOCK_HANDOFF", "1", 1);	/* the waiter's unlock yields: it still returns 0 */
	cos_lock_handoff = -1;
	std::atomic<int> unlock_rc{-1};
	std::thread t([&] {
		cos_mutex_lock(&m);
		got = true;
		unlock_rc = cos_mutex_unlock(&m);
	});
	CHECK(eventually([&] { return cos_lock_contended(&m.m); }));	/* it sleeps on it */
	CHECK_FALSE(got);
	REQUIRE(cos_mutex_unlock(&m) == 0);	/* contended: wakes it, then yields */
	t.join();
	CHECK(got);
	CHECK(unlock_rc == 0);
	CHECK_FALSE(cos_lock_contended(&m.m));
	unsetenv("COS_LOCK_HANDOFF");
	cos_lock_handoff = -1;

	/* robust, PI and PP mutexes keep the owner's tid in the word: never "contended" */
	pthread_mutexattr_t a;
	pthread_mutex_t r;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&r, &a);
	REQUIRE(pthread_mutex_lock(&r) == 0);
	CHECK_FALSE(cos_lock_contended(&r));
	pthread_mutex_unlock(&r);
	pthread_mutex_destroy(&r);
	pthread_mutexattr_destroy(&a);
}

TEST_CASE("libcos-lock.so: an unmodified program's pthread mutexes publish lock hints", "[hint][lock][preload]")
{
	/* the waiter takes it with pthread_mutex_lock(), or _clocklock() (interposed too) */
	std::string how = GENERATE("lock", "clock");
	CAPTURE(how);
	/* the interposer and the helper sit beside this binary (build/unit/) */
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	REQUIRE(n > 0);
	self[n] = 0;
	std::string dir(self);
	dir = dir.substr(0, dir.rfind('/'));
	std::string preload = "LD_PRELOAD=" + dir + "/libcos-lock.so", helper = dir + "/lock-helper";
	int in[2], out[2];
	REQUIRE(pipe(in) == 0);
	REQUIRE(pipe(out) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);	/* else its stdin never ends */
		close(out[0]);
		char *argv[] = {const_cast<char *>(helper.c_str()), const_cast<char *>(how.c_str()), nullptr};
		char *envp[] = {const_cast<char *>(preload.c_str()), nullptr};
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	FILE *from = fdopen(out[0], "r");
	REQUIRE(from);
	int main_tid = 0, waiter = 0;
	unsigned long long lock = 0;
	char first[128] = "";
	REQUIRE(fgets(first, sizeof(first), from));
	REQUIRE(sscanf(first, "%d %d %llu", &main_tid, &waiter, &lock) == 3);

	Cache c;
	cos_hint h;
	/* main holds it; the waiter publishes that it waits for it */
	REQUIRE(cache_read(c.c, 7, main_tid, &h, LATER) == 0);
	CHECK(h.nr_locks == 1);
	CHECK(h.lock_held == lock);
	CHECK(eventually([&] {
		return cache_read(c.c, 8, waiter, &h, LATER) == 0 && h.lock_wait == lock;
	}));
	CHECK(h.nr_locks == 0);

	/* main unlocks: its record says so; the waiter holds it and no longer waits */
	REQUIRE(write(in[1], "go\n", 3) == 3);
	char line[16] = "";
	REQUIRE(fgets(line, sizeof(line), from));
	CHECK(std::string(line) == "done\n");
	REQUIRE(cache_read(c.c, 8, waiter, &h, LATER) == 0);
	CHECK(h.nr_locks == 1);
	CHECK(h.lock_held == lock);
	CHECK(h.lock_wait == 0);
	CHECK(eventually([&] {
		return cache_read(c.c, 7, main_tid, &h, LATER) == 0 && h.nr_locks == 0 &&
		       h.lock_held == 0;
	}));
	close(in[1]);	/* end of input: the waiter unlocks, the helper exits */
	int st = -1;
	waitpid(pid, &st, 0);
	fclose(from);
	CHECK(WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 0);
}
