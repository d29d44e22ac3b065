// test_lord.cpp — the lord: registration, the FIFO lord end to end, preemption of a non-COS task.
// See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <semaphore.h>
#include <iostream>
#include <new>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <thread>

#include "guest.h"
#include "lord_fifo.h"

using namespace guest;

namespace {
/*
 * Wait until @lord has consumed the TASK_DEAD of each of the @n threads @tids, which exited: the
 * kernel posts a thread's TASK_DEAD when it frees the task, some time after its reaping, then
 * frees its slot.  So: until no slot of the lord's table holds one of them, then until the lord
 * consumed every message posted by then.  Whether both came before the deadline.
 */
bool await_dead(const FifoLord &lord, const pid_t *tids, int n)
{
	const cos_ctl *ctl = cos_lord_ctl(lord.lord);
	std::set<pid_t> mine(tids, tids + n);
	auto gone = [&] {
		for (unsigned s = 0; s < cos_lord_max_tasks(lord.lord); s++) {
			cos_task_status st;
			if (!cos_lord_task_status(lord.lord, s, &st) && st.state != COS_TASK_FREE &&
			    mine.count((pid_t)st.pid))
				return false;
		}
		return true;
	};
	if (!wait_until(gone))
		return false;
	uint64_t posted = __atomic_load_n(&ctl->produced, __ATOMIC_ACQUIRE);
	return wait_until([&] { return __atomic_load_n(&ctl->consumed, __ATOMIC_ACQUIRE) >= posted; });
}
} // namespace


TEST_CASE("a FIFO lord runs 16 spin/sleep COS threads to completion on its CPUs", "[lord][fifo]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	/*
	 * stall_ms 1000: the emulated vCPUs of a loaded host pause for tens of ms.  The starvation
	 * rule keeps its default; both are scaled on a slow kernel (guest::time_scale).
	 */
	auto info_now = [] {
		cos_info i = {};
		int fd = cos_open();
		REQUIRE(fd >= 0);
		REQUIRE(cos_get_info(fd, &i) == 0);
		close(fd);
		return i;
	};
	cos_info before = info_now();
	CHECK(before.lord_pid == 0);
	CHECK(before.lord_cpu == -1);
	FifoLord lord(0, {1, 2, 3}, 1000);
	REQUIRE(lord.register_error == 0);
	cos_info during = info_now();
	CHECK(during.lord_pid == lord.tid);		/* GET_INFO names the lord */
	CHECK(during.lord_cpu == 0);
	CHECK(during.enclave_cpus == 3);

	constexpr int N = 16, ROUNDS = 200;
	struct Result {
		pid_t tids[N];
		int setattr_err[N];
		int cpus_seen[N][ROUNDS];
	};
	Shared<Result> res;
	int rc = in_child_threads(N, [&](int i) {
		res->tids[i] = gettid();
		res->setattr_err[i] = become_cos_task();
		leave_cpu();	/* a running task comes under the lord at its next wake-up */
		for (int r = 0; r < ROUNDS; r++) {
			spin_for(std::chrono::microseconds(200));
			res->cpus_seen[i][r] = sched_getcpu();
			std::this_thread::sleep_for(std::chrono::microseconds(300));
		}
	});
	REQUIRE(rc == 0);
	REQUIRE(await_dead(lord, res->tids, N));	/* their DEAD messages */
	auto &tids = res->tids;
	lord.finish();
	cos_info after = info_now();
	CHECK(after.lord_pid == 0);
	CHECK(after.placed - before.placed == lord.placed.size());	/* the module's counters */
	CHECK(after.messages - before.messages >= lord.log.size());
	CHECK(after.fallbacks - before.fallbacks == 1);			/* the unregister */
	std::cerr << "lord loop: longest pause " << lord.max_gap_ns / 1000 << "us ending at mono "
		  << lord.max_gap_end_ns / 1000 << "us on cpu " << lord.max_gap_cpu << " lord tid "
		  << lord.tid << "\n";

	for (int i = 0; i < N; i++)
		REQUIRE(res->setattr_err[i] == 0);
	CHECK(lord.shoot_errors.count(COS_SHOOT_BAD_GEN) == 0);
	CAPTURE(lord.stall_reasons);	/* COS_STALL_* bits, if a stall happens */

	/* messages: consecutive seq, no overflow or stall */
	REQUIRE_FALSE(lord.log.empty());
	for (size_t i = 0; i < lord.log.size(); i++) {
		CAPTURE(i);
		if (lord.log[i].type == COS_MSG_LORD_STALL)
			for (size_t j = i >= 8 ? i - 8 : 0; j <= i; j++)
				std::cerr << (j << 0) << " " << cos_msg_type_name(lord.log[j].type) << " cpu "
					      << lord.log[j].cpu << " pid " << lord.log[j].pid << " t+"
					      << (lord.log[j].ts - lord.log[0].ts) / 1000 << "us\n";
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
				CAPTURE(k, cos_msg_type_name(types[k + 1]),
					k > 0 ? cos_msg_type_name(types[k - 1]) : "-",
					k + 2 < types.size() ? cos_msg_type_name(types[k + 2]) : "-");
				CHECK((types[k + 1] == COS_MSG_TASK_RUNNABLE ||
				       types[k + 1] == COS_MSG_TASK_DEAD));
			}
	}

	/*
	 * placement: every slice ran on an enclave CPU the lord chose for that thread, or where the
	 * kernel itself ran it and said so (RUNNABLE with COS_RUNNABLE_BYPASS: sched_ext runs a
	 * migration-disabled or exiting task on its own CPU without asking the scheduler)
	 */
	std::map<pid_t, std::set<int>> chosen, bypassed;
	for (auto &p : lord.placed)
		chosen[p.pid].insert(p.cpu);
	for (auto &m : lord.log)
		if (m.type == COS_MSG_TASK_RUNNABLE && m.arg == COS_RUNNABLE_BYPASS) {
			bypassed[m.pid].insert(m.cpu);
			std::cerr << "bypass: pid " << m.pid << " ran on cpu " << m.cpu
				  << " without a shoot\n";
		}
	for (int i = 0; i < N; i++) {
		CAPTURE(i, tids[i]);
		for (int c : res->cpus_seen[i]) {
			CAPTURE(c);
			if (bypassed[tids[i]].count(c))
				continue;
			CHECK((c >= 1 && c <= 3));
			CHECK(chosen[tids[i]].count(c) == 1);
		}
	}
	CHECK(sched_ext_state() == "enabled");
}

namespace {
/*
 * The CPUs each of @n threads (@tids) was started on, by the lord's shoots or by the kernel's
 * wake rules; each start by a rule on an enclave CPU (1-3) the thread may use (the even ones:
 * 2-3 only).
 */
std::map<pid_t, std::set<int>> started_on(const FifoLord &lord, const pid_t *tids, int n)
{
	std::map<pid_t, int> index;
	for (int i = 0; i < n; i++)
		index[tids[i]] = i;
	std::map<pid_t, std::set<int>> started;
	for (auto &p : lord.placed)
		started[p.pid].insert(p.cpu);
	for (auto &p : lord.wake_placed) {
		CAPTURE(p.pid, p.cpu);
		REQUIRE(index.count(p.pid));
		CHECK((p.cpu >= 1 && p.cpu <= 3));		/* the enclave, never the lord's CPU */
		if (index[p.pid] % 2 == 0)
			CHECK(p.cpu >= 2);			/* its allowed CPUs */
		started[p.pid].insert(p.cpu);
	}
	return started;
}
} // namespace

TEST_CASE("wake rule IDLE: waking threads start on free enclave CPUs they may use, without a shoot", "[lord][wake]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	FifoLord lord(0, {1, 2, 3}, 1000, 0, 0, COS_WAKE_IDLE);
	REQUIRE(lord.register_error == 0);
	REQUIRE(lord.wake_rules_error == 0);
	/* 8 threads: the even ones may run on CPUs 2-3 only (the kernel must respect it too) */
	constexpr int N = 8, ROUNDS = 100;
	struct Result {
		pid_t tids[N];
		int setattr_err[N];
		int cpus_seen[N][ROUNDS];
	};
	Shared<Result> res;
	int rc = in_child_threads(N, [&](int i) {
		res->tids[i] = gettid();
		if (i % 2 == 0) {
			cpu_set_t s;
			CPU_ZERO(&s);
			CPU_SET(2, &s);
			CPU_SET(3, &s);
			sched_setaffinity(0, sizeof(s), &s);
		}
		res->setattr_err[i] = become_cos_task();
		leave_cpu();
		for (int r = 0; r < ROUNDS; r++) {
			spin_for(std::chrono::microseconds(100));
			res->cpus_seen[i][r] = sched_getcpu();
			std::this_thread::sleep_for(std::chrono::microseconds(1000));
		}
	});
	REQUIRE(rc == 0);
	REQUIRE(await_dead(lord, res->tids, N));	/* their DEAD messages */
	lord.finish();
	for (int i = 0; i < N; i++)
		REQUIRE(res->setattr_err[i] == 0);
	CAPTURE(lord.stall_reasons, lord.placed.size(), lord.wake_placed.size());
	std::cerr << "wake rule IDLE: " << lord.wake_placed.size() << " wake-ups started by the kernel, "
		  << lord.placed.size() << " shoots\n";
	CHECK(lord.wake_placed.size() > 0);
	auto started = started_on(lord, res->tids, N);	/* by the lord or by the kernel's rules */
	std::map<pid_t, std::set<int>> bypassed;
	std::map<pid_t, std::vector<uint32_t>> by_pid;
	for (auto &m : lord.log) {
		CHECK(m.type != COS_MSG_LORD_STALL);
		CHECK(m.type != COS_MSG_OVERFLOW);
		if (m.type == COS_MSG_TASK_RUNNABLE && m.arg == COS_RUNNABLE_BYPASS)
			bypassed[m.pid].insert(m.cpu);
		if (m.pid)
			by_pid[m.pid].push_back(m.type);
	}
	for (int i = 0; i < N; i++) {
		CAPTURE(i, res->tids[i]);
		/* every slice ran where the lord or the rule started it, on a CPU it may use */
		for (int c : res->cpus_seen[i]) {
			CAPTURE(c);
			if (bypassed[res->tids[i]].count(c))
				continue;
			CHECK(started[res->tids[i]].count(c) == 1);
			CHECK((c >= (i % 2 == 0 ? 2 : 1) && c <= 3));
		}
		/* a life the lord can follow: a wake-up after each BLOCKED, as RUNNABLE or PLACED */
		auto &types = by_pid[res->tids[i]];
		REQUIRE(types.size() >= 3);
		CHECK(types.front() == COS_MSG_TASK_NEW);
		CHECK(types.back() == COS_MSG_TASK_DEAD);
		for (size_t k = 0; k + 1 < types.size(); k++)
			if (types[k] == COS_MSG_TASK_BLOCKED) {
				CAPTURE(k, cos_msg_type_name(types[k + 1]));
				CHECK((types[k + 1] == COS_MSG_TASK_RUNNABLE || types[k + 1] == COS_MSG_TASK_PLACED ||
				       types[k + 1] == COS_MSG_TASK_DEAD));
			}
	}
	CHECK(sched_ext_state() == "enabled");
}

namespace {
/*
 * 4 pairs ping-pong through semaphores on 3 CPUs under @rules: each thread wakes its partner,
 * then yields (@yield) or goes straight to its own sem_wait(), blocking.  8 threads on 3 CPUs,
 * so a woken partner often waits, and the handoff gives it the CPU its waker leaves.  The even
 * threads may run on CPUs 2-3 only: a handoff on CPU 1 must not give them that.  Returns the
 * handoffs seen.
 */
unsigned pingpong_handoffs(unsigned rules, bool yield)
{
	FifoLord lord(0, {1, 2, 3}, 1000, 0, 0, rules);
	REQUIRE(lord.register_error == 0);
	REQUIRE(lord.wake_rules_error == 0);
	constexpr int N = 8, ROUNDS = 100;
	struct Result {
		pid_t tids[N];
		int setattr_err[N];
		int cpus_seen[N][ROUNDS];
		sem_t go[N];
	};
	Shared<Result> res;
	for (int i = 0; i < N; i++)
		sem_init(&res->go[i], 1, i % 2 == 0);	/* the even one of each pair starts */
	int rc = in_child_threads(N, [&](int i) {
		res->tids[i] = gettid();
		if (i % 2 == 0) {
			cpu_set_t s;
			CPU_ZERO(&s);
			CPU_SET(2, &s);
			CPU_SET(3, &s);
			sched_setaffinity(0, sizeof(s), &s);
		}
		res->setattr_err[i] = become_cos_task();
		leave_cpu();	/* off the CPU it was on when it became a COS task */
		for (int r = 0; r < ROUNDS; r++) {
			sem_wait(&res->go[i]);
			spin_for(std::chrono::microseconds(50));
			res->cpus_seen[i][r] = sched_getcpu();
			sem_post(&res->go[i ^ 1]);
			if (yield)
				sched_yield();
		}
	});
	REQUIRE(rc == 0);
	REQUIRE(await_dead(lord, res->tids, N));	/* their DEAD messages */
	lord.finish();
	for (int i = 0; i < N; i++)
		REQUIRE(res->setattr_err[i] == 0);
	CAPTURE(lord.stall_reasons, lord.placed.size(), lord.wake_placed.size(), lord.handoffs);
	std::cerr << "wake rules 0x" << std::hex << rules << std::dec << ", threads "
		  << (yield ? "yielding" : "blocking") << ": " << lord.handoffs << " handoffs, "
		  << lord.placed.size() << " shoots\n";
	/* no rule that starts a waking task: every TASK_PLACED is a handoff */
	CHECK(lord.handoffs == lord.wake_placed.size());
	auto started = started_on(lord, res->tids, N);	/* by the lord or by the kernel's rules */
	std::map<pid_t, std::set<int>> bypassed;
	std::map<pid_t, uint32_t> last;			/* each thread's last message */
	size_t yields = 0, woken = 0, owed = 0;
	std::map<std::string, size_t> requeued;		/* handoffs to a task waiting again */
	for (auto &m : lord.log) {
		CHECK(m.type != COS_MSG_LORD_STALL);
		CHECK(m.type != COS_MSG_OVERFLOW);
		if (m.type == COS_MSG_TASK_RUNNABLE && m.arg == COS_RUNNABLE_BYPASS)
			bypassed[m.pid].insert(m.cpu);
		yields += m.type == COS_MSG_TASK_YIELD;
		if (m.type == COS_MSG_TASK_PLACED && (m.arg & COS_PLACED_F_HANDOFF)) {
			uint32_t before = last[m.pid];

			if (before == COS_MSG_TASK_RUNNABLE)
				woken++;
			else if (before == COS_MSG_TASK_YIELD)
				owed++;			/* handed back */
			else
				requeued[cos_msg_type_name(before)]++;
		}
		last[m.pid] = m.type;
	}
	/*
	 * Each handoff's task was waiting, no shoot took it: woken (RUNNABLE) by the task that
	 * left the CPU, or it had yielded that CPU to that task (owed it back).  An owed task may
	 * have been shot elsewhere meanwhile and be waiting again (preempted there, or its shoot
	 * gone stale): the CPU still goes back to it.
	 */
	CAPTURE(requeued);
	CHECK(woken + owed + requeued["TASK_PREEMPTED"] + requeued["SHOOT_STALE"] +
	      requeued["SHOOT_FAILED"] == lord.handoffs);
	CHECK((woken + owed) * 10 >= lord.handoffs * 9);	/* those stay rare */
	std::cerr << "  of which " << owed << " handed back to a yielder\n";
	if (yield) {
		CHECK(yields >= lord.handoffs);	/* each handoff's yielder waits for the lord */
		CHECK(owed > 0);		/* the partner yields back before it wakes anyone */
	} else {
		CHECK(yields == 0);
		CHECK(owed == 0);
	}
	for (int i = 0; i < N; i++) {
		CAPTURE(i, res->tids[i]);
		for (int c : res->cpus_seen[i]) {
			CAPTURE(c);
			if (bypassed[res->tids[i]].count(c))
				continue;
			CHECK(started[res->tids[i]].count(c) == 1);
			CHECK((c >= (i % 2 == 0 ? 2 : 1) && c <= 3));
		}
	}
	CHECK(sched_ext_state() == "enabled");
	return lord.handoffs;
}
} // namespace

TEST_CASE("wake rule HANDOFF: a yield starts the task it woke on its CPU, where that task may run", "[lord][wake]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	CHECK(pingpong_handoffs(COS_WAKE_HANDOFF, true) > 0);
}

TEST_CASE("wake rule HANDOFF_BLOCK: a block starts the task it woke on its CPU; HANDOFF alone does not", "[lord][wake]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	CHECK(pingpong_handoffs(COS_WAKE_HANDOFF_BLOCK, false) > 0);
	/* a block is not a yield: the yield's rule alone hands nothing over */
	CHECK(pingpong_handoffs(COS_WAKE_HANDOFF, false) == 0);
}

TEST_CASE("RUNNABLE names the COS thread that woke the task, and no thread for a timer's wake-up", "[lord][waker]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	{
		int fd = cos_open();
		cos_info info{};
		REQUIRE(fd >= 0);
		REQUIRE(cos_get_info(fd, &info) == 0);
		close(fd);
		REQUIRE((info.features & COS_FEAT_WAKER));
	}
	FifoLord lord(0, {1});
	REQUIRE(lord.register_error == 0);
	/* threads 0 and 1 ping-pong through two pipes on CPU 1; thread 2 sleeps on a timer */
	constexpr int ROUNDS = 50;
	struct Result {
		pid_t tids[3];
		int setattr_err[3];
		std::atomic<int> ready;
	};
	Shared<Result> res;
	int ping[2], pong[2];
	REQUIRE(pipe(ping) == 0);
	REQUIRE(pipe(pong) == 0);
	int rc = in_child_threads(3, [&](int i) {
		char c = 0;
		pin_self(1);
		res->tids[i] = gettid();
		res->setattr_err[i] = become_cos_task();
		res->ready++;
		while (res->ready.load() < 3)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		for (int r = 0; r < ROUNDS; r++) {
			if (i == 0) {
				if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
					return;
			} else if (i == 1) {
				if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
					return;
			} else {
				std::this_thread::sleep_for(std::chrono::microseconds(500));
			}
		}
	});
	REQUIRE(rc == 0);
	REQUIRE(await_dead(lord, res->tids, 3));	/* their DEAD messages */
	lord.finish();
	for (int fd : {ping[0], ping[1], pong[0], pong[1]})
		close(fd);
	for (int i = 0; i < 3; i++)
		REQUIRE(res->setattr_err[i] == 0);
	int by_partner[2] = {0, 0}, runnable[3] = {0, 0, 0};
	for (auto &m : lord.log) {
		if (m.type != COS_MSG_TASK_RUNNABLE) {
			CHECK(m.waker == 0);	/* only RUNNABLE names a waker */
			continue;
		}
		for (int i = 0; i < 3; i++) {
			if ((pid_t)m.pid != res->tids[i])
				continue;
			CAPTURE(i, m.waker);
			runnable[i]++;
			if (i == 2) {
				CHECK(m.waker == 0);	/* a timer's interrupt: nobody's wake-up */
			} else if (m.waker) {
				/* a pipe wake-up names its partner (the ready wait's sleeps: none) */
				CHECK((pid_t)m.waker == res->tids[1 - i]);
				by_partner[i] += (pid_t)m.waker == res->tids[1 - i];
			}
		}
	}
	CAPTURE(runnable[0], runnable[1], runnable[2]);
	std::cerr << "waker: " << by_partner[0] << " and " << by_partner[1] << " of "
		  << runnable[0] << " and " << runnable[1] << " wake-ups named the partner\n";
	/* on one CPU the waker enqueues its partner itself: most wake-ups are named */
	CHECK(by_partner[0] >= ROUNDS / 2);
	CHECK(by_partner[1] >= ROUNDS / 2);
	CHECK(runnable[2] >= ROUNDS / 2);
}

TEST_CASE("a lazy lord (COS_LORD_F_LAZY_WAKE) sleeps through blocks and wake-rule starts while no task waits, and is not declared stalled for them", "[lord][wake][lazy]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	std::map<bool, std::map<uint32_t, int>> types;	/* lazy -> message type -> count */
	std::map<bool, int> woken;			/* WAITs that a message ended */
	for (bool lazy : {true, false}) {
		CAPTURE(lazy);
		std::atomic<bool> ready{false}, stop{false};
		std::atomic<int> dead{0};	/* TASK_DEADs the lord consumed */
		int reg = 0;
		std::thread lord_thread([&] {
			/* WAIT sleeps 200 ms at a time, longer than stall_ms: messages that did not wake the
			 * lord must not count against it */
			LordOpts o({1}, 50);
			o.o.flags = lazy ? COS_LORD_F_LAZY_WAKE : 0;
			cos_lord *l = nullptr;
			reg = cos_lord_register(&l, &o.o);
			if (!reg)
				reg = cos_lord_set_wake_rules(l, COS_WAKE_IDLE, 0);
			ready = true;
			if (reg)
				return;
			/* the task, when it waits for this lord (a wake-up the rule could not start) */
			bool waits = false;
			uint32_t slot = 0, gen = 0;
			while (!stop) {
				const cos_msg *m;
				while ((m = cos_lord_peek(l))) {
					types[lazy][m->type]++;
					dead += m->type == COS_MSG_TASK_DEAD;
					if (m->type == COS_MSG_TASK_RUNNABLE || m->type == COS_MSG_TASK_PREEMPTED ||
					    (m->type == COS_MSG_TASK_NEW && m->arg)) {
						waits = true;
						slot = m->slot;
						gen = m->gen;
					} else if (m->slot == slot && m->type != COS_MSG_TASK_RUNNING) {
						waits = false;
					}
					cos_lord_consume(l);
				}
				cos_lord_publish(l);
				cos_task_status st;
				if (waits && !cos_lord_task_status(l, slot, &st) && st.state == COS_TASK_WAITING &&
				    st.gen == gen && st.last_seq <= cos_lord_consumed(l) &&
				    !cos_lord_prepare(l, 1, slot, gen, 0) && cos_lord_shoot(l, 0) == 1)
					waits = false;
				woken[lazy] += cos_lord_wait(l, waits ? 1000000ull : 200000000ull) == 1;
			}
			cos_lord_destroy(l);
		});
		while (!ready)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		REQUIRE(reg == 0);
		/* one COS task: 200 times 100 us of work and 1 ms of sleep; the rule starts each wake-up */
		CHECK(in_child([] {
			if (become_cos_task())
				return 1;
			for (int r = 0; r < 200; r++) {
				spin_for(std::chrono::microseconds(100));
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			}
			return 0;
		}) == 0);
		/* its DEAD consumed; required once the lord thread is joined (a throw would not join it) */
		bool dead_seen = wait_until([&] { return dead > 0; });
		stop = true;
		lord_thread.join();
		auto &t = types[lazy];
		CAPTURE(t[COS_MSG_TASK_PLACED], t[COS_MSG_TASK_BLOCKED], t[COS_MSG_TASK_RUNNABLE], woken[lazy]);
		REQUIRE(dead_seen);
		CHECK(t[COS_MSG_TASK_PLACED] >= 50);	/* the rule started it (read late or not) */
		CHECK(t[COS_MSG_TASK_BLOCKED] >= 50);
		CHECK(t[COS_MSG_TASK_DEAD] == 1);
		CHECK(t[COS_MSG_LORD_STALL] == 0);
	}
	std::cerr << "lazy lord: woken " << woken[true] << " times for " << types[true][COS_MSG_TASK_PLACED]
		  << " wake-rule starts; eager: " << woken[false] << " for " << types[false][COS_MSG_TASK_PLACED] << "\n";
	/* eager: a wake-up per start or so; lazy: the task's NEW, DEAD and what its runs made wait */
	CHECK(woken[false] >= types[false][COS_MSG_TASK_PLACED] / 4);
	CHECK(woken[true] * 10 < woken[false]);
}

TEST_CASE("wake rule IDLE prefers a CPU that runs nothing to the previous one a fair task holds", "[lord][wake]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	FifoLord lord(0, {1, 2, 3}, 1000, 0, 0, COS_WAKE_IDLE);
	REQUIRE(lord.register_error == 0);
	REQUIRE(lord.wake_rules_error == 0);
	/*
	 * A fair busy loop holds CPU 2 the whole time.  Each round the COS thread runs on CPU 2 (the
	 * lord shoots it there, pinned), allows itself 1-3 again and sleeps: it wakes with CPU 2 as
	 * its previous CPU, free of COS tasks but running the loop, while 1 and 3 run nothing.
	 */
	constexpr int ROUNDS = 20;
	struct Result {
		std::atomic<bool> stop;
		int setattr_err;
		pid_t tid;
		int before[ROUNDS], after[ROUNDS];
	};
	Shared<Result> res;
	int rc = in_child([&] {
		std::thread hog([&] {
			pin_self(2);
			while (!res->stop.load(std::memory_order_relaxed))
				;
		});
		std::thread t([&] {
			res->tid = gettid();
			res->setattr_err = become_cos_task();
			cpu_set_t two, all;
			CPU_ZERO(&two);
			CPU_SET(2, &two);
			CPU_ZERO(&all);
			for (int c = 1; c <= 3; c++)
				CPU_SET(c, &all);
			for (int r = 0; r < ROUNDS; r++) {
				sched_setaffinity(0, sizeof(two), &two);
				spin_for(std::chrono::microseconds(200));
				res->before[r] = sched_getcpu();
				sched_setaffinity(0, sizeof(all), &all);
				std::this_thread::sleep_for(std::chrono::milliseconds(2));
				res->after[r] = sched_getcpu();
			}
		});
		t.join();
		res->stop = true;
		hog.join();
		return 0;
	});
	REQUIRE(rc == 0);
	REQUIRE(await_dead(lord, &res->tid, 1));	/* its DEAD message */
	lord.finish();
	REQUIRE(res->setattr_err == 0);
	int from_two = 0, to_idle = 0;
	for (int r = 0; r < ROUNDS; r++) {
		CAPTURE(r, res->before[r], res->after[r]);
		CHECK((res->after[r] >= 1 && res->after[r] <= 3));
		if (res->before[r] == 2) {
			from_two++;
			to_idle += res->after[r] != 2;
		}
	}
	std::cerr << "wake rule IDLE beside a fair hog on the previous CPU: " << to_idle << " of "
		  << from_two << " wake-ups started on an idle CPU, " << lord.wake_placed.size()
		  << " by the kernel in all\n";
	CHECK(lord.wake_placed.size() > 0);
	CHECK(from_two >= ROUNDS / 2);		/* the setup did what it says */
	/* the idle CPUs run nothing else here; a kworker passing by may take one for a moment */
	CHECK(to_idle * 4 >= from_two * 3);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("wake rules start nobody while a task waits for the lord, nor on a CPU a COS task holds", "[lord][wake]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	/* a lord that never shoots: what happens is the kernel's doing alone */
	int rc = guest::in_child([] {
		LordOpts lo({1, 2, 3}, 10000, 10000);
		cos_lord *l = nullptr;
		if (cos_lord_register(&l, &lo.o))
			return 10;
		if (cos_lord_set_wake_rules(l, COS_WAKE_IDLE, 0))
			return 11;
		/* A pinned to 1 wakes first (started on 1, then spins), B pinned to 1 next (1 is A's:
		 * waits), C on 2-3 last: 2 and 3 are free, but B waits, so C must wait too.  Each
		 * becomes a COS task while it sleeps (a running one would wait for a shoot first). */
		const int delay_ms[3] = {100, 300, 500};
		const std::vector<int> allowed[3] = {{1}, {1}, {2, 3}};
		pid_t kids[3];
		for (int k = 0; k < 3; k++) {
			kids[k] = fork();
			if (kids[k] == 0) {
				cpu_set_t s;
				CPU_ZERO(&s);
				for (int c : allowed[k])
					CPU_SET(c, &s);
				sched_setaffinity(0, sizeof(s), &s);
				std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms[k]));
				for (;;)
					;
			}
			for (int i = 0; i < 500; i++) {		/* asleep: state S */
				std::string st = read_file("/proc/" + std::to_string(kids[k]) + "/stat");
				size_t rp = st.rfind(')');
				if (rp != std::string::npos && rp + 2 < st.size() && st[rp + 2] == 'S')
					break;
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			}
			sched_attr_v0 a = {};
			a.size = sizeof(a);
			a.sched_policy = SCHED_EXT_POLICY;
			if (syscall(SYS_sched_setattr, kids[k], &a, 0))
				return 12;
		}
		std::map<pid_t, std::vector<std::pair<uint32_t, uint64_t>>> seen;	/* type, arg */
		/* each one's wake-up: its first message after NEW (a preemption may follow) */
		auto woke = [&](pid_t p) {
			auto &v = seen[p];
			for (size_t i = 0; i + 1 < v.size(); i++)
				if (v[i].first == COS_MSG_TASK_NEW)
					return v[i + 1];
			return std::pair<uint32_t, uint64_t>(0, 0);
		};
		/* until all three woke (C last); one that did not fails the checks below */
		(void)wait_until([&] {
			const cos_msg *m;
			while ((m = cos_lord_peek(l))) {
				seen[m->pid].push_back({m->type, m->arg});
				cos_lord_consume(l);
			}
			cos_lord_publish(l);
			for (pid_t k : kids)
				if (!woke(k).first)
					return false;
			return true;
		});
		/* first: a killed task that waits must run to die, and this lord places nobody (the
		 * starvation rule would free them, after its 10 s) */
		cos_lord_destroy(l);
		for (pid_t k : kids)
			kill(k, SIGKILL);
		for (pid_t k : kids)
			waitpid(k, nullptr, 0);
		fprintf(stderr, "wake order: A %s/%llu B %s/%llu C %s/%llu\n",
			cos_msg_type_name(woke(kids[0]).first), (unsigned long long)woke(kids[0]).second,
			cos_msg_type_name(woke(kids[1]).first), (unsigned long long)woke(kids[1]).second,
			cos_msg_type_name(woke(kids[2]).first), (unsigned long long)woke(kids[2]).second);
		if (woke(kids[0]) != std::make_pair((uint32_t)COS_MSG_TASK_PLACED, (uint64_t)1))
			return 2;			/* A: started on its free CPU */
		if (woke(kids[1]).first != COS_MSG_TASK_RUNNABLE)
			return 3;			/* B: its CPU is A's, it waits */
		if (woke(kids[2]).first != COS_MSG_TASK_RUNNABLE)
			return 4;			/* C: B waits, so C may not pass it */
		return 0;
	});
	CHECK(rc == 0);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos_lord_set_wake_rules refuses unknown rules", "[lord][wake][errors]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	int rc = guest::in_child([] {
		LordOpts lo({1});
		cos_lord *l = nullptr;
		if (cos_lord_register(&l, &lo.o))
			return 10;
		int bad = cos_lord_set_wake_rules(l, 1u << 7, 0);
		int good = cos_lord_set_wake_rules(l, COS_WAKE_PREV, 1000000);
		const cos_ctl *ctl = cos_lord_ctl(l);
		bool set = ctl->wake_rules == COS_WAKE_PREV && ctl->wake_slice_ns == 1000000;
		cos_lord_destroy(l);
		return bad == -EINVAL && good == 0 && set ? 0 : 1;
	});
	CHECK(rc == 0);
}

TEST_CASE("a shot COS thread preempts a non-COS busy loop on its CPU", "[lord][preempt]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> spins{0};
	std::thread hog([&] {
		pin_self(2);
		while (!stop)
			spins++;
	});
	/* the busy loop runs on CPU 2 (CHECK: a throw would leave the hog thread unjoined) */
	CHECK(wait_until([&] { return spins > 0; }));

	FifoLord lord(0, {2});
	REQUIRE(lord.register_error == 0);
	struct Result {
		int err, ran_on;
		pid_t tid;
		unsigned long hog_before, hog_after;
	};
	Shared<Result> res;
	unsigned long hog_start = spins;
	REQUIRE(in_child_threads(1, [&](int) {
		res->tid = gettid();
		res->err = become_cos_task();
		std::this_thread::sleep_for(std::chrono::milliseconds(1));	/* wake: under the lord */
		res->ran_on = sched_getcpu();
	}) == 0);
	unsigned long hog_end = spins;
	CHECK(res->err == 0);
	CHECK(hog_end > hog_start);		/* the busy loop was alive around the shot */
	CHECK(wait_until([&] { return spins > hog_end; }));	/* and still is */
	stop = true;
	hog.join();
	lord.finish();
	/* on CPU 2, unless the kernel ran it where it was and said so (RUNNABLE, BYPASS: see the
	 * placement test above); the thread's messages say which on failure */
	bool bypassed = false;
	std::string story;
	for (auto &m : lord.log)
		if (m.pid == (uint32_t)res->tid) {
			story += " " + std::to_string(m.type) + "/cpu" + std::to_string(m.cpu) + "/" +
				 std::to_string(m.arg);
			bypassed |= m.type == COS_MSG_TASK_RUNNABLE && m.arg == COS_RUNNABLE_BYPASS &&
				    (int)m.cpu == res->ran_on;
		}
	CAPTURE(res->tid, story, kernel_log("stalled"));
	CHECK((res->ran_on == 2 || bypassed));
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("lord registration refuses bad requests", "[lord][errors]")
{
	Shim shim;
	LordOpts lo({1});
	cpu_set_t &set = lo.set;
	cos_lord_opts &o = lo.o;
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
		REQUIRE_LORD_SUPPORT();
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

/*
 * The lord thread goes first on its CPU where it is on the kernel's own scheduler (partial
 * mode): nice -20 while it is registered, its own nice value back after, other threads
 * untouched, and a value someone set meanwhile is left alone.
 */
TEST_CASE("a lord thread runs at nice -20 while registered and gets its nice value back", "[lord][nice]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	auto nice_of = [](pid_t tid) {
		errno = 0;
		int n = getpriority(PRIO_PROCESS, tid);
		return errno ? 100 : n;
	};
	const pid_t main_tid = gettid();
	const int main_nice = nice_of(main_tid);
	int before = 0, during = 0, after = 0, kept = 0, other = 0, rc1 = -1, rc2 = -1;
	std::thread t([&] {
		LordOpts lo({1});
		cos_lord *l = nullptr;
		const pid_t tid = gettid();

		setpriority(PRIO_PROCESS, tid, 5);
		before = nice_of(tid);
		rc1 = cos_lord_register(&l, &lo.o);
		during = nice_of(tid);
		other = nice_of(main_tid);
		cos_lord_destroy(l);
		after = nice_of(tid);
		l = nullptr;
		rc2 = cos_lord_register(&l, &lo.o);
		setpriority(PRIO_PROCESS, tid, 3);	/* an operator's renice while it runs */
		cos_lord_destroy(l);
		kept = nice_of(tid);
	});
	t.join();
	REQUIRE(rc1 == 0);
	REQUIRE(rc2 == 0);
	CHECK(before == 5);
	CHECK(during == -20);
	CHECK(other == main_nice);
	CHECK(after == 5);
	CHECK(kept == 3);
}

TEST_CASE("an enclave has a name and an id; GET_ENCLAVES lists it while it is registered", "[lord][enclave]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	cos_info info = {};
	{
		int fd = cos_open();
		REQUIRE(fd >= 0);
		REQUIRE(cos_get_info(fd, &info) == 0);
		close(fd);
	}
	REQUIRE((info.features & COS_FEAT_ENCLAVE_NAMES));
	int rc = -1;
	CHECK(enclaves_now(&rc).empty());
	CHECK(rc == 0);

	SECTION("a name given: echoed with a new id, listed with the lord, its CPUs and state")
	{
		int st = in_child([&] {
			uint32_t last = 0;
			for (int round = 0; round < 2; round++) {
				RawLordArgs r({1, 3});
				int fd = cos_open();
				strcpy(r.a.name, "web-1.a_b");
				if (fd < 0 || r.register_on(fd))
					return 10;
				if (strcmp(r.a.name, "web-1.a_b") || !r.a.enclave_id || r.a.enclave_id == last)
					return 11;
				last = r.a.enclave_id;
				std::vector<cos_enclave_info> v = enclaves_now();
				if (v.size() != 1)
					return 12;
				const cos_enclave_info &e = v[0];
				if (e.id != last || strcmp(e.name, "web-1.a_b") ||
				    e.lord_pid != (pid_t)syscall(SYS_gettid) || e.lord_cpu != 0)
					return 13;
				if (e.nr_cpus != 2 || e.cpus[0] != ((1ULL << 1) | (1ULL << 3)) ||
				    !(e.flags & COS_ENCLAVE_F_ACTIVE) || (e.flags & COS_ENCLAVE_F_CPUS_CUT))
					return 14;
				cos_enclave_info found = {};
				int ffd = cos_open();
				if (cos_find_enclave(ffd, "web-1.a_b", &found) || found.id != last)
					return 15;
				if (cos_find_enclave(ffd, "nope", &found) != -ENOENT ||
				    !strstr(cos_strerror(-ENOENT), "'web-1.a_b'"))
					return 16;
				close(ffd);
				close(fd);	/* release: unregistered */
				if (!enclaves_now().empty())
					return 17;
			}
			return 0;
		});
		CHECK(st == 0);
	}
	SECTION("no name: the thread's comm, other characters as '_'; the old struct size works too")
	{
		int st = in_child([&] {
			prctl(PR_SET_NAME, "my lord/x");
			RawLordArgs r;
			r.a.size = COS_LORD_ARGS_SIZE_VER0;
			int fd = cos_open();
			if (fd < 0 || r.register_on(fd))
				return 10;
			std::vector<cos_enclave_info> v = enclaves_now();
			if (v.size() != 1 || strcmp(v[0].name, "my_lord_x"))
				return 11;
			/* a libcos lord without a name: its program's */
			close(fd);
			LordOpts lo({1});
			cos_lord *l = nullptr;
			prctl(PR_SET_NAME, "cos-test");
			if (cos_lord_register(&l, &lo.o))
				return 12;
			v = enclaves_now();
			int ret = v.size() == 1 && !strcmp(v[0].name, "cos-test") &&
				  !strcmp(cos_lord_name(l), "cos-test") && cos_lord_enclave_id(l) == v[0].id
				  ? 0 : 13;
			cos_lord_destroy(l);
			return ret;
		});
		CHECK(st == 0);
	}
	SECTION("bad names are refused, and nothing is registered")
	{
		int st = in_child([&] {
			const char *bad[] = {"a b", "x/y", "0123456789abcdef"};
			for (const char *n : bad) {
				RawLordArgs r;
				int fd = cos_open();
				memcpy(r.a.name, n, strnlen(n, sizeof(r.a.name)));
				if (r.register_on(fd) != EINVAL)
					return 10;
				close(fd);
			}
			RawLordArgs junk;	/* empty, but a byte after the NUL */
			junk.a.name[3] = 'x';
			int fd = cos_open();
			if (junk.register_on(fd) != EINVAL)
				return 11;
			RawLordArgs id;		/* an id is the module's to give */
			id.a.enclave_id = 7;
			if (id.register_on(fd) != EINVAL)
				return 12;
			close(fd);
			LordOpts lo({1});
			cos_lord *l = nullptr;
			lo.o.name = "way-too-long-a-name";
			if (cos_lord_register(&l, &lo.o) != -EINVAL)
				return 13;
			lo.o.name = "tab\there";
			if (cos_lord_register(&l, &lo.o) != -EINVAL)
				return 14;
			return enclaves_now().empty() ? 0 : 15;
		});
		CHECK(st == 0);
	}
	SECTION("GET_ENCLAVES refuses bad arguments and counts what did not fit")
	{
		int st = in_child([&] {
			LordOpts lo({1});
			cos_lord *l = nullptr;
			lo.o.name = "counted";
			if (cos_lord_register(&l, &lo.o))
				return 10;
			int fd = cos_open();
			cos_enclave_info e[2];
			memset(e, 0xa5, sizeof(e));
			cos_enclaves_args a = {};
			a.size = sizeof(a);
			a.entry_size = sizeof(e[0]);
			a.enclaves = (uintptr_t)e;
			int ret = 0;
			if (ioctl(fd, COS_IOC_GET_ENCLAVES, &a) || a.count != 1 || e[0].id != 0xa5a5a5a5u)
				ret = 11;	/* capacity 0: counted, nothing written */
			a.capacity = 2;
			a.entry_size = 8;
			if (!ret && (!ioctl(fd, COS_IOC_GET_ENCLAVES, &a) || errno != EINVAL))
				ret = 12;
			a.entry_size = sizeof(e[0]);
			a.flags = 1;
			if (!ret && (!ioctl(fd, COS_IOC_GET_ENCLAVES, &a) || errno != EINVAL))
				ret = 13;
			a.flags = 0;
			a.enclaves = 8;	/* an unmapped address */
			if (!ret && (!ioctl(fd, COS_IOC_GET_ENCLAVES, &a) || errno != EFAULT))
				ret = 14;
			a.enclaves = (uintptr_t)e;
			if (!ret && (ioctl(fd, COS_IOC_GET_ENCLAVES, &a) || a.count != 1 ||
				     strcmp(e[0].name, "counted") || e[1].id != 0xa5a5a5a5u))
				ret = 15;
			/* its own counters: one shoot of a slot that holds no task is refused */
			if (!ret && (e[0].placed || e[0].refused || e[0].fallbacks))
				ret = 16;
			if (!ret && (cos_lord_prepare(l, 1, cos_lord_max_tasks(l) - 1, 12345, 0) ||
				     cos_lord_shoot(l, 0) != 0))
				ret = 17;
			if (!ret && (ioctl(fd, COS_IOC_GET_ENCLAVES, &a) || e[0].refused != 1 ||
				     e[0].placed))
				ret = 18;
			close(fd);
			cos_lord_destroy(l);
			return ret;
		});
		CHECK(st == 0);
	}
	CHECK(enclaves_now().empty());
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("COS_IOC_WAIT with the longest timeouts sleeps until a signal", "[lord][wait]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	/* 2^63 - 1 is the longest timeout the kernel's clock holds; above it the value is negative
	 * as a ktime (cos.ko clamps it). All must wait until something happens: here a signal, sent
	 * 300 ms later by a thread that says so first. */
	for (unsigned long long timeout : { 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull }) {
		int rc = in_child([&] {
			static std::atomic<bool> signalled;
			struct sigaction sa = {};
			cos_lord *l = nullptr;
			LordOpts lo({1});

			sa.sa_handler = [](int) {};
			sigaction(SIGUSR1, &sa, nullptr);	/* no SA_RESTART: the wait ends with EINTR */
			if (cos_lord_register(&l, &lo.o))
				return 10;
			pthread_t self = pthread_self();
			std::string waiter_stat = "/proc/self/task/" + std::to_string(gettid()) + "/stat";
			std::thread t([&] {
				/*
				 * Once the waiter sleeps (state S: in the WAIT; one that returned at once
				 * fails below anyway), 300 ms more: a long timeout mistaken for a short
				 * one would end the wait within them.
				 */
				(void)wait_until([&] {
					std::string st = read_file(waiter_stat);
					size_t rp = st.rfind(')');
					return rp != std::string::npos && rp + 2 < st.size() && st[rp + 2] == 'S';
				});
				std::this_thread::sleep_for(std::chrono::milliseconds(300));
				signalled = true;
				pthread_kill(self, SIGUSR1);
			});
			int ret = cos_lord_wait(l, timeout);
			bool was_signalled = signalled;
			t.join();
			cos_lord_destroy(l);
			if (ret != -EINTR)
				return 20 + ret;	/* 20: returned 0 (timed out) */
			return was_signalled ? 0 : 11;
		});
		INFO("timeout " << timeout);
		CHECK(rc == 0);
	}
}

TEST_CASE("a lord whose thread died gets no control back when the shim attaches again", "[lord][dead]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	LordOpts lo({1});
	cos_lord *l = nullptr;
	int err = -1;

	/* The lord thread registers and exits; the process keeps its file (and the lord object). */
	std::thread([&] { err = cos_lord_register(&l, &lo.o); }).join();
	REQUIRE(err == 0);
	const cos_ctl *ctl = cos_lord_ctl(l);
	for (int i = 0; i < 200 && __atomic_load_n(&ctl->lord_active, __ATOMIC_ACQUIRE); i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	REQUIRE(__atomic_load_n(&ctl->lord_active, __ATOMIC_ACQUIRE) == 0);

	/* The shim leaves and comes back (ops.exit, ops.init): the dead lord stays without control. */
	cos_shim_detach(shim.shim);
	shim.shim = nullptr;
	REQUIRE(cos_shim_attach(&shim.shim, nullptr) == 0);
	CHECK(__atomic_load_n(&ctl->lord_active, __ATOMIC_ACQUIRE) == 0);
	cos_lord_destroy(l);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a lord thread that exits while its process keeps the file: another lord may register", "[lord][dead]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	int rc = guest::in_child([] {
		LordOpts lo({1});
		cos_lord *dead = nullptr, *next = nullptr;
		int err = -1;

		/* The lord thread registers and exits; `dead` keeps its file open. */
		std::thread([&] { err = cos_lord_register(&dead, &lo.o); }).join();
		if (err)
			return 10;
		/* Its enclave is unregistered soon after the thread's exit, not at the file's close. */
		err = -EBUSY;
		for (int i = 0; i < 300 && err == -EBUSY; i++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
			err = cos_lord_register(&next, &lo.o);
		}
		if (err)
			return 20 + -err;	/* 36: EBUSY, the dead lord still held the place */
		cos_info info;
		int ret = cos_get_info(cos_lord_fd(next), &info) ? 11 :
			  (pid_t)info.lord_pid != (pid_t)syscall(SYS_gettid) ? 12 : 0;
		cos_lord_destroy(next);
		cos_lord_destroy(dead);
		return ret;
	});
	CHECK(rc == 0);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("only the lord's process may map its regions", "[lord][mmap][errors]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	int rc = guest::in_child([] {
		RawLordArgs r;
		cos_lord_args &a = r.a;
		int fd = cos_open();
		if (fd < 0 || r.register_on(fd))
			return 10;
		struct Region { uint64_t off, size; int prot; } regions[] = {
			{a.ring_off, a.ring_size, PROT_READ},
			{a.status_off, a.status_size, PROT_READ},
			{a.shoot_off, a.shoot_size, PROT_READ | PROT_WRITE},
			{a.ctl_off, a.ctl_size, PROT_READ | PROT_WRITE},
		};
		/* A child it forks holds the same file: it may map none of them. */
		pid_t pid = fork();
		if (pid == 0) {
			int n = 0;
			for (auto &r : regions) {
				void *p = mmap(nullptr, r.size, r.prot, MAP_SHARED, fd, r.off);
				n++;
				if (p != MAP_FAILED || errno != EPERM)
					_exit(n);	/* region n was mapped, or refused for another reason */
			}
			_exit(0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		int ret = WIFEXITED(st) ? WEXITSTATUS(st) : 9;
		/* The lord's own process still maps them. */
		for (auto &r : regions) {
			void *p = mmap(nullptr, r.size, r.prot, MAP_SHARED, fd, r.off);
			if (p == MAP_FAILED)
				ret = ret ?: 20;
			else
				munmap(p, r.size);
		}
		close(fd);
		return ret;
	});
	CHECK(rc == 0);
}

TEST_CASE("CPU hotplug under a lord: it is told, shoots to the offline CPU are refused", "[lord][hotplug]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	int rc = guest::in_child([] {
		LordOpts lo({1, 2}, 5000);	/* the hotplug itself takes longer than 20 ms */
		lo.o.flags = COS_LORD_F_CPU_MSGS;
		cos_lord *l = nullptr;
		if (cos_lord_register(&l, &lo.o))
			return 10;
		/* the next CPU message, skipping the rest (up to 2 s) */
		auto next_cpu_msg = [l](unsigned type) -> long {
			uint64_t until = guest::now_ns() + 2000000000ull;
			while (guest::now_ns() < until) {
				const cos_msg *m = cos_lord_peek(l);
				if (!m) {
					cos_lord_wait(l, 10000000);
					continue;
				}
				unsigned t = m->type;
				long arg = (long)m->arg;
				cos_lord_consume(l);
				cos_lord_publish(l);
				if (t == COS_MSG_CPU_OFFLINE || t == COS_MSG_CPU_ONLINE)
					return t == type ? arg : -2;
			}
			return -1;
		};
		/* BAD_CPU comes before any check of the (bogus) task */
		auto shoot_status = [l](int cpu) {
			cos_lord_prepare(l, cpu, 0, 0, 0);
			cos_lord_shoot(l, 0);
			return cos_lord_shoot_status(l, cpu);
		};
		int ret = 0;
		{
			CpuOffline off(2);
			if (!off.ok)
				ret = 11;
			else if (next_cpu_msg(COS_MSG_CPU_OFFLINE) != 2)
				ret = 12;
			else if (unsigned st = shoot_status(2); st != COS_SHOOT_BAD_CPU)
				ret = 100 + st;	/* 100 + the status it got */
			else if (shoot_status(1) == COS_SHOOT_BAD_CPU)
				ret = 14;
			else if (!off.set(true) || next_cpu_msg(COS_MSG_CPU_ONLINE) != 2)
				ret = 15;
			else if (shoot_status(2) == COS_SHOOT_BAD_CPU)
				ret = 16;
		}
		if (!ret && !__atomic_load_n(&cos_lord_ctl(l)->lord_active, __ATOMIC_ACQUIRE))
			ret = 17;
		cos_lord_destroy(l);
		return ret;
	});
	CHECK(rc == 0);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a COS task preempted by a shoot to its CPU is told so (PREEMPTED, BY_COS)", "[lord][preempt]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	LordOpts lo({2}, 5000);
	cos_lord *lord = nullptr;
	REQUIRE(cos_lord_register(&lord, &lo.o) == 0);

	struct Board {
		std::atomic<int> stop;
		pid_t spinner, waker;
	};
	Shared<Board> b;
	pid_t child = fork();
	if (child == 0) {
		unpin_self();
		std::thread spinner([&] {
			b->spinner = gettid();
			become_cos_task();
			std::this_thread::sleep_for(std::chrono::milliseconds(1));	/* under the lord */
			while (!b->stop)
				;
		});
		std::thread waker([&] {
			b->waker = gettid();
			become_cos_task();
			for (int i = 0; i < 10; i++)	/* each wake-up is shot onto the spinner */
				std::this_thread::sleep_for(std::chrono::milliseconds(20));
			b->stop = 1;
		});
		spinner.join();
		waker.join();
		_exit(0);
	}
	/* Shoot whatever is runnable to CPU 2 (no slice): the waker lands on the busy spinner. */
	std::map<uint32_t, int> preempted;	/* the spinner's PREEMPTED args */
	std::map<uint32_t, std::string> seen;	/* per pid: its messages and refused shoots, in order */
	std::map<uint32_t, uint32_t> slot_of;
	int dead = 0;
	uint64_t deadline = now_ns() + 20000000000ull;
	while (dead < 2 && now_ns() < deadline) {
		const cos_msg *m;
		while ((m = cos_lord_peek(lord))) {
			cos_msg msg = *m;
			cos_lord_consume(lord);
			seen[msg.pid] += " " + std::to_string(msg.type);
			slot_of[msg.pid] = msg.slot;
			if (msg.type == COS_MSG_TASK_DEAD)
				dead++;
			if (msg.type == COS_MSG_TASK_PREEMPTED && msg.pid == (uint32_t)b->spinner)
				preempted[msg.arg]++;
			if (msg.type == COS_MSG_TASK_RUNNABLE || msg.type == COS_MSG_TASK_PREEMPTED ||
			    msg.type == COS_MSG_SHOOT_FAILED) {
				cos_lord_publish(lord);
				cos_lord_prepare(lord, 2, msg.slot, msg.gen, 0);
				int rc, i = 0;
				while ((rc = cos_lord_shoot(lord, 0)) == 0 &&
				       cos_lord_shoot_status(lord, 2) == COS_SHOOT_BUSY && ++i < 1000) {
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
					cos_lord_prepare(lord, 2, msg.slot, msg.gen, 0);
				}
				if (rc || cos_lord_shoot_status(lord, 2) != COS_SHOOT_OK)
					seen[msg.pid] += " (shoot rc " + std::to_string(rc) + " status " +
							 std::to_string(cos_lord_shoot_status(lord, 2)) + ")";
			}
		}
		cos_lord_publish(lord);
		cos_lord_wait(lord, 1000000);
	}
	/* On failure: each task's messages (COS_MSG_*), and where the module has it now. */
	for (auto &[pid, slot] : slot_of) {
		cos_task_status ts = {};
		if (!cos_lord_task_status(lord, slot, &ts) && ts.pid == pid)
			seen[pid] += " | now state " + std::to_string(ts.state) + " cpu " +
				     std::to_string(ts.cpu);
	}
	std::string story;
	for (auto &[pid, text] : seen)
		story += "\n  pid " + std::to_string(pid) + ":" + text;
	CAPTURE(b->spinner, b->waker, story, cos_lord_ctl(lord)->stalls, kernel_log("stalled"));
	b->stop = 1;
	cos_lord_destroy(lord);
	int st = 0;
	waitpid(child, &st, 0);
	CHECK(dead == 2);
	/* kthreads may preempt it too (BY_OTHER), but a shoot onto it says BY_COS; no slice ran out */
	CAPTURE(preempted[COS_PREEMPT_BY_OTHER]);
	CHECK(preempted[COS_PREEMPT_BY_COS] >= 1);
	CHECK(preempted[COS_PREEMPT_BY_SLICE] == 0);
	CHECK(sched_ext_state() == "enabled");
}
