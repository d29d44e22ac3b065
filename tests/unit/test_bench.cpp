// test_bench.cpp — bench/bench.c, the library the cos-bench-* programs share: option values are
// checked the same way, percentiles computed the same way, lists split the same way.
// Host unit tests: see docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" {
#include "bench.h"
}

TEST_CASE("bench options: whole numbers in range, or a refusal that leaves the value alone", "[bench]")
{
	int v = 7;
	CHECK(bench_opt_int("t", "rounds", "2000", 10, 100000, &v));
	CHECK(v == 2000);
	for (const char *bad : { "", "12x", "x", "9", "100001", "1e3", " ", "99999999999999999999" }) {
		CAPTURE(bad);
		v = 7;
		CHECK_FALSE(bench_opt_int("t", "rounds", bad, 10, 100000, &v));
		CHECK(v == 7);
	}
	double d = 0;
	CHECK(bench_opt_double("t", "seconds", "0.5", 0.1, 600, &d));
	CHECK(d == 0.5);
	CHECK_FALSE(bench_opt_double("t", "seconds", "0.05", 0.1, 600, &d));
	CHECK_FALSE(bench_opt_double("t", "seconds", "nan", 0.1, 600, &d));
	CHECK_FALSE(bench_opt_double("t", "seconds", "5s", 0.1, 600, &d));
	CHECK(d == 0.5);
	uint64_t u = 0;
	CHECK(bench_opt_u64("t", "seed", "0x10", 1, UINT64_MAX, &u));
	CHECK(u == 16);
	CHECK_FALSE(bench_opt_u64("t", "seed", "-1", 1, UINT64_MAX, &u));
	CHECK_FALSE(bench_opt_u64("t", "seed", "0", 1, UINT64_MAX, &u));
	CHECK(u == 16);
}

TEST_CASE("bench lists: comma-separated integers and names", "[bench]")
{
	int out[4];
	CHECK(bench_opt_list("t", "hogs", "0,1,3", 0, 3, out, 4) == 3);
	CHECK((out[0] == 0 && out[1] == 1 && out[2] == 3));
	CHECK(bench_opt_list("t", "hogs", "2", 0, 3, out, 4) == 1);
	for (const char *bad : { "", "0,,1", "0,4", "1,", "-1", "0,1,2,3,3", "a" }) {
		CAPTURE(bad);
		CHECK(bench_opt_list("t", "hogs", bad, 0, 3, out, 4) == -1);
	}
	std::vector<std::string> items;
	const char *p = "ioctl,uring", *item;
	size_t n;
	while ((item = bench_list_next(&p, &n)))
		items.emplace_back(item, n);
	CHECK(items == std::vector<std::string>{ "ioctl", "uring" });
	p = "";
	CHECK(bench_list_next(&p, &n) == nullptr);
}

TEST_CASE("bench percentiles: element (n-1)p of the sorted samples, in microseconds", "[bench]")
{
	std::vector<uint64_t> v;
	for (uint64_t i = 100; i >= 1; i--)
		v.push_back(i * 1000);		/* 100..1 µs, unsorted */
	bench_sort_u64(v.data(), v.size());
	CHECK(v.front() == 1000);
	CHECK(bench_pct_us(v.data(), v.size(), 0) == 1.0);
	CHECK(bench_pct_us(v.data(), v.size(), 0.5) == 50.0);	/* the lower median of 100 */
	CHECK(bench_pct_us(v.data(), v.size(), 0.99) == 99.0);
	CHECK(bench_pct_us(v.data(), v.size(), 1) == 100.0);
	CHECK(bench_pct_us(v.data(), 0, 0.5) == 0.0);
}

TEST_CASE("bench CSV files: the header first, a clear refusal where none can be made", "[bench]")
{
	char path[] = "/tmp/cos-bench-csv-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
	FILE *f = bench_csv_open("t", path, "a,b");
	REQUIRE(f);
	fprintf(f, "1,2\n");
	fclose(f);
	char buf[64] = {};
	f = fopen(path, "r");
	REQUIRE(f);
	CHECK(fread(buf, 1, sizeof(buf) - 1, f) == 8);
	fclose(f);
	CHECK(std::string(buf) == "a,b\n1,2\n");
	unlink(path);
	CHECK(bench_csv_open("t", "/nonexistent-dir/x.csv", "a") == nullptr);
}

TEST_CASE("bench CSV rows appended: the header once, however many runs", "[bench]")
{
	char path[] = "/tmp/cos-bench-csv-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);				/* exists, empty: still new */
	for (int i = 0; i < 2; i++) {
		FILE *f = bench_csv_append("t", path, "a,b");
		REQUIRE(f);
		fprintf(f, "%d,%d\n", i, i);
		fclose(f);
	}
	char buf[64] = {};
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	CHECK(fread(buf, 1, sizeof(buf) - 1, f) == 12);
	fclose(f);
	CHECK(std::string(buf) == "a,b\n0,0\n1,1\n");
	unlink(path);
	CHECK(bench_csv_append("t", "/nonexistent-dir/x.csv", "a") == nullptr);

	int preload = -1, handoff = -1;
	setenv("LD_PRELOAD", "/usr/lib/libcos-lock.so", 1);
	setenv("COS_LOCK_HANDOFF", "1", 1);
	bench_lock_env(&preload, &handoff);
	CHECK(preload == 1);
	CHECK(handoff == 1);
	unsetenv("LD_PRELOAD");
	setenv("COS_LOCK_HANDOFF", "yes", 1);	/* only "1" has every thread yield, as libcos reads it */
	bench_lock_env(&preload, &handoff);
	CHECK(preload == 0);
	CHECK(handoff == 0);
	unsetenv("COS_LOCK_HANDOFF");
}
