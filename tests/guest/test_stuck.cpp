// test_stuck.cpp — tasks that must not get stuck: a latched task whose CPU went idle, a lord
// asleep in WAIT when an overflow ends, local shoots, a lord that is a COS task, busy per-CPU
// kthreads, a wake-placed task a shoot must preempt before it starts, and fair tasks that may
// run only where COS tasks run.  Each would wait for the starvation rule or sched_ext's
// watchdog.  debugfs cos/delay_* widen the race windows.  See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <thread>

#include "guest.h"

using namespace guest;

namespace {

const std::string dbg = "/sys/kernel/debug/cos/";

void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}


struct Board {
	std::atomic<int> ready;
	pid_t tids[128];
	std::atomic<int> runs[128];	/* wake-ups each thread ran through */
	std::atomic<int> spin_ms[128];	/* how long each spins after a wake-up */
	std::atomic<int> spinning[128];	/* it is spinning now */
	std::atomic<int> cpu[128];	/* the CPU of its last wake-up */
	int cpus[128][4];		/* its allowed CPUs (-1 ends; none: all) */
};

/*
 * The test thread is the lord of CPUs {1, 2} (lord on CPU 0).  A child process holds N COS
 * threads, each blocked in read() on its own pipe until the test wakes it (wake()); then it
 * counts a run, spins for spin_ms and reads again.  Nothing is shot on its own.
 */
struct Pipes {
	cos_lord *lord = nullptr;
	Board *board = shared_new<Board>();
	pid_t child = -1;
	int n;
	std::vector<std::array<int, 2>> pipes;
	TaskSlots task;
	std::vector<cos_msg> log;

	Pipes(int n_, unsigned stall_ms, unsigned starve_ms, unsigned ring = 0,
	      std::function<void(Board *)> setup = nullptr)
		: n(n_), pipes(n_)
	{
		LordOpts lo({1, 2}, stall_ms, starve_ms);
		lo.o.ring_entries = ring;
		for (auto &p : pipes)
			REQUIRE(pipe(p.data()) == 0);
		for (int i = 0; i < n; i++)
			board->cpus[i][0] = -1;
		if (setup)
			setup(board);
		/* the threads become COS tasks and block before there is a lord: none waits for it */
		child = fork();
		if (child == 0)
			_exit(child_main());
		while (board->ready < n)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		for (int i = 0; i < n; i++)
			for (int w = 0; w < 5000 && thread_state(board->tids[i]) != 'S'; w++)
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
		REQUIRE(cos_lord_register(&lord, &lo.o) == 0);
		drain();
	}

	char thread_state(pid_t tid)
	{
		std::string st = read_file("/proc/" + std::to_string(child) + "/task/" +
					   std::to_string(tid) + "/stat");
		size_t p = st.rfind(')');
		return p != std::string::npos && p + 2 < st.size() ? st[p + 2] : 0;
	}

	~Pipes()
	{
		for (auto &p : pipes)
			close(p[1]);	/* EOF: each thread exits */
		cos_lord_destroy(lord);	/* waiting tasks go to the fair policy */
		int st;
		waitpid(child, &st, 0);
		for (auto &p : pipes)
			close(p[0]);
		shared_delete(board);
	}

	int child_main()
	{
		for (auto &p : pipes)
			close(p[1]);	/* only the test writes: its close is the threads' EOF */
		unpin_self();
		std::vector<std::thread> ts;
		for (int i = 0; i < n; i++)
			ts.emplace_back([this, i] {
				board->tids[i] = gettid();
				std::vector<int> cpus;
				for (int k = 0; k < 4 && board->cpus[i][k] >= 0; k++)
					cpus.push_back(board->cpus[i][k]);
				if (!cpus.empty())
					set_cpus(cpus);
				become_cos_task();
				board->ready++;
				char c;
				while (read(pipes[i][0], &c, 1) == 1) {
					board->cpu[i] = sched_getcpu();
					board->runs[i]++;
					if (int ms = board->spin_ms[i]) {
						board->spinning[i] = 1;
						uint64_t until = now_ns() + ms * 1000000ull;
						while (now_ns() < until)
							;
						board->spinning[i] = 0;
					}
				}
			});
		for (auto &t : ts)
			t.join();
		return 0;
	}

	void wake(int i) { REQUIRE(write(pipes[i][1], "x", 1) == 1); }

	int drain()
	{
		return drain_ring(lord, log, [this](const cos_msg &m) {
			if (m.type == COS_MSG_TASK_NEW || m.type == COS_MSG_TASK_RUNNABLE ||
			    m.type == COS_MSG_TASK_PREEMPTED)
				task[m.pid] = {m.slot, m.gen};
		});
	}

	/* Wait until thread i waits for a shoot; its (slot, gen). */
	std::pair<uint32_t, uint32_t> waiting(int i)
	{
		std::pair<uint32_t, uint32_t> slot;
		cos_task_status st;
		if (!await_waiting(lord, task, board->tids[i], [this] { drain(); }, &slot, &st))
			FAIL("thread " << i << " never waited for the lord (state " << st.state << ")");
		return slot;
	}

	unsigned shoot1(int cpu, uint32_t slot, uint32_t gen, uint64_t slice = 0,
			unsigned slot_flags = 0)
	{
		REQUIRE(cos_lord_prepare_flags(lord, cpu, slot, gen, slice, slot_flags) == 0);
		REQUIRE(cos_lord_shoot(lord, 0) >= 0);
		return cos_lord_shoot_status(lord, cpu);
	}

	/* Wait up to @ms for thread i to have run @runs wake-ups; whether it did. */
	bool ran(int i, int runs, int ms = 2000)
	{
		uint64_t until = now_ns() + ms * 1000000ull * time_scale();
		while (board->runs[i] < runs && now_ns() < until) {
			drain();
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		return board->runs[i] >= runs;
	}

	/* Wait up to 2 s for thread i's TASK_BLOCKED (from log index @from). */
	bool blocked(int i, size_t from)
	{
		for (int tries = 0; tries < 2000; tries++) {
			drain();
			for (size_t k = from; k < log.size(); k++)
				if (log[k].type == COS_MSG_TASK_BLOCKED && (pid_t)log[k].pid == board->tids[i])
					return true;
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		return false;
	}

	uint64_t stalls() { return __atomic_load_n(&cos_lord_ctl(lord)->stalls, __ATOMIC_ACQUIRE); }
};

void file_shim()
{
	static Shim shim;
}

} // namespace

TEST_CASE("a task latched while its CPU's dispatch finds the latch empty still starts", "[stuck][latch]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	Pipes f(2, 10000, 10000, 0, [](Board *b) {
		b->cpus[1][0] = 1, b->cpus[1][1] = 2, b->cpus[1][2] = -1;
	});
	/* thread 1 runs once on CPU 1, so that it wakes there later (not on CPU 2) */
	f.wake(1);
	auto [s1, g1] = f.waiting(1);
	REQUIRE(f.shoot1(1, s1, g1) == COS_SHOOT_OK);
	REQUIRE(f.ran(1, 1));
	/* thread 0 runs on CPU 2 and blocks: CPU 2's dispatch finds its latch empty and spins */
	DebugfsKnob delay("delay_latch_take_us", 500000);
	f.wake(0);
	auto [s0, g0] = f.waiting(0);
	size_t from = f.log.size();
	REQUIRE(f.shoot1(2, s0, g0) == COS_SHOOT_OK);
	REQUIRE(f.blocked(0, from));
	/* meanwhile thread 1 is latched on CPU 2, still armed: the shoot sends no kick */
	f.wake(1);
	std::tie(s1, g1) = f.waiting(1);
	REQUIRE(f.shoot1(2, s1, g1, 0, COS_SHOOT_F_LATCH) == COS_SHOOT_OK);
	delay.set(0);
	INFO("the latched task starts when the dispatch ends, not at the starvation rule");
	CHECK(f.ran(1, 2));
	CHECK(f.board->cpu[1] == 2);
	CHECK(f.stalls() == 0);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a lord asleep in WAIT is woken when its ring's overflow ends", "[stuck][wait][overflow]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	const int n = 100;	/* more RUNNABLEs than the 64-entry ring holds */
	Pipes f(n, 500, 10000, 64);
	for (int i = 0; i < n; i++)
		f.wake(i);
	/* every thread waits for a shoot: the ring overflowed, nothing more comes */
	for (int w = 0; w < 5000; w++) {
		int waiting = 0;
		for (unsigned s = 0; s < cos_lord_max_tasks(f.lord); s++) {
			cos_task_status st;
			if (cos_lord_task_status(f.lord, s, &st) == 0 && st.state == COS_TASK_WAITING)
				waiting++;
		}
		if (waiting >= n)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	REQUIRE(__atomic_load_n(&cos_lord_ctl(f.lord)->dropped, __ATOMIC_ACQUIRE) > 0);
	uint64_t stalls = f.stalls();
	f.drain();	/* caught up: the OVERFLOW is due */
	uint64_t t0 = now_ns();
	int r = cos_lord_wait(f.lord, 3000000000ull * time_scale());
	uint64_t waited_ms = (now_ns() - t0) / 1000000;
	INFO("WAIT returned " << r << " after " << waited_ms << " ms");
	CHECK(r == 1);
	const cos_msg *m = cos_lord_peek(f.lord);
	CHECK((m && m->type == COS_MSG_OVERFLOW));
	f.drain();
	CHECK(f.stalls() == stalls);
}

TEST_CASE("a local shoot's slice is capped at stall_ms / 2", "[stuck][local]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	Pipes f(1, 400, 10000);
	f.board->spin_ms[0] = 6000;
	f.wake(0);
	auto [s0, g0] = f.waiting(0);
	uint64_t t0 = now_ns();
	/* a 10 s slice asked for: the lord is back at stall_ms / 2, not when the task blocks */
	REQUIRE(f.shoot1(0, s0, g0, 10000000000ull) == COS_SHOOT_OK);
	uint64_t parked_ms = (now_ns() - t0) / 1000000;
	std::cerr << "the lord was parked " << parked_ms << " ms\n";
	INFO("the lord was parked " << parked_ms << " ms; stall_ms " << limit_ms(400, 20));
	CHECK(parked_ms < 4000);
	/*
	 * It ran, maybe only after the lord was back: a dispatch of CPU 0 that takes no shot task
	 * runs the lord from its DSQ (seen once: parked 1 ms, the task not started yet)
	 */
	CHECK(f.ran(0, 1));
	CHECK(f.stalls() == 0);
}

/*
 * A lord that never sleeps, so that it is running on its CPU whenever another lord's shoot
 * kicks that CPU: it places the tasks of CPU 3 there as they come, and spins.
 */
struct SpinLord {
	std::atomic<bool> stop{false}, ready{false};
	int err = 0;
	uint64_t stalls = 0;
	std::thread th;
	SpinLord()
	{
		th = std::thread([this] { run(); });
		while (!ready)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	~SpinLord() { finish(); }
	void finish()
	{
		stop = true;
		if (th.joinable())
			th.join();
	}
	void run()
	{
		LordOpts lo({3}, limit_ms(300, 300), 10000, 0);
		lo.o.name = "spin";
		cos_lord *l = nullptr;
		err = cos_lord_register(&l, &lo.o);
		ready = true;
		if (err)
			return;
		while (!stop) {
			for (const cos_msg *m; (m = cos_lord_peek(l));) {
				cos_msg msg = *m;
				cos_lord_consume(l);
				if ((msg.type == COS_MSG_TASK_RUNNABLE || msg.type == COS_MSG_TASK_PREEMPTED ||
				     msg.type == COS_MSG_TASK_YIELD) &&
				    cos_lord_prepare_flags(l, 3, msg.slot, msg.gen, 0, 0) == 0)
					cos_lord_shoot(l, 0);
			}
			cos_lord_publish(l);
		}
		stalls = __atomic_load_n(&cos_lord_ctl(l)->stalls, __ATOMIC_ACQUIRE);
		cos_lord_destroy(l);
	}
};

/*
 * Lords may share a lord CPU.  A local shoot parks its own lord until the shot task stops
 * (COS_ENQ_LORD_YIELD); it parked every lord of that CPU that was running there, which then
 * waited out the task's slice (here a 3 s spin) and was declared stalled.  The other lord stays
 * in the CPU's local DSQ, where the tick ends the shot task's slice for it.
 */
TEST_CASE("another lord's local shoot on a shared lord CPU does not park a lord", "[stuck][local][enclaves]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	/* lord B: this thread, CPUs {1, 2}; its task may run on CPU 0, B's lord CPU */
	Pipes f(1, 10000, 10000, 0, [](Board *b) {
		int cpus[4] = {0, 1, 2, -1};
		memcpy(b->cpus[0], cpus, sizeof(cpus));
	});
	f.board->spin_ms[0] = 3000;
	/* lord A on CPU 0 too, always running there, and a task of its own that wakes each ms */
	SpinLord a;
	REQUIRE(a.err == 0);
	pid_t churn = fork();
	if (churn == 0) {
		set_cpus({3});
		if (become_cos_task())
			_exit(10);
		for (int i = 0; i < 4000; i++) {
			uint64_t until = now_ns() + 50000;
			while (now_ns() < until)
				;
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		_exit(0);
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	f.wake(0);
	auto [s0, g0] = f.waiting(0);
	REQUIRE(f.shoot1(0, s0, g0, 10000000000ull) == COS_SHOOT_OK);
	/*
	 * Lord A, in CPU 0's local DSQ, ends the shot task's slice at the next tick: it may wait
	 * for lord B again before it got back from its read(); B shoots it again, to an enclave CPU
	 */
	if (!f.ran(0, 1, 500)) {
		auto [s1, g1] = f.waiting(0);
		REQUIRE(f.shoot1(1, s1, g1) == COS_SHOOT_OK);
	}
	CHECK(f.ran(0, 1));
	int st = -1;
	waitpid(churn, &st, 0);
	CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
	a.finish();
	CHECK(a.stalls == 0);
	CHECK(f.stalls() == 0);
}

TEST_CASE("a local shoot from a lord off its CPU kicks the lord's CPU", "[stuck][local]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	Pipes f(1, 10000, 10000);
	f.wake(0);
	auto [s0, g0] = f.waiting(0);
	pin(3);		/* the lord moves off CPU 0: its yield there would free CPU 3 */
	REQUIRE(f.shoot1(0, s0, g0) == COS_SHOOT_OK);
	CHECK(f.ran(0, 1));
	CHECK(f.board->cpu[0] == 0);
	pin(0);
	CHECK(f.stalls() == 0);
}

TEST_CASE("a lord is never a COS task", "[stuck][lord][errors]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	SECTION("REGISTER from a SCHED_EXT thread is refused; libcos leaves SCHED_EXT first")
	{
		int rc = in_child([] {
			if (become_cos_task())
				return 10;
			RawLordArgs r;
			int fd = cos_open();
			if (fd < 0)
				return 11;
			if (r.register_on(fd) != EINVAL)
				return 12;
			close(fd);
			LordOpts lo({1});
			cos_lord *l = nullptr;
			if (cos_lord_register(&l, &lo.o))
				return 13;
			int ret = sched_getscheduler(0) == SCHED_OTHER ? 0 : 14;
			cos_lord_destroy(l);
			return ret;
		});
		CHECK(rc == 0);
	}
	SECTION("a lord made SCHED_EXT after it registered keeps running as the lord")
	{
		int rc = in_child([] {
			LordOpts lo({1}, 200, 500);
			cos_lord *l = nullptr;
			if (cos_lord_register(&l, &lo.o))
				return 10;
			if (become_cos_task())
				return 11;
			const cos_ctl *ctl = cos_lord_ctl(l);
			for (int i = 0; i < 50; i++) {	/* sleeps and wake-ups: none in custody */
				std::this_thread::sleep_for(std::chrono::milliseconds(20));
				while (cos_lord_peek(l))
					cos_lord_consume(l);
				cos_lord_wait(l, 0);
			}
			int ret = __atomic_load_n(&ctl->stalls, __ATOMIC_ACQUIRE) ? 12 :
				  !__atomic_load_n(&ctl->lord_active, __ATOMIC_ACQUIRE) ? 13 : 0;
			cos_task_info *tasks = nullptr;
			size_t nr = 0;
			if (!ret && cos_get_tasks(cos_lord_fd(l), &tasks, &nr) == 0)
				for (size_t k = 0; k < nr; k++)
					if ((pid_t)tasks[k].pid == gettid())
						ret = 14;	/* the lord has a slot */
			free(tasks);
			cos_lord_destroy(l);
			return ret;
		});
		CHECK(rc == 0);
	}
}

TEST_CASE("a busy per-CPU kthread shares its CPU with fair tasks", "[stuck][shim][kthread]")
{
	file_shim();
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> count{0};
	std::thread busy([&] {
		pin(3);
		while (!stop)
			count++;
	});
	auto progress = [&](int ms) {
		unsigned long c0 = count;
		std::this_thread::sleep_for(std::chrono::milliseconds(ms));
		return count - c0;
	};
	unsigned long before = progress(1000);
	{
		std::ofstream f(dbg + "spin_kthread");
		f << "3 3000" << std::flush;
		REQUIRE(f.good());
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	unsigned long during = progress(1000);
	stop = true;
	busy.join();
	std::ostringstream what;
	what << "a fair thread on CPU 3 ran " << before << " iterations in 1 s alone, " << during
	     << " beside a busy kthread";
	std::cerr << what.str() << "\n";
	INFO(what.str());
	CHECK(during > before / 10);
	std::this_thread::sleep_for(std::chrono::milliseconds(2000));	/* the kthread ends */
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a fair task that may run only on an enclave CPU gets it from a long COS task", "[stuck][shim][fair]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	Pipes f(1, 10000, 10000);
	f.board->spin_ms[0] = 4000;
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> count{0};
	std::thread fair([&] {
		pin(1);
		while (!stop)
			count++;
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	f.wake(0);
	auto [s0, g0] = f.waiting(0);
	REQUIRE(f.shoot1(1, s0, g0) == COS_SHOOT_OK);	/* no slice: runs until it blocks */
	REQUIRE(f.ran(0, 1));
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	unsigned long c0 = count;
	uint64_t t0 = now_ns();
	while (count == c0 && f.board->spinning[0] && now_ns() - t0 < 3500000000ull)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	bool moved = count != c0 && f.board->spinning[0];
	uint64_t after_ms = (now_ns() - t0) / 1000000;
	stop = true;
	fair.join();
	INFO("the fair thread ran again after " << after_ms << " ms of the COS task's 4 s");
	CHECK(moved);
	CHECK(sched_ext_state() == "enabled");
}

/* Write @what to debugfs cos/@name; whether the write succeeded. */
static bool write_dbg(const std::string &name, const std::string &what)
{
	std::ofstream f(dbg + name);
	f << what << std::flush;
	return f.good();
}

TEST_CASE("a shoot to a CPU whose wake-placed task has not started yet preempts that task", "[stuck][wake]")
{
	file_shim();
	REQUIRE_LORD_SUPPORT();
	/* A (thread 0, spins 3 s when woken) and B (thread 1) may run only on CPU 1 */
	Pipes f(2, 10000, 10000, 0, [](Board *b) {
		for (int i = 0; i < 2; i++) {
			b->cpus[i][0] = 1;
			b->cpus[i][1] = -1;
		}
		b->spin_ms[0] = 3000;
	});
	REQUIRE(cos_lord_set_wake_rules(f.lord, COS_WAKE_PREV, 0) == 0);
	/*
	 * A kthread holds CPU 1 without preemption.  A, woken, is placed there (free: no COS task)
	 * and waits for the switch.  B, woken next, waits for the lord (CPU 1 is A's), who shoots
	 * it to CPU 1: nothing is pending there, so the shoot is accepted, and its kick lands on
	 * the kthread.  When the kthread lets go, sched_ext switches to A without ops.dispatch.
	 */
	REQUIRE(write_dbg("spin_nopreempt", "1 5000"));
	size_t from = f.log.size();
	f.wake(0);
	auto saw = [&](uint32_t type, int i, uint64_t *arg = nullptr) {
		for (size_t k = from; k < f.log.size(); k++)
			if (f.log[k].type == type && (pid_t)f.log[k].pid == f.board->tids[i]) {
				if (arg)
					*arg = f.log[k].arg;
				return true;
			}
		return false;
	};
	for (int k = 0; k < 2000 && !saw(COS_MSG_TASK_PLACED, 0); k++) {
		f.drain();
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	bool placed = saw(COS_MSG_TASK_PLACED, 0);
	unsigned shot = ~0u;
	if (placed) {
		f.wake(1);
		auto [s1, g1] = f.waiting(1);
		shot = f.shoot1(1, s1, g1);
	}
	int a_before = f.board->runs[0];
	bool held = write_dbg("spin_nopreempt", "stop");	/* the kthread still held CPU 1 */
	REQUIRE(placed);
	REQUIRE(held);
	REQUIRE(a_before == 0);
	CHECK(shot == COS_SHOOT_OK);
	bool b_ran = f.ran(1, 1, 8000);
	int a_runs = f.board->runs[0];
	f.drain();
	uint64_t why = 0;
	bool preempted = saw(COS_MSG_TASK_PREEMPTED, 0, &why);
	INFO("B ran: " << b_ran << "; A's runs by then: " << a_runs << "; A preempted: "
	     << preempted << " (arg " << why << ")");
	CHECK(b_ran);
	CHECK(a_runs == 0);	/* A did not take B's turn: it stopped as it started */
	CHECK(preempted);
	CHECK((why & 0xff) == COS_PREEMPT_BY_COS);
	CHECK(sched_ext_state() == "enabled");
}
