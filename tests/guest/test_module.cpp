// test_module.cpp — loading and unloading cos.ko, and how libcos and cosctl behave without it.
// Leaves the module loaded, as the suite found it.  See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <thread>
#include <vector>

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern "C" {
#include <cos.h>
}
#include "guest.h"

using namespace guest;

namespace {
void reload()
{
	if (!module_loaded())
		REQUIRE(load_module(build_path("kmod/cos.ko")) == 0);
}

/* cos.ko reloaded with @params for the scope (and an open /dev/cos); as before at the end. */
struct ModuleWith {
	int fd = -1;
	uint32_t max_tasks;
	ModuleWith(const char *params, uint32_t max) : max_tasks(max)
	{
		REQUIRE(unload_module() == 0);
		int kofd = open(build_path("kmod/cos.ko").c_str(), O_RDONLY | O_CLOEXEC);
		REQUIRE(kofd >= 0);
		int err = syscall(SYS_finit_module, kofd, params, 0) ? errno : 0;
		close(kofd);
		REQUIRE(err == 0);
		fd = cos_open();
		REQUIRE(fd >= 0);
	}
	/* the COS tasks that hold a slot now */
	uint32_t tasks() const
	{
		struct cos_info info;
		REQUIRE(cos_get_info(fd, &info) == 0);
		REQUIRE(info.max_tasks == max_tasks);
		return info.tasks;
	}
	/* wait (up to 5 s) until @n tasks hold a slot; returns how many do */
	uint32_t wait_tasks(uint32_t n) const
	{
		uint32_t now = tasks();
		for (int i = 0; i < 2500 && now != n; i++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
			now = tasks();
		}
		return now;
	}
	~ModuleWith()
	{
		close(fd);
		CHECK(unload_module() == 0);
		reload();
	}
};
} // namespace

TEST_CASE("the module unloads when nothing holds it and loads again", "[module]")
{
	REQUIRE(module_loaded());
	REQUIRE(sched_ext_state() == "disabled");
	CHECK(unload_module() == 0);
	CHECK_FALSE(module_loaded());
	CHECK(access(COS_DEVICE_PATH, F_OK) != 0);
	CHECK(load_module(build_path("kmod/cos.ko")) == 0);
	CHECK(module_loaded());
	CHECK(access(COS_DEVICE_PATH, F_OK) == 0);
}

TEST_CASE("after a shim attach/detach the module unloads (retrying the transient EAGAIN)", "[module][shim]")
{
	struct cos_shim *shim = nullptr;
	REQUIRE(cos_shim_attach(&shim, nullptr) == 0);
	REQUIRE(cos_shim_detach(shim) == 0);
	CHECK(unload_module() == 0);
	reload();
}

TEST_CASE("cosctl shim detach returns once the module can be unloaded: detach; rmmod works", "[module][shim][cosctl]")
{
	const std::string cosctl = build_path("bin/cosctl");
	for (int i = 0; i < 3; i++) {
		std::string out;
		REQUIRE(sh(cosctl + " shim attach 2>&1", &out) == 0);
		REQUIRE(sh(cosctl + " shim detach 2>&1", &out) == 0);
		INFO("round " << i << ": delete_module right after the detach, no retry");
		CHECK(unload_module_once() == 0);
		reload();
	}
}

TEST_CASE("without the module, libcos and cosctl say how to load it", "[module][libcos]")
{
	REQUIRE(unload_module() == 0);
	int fd = cos_open();
	CHECK(fd == -ENODEV);
	CHECK(std::string(cos_strerror(fd)).find("modprobe cos") != std::string::npos);
	struct cos_shim *shim = nullptr;
	int err = cos_shim_attach(&shim, nullptr);
	CHECK(err == -ENODEV);
	CHECK(sched_ext_state() == "disabled");
	std::string out;
	CHECK(sh("cosctl status", &out) == 0);
	CHECK(out.find("module:     not loaded (cosctl load)") != std::string::npos);
	CHECK(sh("cosctl --json status", &out) == 0);
	CHECK(out.find("\"loaded\":false") != std::string::npos);
	CHECK(sh("cosctl status --check", &out) == 1);
	CHECK(out.find("cos.ko is not loaded: cosctl load") == 0);
	CHECK(sh("cosctl --version", &out) == 0);
	CHECK(out.find("cos.ko not loaded") != std::string::npos);
	reload();
}

/* Loading build variant @ko fails with @err and says @why in the kernel log; cos.ko comes back. */
static void check_refused(const char *ko, int err, const char *why)
{
	REQUIRE(unload_module() == 0);
	CHECK(load_module(build_path(ko)) == err);
	CHECK_FALSE(module_loaded());
	std::string log;
	sh("dmesg | tail -n 20", &log);
	CHECK(log.find(why) != std::string::npos);
	reload();
}

TEST_CASE("a module built without BTF refuses to load", "[module][errors]")
{
	check_refused("kmod/cos-nobtf.ko", ENOENT, "cos: module has no BTF");
}

TEST_CASE("a module built with a distilled base BTF refuses to load", "[module][errors]")
{
	check_refused("kmod/cos-distilled.ko", EINVAL, "cos: module BTF has a distilled base");
}

TEST_CASE("20 load/unload cycles", "[module][stress]")
{
	for (int i = 0; i < 20; i++) {
		CAPTURE(i);
		REQUIRE(unload_module() == 0);
		REQUIRE(load_module(build_path("kmod/cos.ko")) == 0);
	}
	int fd = cos_open();
	REQUIRE(fd >= 0);
	close(fd);
}

TEST_CASE("cosctl load/unload go through libkmod and say what is wrong", "[module][cosctl]")
{
	const std::string cosctl = build_path("bin/cosctl"), ko = build_path("kmod/cos.ko");
	std::string out;
	REQUIRE(sh(cosctl + " unload", &out) == 0);
	CHECK(out == "cos.ko unloaded\n");
	CHECK_FALSE(module_loaded());
	CHECK(sh(cosctl + " unload", &out) == 0);
	CHECK(out == "cos.ko is not loaded\n");
	/* the guest's kernel has no cos.ko installed (unless a DKMS install put one there) */
	if (sh("modinfo -n cos >/dev/null 2>&1") != 0) {
		CHECK(sh(cosctl + " load 2>&1", &out) == 1);
		CAPTURE(out);
		CHECK(out.find("not installed for the running kernel") != std::string::npos);
		CHECK(out.find("--path") != std::string::npos);
		CHECK_FALSE(module_loaded());
	}
	CHECK(sh(cosctl + " load --path /nonexistent/cos.ko 2>&1", &out) == 1);
	CHECK(out.find("/nonexistent/cos.ko") != std::string::npos);
	CHECK(sh(cosctl + " load --path " + ko + " max_tasks=5 2>&1", &out) == 1);	/* below 64 */
	CHECK(out.find("refused") != std::string::npos);
	CHECK_FALSE(module_loaded());
	CHECK(sh(cosctl + " load --path " + ko + " max_tasks=128", &out) == 0);
	CHECK(out == "cos.ko loaded from " + ko + "\n");
	REQUIRE(module_loaded());
	int fd = cos_open();
	REQUIRE(fd >= 0);
	struct cos_info info;
	REQUIRE(cos_get_info(fd, &info) == 0);
	CHECK(info.max_tasks == 128);			/* the parameter reached the module */
	CHECK(sh(cosctl + " unload 2>&1", &out) == 1);	/* our open /dev/cos holds it */
	CHECK(out.find("in use") != std::string::npos);
	CHECK(std::count(out.begin(), out.end(), '\n') == 1);	/* that line only: no libkmod noise */
	close(fd);
	CHECK(sh(cosctl + " --json load", &out) == 0);
	CHECK(out == "{\"loaded\":true,\"already\":true}\n");
	CHECK(sh(cosctl + " --json unload", &out) == 0);
	CHECK(out == "{\"loaded\":false,\"already\":false}\n");
	CHECK(sh(cosctl + " load --path " + ko, &out) == 0);
	reload();
	CHECK(sh(cosctl + " load bogus 2>/dev/null") == 2);
}

TEST_CASE("a full task table: COS tasks past max_tasks get no slot and still run; freed slots are reused", "[module][tasks]")
{
	constexpr int max_tasks = 64, threads = 80;
	ModuleWith mod("max_tasks=64", max_tasks);
	Shim shim;
	/* twice: the second round takes the slots the first one freed (the free-slot FIFO wraps) */
	for (int round = 0; round < 2; round++) {
		CAPTURE(round);
		std::atomic<int> ready{0}, finished{0};
		std::atomic<bool> go{false};
		std::vector<std::thread> ts;
		for (int i = 0; i < threads; i++)
			ts.emplace_back([&] {
				if (become_cos_task() == 0)
					ready++;
				while (!go)
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
				volatile unsigned long n = 0;
				for (int k = 0; k < 100000; k++)
					n = n + k;
				finished++;
			});
		for (int i = 0; i < 5000 && ready < threads; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		CHECK(ready == threads);		/* SCHED_EXT is granted past the table's size */
		/*
		 * But only max_tasks hold a slot.  Waited for, not read once: a task refused a slot
		 * asks again at its next event, so a slot that a thread of the last round takes on
		 * its way out and gives back at its exit is taken again only a moment later.
		 */
		CHECK(mod.wait_tasks(max_tasks) == (uint32_t)max_tasks);
		go = true;
		for (auto &t : ts)
			t.join();
		CHECK(finished == threads);		/* the ones without a slot ran too */
		CHECK(mod.wait_tasks(0) == 0);		/* every slot came back */
	}
}

/*
 * Root in a container without a user namespace is root to the per-user limit: a limit per
 * cgroup holds it, whoever runs the tasks; the root cgroup (the host's own) is exempt.
 */
TEST_CASE("no container fills the table: a slot limit per cgroup, root's tasks too", "[module][tasks][cgroups]")
{
	constexpr int max_tasks = 64, per_cgroup = 16, threads = 30;
	ModuleWith mod("max_tasks=64 max_tasks_per_cgroup=16", max_tasks);
	Shim shim;
	const std::string cg = "/sys/fs/cgroup/cos-slots";
	REQUIRE((mkdir(cg.c_str(), 0755) == 0 || errno == EEXIST));
	struct Sync { std::atomic<int> ready; std::atomic<bool> stop; };
	Sync *box = shared_new<Sync>();
	pid_t child = fork();
	if (child == 0) {	/* root, in a cgroup of its own: a container's root */
		std::ofstream(cg + "/cgroup.procs") << "0" << std::flush;
		std::vector<std::thread> ts;
		for (int i = 0; i < threads; i++)
			ts.emplace_back([=] {
				if (become_cos_task() == 0)
					box->ready++;
				while (!box->stop)
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
			});
		for (auto &th : ts)
			th.join();
		_exit(0);
	}
	for (int i = 0; i < 5000 && box->ready < threads; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	CHECK(box->ready == threads);			/* SCHED_EXT is granted to all */
	CHECK(mod.wait_tasks(per_cgroup) == (uint32_t)per_cgroup);	/* only the cgroup's share got slots */
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	CHECK(mod.tasks() == (uint32_t)per_cgroup);
	/* root's tasks in the root cgroup: all get slots */
	std::atomic<int> ready{0};
	std::atomic<bool> stop{false};
	std::vector<std::thread> ts;
	for (int i = 0; i < threads; i++)
		ts.emplace_back([&] {
			if (become_cos_task() == 0)
				ready++;
			while (!stop)
				std::this_thread::sleep_for(std::chrono::milliseconds(2));
		});
	for (int i = 0; i < 5000 && ready < threads; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	CHECK(mod.wait_tasks(per_cgroup + threads) == (uint32_t)(per_cgroup + threads));
	stop = true;
	for (auto &th : ts)
		th.join();
	box->stop = true;
	int st = -1;
	waitpid(child, &st, 0);
	CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
	shared_delete(box);
	CHECK(mod.wait_tasks(0) == 0);			/* every slot came back, per cgroup too */
	rmdir(cg.c_str());
}

TEST_CASE("no user locks the others out: a slot limit per user, root exempt", "[module][tasks][users]")
{
	constexpr int max_tasks = 64, per_user = 16, threads = 30;
	ModuleWith mod("max_tasks=64 max_tasks_per_user=16", max_tasks);
	/* @n COS threads of the calling process, alive until *@stop; *@ready counts them */
	auto spawn = [](int n, std::atomic<int> *ready, std::atomic<bool> *stop) {
		std::vector<std::thread> ts;
		for (int i = 0; i < n; i++)
			ts.emplace_back([=] {
				if (become_cos_task() == 0)
					(*ready)++;
				while (!*stop)
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
			});
		return ts;
	};
	Shim shim;
	struct Sync { std::atomic<int> ready; std::atomic<bool> stop, shrink; };
	constexpr int kept = 10;	/* the user's threads left after it shrinks */
	Sync *user = shared_new<Sync>();
	pid_t child = fork();
	if (child == 0) {	/* an unprivileged user (nobody) with more COS threads than its share */
		if (setgroups(0, nullptr) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		std::vector<std::thread> ts;
		for (int i = 0; i < threads; i++)
			ts.emplace_back([=] {
				if (become_cos_task() == 0)
					user->ready++;
				while (!user->stop && !(user->shrink && i >= kept))
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
			});
		for (auto &th : ts)
			th.join();
		_exit(0);
	}
	for (int i = 0; i < 5000 && user->ready < threads; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	CHECK(user->ready == threads);			/* SCHED_EXT is granted to all */
	/* a thread gets its slot at its first scheduling event as a COS task */
	CHECK(mod.wait_tasks(per_user) == (uint32_t)per_user);	/* but only its share got slots */
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	CHECK(mod.tasks() == (uint32_t)per_user);	/* and no more came later */
	/* root still gets slots for all of its tasks */
	std::atomic<int> ready{0};
	std::atomic<bool> stop{false};
	auto ts = spawn(threads, &ready, &stop);
	for (int i = 0; i < 5000 && ready < threads; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	CHECK(mod.wait_tasks(per_user + threads) == (uint32_t)(per_user + threads));
	stop = true;
	for (auto &th : ts)
		th.join();
	CHECK(mod.wait_tasks(per_user) == (uint32_t)per_user);
	/*
	 * The user's refusals are cached until a slot is released: once 20 of its threads exit
	 * (some of them with slots), every one of the 10 left gets a slot at its next wake-up.
	 */
	user->shrink = true;
	CHECK(mod.wait_tasks(kept) == (uint32_t)kept);
	user->stop = true;
	int st = -1;
	waitpid(child, &st, 0);
	CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
	shared_delete(user);
	CHECK(mod.wait_tasks(0) == 0);			/* every slot came back, per user too */
}
