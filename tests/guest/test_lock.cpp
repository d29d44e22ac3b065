// SPDX-License-Identifier: GPL-2.0
/*
 * test_lock.cpp — cos-lock and the lock hints in the guest, on one enclave CPU: an owner keeps
 * its CPU past its turn until its cap and not after, with cos_mutex and with a plain pthread
 * mutex under LD_PRELOAD=libcos-lock.so (the interposer's hints are the ones the lord acts on);
 * the waiter an unlock wakes runs before the tasks that queued earlier (cos-fifo, which reads no
 * hints, runs those first).  Behaviour only: orders of events, never durations.
 */
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <semaphore.h>

#include "guest.h"

using namespace guest;

namespace {
/* What the owner workload saw: when the owner let its lock go, when the other thread ran. */
struct OwnerRun {
	std::atomic<uint64_t> release{0}, other_ran{0};
	std::atomic<int> bad{0};
};

/*
 * The owner takes a lock and spins 600 ms holding it; the other thread, which the owner wakes
 * once it holds the lock, only records when it first runs.  One enclave CPU: the other runs
 * before the release only if the lord preempts the owner.
 */
template <class Lock, class Unlock> void owner_workload(OwnerRun *r, Lock lock, Unlock unlock)
{
	sem_t go;
	sem_init(&go, 0, 0);
	std::thread other([&] {
		sem_wait(&go);
		r->other_ran = now_ns();
	});
	std::thread owner([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
		lock();
		sem_post(&go);
		uint64_t t = now_ns();
		while (now_ns() - t < 600000000ull)
			;
		r->release = now_ns();
		unlock();
		if (sched_getcpu() != 1)
			r->bad = 1;
	});
	owner.join();
	other.join();
	sem_destroy(&go);
}

/* The same, exec'd with LD_PRELOAD=libcos-lock.so: a plain pthread mutex, no libcos call. */
const char *const PRELOAD_CHILD = "COS_TEST_LOCK_PRELOAD_OUT";

__attribute__((constructor)) void preload_child()
{
	const char *out = getenv(PRELOAD_CHILD);
	if (!out)
		return;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static OwnerRun r;
	owner_workload(&r, [] { pthread_mutex_lock(&m); }, [] { pthread_mutex_unlock(&m); });
	FILE *f = fopen(out, "w");
	if (!f)
		_exit(3);
	fprintf(f, "%llu %llu %d\n", (unsigned long long)r.release.load(),
		(unsigned long long)r.other_ran.load(), r.bad.load());
	fclose(f);
	_exit(0);
}

enum Locking { COS_MUTEX, PTHREAD_PRELOAD };

/* The owner workload as a COS task under cos-lock with @cap_us; its stats in @lord_err. */
OwnerRun *owner_under_cos_lock(Locking how, const char *cap_us, std::string *lord_err)
{
	PolicyProc lord({build_path("bin/cos-lock"), "--cpus", "1", "--slice-us", "10000", "--cap-us",
			 cap_us, "--max-wait-us", "100000000", "--stall-ms", stall_arg(1000),
			 "--starve-ms", starve_arg(5000)});
	REQUIRE(lord.wait_for("cos-lock: lord on CPU 0"));
	OwnerRun *r = shared_new<OwnerRun>();
	std::string out = "/tmp/test_lock.preload." + std::to_string(getpid());
	int rc = in_child([&] {
		unpin_self();
		if (become_cos_task())
			return 10;
		if (how == COS_MUTEX) {
			static cos_mutex m = COS_MUTEX_INITIALIZER;
			if (!cos_hint_self())	/* the process's table, before its threads */
				return 11;
			owner_workload(r, [] { cos_mutex_lock(&m); }, [] { cos_mutex_unlock(&m); });
			return 0;
		}
		setenv("LD_PRELOAD", build_path("lib/libcos-lock.so").c_str(), 1);
		setenv(PRELOAD_CHILD, out.c_str(), 1);
		execl("/proc/self/exe", "test_lock", (char *)nullptr);
		return 127;
	});
	CHECK(rc == 0);
	if (how == PTHREAD_PRELOAD) {
		unsigned long long rel = 0, ran = 0;
		int bad = -1;
		FILE *f = fopen(out.c_str(), "r");
		REQUIRE(f);
		CHECK(fscanf(f, "%llu %llu %d", &rel, &ran, &bad) == 3);
		fclose(f);
		unlink(out.c_str());
		r->release = rel;
		r->other_ran = ran;
		r->bad = bad;
	}
	CHECK(lord.stop(SIGINT) == 0);
	*lord_err = lord.err;
	CHECK(r->bad == 0);
	return r;
}
} // namespace

TEST_CASE("cos-lock: an owner keeps its CPU until its cap, and not after", "[lock][policies]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	for (Locking how : {COS_MUTEX, PTHREAD_PRELOAD}) {
		CAPTURE(how == COS_MUTEX ? "cos_mutex" : "pthread under libcos-lock.so");
		std::string held_err, capped_err;
		/* a 10 ms turn; the owner holds its lock for 600 ms: spared for 5 s, or for 50 ms */
		OwnerRun *held = owner_under_cos_lock(how, "5000000", &held_err);
		OwnerRun *capped = owner_under_cos_lock(how, "50000", &capped_err);
		CAPTURE(held_err, capped_err);
		CHECK(held->release < held->other_ran);	/* not preempted while it held the lock */
		CHECK(capped->other_ran < capped->release);	/* no owner keeps a CPU past the cap */
		/* its loop ticks at a quarter turn: the end of a turn or a cap waits no longer */
		CHECK(held_err.find(", tick 2500 us") != std::string::npos);
		CHECK(held_err.find(" spared 0 ") == std::string::npos);
		CHECK(capped_err.find(" capped 0 ") == std::string::npos);
		shared_delete(held);
		shared_delete(capped);
	}
	CHECK(sched_ext_state() == "enabled");
}

namespace {
/* When each thread of the handoff workload got where it was going. */
struct Handoff {
	std::atomic<uint64_t> unlocked{0}, waiter_got{0}, queued_ran[2]{};
	std::atomic<int> bad{0};
};

/*
 * One CPU.  The owner holds a cos_mutex; the waiter blocks on it; then the owner wakes two
 * plain spinners (they queue behind it), holds the lock a while longer, lets it go (waking the
 * waiter) and spins on, unlocked, past its turn.  Who runs first after the unlock: the waiter
 * (a lock-aware lord) or the spinners that queued before it (a FIFO)?
 */
int handoff_workload(Handoff *h)
{
	static cos_mutex m = COS_MUTEX_INITIALIZER;
	sem_t go;
	std::atomic<bool> waiting{false};
	sem_init(&go, 0, 0);
	std::vector<std::thread> spinners;
	for (int i = 0; i < 2; i++)
		spinners.emplace_back([&, i] {
			sem_wait(&go);
			h->queued_ran[i] = now_ns();
			uint64_t t = now_ns();
			while (now_ns() - t < 50000000ull)
				;
		});
	std::thread owner([&] {
		cos_mutex_lock(&m);
		std::thread waiter([&] {
			waiting = true;
			cos_mutex_lock(&m);		/* blocks: the owner holds it */
			h->waiter_got = now_ns();
			cos_mutex_unlock(&m);
		});
		while (!waiting)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		/*
		 * it blocks, and the lord's finder looks its record up (a waiter woken before
		 * that waits as a plain task until the lord finds it: "resorted")
		 */
		std::this_thread::sleep_for(std::chrono::milliseconds(20 * time_scale()));
		sem_post(&go);
		sem_post(&go);
		uint64_t t = now_ns();
		while (now_ns() - t < 20000000ull)	/* 20 ms of a 200 ms turn, holding */
			;
		h->unlocked = now_ns();
		cos_mutex_unlock(&m);
		t = now_ns();
		while (now_ns() - t < 100000000ull)	/* unlocked, still in its turn */
			;
		waiter.join();
		if (sched_getcpu() != 1)
			h->bad = 1;
	});
	owner.join();
	for (auto &t : spinners)
		t.join();
	sem_destroy(&go);
	return 0;
}

/* The workload under the lord @argv, with COS_LOCK_HANDOFF set to @yield (nullptr: unset). */
Handoff *handoff_under(const std::vector<std::string> &argv, const char *ready, std::string *err,
		       const char *yield)
{
	PolicyProc lord(argv);
	REQUIRE(lord.wait_for(ready));
	Handoff *h = shared_new<Handoff>();
	int rc = in_child([&] {
		unpin_self();
		yield ? setenv("COS_LOCK_HANDOFF", yield, 1) : unsetenv("COS_LOCK_HANDOFF");
		if (!cos_hint_self())	/* the process's table, before its threads */
			return 11;
		return become_cos_task() ? 10 : handoff_workload(h);
	});
	CHECK(rc == 0);
	CHECK(lord.stop(SIGINT) == 0);
	*err = lord.err;
	CHECK(h->bad == 0);
	return h;
}
} // namespace

TEST_CASE("cos-lock: the waiter an unlock wakes runs before the tasks queued earlier", "[lock][policies]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	auto common = std::vector<std::string>{"--cpus", "1", "--slice-us", "200000", "--stall-ms",
					       stall_arg(1000), "--starve-ms", starve_arg(5000)};
	auto with = [&](const char *prog, std::vector<std::string> own) {
		std::vector<std::string> a{build_path(prog)};
		a.insert(a.end(), own.begin(), own.end());
		a.insert(a.end(), common.begin(), common.end());
		return a;
	};
	std::string lk_err, nh_err, ff_err, ky_err;
	/* the lord's own handoff: the unlock does not yield */
	Handoff *lk = handoff_under(with("bin/cos-lock", {"--max-wait-us", "100000000"}),
				    "cos-lock: lord on CPU 0", &lk_err, "0");
	Handoff *nh = handoff_under(with("bin/cos-lock", {"--max-wait-us", "100000000", "--no-handoff"}),
				    "cos-lock: lord on CPU 0", &nh_err, nullptr);
	Handoff *ff = handoff_under(with("bin/cos-fifo", {}), "cos-fifo: lord on CPU 0", &ff_err, nullptr);
	/* cos_mutex as it ships: a COS task's contended unlock yields, and the kernel hands over */
	Handoff *ky = handoff_under(with("bin/cos-lock", {"--max-wait-us", "100000000"}),
				    "cos-lock: lord on CPU 0", &ky_err, nullptr);
	CAPTURE(lk_err, nh_err, ff_err, ky_err);
	for (Handoff *h : {lk, nh, ff, ky}) {
		REQUIRE(h->unlocked != 0);
		REQUIRE(h->waiter_got != 0);
		CHECK(h->waiter_got > h->unlocked);
	}
	for (int i = 0; i < 2; i++) {
		CAPTURE(i);
		/* handoff: the waiter takes its releaser's CPU at once; before the queued spinners */
		CHECK(lk->waiter_got < lk->queued_ran[i]);
		CHECK(ky->waiter_got < ky->queued_ran[i]);
		/* without: it runs when the owner's turn ends, still before them */
		CHECK(nh->waiter_got < nh->queued_ran[i]);
		/* a FIFO: after the spinners that queued before it (its yield hands nothing over) */
		CHECK(ff->waiter_got > ff->queued_ran[i]);
	}
	/*
	 * the handoffs came before the owner's turn ended: the owner spun on after them.  The
	 * lord's (" handoffs N "), or with the yield the kernel's (" wake-handoffs N "; the lord,
	 * which hears of the wake-up as the yield begins, may hand over too, and the first wins)
	 */
	CHECK(lk_err.find(" handoffs 0 ") == std::string::npos);
	CHECK(ky_err.find(" wake-handoffs 0 ") == std::string::npos);
	CHECK(nh_err.find(" handoffs 0 ") != std::string::npos);
	CHECK(nh_err.find(" wake-handoffs 0 ") != std::string::npos);
	for (Handoff *h : {lk, nh, ff, ky})
		shared_delete(h);
	CHECK(sched_ext_state() == "enabled");
}

namespace {
/* When each thread of the yield workload got where it was going. */
struct YieldRun {
	std::atomic<uint64_t> yielded{0}, woken_ran{0}, spun{0}, queued_ran[2]{};
	std::atomic<int> bad{0};
};

/*
 * One CPU.  The yielder wakes two spinners (they queue behind it), then a third thread, which
 * holds no lock and waits for none, and yields; then it spins on, past nothing but its own
 * long turn.  Who runs first: the thread it woke (the kernel's handoff, COS_WAKE_HANDOFF) or
 * the spinners that queued before it (the lord's FIFO)?
 */
int yield_workload(YieldRun *y)
{
	sem_t go, wake;
	sem_init(&go, 0, 0);
	sem_init(&wake, 0, 0);
	std::vector<std::thread> spinners;
	for (int i = 0; i < 2; i++)
		spinners.emplace_back([&, i] {
			sem_wait(&go);
			y->queued_ran[i] = now_ns();
			uint64_t t = now_ns();
			while (now_ns() - t < 20000000ull)
				;
		});
	std::thread woken([&] {
		sem_wait(&wake);
		y->woken_ran = now_ns();
	});
	std::thread yielder([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));	/* all of them block */
		sem_post(&go);
		sem_post(&go);
		sem_post(&wake);	/* the last it wakes */
		y->yielded = now_ns();
		sched_yield();
		uint64_t t = now_ns();
		while (now_ns() - t < 100000000ull)	/* 100 ms of a 200 ms turn */
			;
		y->spun = now_ns();
		if (sched_getcpu() != 1)
			y->bad = 1;
	});
	yielder.join();
	woken.join();
	for (auto &t : spinners)
		t.join();
	sem_destroy(&go);
	sem_destroy(&wake);
	return 0;
}
} // namespace

TEST_CASE("cos-lock: a yield hands its CPU to the thread it woke, with no round trip", "[lock][policies][wake]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	auto run = [](std::vector<std::string> own, const char *ready, std::string *err) {
		std::vector<std::string> a{build_path("bin/cos-lock"), "--cpus", "1", "--slice-us", "200000",
					   "--max-wait-us", "100000000", "--stall-ms", stall_arg(1000),
					   "--starve-ms", starve_arg(5000)};
		a.insert(a.end(), own.begin(), own.end());
		PolicyProc lord(a);
		REQUIRE(lord.wait_for(ready));
		YieldRun *y = shared_new<YieldRun>();
		int rc = in_child([&] {
			unpin_self();
			return become_cos_task() ? 10 : yield_workload(y);
		});
		CHECK(rc == 0);
		CHECK(lord.stop(SIGINT) == 0);
		*err = lord.err;
		CHECK(y->bad == 0);
		return y;
	};
	std::string on_err, off_err;
	YieldRun *on = run({}, "wake rules idle and handoff", &on_err);
	YieldRun *off = run({"--no-handoff"}, "wake rules idle,", &off_err);
	CAPTURE(on_err, off_err);
	for (YieldRun *y : {on, off}) {
		REQUIRE(y->yielded != 0);
		REQUIRE(y->woken_ran != 0);
		CHECK(y->woken_ran > y->yielded);
	}
	/* the woken thread ran at the yield, before the yielder's turn was over */
	CHECK(on->woken_ran < on->spun);
	for (int i = 0; i < 2; i++) {
		CAPTURE(i);
		CHECK(on->woken_ran < on->queued_ran[i]);
		/* without the rule the yield changes nothing: the spinners queued first */
		CHECK(off->woken_ran > off->queued_ran[i]);
	}
	CHECK(on_err.find(" wake-handoffs 0 ") == std::string::npos);
	CHECK(off_err.find(" wake-handoffs 0 ") != std::string::npos);
	shared_delete(on);
	shared_delete(off);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-lock explains itself and refuses bad values with status 2", "[lock][usage]")
{
	std::string out;
	CHECK(sh(build_path("bin/cos-lock") + " --help", &out) == 0);
	CHECK(out.find("usage: ") == 0);
	for (const char *opt : {"--cap-us N", "--max-wait-us N", "--no-handoff", "--no-block-handoff",
				"--slice-us N", "--stats"})
		CHECK(out.find(opt) != std::string::npos);
	for (const char *opt : {"--cap-us", "--max-wait-us", "--slice-us"})
		for (const char *bad : {"0", "-1", "x", "", "5000000000"}) {
			CAPTURE(opt, bad);
			CHECK(sh(build_path("bin/cos-lock") + " " + opt + " '" + bad + "' 2>/dev/null") == 2);
		}
}
