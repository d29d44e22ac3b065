// test_fallback.cpp — safety: a killed lord hands its tasks to the fair policy at once, a stopped
// lord is declared stalled and gets control back when it catches up, and a full ring is reported
// (OVERFLOW) and recovered from the status table without losing a task.  See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <csignal>
#include <functional>
#include <iostream>
#include <new>
#include <sched.h>
#include <sys/mman.h>
#include <string>
#include <sys/syscall.h>

#include "guest.h"
#include "lord_fifo.h"

using namespace guest;

namespace {

/* A lord in its own process that consumes messages but never shoots: its tasks just wait. */
struct IdleLord {
	struct State {
		std::atomic<int> registered{0};
		std::atomic<int> stalls_seen{0};
		std::atomic<int> active{1};
		std::atomic<int> loops{0};	/* rounds of consume, publish, wait */
	};
	State *st = shared_new<State>();
	pid_t pid;

	/* attach_shim: the lord's process attaches the shim itself (not pinned), as a lord does
	 * when none is attached: the link then dies with the process. */
	IdleLord(std::vector<int> cpus, unsigned stall_ms, unsigned starve_ms, bool attach_shim = false)
	{
		pid = fork();
		if (pid == 0) {
			cos_shim *shim;
			if (attach_shim && cos_shim_attach(&shim, nullptr))
				_exit(1);
			cpu_set_t set;
			CPU_ZERO(&set);
			for (int c : cpus)
				CPU_SET(c, &set);
			cos_lord_opts o = {};
			o.size = sizeof(o);
			o.lord_cpu = 0;
			o.enclave = &set;
			o.enclave_size = sizeof(set);
			o.stall_ms = stall_ms;
			o.starve_ms = starve_ms;
			cos_lord *lord;
			if (cos_lord_register(&lord, &o))
				_exit(1);
			st->registered = 1;
			for (;;) {
				const cos_msg *m;
				while ((m = cos_lord_peek(lord))) {
					if (m->type == COS_MSG_LORD_STALL)
						st->stalls_seen++;
					cos_lord_consume(lord);
				}
				cos_lord_publish(lord);
				st->active = cos_lord_ctl(lord)->lord_active;
				st->loops++;
				cos_lord_wait(lord, 1000000);
			}
		}
		while (!st->registered) {
			REQUIRE(waitpid(pid, nullptr, WNOHANG) == 0);	/* it did not fail */
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
	}
	~IdleLord()
	{
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		shared_delete(st);
	}
};


/*
 * The module's count of stalls (struct cos_info.stalls).  A kill test's lord has 10 s limits, the
 * most the module takes, and the count must not move: the kill path ran the tasks, not a stall
 * rule that would have rescued them had the kill path been broken.
 */
uint64_t module_stalls()
{
	REQUIRE(access(COS_DEVICE_PATH, F_OK) == 0);
	return module_info().stalls;
}

/* N COS threads in a child that each wait (in custody) and record when they first run again. */
template <int N> struct Waiters {
	struct State {
		std::atomic<int> ready{0};
		std::atomic<int> go{0};
		std::atomic<int> ran{0};
		uint64_t ran_at[N];
	};
	State *st = shared_new<State>();
	pid_t pid;

	/* hog: once it ran, each task spins until every one ran (CPU hogs, not sleepers) */
	explicit Waiters(bool hog = false)
	{
		pid = fork();
		if (pid == 0) {
			unpin_self();
			std::vector<std::thread> ts;
			for (int i = 0; i < N; i++)
				ts.emplace_back([this, i, hog] {
					become_cos_task();
					st->ready++;
					while (!st->go)		/* block, wake, wait for a lord that never shoots */
						std::this_thread::sleep_for(std::chrono::milliseconds(5));
					st->ran_at[i] = now_ns();
					st->ran++;
					uint64_t until = st->ran_at[i] + 20000000000ull;
					while (hog && st->ran < N && now_ns() < until)
						;		/* 20 s at most, should one never run */
				});
			for (auto &t : ts)
				t.join();
			_exit(0);
		}
		while (st->ready < N)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	/* "p50 A p90 B max C": µs from @t to each task's first run (0 if before); checks they all ran */
	std::string first_runs_since(uint64_t t)
	{
		std::vector<uint64_t> us;
		for (int i = 0; i < N; i++) {
			CHECK(st->ran_at[i] > 0);
			us.push_back(st->ran_at[i] > t ? (st->ran_at[i] - t) / 1000 : 0);
		}
		std::sort(us.begin(), us.end());
		return "p50 " + std::to_string(us[N / 2]) + " p90 " + std::to_string(us[N * 9 / 10]) +
		       " max " + std::to_string(us.back());
	}
	int wait_exit()
	{
		int s = -1;
		waitpid(pid, &s, 0);
		return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
	}
	~Waiters() { shared_delete(st); }
};
} // namespace

TEST_CASE("a lord killed with SIGKILL: its runnable tasks run at once under the fair policy", "[fallback][kill]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	/*
	 * The waiters first: a thread preempted between becoming a COS task and counting itself
	 * ready would otherwise wait for a lord that never shoots (10 s, until the stall rules).
	 * Sleeping every 5 ms, each comes under the lord at its next wake-up once it registers.
	 */
	uint64_t t0 = now_ns();
	Waiters<16> w;
	std::cerr << "waiters up after " << (now_ns() - t0) / 1000 << "us\n";
	auto *lord = new IdleLord({1, 2, 3}, 10000, 10000);	/* no stall rule fires: only death helps */
	std::cerr << "lord up after " << (now_ns() - t0) / 1000 << "us\n";
	std::this_thread::sleep_for(std::chrono::milliseconds(50));	/* every waiter woke since */
	w.st->go = 1;					/* each wakes and waits for the lord */
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	for (int i = 0; i < 16; i++)
		CHECK(w.st->ran_at[i] == 0);		/* nobody ran: the lord holds them */
	uint64_t stalls = module_stalls();
	uint64_t killed = now_ns();
	delete lord;					/* SIGKILL */
	REQUIRE(w.wait_exit() == 0);			/* all of them finish */
	CHECK(module_stalls() == stalls);		/* through the kill path, not a stall rule */
	std::vector<uint64_t> us;
	for (int i = 0; i < 16; i++) {
		CHECK(w.st->ran_at[i] > killed);
		us.push_back((w.st->ran_at[i] - killed) / 1000);
	}
	std::sort(us.begin(), us.end());
	std::cerr << "after SIGKILL of the lord, the 16 waiting tasks first ran after (us): min " << us.front()
		  << " median " << us[8] << " max " << us.back() << "\n";
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a lord killed with SIGKILL while 250 tasks wait for it: every one runs again", "[fallback][kill][many]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	constexpr int N = 250;
	Waiters<N> w(true);				/* hogs once they ran */
	auto *lord = new IdleLord({1, 2, 3}, 10000, 10000);	/* only its death helps */
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	w.st->go = 1;
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	uint64_t stalls = module_stalls();
	uint64_t killed = now_ns();
	delete lord;					/* SIGKILL */
	REQUIRE(w.wait_exit() == 0);			/* all of them finish */
	CHECK(module_stalls() == stalls);		/* through the kill path, not a stall rule */
	/* a measurement, not a check: docs/performance.md reports it */
	std::cerr << "after SIGKILL of the lord, " << N << " waiting tasks first ran after (us): "
		  << w.first_runs_since(killed) << "\n";
	CHECK(sched_ext_state() == "enabled");
}

/*
 * The lord's process attached the shim (no shim was attached, as `cos-fifo` does): its death
 * also closes the shim's link and sched_ext disables the shim, so two exits race, the lord's
 * (the module's fallback) and the shim's (sched_ext moves every task back to the fair class).
 */
TEST_CASE("a lord that attached the shim itself, killed while 250 tasks wait: every one runs again", "[fallback][kill][many][ownshim]")
{
	{
		Shim probe;				/* can this kernel have lords? */
		REQUIRE_LORD_SUPPORT();
	}
	REQUIRE(sched_ext_state() != "enabled");
	constexpr int N = 250;
	Waiters<N> w(true);				/* SCHED_EXT, under the fair class for now */
	auto *lord = new IdleLord({1, 2, 3}, 10000, 10000, true);
	REQUIRE(sched_ext_state() == "enabled");
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	w.st->go = 1;
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	int held = 0;
	for (int i = 0; i < N; i++)
		held += w.st->ran_at[i] == 0;
	uint64_t stalls = module_stalls();
	uint64_t killed = now_ns();
	delete lord;					/* SIGKILL */
	REQUIRE(w.wait_exit() == 0);			/* all of them finish */
	CHECK(module_stalls() == stalls);		/* through the kill path, not a stall rule */
	std::cerr << "after SIGKILL of the lord that attached the shim, " << N << " tasks (" << held
		  << " waiting for it) first ran after (us): " << w.first_runs_since(killed) << "\n";
	CHECK(held > N / 2);				/* the lord held most of them */
	for (int i = 0; i < 2000 && sched_ext_state() != "disabled"; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	CHECK(sched_ext_state() == "disabled");		/* the shim went with its process */
}

/*
 * Whether the lord stopped before or after consuming its tasks' messages, one of the two stall
 * rules fires (unconsumed messages after stall_ms, or a task waiting longer than starve_ms).
 */
TEST_CASE("a stopped lord is declared stalled; after SIGCONT it gets control back", "[fallback][stall]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	IdleLord lord({1, 2, 3}, 50, 100);
	Waiters<16> w;
	std::cerr << "test " << getpid() << " lord " << lord.pid << " waiters " << w.pid << "\n";
	REQUIRE(kill(lord.pid, SIGSTOP) == 0);
	uint64_t stopped = now_ns();
	w.st->go = 1;
	REQUIRE(w.wait_exit() == 0);			/* the stall fallback ran them all */
	std::vector<uint64_t> us;
	for (int i = 0; i < 16; i++)
		us.push_back((w.st->ran_at[i] - stopped) / 1000);
	std::sort(us.begin(), us.end());
	std::cerr << "with the lord stopped (stall_ms 50), the 16 tasks first ran after (us): min "
		  << us.front() << " median " << us[8] << " max " << us.back() << "\n";
	REQUIRE(kill(lord.pid, SIGCONT) == 0);
	/* two rounds after SIGCONT: it has consumed what was posted while it was stopped */
	uint64_t cont = now_ns(), limit = 10000000000ull * time_scale();
	int loops = lord.st->loops;
	while (!(lord.st->loops >= loops + 2 && lord.st->stalls_seen && lord.st->active) &&
	       now_ns() - cont < limit)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	int stalls = lord.st->stalls_seen, active = lord.st->active;	/* read once: CAPTURE */
	std::cerr << "after SIGCONT, the lord had control again after " << (now_ns() - cont) / 1000
		  << "us (" << stalls << " stalls seen)\n";
	CHECK(stalls >= 1);				/* it was told (LORD_STALL) */
	CHECK(active == 1);				/* and has control again */
	/* and keeps it: nothing waits, so neither rule fires again (no stale custody entry) */
	std::this_thread::sleep_for(std::chrono::milliseconds(1000));
	int stalls_after = lord.st->stalls_seen, active_after = lord.st->active;
	CHECK(stalls_after == stalls);
	CHECK(active_after == 1);
	std::string status;				/* cosctl status counts it */
	CHECK(sh(build_path("bin/cosctl") + " status", &status) == 0);
	CAPTURE(status);
	CHECK(status.find(" 0 stalls,") == std::string::npos);
	CHECK(status.find(" stalls,") != std::string::npos);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a lord that consumes but never shoots is declared stalled (starved tasks)", "[fallback][starve]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	IdleLord lord({1, 2, 3}, 10000, 200);
	Waiters<4> w;
	uint64_t t0 = now_ns();
	w.st->go = 1;
	REQUIRE(w.wait_exit() == 0);			/* ran after starve_ms, not after the 30 s watchdog */
	for (int i = 0; i < 5000 && !lord.st->stalls_seen; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	CHECK(lord.st->stalls_seen >= 1);
	uint64_t last = 0;
	for (int i = 0; i < 4; i++)
		last = std::max(last, w.st->ran_at[i]);
	std::cerr << "starved tasks: the last one ran " << (last - t0) / 1000 << "us after they started waiting (starve_ms 200)\n";
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("ring overflow: OVERFLOW is posted, the lord resyncs, no task is lost", "[fallback][overflow]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	FifoLord lord(0, {1, 2, 3}, 10000, 64, 10000);	/* a 64-entry ring; no stall rule fires */
	REQUIRE(lord.register_error == 0);
	lord.pause = true;				/* the lord "sleeps": nothing is consumed */
	struct State {
		std::atomic<int> created{0};
		std::atomic<int> go{0};
		std::atomic<int> cos{0};
		std::atomic<int> finished{0};
	};
	auto *st = shared_new<State>();
	pid_t child = fork();
	if (child == 0) {
		/*
		 * The first 100 threads are all created (as normal tasks) before any becomes a COS
		 * task.  Creating a thread takes the process's mmap_lock; a COS task preempted while
		 * it holds that lock (a page fault) waits for the paused lord, and so would the
		 * creator: only the stall rule would end that.
		 */
		unpin_self();
		std::vector<std::thread> ts;
		for (int i = 0; i < 2000; i++) {
			ts.emplace_back([st] {
				while (!st->go)
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
				become_cos_task();
				st->cos++;
				std::this_thread::sleep_for(std::chrono::microseconds(100));
				st->finished++;
			});
			st->created++;
			if (ts.size() == 100) {		/* keep at most 100 threads alive at once */
				while (!st->go)
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
				for (auto &t : ts)
					t.join();
				ts.clear();
			}
		}
		for (auto &t : ts)
			t.join();
		_exit(0);
	}
	while (st->created < 100)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	uint64_t t_created = now_ns();
	st->go = 1;				/* 100 threads become COS tasks at once */
	for (int i = 0; i < 5000 && st->cos < 100; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	uint64_t t_unpause = now_ns();
	lord.pause = false;				/* wakes up, finds OVERFLOW, resyncs */
	int s = -1;
	waitpid(child, &s, 0);
	uint64_t t_done = now_ns();
	CHECK(WIFEXITED(s));
	CHECK(WEXITSTATUS(s) == 0);
	CHECK(st->finished == 2000);
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	lord.finish();
	size_t overflows = std::count_if(lord.log.begin(), lord.log.end(),
					 [](const cos_msg &m) { return m.type == COS_MSG_OVERFLOW; });
	CHECK(overflows >= 1);
	CHECK(lord.dropped > 0);
	std::string status;			/* and cosctl status counts them */
	CHECK(sh(build_path("bin/cosctl") + " --json status", &status) == 0);
	CAPTURE(status);
	CHECK(status.find("\"dropped\":0}") == std::string::npos);
	CHECK(status.find("\"dropped\":") != std::string::npos);
	for (const cos_msg &m : lord.log)
		if (m.type == COS_MSG_LORD_STALL)
			UNSCOPED_INFO("LORD_STALL " << m.arg << " at " << (int64_t)(m.ts - t_created) / 1000000
				      << " ms after 100 threads were created");
	INFO("first message at " << (lord.log.empty() ? 0 : (int64_t)(lord.log[0].ts - t_created) / 1000000)
	     << " ms, message 60 at " << (lord.log.size() > 60 ? (int64_t)(lord.log[60].ts - t_created) / 1000000 : 0)
	     << " ms");
	INFO("unpaused " << (t_unpause - t_created) / 1000000 << " ms after that, all done at "
	     << (t_done - t_created) / 1000000 << " ms; lord loop's longest pause "
	     << lord.max_gap_ns / 1000000 << " ms, ending at "
	     << (int64_t)(lord.max_gap_end_ns - t_created) / 1000000 << " ms on CPU " << lord.max_gap_cpu);
	CHECK(std::none_of(lord.log.begin(), lord.log.end(),
			   [](const cos_msg &m) { return m.type == COS_MSG_LORD_STALL; }));
	for (size_t i = 0; i < lord.log.size(); i++)
		REQUIRE(lord.log[i].seq == i + 1);	/* no gaps, even across overflows */
	shared_delete(st);
	CHECK(sched_ext_state() == "enabled");
}
