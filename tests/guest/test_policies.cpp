// test_policies.cpp — the policy programs as users run them: cos-fifo takes CPUs 1-3, workloads
// started with `cosctl run` (or made COS tasks by hand) run to completion on those CPUs only, a
// SIGKILL of either lord loses nothing, Ctrl-C gives the CPUs back, cosctl lists the tasks.
// See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "guest.h"
extern "C" {
#include "internal.h"
}

using namespace guest;

namespace {

/* The mixed workload: spin/sleep threads, one that moves itself to CPU 2, forks that exit. */
constexpr int THREADS = 8, ROUNDS = 60;
struct Work {
	std::atomic<int> done;
	int bad_cpu;			/* a slice seen outside CPUs 1-3 */
	int moved_cpu;			/* where the mover ran after moving to {2} */
	int forks_ok;
};

int run_workload(Work *w)
{
	std::vector<std::thread> ts;
	for (int i = 0; i < THREADS; i++)
		ts.emplace_back([w, i] {
			for (int r = 0; r < ROUNDS; r++) {
				auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
				while (std::chrono::steady_clock::now() < until)
					;
				int c = sched_getcpu();
				if (c < 1 || c > 3)
					w->bad_cpu = c;
				if (i == 0 && r == ROUNDS / 2) {
					cpu_set_t s;
					CPU_ZERO(&s);
					CPU_SET(2, &s);
					sched_setaffinity(0, sizeof(s), &s);
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
					w->moved_cpu = sched_getcpu();
				}
				if (i == 1 && r % 20 == 0) {
					pid_t p = fork();
					if (p == 0)
						_exit(sched_getscheduler(0) == SCHED_EXT_POLICY ? 0 : 1);
					int st = -1;
					waitpid(p, &st, 0);
					if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
						w->forks_ok++;
				}
				std::this_thread::sleep_for(std::chrono::microseconds(500));
			}
			w->done++;
		});
	for (auto &t : ts)
		t.join();
	return 0;
}

} // namespace

TEST_CASE("cosctl run: the command and its children are COS tasks", "[policies][cosctl]")
{
	std::string out;
	int rc = sh(build_path("bin/cosctl") + " run -- sh -c 'grep ^policy /proc/$$/sched; "
				"grep ^policy /proc/self/sched'", &out);
	CHECK(rc == 0);
	CAPTURE(out);
	/* both the shell and its child (grep) show policy 7 (SCHED_EXT) */
	std::istringstream lines(out);
	std::string line;
	int cos_lines = 0, lines_seen = 0;
	while (std::getline(lines, line)) {
		lines_seen++;
		if (line.rfind("policy", 0) == 0 && line.size() > 2 &&
		    line.substr(line.find_last_not_of(' ') - 1) == " 7")
			cos_lines++;
	}
	CHECK(lines_seen == 2);
	CHECK(cos_lines == 2);
	CHECK(sh(build_path("bin/cosctl") + " run 2>/dev/null") == 2);	/* no command */
	CHECK(sh(build_path("bin/cosctl") + " run -- /nonexistent 2>/dev/null") == 127);
	/* --help is cosctl's, not a command to run as a COS task; so is any other option before -- */
	CHECK(sh(build_path("bin/cosctl") + " run --help", &out) == 0);
	CHECK(out.rfind("usage: cosctl run", 0) == 0);
	CHECK(sh(build_path("bin/cosctl") + " run --bogus 2>&1", &out) == 2);
	CHECK(out.find("unknown option '--bogus'") != std::string::npos);
	CHECK(sh(build_path("bin/cosctl") + " run -- sh -c 'grep -c ^policy /proc/self/sched' --help", &out) == 0);
}

TEST_CASE("cosctl run --policy-class: the command's main thread starts with that hint class", "[policies][cosctl][hints]")
{
	pid_t pid = fork();
	if (pid == 0) {
		std::string cosctl = build_path("bin/cosctl");
		execl(cosctl.c_str(), "cosctl", "run", "--policy-class", "1", "--", "sleep", "5",
		      (char *)nullptr);
		_exit(127);
	}
	cos_hint_cache *c = nullptr;
	REQUIRE(cos_hint_cache_new(&c, 16, nullptr) == 0);
	cos_hint h = {};
	int err = -1;
	for (int i = 0; i < 200 && err; i++) {		/* until sleep has exec'd */
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		std::string comm;
		sh("cat /proc/" + std::to_string(pid) + "/comm", &comm);
		if (comm == "sleep\n")
			err = cos_hint_cache_read(c, 0, pid, &h, 1000000000ull * (i + 1));
	}
	CHECK(err == 0);
	CHECK(h.hint_class == 1);
	CHECK(h.tid == pid);				/* the record of its main thread */
	std::string sched;
	sh("grep ^policy /proc/" + std::to_string(pid) + "/sched", &sched);
	CHECK(sched.find(" 7") != std::string::npos);	/* and a COS task */
	cos_hint_cache_free(c);
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, 0);
	CHECK(sh(build_path("bin/cosctl") + " run --policy-class x -- true 2>/dev/null") == 2);
}

TEST_CASE("cos-fifo and cos-shinjuku run a mixed workload on their CPUs only, then give them back on Ctrl-C", "[policies][fifo][shinjuku]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	for (const char *mode : {"cos-fifo global", "cos-fifo per-cpu", "cos-fifo global, io_uring shoots",
				 "cos-fifo global, latch 2", "cos-fifo global, no spin", "cos-shinjuku"}) {
		CAPTURE(mode);
		std::string m = mode, prog = m.substr(0, m.find(' '));
		std::vector<std::string> argv = {build_path("bin/" + prog), "--cpus", "1-3",
						 "--lord-cpu", "0", "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(0)};
		if (m.find("per-cpu") != std::string::npos)
			argv.push_back("--per-cpu");
		if (m.find("io_uring") != std::string::npos) {
			argv.push_back("--submit");
			argv.push_back("uring");
		}
		if (m.find("latch") != std::string::npos) {	/* sliced: a latched task waits little */
			argv.push_back("--latch");
			argv.push_back("2");
			argv.push_back("--slice-us");
			argv.push_back("2000");
		}
		if (m.find("no spin") != std::string::npos) {	/* sleeps between events */
			argv.push_back("--spin-us");
			argv.push_back("0");
		}
		if (prog == "cos-shinjuku") {		/* a slice the emulated workload exceeds */
			argv.push_back("--slice-us");
			argv.push_back("200");
		}
		PolicyProc lord(argv);
		REQUIRE(lord.wait_for(prog + ": lord on CPU 0"));
		if (m.find("io_uring") != std::string::npos)
			CHECK(lord.wait_for("shoots by io_uring"));
		std::string st;
		CHECK(sh(build_path("bin/cosctl") + " status", &st) == 0);
		CAPTURE(st);
		CHECK(st.find("enclave:    " + prog + " (id ") != std::string::npos);
		CHECK(st.find("): lord thread " + std::to_string(lord.pid) + " on CPU 0, CPUs 1-3, active") !=
		      std::string::npos);
		Work *w = shared_new<Work>();
		int rc = in_child([&] {
			unpin_self();
			if (become_cos_task())
				return 10;
			return run_workload(w);
		});
		CHECK(rc == 0);
		CHECK(w->done == THREADS);
		CHECK(w->bad_cpu == 0);
		CHECK(w->moved_cpu == 2);
		CHECK(w->forks_ok == 3);
		shared_delete(w);
		CHECK(lord.stop(SIGINT) == 0);
		CAPTURE(lord.err);
		CHECK(lord.err.find(" placed ") != std::string::npos);
		CHECK(lord.err.find(" placed 0 ") == std::string::npos);	/* it did place tasks */
		CHECK(lord.err.find("stalls 0") != std::string::npos);
		CHECK(lord.err.find(": lord CPU time ") != std::string::npos);
		CHECK(sched_ext_state() == "enabled");
		if (prog == "cos-shinjuku")
			CHECK(lord.err.find("preemptions 0 ") == std::string::npos);	/* it preempted */
		if (m.find("latch") != std::string::npos) {	/* 8 threads on 3 CPUs: some were latched */
			CHECK(lord.err.find(", latch 2") != std::string::npos);
			CHECK(lord.err.find("latched 0 ") == std::string::npos);
		}
		/* the CPUs are back: another lord can register for them */
		PolicyProc again({build_path("bin/cos-fifo"), "--cpus", "1-3"});
		CHECK(again.wait_for("cos-fifo: lord on CPU 0"));
		CHECK(again.stop(SIGTERM) == 0);
	}
}

TEST_CASE("either policy killed with SIGKILL mid-run: the workload still finishes", "[policies][kill]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	for (const char *policy : {"cos-fifo", "cos-shinjuku"}) {
		CAPTURE(policy);
		PolicyProc lord({build_path(std::string("bin/") + policy), "--cpus", "1-3",
				 "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(0)});
		REQUIRE(lord.wait_for(std::string(policy) + ": lord on CPU 0"));
		Work *w = shared_new<Work>();
		pid_t child = fork();
		if (child == 0) {
			unpin_self();
			_exit(become_cos_task() ? 10 : run_workload(w));
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(150));
		CHECK(lord.stop(SIGKILL) == 128 + SIGKILL);
		int st = -1;
		waitpid(child, &st, 0);
		CHECK(WIFEXITED(st));
		CHECK(WEXITSTATUS(st) == 0);
		CHECK(w->done == THREADS);
		shared_delete(w);
		CHECK(sched_ext_state() == "enabled");
	}
}

TEST_CASE("cos-fifo keeps running a workload while one of its CPUs goes offline and back", "[policies][fifo][hotplug]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1-3",
			 "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(0)});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	Work *w = shared_new<Work>();
	pid_t child = fork();
	if (child == 0) {
		unpin_self();
		_exit(become_cos_task() ? 10 : run_workload(w));
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	{
		CpuOffline off(3);	/* the framework stops placing there, the kernel moves its tasks */
		CHECK(off.ok);
		std::this_thread::sleep_for(std::chrono::milliseconds(300));
	}
	int st = -1;
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 0);
	CHECK(w->done == THREADS);
	CHECK(w->moved_cpu == 2);
	shared_delete(w);
	CHECK(sched_ext_state() == "enabled");
	CHECK(lord.stop(SIGINT) == 0);
	CAPTURE(lord.err, kernel_log("stalled|sched_ext|CPU3|cpu 3"));
	CHECK(lord.err.find("stalls 0") != std::string::npos);
	CHECK(lord.err.find(" placed 0 ") == std::string::npos);
}

TEST_CASE("a healthy cos-fifo with 200 busy COS tasks is never declared stalled (default stall_ms)", "[policies][fifo][stall]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	constexpr int tasks = 200, rounds = 40;
	/* stall_ms and starve_ms: the defaults, scaled on a slow kernel (there a lord may take
	 * longer than stall_ms over a burst of 200 tasks' messages, and they may wait their turn
	 * longer than starve_ms: that is no stalled lord) */
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1-3", "--stall-ms", stall_arg(0),
			 "--starve-ms", starve_arg(0)});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	std::atomic<int> *done = shared_new<std::atomic<int>>();
	int rc = in_child([&] {
		unpin_self();
		std::vector<std::thread> ts;
		for (int i = 0; i < tasks; i++)
			ts.emplace_back([done] {
				if (become_cos_task())
					return;
				for (int r = 0; r < rounds; r++) {
					auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
					while (std::chrono::steady_clock::now() < until)
						;
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
				}
				(*done)++;
			});
		for (auto &th : ts)
			th.join();
		return 0;
	});
	CHECK(rc == 0);
	CHECK(*done == tasks);
	shared_delete(done);
	CHECK(lord.stop(SIGINT) == 0);
	CAPTURE(lord.err);
	CHECK(lord.err.find("stalls 0") != std::string::npos);	/* the lord kept up: no fallback */
	CHECK(lord.err.find(" placed 0 ") == std::string::npos);
}

namespace {

/* A process's CPU time so far, in clock ticks (utime + stime of /proc/PID/stat). */
long cpu_ticks(pid_t pid)
{
	std::string st = read_file("/proc/" + std::to_string(pid) + "/stat");
	size_t at = st.rfind(')');
	if (at == std::string::npos)
		return -1;
	std::istringstream in(st.substr(at + 2));
	std::string f;
	long utime = 0, stime = 0;
	for (int i = 3; i <= 15 && in >> f; i++)	/* fields 3 (state) to 15 (stime) */
		if (i == 14)
			utime = std::stol(f);
		else if (i == 15)
			stime = std::stol(f);
	return utime + stime;
}

/* The lord's "placed" counter, from its statistics socket (cosctl stats --json), or -1. */
long long placed_of(const std::string &enclave)
{
	/* the first line's "framework" object's "placed"; no python3: its start takes seconds here */
	std::string out;
	if (sh(build_path("bin/cosctl") + " stats --json --enclave " + enclave + " | head -n1", &out))
		return -1;
	size_t fw = out.find("\"framework\"");
	size_t at = fw == std::string::npos ? fw : out.find("\"placed\":", fw);
	if (at == std::string::npos)
		return -1;
	return std::stoll(out.substr(at + strlen("\"placed\":")));
}

} // namespace

/*
 * What sched_ext does to the shim (a detach, an ejection, SysRq-S) moves every task off it and
 * calls ops.exit_task for each, the lord's too: the lord is not exiting, so it stays registered,
 * idle until a shim is back, then places its tasks again (docs/design.md, "The shim coming and
 * going").  It used to be marked dead, left unregistered, and spin on WAIT's -EPERM.
 */
TEST_CASE("cos-fifo survives the shim's detach and SysRq-S: registered and idle meanwhile and placing again after the next attach", "[policies][fifo][shim]")
{
	const std::string cosctl = build_path("bin/cosctl");
	std::string out;
	REQUIRE(sh(cosctl + " shim attach", &out) == 0);
	struct Detach {
		std::string cosctl;
		~Detach() { sh(cosctl + " shim detach 2>/dev/null"); }
	} detach{cosctl};
	REQUIRE_LORD_SUPPORT();
	PolicyProc lord({build_path("bin/cos-fifo"), "--name", "surv", "--cpus", "1-3",
			 "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(0)});
	REQUIRE(lord.wait_for("enclave 'surv'"));
	std::atomic<bool> *quit = shared_new<std::atomic<bool>>();
	pid_t child = fork();
	if (child == 0) {
		unpin_self();
		if (become_cos_task())
			_exit(10);
		/*
		 * 12 threads that run 0.5 ms and sleep 1 ms keep the lord placing (about 4
		 * CPUs' worth on the enclave's 3).  Not many short sleeps: 40 threads sleeping 200 us (28k
		 * wake-ups/s) made each `cosctl shim attach` take 50 s under TCG.
		 */
		std::vector<std::thread> ts;
		for (int i = 0; i < 12; i++)
			ts.emplace_back([quit] {
				while (!*quit) {
					auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
					while (std::chrono::steady_clock::now() < until)
						;
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
				}
			});
		for (auto &t : ts)
			t.join();
		_exit(0);
	}
	/* each way sched_ext takes the shim away, then `cosctl shim attach` brings it back */
	for (const char *how : {"detach", "sysrq"}) {
		CAPTURE(how);
		long long before = -1;
		for (int i = 0; i < 100 && before <= 0; i++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
			before = placed_of("surv");
		}
		REQUIRE(before > 0);
		if (!strcmp(how, "detach")) {
			REQUIRE(sh(cosctl + " shim detach", &out) == 0);
		} else {
			sh("echo S >/proc/sysrq-trigger");	/* sched_ext: disabled (sysrq) */
			for (int i = 0; i < 200 && sched_ext_state() != "disabled"; i++)
				std::this_thread::sleep_for(std::chrono::milliseconds(10));
			REQUIRE(sched_ext_state() == "disabled");
			sh(cosctl + " shim detach 2>/dev/null");	/* its pin stays: remove it */
		}
		/* no shim: the lord is still registered and sleeps (a spinning lord uses ~100 ticks/s) */
		long t0 = cpu_ticks(lord.pid);
		std::this_thread::sleep_for(std::chrono::seconds(1));
		long used = cpu_ticks(lord.pid) - t0;
		CHECK(used < 30);
		REQUIRE(sh(cosctl + " status", &out) == 0);
		CAPTURE(out);
		CHECK(out.find("enclave:    surv (id ") != std::string::npos);
		CHECK(kill(lord.pid, 0) == 0);
		/* the shim again: the lord gets control back and places the tasks, re-attached */
		REQUIRE(sh(cosctl + " shim attach", &out) == 0);
		long long after = -1;
		for (int i = 0; i < 200 && after <= before; i++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
			after = placed_of("surv");
		}
		CHECK(after > before);
		REQUIRE(sh(cosctl + " status", &out) == 0);
		CHECK(out.find("CPUs 1-3, active") != std::string::npos);
	}
	*quit = true;
	int st = -1;
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 0);
	shared_delete(quit);
	CHECK(lord.stop(SIGINT) == 0);
	CAPTURE(lord.err);
}

TEST_CASE("a lord serves its statistics on a socket: cosctl stats (text, --json, --monitor) and cosctl metrics", "[policies][cosctl][stats]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	const std::string cosctl = build_path("bin/cosctl"), sock = COS_STATS_DIR "/statx.stats";
	std::string out;
	CHECK(sh(cosctl + " stats --enclave statx 2>&1", &out) == 1);	/* nobody serves it yet */
	CHECK(out.find("no lord serves statistics for enclave statx") != std::string::npos);
	{
		PolicyProc lord({build_path("bin/cos-fifo"), "--name", "statx", "--cpus", "1"});
		REQUIRE(lord.wait_for("enclave 'statx'"));
		CHECK(access(sock.c_str(), F_OK) == 0);
		/* root's only: no cos group in this tree (with one: 0660, that group) */
		struct stat st;
		REQUIRE(stat(sock.c_str(), &st) == 0);
		CHECK((st.st_mode & 07777) == (getgrnam("cos") ? 0660 : 0600));
		/* its thread runs on neither the lord's CPU (0) nor the enclave's (1) */
		std::string task_dir = "/proc/" + std::to_string(lord.pid) + "/task/";
		std::string stats_cpus;
		for (int i = 0; i < 100 && stats_cpus.empty(); i++) {
			REQUIRE(sh("grep -l '^cos-stats$' " + task_dir + "*/comm | head -n1", &out) == 0);
			if (!out.empty())
				stats_cpus = proc_field(lord.pid, "task/" + out.substr(task_dir.size(),
					out.find("/comm") - task_dir.size()) + "/status", "Cpus_allowed_list");
			else
				std::this_thread::sleep_for(std::chrono::milliseconds(10));
		}
		CHECK(stats_cpus == "2-3");
		REQUIRE(sh(cosctl + " run --enclave statx -- sh -c 'for i in 1 2 3 4 5; do sleep 0.01; "
			   "done'") == 0);
		/* the schema, its names and the counters the workload made */
		REQUIRE(sh(cosctl + " stats --json --enclave statx | python3 -c 'import json, sys\n"
			   "d = json.loads(sys.stdin.readline())\n"
			   "print(d[\"schema\"], d[\"policy\"], d[\"enclave\"], d[\"lord_cpu\"], d[\"cpus\"],\n"
			   "      d[\"framework\"][\"placed\"] > 0, d[\"policy_stats\"][\"runnable\"] > 0,\n"
			   "      d[\"uptime_s\"] > 0, \"wake-placed\" in d[\"framework\"])'", &out) == 0);
		CHECK(out == "cos-lord-stats/1 cos-fifo statx 0 1 True True True True\n");
		CHECK(sh(cosctl + " stats --enclave statx", &out) == 0);
		CAPTURE(out);
		CHECK(out.find("enclave statx: cos-fifo, pid ") == 0);
		CHECK(out.find("\n  framework  tasks ") != std::string::npos);
		CHECK(out.find("\n  policy     runnable ") != std::string::npos);
		CHECK(sh(cosctl + " stats --enclave cos-nosuch 2>/dev/null") == 1);
		/* --monitor: again and again, until stopped */
		sh("timeout -s INT 1.8 " + cosctl + " stats --monitor 0.5 --enclave statx", &out);
		size_t blocks = 0;
		for (size_t at = 0; (at = out.find("enclave statx:", at)) != std::string::npos; at++)
			blocks++;
		CHECK(blocks >= 2);
		CHECK(sh(cosctl + " stats --monitor 0 2>/dev/null") == 2);
		CHECK(sh(cosctl + " stats --monitor x 2>/dev/null") == 2);
		/* Prometheus text: every line a comment or NAME{LABELS} VALUE */
		REQUIRE(sh(cosctl + " metrics", &out) == 0);
		CAPTURE(out);
		CHECK(out.find("\ncos_module_loaded 1\n") != std::string::npos);
		CHECK(out.find("\ncos_shim_attached 1\n") != std::string::npos);
		CHECK(out.find("\ncos_enclave_placed_total{enclave=\"statx\"} ") != std::string::npos);
		CHECK(out.find("\ncos_lord_framework{enclave=\"statx\",policy=\"cos-fifo\","
			       "counter=\"placed\"} ") != std::string::npos);
		CHECK(out.find("\ncos_lord_policy{enclave=\"statx\",policy=\"cos-fifo\","
			       "counter=\"runnable\"} ") != std::string::npos);
		const std::regex line(R"(#.*|[a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? -?[0-9.e+-]+)");
		std::istringstream lines(out);
		for (std::string l; std::getline(lines, l);) {
			CAPTURE(l);
			CHECK(std::regex_match(l, line));
		}
		CHECK(lord.stop(SIGINT) == 0);
	}
	CHECK(access(sock.c_str(), F_OK) != 0);		/* removed when the lord stops */
	/* another path; none */
	{
		PolicyProc lord({build_path("bin/cos-fifo"), "--name", "staty", "--cpus", "1",
				 "--stats-socket", "/tmp/cos-test/staty.stats"});
		REQUIRE(lord.wait_for("enclave 'staty'"));
		CHECK(sh("COS_STATS_DIR=/tmp/cos-test " + cosctl + " stats --enclave staty", &out) == 0);
		CHECK(out.find("enclave staty: cos-fifo") == 0);
		CHECK(lord.stop(SIGINT) == 0);
	}
	{
		PolicyProc lord({build_path("bin/cos-fifo"), "--name", "statz", "--cpus", "1",
				 "--no-stats-socket"});
		REQUIRE(lord.wait_for("enclave 'statz'"));
		CHECK(access(COS_STATS_DIR "/statz.stats", F_OK) != 0);
		CHECK(lord.stop(SIGINT) == 0);
	}
	/* a socket it cannot make (a file where its directory should be): said, and it schedules on */
	{
		REQUIRE(sh("touch /tmp/cos-test-file") == 0);
		PolicyProc lord({build_path("bin/cos-fifo"), "--name", "statw", "--cpus", "1",
				 "--stats-socket", "/tmp/cos-test-file/statw.stats"});
		REQUIRE(lord.wait_for("enclave 'statw'"));
		CHECK(lord.err.find("cos-fifo: cannot serve statistics on /tmp/cos-test-file/statw.stats: "
				    "Not a directory; going on without\n") != std::string::npos);
		CHECK(sh(cosctl + " run -- true") == 0);	/* a task under it */
		CHECK(lord.stop(SIGINT) == 0);
		size_t at = lord.err.rfind(" messages ");	/* it saw the task */
		REQUIRE(at != std::string::npos);
		CHECK(std::stoll(lord.err.substr(at + 10)) >= 1);
		unlink("/tmp/cos-test-file");
	}
	/* a file that is no socket at the path: left alone, said, and it schedules on */
	{
		REQUIRE(sh("mkdir -p /tmp/cos-test && echo keep >/tmp/cos-test/statv.stats") == 0);
		PolicyProc lord({build_path("bin/cos-fifo"), "--name", "statv", "--cpus", "1",
				 "--stats-socket", "/tmp/cos-test/statv.stats"});
		REQUIRE(lord.wait_for("enclave 'statv'"));
		CHECK(lord.err.find("cannot serve statistics on /tmp/cos-test/statv.stats: File exists") !=
		      std::string::npos);
		CHECK(lord.stop(SIGINT) == 0);
		CHECK(read_file("/tmp/cos-test/statv.stats") == "keep");
		unlink("/tmp/cos-test/statv.stats");
	}
	/* a killed lord's socket is stale: said so */
	REQUIRE(sh("python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"" COS_STATS_DIR
		   "/stale.stats\")'") == 0);
	CHECK(sh(cosctl + " stats --enclave stale 2>&1", &out) == 1);
	CHECK(out.find("its lord is gone: a stale socket") != std::string::npos);
	unlink(COS_STATS_DIR "/stale.stats");
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cosctl run --enclave NAME runs under that lord, on its CPUs; status lists the enclave; an unknown name is refused with the running ones", "[policies][cosctl][enclave]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	const std::string cosctl = build_path("bin/cosctl");
	std::string out;
	/* no lord: refused before anything runs */
	CHECK(sh(cosctl + " run --enclave web -- sh -c 'echo ran' 2>&1", &out) == 1);
	CHECK(out.find("no enclave named 'web': no lord is running") != std::string::npos);
	CHECK(out.find("ran") == std::string::npos);
	CHECK(sh(cosctl + " run --enclave 2>&1", &out) == 2);
	CHECK(out.find("--enclave needs a NAME") != std::string::npos);

	PolicyProc lord({build_path("bin/cos-fifo"), "--name", "web", "--cpus", "2-3"});
	REQUIRE(lord.wait_for("enclave 'web'"));
	REQUIRE(sh(cosctl + " status", &out) == 0);
	CAPTURE(out);
	CHECK(out.find("enclave:    web (id ") != std::string::npos);
	CHECK(out.find("on CPU 0, CPUs 2-3, active") != std::string::npos);
	REQUIRE(sh(cosctl + " --json status", &out) == 0);
	CHECK(out.find("\"name\":\"web\"") != std::string::npos);
	CHECK(out.find("\"cpus\":\"2-3\"") != std::string::npos);

	CHECK(sh(cosctl + " run --enclave=web -- sh -c 'grep ^Cpus_allowed_list /proc/self/status; "
		 "grep ^policy /proc/self/sched'", &out) == 0);
	CHECK(out.find("Cpus_allowed_list:\t2-3") != std::string::npos);
	CHECK(out.find(" 7\n") != std::string::npos);
	CHECK(sh(cosctl + " run --enclave fifo -- true 2>&1", &out) == 1);
	CHECK(out.find("no enclave named 'fifo' (running: 'web')") != std::string::npos);
	CHECK(lord.stop(SIGINT) == 0);
}

TEST_CASE("cosctl tasks lists the COS tasks with state, CPU and last event", "[policies][cosctl]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	std::string out;
	REQUIRE(sh(build_path("bin/cosctl") + " tasks", &out) == 0);
	CHECK(out == "no COS tasks\n");
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1-3"});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	/*
	 * Three COS threads that ran once and now sleep, named so that we can find them; the last
	 * name is not UTF-8 (a comm is bytes): --json must still be valid JSON.
	 */
	static const char *const names[3] = {"sleeper0", "sleeper1", "bad\xff\xfe"};
	struct Sleepers {
		std::atomic<int> ready{0};
		std::atomic<int> go{0};
		pid_t tid[3];
	};
	auto *sl = shared_new<Sleepers>();
	pid_t child = fork();
	if (child == 0) {
		unpin_self();
		if (become_cos_task())
			_exit(10);
		std::vector<std::thread> ts;
		for (int i = 0; i < 3; i++)
			ts.emplace_back([sl, i] {
				prctl(PR_SET_NAME, names[i]);
				sl->tid[i] = gettid();
				sl->ready++;
				while (!sl->go)
					std::this_thread::sleep_for(std::chrono::milliseconds(5));
			});
		for (auto &t : ts)
			t.join();
		_exit(0);
	}
	while (sl->ready < 3)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	REQUIRE(sh(build_path("bin/cosctl") + " tasks", &out) == 0);
	CAPTURE(out);
	CHECK(out.find("STATE") != std::string::npos);
	for (int i = 0; i < 3; i++) {
		/* each sleeper: its row has its tid, the child's tgid and its name */
		std::istringstream rows(out);
		std::string row;
		bool found = false;
		while (std::getline(rows, row)) {
			std::istringstream f(row);
			std::string slot, gen, pid, tgid, state, cpu, enclave, runtime, last, ago, comm;
			f >> slot >> gen >> pid >> tgid >> state >> cpu >> enclave >> runtime >> last >>
				ago >> comm;
			if (pid != std::to_string(sl->tid[i]))
				continue;
			found = true;
			CHECK(tgid == std::to_string(child));
			CHECK(comm == names[i]);
			CHECK(enclave == "cos-fifo");	/* its CPUs are the lord's: in its enclave */
			/* asleep between polls, or caught just as it woke */
			CHECK((state == "BLOCKED" || state == "WAITING" || state == "QUEUED" ||
			       state == "RUNNING"));
			/* TASK_PLACED: its wake-up was started by cos-fifo's wake rule (idle) */
			CHECK((last == "TASK_BLOCKED" || last == "TASK_RUNNABLE" || last == "TASK_PLACED"));
			int c = std::stoi(cpu);
			CHECK((c >= 1 && c <= 3));
		}
		CHECK(found);
	}
	REQUIRE(sh(build_path("bin/cosctl") + " --json tasks", &out) == 0);
	CHECK(out.front() == '[');
	for (int i = 0; i < 3; i++)
		CHECK(out.find("\"pid\":" + std::to_string(sl->tid[i]) + ",") != std::string::npos);
	CHECK(out.find("\"comm\":\"sleeper1\"") != std::string::npos);
	CHECK(out.find("\"enclave\":\"cos-fifo\"") != std::string::npos);
	std::string comm2;
	CHECK(sh(build_path("bin/cosctl") + " --json tasks | python3 -c 'import json,sys; "
		 "print([t[\"comm\"] for t in json.load(sys.stdin) if t[\"pid\"] == " +
		 std::to_string(sl->tid[2]) + "][0].encode(\"unicode_escape\").decode())'", &comm2) == 0);
	CHECK(comm2 == "bad\\ufffd\\ufffd\n");	/* valid JSON: each stray byte is U+FFFD */
	sl->go = 1;
	int st = -1;
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	REQUIRE(sh(build_path("bin/cosctl") + " tasks", &out) == 0);
	CHECK(out == "no COS tasks\n");		/* the dead are gone from the list */
	shared_delete(sl);
	CHECK(lord.stop(SIGINT) == 0);
}

TEST_CASE("the example policy of docs/writing-a-policy.md schedules a workload", "[policies][example]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	PolicyProc lord({build_path("bin/example-policy")});
	REQUIRE(lord.wait_for("my-policy: running"));
	Work *w = shared_new<Work>();
	int rc = in_child([&] {
		unpin_self();
		return become_cos_task() ? 10 : run_workload(w);
	});
	CHECK(rc == 0);
	CHECK(w->done == THREADS);
	CHECK(w->bad_cpu == 0);
	shared_delete(w);
	CHECK(lord.stop(SIGINT) == 0);
	CHECK(sched_ext_state() == "enabled");
}

namespace {
/* One long CPU-bound request, then short ones arriving while it runs, all on one CPU. */
struct Mix {
	uint64_t long_end;
	uint64_t short_end[10];
	int bad;
};

/* Request i: wait @delay_ms, spin 2 ms on CPU 1, note when it is done. */
void short_request(Mix *m, int i, int delay_ms)
{
	std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
	uint64_t s = now_ns();
	while (now_ns() - s < 2000000ull)
		;
	m->short_end[i] = now_ns();
	if (sched_getcpu() != 1)
		m->bad = 1;
}

int run_mix(Mix *m)
{
	uint64_t t0 = now_ns(), spin = 1500000000ull * time_scale();	/* 1.5 s on a stock kernel */
	std::thread lng([m, t0, spin] {
		while (now_ns() - t0 < spin)
			;
		m->long_end = now_ns();
	});
	std::vector<std::thread> shorts;
	for (int i = 0; i < 10; i++)
		shorts.emplace_back([m, i] { short_request(m, i, 200 + 50 * i); });
	lng.join();
	for (auto &t : shorts)
		t.join();
	return 0;
}

/* Run @workload (in a child, as COS tasks) under the policy @argv; the lord's output in @err. */
Mix *mix_under(const std::vector<std::string> &argv, const char *ready,
	       const std::function<int(Mix *)> &workload = run_mix, std::string *err = nullptr)
{
	PolicyProc lord(argv);
	REQUIRE(lord.wait_for(ready));
	Mix *m = shared_new<Mix>();
	int rc = in_child([&] {
		unpin_self();
		return workload(m);
	});
	CHECK(rc == 0);
	CHECK(lord.stop(SIGINT) == 0);
	CAPTURE(lord.err);
	if (err)
		*err = lord.err;
	CHECK(m->bad == 0);
	return m;
}
} // namespace

TEST_CASE("cos-shinjuku preempts a long request for short ones; cos-fifo runs it to completion", "[policies][shinjuku]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	auto as_cos = [](Mix *m) { return become_cos_task() ? 10 : run_mix(m); };
	Mix *sj = mix_under({build_path("bin/cos-shinjuku"), "--cpus", "1", "--slice-us", "5000",
			     "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(5000)}, "cos-shinjuku: lord on CPU 0", as_cos);
	Mix *ff = mix_under({build_path("bin/cos-fifo"), "--cpus", "1", "--slice-us", "0",
			     "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(5000)},
			    "cos-fifo: lord on CPU 0", as_cos);
	for (int i = 0; i < 10; i++) {
		CAPTURE(i);
		/* Shinjuku: every short request is done before the long one */
		CHECK(sj->short_end[i] < sj->long_end);
		/* FIFO, run to block, one CPU: they all wait for it */
		CHECK(ff->short_end[i] > ff->long_end);
	}
	std::cerr << "shinjuku: last short request done " << (sj->long_end - sj->short_end[9]) / 1000
		  << " us before the long one; fifo: first short done "
		  << (ff->short_end[0] - ff->long_end) / 1000 << " us after it\n";
	shared_delete(sj);
	shared_delete(ff);
	CHECK(sched_ext_state() == "enabled");
}

namespace {
/*
 * Like Mix, with app hints: the long request of class 3, the short ones of class 1.  The process
 * makes its hint table before its threads start (the lord reads a class when a task queues: a
 * thread's hint counts from its next wake-up).
 */
enum HintMode { NO_HINTS, CLASSES, CLASSES_CRITICAL, CLASSES_LOCKED };

int run_hinted_mix(Mix *m, HintMode mode)
{
	uint64_t t0 = now_ns();
	static cos_mutex lock = COS_MUTEX_INITIALIZER;
	std::thread lng([m, t0, mode] {
		cos_hint *h = mode == NO_HINTS ? nullptr : cos_hint_self();
		if (mode != NO_HINTS && !h)
			m->bad = 2;
		if (h)
			cos_hint_set(h, 3, 0, 0);
		if (h && mode == CLASSES_CRITICAL)
			cos_hint_critical(h, true);	/* the whole request holds a "lock" */
		if (mode == CLASSES_LOCKED)
			cos_mutex_lock(&lock);		/* the whole request holds a lock */
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		while (now_ns() - t0 < 1500000000ull)
			;
		m->long_end = now_ns();
		if (h && mode == CLASSES_CRITICAL)
			cos_hint_critical(h, false);
		if (mode == CLASSES_LOCKED)
			cos_mutex_unlock(&lock);
	});
	std::vector<std::thread> shorts;
	for (int i = 0; i < 5; i++)
		shorts.emplace_back([m, i, mode] {
			cos_hint *h = mode == NO_HINTS ? nullptr : cos_hint_self();
			if (h)
				cos_hint_set(h, 1, 0, 0);
			short_request(m, i, 200 + 100 * i);
		});
	lng.join();
	for (auto &t : shorts)
		t.join();
	return 0;
}

Mix *hinted_mix_under(HintMode mode, std::string *lord_err, const char *lock_cap_us = "5000000")
{
	/* a 100 s slice: only a more urgent class can preempt */
	return mix_under({build_path("bin/cos-shinjuku"), "--cpus", "1", "--slice-us", "100000000",
			  "--lock-cap-us", lock_cap_us, "--stall-ms", stall_arg(1000), "--starve-ms",
			  starve_arg(5000)}, "cos-shinjuku: lord on CPU 0",
			 [mode](Mix *m) {
				 if (mode != NO_HINTS && !cos_hint_self())	/* the process's table */
					 return 11;
				 return become_cos_task() ? 10 : run_hinted_mix(m, mode);
			 }, lord_err);
}
} // namespace

namespace {
/* Three busy COS tasks (child processes that count in shared memory), killed at the end. */
struct BusyCosTasks {
	struct Counts {
		std::atomic<unsigned long> n[3];
	} *c = shared_new<Counts>();
	pid_t kids[3];
	int nr;
	explicit BusyCosTasks(int nr = 3) : nr(nr)
	{
		for (int i = 0; i < nr; i++) {
			kids[i] = fork();
			if (kids[i] == 0) {
				if (become_cos_task())
					_exit(1);
				for (;;)
					c->n[i].fetch_add(1, std::memory_order_relaxed);
			}
			REQUIRE(kids[i] > 0);
		}
	}
	/* How many of them count on within the next @ms. */
	unsigned running(int ms)
	{
		unsigned long from[3];
		unsigned ran = 0;
		for (int i = 0; i < nr; i++)
			from[i] = c->n[i].load();
		std::this_thread::sleep_for(std::chrono::milliseconds(ms));
		for (int i = 0; i < nr; i++)
			ran += c->n[i].load() > from[i];
		return ran;
	}
	~BusyCosTasks()
	{
		/* all at once: a killed task that waits must be run to die, and under a run-to-block
		 * lord only the death of the one running frees the CPU */
		for (int i = 0; i < nr; i++)
			kill(kids[i], SIGKILL);
		for (int i = 0; i < nr; i++)
			waitpid(kids[i], nullptr, 0);
		shared_delete(c);
	}
};
} // namespace

TEST_CASE("cos-fifo's default turn gives busy COS tasks on one CPU turns, latched or not; --slice-us 0 lets the first keep it", "[policies][fifo][slice]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	/*
	 * sliced without a latch, run to block, sliced with the default latch (a latched task must
	 * get its turn too), and that with 2 tasks: the other is latched and none is queued, so the
	 * turn is the latch's
	 */
	for (int mode : {0, 1, 2, 3}) {
		bool sliced = mode != 1;
		CAPTURE(mode);
		std::vector<std::string> argv = {build_path("bin/cos-fifo"), "--cpus", "1", "--stall-ms",
						 stall_arg(1000), "--starve-ms", starve_arg(10000)};
		if (!sliced)
			argv.insert(argv.end(), {"--slice-us", "0"});
		if (mode == 0)
			argv.insert(argv.end(), {"--latch", "0"});
		int nr = mode == 3 ? 2 : 3;
		PolicyProc lord(argv);
		REQUIRE(lord.wait_for(sliced ? "slice 5000 us" : "run to block"));
		REQUIRE(lord.wait_for("woken tasks first"));	/* the banner's end */
		CHECK((lord.err.find(", latch 1") != std::string::npos) == (mode != 0));
		/* the loop ticks at a quarter turn to end turns (100 ms, for statistics, without) */
		CHECK(lord.err.find(sliced ? ", tick 1250 us" : ", tick 100000 us") != std::string::npos);
		int fd = cos_open();
		REQUIRE(fd >= 0);
		cos_info before, after;
		REQUIRE(cos_get_info(fd, &before) == 0);
		unsigned ran;
		std::string tasks;
		uint64_t t0 = now_ns(), t1;
		{
			BusyCosTasks busy(nr);
			std::this_thread::sleep_for(std::chrono::milliseconds(300));
			ran = busy.running(1500);
			REQUIRE(cos_get_info(fd, &after) == 0);
			sh(build_path("bin/cosctl") + " tasks", &tasks);
			t1 = now_ns();
		}
		close(fd);
		lord.stop(SIGINT);
		INFO(lord.err << tasks << "ran " << (t1 - t0) / 1000000 << " ms");
		CHECK(after.fallbacks == before.fallbacks);	/* the lord ran them, not the fallback */
		CHECK(after.stalls == before.stalls);
		CHECK(ran == (sliced ? (unsigned)nr : 1u));
	}
}

TEST_CASE("cos-fifo: a task that wakes goes before busy tasks whose turn ended, which still get theirs; not with --no-wake-first", "[policies][fifo][wake-first]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	for (bool wake_first : {false, true}) {
		CAPTURE(wake_first);
		std::vector<std::string> argv = {build_path("bin/cos-fifo"), "--cpus", "1", "--stall-ms",
						 stall_arg(1000), "--starve-ms", starve_arg(10000)};
		if (!wake_first)
			argv.push_back("--no-wake-first");	/* woken first is the default */
		PolicyProc lord(argv);
		REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
		unsigned ran;
		int sleeper_rc;
		{
			BusyCosTasks busy(3);
			/* a task that sleeps 2 ms at a time beside them, 100 times */
			pid_t sleeper = fork();
			if (sleeper == 0) {
				if (become_cos_task())
					_exit(1);
				for (int i = 0; i < 100; i++)
					usleep(2000);
				_exit(0);
			}
			REQUIRE(sleeper > 0);
			ran = busy.running(1500);
			int st = 0;
			waitpid(sleeper, &st, 0);
			sleeper_rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		CHECK(lord.stop(SIGINT) == 0);
		INFO(lord.err);
		/* the banner says so (read whole: the lord writes it in parts) */
		CHECK((lord.err.find("woken tasks first") != std::string::npos) == wake_first);
		CHECK((lord.err.find("arrival order") != std::string::npos) == !wake_first);
		CHECK(sleeper_rc == 0);
		CHECK(ran == 3);	/* the busy ones still took turns */
		if (wake_first) {
			CHECK(last_stat(lord.err, "woken-first") > 0);	/* the sleeper went first */
			CHECK(last_stat(lord.err, "early-turns") > 0);	/* and ended busy turns */
		} else {
			CHECK(last_stat(lord.err, "woken-first") == 0);	/* arrival order only */
			CHECK(last_stat(lord.err, "early-turns") == 0);
		}
	}
}

TEST_CASE("a normal task on the lord's CPU stays there when the lord wakes, not moving to the enclave's", "[policies][fifo][placement]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	if (std::thread::hardware_concurrency() < 2)
		SKIP("needs 2 CPUs");
	/* no wake rules and no spin: each wake-up of the COS task wakes the lord to place it */
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1", "--lord-cpu", "0", "--no-wake-rules",
			 "--spin-us", "0", "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(10000)});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	MovableBusyThread busy(0, {0, 1});	/* a normal task on the lord's CPU, movable */
	pid_t busy_tid = busy.tid();
	pid_t sleeper = fork();
	if (sleeper == 0) {	/* a COS task on the enclave's CPU that sleeps 1 ms at a time */
		if (set_cpus({1}) != 0 || become_cos_task() != 0)
			_exit(1);
		for (;;)
			usleep(1000);
	}
	REQUIRE(sleeper > 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	unsigned long long w0 = schedstat(sleeper, sleeper).runs, m0 = 0, m1 = 0;
	bool migrations = sched_field(getpid(), busy_tid, "se.nr_migrations", &m0);
	std::this_thread::sleep_for(std::chrono::milliseconds(2000));
	unsigned long long w1 = schedstat(sleeper, sleeper).runs;
	migrations = sched_field(getpid(), busy_tid, "se.nr_migrations", &m1) && migrations;
	busy.stop();
	kill(sleeper, SIGKILL);
	int st = 0;
	waitpid(sleeper, &st, 0);
	CHECK(lord.stop(SIGINT) == 0);
	INFO(lord.err);
	REQUIRE(busy.ok());
	REQUIRE(WIFSIGNALED(st));	/* it slept until killed, a COS task */
	REQUIRE(migrations);		/* the kernel counts them (CONFIG_SCHED_DEBUG) */
	unsigned long long woke = w1 - w0, moved = m1 - m0;
	CAPTURE(woke, moved);
	REQUIRE(woke > 100);
	/*
	 * Each wake-up of the lord preempts the busy task for a moment.  Sent to the shared queue,
	 * it was taken now and then by the enclave's CPU (about once in 50 wake-ups, then moved
	 * back); behind the lord it stays, and only a kthread's preemption may still move it.
	 */
	CHECK(moved * 150 < woke);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-shinjuku's slice is never shorter than 4 of its measured round trips; --fixed-slice keeps it", "[policies][shinjuku][slice]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	unsigned long long preemptions[2] = {0, 0};
	for (bool fixed : {false, true}) {
		CAPTURE(fixed);
		/* 1 us: shorter than any round trip, on metal too */
		std::vector<std::string> argv = {build_path("bin/cos-shinjuku"), "--cpus", "1", "--slice-us",
						 "1", "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(10000)};
		if (fixed)
			argv.push_back("--fixed-slice");
		PolicyProc lord(argv);
		REQUIRE(lord.wait_for("cos-shinjuku: lord on CPU 0"));
		unsigned ran = BusyCosTasks().running(1500);
		CHECK(lord.stop(SIGINT) == 0);
		INFO(lord.err);
		CHECK(ran == 3);	/* they took turns */
		/* the last statistics line: "... preemptions P ... round-trip-us R slice-us S ..." */
		size_t p = lord.err.rfind(" preemptions "), r = lord.err.rfind(" round-trip-us ");
		REQUIRE(p != std::string::npos);
		REQUIRE(r != std::string::npos);
		unsigned long long rtt = 0, slice = 0;
		REQUIRE(sscanf(lord.err.c_str() + r, " round-trip-us %llu slice-us %llu", &rtt, &slice) == 2);
		preemptions[fixed] = std::stoull(lord.err.substr(p + 13));
		CHECK(preemptions[fixed] > 0);
		/* busy tasks wake nobody: no preemption of theirs made another wait */
		size_t cv = lord.err.rfind(" convoys ");
		REQUIRE(cv != std::string::npos);
		CHECK(std::stoull(lord.err.substr(cv + 9)) == 0);
		CHECK(rtt > 0);		/* the preemptions' round trips were measured */
		if (fixed)
			CHECK(slice == 1);	/* --slice-us 1, as given */
		else
			CHECK(slice >= 4 * rtt);
	}
	/* how much it saves depends on the machine (a slow kernel's lord preempts little either way) */
	std::cerr << "cos-shinjuku --slice-us 1: " << preemptions[0] << " preemptions in 1.5 s with "
		  << "the round-trip floor, " << preemptions[1] << " with --fixed-slice\n";
}

/*
 * The sysbench pattern on one CPU: a thread holds a mutex for long stretches, three others wake
 * from a timer and take it briefly.  cos-shinjuku preempts the holder for a waking thread, which
 * blocks on the mutex at once: a convoy, which it must see (the holder's unlock wakes a thread
 * that blocked while the holder was preempted) and answer with longer slices for the holder.
 */
TEST_CASE("cos-shinjuku sees a preempted lock holder make the threads it wakes wait, and lengthens its slice", "[policies][shinjuku][convoy]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	PolicyProc lord({build_path("bin/cos-shinjuku"), "--cpus", "1", "--stall-ms", stall_arg(1000),
			 "--starve-ms", starve_arg(10000), "--stats", "1"});
	REQUIRE(lord.wait_for("cos-shinjuku: lord on CPU 0"));
	struct Counts {
		std::atomic<bool> stop;
		std::atomic<int> setattr_err;
		std::atomic<unsigned long> held, taken;
	};
	Counts *c = shared_new<Counts>();
	pid_t kid = fork();
	if (kid == 0) {
		static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		std::vector<std::thread> ts;
		for (int i = 0; i < 4; i++)
			ts.emplace_back([c, i] {
				cpu_set_t s;
				CPU_ZERO(&s);
				CPU_SET(1, &s);
				sched_setaffinity(0, sizeof(s), &s);
				if (become_cos_task())
					c->setattr_err++;
				while (!c->stop) {
					if (i == 0) {	/* the holder: 20 ms in, then again */
						pthread_mutex_lock(&m);
						auto until = std::chrono::steady_clock::now() +
							     std::chrono::milliseconds(20);
						while (std::chrono::steady_clock::now() < until)
							;
						pthread_mutex_unlock(&m);
						c->held++;
					} else {
						std::this_thread::sleep_for(std::chrono::milliseconds(2));
						pthread_mutex_lock(&m);
						c->taken++;
						pthread_mutex_unlock(&m);
					}
				}
			});
		for (auto &t : ts)
			t.join();
		_exit(0);
	}
	REQUIRE(kid > 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(2500));
	c->stop = true;
	int st = -1;
	REQUIRE(waitpid(kid, &st, 0) == kid);
	CHECK(lord.stop(SIGINT) == 0);
	INFO(lord.err);
	CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
	CHECK(c->setattr_err == 0);
	CHECK(c->held > 0);
	CHECK(c->taken > 0);
	size_t p = lord.err.rfind(" preemptions "), cv = lord.err.rfind(" convoys ");
	REQUIRE(p != std::string::npos);
	REQUIRE(cv != std::string::npos);
	unsigned long long preemptions = std::stoull(lord.err.substr(p + 13));
	unsigned long long convoys = std::stoull(lord.err.substr(cv + 9));
	std::cerr << "cos-shinjuku, a 20 ms lock holder beside 3 takers: " << preemptions
		  << " preemptions, " << convoys << " convoys seen; " << c->held.load() << " holds, "
		  << c->taken.load() << " takes\n";
	CHECK(convoys > 0);
	shared_delete(c);
}

TEST_CASE("cos-shinjuku: a more urgent class (app hint) preempts at once, a critical section defers it", "[policies][shinjuku][hints]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	std::string none_err, cls_err, crit_err;
	Mix *none = hinted_mix_under(NO_HINTS, &none_err);
	Mix *cls = hinted_mix_under(CLASSES, &cls_err);
	Mix *crit = hinted_mix_under(CLASSES_CRITICAL, &crit_err);
	CAPTURE(none_err, cls_err, crit_err);
	for (int i = 0; i < 5; i++) {
		CAPTURE(i);
		CHECK(none->short_end[i] > none->long_end);	/* one class, slice never over: FIFO */
		CHECK(cls->short_end[i] < cls->long_end);	/* class 1 preempts class 3 */
		CHECK(crit->short_end[i] > crit->long_end);	/* not while it is in its section */
	}
	CHECK(cls_err.find("hinted 0 ") == std::string::npos);
	CHECK(crit_err.find("deferred 0 ") == std::string::npos);
	std::cerr << "shinjuku classes: last class-1 request done " << (cls->long_end - cls->short_end[4]) / 1000
		  << " us before the class-3 one; in a critical section, first done "
		  << (crit->short_end[0] - crit->long_end) / 1000 << " us after it\n";
	shared_delete(none);
	shared_delete(cls);
	shared_delete(crit);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-shinjuku: a hinted lock's holder is not preempted before its cap", "[policies][shinjuku][hints][lock]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	std::string held_err, capped_err;
	/* the class-3 request holds a cos_mutex for its 1.5 s: spared for 5 s, or for 50 ms */
	Mix *held = hinted_mix_under(CLASSES_LOCKED, &held_err, "5000000");
	Mix *capped = hinted_mix_under(CLASSES_LOCKED, &capped_err, "50000");
	CAPTURE(held_err, capped_err);
	for (int i = 0; i < 5; i++) {
		CAPTURE(i);
		CHECK(held->short_end[i] > held->long_end);	/* its waiters would wait behind it */
		CHECK(capped->short_end[i] < capped->long_end);	/* no holder keeps its CPU past the cap */
	}
	CHECK(held_err.find("spared-holders 0 ") == std::string::npos);
	shared_delete(held);
	shared_delete(capped);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("policy programs explain themselves and refuse bad usage with status 2", "[policies][usage]")
{
	for (const char *p : {"bin/cos-fifo", "bin/cos-shinjuku", "bin/cos-lock", "bin/cos-lcbe",
			      "bin/cos-pair"}) {
		CAPTURE(p);
		const std::string prog = build_path(p), name = std::string(p).substr(4);
		std::string out;
		CHECK(sh(prog + " --help", &out) == 0);
		CHECK(out.find("usage: ") == 0);
		CHECK(out.find("--cpus LIST") != std::string::npos);
		CHECK(out.find("--spin-us N") != std::string::npos);
		CHECK(out.find("--version") != std::string::npos);
		/* the version, and the ABIs: libcos's and the loaded module's */
		CHECK(sh(prog + " --version", &out) == 0);
		CHECK(out.find(name + " (cos) ") == 0);
		CHECK(out.find("ABI " + std::to_string(COS_ABI_VERSION) + " (libcos); cos.ko loaded, ABI " +
			       std::to_string(COS_ABI_VERSION) + "\n") != std::string::npos);
		/* a bad option or value is named, with where to look; not the whole usage */
		CHECK(sh(prog + " --bogus 2>&1", &out) == 2);
		CHECK(out == name + ": unknown option '--bogus'\nTry '" + name + " --help' for more.\n");
		CHECK(sh(prog + " --stats 2>&1", &out) == 2);
		CHECK(out.find(name + ": --stats needs a value") == 0);
		CHECK(sh(prog + " stray 2>&1", &out) == 2);
		CHECK(out.find("unexpected 'stray'") != std::string::npos);
		CHECK(sh(prog + " --cpus 0-2 2>&1", &out) == 2);	/* the lord's CPU inside */
		CHECK(out.find("cannot be in the enclave") != std::string::npos);
		CHECK(sh(prog + " --cpus 3-1 2>&1", &out) == 2);
		CHECK(out.find("bad CPU list") != std::string::npos);
		CHECK(sh(prog + " --cpus 1, 2>&1", &out) == 2);	/* libcos's one grammar */
		CHECK(out.find("bad CPU list") != std::string::npos);
		for (const char *bad : {"-1", "x", "", "1000001", "1e3", " 5"}) {
			CAPTURE(bad);
			CHECK(sh(prog + " --spin-us '" + bad + "' 2>&1", &out) == 2);
			CHECK(out.find(name + ": bad value '" + bad + "' for --spin-us\n"
				       "      --spin-us N      busy-poll") == 0);
		}
		for (const char *opt : {"--lord-cpu", "--stall-ms", "--starve-ms"})
			for (const char *bad : {"-1", "x", "", "99999", "2x"}) {
				CAPTURE(opt, bad);
				CHECK(sh(prog + " " + opt + " '" + bad + "' 2>&1", &out) == 2);
				CHECK(out.find(std::string("for ") + opt + "\n") != std::string::npos);
			}
		/* --stats takes fractions of a second; a value it refuses is named */
		CHECK(sh(prog + " --stats 0.5 --help >/dev/null") == 0);
		CHECK(sh(prog + " --stats 2 --help >/dev/null") == 0);
		for (const char *bad : {"0", "-1", "x", "", "0.5s", "nan", "1e9"}) {
			CAPTURE(bad);
			CHECK(sh(prog + " --stats '" + bad + "' 2>&1", &out) == 2);
			CHECK(out.find("bad value '" + std::string(bad) + "' for --stats") !=
			      std::string::npos);
		}
	}
	std::string out;
	CHECK(sh(build_path("bin/cos-fifo") + " --help", &out) == 0);
	CHECK(out.find("--latch N") != std::string::npos);
	for (const char *bad : {"5", "-1", "x", ""}) {	/* 0-4 only */
		CAPTURE(bad);
		CHECK(sh(build_path("bin/cos-fifo") + " --latch '" + bad + "' 2>&1", &out) == 2);
		/* the policy's own option: named, and its usage lines quoted */
		CHECK(out.find("cos-fifo: bad value '" + std::string(bad) + "' for --latch\n"
			       "      --latch N        latch up to N") == 0);
		CHECK(out.find("Try 'cos-fifo --help' for more.") != std::string::npos);
	}
	CHECK(sh(build_path("bin/cos-shinjuku") + " --classes 9 2>&1", &out) == 2);
	CHECK(out.find("bad value '9' for --classes") != std::string::npos);
	CHECK(sh(build_path("bin/cos-lock") + " --cap-us 0 2>&1", &out) == 2);
	CHECK(out.find("bad value '0' for --cap-us") != std::string::npos);
	CHECK(sh(build_path("bin/cos-pair") + " -s x 2>&1", &out) == 2);
	CHECK(out.find("bad value 'x' for --slice-us") != std::string::npos);
}

TEST_CASE("a lord refused for its CPUs is told which ones and why", "[policies][errors]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	int n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	std::string out, want = "enclave CPUs " + std::to_string(n) + "-" + std::to_string(n + 3) +
				" are not online (online: 0-" + std::to_string(n - 1) + ")";
	CHECK(sh(build_path("bin/cos-fifo") + " --cpus 1-" + std::to_string(n + 3) + " 2>&1", &out) == 1);
	CAPTURE(out);
	CHECK(out.find(want) != std::string::npos);
	CHECK(sh(build_path("bin/cos-fifo") + " --cpus 1 --lord-cpu " + std::to_string(n + 1) + " 2>&1",
		 &out) == 1);
	CHECK(out.find("the lord's CPU " + std::to_string(n + 1) + " is not online") != std::string::npos);
}

TEST_CASE("a policy started without CAP_SYS_NICE says which capability is missing", "[policies][errors]")
{
	Shim shim;	/* attached already: the program goes straight to registering */
	int p[2];
	REQUIRE(pipe(p) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(99);
		std::string prog = build_path("bin/cos-fifo");
		execl(prog.c_str(), prog.c_str(), "--cpus", "1-3", (char *)nullptr);
		_exit(127);
	}
	close(p[1]);
	std::string err;
	char buf[512];
	ssize_t n;
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		err.append(buf, n);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	CAPTURE(err);
	REQUIRE(WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 1);
	CHECK(err.find("a lord needs CAP_SYS_NICE") != std::string::npos);	/* checked up front */
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("per-CPU kthreads still run on CPUs that a run-to-block lord keeps busy with COS tasks", "[policies][fifo][kthread]")
{
	/*
	 * cos-fifo gives its tasks SCX_SLICE_INF.  Two spinners fill CPUs 2-3 while we make every
	 * CPU's kworker run again and again (writing vm/stat_refresh queues work on each CPU and
	 * waits for all of it).  A kworker that loses its preemption race must still get its CPU,
	 * not wait for a spinner that never blocks (sched_ext's watchdog would eject the shim).
	 */
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1-3",
			 "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(0)});
	REQUIRE(lord.wait_for("lord on CPU 0"));
	auto *stop = shared_new<std::atomic<bool>>();
	pid_t spin = fork();
	if (spin == 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(2, &s);
		CPU_SET(3, &s);
		if (sched_setaffinity(0, sizeof(s), &s) || become_cos_task())
			_exit(1);
		std::thread t([stop] {
			while (!stop->load(std::memory_order_relaxed))
				;
		});
		uint64_t until = now_ns() + 60000000000ull;	/* a bound if the test dies */
		while (!stop->load(std::memory_order_relaxed) && now_ns() < until)
			;
		t.join();
		_exit(0);
	}
	std::this_thread::sleep_for(std::chrono::seconds(1));

	std::atomic<int> refreshes{0};
	std::atomic<bool> done{false};
	std::thread writer([&] {
		uint64_t until = now_ns() + 8000000000ull;
		while (now_ns() < until) {
			int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
			if (fd < 0 || write(fd, "1", 1) != 1)
				break;
			close(fd);
			refreshes++;
		}
		done = true;
	});
	/* The spinners keep running: the writer ends only if every kworker got its CPU. */
	for (int i = 0; i < 250 && !done; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	bool finished = done;
	stop->store(true);
	writer.join();
	int st = 0;
	waitpid(spin, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 0);
	CAPTURE(refreshes.load());
	CHECK(finished);
	CHECK(refreshes > 0);
	CHECK(sched_ext_state() == "enabled");
	CHECK(lord.stop(SIGINT) == 0);
	shared_delete(stop);
}
