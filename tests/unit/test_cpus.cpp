// test_cpus.cpp — libcos's CPU lists: the one grammar every cos program accepts.
// Host unit tests: see docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <sched.h>
#include <string>

extern "C" {
#include <cos.h>
}

namespace {
std::string roundtrip(const char *list)
{
	cpu_set_t set;
	char buf[256];

	if (cos_parse_cpus(list, &set, sizeof(set)))
		return "EINVAL";
	REQUIRE(cos_format_cpus(&set, sizeof(set), buf, sizeof(buf)) == 0);
	return buf;
}
} // namespace

TEST_CASE("CPU lists: CPUs and ranges, comma-separated, written back in the shortest form", "[cpus]")
{
	CHECK(roundtrip("0") == "0");
	CHECK(roundtrip("1-3") == "1-3");
	CHECK(roundtrip("1-3,5") == "1-3,5");
	CHECK(roundtrip("5,1,2,3") == "1-3,5");
	CHECK(roundtrip("0-0") == "0");
	CHECK(roundtrip("1,1,1") == "1");
	CHECK(roundtrip("1023") == "1023");
	CHECK(roundtrip("0-1023") == "0-1023");
}

TEST_CASE("CPU lists: everything else is refused", "[cpus][errors]")
{
	for (const char *bad : {"", ",", "1,", ",1", "1-", "-1", "3-1", "a", "1 2", " 1", "1-3,x", "1024",
				"0-1024", "1--3", "1,,2", "+1", "0x1"}) {
		CAPTURE(bad);
		CHECK(roundtrip(bad) == "EINVAL");
	}
	cpu_set_t set;
	CHECK(cos_parse_cpus(nullptr, &set, sizeof(set)) == -EINVAL);
}

TEST_CASE("CPU lists: a smaller set bounds the CPUs; a short buffer says so", "[cpus]")
{
	unsigned long small = 0;	/* 64 CPUs */
	CHECK(cos_parse_cpus("0-63", &small, sizeof(small)) == 0);
	CHECK(small == ~0UL);
	CHECK(cos_parse_cpus("64", &small, sizeof(small)) == -EINVAL);
	cpu_set_t set;
	char buf[4];
	REQUIRE(cos_parse_cpus("1-3,5,7", &set, sizeof(set)) == 0);
	CHECK(cos_format_cpus(&set, sizeof(set), buf, sizeof(buf)) == -ENOSPC);
	CHECK(std::string(buf) == "1-3");
}
