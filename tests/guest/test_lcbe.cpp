// SPDX-License-Identifier: GPL-2.0
/*
 * test_lcbe.cpp — cos-lcbe on one enclave CPU: a latency-critical (LC) task that wakes takes a
 * best-effort (BE) task's CPU, BE tasks take turns, a CPU-bound LC task leaves BE its floor
 * (and does not without one), a cgroup's class makes its tasks LC, --help and bad values.
 * Behaviour only: who ran, in what order, with what share of the CPU; no speed.
 */
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

#include "guest.h"

using namespace guest;

namespace {
constexpr int MAX_PROCS = 4;

/* What each process of a workload saw: its CPU time, its loops, when it stopped. */
struct Run {
	std::atomic<uint64_t> cpu_ns[MAX_PROCS]{}, loops[MAX_PROCS]{};
	std::atomic<int> wakes{0}, bad{0};
	std::atomic<bool> stop{false};
};

int write_str(const std::string &path, const std::string &v)
{
	FILE *f = fopen(path.c_str(), "w");
	if (!f)
		return -errno;
	int ok = fputs(v.c_str(), f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

uint64_t thread_cpu_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A COS task with hint class @cls (0: none) that spins until told to stop, counting. */
void spinner(Run *r, int i, unsigned cls)
{
	if (cls) {
		struct cos_hint *h = cos_hint_self();
		if (!h) {
			r->bad = 1;
			return;
		}
		cos_hint_set(h, cls, 0, 0);
	}
	while (!r->stop) {
		r->loops[i]++;
		if ((r->loops[i] & 1023) == 0)
			r->cpu_ns[i] = thread_cpu_ns();
	}
	r->cpu_ns[i] = thread_cpu_ns();
}

/*
 * The calling COS task turns LC (hint class 1); the lord has found its hint on return.  Its
 * finder looks up one process at a time, a new one's table in up to 70 ms in the emulator:
 * three processes take 200 ms.
 */
bool become_lc(Run *r)
{
	struct cos_hint *h = cos_hint_self();

	if (!h) {
		r->bad = 1;
		return false;
	}
	cos_hint_set(h, 1, 0, 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	return true;
}

/* The lord cos-lcbe on CPU 1 with @own options; stopped (stats in @err) when it goes. */
struct Lcbe {
	PolicyProc lord;
	explicit Lcbe(std::vector<std::string> own)
		: lord([&] {
			  std::vector<std::string> a{build_path("bin/cos-lcbe"), "--cpus", "1",
						     "--stall-ms", stall_arg(1000), "--starve-ms",
						     starve_arg(10000), "--events"};
			  a.insert(a.end(), own.begin(), own.end());
			  return a;
		  }())
	{
		REQUIRE(lord.wait_for("cos-lcbe: lord on CPU 0"));
	}
	std::string stop()
	{
		CHECK(lord.stop(SIGINT) == 0);
		return lord.err;
	}
};

/* The lord's statistic @key ("lc-preempts") from its last statistics line, or -1. */
long long stat_of(const std::string &err, const std::string &key)
{
	size_t at = err.rfind(" " + key + " ");
	return at == std::string::npos ? -1 : std::stoll(err.substr(at + key.size() + 2));
}

/*
 * Fork @n processes running @fn(i) as COS tasks (@before(i) first, before they become COS
 * tasks); @ms later, stop them and wait.
 */
int procs_for(Run *r, int n, unsigned ms, const std::function<void(int)> &fn,
	      const std::function<void(int)> &before = nullptr)
{
	std::vector<pid_t> pids;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0) {
			unpin_self();
			if (before)
				before(i);
			if (become_cos_task())
				_exit(10);
			fn(i);
			_exit(0);
		}
		REQUIRE(p > 0);
		pids.push_back(p);
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(ms));
	r->stop = true;
	int bad = 0;
	for (pid_t p : pids) {
		int st = 0;
		waitpid(p, &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad;
}
} // namespace

TEST_CASE("cos-lcbe: an LC task that wakes takes a BE task's CPU, by the kernel's rule or the lord; the BE task resumes after it; BE tasks take turns", "[lcbe][policies]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	/* the kernel's rule; the lord's; the kernel's with the displaced task left to the lord */
	enum { KERNEL, LORD, NO_RESUME };
	for (int how : {KERNEL, LORD, NO_RESUME}) {
		CAPTURE(how);
		DebugfsKnob no_resume("no_displaced_resume", how == NO_RESUME);
		/* BE turns of 50 ms: an LC wake-up finds the BE task with most of its turn left */
		std::vector<std::string> own{"--be-slice-us", "50000"};
		if (how == LORD)
			own.push_back("--no-wake-preempt");
		Lcbe lb(own);
		Run *r = shared_new<Run>();
		constexpr int WAKES = 40;
		/* two BE spinners and an LC task that sleeps 10 ms at a time */
		int bad = procs_for(r, 3, 1300 + WAKES * 12 * time_scale(), [&](int i) {
			if (i < 2) {
				spinner(r, i, 0);
				return;
			}
			if (!become_lc(r))
				return;
			for (int k = 0; k < WAKES && !r->stop; k++) {
				std::this_thread::sleep_for(std::chrono::milliseconds(10));
				r->wakes++;
			}
		});
		std::string err = lb.stop();
		CAPTURE(err, r->loops[0].load(), r->loops[1].load(), r->wakes.load());
		CHECK(bad == 0);
		CHECK(r->bad == 0);
		CHECK(r->wakes == WAKES);
		if (how != LORD) {
			/*
			 * Each wake-up found the CPU busy with a BE task; after the lord's first
			 * placement marked the LC task urgent, the kernel started it there itself
			 * (COS_WAKE_PREEMPT), the lord learning of it after the fact.
			 */
			CHECK(err.find(", urgent tasks preempt") != std::string::npos);
			CHECK(stat_of(err, "wake-preempts") >= WAKES / 2);
		}
		if (how == KERNEL) {
			/* and the BE task it displaced resumed after it, without the lord */
			CHECK(stat_of(err, "be-lost") < WAKES / 4);
		} else {
			/* the displaced BE task came back to the lord each time */
			CHECK(stat_of(err, "be-lost") >= WAKES / 2);
		}
		if (how == LORD) {
			/* each wake-up waited for the lord, which took a BE task's CPU for it */
			CHECK(err.find(", urgent tasks preempt") == std::string::npos);
			CHECK(stat_of(err, "wake-preempts") == 0);
			CHECK(stat_of(err, "lc-runnable") >= WAKES / 2);
			CHECK(stat_of(err, "lc-preempts") >= WAKES / 2);
		}
		/* the BE tasks took turns: neither got less than a third of the other's loops */
		CHECK(r->loops[0] * 3 > r->loops[1]);
		CHECK(r->loops[1] * 3 > r->loops[0]);
		CHECK(stat_of(err, "latched") > 0);	/* the next BE task waited behind the CPU's */
		shared_delete(r);
	}
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-lcbe: an LC task that wakes while another runs goes next behind it, by the kernel's rule or the lord; a third waits for the lord", "[lcbe][policies]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	for (bool kernel : {true, false}) {
		CAPTURE(kernel);
		/* no floor and 200 ms slices: nothing but a block ends the bursts */
		std::vector<std::string> own{"--be-floor", "0", "--be-slice-us", "200000"};
		if (!kernel)
			own.push_back("--no-wake-preempt");
		Lcbe lb(own);
		Run *r = shared_new<Run>();
		/* process 0's burst under way (0 or 1), its bursts, the others' starts during one */
		std::atomic<uint64_t> *in_burst = &r->loops[0], *bursts = &r->loops[1],
				      *passed = &r->loops[2], *passed_elsewhere = &r->loops[3];
		/*
		 * Three LC tasks on one CPU: 0 runs 20 ms bursts with 2 ms sleeps between; 1 and 2
		 * sleep 5 ms at a time, so each wakes during every burst.  None may start while a
		 * burst runs (an urgent task never displaces another) once the lord knows them all
		 * LC (their first wake-ups count as BE while it looks for their hints).
		 */
		int bad = procs_for(r, 3, 500 + 1500 * time_scale(), [&](int i) {
			if (!become_lc(r))
				return;
			while (!r->stop) {
				if (i == 0) {
					uint64_t end = now_ns() + 20000000ull * time_scale();
					*in_burst = 1;
					while (now_ns() < end && !r->stop)
						;
					*in_burst = 0;
					(*bursts)++;
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
				} else {
					std::this_thread::sleep_for(std::chrono::milliseconds(5));
					/* started in a burst's place (once all are LC) */
					if (*in_burst && *bursts >= 5) {
						(*passed)++;
						/* not beside the burst: a diagnostic for a failure */
						if (sched_getcpu() != 1 ||
						    sched_getscheduler(0) != SCHED_EXT_POLICY)
							(*passed_elsewhere)++;
					}
					r->wakes++;
				}
			}
		});
		std::string err = lb.stop();
		CAPTURE(err, bursts->load(), passed->load(), passed_elsewhere->load(), r->wakes.load());
		CHECK(bad == 0);
		CHECK(r->bad == 0);
		CHECK(*in_burst == 0);
		CHECK(*bursts >= 15);
		/*
		 * None where all three were urgent: the kernel displaced nobody ("wake-preempts 0").
		 * A task the kernel starts keeps the urgency of the lord's last placement of it:
		 * one first placed as BE (its class not found yet), whose wake-ups COS_WAKE_IDLE
		 * serves, is displaced, and resumes from the latch without the lord (seen on the
		 * debug kernel, where hints are found late).  The lord marks it there ("lc-marked"),
		 * after which it is displaced no more.
		 */
		if (stat_of(err, "wake-preempts") == 0) {
			CHECK(*passed == 0);
		} else {
			CHECK(stat_of(err, "lc-marked") >= 1);
			CHECK(*passed * 4 < *bursts);
		}
		CHECK(r->wakes >= (int)*bursts);
		if (kernel) {
			/* the first to wake in a burst went next: at its end the CPU passed to it */
			CHECK(err.find(", urgent tasks preempt or go next") != std::string::npos);
			CHECK(stat_of(err, "wake-nexts") >= (long long)*bursts / 2);
			/* the second found that place taken and waited for the lord */
			CHECK(stat_of(err, "lc-runnable") >= (long long)*bursts / 2);
		} else {
			CHECK(err.find(", urgent tasks preempt") == std::string::npos);
			CHECK(stat_of(err, "wake-nexts") == 0);
			CHECK(stat_of(err, "lc-runnable") >= (long long)*bursts);
		}
		shared_delete(r);
	}
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-lcbe: a CPU-bound LC task leaves BE its floor, and without one starves it", "[lcbe][policies]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	double share[2];
	for (int floor : {30, 0}) {
		CAPTURE(floor);
		Lcbe lb({"--be-floor", std::to_string(floor)});
		Run *r = shared_new<Run>();
		int bad = procs_for(r, 2, 3000 * time_scale(), [&](int i) { spinner(r, i, i == 0 ? 1 : 0); });
		std::string err = lb.stop();
		double lc = (double)r->cpu_ns[0], be = (double)r->cpu_ns[1];
		share[floor ? 0 : 1] = be / (lc + be);
		CAPTURE(err, lc, be);
		CHECK(bad == 0);
		CHECK(r->bad == 0);
		CHECK(lc > 0);
		CHECK(err.find("events (us before the last") != std::string::npos);	/* --events */
		if (floor) {
			CHECK(stat_of(err, "floor-hits") > 0);
			CHECK(be / (lc + be) > 0.15);		/* the floor, 30 %, less its slack */
			CHECK(lc / (lc + be) > 0.5);		/* and no more */
		} else {
			CHECK(stat_of(err, "floor-hits") == 0);
			CHECK(be / (lc + be) < 0.05);	/* the LC task never blocks */
		}
		shared_delete(r);
	}
	std::cerr << "cos-lcbe: BE's share beside a CPU-bound LC task: " << share[0]
		  << " with a 30 % floor, " << share[1] << " without\n";
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-lcbe: a cgroup's class (trusted.cos.class) makes its tasks LC", "[lcbe][policies]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	std::string cg = "/sys/fs/cgroup/test-lcbe-" + std::to_string(getpid());
	REQUIRE((mkdir(cg.c_str(), 0755) == 0 || errno == EEXIST));
	REQUIRE(setxattr(cg.c_str(), COS_HINT_CGROUP_XATTR, "1", 1, 0) == 0);
	Lcbe lb({"--be-floor", "0"});
	Run *r = shared_new<Run>();
	/*
	 * process 0 in the cgroup before it becomes a COS task (the lord reads a task's cgroup
	 * class once), no hint of its own: LC, and it never blocks
	 */
	int bad = procs_for(r, 2, 2000 * time_scale(), [&](int i) { spinner(r, i, 0); }, [&](int i) {
		if (i == 0 && write_str(cg + "/cgroup.procs", std::to_string(getpid())))
			r->bad = 2;
	});
	std::string err = lb.stop();
	double lc = (double)r->cpu_ns[0], be = (double)r->cpu_ns[1];
	CAPTURE(err, lc, be);
	CHECK(bad == 0);
	CHECK(r->bad == 0);
	/* it took the CPU from the BE task once the lord found its class, and kept it */
	CHECK(lc / (lc + be) > 0.8);
	shared_delete(r);
	rmdir(cg.c_str());
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-lcbe explains itself and refuses bad values with status 2", "[lcbe][usage]")
{
	std::string out;
	CHECK(sh(build_path("bin/cos-lcbe") + " --help", &out) == 0);
	CHECK(out.find("usage: ") == 0);
	for (const char *opt : {"--lc-class N", "--default-lc", "--be-slice-us N", "--be-floor PCT",
				"--window-ms N", "--no-wake-preempt", "--stats"})
		CHECK(out.find(opt) != std::string::npos);
	const std::vector<std::pair<const char *, std::vector<const char *>>> bad = {
		{"--lc-class", {"0", "-1", "x", "", "1000001"}},
		{"--be-slice-us", {"0", "9", "x", "", "1000001"}},
		{"--be-floor", {"-1", "100", "x", ""}},
		{"--window-ms", {"0", "9", "x", "", "10001"}},
	};
	for (auto &[opt, vals] : bad)
		for (const char *v : vals) {
			CAPTURE(opt, v);
			CHECK(sh(build_path("bin/cos-lcbe") + " " + opt + " '" + v + "' 2>/dev/null") == 2);
		}
}
