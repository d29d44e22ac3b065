// test_lord.cpp — the lord: registration, the FIFO lord end to end, preemption of a non-COS task.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <sched.h>
#include <sys/syscall.h>

#include "guest.h"
#include "lord_fifo.h"

using namespace guest;

namespace {
constexpr int SCHED_EXT_POLICY = 7;

struct sched_attr_v0 {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

int set_policy(int policy)
{
	sched_attr_v0 a = {};
	a.size = sizeof(a);
	a.sched_policy = policy;
	return syscall(SYS_sched_setattr, 0, &a, 0) ? errno : 0;
}

int become_cos_task() { return set_policy(SCHED_EXT_POLICY); }

void pin_self(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

void spin_for(std::chrono::microseconds d)
{
	auto until = std::chrono::steady_clock::now() + d;
	while (std::chrono::steady_clock::now() < until)
		;
}

struct Shim {
	cos_shim *shim = nullptr;
	Shim()
	{
		int err = cos_shim_attach(&shim, nullptr);
		INFO(cos_strerror(err));
		REQUIRE(err == 0);
	}
	~Shim() { cos_shim_detach(shim); }
};
} // namespace

TEST_CASE("a FIFO lord runs 16 spin/sleep COS threads to completion on its CPUs", "[lord][fifo]")
{
	Shim shim;
	FifoLord lord(0, {1, 2, 3});
	REQUIRE(lord.register_error == 0);

	constexpr int N = 16, ROUNDS = 200;
	std::vector<std::vector<int>> cpus_seen(N);
	std::vector<pid_t> tids(N);
	std::vector<int> setattr_err(N);
	std::vector<std::thread> workers;
	for (int i = 0; i < N; i++)
		workers.emplace_back([&, i] {
			tids[i] = gettid();
			setattr_err[i] = become_cos_task();
			/* A running task comes under the lord at its next wake-up. */
			std::this_thread::sleep_for(std::chrono::microseconds(300));
			for (int r = 0; r < ROUNDS; r++) {
				spin_for(std::chrono::microseconds(200));
				cpus_seen[i].push_back(sched_getcpu());
				std::this_thread::sleep_for(std::chrono::microseconds(300));
			}
		});
	for (auto &w : workers)
		w.join();
	std::this_thread::sleep_for(std::chrono::milliseconds(100));	/* DEAD messages */
	lord.finish();

	for (int i = 0; i < N; i++)
		REQUIRE(setattr_err[i] == 0);
	CHECK(lord.shoot_errors.count(COS_SHOOT_BAD_GEN) == 0);

	/* messages: consecutive seq, no overflow or stall */
	REQUIRE_FALSE(lord.log.empty());
	for (size_t i = 0; i < lord.log.size(); i++) {
		CAPTURE(i);
		REQUIRE(lord.log[i].seq == i + 1);
		CHECK(lord.log[i].type != COS_MSG_OVERFLOW);
		CHECK(lord.log[i].type != COS_MSG_LORD_STALL);
	}

	/*
	 * Per task: NEW first, DEAD last, and a valid life in between: every BLOCKED is followed by
	 * RUNNABLE (its wake-up) or DEAD.  Not every sleep blocks (a short timer may fire before the
	 * thread reaches schedule()), so the number of BLOCKED is not exactly ROUNDS.
	 */
	std::map<pid_t, std::vector<uint32_t>> by_pid;
	for (auto &m : lord.log)
		if (m.pid)
			by_pid[m.pid].push_back(m.type);
	for (int i = 0; i < N; i++) {
		CAPTURE(i, tids[i]);
		auto &types = by_pid[tids[i]];
		REQUIRE(types.size() >= 3);
		CHECK(types.front() == COS_MSG_TASK_NEW);
		CHECK(types.back() == COS_MSG_TASK_DEAD);
		CHECK(std::count(types.begin(), types.end(), (uint32_t)COS_MSG_TASK_DEAD) == 1);
		CHECK(std::count(types.begin(), types.end(), (uint32_t)COS_MSG_TASK_BLOCKED) > 0);
		for (size_t k = 0; k + 1 < types.size(); k++)
			if (types[k] == COS_MSG_TASK_BLOCKED) {
				CAPTURE(k);
				CHECK((types[k + 1] == COS_MSG_TASK_RUNNABLE ||
				       types[k + 1] == COS_MSG_TASK_DEAD));
			}
	}

	/* placement: every slice ran on an enclave CPU the lord chose for that thread */
	std::map<pid_t, std::set<int>> chosen;
	for (auto &p : lord.placed)
		chosen[p.pid].insert(p.cpu);
	for (int i = 0; i < N; i++) {
		CAPTURE(i, tids[i]);
		REQUIRE(cpus_seen[i].size() == (size_t)ROUNDS);
		for (int c : cpus_seen[i]) {
			CAPTURE(c);
			CHECK((c >= 1 && c <= 3));
			CHECK(chosen[tids[i]].count(c) == 1);
		}
	}
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a shot COS thread preempts a non-COS busy loop on its CPU", "[lord][preempt]")
{
	Shim shim;
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> spins{0};
	std::thread hog([&] {
		pin_self(2);
		while (!stop)
			spins++;
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(100));

	FifoLord lord(0, {2});
	REQUIRE(lord.register_error == 0);
	std::atomic<int> ran_on{-1};
	std::atomic<unsigned long> hog_at_run{0};
	std::thread cos([&] {
		REQUIRE(become_cos_task() == 0);
		std::this_thread::sleep_for(std::chrono::milliseconds(1));	/* wake: under the lord */
		ran_on = sched_getcpu();
		hog_at_run = spins.load();
	});
	cos.join();
	unsigned long before = spins;
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	CHECK(ran_on == 2);
	CHECK(spins > before);		/* the busy loop was alive before and after */
	CHECK(hog_at_run > 0);
	stop = true;
	hog.join();
	lord.finish();
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("lord registration refuses bad requests", "[lord][errors]")
{
	Shim shim;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	cos_lord_opts o = {};
	o.size = sizeof(o);
	o.lord_cpu = 0;
	o.enclave = &set;
	o.enclave_size = sizeof(set);
	cos_lord *l = nullptr;

	SECTION("the lord's CPU inside the enclave")
	{
		CPU_SET(0, &set);
		CHECK(cos_lord_register(&l, &o) == -EINVAL);
	}
	SECTION("an offline or impossible CPU")
	{
		CPU_SET(1000, &set);
		CHECK(cos_lord_register(&l, &o) == -EINVAL);
	}
	SECTION("an empty enclave")
	{
		CPU_ZERO(&set);
		CHECK(cos_lord_register(&l, &o) == -EINVAL);
	}
	SECTION("a ring size that is not a power of two")
	{
		o.ring_entries = 1000;
		CHECK(cos_lord_register(&l, &o) == -EINVAL);
	}
	SECTION("unknown flags")
	{
		o.flags = 0x80;
		CHECK(cos_lord_register(&l, &o) == -EINVAL);
	}
	SECTION("a second lord")
	{
		FifoLord first(0, {1});
		REQUIRE(first.register_error == 0);
		CHECK(cos_lord_register(&l, &o) == -EBUSY);
	}
	SECTION("without CAP_SYS_NICE")
	{
		int rc = in_child([&] {
			if (setresuid(65534, 65534, 65534))
				return 10;
			return cos_lord_register(&l, &o) < 0 ? 0 : 11;
		});
		CHECK(rc == 0);
	}
	CHECK(l == nullptr);
	CHECK(sched_ext_state() == "enabled");
}
