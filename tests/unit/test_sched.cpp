// test_sched.cpp — the policy framework (libcos/sched.c) driven by a recorded event trace through
// a fake backend, not the kernel: CPU books, failed-slot requeue, generation checks, resync.
// Host unit tests: see docs/testing.md.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include "internal.h"
}

namespace {

/* The kernel as the framework sees it: a ring, a status table, shoot outcomes. */
struct FakeKernel {
	std::deque<cos_msg> ring;
	cos_msg cur{};
	uint64_t seq = 0;
	std::map<unsigned, cos_task_status> status;
	std::map<int, std::pair<unsigned, unsigned>> prepared;	/* cpu -> slot, gen */
	std::map<int, bool> prepared_latch;			/* cpu -> COS_SHOOT_F_LATCH */
	std::map<int, bool> prepared_urgent;			/* cpu -> COS_SHOOT_F_URGENT */
	std::vector<std::pair<int, unsigned>> latches;		/* (cpu, slot) latched OK */
	std::map<int, unsigned> outcome;			/* cpu -> status of the next shoot */
	std::vector<std::pair<int, unsigned>> shots;		/* (cpu, slot) committed OK */
	std::map<int, unsigned> last_status;
	std::vector<unsigned long long> waits;			/* timeouts of the lord's waits */
	cos_sched *stop_after_wait = nullptr;			/* stop cos_sched_run() there */
	int wait_err = 0, shoot_err = 0;			/* the module's refusals, if set */
	cos_sched *stop_on_spin = nullptr;			/* stop a loop that ignores them */
	unsigned shoot_calls = 0;

	uint64_t now = 0;					/* message timestamps, if set */
	void post(unsigned type, unsigned slot, unsigned gen, int pid, int cpu, uint64_t arg = 0)
	{
		cos_msg m{};
		m.seq = ++seq;
		m.ts = now;
		m.type = type;
		m.slot = slot;
		m.gen = gen;
		m.pid = pid;
		m.cpu = cpu;
		m.arg = arg;
		ring.push_back(m);
	}
};

const cos_msg *fk_peek(void *b)
{
	auto *k = static_cast<FakeKernel *>(b);
	if (k->ring.empty())
		return nullptr;
	k->cur = k->ring.front();
	return &k->cur;
}
void fk_consume(void *b) { static_cast<FakeKernel *>(b)->ring.pop_front(); }
void fk_publish(void *) {}
int fk_task_status(void *b, unsigned slot, cos_task_status *out)
{
	auto *k = static_cast<FakeKernel *>(b);
	auto it = k->status.find(slot);
	*out = it == k->status.end() ? cos_task_status{} : it->second;
	return 0;
}
int fk_prepare(void *b, int cpu, unsigned slot, unsigned gen, unsigned long long, unsigned flags)
{
	static_cast<FakeKernel *>(b)->prepared[cpu] = {slot, gen};
	static_cast<FakeKernel *>(b)->prepared_latch[cpu] = flags & COS_SHOOT_F_LATCH;
	static_cast<FakeKernel *>(b)->prepared_urgent[cpu] = flags & COS_SHOOT_F_URGENT;
	return 0;
}
int fk_shoot(void *b)
{
	auto *k = static_cast<FakeKernel *>(b);
	int placed = 0;
	k->shoot_calls++;
	if (k->shoot_err) {
		k->prepared.clear();
		return k->shoot_err;
	}
	for (auto &[cpu, sg] : k->prepared) {
		unsigned st = k->outcome.count(cpu) ? k->outcome[cpu] : (unsigned)COS_SHOOT_OK;
		k->outcome.erase(cpu);
		k->last_status[cpu] = st;
		if (st == COS_SHOOT_OK) {
			placed++;
			(k->prepared_latch[cpu] ? k->latches : k->shots).push_back({cpu, sg.first});
		}
	}
	k->prepared.clear();
	k->prepared_latch.clear();
	return placed;
}
unsigned fk_shoot_status(void *b, int cpu) { return static_cast<FakeKernel *>(b)->last_status[cpu]; }
int fk_wait(void *b, unsigned long long timeout_ns)
{
	auto *k = static_cast<FakeKernel *>(b);
	k->waits.push_back(timeout_ns);
	if (k->stop_after_wait)
		cos_sched_stop(k->stop_after_wait);
	if (k->wait_err && k->waits.size() >= 1000 && k->stop_on_spin)
		cos_sched_stop(k->stop_on_spin);	/* a lord that spins on the refusal */
	return k->wait_err;
}
int fk_affinity(void *, int, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (int c = 0; c < 4; c++)
		CPU_SET(c, set);
	return 0;
}

const cos_backend fake = {fk_peek,  fk_consume,	   fk_publish, fk_task_status, fk_prepare,
			  fk_shoot, fk_shoot_status, fk_wait,	 fk_affinity, nullptr};

/* A FIFO policy that records every callback. */
struct Rec {
	cos_taskq q{};
	std::vector<std::string> log;
	unsigned long long wake_in = 0;	/* p_schedule asks cos_sched_wake_at(now + this) */
};

Rec *rec(cos_sched *s) { return static_cast<Rec *>(cos_sched_policy_ctx(s)); }
std::string tag(const char *what, cos_task *t) { return std::string(what) + ":" + std::to_string(t->pid); }

void p_new(cos_sched *s, cos_task *t) { rec(s)->log.push_back(tag("new", t)); }
void p_runnable(cos_sched *s, cos_task *t)
{
	rec(s)->log.push_back(tag("runnable", t));
	cos_taskq_push(&rec(s)->q, t);
}
void p_preempted(cos_sched *s, cos_task *t, unsigned why)
{
	rec(s)->log.push_back(tag("preempted", t) + "/" + std::to_string(why));
	cos_taskq_push(&rec(s)->q, t);
}
void p_blocked(cos_sched *s, cos_task *t) { rec(s)->log.push_back(tag("blocked", t)); }
void p_dead(cos_sched *s, cos_task *t) { rec(s)->log.push_back(tag("dead", t)); }
void p_schedule(cos_sched *s)
{
	int cpus[8];
	int n = cos_sched_cpus(s, cpus, 8);
	for (int i = 0; i < n; i++) {
		if (cos_sched_cpu_task(s, cpus[i]) || !rec(s)->q.head)
			continue;
		REQUIRE(cos_sched_place(s, rec(s)->q.head, cpus[i], 0) == 0);
	}
	if (rec(s)->wake_in)
		cos_sched_wake_at(s, cos_now_ns() + rec(s)->wake_in);
}

/* Free CPUs first (as p_schedule), then every task still waiting latched on CPU 1. */
void p_schedule_latch(cos_sched *s)
{
	p_schedule(s);
	for (cos_task *t = rec(s)->q.head; t; t = t->q_next)
		if (cos_sched_latch(s, t, 1, 0) == 0)
			break;	/* one per CPU per step */
}

struct Fixture {
	FakeKernel k;
	Rec r;
	cos_policy policy{};
	cos_sched *s = nullptr;
	cpu_set_t enclave;

	Fixture()
	{
		policy.size = sizeof(policy);
		policy.task_data_size = 16;
		policy.task_new = p_new;
		policy.task_runnable = p_runnable;
		policy.task_preempted = p_preempted;
		policy.task_blocked = p_blocked;
		policy.task_dead = p_dead;
		policy.schedule = p_schedule;
		policy.ctx = &r;
		CPU_ZERO(&enclave);
		CPU_SET(1, &enclave);
		CPU_SET(2, &enclave);
	}
	void create(unsigned long long tick_ns = 0)
	{
		cos_sched_opts o{};
		o.size = sizeof(o);
		o.tick_ns = tick_ns;
		o.lord.lord_cpu = 0;
		o.lord.enclave = &enclave;
		o.lord.enclave_size = sizeof(enclave);
		REQUIRE(cos_sched_create_backend(&s, &policy, &fake, &k, &o, 64, 4) == 0);
	}
	~Fixture() { cos_sched_free(s); }
	/* Tasks 0..n-1 (pids 100..) are new and runnable, last seen on CPU 3. */
	void start_tasks(unsigned n)
	{
		for (unsigned i = 0; i < n; i++) {
			k.post(COS_MSG_TASK_NEW, i, 1, 100 + i, 3);
			k.post(COS_MSG_TASK_RUNNABLE, i, 1, 100 + i, 3);
		}
	}
	void step() { cos_sched_step(s); }
};

} // namespace

TEST_CASE("tasks are placed on idle enclave CPUs in FIFO order; a blocked task frees its CPU", "[sched]")
{
	Fixture f;
	f.create();
	f.start_tasks(3);
	f.step();
	REQUIRE(f.k.shots.size() == 2);
	CHECK(f.k.shots[0] == std::make_pair(1, 0u));	/* task 0 on CPU 1 */
	CHECK(f.k.shots[1] == std::make_pair(2, 1u));	/* task 1 on CPU 2 */
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 100);
	CHECK(f.r.q.len == 1);				/* task 2 waits */
	f.k.post(COS_MSG_TASK_BLOCKED, 0, 1, 100, 1);
	f.step();
	REQUIRE(f.k.shots.size() == 3);
	CHECK(f.k.shots[2] == std::make_pair(1, 2u));	/* CPU 1 went to task 2 */
	cos_sched_stats st;
	cos_sched_get_stats(f.s, &st);
	CHECK(st.placed == 3);
	CHECK(st.tasks == 3);
}

TEST_CASE("a failed slot goes back to the policy, or waits for the task's message", "[sched]")
{
	Fixture f;
	f.create();
	f.k.post(COS_MSG_TASK_NEW, 5, 1, 105, 1);
	f.k.post(COS_MSG_TASK_RUNNABLE, 5, 1, 105, 1);
	f.k.outcome[1] = COS_SHOOT_BUSY;
	f.step();
	CHECK(f.k.shots.empty());
	CHECK(f.r.log.back() == "runnable:105");	/* requeued by the framework */
	CHECK(f.r.q.len == 1);
	f.step();					/* and placed at the next step */
	REQUIRE(f.k.shots.size() == 1);

	/* BEHIND: nothing is requeued until the task's next message */
	f.k.post(COS_MSG_TASK_PREEMPTED, 5, 1, 105, 1, COS_PREEMPT_BY_SLICE);
	f.k.outcome[1] = COS_SHOOT_BEHIND;
	f.step();
	CHECK(f.r.log.back() == "preempted:105/3");
	CHECK(f.r.q.len == 0);
	CHECK(cos_sched_cpu_task(f.s, 1) == nullptr);
	f.step();
	CHECK(f.k.shots.size() == 1);			/* no retry without a message */
	f.k.post(COS_MSG_TASK_RUNNABLE, 5, 1, 105, 1);
	f.step();
	CHECK(f.k.shots.size() == 2);

	/* accepted, then its CPU could not start it: placed again */
	f.k.post(COS_MSG_SHOOT_FAILED, 5, 1, 105, 1, 1);
	f.step();
	CHECK(f.k.shots.size() == 3);

	/* accepted, then replaced by a later placement (or moved) before it started: again */
	f.k.post(COS_MSG_SHOOT_STALE, 5, 1, 105, 1, 1);
	f.step();
	CHECK(f.k.shots.size() == 4);

	/* BAD_CPU: the CPU went offline before the lord read CPU_OFFLINE; the task still waits in
	 * the kernel and no message about it follows, so it goes back to the policy at once */
	f.k.post(COS_MSG_TASK_PREEMPTED, 5, 1, 105, 1, COS_PREEMPT_BY_OTHER);
	f.k.outcome[1] = COS_SHOOT_BAD_CPU;
	f.step();
	CHECK(f.k.shots.size() == 4);
	CHECK(f.r.log.back() == "runnable:105");
	CHECK(f.r.q.len == 1);
	f.step();
	CHECK(f.k.shots.size() == 5);

	/* counted by cause */
	cos_sched_stats st;
	cos_sched_get_stats(f.s, &st);
	CHECK(st.failed == 3);
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_BAD_CPU) == 1);
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_BUSY) == 1);
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_BEHIND) == 1);
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_AFFINITY) == 0);
	CHECK(cos_sched_shoot_failures(f.s, COS_SCHED_NOT_STARTED) == 1);
	CHECK(cos_sched_shoot_failures(f.s, COS_SCHED_STALE) == 1);
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_OK) == 0);
	CHECK(cos_sched_shoot_failures(f.s, 1000) == 0);
}

TEST_CASE("a throttled task stays off the policy's books until its group has budget again", "[sched][bandwidth]")
{
	Fixture f;
	f.create();
	f.k.post(COS_MSG_TASK_NEW, 5, 1, 105, 1);
	f.k.post(COS_MSG_TASK_NEW, 6, 1, 106, 1);
	f.k.post(COS_MSG_GROUP_THROTTLED, 0, 0, 0, 1, 77);
	f.k.post(COS_MSG_TASK_THROTTLED, 5, 1, 105, 1, 77);
	f.k.post(COS_MSG_TASK_RUNNABLE, 6, 1, 106, 1);
	f.step();
	REQUIRE(f.k.shots.size() == 1);
	CHECK(f.k.shots[0].second == 6u);		/* only the task that is not throttled */
	CHECK(f.r.q.len == 0);
	f.step();
	CHECK(f.k.shots.size() == 1);			/* nobody places it while its group is out */

	f.k.post(COS_MSG_GROUP_UNTHROTTLED, 0, 0, 0, 2, 78);	/* another group */
	f.step();
	CHECK(f.k.shots.size() == 1);
	f.k.post(COS_MSG_GROUP_UNTHROTTLED, 0, 0, 0, 2, 77);	/* its group */
	f.step();
	REQUIRE(f.k.shots.size() == 2);
	CHECK(f.k.shots[1].second == 5u);
	CHECK(f.r.log.back() == "runnable:105");

	/* refused THROTTLED (its group ran out again meanwhile): the message says which group */
	f.k.post(COS_MSG_TASK_PREEMPTED, 5, 1, 105, 2, COS_PREEMPT_BY_SLICE);
	f.k.outcome[2] = COS_SHOOT_THROTTLED;
	f.step();
	CHECK(f.k.shots.size() == 2);
	CHECK(f.r.q.len == 0);				/* booked off, not requeued */
	f.k.post(COS_MSG_TASK_THROTTLED, 5, 1, 105, 2, 80);	/* an ancestor's group */
	f.k.post(COS_MSG_GROUP_UNTHROTTLED, 0, 0, 0, 2, 77);	/* not the one it waits for now */
	f.step();
	CHECK(f.k.shots.size() == 2);
	f.k.post(COS_MSG_GROUP_UNTHROTTLED, 0, 0, 0, 2, 80);
	f.step();
	CHECK(f.k.shots.size() == 3);
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_THROTTLED) == 1);

	/* a throttled task that dies is forgotten: its group's release places nothing */
	f.k.post(COS_MSG_TASK_THROTTLED, 5, 1, 105, 2, 81);
	f.k.post(COS_MSG_TASK_DEAD, 5, 1, 105, 2);
	f.k.post(COS_MSG_GROUP_UNTHROTTLED, 0, 0, 0, 2, 81);
	f.step();
	CHECK(f.k.shots.size() == 3);
}

TEST_CASE("a message with another generation means the slot was reused", "[sched]")
{
	Fixture f;
	f.create();
	f.k.post(COS_MSG_TASK_NEW, 7, 1, 107, 1);
	f.step();
	/* the old task's DEAD and the new one's NEW were lost: a RUNNABLE of gen 2 arrives */
	f.k.post(COS_MSG_TASK_RUNNABLE, 7, 2, 207, 2);
	f.step();
	REQUIRE(f.r.log.size() >= 4);
	CHECK(f.r.log[0] == "new:107");
	CHECK(f.r.log[1] == "dead:107");
	CHECK(f.r.log[2] == "new:207");
	CHECK(f.r.log[3] == "runnable:207");
	REQUIRE(f.k.shots.size() == 1);
	/* a message of the dead generation is ignored */
	f.k.post(COS_MSG_TASK_DEAD, 7, 1, 107, 1);
	f.step();
	CHECK(f.r.log.back() != "dead:207");
}

TEST_CASE("overflow: every task is forgotten and learnt again from the status table", "[sched]")
{
	Fixture f;
	f.create();
	f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 1);
	f.k.post(COS_MSG_TASK_RUNNABLE, 1, 1, 101, 1);
	f.k.post(COS_MSG_TASK_NEW, 2, 1, 102, 1);
	f.step();
	REQUIRE(f.k.shots.size() == 1);			/* 101 on CPU 1 */
	/* the kernel's truth after messages were dropped: 101 runs on 2, 102 waits, 103 is new */
	f.k.status[1] = {0, 1, COS_TASK_RUNNING, 2, 101, 0, 0, 0, 0};
	f.k.status[2] = {0, 1, COS_TASK_WAITING, 1, 102, 0, 0, 0, 0};
	f.k.status[3] = {0, 1, COS_TASK_BLOCKED, 1, 103, 0, 0, 0, 0};
	f.k.post(COS_MSG_OVERFLOW, 0, 0, 0, 0, 10);
	f.step();
	CHECK(std::count(f.r.log.begin(), f.r.log.end(), "dead:101") == 1);
	CHECK(std::count(f.r.log.begin(), f.r.log.end(), "dead:102") == 1);
	CHECK(std::count(f.r.log.begin(), f.r.log.end(), "new:103") == 1);
	REQUIRE(cos_sched_cpu_task(f.s, 2) != nullptr);
	CHECK(cos_sched_cpu_task(f.s, 2)->pid == 101);	/* running there: CPU 2 is busy */
	REQUIRE(f.k.shots.size() == 2);
	CHECK(f.k.shots[1] == std::make_pair(1, 2u));	/* 102 placed on the free CPU 1 */
	cos_sched_stats st;
	cos_sched_get_stats(f.s, &st);
	CHECK(st.resyncs == 1);
	CHECK(st.tasks == 3);
}

TEST_CASE("placement rules: enclave or lord CPU, one per CPU per step, waiting tasks only", "[sched]")
{
	Fixture f;
	f.policy.schedule = [](cos_sched *) {};		/* place by hand */
	f.create();
	f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 1);
	f.k.post(COS_MSG_TASK_RUNNABLE, 1, 1, 101, 1);
	f.k.post(COS_MSG_TASK_NEW, 2, 1, 102, 1);
	f.k.post(COS_MSG_TASK_RUNNABLE, 2, 1, 102, 1);
	f.k.post(COS_MSG_TASK_NEW, 3, 1, 103, 1);
	f.step();
	cos_task *a = f.r.q.head, *b = a->q_next;
	cos_task *blocked = cos_sched_cpu_task(f.s, 1);
	CHECK(blocked == nullptr);
	CHECK(cos_sched_place(f.s, a, 3, 0) == -EINVAL);	/* outside the enclave */
	CHECK(cos_sched_place(f.s, a, 0, 0) == 0);		/* the lord's CPU: local shoot */
	CHECK(cos_sched_place(f.s, b, 0, 0) == -EBUSY);		/* CPU 0 taken in this step */
	CHECK(cos_sched_place(f.s, a, 1, 0) == -EBUSY);		/* a is placed already */
	CHECK(f.r.q.len == 1);					/* a left the queue */
}

TEST_CASE("a lord the module no longer serves ends its loop and says why", "[sched][errors]")
{
	auto err = GENERATE(-EPERM, -ENODEV, -ESHUTDOWN);
	CAPTURE(err);
	SECTION("its wait is refused (idle: no task)")
	{
		Fixture f;
		f.create(10000);
		f.k.wait_err = err;
		f.k.stop_on_spin = f.s;
		CHECK(cos_sched_run(f.s) == err);
		CHECK(f.k.waits.size() == 1);			/* not 2.8 million */
		CHECK(std::string(cos_strerror(err)).find("COS_IOC_WAIT") != std::string::npos);
		CHECK(std::string(cos_strerror(err)).find("no longer registered") != std::string::npos);
	}
	SECTION("its shoot is refused (a task waits)")
	{
		Fixture f;
		f.create(10000);
		f.k.shoot_err = err;
		f.k.wait_err = -EINTR;
		f.k.stop_on_spin = f.s;
		f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 3);
		f.k.post(COS_MSG_TASK_RUNNABLE, 1, 1, 101, 3);
		CHECK(cos_sched_run(f.s) == err);
		CHECK(f.k.shoot_calls == 1);
		CHECK(std::string(cos_strerror(err)).find("COS_IOC_SHOOT") != std::string::npos);
	}
	SECTION("a signal's EINTR does not end it")
	{
		Fixture f;
		f.create(10000);
		f.k.wait_err = -EINTR;
		f.k.stop_after_wait = f.s;
		CHECK(cos_sched_run(f.s) == 0);
	}
}

TEST_CASE("an idle lord ticks only while a task waits for a CPU", "[sched][idle]")
{
	Fixture f;
	f.create(10000);				/* a 10 us tick, as cos-shinjuku's */
	f.k.stop_after_wait = f.s;
	auto wait_timeout = [&] {			/* cos_sched_run() spins, then waits once */
		REQUIRE(cos_sched_run(f.s) == 0);
		REQUIRE(f.k.waits.size() == 1);
		return f.k.waits[0];
	};
	auto start = [&](unsigned slot) {
		f.k.post(COS_MSG_TASK_NEW, slot, 1, 100 + slot, 3);
		f.k.post(COS_MSG_TASK_RUNNABLE, slot, 1, 100 + slot, 3);
	};
	SECTION("no task at all: it sleeps until a message (at most the 100 ms statistics tick)")
	{
		CHECK(wait_timeout() == 100000000ull);
	}
	SECTION("every task runs: nothing to preempt for")
	{
		start(0);
		start(1);
		CHECK(wait_timeout() == 100000000ull);
	}
	SECTION("a task waits behind two running ones: the policy's tick")
	{
		start(0);
		start(1);
		start(2);
		CHECK(wait_timeout() == 10000ull);
	}
	SECTION("the waiting task got a CPU")
	{
		start(0);
		start(1);
		start(2);
		f.k.post(COS_MSG_TASK_BLOCKED, 0, 1, 100, 1);
		CHECK(wait_timeout() == 100000000ull);
	}
	SECTION("the waiting task died")
	{
		start(0);
		start(1);
		start(2);
		f.k.post(COS_MSG_TASK_DEAD, 2, 1, 102, 3);
		CHECK(wait_timeout() == 100000000ull);
	}
	SECTION("a task whose shoot failed waits while both CPUs are taken")
	{
		start(0);
		start(1);
		f.k.post(COS_MSG_TASK_PREEMPTED, 1, 1, 101, 2, COS_PREEMPT_BY_OTHER);
		f.k.outcome[2] = COS_SHOOT_BUSY;	/* its shoots fail until it is placed later */
		start(3);				/* takes CPU 2 at the next step */
		CHECK(wait_timeout() == 10000ull);
	}
	SECTION("a task latched behind a running one: the policy's tick (it may preempt for it)")
	{
		f.policy.schedule = p_schedule_latch;
		start(0);
		start(1);
		start(2);
		REQUIRE(cos_sched_run(f.s) == 0);	/* 0, 1 placed; 2 latched on CPU 1 */
		REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 1);
		CHECK(f.k.waits.back() == 10000ull);
	}
	SECTION("after a resync from an empty status table nobody waits")
	{
		start(0);
		start(1);
		start(2);
		f.k.post(COS_MSG_OVERFLOW, 0, 0, 0, 0);
		CHECK(wait_timeout() == 100000000ull);
	}
}

TEST_CASE("a policy's deadline shortens an idle lord's wait, for the step that asked", "[sched][idle]")
{
	/* one wait per run: cos_sched_run() stops after it (a fixture per run) */
	auto wait_timeout = [](unsigned long long wake_in) {
		Fixture f;
		f.create();
		f.k.stop_after_wait = f.s;
		f.r.wake_in = wake_in;
		REQUIRE(cos_sched_run(f.s) == 0);
		REQUIRE(f.k.waits.size() == 1);
		return f.k.waits[0];
	};
	uint64_t t = wait_timeout(5000000);		/* 5 ms from schedule() */
	CHECK(t <= 5000000ull);
	CHECK(t > 1000ull);
	CHECK(wait_timeout(0) == 100000000ull);	/* none asked: the 100 ms statistics tick */
	CHECK(wait_timeout(1) == 1000ull);		/* passed by the time it waits: 1 us, no spin */
}

TEST_CASE("a task the wake rules started is booked on its CPU, not placed again", "[sched][wake]")
{
	Fixture f;
	f.create();
	f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 2);
	f.k.post(COS_MSG_TASK_PLACED, 1, 1, 101, 2, 2);	/* started on CPU 2 by the kernel */
	f.k.post(COS_MSG_TASK_NEW, 2, 1, 102, 1);
	f.k.post(COS_MSG_TASK_RUNNABLE, 2, 1, 102, 1);
	f.k.post(COS_MSG_TASK_NEW, 3, 1, 103, 1);
	f.k.post(COS_MSG_TASK_RUNNABLE, 3, 1, 103, 1);
	f.step();
	REQUIRE(cos_sched_cpu_task(f.s, 2) != nullptr);
	CHECK(cos_sched_cpu_task(f.s, 2)->pid == 101);
	CHECK(cos_sched_cpu_task(f.s, 2)->state == COS_TASK_QUEUED);
	CHECK(cos_sched_cpu_task(f.s, 2)->placed_by == COS_PLACED_BY_RULE);
	REQUIRE(f.k.shots.size() == 1);			/* CPU 2 is taken: only CPU 1 got a shoot */
	CHECK(f.k.shots[0] == std::make_pair(1, 2u));
	CHECK(f.r.q.len == 1);				/* task 3 waits */
	CHECK(std::count(f.r.log.begin(), f.r.log.end(), "runnable:101") == 0);	/* no callback */
	CHECK(cos_sched_wake_placed(f.s) == 1);
	f.k.post(COS_MSG_TASK_BLOCKED, 1, 1, 101, 2);	/* it left CPU 2: task 3 gets it */
	f.step();
	REQUIRE(f.k.shots.size() == 2);
	CHECK(f.k.shots[1] == std::make_pair(2, 3u));
}

TEST_CASE("a yield's handoff books the task it woke on the yielder's CPU", "[sched][wake]")
{
	Fixture f;
	f.create();
	for (uint32_t slot = 1; slot <= 3; slot++) {
		f.k.post(COS_MSG_TASK_NEW, slot, 1, 100 + slot, 1);
		f.k.post(COS_MSG_TASK_RUNNABLE, slot, 1, 100 + slot, 1);
	}
	f.step();
	REQUIRE(f.k.shots.size() == 2);			/* 101 and 102 run, 103 waits */
	REQUIRE(cos_sched_cpu_task(f.s, 1) != nullptr);
	uint32_t yielder = cos_sched_cpu_task(f.s, 1)->slot;
	CHECK(f.r.q.len == 1);
	/* the task on CPU 1 woke 103, then yielded to it: the kernel's order of messages */
	f.k.now = cos_now_ns();				/* later than the placements */
	f.k.post(COS_MSG_TASK_PLACED, 3, 1, 103, 1, 1 | COS_PLACED_F_HANDOFF);
	f.k.post(COS_MSG_TASK_YIELD, yielder, 1, 100 + yielder, 1);
	f.step();
	REQUIRE(cos_sched_cpu_task(f.s, 1) != nullptr);
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 103);	/* the CPU in arg's low 32 bits */
	CHECK(cos_sched_cpu_task(f.s, 1)->placed_by == COS_PLACED_BY_HANDOFF);
	CHECK(cos_sched_cpu_task(f.s, 2)->placed_by == COS_PLACED_BY_LORD);
	CHECK(f.k.shots.size() == 2);			/* no CPU free for the yielder */
	CHECK(f.r.q.len == 1);				/* it waits */
	CHECK(cos_sched_wake_placed(f.s) == 1);
	CHECK(cos_sched_wake_handoffs(f.s) == 1);
}

TEST_CASE("an urgent task's shoots say so; started in place of another, it is booked there", "[sched][wake]")
{
	Fixture f;
	f.policy.task_runnable = [](cos_sched *s, cos_task *t) {
		t->urgent = t->pid == 101;	/* the policy's word, before it places the task */
		p_runnable(s, t);
	};
	f.create();
	for (uint32_t slot = 1; slot <= 3; slot++) {
		f.k.post(COS_MSG_TASK_NEW, slot, 1, 100 + slot, 1);
		f.k.post(COS_MSG_TASK_RUNNABLE, slot, 1, 100 + slot, 1);
	}
	f.step();
	REQUIRE(f.k.shots.size() == 2);			/* 101 on CPU 1, 102 on CPU 2 */
	CHECK(f.k.prepared_urgent[1]);
	CHECK_FALSE(f.k.prepared_urgent[2]);
	/* 101 blocks (103 takes CPU 1), wakes, and the kernel starts it on CPU 2 in 102's place */
	f.k.post(COS_MSG_TASK_BLOCKED, 1, 1, 101, 1);
	f.step();
	REQUIRE(f.k.shots.size() == 3);
	CHECK(f.k.shots[2] == std::make_pair(1, 3u));
	CHECK_FALSE(f.k.prepared_urgent[1]);
	f.k.now = cos_now_ns();				/* later than the placements */
	f.k.post(COS_MSG_TASK_PLACED, 1, 1, 101, 2, 2 | COS_PLACED_F_PREEMPT);
	f.k.post(COS_MSG_TASK_PREEMPTED, 2, 1, 102, 2, COS_PREEMPT_BY_COS);
	f.step();
	REQUIRE(cos_sched_cpu_task(f.s, 2) != nullptr);
	CHECK(cos_sched_cpu_task(f.s, 2)->pid == 101);
	CHECK(cos_sched_cpu_task(f.s, 2)->placed_by == COS_PLACED_BY_PREEMPT);
	CHECK(std::count(f.r.log.begin(), f.r.log.end(), "runnable:101") == 1);	/* its first only */
	CHECK(std::count(f.r.log.begin(), f.r.log.end(),
			 "preempted:102/" + std::to_string(COS_PREEMPT_BY_COS)) == 1);
	CHECK(f.r.q.len == 1);				/* 102 waits: no CPU is free */
	CHECK(cos_sched_wake_placed(f.s) == 1);
	CHECK(cos_sched_wake_preempts(f.s) == 1);
	CHECK(cos_sched_wake_handoffs(f.s) == 0);
}

TEST_CASE("an urgent task the kernel queued next behind another is booked latched, and takes the CPU when that one blocks", "[sched][wake]")
{
	Fixture f;
	f.policy.task_runnable = [](cos_sched *s, cos_task *t) {
		t->urgent = true;
		p_runnable(s, t);
	};
	f.create();
	for (uint32_t slot = 1; slot <= 2; slot++) {
		f.k.post(COS_MSG_TASK_NEW, slot, 1, 100 + slot, 1);
		f.k.post(COS_MSG_TASK_RUNNABLE, slot, 1, 100 + slot, 1);
	}
	f.step();
	REQUIRE(f.k.shots.size() == 2);			/* 101 on CPU 1, 102 on CPU 2 */
	/* 102 blocks, CPU 2 is free; then it wakes while 101 runs, and goes next on CPU 1 */
	f.k.post(COS_MSG_TASK_BLOCKED, 2, 1, 102, 2);
	f.k.post(COS_MSG_TASK_PLACED, 2, 1, 102, 1, 1 | COS_PLACED_F_NEXT);
	f.step();
	CHECK(f.k.shots.size() == 2);			/* nothing to place: 102 is the kernel's */
	REQUIRE(cos_sched_cpu_task(f.s, 1) != nullptr);
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 101);
	CHECK(cos_sched_cpu_task(f.s, 2) == nullptr);
	REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 1);
	CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 102);
	CHECK(cos_sched_cpu_latched(f.s, 1)->head->state == COS_TASK_QUEUED);
	CHECK(std::count(f.r.log.begin(), f.r.log.end(), "runnable:102") == 1);	/* its first only */
	CHECK(cos_sched_wake_nexts(f.s) == 1);
	CHECK(cos_sched_wake_placed(f.s) == 0);		/* queued, not started */
	/* 101 blocks: CPU 1 passes to 102, with no shoot */
	f.k.post(COS_MSG_TASK_BLOCKED, 1, 1, 101, 1);
	f.step();
	REQUIRE(cos_sched_cpu_task(f.s, 1) != nullptr);
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 102);
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == 0);
	CHECK(f.k.shots.size() == 2);
	/* queued next behind a task the books no longer show there: its start books it */
	f.k.post(COS_MSG_TASK_RUNNABLE, 1, 1, 101, 2);
	f.step();					/* 101 placed on free CPU 2 */
	REQUIRE(f.k.shots.size() == 3);
	f.k.post(COS_MSG_TASK_BLOCKED, 2, 1, 102, 1);
	f.k.post(COS_MSG_TASK_BLOCKED, 1, 1, 101, 2);
	f.k.post(COS_MSG_TASK_PLACED, 2, 1, 102, 2, 2 | COS_PLACED_F_NEXT);
	f.step();
	CHECK(cos_sched_cpu_latched(f.s, 2)->len == 1);
	f.k.post(COS_MSG_TASK_RUNNING, 2, 1, 102, 2, 2);
	f.step();
	REQUIRE(cos_sched_cpu_task(f.s, 2) != nullptr);
	CHECK(cos_sched_cpu_task(f.s, 2)->pid == 102);
	CHECK(cos_sched_cpu_task(f.s, 2)->state == COS_TASK_RUNNING);
	CHECK(cos_sched_cpu_latched(f.s, 2)->len == 0);
	CHECK(cos_sched_wake_nexts(f.s) == 2);
}

TEST_CASE("a task an urgent one displaced resumes from the latch behind it and the one queued next, as the kernel puts it", "[sched][wake]")
{
	Fixture f;
	f.policy.task_runnable = [](cos_sched *s, cos_task *t) {
		t->urgent = t->pid != 103;	/* 101 and 102 urgent, 103 and 104 not */
		p_runnable(s, t);
	};
	f.create();
	for (uint32_t slot : {3u, 4u}) {			/* 103 on CPU 1, 104 on CPU 2 */
		f.k.post(COS_MSG_TASK_NEW, slot, 1, 100 + slot, 1);
		f.k.post(COS_MSG_TASK_RUNNABLE, slot, 1, 100 + slot, 1);
	}
	f.step();
	REQUIRE(f.k.shots.size() == 2);
	REQUIRE(cos_sched_cpu_task(f.s, 1)->pid == 103);
	f.k.now = cos_now_ns();				/* later than the placements */
	SECTION("alone: at the head")
	{
		f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 1);
		f.k.post(COS_MSG_TASK_PLACED, 1, 1, 101, 1, 1 | COS_PLACED_F_PREEMPT);
		f.k.post(COS_MSG_TASK_PREEMPTED, 3, 1, 103, 1, COS_PREEMPT_BY_COS | COS_PREEMPT_F_LATCHED);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1)->pid == 101);
		REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 1);
		CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 103);
		CHECK(std::count(f.r.log.begin(), f.r.log.end(), "preempted:103/" +
				 std::to_string(COS_PREEMPT_BY_COS)) == 0);	/* the kernel's */
	}
	SECTION("behind the one COS_WAKE_NEXT queued there")
	{
		f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 1);
		f.k.post(COS_MSG_TASK_NEW, 2, 1, 102, 1);
		f.k.post(COS_MSG_TASK_PLACED, 1, 1, 101, 1, 1 | COS_PLACED_F_PREEMPT);
		f.k.post(COS_MSG_TASK_PLACED, 2, 1, 102, 1, 1 | COS_PLACED_F_NEXT);
		f.k.post(COS_MSG_TASK_PREEMPTED, 3, 1, 103, 1, COS_PREEMPT_BY_COS | COS_PREEMPT_F_LATCHED);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1)->pid == 101);
		const cos_taskq *l = cos_sched_cpu_latched(f.s, 1);
		REQUIRE(l->len == 2);
		CHECK(l->head->pid == 102);
		CHECK(l->tail->pid == 103);
		/* 101 blocks: 102 starts; it blocks: 103 resumes */
		f.k.post(COS_MSG_TASK_BLOCKED, 1, 1, 101, 1);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1)->pid == 102);
		f.k.post(COS_MSG_TASK_BLOCKED, 2, 1, 102, 1);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1)->pid == 103);
		CHECK(l->len == 0);
		CHECK(f.k.shots.size() == 2);			/* no shoot for any of it */
	}
}

TEST_CASE("the wake rules' placement and the lord's own agree on who holds a CPU", "[sched][wake]")
{
	Fixture f;
	f.create();
	SECTION("the task that ran there before leaves after the rule started another: the CPU stays taken")
	{
		f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 1);
		f.k.post(COS_MSG_TASK_RUNNABLE, 1, 1, 101, 1);
		f.step();					/* 101 placed on CPU 1 */
		REQUIRE(f.k.shots.size() == 1);
		f.k.now = cos_now_ns();				/* later than that placement */
		f.k.post(COS_MSG_TASK_NEW, 2, 1, 102, 1);
		f.k.post(COS_MSG_TASK_PLACED, 2, 1, 102, 1, 1);	/* 101 stopped; the kernel put 102 there */
		f.k.post(COS_MSG_TASK_BLOCKED, 1, 1, 101, 1);	/* ... before 101's message came */
		f.step();
		REQUIRE(cos_sched_cpu_task(f.s, 1) != nullptr);
		CHECK(cos_sched_cpu_task(f.s, 1)->pid == 102);
	}
	SECTION("the lord placed a task there after the kernel started one: the lord's shoot preempts it")
	{
		f.k.now = 1000;
		f.k.post(COS_MSG_TASK_NEW, 1, 1, 101, 1);
		f.k.post(COS_MSG_TASK_RUNNABLE, 1, 1, 101, 1);
		f.step();					/* 101 placed on CPU 1 at cos_now_ns() */
		REQUIRE(f.k.shots.size() == 1);
		f.k.post(COS_MSG_TASK_NEW, 2, 1, 102, 1);
		f.k.post(COS_MSG_TASK_PLACED, 2, 1, 102, 1, 1);	/* posted (ts 1000) before that */
		f.step();
		REQUIRE(cos_sched_cpu_task(f.s, 1) != nullptr);
		CHECK(cos_sched_cpu_task(f.s, 1)->pid == 101);	/* the later placement holds it */
		f.k.post(COS_MSG_TASK_PREEMPTED, 2, 1, 102, 1, COS_PREEMPT_BY_COS);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1)->pid == 101);	/* 102's message does not free it */
		REQUIRE(f.k.shots.size() == 2);			/* 102 back to the lord: CPU 2 */
		CHECK(f.k.shots[1] == std::make_pair(2, 2u));
	}
}

TEST_CASE("a latched task follows its CPU's task in the books, without a shoot", "[sched][latch]")
{
	Fixture f;
	f.policy.schedule = p_schedule_latch;
	f.create();
	f.start_tasks(5);
	f.step();	/* tasks 0, 1 on CPUs 1, 2; nothing latched: CPU 1 had its placement */
	REQUIRE(f.k.shots.size() == 2);
	CHECK(f.k.latches.empty());
	f.step();	/* task 2 latched on CPU 1 */
	REQUIRE(f.k.latches.size() == 1);
	CHECK(f.k.latches[0] == std::make_pair(1, 2u));
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 100);
	REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 1);
	CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 102);
	CHECK(cos_sched_cpu_latched(f.s, 1)->head->state == COS_TASK_QUEUED);
	f.step();	/* task 3 latched behind it */
	REQUIRE(f.k.latches.size() == 2);
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == 2);
	CHECK(f.r.q.len == 1);

	/* task 0 blocks: CPU 1 is task 2's now, no shoot for it; task 3 next */
	f.k.post(COS_MSG_TASK_BLOCKED, 0, 1, 100, 1);
	f.k.latches.clear();
	f.step();
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 102);
	CHECK(f.k.shots.size() == 2);
	REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 2);	/* 3, and 4 latched this step */
	CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 103);

	/* a kthread preempts task 2: the kernel latched it back first; still CPU 1's, no callback */
	size_t logged = f.r.log.size();
	f.k.post(COS_MSG_TASK_PREEMPTED, 2, 1, 102, 1, COS_PREEMPT_BY_OTHER | COS_PREEMPT_F_LATCHED);
	f.step();
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 102);
	CHECK(cos_sched_cpu_task(f.s, 1)->state == COS_TASK_QUEUED);
	CHECK(f.r.log.size() == logged);
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == 2);

	/* task 3 changed while latched: back to the policy, off the latch */
	f.k.post(COS_MSG_SHOOT_STALE, 3, 1, 103, 1, 1);
	f.policy.schedule = p_schedule;
	f.step();
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == 1);
	CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 104);
	CHECK(f.r.q.head != nullptr);
	CHECK(f.r.q.head->pid == 103);
	CHECK(cos_sched_shoot_failures(f.s, COS_SCHED_STALE) == 1);

	/* a latched task placed elsewhere leaves the latch; refused, it stays latched */
	cos_task *t4 = cos_sched_cpu_latched(f.s, 1)->head;
	f.k.outcome[2] = COS_SHOOT_BUSY;
	REQUIRE(cos_sched_place(f.s, t4, 2, 0) == 0);
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == 0);
	f.step();
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == 1);
	CHECK(t4->state == COS_TASK_QUEUED);
	REQUIRE(cos_sched_place(f.s, t4, 2, 0) == 0);
	f.step();
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == 0);
	CHECK(cos_sched_cpu_task(f.s, 2) == t4);
}

void p_schedule_none(cos_sched *) {}

/*
 * The kernel latched a CPU's task back first (a kthread preempted it), then the lord placed
 * another task there before it ran again: the new one runs first and the kernel keeps the old
 * one latched first, with no message about it.  The books must say so: booked as "preempted, a
 * message follows", it would never be placed again, and the starvation rule would declare the
 * lord stalled.
 */
TEST_CASE("a task placed where the kernel latched the CPU's task back leaves that one latched first", "[sched][latch]")
{
	Fixture f;
	f.policy.schedule = p_schedule_latch;
	f.create();
	f.start_tasks(3);
	f.step();	/* tasks 0, 1 on CPUs 1, 2 */
	f.step();	/* task 2 latched on CPU 1 */
	REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 1);
	f.policy.schedule = p_schedule_none;
	f.k.post(COS_MSG_TASK_PREEMPTED, 0, 1, 100, 1, COS_PREEMPT_BY_OTHER | COS_PREEMPT_F_LATCHED);
	f.k.post(COS_MSG_TASK_NEW, 3, 1, 103, 3);
	f.k.post(COS_MSG_TASK_RUNNABLE, 3, 1, 103, 3);
	f.step();
	cos_task *t0 = cos_sched_cpu_task(f.s, 1), *t3 = f.r.q.head;
	REQUIRE(t0 != nullptr);
	REQUIRE(t0->pid == 100);
	CHECK(t0->state == COS_TASK_QUEUED);
	REQUIRE(t3 != nullptr);
	REQUIRE(t3->pid == 103);

	SECTION("it is latched first behind the new one, and runs when that one blocks") {
		REQUIRE(cos_sched_place(f.s, t3, 1, 0) == 0);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1) == t3);
		REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 2);
		CHECK(cos_sched_cpu_latched(f.s, 1)->head == t0);
		CHECK(t0->state == COS_TASK_QUEUED);
		f.k.post(COS_MSG_TASK_RUNNING, 3, 1, 103, 1);
		f.k.post(COS_MSG_TASK_BLOCKED, 3, 1, 103, 1);
		f.k.post(COS_MSG_TASK_RUNNING, 0, 1, 100, 1);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1) == t0);
		CHECK(t0->state == COS_TASK_RUNNING);
		REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 1);
		CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 102);
	}
	SECTION("had it started again before, the new one preempts it and its message says where it is") {
		REQUIRE(cos_sched_place(f.s, t3, 1, 0) == 0);
		f.step();	/* its RUNNING (at ts 0) was posted before this placement */
		f.k.post(COS_MSG_TASK_RUNNING, 0, 1, 100, 1);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1) == t3);
		CHECK(t0->state == COS_TASK_RUNNING);
		CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 102);
		f.k.post(COS_MSG_TASK_PREEMPTED, 0, 1, 100, 1, COS_PREEMPT_BY_OTHER | COS_PREEMPT_F_LATCHED);
		f.step();
		CHECK(cos_sched_cpu_task(f.s, 1) == t3);
		REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 2);
		CHECK(cos_sched_cpu_latched(f.s, 1)->head == t0);
		CHECK(t0->state == COS_TASK_QUEUED);
	}
}

TEST_CASE("latch rules: a full latch, the lord's CPU, a task that is not waiting", "[sched][latch]")
{
	Fixture f;
	f.create();
	f.start_tasks(8);
	f.step();	/* 0, 1 run */
	cos_task *t = f.r.q.head;
	CHECK(cos_sched_latch(f.s, t, 0, 0) == -EINVAL);	/* the lord's CPU */
	CHECK(cos_sched_latch(f.s, t, 3, 0) == -EINVAL);	/* outside the enclave */
	CHECK(cos_sched_latch(f.s, cos_sched_cpu_task(f.s, 2), 1, 0) == -EBUSY);	/* running */
	for (int i = 0; i < COS_SHOOT_LATCH_MAX; i++) {
		REQUIRE(cos_sched_latch(f.s, f.r.q.head, 1, 0) == 0);
		CHECK(cos_sched_latch(f.s, f.r.q.head, 1, 0) == -EBUSY);	/* one per step */
		f.step();
	}
	CHECK(cos_sched_cpu_latched(f.s, 1)->len == COS_SHOOT_LATCH_MAX);
	CHECK(cos_sched_latch(f.s, f.r.q.head, 1, 0) == -ENOSPC);
	/* the kernel refused one: back to the policy */
	f.k.outcome[2] = COS_SHOOT_LATCH_FULL;
	REQUIRE(cos_sched_latch(f.s, f.r.q.head, 2, 0) == 0);
	unsigned waiting = f.r.q.len;
	f.step();
	CHECK(f.r.q.len == waiting + 1);
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_LATCH_FULL) == 1);
}

/*
 * A latched task starts with no message when the task before it stops; that task's message may
 * still be on its way when the lord shoots the latched one (elsewhere, or again there), and the
 * kernel answers NOT_WAITING.  The books keep it first in the latch, so that the message books it
 * on the CPU: booked blocked, it would be lost to the policy while it runs, and any task latched
 * behind it would be booked on a CPU it does not hold.
 */
TEST_CASE("a latched task that started before the lord shot it again is booked on its CPU", "[sched][latch]")
{
	Fixture f;
	f.policy.schedule = p_schedule_latch;
	f.create();
	f.start_tasks(4);
	f.step();	/* 0, 1 run on CPUs 1, 2 */
	f.step();	/* 2 latched on CPU 1 */
	f.step();	/* 3 behind it */
	f.policy.schedule = p_schedule_none;
	REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 2);
	cos_task *t2 = cos_sched_cpu_latched(f.s, 1)->head;
	REQUIRE(t2->pid == 102);

	/* task 0's slice ended and task 2 started; the lord shoots 2 before it reads that */
	f.k.outcome[2] = COS_SHOOT_NOT_WAITING;
	REQUIRE(cos_sched_place(f.s, t2, 2, 0) == 0);
	f.step();
	CHECK(cos_sched_shoot_failures(f.s, COS_SHOOT_NOT_WAITING) == 1);
	REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 2);
	CHECK(cos_sched_cpu_latched(f.s, 1)->head == t2);
	CHECK(t2->state == COS_TASK_QUEUED);
	CHECK(cos_sched_cpu_task(f.s, 2)->pid == 101);

	/* task 0's message: 2 holds CPU 1, 3 still waits behind it */
	size_t logged = f.r.log.size();
	f.k.post(COS_MSG_TASK_PREEMPTED, 0, 1, 100, 1, COS_PREEMPT_BY_SLICE);
	f.step();
	CHECK(cos_sched_cpu_task(f.s, 1) == t2);
	REQUIRE(cos_sched_cpu_latched(f.s, 1)->len == 1);
	CHECK(cos_sched_cpu_latched(f.s, 1)->head->pid == 103);
	CHECK(f.r.log.size() == logged + 1);	/* task 0's preemption only */

	/* and 2's own message frees the CPU for 3 */
	f.k.post(COS_MSG_TASK_BLOCKED, 2, 1, 102, 1);
	f.step();
	CHECK(cos_sched_cpu_task(f.s, 1)->pid == 103);
	CHECK(t2->state == COS_TASK_BLOCKED);

	/* what the books were made of, oldest first: the refused shoot, then the two messages */
	cos_sched_event ev[COS_SCHED_RECENT];
	int n = cos_sched_recent(f.s, ev, COS_SCHED_RECENT);
	REQUIRE(n >= 4);
	CHECK(cos_sched_recent(f.s, ev, 2) == 2);
	CHECK(ev[0].kind == COS_SCHED_EV_MSG);
	CHECK(ev[0].type == COS_MSG_TASK_PREEMPTED);
	CHECK(ev[1].type == COS_MSG_TASK_BLOCKED);
	CHECK(ev[1].pid == 102);
	n = cos_sched_recent(f.s, ev, COS_SCHED_RECENT);
	const cos_sched_event &shoot = ev[n - 3];
	CHECK(shoot.kind == COS_SCHED_EV_SHOOT);
	CHECK(shoot.type == COS_SHOOT_NOT_WAITING);
	CHECK(shoot.pid == 102);
	CHECK(shoot.cpu == 2);
	CHECK(shoot.flags == 0);
	CHECK(ev[n - 4].kind == COS_SCHED_EV_SHOOT);	/* task 3's latch */
	CHECK(ev[n - 4].flags == COS_SHOOT_F_LATCH);
	CHECK(cos_sched_recent(f.s, ev, 0) == 0);
}

TEST_CASE("a RUNNABLE's waker is resolved to the lord's task by pid, through deaths and pid collisions", "[sched][waker]")
{
	Fixture f;
	f.create();
	/* pids 128 apart share a home in the pid index (64 slots: 128 entries) */
	constexpr unsigned N = 20;
	auto pid = [](unsigned i) { return (int)(1000 + 128 * i); };
	for (unsigned i = 0; i < N; i++)
		f.k.post(COS_MSG_TASK_NEW, i, 1, pid(i), 1);
	for (unsigned i : {3u, 7u, 8u, 0u, 15u})
		f.k.post(COS_MSG_TASK_DEAD, i, 1, pid(i), 1);
	f.step();
	f.policy.task_runnable = [](cos_sched *s, cos_task *t) {
		rec(s)->log.push_back(tag("woken", t) + "<" + std::to_string(t->waker ? t->waker->pid : 0));
	};
	for (unsigned i = 0; i < N; i++) {
		unsigned by = (i + 1) % N;	/* each woken by the next, dead or alive */
		f.k.post(COS_MSG_TASK_RUNNABLE, 40 + i, 1, 5000 + i, 1);	/* new tasks */
		f.k.ring.back().waker = (uint32_t)pid(by);
	}
	f.k.post(COS_MSG_TASK_RUNNABLE, 39, 1, 4999, 1);
	f.k.ring.back().waker = 77;	/* not a task of this lord */
	f.step();
	std::set<unsigned> dead = {3, 7, 8, 0, 15};
	for (unsigned i = 0; i < N; i++) {
		unsigned by = (i + 1) % N;
		std::string want = "woken:" + std::to_string(5000 + i) + "<" +
				   std::to_string(dead.count(by) ? 0 : pid(by));
		CAPTURE(want);
		CHECK(std::count(f.r.log.begin(), f.r.log.end(), want) == 1);
	}
	CHECK(std::count(f.r.log.begin(), f.r.log.end(), "woken:4999<0") == 1);
	/* a waker only for RUNNABLE: a preemption names none */
	f.policy.task_preempted = [](cos_sched *s, cos_task *t, unsigned) {
		rec(s)->log.push_back(tag("back", t) + "<" + std::to_string(t->waker ? t->waker->pid : 0));
	};
	f.k.post(COS_MSG_TASK_PREEMPTED, 40, 1, 5000, 1, COS_PREEMPT_BY_OTHER);
	f.k.ring.back().waker = (uint32_t)pid(1);
	f.step();
	CHECK(f.r.log.back() == "back:5000<0");
}
