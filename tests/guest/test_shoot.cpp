// test_shoot.cpp — COS_IOC_SHOOT validation (ioctl and io_uring): every bad request gets its
// documented per-slot status or errno, the other slots of the same call still work, and sched_ext
// is never ejected.
#include <catch2/catch_test_macros.hpp>

#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <new>
#include <sched.h>
#include <sys/ioctl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/syscall.h>

extern "C" {
#include <cos.h>
}
#include "guest.h"

using namespace guest;

namespace {

/* Shared with the child that owns the COS tasks. */
struct Board {
	std::atomic<int> ready;
	std::atomic<int> go_exit;
	pid_t tids[4];
};

/*
 * The test thread is the lord of CPUs {1, 2} (lord on 0).  A child process holds four COS
 * threads that wait for it: 0 and 1 may run anywhere, 2 only on CPU 1, 3 exits once shot.  The lord never shoots on its own: each test shoots by hand.
 */
struct Fixture {
	cos_lord *lord = nullptr;
	Board *board;
	pid_t child = -1;
	int wake3[2];		/* a pipe that thread 3 blocks on */
	std::map<pid_t, std::pair<uint32_t, uint32_t>> task;	/* tid -> slot, gen */
	std::set<pid_t> dead;					/* tids seen in TASK_DEAD */

	Fixture()
	{
		LordOpts lo({1, 2}, 10000, 10000);	/* tasks wait for hand-made shoots */
		REQUIRE(cos_lord_register(&lord, &lo.o) == 0);
		board = shared_new<Board>();
		REQUIRE(pipe(wake3) == 0);
		child = fork();
		if (child == 0)
			_exit(child_main());
		while (board->ready < 4)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		drain();
	}

	~Fixture()
	{
		board->go_exit = 1;
		(void)!write(wake3[1], "x", 1);
		cos_lord_destroy(lord);		/* waiting tasks go to the fair policy and finish */
		int st;
		waitpid(child, &st, 0);
		shared_delete(board);
		close(wake3[0]);
		close(wake3[1]);
	}

	int child_main()
	{
		unpin_self();		/* the lord's pinning to CPU 0 was inherited: undo it */
		std::vector<std::thread> ts;
		for (int i = 0; i < 4; i++)
			ts.emplace_back([this, i] {
				board->tids[i] = gettid();
				if (i == 2) {
					cpu_set_t s;
					CPU_ZERO(&s);
					CPU_SET(1, &s);
					sched_setaffinity(0, sizeof(s), &s);
				}
				/*
				 * Count before becoming a COS task: one preempted right after would wait
				 * for a lord that shoots only by hand, and the fixture for it in vain.
				 */
				board->ready++;
				become_cos_task();
				if (i == 3) {	/* block until the test writes, wait for the lord, exit */
					char c;
					(void)!read(wake3[0], &c, 1);
					return;
				}
				/* each wake-up waits for a shoot; once shot, go back to sleep */
				while (!board->go_exit)
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
			});
		for (auto &t : ts)
			t.join();
		return 0;
	}

	/* Consume every pending message, learning slots and generations. */
	int drain()
	{
		int n = 0;
		const cos_msg *m;
		while ((m = cos_lord_peek(lord))) {
			if (m->type == COS_MSG_TASK_NEW || m->type == COS_MSG_TASK_RUNNABLE)
				task[m->pid] = {m->slot, m->gen};
			if (m->type == COS_MSG_TASK_DEAD)
				dead.insert(m->pid);
			cos_lord_consume(lord);
			n++;
		}
		cos_lord_publish(lord);
		return n;
	}

	/* Wait until task i waits for a shoot; returns its (slot, gen). */
	std::pair<uint32_t, uint32_t> waiting(int i)
	{
		for (int tries = 0; tries < 5000; tries++) {
			drain();
			auto it = task.find(board->tids[i]);
			if (it != task.end()) {
				cos_task_status st;
				cos_lord_task_status(lord, it->second.first, &st);
				if (st.state == COS_TASK_WAITING && st.gen == it->second.second &&
				    st.last_seq <= cos_lord_consumed(lord))
					return it->second;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		auto it = task.find(board->tids[i]);
		cos_task_status st = {};
		if (it != task.end())
			cos_lord_task_status(lord, it->second.first, &st);
		FAIL("task " << i << " (tid " << board->tids[i] << ") never waited for the lord: known "
			     << (it != task.end()) << " state " << st.state << " cpu " << st.cpu
			     << " last_seq " << st.last_seq << " consumed " << cos_lord_consumed(lord)
			     << " active " << cos_lord_ctl(lord)->lord_active);
		return {0, 0};
	}

	unsigned shoot1(int cpu, uint32_t slot, uint32_t gen, unsigned flags = 0)
	{
		REQUIRE(cos_lord_prepare(lord, cpu, slot, gen, 0) == 0);
		int placed = cos_lord_shoot(lord, flags);
		REQUIRE(placed >= 0);
		unsigned st = cos_lord_shoot_status(lord, cpu);
		CHECK(placed == (st == COS_SHOOT_OK ? 1 : 0));
		return st;
	}
};

long raw_shoot(int fd, cos_shoot_args *a) { return ioctl(fd, COS_IOC_SHOOT, a) < 0 ? -errno : 0; }

/* One IORING_OP_URING_CMD on @fd; the CQE's res (or the submission's -errno). */
int uring_cmd(int fd, uint32_t cmd_op, const cos_uring_shoot &cmd)
{
	io_uring ring;
	int ret = io_uring_queue_init(4, &ring, 0);
	if (ret)
		return ret;
	io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, nullptr, 0, 0);
	sqe->cmd_op = cmd_op;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret >= 0) {
		io_uring_cqe *cqe;
		ret = io_uring_peek_cqe(&ring, &cqe);
		if (ret == 0) {
			ret = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
	return ret;
}
} // namespace

TEST_CASE("shoot validation: each bad request gets its status, good ones still work", "[shoot][validation]")
{
	/*
	 * One shim for every section (Catch2 re-runs the test case per section; the shim goes at
	 * exit): each attach and detach costs ~2 s in the emulator and flips static keys (README).
	 */
	static Shim shim;
	REQUIRE_LORD_SUPPORT();
	Fixture f;
	auto [slot0, gen0] = f.waiting(0);

	SECTION("a stale generation") { CHECK(f.shoot1(1, slot0, gen0 + 1) == COS_SHOOT_BAD_GEN); }
	SECTION("a slot out of range") { CHECK(f.shoot1(1, 1u << 30, 1) == COS_SHOOT_BAD_SLOT); }
	SECTION("a dead task")
	{
		pid_t tid = f.board->tids[3];
		REQUIRE(write(f.wake3[1], "x", 1) == 1);
		auto [s3, g3] = f.waiting(3);
		REQUIRE(f.shoot1(1, s3, g3) == COS_SHOOT_OK);	/* it runs and exits */
		for (int i = 0; i < 5000 && !f.dead.count(tid); i++) {
			f.drain();
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		REQUIRE(f.dead.count(tid));	/* TASK_DEAD posted: its slot is free */
		auto [s, g] = f.task[tid];
		unsigned r = f.shoot1(1, s, g);
		CAPTURE(cos_shoot_status_name(r));
		CHECK((r == COS_SHOOT_BAD_SLOT || r == COS_SHOOT_BAD_GEN));
	}
	SECTION("a CPU outside the enclave") { CHECK(f.shoot1(3, slot0, gen0) == COS_SHOOT_BAD_CPU); }
	SECTION("a local shoot: the lord's own CPU runs the task, then the lord again")
	{
		auto [s2, g2] = f.waiting(2);
		CHECK(f.shoot1(0, s2, g2) == COS_SHOOT_AFFINITY);	/* task 2 may run on CPU 1 only */
		pid_t tid = f.board->tids[0];
		CHECK(f.shoot1(0, slot0, gen0) == COS_SHOOT_OK);
		/* the lord (this thread) is back once the task sleeps again, on the lord's CPU */
		CHECK(sched_getcpu() == 0);
		int blocked_on = -1;
		std::string seen;	/* the task's messages, for the failure report */
		for (int i = 0; i < 5000 && blocked_on < 0; i++) {
			const cos_msg *m;
			while ((m = cos_lord_peek(f.lord))) {
				if (m->pid == (uint32_t)tid) {
					seen += std::string(cos_msg_type_name(m->type)) + "@" +
						std::to_string(m->cpu) + "/" + std::to_string(m->arg) + " ";
					if (m->type == COS_MSG_TASK_BLOCKED && blocked_on < 0)
						blocked_on = m->cpu;
				}
				cos_lord_consume(f.lord);
			}
			cos_lord_publish(f.lord);
			if (blocked_on < 0)
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		cos_task_status st = {};
		cos_lord_task_status(f.lord, slot0, &st);
		INFO("messages of the task: " << seen << "; now state " << st.state << " cpu " << st.cpu);
		CHECK(blocked_on == 0);		/* it ran (and went to sleep) on CPU 0 */
		CHECK(f.shoot1(0, 1u << 30, 1) == COS_SHOOT_BAD_SLOT);	/* validated like any other */
	}
	SECTION("a CPU outside the task's allowed CPUs")
	{
		auto [s2, g2] = f.waiting(2);
		CHECK(f.shoot1(2, s2, g2) == COS_SHOOT_AFFINITY);
		CHECK(f.shoot1(1, s2, g2) == COS_SHOOT_OK);
	}
	SECTION("a task that is already placed or running")
	{
		CHECK(f.shoot1(1, slot0, gen0) == COS_SHOOT_OK);
		CHECK(f.shoot1(2, slot0, gen0) == COS_SHOOT_NOT_WAITING);
	}
	SECTION("garbage in a slot")
	{
		cos_shoot_slot *slot = cos_lord_shoot_slot(f.lord, 1);
		REQUIRE(slot);
		REQUIRE(cos_lord_prepare(f.lord, 1, slot0, gen0, 0) == 0);
		slot->flags = COS_SHOOT_F_VALID | 0x40;		/* unknown flag bits */
		CHECK(cos_lord_shoot(f.lord, 0) == 0);
		CHECK(cos_lord_shoot_status(f.lord, 1) == COS_SHOOT_BAD_FLAGS);
		CHECK((slot->flags & COS_SHOOT_F_VALID) == 0);	/* taken, whatever the outcome */
		REQUIRE(cos_lord_prepare(f.lord, 1, slot0, gen0, 0) == 0);
		slot->__reserved[3] = 0xdead;			/* reserved bytes set */
		CHECK(cos_lord_shoot(f.lord, 0) == 0);
		CHECK(cos_lord_shoot_status(f.lord, 1) == COS_SHOOT_BAD_FLAGS);
		slot->__reserved[3] = 0;
		CHECK(f.shoot1(1, slot0, gen0) == COS_SHOOT_OK);	/* and a clean slot works */
	}
	SECTION("the lord is behind on the task's messages")
	{
		/* change the task's affinity: an AFFINITY message the lord does not consume */
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(1, &s);
		CPU_SET(2, &s);
		REQUIRE(sched_setaffinity(f.board->tids[0], sizeof(s), &s) == 0);
		CHECK(f.shoot1(1, slot0, gen0) == COS_SHOOT_BEHIND);
		f.drain();
		auto [s0, g0] = f.waiting(0);
		CHECK(f.shoot1(1, s0, g0) == COS_SHOOT_OK);
	}
	SECTION("strict mode refuses while any message is unconsumed")
	{
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(1, &s);
		CPU_SET(2, &s);
		REQUIRE(sched_setaffinity(f.board->tids[1], sizeof(s), &s) == 0);	/* a message */
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
		REQUIRE(cos_lord_peek(f.lord) != nullptr);
		CHECK(f.shoot1(1, slot0, gen0, COS_SHOOT_STRICT) == COS_SHOOT_STALE_SEQ);
		f.drain();
		auto [s0, g0] = f.waiting(0);
		CHECK(f.shoot1(1, s0, g0, COS_SHOOT_STRICT) == COS_SHOOT_OK);
	}
	SECTION("one bad and one good slot in the same call")
	{
		auto [s1, g1] = f.waiting(1);
		REQUIRE(cos_lord_prepare(f.lord, 1, slot0, gen0 + 7, 0) == 0);	/* bad gen */
		REQUIRE(cos_lord_prepare(f.lord, 2, s1, g1, 0) == 0);
		CHECK(cos_lord_shoot(f.lord, 0) == 1);
		CHECK(cos_lord_shoot_status(f.lord, 1) == COS_SHOOT_BAD_GEN);
		CHECK(cos_lord_shoot_status(f.lord, 2) == COS_SHOOT_OK);
	}
	SECTION("a CPU in the mask without a request is reported empty")
	{
		uint64_t mask = 1u << 1;
		cos_shoot_args a = {};
		a.size = sizeof(a);
		a.consumed = cos_lord_consumed(f.lord);
		a.cpumask_size = sizeof(mask);
		a.cpumask = (uintptr_t)&mask;
		CHECK(ioctl(cos_lord_fd(f.lord), COS_IOC_SHOOT, &a) == 0);
		CHECK(cos_lord_shoot_status(f.lord, 1) == COS_SHOOT_EMPTY);
	}
	SECTION("bad calls fail whole, with an errno")
	{
		int fd = cos_lord_fd(f.lord);
		uint64_t mask = 1u << 1;
		cos_shoot_args a = {};
		a.size = sizeof(a);
		a.consumed = cos_lord_consumed(f.lord);
		a.cpumask_size = sizeof(mask);
		a.cpumask = 8;			/* bad pointer */
		CHECK(raw_shoot(fd, &a) == -EFAULT);
		std::vector<uint8_t> huge(1 << 20, 0);
		a.cpumask = (uintptr_t)huge.data();
		a.cpumask_size = huge.size();	/* oversized */
		CHECK(raw_shoot(fd, &a) == -EINVAL);
		std::vector<uint64_t> wide(64, 0);
		wide[60] = 1;			/* a CPU id far beyond nr_cpu_ids */
		a.cpumask = (uintptr_t)wide.data();
		a.cpumask_size = wide.size() * 8;
		CHECK(raw_shoot(fd, &a) == -EINVAL);
		a.cpumask = (uintptr_t)&mask;
		a.cpumask_size = sizeof(mask);
		a.flags = 0x100;		/* unknown flags */
		CHECK(raw_shoot(fd, &a) == -EINVAL);
		a.flags = 0;
		a.size = 12;			/* unknown size */
		CHECK(raw_shoot(fd, &a) == -EINVAL);
	}
	SECTION("only the lord may shoot")
	{
		uint64_t mask = 1u << 1;
		cos_shoot_args a = {};
		a.size = sizeof(a);
		a.cpumask_size = sizeof(mask);
		a.cpumask = (uintptr_t)&mask;
		int other = cos_open();			/* a file without a lord */
		REQUIRE(other >= 0);
		CHECK(raw_shoot(other, &a) == -EPERM);
		close(other);
		int lord_fd = cos_lord_fd(f.lord);
		int rc = in_child([&] {			/* another process with the lord's file */
			return raw_shoot(lord_fd, &a) == -EPERM ? 0 : 1;
		});
		CHECK(rc == 0);
	}
	SECTION("through io_uring: the same statuses; bad commands fail with an errno")
	{
		int fd = cos_lord_fd(f.lord);
		auto [s2, g2] = f.waiting(2);
		uint64_t mask = (1u << 1) | (1u << 2);
		cos_shoot_args a = {};
		a.size = sizeof(a);
		a.consumed = cos_lord_consumed(f.lord);
		a.cpumask_size = sizeof(mask);
		a.cpumask = (uintptr_t)&mask;
		cos_uring_shoot cmd = {};
		cmd.args = (uintptr_t)&a;
		REQUIRE(cos_lord_prepare(f.lord, 1, slot0, gen0 + 3, 0) == 0);	/* bad gen */
		REQUIRE(cos_lord_prepare(f.lord, 2, s2, g2, 0) == 0);		/* CPU 1 only */
		CHECK(uring_cmd(fd, COS_URING_SHOOT, cmd) == 0);
		CHECK(cos_lord_shoot_status(f.lord, 1) == COS_SHOOT_BAD_GEN);
		CHECK(cos_lord_shoot_status(f.lord, 2) == COS_SHOOT_AFFINITY);
		mask = 1u << 1;
		REQUIRE(cos_lord_prepare(f.lord, 1, s2, g2, 0) == 0);
		CHECK(uring_cmd(fd, COS_URING_SHOOT, cmd) == 1);		/* placed */
		CHECK(cos_lord_shoot_status(f.lord, 1) == COS_SHOOT_OK);
		CHECK(uring_cmd(fd, 0x77, cmd) == -EOPNOTSUPP);		/* unknown command */
		cmd.flags = 1;
		CHECK(uring_cmd(fd, COS_URING_SHOOT, cmd) == -EINVAL);		/* unknown flags */
		cmd.flags = 0;
		cmd.args = 8;
		CHECK(uring_cmd(fd, COS_URING_SHOOT, cmd) == -EFAULT);		/* bad pointer */
		cmd.args = (uintptr_t)&a;
		int rc = in_child([&] {			/* another process with the lord's file */
			return uring_cmd(fd, COS_URING_SHOOT, cmd) == -EPERM ? 0 : 1;
		});
		CHECK(rc == 0);
		int other = cos_open();			/* a file without a lord */
		REQUIRE(other >= 0);
		CHECK(uring_cmd(other, COS_URING_SHOOT, cmd) == -EPERM);
		close(other);
	}
	CHECK(sched_ext_state() == "enabled");
	CHECK(sched_ext_ops() == COS_SHIM_NAME);
}
