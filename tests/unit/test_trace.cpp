// test_trace.cpp — decision records (libcos/trace.c) and their replay (libcos/replay.c): a
// policy run on a scripted kernel is recorded through the ring, drained to a file and replayed;
// the same policy makes the same decisions, a changed slice shows as differences; a small
// ring drops whole steps and says so; damaged recordings are refused.
// Host unit tests: see docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

extern "C" {
#include "internal.h"
}

namespace {

/* A kernel that starts every placement and says so for the task it displaced. */
struct Kernel {
	std::deque<cos_msg> ring;
	cos_msg cur{};
	uint64_t seq = 0;
	std::map<int, std::pair<unsigned, unsigned>> prepared;	/* cpu -> slot, gen */
	std::map<int, unsigned> on_cpu;				/* cpu -> slot running */
	std::map<unsigned, cos_task_status> table;		/* slot -> status (learn()) */
	void post(unsigned type, unsigned slot, int cpu, uint64_t arg = 0)
	{
		cos_msg m{};
		m.seq = ++seq;
		m.ts = cos_clock_real();
		m.type = type;
		m.slot = slot;
		m.gen = 1;
		m.pid = 100 + slot;
		m.cpu = cpu;
		m.arg = arg;
		ring.push_back(m);
	}
};

const cos_msg *k_peek(void *b)
{
	auto *k = static_cast<Kernel *>(b);
	if (k->ring.empty())
		return nullptr;
	k->cur = k->ring.front();
	return &k->cur;
}
void k_consume(void *b) { static_cast<Kernel *>(b)->ring.pop_front(); }
void k_publish(void *) {}
int k_status(void *b, unsigned slot, cos_task_status *out)
{
	auto *k = static_cast<Kernel *>(b);
	*out = k->table.count(slot) ? k->table[slot] : cos_task_status{};
	return 0;
}
int k_prepare(void *b, int cpu, unsigned slot, unsigned gen, unsigned long long, unsigned)
{
	static_cast<Kernel *>(b)->prepared[cpu] = {slot, gen};
	return 0;
}
int k_shoot(void *b)
{
	auto *k = static_cast<Kernel *>(b);
	int n = 0;
	for (auto &[cpu, sg] : k->prepared) {
		if (k->on_cpu.count(cpu))	/* the task it displaced: back to the lord */
			k->post(COS_MSG_TASK_PREEMPTED, k->on_cpu[cpu], cpu, COS_PREEMPT_BY_COS);
		k->on_cpu[cpu] = sg.first;
		n++;
	}
	k->prepared.clear();
	return n;
}
unsigned k_shoot_status(void *, int) { return COS_SHOOT_OK; }
int k_wait(void *, unsigned long long) { return 0; }
int k_affinity(void *, int pid, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (int c = 0; c < 4; c++)
		if (pid != 103 || c == 1)	/* task 3 may run on CPU 1 only */
			CPU_SET(c, set);
	return 0;
}
cos_backend make_backend()
{
	cos_backend be{};
	be.peek = k_peek;
	be.consume = k_consume;
	be.publish = k_publish;
	be.task_status = k_status;
	be.prepare = k_prepare;
	be.shoot = k_shoot;
	be.shoot_status = k_shoot_status;
	be.wait = k_wait;
	be.affinity = k_affinity;
	return be;
}

/* Round robin on CPUs 0 and 1: free CPUs first, then a turn of slice_ns each. */
struct Rr {
	cos_taskq q{};
	unsigned long long slice_ns;
	unsigned long long turns = 0, ticks = 0;
	bool observe = false;		/* read the clock as an observer too (live only) */
};

void rr_tick(cos_sched *s, unsigned long long)
{
	static_cast<Rr *>(cos_sched_policy_ctx(s))->ticks++;
}

void rr_runnable(cos_sched *s, cos_task *t) { cos_taskq_push(&static_cast<Rr *>(cos_sched_policy_ctx(s))->q, t); }
void rr_preempted(cos_sched *s, cos_task *t, unsigned) { rr_runnable(s, t); }
void rr_schedule(cos_sched *s)
{
	auto *r = static_cast<Rr *>(cos_sched_policy_ctx(s));
	if (r->observe) {	/* a statistics line's clock read: no decision, not recorded */
		cos_trace_observing(true);
		(void)cos_now_ns();
		cos_trace_observing(false);
	}
	for (int cpu = 0; cpu < 2; cpu++) {
		cos_task *cur = cos_sched_cpu_task(s, cpu), *t = cos_sched_first_for(s, &r->q, cpu);
		if (!t)
			continue;
		if (cur && cos_now_ns() - cur->placed_at < r->slice_ns)
			continue;
		cos_sched_reason(s, cur ? 2 : 1);
		if (cos_sched_place(s, t, cpu, 0) == 0 && cur)
			r->turns++;
	}
}

cos_policy rr_policy(Rr *r)
{
	cos_policy p{};
	p.size = sizeof(p);
	p.name = "rr";
	p.task_runnable = rr_runnable;
	p.task_preempted = rr_preempted;
	p.task_yield = rr_runnable;
	p.schedule = rr_schedule;
	p.tick = rr_tick;
	p.ctx = r;
	return p;
}

cos_sched_opts opts_for(cpu_set_t *enclave)
{
	cos_sched_opts o{};
	o.size = sizeof(o);
	CPU_ZERO(enclave);
	CPU_SET(0, enclave);
	CPU_SET(1, enclave);
	o.lord.enclave = enclave;
	o.lord.enclave_size = sizeof(*enclave);
	o.lord.lord_cpu = 3;
	o.tick_ns = 700000;	/* a phase the recording must carry */
	return o;
}

/* A round-robin lord on the scripted kernel @k, its framework made (and freed at the end). */
struct RrLord {
	cos_backend be = make_backend();
	Rr r;
	cos_policy p;
	cpu_set_t enclave;
	cos_sched_opts o;
	cos_sched *s = nullptr;
	RrLord(Kernel &k, unsigned long long slice_ns, bool observe = false) : r{{}, slice_ns}
	{
		r.observe = observe;
		p = rr_policy(&r);
		o = opts_for(&enclave);
		REQUIRE(cos_sched_create_backend(&s, &p, &be, &k, &o, 16, 4) == 0);
	}
	~RrLord() { cos_sched_free(s); }
};

struct Recording {
	std::string path;
	unsigned long long turns = 0, lost = 0, ticks = 0;
	~Recording() { if (!getenv("COS_KEEP_TRACE")) unlink(path.c_str()); }
};

/*
 * Four tasks on two CPUs for @steps steps 200 us apart (task 3 allowed on CPU 1 only), woken
 * in the order @woken, recorded from step @from on through a ring of @ring bytes that is
 * drained every @drain_every steps (0: at the end only).  The policy also reads the clock as
 * an observer.
 */
void record(Recording &rec, unsigned long long slice_ns, int steps, size_t ring, int drain_every,
	    int from = 0, std::vector<unsigned> woken = {0, 1, 2, 3})
{
	char tmpl[] = "/tmp/cos-trace-XXXXXX";
	int out = mkstemp(tmpl);
	REQUIRE(out >= 0);
	rec.path = tmpl;
	Kernel k;
	RrLord lord(k, slice_ns, true);
	cos_sched *s = lord.s;
	Rr &r = lord.r;

	for (unsigned i = 0; i < 4; i++)
		k.post(COS_MSG_TASK_NEW, i, 3);
	for (unsigned i : woken)
		k.post(COS_MSG_TASK_RUNNABLE, i, 3);
	for (int i = 0; i < from; i++) {	/* the lord at work before anyone records it */
		cos_sched_step(s);
		usleep(200);
	}
	unsigned long long turns_before = r.turns, ticks_before = r.ticks;
	int fd = cos_sched_trace_start(s, ring, "--slice-us 1000");
	REQUIRE(fd >= 0);
	REQUIRE(cos_sched_trace_start(s, ring, nullptr) == -EBUSY);	/* one reader */
	struct stat st;
	REQUIRE(fstat(fd, &st) == 0);
	size_t map_size = (size_t)st.st_size;
	auto *h = static_cast<cos_trace_header *>(mmap(nullptr, map_size, PROT_READ | PROT_WRITE,
						      MAP_SHARED, fd, 0));
	REQUIRE(h != MAP_FAILED);
	REQUIRE(ftruncate(fd, 4096) != 0);	/* sealed: the reader cannot shrink it */

	for (int i = 0; i < steps; i++) {
		cos_sched_step(s);
		if (i == 10)		/* a task blocks and comes back: messages amid the turns */
			k.post(COS_MSG_TASK_BLOCKED, k.on_cpu[0], 0);
		if (i == 14)
			k.post(COS_MSG_TASK_RUNNABLE, 0, 0);
		usleep(200);
		if (i == 0)
			REQUIRE(cos_trace_save_header(h, map_size, out) == 0);
		if (drain_every && i % drain_every == 0)
			REQUIRE(cos_trace_drain(h, map_size, out) >= 0);
	}
	REQUIRE(cos_trace_drain(h, map_size, out) >= 0);
	rec.lost = h->lost_steps;
	rec.turns = r.turns - turns_before;
	rec.ticks = r.ticks - ticks_before;
	cos_sched_trace_stop(s);
	cos_sched_step(s);		/* the lord lets go of the ring */
	munmap(h, map_size);
	close(fd);
	close(out);
}

/* Replay @path with a round robin of @slice_ns; the differing steps. */
cos_replay_result replay(const std::string &path, unsigned long long slice_ns, unsigned long long *turns,
			 unsigned long long *ticks = nullptr)
{
	cos_replay *rp;
	int err = cos_replay_open(&rp, path.c_str());
	INFO(cos_strerror(err));
	REQUIRE(err == 0);
	CHECK(std::string(cos_replay_header(rp)->args) == "--slice-us 1000");
	CHECK(cos_replay_header(rp)->nr_cpus == 4);
	Rr r{{}, slice_ns};
	cos_policy p = rr_policy(&r);
	cpu_set_t enclave;
	cos_sched_opts o = opts_for(&enclave);
	cos_sched *s;
	REQUIRE(cos_sched_create_replay(&s, &p, &o, rp) == 0);
	cos_replay_result res{};
	FILE *report = fopen("/dev/null", "w");
	cos_replay_run(rp, s, report, &res);
	fclose(report);
	*turns = r.turns;
	if (ticks)
		*ticks = r.ticks;
	cos_sched_free(s);
	cos_replay_close(rp);
	return res;
}

} // namespace

TEST_CASE("a recorded run replays to the same decisions; a changed slice differs", "[trace]")
{
	Recording rec;
	record(rec, 1000000, 60, 1 << 20, 7);
	REQUIRE(rec.turns > 0);		/* turns ended: the clock mattered */
	REQUIRE(rec.lost == 0);

	unsigned long long turns;
	cos_replay_result same = replay(rec.path, 1000000, &turns);
	CHECK(same.differing == 0);
	CHECK(same.recorded == same.replayed);
	CHECK(same.recorded >= 2 + rec.turns);	/* the first two, the turns, a wake-up */
	CHECK(turns == rec.turns);
	CHECK(same.lost_steps == 0);

	cos_replay_result other = replay(rec.path, 100000000, &turns);
	CHECK(other.differing > 0);
	CHECK(turns == 0);		/* a 100 ms turn never ends in 12 ms */
}

TEST_CASE("a recording begun mid-run replays the same: the books with their turns and CPUs and the tick come with it", "[trace][midrun]")
{
	/* tasks placed, turns under way, a tick's phase set, before the recording begins */
	Recording rec;
	record(rec, 1000000, 60, 1 << 20, 7, 23);
	REQUIRE(rec.turns > 0);
	REQUIRE(rec.ticks > 0);
	unsigned long long turns, ticks;
	cos_replay_result same = replay(rec.path, 1000000, &turns, &ticks);
	CHECK(same.differing == 0);
	CHECK(same.recorded == same.replayed);
	CHECK(turns == rec.turns);
	CHECK(ticks == rec.ticks);
}

TEST_CASE("a recording begun while tasks wait out of slot order replays them in their queue's order", "[trace][midrun]")
{
	/* woken 3, 2, 1, 0: after a step 2 and 3 run, 1 and 0 wait in that order */
	Recording rec;
	record(rec, 1000000, 60, 1 << 20, 7, 1, {3, 2, 1, 0});
	REQUIRE(rec.turns > 0);
	unsigned long long turns;
	cos_replay_result same = replay(rec.path, 1000000, &turns);
	CHECK(same.differing == 0);
	CHECK(same.recorded == same.replayed);
	CHECK(turns == rec.turns);
}

TEST_CASE("a lord learns the waiting tasks in the order of their last messages, not their slots", "[trace][learn]")
{
	Kernel k;
	for (unsigned slot = 0; slot < 4; slot++) {	/* runnable in the order 2, 0, 3, 1 */
		static const unsigned long long seq[] = {20, 40, 10, 30};
		cos_task_status ts{};
		ts.gen = 1;
		ts.state = COS_TASK_WAITING;
		ts.pid = 100 + slot;
		ts.cpu = 3;
		ts.last_seq = seq[slot];
		k.table[slot] = ts;
	}
	RrLord lord(k, 1000000);
	std::vector<unsigned> order;
	for (cos_task *t = lord.r.q.head; t; t = t->q_next)
		order.push_back(t->slot);
	CHECK(order == std::vector<unsigned>{2, 0, 3, 1});
}

TEST_CASE("a small ring drained often wraps and loses nothing", "[trace]")
{
	Recording rec;
	record(rec, 1000000, 200, 4096, 1);
	REQUIRE(rec.lost == 0);
	struct stat st;
	REQUIRE(stat(rec.path.c_str(), &st) == 0);
	REQUIRE(st.st_size > 3 * 4096);		/* it went round the ring */
	unsigned long long turns;
	cos_replay_result same = replay(rec.path, 1000000, &turns);
	CHECK(same.differing == 0);
	CHECK(turns == rec.turns);
}

TEST_CASE("a ring that is not drained drops whole steps and says how many", "[trace]")
{
	Recording rec;
	record(rec, 1000000, 200, 4096, 0);
	REQUIRE(rec.lost > 0);

	cos_replay *rp;
	REQUIRE(cos_replay_open(&rp, rec.path.c_str()) == 0);	/* what was kept is whole */
	cos_replay_close(rp);
}

TEST_CASE("a damaged recording is refused, not replayed", "[trace]")
{
	Recording rec;
	record(rec, 1000000, 20, 1 << 20, 0);
	std::vector<unsigned char> good;
	{
		FILE *f = fopen(rec.path.c_str(), "rb");
		REQUIRE(f);
		int c;
		while ((c = fgetc(f)) != EOF)
			good.push_back((unsigned char)c);
		fclose(f);
	}
	REQUIRE(good.size() > sizeof(cos_trace_header) + 64);
	size_t first = sizeof(cos_trace_header);

	auto refused = [&](std::vector<unsigned char> bytes) {
		FILE *f = fopen(rec.path.c_str(), "wb");
		fwrite(bytes.data(), 1, bytes.size(), f);
		fclose(f);
		cos_replay *rp = nullptr;
		int err = cos_replay_open(&rp, rec.path.c_str());
		cos_replay_close(rp);
		return err == -EINVAL;
	};
	CHECK(refused(std::vector<unsigned char>(good.begin(), good.begin() + 100)));
	CHECK(refused(std::vector<unsigned char>(good.begin(), good.end() - 8)));	/* cut */
	auto bad = good;
	bad[0] ^= 1;						/* magic */
	CHECK(refused(bad));
	bad = good;
	reinterpret_cast<cos_trace_header *>(bad.data())->nr_cpus = 0;
	CHECK(refused(bad));
	bad = good;
	reinterpret_cast<cos_trace_rec *>(bad.data() + first)->size = 0;	/* a record of 0 bytes */
	CHECK(refused(bad));
	bad = good;
	reinterpret_cast<cos_trace_rec *>(bad.data() + first)->size = 0xfff0;
	CHECK(refused(bad));
	bad = good;
	reinterpret_cast<cos_trace_rec *>(bad.data() + first)->type = 999;
	CHECK(refused(bad));
	/* a placement on a CPU past the recording's */
	bad = good;
	for (size_t off = first; off < bad.size();) {
		auto *r = reinterpret_cast<cos_trace_rec *>(bad.data() + off);
		if (r->type == COS_TREC_PLACE) {
			r->cpu = 4096;
			break;
		}
		off += r->size;
	}
	CHECK(refused(bad));
	CHECK(!refused(good));
}

TEST_CASE("a reader's nonsense in the ring is caught, not followed", "[trace]")
{
	Kernel k;
	RrLord lord(k, 1000000);
	cos_sched *s = lord.s;
	/* a ring over 64 MiB is refused: a lord's memory is locked */
	CHECK(cos_sched_trace_start(s, (64u << 20) + 1, nullptr) == -EINVAL);
	CHECK(cos_sched_trace_start(s, SIZE_MAX, nullptr) == -EINVAL);	/* the worst a reader sends */
	int fd = cos_sched_trace_start(s, 0, nullptr);
	REQUIRE(fd >= 0);
	struct stat st;
	REQUIRE(fstat(fd, &st) == 0);
	auto *h = static_cast<cos_trace_header *>(mmap(nullptr, (size_t)st.st_size,
						      PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	REQUIRE(h != MAP_FAILED);
	CHECK(h->data_size == 16u << 20);
	k.post(COS_MSG_TASK_NEW, 0, 3);
	k.post(COS_MSG_TASK_RUNNABLE, 0, 3);
	cos_sched_step(s);
	__u64 head = h->head;
	REQUIRE(head > 0);
	h->tail = head + 4096;		/* a tail ahead of the head: the lord treats the ring as full */
	k.post(COS_MSG_TASK_BLOCKED, 0, 0);
	cos_sched_step(s);
	CHECK(h->head == head);
	CHECK(h->lost_steps == 1);
	int null = open("/dev/null", O_WRONLY);
	CHECK(cos_trace_drain(h, (size_t)st.st_size, null) == -EIO);
	h->tail = 0;
	CHECK(cos_trace_drain(h, (size_t)st.st_size, null) == (long long)head);
	CHECK(h->tail == head);
	h->data_size = 12345;		/* not a power of two */
	CHECK(cos_trace_drain(h, (size_t)st.st_size, null) == -EINVAL);
	close(null);
	munmap(h, (size_t)st.st_size);
	close(fd);
	cos_sched_trace_stop(s);	/* the lord's end frees the ring it still had */
}
