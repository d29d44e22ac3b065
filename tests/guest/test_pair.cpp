// SPDX-License-Identifier: GPL-2.0
/*
 * test_pair.cpp — cos-pair on two enclave CPUs: the two processes of a pipe ping-pong pair run
 * on one CPU (the kernel hands it over at each block, the lord latches a woken partner behind
 * the other), two pairs spread over both CPUs, --help and bad values.  Behaviour only: where
 * each side ran, not how fast.
 */
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <csignal>
#include <cstring>
#include <cstdint>
#include <iostream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "guest.h"

using namespace guest;

namespace {
constexpr int PAIRS = 2, SAMPLES = 2000;

/* Where each side of each pair was at each round trip. */
struct Seen {
	std::atomic<int> n[PAIRS]{};
	int8_t cpu[PAIRS][2][SAMPLES];
	std::atomic<int> bad{0};
};

/* One side of pair @i: read, note the CPU, write; side 0 starts. */
void side(Seen *s, int i, int k, int rd, int wr)
{
	char c = 0;
	signal(SIGPIPE, SIG_IGN);	/* the last write may find the other side gone */
	if (k == 0 && write(wr, &c, 1) != 1)
		_exit(3);
	for (int r = 0; r < SAMPLES; r++) {
		if (read(rd, &c, 1) != 1)
			_exit(4);
		s->cpu[i][k][r] = (int8_t)sched_getcpu();
		if (k == 0)
			s->n[i] = r + 1;
		if (write(wr, &c, 1) != 1 && r + 1 < SAMPLES)
			_exit(5);
	}
	_exit(0);
}

/* PAIRS pipe ping-pong pairs of COS task processes; returns non-zero if one failed. */
int run_pairs(Seen *s)
{
	std::vector<pid_t> pids;
	for (int i = 0; i < PAIRS; i++) {
		int a[2], b[2];
		REQUIRE(pipe(a) == 0);
		REQUIRE(pipe(b) == 0);
		for (int k = 0; k < 2; k++) {
			pid_t p = fork();
			if (p == 0) {
				unpin_self();
				if (become_cos_task())
					_exit(10);
				side(s, i, k, k ? a[0] : b[0], k ? b[1] : a[1]);
			}
			REQUIRE(p > 0);
			pids.push_back(p);
		}
		for (int fd : {a[0], a[1], b[0], b[1]})
			close(fd);
	}
	int bad = 0;
	for (pid_t p : pids) {
		int st = 0;
		waitpid(p, &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad;
}
} // namespace

TEST_CASE("cos-pair: a pipe pair shares a CPU, two pairs take a CPU each", "[pair][policies]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	if (std::thread::hardware_concurrency() < 3)
		SKIP("needs 3 CPUs: the lord's and two for the pairs");
	PolicyProc lord({build_path("bin/cos-pair"), "--cpus", "1-2", "--stall-ms", stall_arg(1000),
			 "--starve-ms", starve_arg(5000)});
	REQUIRE(lord.wait_for("cos-pair: lord on CPU 0"));
	Seen *s = shared_new<Seen>();
	int bad = run_pairs(s);
	CHECK(lord.stop(SIGINT) == 0);
	CAPTURE(lord.err);
	CHECK(bad == 0);
	int together[PAIRS] = {}, on[PAIRS][3] = {}, enclave = 0, n = SAMPLES;
	for (int i = 0; i < PAIRS; i++)
		CHECK(s->n[i] == SAMPLES);
	for (int r = 0; r < n; r++)
		for (int i = 0; i < PAIRS; i++) {
			together[i] += s->cpu[i][0][r] == s->cpu[i][1][r];
			for (int k = 0; k < 2; k++)
				enclave += s->cpu[i][k][r] == 1 || s->cpu[i][k][r] == 2;
			if (s->cpu[i][0][r] >= 0 && s->cpu[i][0][r] < 3)
				on[i][s->cpu[i][0][r]]++;
		}
	std::cerr << "cos-pair: round trips with both sides on one CPU " << together[0] << ", "
		  << together[1] << " of " << n << "; on CPU 1 / 2: " << on[0][1] << " / " << on[0][2]
		  << ", " << on[1][1] << " / " << on[1][2] << "\n";
	CHECK(enclave >= PAIRS * 2 * n * 99 / 100);	/* on the enclave (the kernel may bypass) */
	for (int i = 0; i < PAIRS; i++)
		CHECK(together[i] > n * 8 / 10);	/* partners together */
	/* unrelated pairs spread: both CPUs did a good part of the round trips (a pair moves when
	 * a handoff is late, so a pair's own CPU is not fixed) */
	CHECK(on[0][1] + on[1][1] > n / 2);
	CHECK(on[0][2] + on[1][2] > n / 2);
	CHECK(lord.err.find(" wake-handoffs 0 ") == std::string::npos);	/* the kernel's */
	shared_delete(s);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-pair explains itself and refuses bad values with status 2", "[pair][usage]")
{
	std::string out;
	CHECK(sh(build_path("bin/cos-pair") + " --help", &out) == 0);
	CHECK(out.find("usage: ") == 0);
	for (const char *opt : {"--slice-us N", "--grace-us N", "--stats"})
		CHECK(out.find(opt) != std::string::npos);
	for (const char *bad : {"0", "-1", "x", "", "10000001"}) {
		CAPTURE(bad);
		CHECK(sh(build_path("bin/cos-pair") + " --slice-us '" + bad + "' 2>/dev/null") == 2);
		if (strcmp(bad, "0"))	/* --grace-us 0: latch at once */
			CHECK(sh(build_path("bin/cos-pair") + " --grace-us '" + bad + "' 2>/dev/null") == 2);
	}
}
