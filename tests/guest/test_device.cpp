// test_device.cpp — /dev/cos: node, permissions, COS_IOC_GET_INFO and COS_IOC_GET_TASKS and their
// error paths.
// See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cstring>
#include <sys/wait.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

extern "C" {
#include <cos.h>
}
#include "guest.h"

using namespace guest;

namespace {
struct Dev {
	int fd;
	Dev() : fd(cos_open()) { REQUIRE(fd >= 0); }
	~Dev() { close(fd); }
};

/* ioctl returning 0 or errno. */
int ioc(int fd, unsigned long cmd, void *arg) { return ioctl(fd, cmd, arg) ? errno : 0; }

unsigned possible_cpus()
{
	/* "0-3" or "0" */
	std::string s = read_file("/sys/devices/system/cpu/possible");
	auto dash = s.rfind('-');
	return std::stoul(dash == std::string::npos ? s : s.substr(dash + 1)) + 1;
}
} // namespace

TEST_CASE("/dev/cos is a root-only character device", "[device]")
{
	struct stat st;
	REQUIRE(stat(COS_DEVICE_PATH, &st) == 0);
	CHECK(S_ISCHR(st.st_mode));
	CHECK((st.st_mode & 07777) == 0600);
	CHECK(st.st_uid == 0);
}

TEST_CASE("GET_INFO reports the ABI version, features and CPU id range", "[device][info]")
{
	Dev d;
	struct cos_info info;
	REQUIRE(cos_get_info(d.fd, &info) == 0);
	CHECK(info.size == sizeof(info));
	CHECK(info.abi_version == COS_ABI_VERSION);
	CHECK((info.features & COS_FEAT_KFUNCS) != 0);
	CHECK(info.nr_cpu_ids == possible_cpus());
	CHECK(info.kernel_version >> 16 >= 6);
}

TEST_CASE("GET_INFO with a newer, larger struct fills what it knows and zeroes the rest", "[device][info]")
{
	Dev d;
	unsigned char buf[128];
	memset(buf, 0xAA, sizeof(buf));
	*(uint32_t *)buf = sizeof(buf);
	REQUIRE(ioc(d.fd, COS_IOC_GET_INFO, buf) == 0);
	auto *info = (struct cos_info *)buf;
	CHECK(info->size == sizeof(struct cos_info));
	CHECK(info->abi_version == COS_ABI_VERSION);
	for (size_t i = sizeof(struct cos_info); i < sizeof(buf); i++)
		CHECK(buf[i] == 0);
}

TEST_CASE("GET_INFO with the oldest size works", "[device][info]")
{
	Dev d;
	struct cos_info info = {};
	info.size = COS_INFO_SIZE_VER0;
	REQUIRE(ioc(d.fd, COS_IOC_GET_INFO, &info) == 0);
	CHECK(info.abi_version == COS_ABI_VERSION);
}

TEST_CASE("GET_INFO refuses unknown sizes with EINVAL", "[device][info][errors]")
{
	Dev d;
	unsigned char buf[8192] = {};
	for (uint32_t size : {0u, 4u, 8u, 16u, COS_INFO_SIZE_VER0 + 4u, COS_INFO_SIZE_VER0 - 8u,
			      (uint32_t)COS_STRUCT_SIZE_MAX + 8u, 0xffffffffu}) {
		CAPTURE(size);
		*(uint32_t *)buf = size;
		CHECK(ioc(d.fd, COS_IOC_GET_INFO, buf) == EINVAL);
	}
}

TEST_CASE("GET_INFO with a bad pointer gets EFAULT", "[device][info][errors]")
{
	Dev d;
	CHECK(ioc(d.fd, COS_IOC_GET_INFO, nullptr) == EFAULT);
	CHECK(ioc(d.fd, COS_IOC_GET_INFO, (void *)1) == EFAULT);
	/* Readable size, unwritable buffer: a read-only mapping. */
	void *ro = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ro != MAP_FAILED);
	*(uint32_t *)ro = sizeof(struct cos_info);
	REQUIRE(mprotect(ro, 4096, PROT_READ) == 0);
	CHECK(ioc(d.fd, COS_IOC_GET_INFO, ro) == EFAULT);
	munmap(ro, 4096);
}

TEST_CASE("GET_TASKS lists the COS tasks in batches and refuses bad calls", "[device][tasks]")
{
	Shim shim;		/* COS tasks exist under the shim */
	Dev d;
	struct Kids {
		std::atomic<int> ready{0};
		std::atomic<int> go{0};
		pid_t tid[3];
	};
	auto *k = shared_new<Kids>();
	pid_t child = fork();
	if (child == 0) {
		unpin_self();
		std::vector<std::thread> ts;
		for (int i = 0; i < 3; i++)
			ts.emplace_back([k, i] {
				k->tid[i] = gettid();
				become_cos_task();
				k->ready++;
				while (!k->go)
					std::this_thread::sleep_for(std::chrono::milliseconds(2));
			});
		for (auto &t : ts)
			t.join();
		_exit(0);
	}
	while (k->ready < 3)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	/*
	 * libcos lists them in one call.  A thread gets its slot at its first enqueue after it
	 * switched to SCHED_EXT (here: its first wake-up), so wait for all three.
	 */
	int found = 0;
	for (int tries = 0; tries < 5000 && found < 3; tries++) {
		cos_task_info *all = nullptr;
		size_t n = 0;
		REQUIRE(cos_get_tasks(d.fd, &all, &n) == 0);
		found = 0;
		for (size_t i = 0; i < n; i++)
			for (int j = 0; j < 3; j++)
				if (all[i].pid == k->tid[j]) {
					found++;
					CHECK(all[i].tgid == child);
					CHECK(all[i].state != COS_TASK_FREE);
				}
		free(all);
		if (found < 3)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	CHECK(found == 3);
	/* one entry per call: the walk resumes where the last batch stopped */
	std::vector<pid_t> seen;
	cos_task_info info[2];
	cos_tasks_args a = {};
	a.size = sizeof(a);
	a.capacity = 1;
	a.tasks = (uintptr_t)info;
	cos_info ci;
	REQUIRE(cos_get_info(d.fd, &ci) == 0);
	for (int calls = 0; calls < 10000; calls++) {
		REQUIRE(ioc(d.fd, COS_IOC_GET_TASKS, &a) == 0);
		CHECK(a.size == sizeof(a));
		REQUIRE(a.count <= 1);
		if (a.count)
			seen.push_back(info[0].pid);
		if (a.next >= ci.max_tasks)
			break;
		a.start = a.next;
	}
	std::string listed;
	for (pid_t p : seen)
		listed += std::to_string(p) + " ";
	CAPTURE(listed, k->tid[0], k->tid[1], k->tid[2], ci.max_tasks);
	for (int i = 0; i < 3; i++)
		CHECK(std::count(seen.begin(), seen.end(), k->tid[i]) == 1);
	/* bad calls */
	a = {};
	a.size = sizeof(a);
	a.capacity = 2;
	a.tasks = (uintptr_t)info;
	a.flags = 1;
	CHECK(ioc(d.fd, COS_IOC_GET_TASKS, &a) == EINVAL);		/* unknown flags */
	a.flags = 0;
	a.capacity = 0;
	CHECK(ioc(d.fd, COS_IOC_GET_TASKS, &a) == EINVAL);		/* no room */
	a.capacity = 2;
	a.start = ci.max_tasks + 1;
	CHECK(ioc(d.fd, COS_IOC_GET_TASKS, &a) == EINVAL);		/* past the table */
	a.start = 0;
	a.size = 12;
	CHECK(ioc(d.fd, COS_IOC_GET_TASKS, &a) == EINVAL);		/* unknown size */
	a.size = sizeof(a);
	a.tasks = 8;
	CHECK(ioc(d.fd, COS_IOC_GET_TASKS, &a) == EFAULT);		/* bad array (tasks exist) */
	CHECK(ioc(d.fd, COS_IOC_GET_TASKS, (void *)8) == EFAULT);	/* bad struct */
	k->go = 1;
	waitpid(child, nullptr, 0);
	shared_delete(k);
}

TEST_CASE("unknown ioctls get ENOTTY", "[device][errors]")
{
	Dev d;
	struct cos_info info = {};
	info.size = sizeof(info);
	CHECK(ioc(d.fd, _IOWR(COS_IOC_MAGIC, 0x7f, struct cos_info), &info) == ENOTTY);
	CHECK(ioc(d.fd, _IOWR('T', 0x00, struct cos_info), &info) == ENOTTY);
	CHECK(ioc(d.fd, 0, &info) == ENOTTY);
}

TEST_CASE("a non-root user cannot open /dev/cos", "[device][privilege]")
{
	int rc = in_child([] {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			return 10;
		int fd = cos_open();
		if (fd >= 0)
			return 11;
		return fd == -EACCES ? 0 : 12;
	});
	CHECK(rc == 0);
}

TEST_CASE("root without CAP_SYS_NICE cannot open /dev/cos", "[device][privilege]")
{
	int rc = in_child([] {
		cap_t caps = cap_get_proc();
		cap_value_t nice = CAP_SYS_NICE;
		if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 1, &nice, CAP_CLEAR) ||
		    cap_set_proc(caps))
			return 10;
		cap_free(caps);
		int fd = cos_open();
		if (fd >= 0)
			return 11;
		return fd == -EPERM ? 0 : 12;
	});
	CHECK(rc == 0);
}

TEST_CASE("a /dev/cos file passed to a process without CAP_SYS_NICE lists no tasks or groups", "[device][privilege]")
{
	Shim shim;	/* groups exist while the shim is attached */
	int fd = cos_open();
	REQUIRE(fd >= 0);
	int rc = in_child([fd] {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			return 10;	/* every capability gone with root */
		cos_task_info tasks[4];
		cos_tasks_args ta = {};
		ta.size = sizeof(ta);
		ta.capacity = 4;
		ta.tasks = (uintptr_t)tasks;
		if (ioctl(fd, COS_IOC_GET_TASKS, &ta) == 0 || errno != EPERM)
			return 11;
		cos_group_info groups[4];
		cos_groups_args ga = {};
		ga.size = sizeof(ga);
		ga.capacity = 4;
		ga.groups = (uintptr_t)groups;
		if (ioctl(fd, COS_IOC_GET_GROUPS, &ga) == 0 || errno != EPERM)
			return 12;
		cos_info info;
		return cos_get_info(fd, &info) == 0 ? 0 : 13;	/* GET_INFO stays open */
	});
	CHECK(rc == 0);
	/* the opener itself still may */
	cos_task_info *tasks = nullptr;
	size_t nr = 0;
	CHECK(cos_get_tasks(fd, &tasks, &nr) == 0);
	free(tasks);
	close(fd);
}

TEST_CASE("libcos explains a refused open", "[device][libcos]")
{
	int rc = in_child([] {
		if (setresuid(65534, 65534, 65534))
			return 10;
		int fd = cos_open();
		std::string msg = cos_strerror(fd);
		return msg.find("needs root") != std::string::npos ? 0 : 11;
	});
	CHECK(rc == 0);
}
