// test_hostile.cpp — what an unprivileged COS task writes cannot crash or stall a lord
// (docs/design.md, "Hostile input"): a program that runs as nobody makes its own hint table,
// lets the lord find it, then rewrites its header and starts new threads; each lord that reads
// hints (cos-lcbe, cos-shinjuku, cos-lock) keeps running, drops the table, counts it and exits
// cleanly.  See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "guest.h"
#include "hand_table.h"

using namespace guest;

namespace {

/* Spin @us microseconds, then sleep @sleep_us: a task that keeps waking for the lord. */
void work(int rounds, int us, int sleep_us)
{
	for (int r = 0; r < rounds; r++) {
		auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
		while (std::chrono::steady_clock::now() < until)
			;
		std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
	}
}

/*
 * The hostile program, in a child: nobody, a COS task, a well-formed sealed table with a
 * record (class 1) for its main thread; it works for a second (the lord finds the table),
 * writes page_size 0 into its header (the lord divided by it: SIGFPE), and starts 8 threads
 * (new lookups).  Returns 0 once they are done.
 */
int hostile()
{
	long ps = sysconf(_SC_PAGESIZE);
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 10;
	if (become_cos_task())
		return 11;
	char *m = hand_table(COS_HINT_PAGES, 16, 16);
	if (!m)
		return 12;
	auto *mine = (cos_hint *)(m + ps);
	mine->hint_class = 1;
	__atomic_store_n(&mine->tid, (int)gettid(), __ATOMIC_RELEASE);
	work(400, 200, 2000);				/* ~1 s of wake-ups: the lord maps the table */
	__atomic_store_n(&((unsigned int *)m)[3], 0u, __ATOMIC_RELEASE);	/* page_size = 0 */
	std::vector<std::thread> ts;
	for (int i = 0; i < 8; i++)
		ts.emplace_back([m, ps, i] {
			auto *h = (cos_hint *)(m + (i + 2) * ps);
			h->hint_class = 2;
			__atomic_store_n(&h->tid, (int)gettid(), __ATOMIC_RELEASE);
			work(100, 200, 1000);
		});
	for (auto &t : ts)
		t.join();
	return 0;
}

} // namespace

TEST_CASE("a hint table rewritten after the lord checked it: the lord drops it and lives", "[hostile][hints]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	for (const char *policy : {"cos-lcbe", "cos-shinjuku", "cos-lock"}) {
		CAPTURE(policy);
		PolicyProc lord({build_path(std::string("bin/") + policy), "--cpus", "1-3",
				 "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(10000)});
		REQUIRE(lord.wait_for(std::string(policy) + ": lord on CPU 0"));
		int rc = in_child([] {
			unpin_self();
			return hostile();
		});
		CHECK(rc == 0);
		CHECK(kill(lord.pid, 0) == 0);			/* alive: no SIGFPE */
		int code = lord.stop(SIGINT);
		CAPTURE(lord.err);
		CHECK(code == 0);
		CHECK(last_stat(lord.err, "hint-bad-tables") == 1);
		CHECK(last_stat(lord.err, "stalls") == 0);
		CHECK(sched_ext_state() == "enabled");
	}
}
