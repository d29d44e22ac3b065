// test_partial.cpp — partial mode: only COS tasks on sched_ext, the cpuset partition that keeps
// their CPUs, set up and removed; lords inside it, fallback, refusals.  See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <chrono>
#include <fstream>
#include <thread>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern "C" {
#include <cos.h>
}
#include "guest.h"

using namespace guest;

namespace {

const std::string PART = COS_PARTITION_PATH;

std::string on_ext(pid_t pid) { return proc_field(pid, "sched", "ext.enabled"); }
std::string cpus_of(pid_t pid) { return proc_field(pid, "status", "Cpus_allowed_list"); }
std::string cgroup_of(pid_t pid) { return proc_field(pid, "cgroup", "0::"); }

bool exists(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

/* The shim attached in partial mode with @cpus for the scope (detached, and checked, at its end). */
struct PartialShim {
	cpu_set_t set;
	cos_shim *shim = nullptr;
	int err;
	explicit PartialShim(const std::vector<int> &cpus, bool require = true)
	{
		CPU_ZERO(&set);
		for (int c : cpus)
			CPU_SET(c, &set);
		cos_shim_opts o = {};
		o.size = sizeof(o);
		o.flags = COS_SHIM_F_PARTIAL;
		o.partition = &set;
		o.partition_size = sizeof(set);
		err = cos_shim_attach(&shim, &o);
		INFO(cos_strerror(err));
		if (require)
			REQUIRE(err == 0);
	}
	~PartialShim() { cos_shim_detach(shim); }
};

/* A child that spins, counting in shared memory; in the partition as a COS task if asked. */
struct Spinner {
	pid_t pid = -1;
	volatile unsigned long *count;
	explicit Spinner(bool cos)
	{
		count = static_cast<volatile unsigned long *>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
								    MAP_SHARED | MAP_ANONYMOUS, -1, 0));
		REQUIRE(count != MAP_FAILED);
		*count = 0;
		pid = fork();
		if (pid == 0) {
			if (cos && (cos_partition_enter(0) || become_cos_task()))
				_exit(1);
			for (;;)
				(*count)++;
		}
		REQUIRE(pid > 0);
	}
	/* Does it still make progress (within 5 s)? */
	bool runs()
	{
		unsigned long c0 = *count;
		for (int i = 0; i < 500; i++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
			if (*count != c0)
				return true;
		}
		return false;
	}
	~Spinner()
	{
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		munmap((void *)count, 4096);
	}
};

int nr_cpus() { return (int)sysconf(_SC_NPROCESSORS_ONLN); }

} // namespace

TEST_CASE("partial mode: only COS tasks are on sched_ext, on the partition's CPUs; detaching removes the partition", "[partial]")
{
	if (nr_cpus() < 3)
		SKIP("needs 3 CPUs (the partition takes CPUs 1 and 2)");
	REQUIRE(sched_ext_state() == "disabled");
	REQUIRE_FALSE(exists(PART));
	const std::string subtree = read_file("/sys/fs/cgroup/cgroup.subtree_control");
	const std::string all = read_file("/sys/fs/cgroup/cpuset.cpus.effective");
	{
		PartialShim shim({1, 2});
		CHECK(read_file("/sys/kernel/sched_ext/switch_all") == "0");
		CHECK(cos_shim_partial() == 1);
		CHECK(read_file(PART + "/cpuset.cpus.partition") == "root");
		CHECK(read_file(PART + "/cpuset.cpus.effective") == "1-2");
		cpu_set_t part;
		REQUIRE(cos_partition_cpus(&part, sizeof(part)) == 0);
		CHECK(CPU_COUNT(&part) == 2);
		CHECK((CPU_ISSET(1, &part) && CPU_ISSET(2, &part)));

		/* everything else: the fair class, off the partition's CPUs */
		Spinner plain(false), cos(true);
		REQUIRE(plain.runs());
		REQUIRE(cos.runs());
		CHECK(on_ext(plain.pid) == "0");
		CHECK(on_ext(getpid()) == "0");
		CHECK(cpus_of(plain.pid) == read_file("/sys/fs/cgroup/cpuset.cpus.effective"));
		CHECK(read_file("/sys/fs/cgroup/cpuset.cpus.effective").find_first_of("12") == std::string::npos);
		CHECK(cgroup_of(plain.pid) == "/");
		/* a COS task: in the partition, on sched_ext, on its CPUs only */
		CHECK(on_ext(cos.pid) == "1");
		CHECK(cpus_of(cos.pid) == "1-2");
		CHECK(cgroup_of(cos.pid) == "/cos");

		/* cosctl run goes into the partition by itself */
		std::string out;
		CHECK(sh(build_path("bin/cosctl") + " run -- sh -c 'cat /proc/self/cgroup; "
			 "grep -q \"^ext.enabled *: *1$\" /proc/self/sched && echo on-ext; "
			 "grep Cpus_allowed_list /proc/self/status'", &out) == 0);
		CAPTURE(out);
		CHECK(out.find("0::/cos\n") != std::string::npos);
		CHECK(out.find("on-ext") != std::string::npos);
		CHECK(out.find("Cpus_allowed_list:\t1-2") != std::string::npos);
		CHECK(sh(build_path("bin/cosctl") + " status", &out) == 0);
		CHECK(out.find("partial mode") != std::string::npos);
		CHECK(out.find("partition:  CPUs 1-2") != std::string::npos);

		/* detached: the COS task leaves the partition (alive), which is gone, CPUs given back */
		cos_shim_detach(shim.shim);
		shim.shim = nullptr;
		CHECK(sched_ext_state() == "disabled");
		CHECK_FALSE(exists(PART));
		CHECK(cgroup_of(cos.pid) == "/");
		CHECK(read_file("/sys/fs/cgroup/cpuset.cpus.effective") == all);
		CHECK(cos.runs());
		CHECK(cos_shim_partial() == -ENOENT);
	}
	CHECK(read_file("/sys/fs/cgroup/cgroup.subtree_control") == subtree);
}

TEST_CASE("partial mode refuses what it cannot keep, and leaves nothing behind", "[partial]")
{
	const std::string subtree = read_file("/sys/fs/cgroup/cgroup.subtree_control");
	std::vector<int> every;
	for (int c = 0; c < nr_cpus(); c++)
		every.push_back(c);
	struct {
		std::vector<int> cpus;
		const char *says;
	} bad[] = {
		{{}, "needs the CPUs"},
		{every, "cannot take every CPU"},
		{{nr_cpus() + 3}, "not all online"},
	};
	for (auto &b : bad) {
		PartialShim shim(b.cpus, false);
		std::string msg = cos_strerror(shim.err);
		CAPTURE(b.says, msg);
		CHECK(shim.err == -EINVAL);
		CHECK(msg.find(b.says) != std::string::npos);
		CHECK(sched_ext_state() == "disabled");
		CHECK_FALSE(exists(PART));
	}
	cos_shim *s = nullptr;
	cos_shim_opts o = {};
	o.size = sizeof(o);
	o.flags = 1U << 5;
	CHECK(cos_shim_attach(&s, &o) == -EINVAL);
	o.flags = COS_SHIM_F_PARTIAL;	/* no CPUs at all */
	CHECK(cos_shim_attach(&s, &o) == -EINVAL);
	CHECK(sched_ext_state() == "disabled");
	CHECK_FALSE(exists(PART));
	CHECK(read_file("/sys/fs/cgroup/cgroup.subtree_control") == subtree);
	/* a cgroup of that name that cos did not make is left alone, whatever the mode */
	REQUIRE(mkdir(PART.c_str(), 0755) == 0);
	{
		Shim full;
		CHECK(exists(PART));
	}
	{
		PartialShim foreign({1}, false);
		CHECK(foreign.err == -EEXIST);
		CHECK(std::string(cos_strerror(foreign.err)).find("cos did not make") != std::string::npos);
	}
	CHECK(exists(PART));
	CHECK(cos_partition_remove() == -EEXIST);
	CHECK(rmdir(PART.c_str()) == 0);
	std::string out;
	CHECK(sh(build_path("bin/cosctl") + " shim attach --partial 1-x 2>&1", &out) == 2);
	CHECK(out.find("bad CPU list") != std::string::npos);
	CHECK(sched_ext_state() == "disabled");
}

TEST_CASE("a lord in partial mode: its enclave within the partition, itself outside; shot tasks run, and run on when it dies", "[partial][lord]")
{
	if (nr_cpus() < 3)
		SKIP("needs 3 CPUs (the partition takes CPUs 1 and 2)");
	PartialShim shim({1, 2});
	REQUIRE_LORD_SUPPORT();

	/* cos.ko does not know cgroups: libcos refuses, saying why */
	{
		LordOpts outside({0, 1}, 0, 0, nr_cpus() - 1);
		LordOpts inside({1}, 0, 0, 2);
		cos_lord *l = nullptr;
		CHECK(in_child([&] {
			int r = cos_lord_register(&l, &outside.o);
			return r == -EINVAL && strstr(cos_strerror(r), "within the partition's CPUs 1-2") ? 0 : 1;
		}) == 0);
		CHECK(in_child([&] {
			int r = cos_lord_register(&l, &inside.o);
			return r == -EINVAL && strstr(cos_strerror(r), "lord's CPU 2 is in the partition") ? 0 : 1;
		}) == 0);
	}

	/* cos-fifo's enclave defaults to the partition */
	PolicyProc lord({build_path("bin/cos-fifo"), "--stall-ms", stall_arg(1000)});
	REQUIRE(lord.wait_for("lord on CPU 0, 2 enclave CPUs"));
	int fd = cos_open();
	REQUIRE(fd >= 0);
	cos_info before, after;
	REQUIRE(cos_get_info(fd, &before) == 0);
	Spinner a(true), b(true), c(true);
	CHECK(a.runs());
	CHECK(b.runs());
	CHECK(c.runs());
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	REQUIRE(cos_get_info(fd, &after) == 0);
	CHECK(after.placed > before.placed);	/* the lord placed them */
	CHECK(after.tasks >= 3);

	/* the lord dies: its tasks fall back to the shim's fair policy, still on their CPUs */
	lord.stop(SIGKILL);
	for (int i = 0; i < 200; i++) {
		REQUIRE(cos_get_info(fd, &after) == 0);
		if (!after.lord_pid)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	CHECK(after.lord_pid == 0);
	CHECK(a.runs());
	CHECK(b.runs());
	CHECK(c.runs());
	CHECK(cpus_of(a.pid) == "1-2");
	CHECK(on_ext(a.pid) == "1");
	close(fd);
}

TEST_CASE("a partition its killed attachment left: a full-mode attach removes it, a partial one with the same CPUs keeps it", "[partial]")
{
	if (nr_cpus() < 3)
		SKIP("needs 3 CPUs (the partition takes CPUs 1 and 2)");
	auto killed_attachment = [] {
		pid_t pid = fork();
		if (pid == 0) {
			PartialShim s({1, 2});
			_exit(0);	/* no detach: the link closes with the process, the partition stays */
		}
		int st;
		waitpid(pid, &st, 0);
		REQUIRE((WIFEXITED(st) && WEXITSTATUS(st) == 0));
		for (int i = 0; i < 300 && sched_ext_state() != "disabled"; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		REQUIRE(sched_ext_state() == "disabled");
		REQUIRE(read_file(PART + "/cpuset.cpus.partition") == "root");
	};
	killed_attachment();
	{
		Shim full;
		CHECK_FALSE(exists(PART));
		CHECK(cos_shim_partial() == 0);
	}
	killed_attachment();
	{
		Spinner left(true);	/* a COS task still in the old partition */
		REQUIRE(left.runs());
		PartialShim again({1, 2});
		CHECK(cgroup_of(left.pid) == "/cos");
		CHECK(on_ext(left.pid) == "1");
		CHECK(left.runs());
	}
	CHECK_FALSE(exists(PART));
	/* cosctl shim detach removes a left-over partition even with no shim pinned */
	killed_attachment();
	std::string out;
	CHECK(sh(build_path("bin/cosctl") + " shim detach 2>&1", &out) == 1);
	CHECK_FALSE(exists(PART));
}
