// test_device.cpp — libcos's device calls against a file that knows none of cos's ioctls (the
// answer of a cos.ko that predates a call): a clear -EOPNOTSUPP, nothing allocated.
// Host unit tests: see docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <unistd.h>

extern "C" {
#include "internal.h"
}

TEST_CASE("a module that predates the task and group lists: EOPNOTSUPP, and why", "[device][errors]")
{
	int fd = open("/dev/null", O_RDWR);	/* every ioctl: ENOTTY, as an old module's */
	REQUIRE(fd >= 0);

	struct cos_group_info *groups = (struct cos_group_info *)1;
	size_t n = 7;
	CHECK(cos_get_groups(fd, &groups, &n) == -EOPNOTSUPP);
	CHECK(groups == nullptr);
	CHECK(n == 0);
	CHECK(std::string(cos_strerror(-EOPNOTSUPP)).find("predates COS_IOC_GET_GROUPS") !=
	      std::string::npos);

	struct cos_task_info *tasks = (struct cos_task_info *)1;
	n = 7;
	CHECK(cos_get_tasks(fd, &tasks, &n) == -EOPNOTSUPP);
	CHECK(tasks == nullptr);
	CHECK(n == 0);
	CHECK(std::string(cos_strerror(-EOPNOTSUPP)).find("cannot list tasks") != std::string::npos);

	struct cos_info info;
	CHECK(cos_get_info(fd, &info) == -ENOTTY);
	close(fd);
}
