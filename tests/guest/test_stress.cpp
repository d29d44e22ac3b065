// test_stress.cpp — the stress gate, as sched_ext's own CI has for every scheduler: the shim
// alone and each of the five lords run 45 s of `stress-ng --aggressive` (CPU, fork, pipe and
// affinity churn), with cgroups made, filled and removed, and one enclave CPU taken offline and
// back, meanwhile.  Afterwards the shim is still the scheduler, the lord still registered and
// running, stress-ng ended in time, and the kernel log is clean (the harness checks it: a
// task stuck past sched_ext's watchdog disables it with a "runnable task stall" line).
// COS_STRESS_SECONDS changes the 45 s.  See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "guest.h"

using namespace guest;

namespace {

int stress_seconds()
{
	const char *s = getenv("COS_STRESS_SECONDS");
	return s && atoi(s) > 0 ? atoi(s) : 45;
}

/*
 * The churn beside the load, in a thread, until @stop: cgroups under /sys/fs/cgroup/cos-stress
 * made, given a process of the load, and removed; CPU @cpu taken offline and back each 5 s.
 */
struct Churn {
	std::atomic<bool> stop{false};
	std::atomic<int> cgroups{0}, hotplugs{0};
	std::thread th;
	Churn(int cpu)
	{
		mkdir("/sys/fs/cgroup/cos-stress", 0755);
		th = std::thread([this, cpu] {
			auto next_plug = std::chrono::steady_clock::now() + std::chrono::seconds(2);
			for (int i = 0; !stop; i++) {
				std::string cg = "/sys/fs/cgroup/cos-stress/c" + std::to_string(i % 8);
				/* a stress-ng worker moves in, then back out, and the cgroup goes */
				sh("mkdir -p " + cg + " && p=$(pgrep -n stress-ng) && echo $p >" + cg +
				   "/cgroup.procs 2>/dev/null; sleep 0.05; echo $p >/sys/fs/cgroup/cgroup.procs "
				   "2>/dev/null; rmdir " + cg + " 2>/dev/null");
				cgroups++;
				if (std::chrono::steady_clock::now() >= next_plug) {
					CpuOffline off(cpu);
					if (off.ok)
						hotplugs++;
					std::this_thread::sleep_for(std::chrono::milliseconds(500));
					next_plug = std::chrono::steady_clock::now() + std::chrono::seconds(5);
				}
			}
		});
	}
	~Churn()
	{
		stop = true;
		th.join();
		sh("rmdir /sys/fs/cgroup/cos-stress/c* /sys/fs/cgroup/cos-stress 2>/dev/null");
	}
};

/* stress-ng --aggressive for @secs, as @prefix says (a COS task under a lord, or not). */
int stress(const std::string &prefix, int secs)
{
	std::string out;
	int rc = sh(prefix + "timeout -k 10 " + std::to_string(secs * 4 + 60) +
		    " stress-ng --aggressive --cpu 4 --fork 4 --pipe 4 --affinity 4 --timeout " +
		    std::to_string(secs) + "s --metrics-brief 2>&1", &out);
	std::cerr << out;
	return rc;
}

} // namespace

TEST_CASE("the shim alone survives stress-ng with cgroup and hotplug churn", "[stress]")
{
	Shim shim;
	{
		Churn churn(3);
		CHECK(stress("", stress_seconds()) == 0);
		CHECK(churn.cgroups > 0);
		CHECK(churn.hotplugs > 0);
	}
	CHECK(sched_ext_state() == "enabled");
	CHECK(sched_ext_ops() == COS_SHIM_NAME);
}

TEST_CASE("each lord survives stress-ng on its enclave with cgroup and hotplug churn", "[stress][lord]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	const std::string cosctl = build_path("bin/cosctl");
	for (const char *policy : {"cos-fifo", "cos-shinjuku", "cos-lock", "cos-lcbe", "cos-pair"}) {
		CAPTURE(policy);
		PolicyProc lord({build_path(std::string("bin/") + policy), "--name", "stress", "--cpus", "1-3",
				 "--stall-ms", stall_arg(0), "--starve-ms", starve_arg(0)});
		REQUIRE(lord.wait_for(std::string(policy) + ": lord on CPU 0"));
		{
			Churn churn(3);
			CHECK(stress(cosctl + " run --enclave stress -- ", stress_seconds()) == 0);
			CHECK(churn.hotplugs > 0);
		}
		std::string out;
		CHECK(sh(cosctl + " status", &out) == 0);
		CAPTURE(out);
		CHECK(out.find("enclave:    stress (id ") != std::string::npos);
		CHECK(kill(lord.pid, 0) == 0);
		CHECK(lord.stop(SIGINT) == 0);
		CAPTURE(lord.err);
		CHECK(sched_ext_state() == "enabled");
		CHECK(sched_ext_ops() == COS_SHIM_NAME);
	}
}
