// test_lifecycle.cpp — a lord's life under races: REGISTER against UNREGISTER, the file's
// release against the lord thread's death, SIGKILLed lords.  Nothing may leak (debugfs
// cos/enclaves counts the enclaves not yet freed) and nothing may touch a freed enclave: the
// debug kernel's KASAN and debug objects (a timer or work freed while armed) report that, and
// each test fails on any report in the kernel log since it started.  debugfs cos/delay_* widen
// the windows.  See docs/testing.md and docs/design.md, "The lord's life".
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <random>
#include <sys/ioctl.h>
#include <thread>

#include "guest.h"

using namespace guest;

namespace {

const std::string dbg = "/sys/kernel/debug/cos/";

int enclaves_live()
{
	std::string v = read_file(dbg + "enclaves");
	return v.empty() ? -1 : std::stoi(v);
}

/* 0 once every enclave is freed (releases finish in a work item or after a grace period). */
int enclaves_after_release()
{
	int n = enclaves_live();
	for (int i = 0; i < 300 && n > 0; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		n = enclaves_live();
	}
	return n;
}


/* Reports of KASAN, debug objects, lockdep, WARN or BUG in the kernel log since construction. */
struct Splats {
	std::string marker;
	explicit Splats(const std::string &name)
	{
		marker = "cos-test-mark " + name + " " + std::to_string(now_ns());
		kmsg(marker);
	}
	std::string since() const
	{
		std::string out;
		sh("dmesg | sed -n '/" + marker + "/,$p' | grep -E "
		   "'KASAN|ODEBUG|BUG:|WARNING:|general protection|possible .*deadlock|"
		   "inconsistent lock|sched_ext: .* disabled' | head -n 20", &out);
		return out;
	}
};

/* struct cos_lord_args for a lord on CPU 0 with enclave {1}, the longest stall limits. */
struct RawArgs {
	RawLordArgs r;
	RawArgs()
	{
		r.a.stall_ms = 10000;	/* the longest stall timer period (100 ms) */
		r.a.starve_ms = 10000;
	}
};

int raw_register(int fd)
{
	RawArgs r;
	return r.r.register_on(fd);
}

} // namespace

TEST_CASE("REGISTER racing REGISTER and UNREGISTER on one file leaks no enclave", "[lord][lifecycle]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	REQUIRE(enclaves_after_release() == 0);
	Splats splats("register-race");
	int rounds = 300;
	int rc = in_child([&] {
		for (int i = 0; i < rounds; i++) {
			int fd = cos_open();
			if (fd < 0)
				return 10;
			std::atomic<int> arrived{0}, registering{2};
			auto start = [&] {	/* the three threads go at once */
				arrived++;
				while (arrived < 3)
					;
			};
			auto reg = [&] {
				start();
				raw_register(fd);
				registering--;
			};
			std::thread r1(reg), r2(reg);
			std::thread u([&] {
				start();
				while (registering > 0)
					ioctl(fd, COS_IOC_UNREGISTER);
			});
			r1.join();
			r2.join();
			u.join();
			close(fd);
		}
		return 0;
	});
	REQUIRE(rc == 0);
	INFO("every file is closed: no enclave may be left");
	CHECK(enclaves_after_release() == 0);
	CHECK(splats.since() == "");
}

TEST_CASE("UNREGISTER while REGISTER returns: the stall timer dies with the enclave", "[lord][lifecycle]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	Splats splats("register-unregister");
	for (int round = 0; round < 5; round++) {
		/* REGISTER sleeps after its file shows the enclave: a sibling unregisters meanwhile */
		DebugfsKnob d("delay_register_us", 200000);
		int rc = in_child([] {
			int fd = cos_open();
			if (fd < 0)
				return 10;
			std::atomic<bool> done{false};
			int unregistered = 0;
			std::thread u([&] {
				while (!done && !unregistered)
					unregistered = ioctl(fd, COS_IOC_UNREGISTER) == 0;
			});
			int err = raw_register(fd);
			done = true;
			u.join();
			close(fd);	/* freed at once, within the timer's period */
			return err ? 20 : unregistered ? 0 : 30;
		});
		REQUIRE(rc == 0);
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(300));	/* any stray timer fires */
	CHECK(enclaves_after_release() == 0);
	CHECK(splats.since() == "");
}

TEST_CASE("a lord thread dies while another thread releases the file: no use after free", "[lord][lifecycle]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	Splats splats("release-vs-exit");
	/* The release sleeps before it unregisters; the lord thread dies meanwhile, and its
	 * unregistration (exit work) sleeps past the release's end. */
	DebugfsKnob release("delay_release_us", 300000);
	DebugfsKnob exit_work("delay_exit_work_us", 600000);
	int rc = in_child([] {
		int fd = cos_open();
		if (fd < 0)
			return 10;
		std::atomic<int> step{0};
		int err = -1;
		std::thread lord([&] {
			err = raw_register(fd);
			step = 1;
			while (step < 2)
				std::this_thread::yield();
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
		});	/* exits: the lord thread's death */
		std::thread closer([&] {
			while (step < 1)
				std::this_thread::yield();
			step = 2;
			close(fd);	/* the last reference: the release */
		});
		lord.join();
		closer.join();
		std::this_thread::sleep_for(std::chrono::milliseconds(1000));	/* the exit work ends */
		return err ? 20 : 0;
	});
	REQUIRE(rc == 0);
	CHECK(enclaves_after_release() == 0);
	CHECK(splats.since() == "");
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("SIGKILLed two-thread lords leave nothing behind", "[lord][lifecycle][kill]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	Splats splats("sigkill-lords");
	const int kills = env("COS_TEST_LORD_KILLS").empty() ? 500 : std::stoi(env("COS_TEST_LORD_KILLS"));
	std::mt19937 rng(1);
	auto *ready = shared_new<std::atomic<int>>();
	for (int i = 0; i < kills; i++) {
		ready->store(0);
		pid_t pid = fork();
		if (pid == 0) {
			/* the lord (libcos: its regions mapped) in one thread, WAITing; another thread
			 * holds the same file and asks about the lord */
			cos_lord *l = nullptr;
			LordOpts lo({1}, 10000, 10000);
			std::thread other([&] {
				int fd = cos_open();
				cos_info info;
				for (;;)
					cos_get_info(fd, &info);
			});
			if (cos_lord_register(&l, &lo.o))
				_exit(1);
			ready->store(1);
			for (;;) {
				while (cos_lord_peek(l))
					cos_lord_consume(l);
				cos_lord_wait(l, 1000000);
			}
		}
		REQUIRE(pid > 0);
		for (int w = 0; w < 2000 && !ready->load(); w++)
			std::this_thread::sleep_for(std::chrono::microseconds(500));
		std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
		kill(pid, SIGKILL);
		int st = 0;
		waitpid(pid, &st, 0);
		REQUIRE(WIFSIGNALED(st));	/* neither failed to register nor exited on its own */
	}
	shared_delete(ready);
	CHECK(enclaves_after_release() == 0);
	/* the module still works: a new lord registers and is the one GET_INFO names */
	int rc = in_child([] {
		LordOpts lo({1});
		cos_lord *l = nullptr;
		if (cos_lord_register(&l, &lo.o))
			return 10;
		cos_info info;
		int ret = cos_get_info(cos_lord_fd(l), &info) ? 11 :
			  (pid_t)info.lord_pid != (pid_t)syscall(SYS_gettid) ? 12 : 0;
		cos_lord_destroy(l);
		return ret;
	});
	CHECK(rc == 0);
	CHECK(splats.since() == "");
	CHECK(sched_ext_state() == "enabled");
}
