// test_enclaves.cpp — several enclaves at once: CPUs of their own, a task's enclave by its
// allowed CPUs, isolation (one lord's death, stop or stall touches only its own tasks), shoots
// across enclaves refused, register/unregister cycles beside running enclaves, eight lords.
// See docs/design.md, "Several enclaves".
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "guest.h"
#include "lord_fifo.h"

using namespace guest;

namespace {

constexpr int MAX_THREADS = 24;

/* What the worker threads of a child report, in shared memory. */
struct Runs {
	pid_t tids[MAX_THREADS];
	int err[MAX_THREADS];
	std::atomic<int> rounds[MAX_THREADS];
	std::atomic<int> off_cpus[MAX_THREADS];	/* rounds seen on a CPU outside its set */
	std::atomic<int> started;
	std::atomic<int> go_exit;
};

/*
 * Worker @i of a child: allowed @cpus only, a COS task, then rounds of 200 us of work and a
 * 300 us sleep, @rounds of them (0: until go_exit).  Counts the rounds, and those run outside
 * @cpus (there should be none: the kernel keeps a task in its affinity).
 */
void worker(Runs *r, int i, const std::vector<int> &cpus, int rounds)
{
	r->tids[i] = gettid();
	set_cpus(cpus);
	r->err[i] = become_cos_task();
	r->started++;
	for (int n = 0; rounds ? n < rounds : !r->go_exit; n++) {
		spin_for(std::chrono::microseconds(200));
		int c = sched_getcpu();
		if (std::find(cpus.begin(), cpus.end(), c) == cpus.end())
			r->off_cpus[i]++;
		r->rounds[i]++;
		std::this_thread::sleep_for(std::chrono::microseconds(300));
	}
}

/* Fork a child that runs worker(i, sets[i], rounds) in one thread each; returns its pid. */
pid_t start_workers(Runs *r, const std::vector<std::vector<int>> &sets, int rounds)
{
	pid_t child = fork();
	if (child == 0) {
		unpin_self();
		std::vector<std::thread> ts;
		for (size_t i = 0; i < sets.size(); i++)
			ts.emplace_back(worker, r, (int)i, sets[i], rounds);
		for (auto &t : ts)
			t.join();
		_exit(0);
	}
	while (r->started < (int)sets.size())
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	return child;
}

/* Wait for the child; its exit status (0 when every thread finished). */
int join_workers(pid_t child)
{
	int st = -1;
	waitpid(child, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The thread ids a lord heard of, in any message. */
std::set<pid_t> heard(const std::vector<cos_msg> &log)
{
	std::set<pid_t> s;
	for (auto &m : log)
		if (m.pid)
			s.insert((pid_t)m.pid);
	return s;
}

/* The module can run several enclaves (else skip: an older cos.ko). */
bool have_enclaves()
{
	int fd = cos_open();
	cos_info info = {};
	bool ok = fd >= 0 && cos_get_info(fd, &info) == 0 && (info.features & COS_FEAT_ENCLAVES);
	if (fd >= 0)
		close(fd);
	return ok;
}

#define REQUIRE_ENCLAVES()								\
	do {										\
		REQUIRE_LORD_SUPPORT();							\
		REQUIRE(have_enclaves());						\
		if (std::thread::hardware_concurrency() < 4)				\
			SKIP("needs 4 CPUs: a lord CPU and three enclave CPUs");	\
	} while (0)

/* The enclave named @name now (id 0 if none). */
cos_enclave_info enclave_named(const std::string &name)
{
	for (auto &e : enclaves_now())
		if (name == e.name)
			return e;
	return cos_enclave_info{};
}

/* The COS tasks now, from COS_IOC_GET_TASKS, by thread id. */
std::map<pid_t, cos_task_info> tasks_now()
{
	std::map<pid_t, cos_task_info> m;
	cos_task_info *t = nullptr;
	size_t n = 0;
	int fd = cos_open();
	if (fd >= 0 && cos_get_tasks(fd, &t, &n) == 0)
		for (size_t i = 0; i < n; i++)
			m[t[i].pid] = t[i];
	if (fd >= 0)
		close(fd);
	free(t);
	return m;
}

/* Each task's enclave id (tid -> id; absent: not a COS task now). */
std::map<pid_t, unsigned> task_enclaves()
{
	std::map<pid_t, unsigned> m;
	for (auto &[tid, t] : tasks_now())
		m[tid] = t.enclave_id;
	return m;
}

} // namespace

TEST_CASE("two lords on CPUs of their own each run the tasks their CPUs claim", "[enclaves]")
{
	Shim shim;
	REQUIRE_ENCLAVES();
	FifoLord left(0, {1}, 1000, 0, 0, 0, "left");
	REQUIRE(left.register_error == 0);
	FifoLord right(0, {2, 3}, 1000, 0, 0, 0, "right");
	REQUIRE(right.register_error == 0);
	std::vector<cos_enclave_info> v = enclaves_now();
	REQUIRE(v.size() == 2);
	unsigned left_id = enclave_named("left").id, right_id = enclave_named("right").id;
	CHECK((left_id && right_id && left_id != right_id));

	/* 0-2: CPU 1 (left); 3-5: CPUs 2-3 (right); 6: every CPU, so the first enclave CPU's, 1 */
	int ncpu = (int)std::thread::hardware_concurrency();
	std::vector<int> all;
	for (int c = 0; c < ncpu; c++)
		all.push_back(c);
	std::vector<std::vector<int>> sets = {{1}, {1}, {1}, {2, 3}, {2, 3}, {2, 3}, all};
	Shared<Runs> r;
	pid_t child = start_workers(r.p, sets, 150);
	/* while they run, GET_TASKS names each one's enclave */
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	std::map<pid_t, unsigned> during = task_enclaves();
	REQUIRE(join_workers(child) == 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(100));	/* DEAD messages */
	left.finish();
	right.finish();

	std::set<pid_t> l = heard(left.log), rt = heard(right.log);
	for (int i = 0; i < (int)sets.size(); i++) {
		CAPTURE(i, r->tids[i]);
		REQUIRE(r->err[i] == 0);
		CHECK(r->rounds[i] == 150);
		CHECK(r->off_cpus[i] == 0);
		bool in_left = i < 3 || i == 6;
		CHECK(l.count(r->tids[i]) == (in_left ? 1u : 0u));
		CHECK(rt.count(r->tids[i]) == (in_left ? 0u : 1u));
		if (during.count(r->tids[i]))
			CHECK(during[r->tids[i]] == (in_left ? left_id : right_id));
	}
	/* every placement on the placing lord's own CPUs; no shoot across */
	for (auto &p : left.placed)
		CHECK(p.cpu == 1);
	for (auto &p : right.placed)
		CHECK((p.cpu == 2 || p.cpu == 3));
	CHECK(left.shoot_errors.count(COS_SHOOT_OTHER_ENCLAVE) == 0);
	CHECK(right.shoot_errors.count(COS_SHOOT_OTHER_ENCLAVE) == 0);
	CHECK(left.stall_reasons == 0);
	CHECK(right.stall_reasons == 0);
	CHECK(enclaves_now().empty());
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("an enclave is refused CPUs another holds, naming it; names are unique", "[enclaves][errors]")
{
	Shim shim;
	REQUIRE_ENCLAVES();
	FifoLord alpha(0, {1, 2}, 1000, 0, 0, 0, "alpha");
	REQUIRE(alpha.register_error == 0);
	/* each case in a child: a lord thread is pinned, and a refused one must leave nothing */
	auto try_register = [](std::vector<int> cpus, int lord_cpu, const char *name,
			       const char *says) {
		return in_child([&] {
			LordOpts lo(cpus, 0, 0, lord_cpu);
			lo.o.name = name;
			cos_lord *l = nullptr;
			int err = cos_lord_register(&l, &lo.o);
			if (err == 0) {
				int n = (int)enclaves_now().size();
				cos_lord_destroy(l);
				return n == 2 ? 0 : 90;
			}
			std::cerr << name << ": " << cos_strerror(err) << "\n";
			if (says && !strstr(cos_strerror(err), says))
				return 91;
			return -err;
		});
	};
	CHECK(try_register({2, 3}, 0, "beta", "CPU 2 is in enclave 'alpha'") == EBUSY);
	CHECK(try_register({3}, 1, "beta", "lord CPU 1 is in enclave 'alpha'") == EBUSY);
	CHECK(try_register({0}, 3, "beta", "CPU 0 is the lord CPU of enclave 'alpha'") == EBUSY);
	CHECK(try_register({3}, 0, "alpha", "'alpha' is registered already") == EEXIST);
	CHECK(enclaves_now().size() == 1);			/* nothing left of the refused */
	CHECK(try_register({3}, 0, "beta", nullptr) == 0);	/* a lord CPU may be shared */
	CHECK(enclaves_now().size() == 1);
	alpha.finish();
	CHECK(enclaves_now().empty());
	/* one thread, two enclaves: refused (its exit and its enqueue find one enclave only) */
	CHECK(in_child([] {
		LordOpts a({1}, 0, 0, 0), b({2}, 0, 0, 0);
		cos_lord *first = nullptr, *second = nullptr;
		a.o.name = "gamma";
		b.o.name = "delta";
		if (cos_lord_register(&first, &a.o))
			return 80;
		int err = cos_lord_register(&second, &b.o);
		std::cerr << "delta: " << cos_strerror(err) << "\n";
		int ret = err == -EBUSY && strstr(cos_strerror(err), "lord of enclave 'gamma' already") ? 0 :
			  err ? 81 : 82;
		if (!err)
			cos_lord_destroy(second);
		cos_lord_destroy(first);
		return ret;
	}) == 0);
	CHECK(enclaves_now().empty());
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a lord cannot shoot, see or hear another enclave's task", "[enclaves][shoot]")
{
	Shim shim;
	REQUIRE_ENCLAVES();
	FifoLord right(0, {2, 3}, 1000, 0, 0, 0, "right");
	REQUIRE(right.register_error == 0);
	Shared<Runs> r;
	pid_t child = start_workers(r.p, {{2}}, 0);
	pid_t tid = r->tids[0];
	/* it is right's: its slot and generation */
	unsigned right_id = enclave_named("right").id;
	uint32_t slot = 0, gen = 0;
	for (int i = 0; i < 5000 && !gen; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		auto m = tasks_now();
		if (m.count(tid) && m[tid].enclave_id == right_id)
			slot = m[tid].slot, gen = m[tid].gen;
	}
	REQUIRE(gen != 0);

	LordOpts lo({1});
	lo.o.name = "left";
	cos_lord *left = nullptr;
	REQUIRE(cos_lord_register(&left, &lo.o) == 0);
	/* left's status table shows none of right's tasks; right's shows it */
	cos_task_status st = {};
	REQUIRE(cos_lord_task_status(left, slot, &st) == 0);
	CHECK(st.state == COS_TASK_FREE);
	CHECK(st.pid == 0);
	CHECK_FALSE(cos_lord_owns(left, &st));
	REQUIRE(cos_lord_task_status(right.lord, slot, &st) == 0);
	CHECK(st.enclave_id == right_id);
	CHECK(st.pid == (uint32_t)tid);
	CHECK(cos_lord_owns(right.lord, &st));
	std::vector<cos_msg> log;
	int other = 0, tries = 0;
	/* refused per slot, before the generation: the right one and a wrong one alike */
	for (uint32_t g : {gen, gen + 1}) {
		for (tries = 0; tries < 50; tries++) {
			drain_ring(left, log, [](const cos_msg &) {});
			REQUIRE(cos_lord_prepare(left, 1, slot, g, 0) == 0);
			REQUIRE(cos_lord_shoot(left, 0) == 0);
			unsigned s = cos_lord_shoot_status(left, 1);
			CAPTURE(cos_shoot_status_name(s));
			CHECK(s == COS_SHOOT_OTHER_ENCLAVE);
			other += s == COS_SHOOT_OTHER_ENCLAVE;
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		}
	}
	CHECK(other == 100);
	r->go_exit = 1;
	REQUIRE(join_workers(child) == 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	drain_ring(left, log, [](const cos_msg &) {});
	CHECK(heard(log).count(tid) == 0);	/* not one message about it */
	cos_lord_destroy(left);
	right.finish();
	CHECK(heard(right.log).count(tid) == 1);
	CHECK(r->off_cpus[0] == 0);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a task whose CPUs move to another enclave is DEAD to the old lord and new to the other", "[enclaves][affinity]")
{
	Shim shim;
	REQUIRE_ENCLAVES();
	FifoLord left(0, {1}, 1000, 0, 0, 0, "left");
	FifoLord right(0, {2, 3}, 1000, 0, 0, 0, "right");
	REQUIRE(left.register_error == 0);
	REQUIRE(right.register_error == 0);
	Shared<Runs> r;
	pid_t child = start_workers(r.p, {{1, 2, 3}}, 0);	/* CPU 1 first: left's */
	pid_t tid = r->tids[0];
	auto rounds_grow = [&] {
		int from = r->rounds[0];
		for (int i = 0; i < 5000 && r->rounds[0] < from + 20; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		return r->rounds[0] >= from + 20;
	};
	REQUIRE(rounds_grow());
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(2, &s);
	CPU_SET(3, &s);
	REQUIRE(sched_setaffinity(tid, sizeof(s), &s) == 0);
	REQUIRE(rounds_grow());		/* it goes on, under right */
	r->go_exit = 1;
	REQUIRE(join_workers(child) == 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	left.finish();
	right.finish();

	/* left: its life ends in one DEAD; right: it starts with a later generation, ends DEAD */
	std::vector<cos_msg> lm, rm;
	for (auto &m : left.log)
		if ((pid_t)m.pid == tid)
			lm.push_back(m);
	for (auto &m : right.log)
		if ((pid_t)m.pid == tid)
			rm.push_back(m);
	REQUIRE_FALSE(lm.empty());
	REQUIRE_FALSE(rm.empty());
	CHECK(lm.back().type == COS_MSG_TASK_DEAD);
	CHECK(std::count_if(lm.begin(), lm.end(),
			    [](auto &m) { return m.type == COS_MSG_TASK_DEAD; }) == 1);
	/* woken, or preempted by the migration the change made */
	CHECK((rm.front().type == COS_MSG_TASK_RUNNABLE || rm.front().type == COS_MSG_TASK_PREEMPTED));
	CHECK(rm.front().gen != lm.back().gen);		/* to right, another task */
	CHECK(rm.back().type == COS_MSG_TASK_DEAD);
	bool placed_right = false;
	for (auto &p : right.placed)
		placed_right |= (pid_t)p.pid == tid;
	CHECK(placed_right);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("a lord killed and another stopped: only their tasks fall back, the third keeps its own", "[enclaves][isolation]")
{
	Shim shim;
	REQUIRE_ENCLAVES();
	/* three lords in processes of their own, lord CPU 0 shared: ka {1}, st {2}, ok {3} */
	auto fifo = [](const char *cpus, const char *name) {
		return std::vector<std::string>{build_path("bin/cos-fifo"), "--cpus", cpus, "--name",
						name, "--stall-ms", stall_arg(200), "--starve-ms",
						starve_arg(2000)};
	};
	PolicyProc ka(fifo("1", "ka")), st(fifo("2", "st")), ok(fifo("3", "ok"));
	REQUIRE(ka.wait_for("cos-fifo: lord on CPU 0"));
	REQUIRE(st.wait_for("cos-fifo: lord on CPU 0"));
	REQUIRE(ok.wait_for("cos-fifo: lord on CPU 0"));
	REQUIRE(enclaves_now().size() == 3);
	Shared<Runs> r;
	pid_t child = start_workers(r.p, {{1}, {1}, {2}, {2}, {3}, {3}}, 0);
	auto ok_rounds = [&] { return r->rounds[4] + r->rounds[5]; };
	auto window = [&](int ms) {
		int from = ok_rounds();
		std::this_thread::sleep_for(std::chrono::milliseconds(ms));
		return ok_rounds() - from;
	};
	int before = window(1000);
	unsigned ok_id = enclave_named("ok").id;

	kill(ka.pid, SIGKILL);
	kill(st.pid, SIGSTOP);
	/* st is declared stalled (stall_ms), ka's enclave goes with its thread */
	bool ka_gone = false, st_stalled = false;
	for (int i = 0; i < 10000 && !(ka_gone && st_stalled); i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		cos_enclave_info s = enclave_named("st");
		ka_gone = enclave_named("ka").id == 0;
		st_stalled = s.id && !(s.flags & COS_ENCLAVE_F_ACTIVE) && s.stalls > 0;
	}
	CHECK(ka_gone);
	CHECK(st_stalled);
	int ka_rounds = r->rounds[0] + r->rounds[1], st_rounds = r->rounds[2] + r->rounds[3];
	int after = window(1000);
	/* the others' tasks run on under the fair policy; ok's under its lord */
	CHECK(r->rounds[0] + r->rounds[1] > ka_rounds);
	CHECK(r->rounds[2] + r->rounds[3] > st_rounds);
	std::map<pid_t, unsigned> enc = task_enclaves();
	CHECK(enc[r->tids[4]] == ok_id);
	CHECK(enc[r->tids[5]] == ok_id);
	CHECK(enc[r->tids[0]] == 0);		/* its enclave is gone */
	cos_enclave_info o = enclave_named("ok");
	CHECK((o.flags & COS_ENCLAVE_F_ACTIVE));
	CHECK(o.stalls == 0);
	CHECK(o.fallbacks == 0);
	CHECK(after > 0);
	std::cerr << "isolation: ok's rounds " << before << " per s before, " << after
		  << " after (ratio " << (before ? (double)after / before : 0) << ")\n";

	kill(st.pid, SIGCONT);		/* it catches up and gets control back */
	bool back = false;
	for (int i = 0; i < 10000 && !back; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		back = enclave_named("st").flags & COS_ENCLAVE_F_ACTIVE;
	}
	CHECK(back);
	r->go_exit = 1;
	REQUIRE(join_workers(child) == 0);
	for (int i = 0; i < 6; i++)
		CHECK(r->off_cpus[i] == 0);
	CHECK(st.stop(SIGINT) == 0);
	CHECK(ok.stop(SIGINT) == 0);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("1000 register/unregister cycles of one enclave beside a running one leave nothing stale", "[enclaves][lifecycle]")
{
	Shim shim;
	REQUIRE_ENCLAVES();
	FifoLord steady(0, {2, 3}, 1000, 0, 0, 0, "steady");
	REQUIRE(steady.register_error == 0);
	/* 0-1 under steady; 2-3 on CPU 1, under each incarnation of "cycled" or none */
	Shared<Runs> r;
	pid_t child = start_workers(r.p, {{2, 3}, {2, 3}, {1}, {1}}, 0);
	int rc = in_child([&] {
		uint32_t last_id = 0;
		for (int cycles = 0; cycles < 1000; cycles++) {
			LordOpts lo({1});
			lo.o.name = "cycled";
			cos_lord *l = nullptr;
			int err = cos_lord_register(&l, &lo.o);
			if (err)
				return 10;
			if (cos_lord_enclave_id(l) == last_id)
				return 11;	/* ids are never reused */
			last_id = cos_lord_enclave_id(l);
			if (cycles % 100 == 0 && enclaves_now().size() != 2)
				return 12;
			cos_lord_destroy(l);
		}
		return 0;
	});
	CHECK(rc == 0);
	CHECK(enclaves_now().size() == 1);
	CHECK(enclave_named("steady").id != 0);
	CHECK(read_file("/sys/kernel/debug/cos/enclaves") == "1");	/* none leaked */
	int steady_rounds = r->rounds[0] + r->rounds[1];
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	CHECK(r->rounds[0] + r->rounds[1] > steady_rounds);
	r->go_exit = 1;
	REQUIRE(join_workers(child) == 0);
	steady.finish();
	CHECK(steady.stall_reasons == 0);
	CHECK(steady.shoot_errors.count(COS_SHOOT_OTHER_ENCLAVE) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(r->off_cpus[i] == 0);
	CHECK(enclaves_now().empty());
	CHECK(read_file("/sys/kernel/debug/cos/enclaves") == "0");
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("eight lords at once, one CPU each; a ninth is refused", "[enclaves][many]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	REQUIRE(have_enclaves());
	int ncpu = (int)std::thread::hardware_concurrency();
	if (ncpu < COS_ENCLAVES_MAX + 1)
		SKIP("needs " << COS_ENCLAVES_MAX + 1 << " CPUs (tests/run-tests runs it at --smp 10)");
	std::vector<std::unique_ptr<FifoLord>> lords;
	for (int i = 1; i <= COS_ENCLAVES_MAX; i++) {
		lords.push_back(std::make_unique<FifoLord>(0, std::vector<int>{i}, 1000, 0, 0, 0,
							   "e" + std::to_string(i)));
		REQUIRE(lords.back()->register_error == 0);
	}
	CHECK(enclaves_now().size() == COS_ENCLAVES_MAX);
	if (ncpu > COS_ENCLAVES_MAX + 1) {
		int err = in_child([&] {
			LordOpts lo({COS_ENCLAVES_MAX + 1});
			lo.o.name = "ninth";
			cos_lord *l = nullptr;
			return -cos_lord_register(&l, &lo.o);
		});
		CHECK(err == ENOSPC);
	}
	/* two workers on each enclave CPU */
	std::vector<std::vector<int>> sets;
	for (int i = 1; i <= COS_ENCLAVES_MAX; i++)
		sets.insert(sets.end(), 2, std::vector<int>{i});
	Shared<Runs> r;
	pid_t child = start_workers(r.p, sets, 100);
	REQUIRE(join_workers(child) == 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	for (auto &l : lords)
		l->finish();
	for (int i = 0; i < (int)sets.size(); i++) {
		CAPTURE(i);
		CHECK(r->rounds[i] == 100);
		CHECK(r->off_cpus[i] == 0);
		int mine = i / 2;
		for (int k = 0; k < COS_ENCLAVES_MAX; k++)
			CHECK(heard(lords[k]->log).count(r->tids[i]) == (k == mine ? 1u : 0u));
	}
	for (auto &l : lords) {
		CHECK(l->stall_reasons == 0);
		CHECK(l->shoot_errors.count(COS_SHOOT_OTHER_ENCLAVE) == 0);
	}
	CHECK(enclaves_now().empty());
	CHECK(sched_ext_state() == "enabled");
}
