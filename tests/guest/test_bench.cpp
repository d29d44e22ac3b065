// test_bench.cpp — the benchmark programs `make bench` runs do what they claim: the lord
// throughput tool places and starts tasks (several per call in mask mode) and leaves the
// scheduler as it found it; the Shinjuku server serves every request as COS tasks under
// cos-shinjuku with hints; the lock benchmarks count every run and operation, under cos-lock
// too; cos-bench-waits counts the waits of threads that take turns; every tool explains itself
// and refuses bad usage.  The benchmarks'
// enclave is every online CPU but CPU 0, so nothing here assumes a CPU count.  No timing is
// asserted: that is the benchmarks' job.  See docs/testing.md and docs/performance.md.
#include <catch2/catch_test_macros.hpp>

#include <fstream>
#include <map>
#include <optional>
#include <pthread.h>
#include <set>
#include <sstream>

#include "guest.h"

using namespace guest;

namespace {

/* Rows of a CSV file with a header line, as maps column -> text. */
std::vector<std::map<std::string, std::string>> read_csv(const std::string &path)
{
	std::ifstream f(path);
	std::string line;
	std::vector<std::string> cols;
	std::vector<std::map<std::string, std::string>> rows;

	if (!std::getline(f, line))
		return rows;
	std::stringstream h(line);
	for (std::string c; std::getline(h, c, ',');)
		cols.push_back(c);
	while (std::getline(f, line)) {
		std::stringstream l(line);
		std::map<std::string, std::string> row;
		size_t i = 0;
		for (std::string v; std::getline(l, v, ',') && i < cols.size(); i++)
			row[cols[i]] = v;
		rows.push_back(row);
	}
	return rows;
}

/* The benchmarks' enclave: every online CPU but CPU 0 (CPUs 1..N-1), as bench/bench.h has it. */
int enclave_size()
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
}

/* The enclave as a CPU list for a lord's --cpus, and as the benchmarks name it in their output. */
std::string enclave_list()
{
	return enclave_size() > 1 ? "1-" + std::to_string(enclave_size()) : "1";
}

std::string enclave_text()
{
	return (enclave_size() > 1 ? "CPUs " : "CPU ") + enclave_list();
}

/* The lords this kernel takes (see REQUIRE_LORD_SUPPORT), with the shim detached again. */
void require_lords()
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
}

} // namespace

TEST_CASE("cos-bench-lord places and starts tasks, several per call with the mask, and detaches", "[bench][lord]")
{
	require_lords();
	std::string out;
	int rc = sh(build_path("bin/cos-bench-lord") +
			    " --seconds 1 --modes ioctl-1,uring-mask --csv /tmp/bench-lord.csv 2>&1", &out);
	INFO(out);
	REQUIRE(rc == 0);
	CHECK(out.find("enclave: " + enclave_text() + ", " + std::to_string(2 * enclave_size()) +
		       " COS tasks") != std::string::npos);
	auto rows = read_csv("/tmp/bench-lord.csv");
	REQUIRE(rows.size() == 2);
	for (auto &r : rows) {
		CAPTURE(r["mode"]);
		unsigned long placed = std::stoul(r["placed"]), started = std::stoul(r["started"]),
			      calls = std::stoul(r["calls"]);
		CHECK(placed > 10);
		CHECK(started > 10);
		CHECK(started <= placed);
		if (r["mode"] == "ioctl-1" || enclave_size() == 1)
			CHECK(placed <= calls);		/* one CPU per call */
		else
			CHECK(placed > calls);		/* the mask: several per call */
	}
	CHECK(rows[0]["mode"] == "ioctl-1");
	CHECK(rows[1]["mode"] == "uring-mask");
	CHECK(sched_ext_state() == "disabled");	/* the shim it attached is gone */
	CHECK(access("/sys/module/cos", F_OK) == 0);
}

TEST_CASE("cos-bench-lord refuses to run over a scheduler someone else attached", "[bench][lord][errors]")
{
	Shim shim;
	std::string out;
	CHECK(sh(build_path("bin/cos-bench-lord") + " --seconds 1 --modes ioctl-1 2>&1", &out) == 1);
	CHECK(out.find("cannot attach the shim") != std::string::npos);
	CHECK(sched_ext_state() == "enabled");	/* ours, untouched */
}

TEST_CASE("cos-bench-shinjuku serves every request as COS tasks under cos-shinjuku with hints", "[bench][shinjuku]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	std::string out;
	/*
	 * 10 % SCANs so that both kinds surely occur; small database, a second and a half.  Without
	 * the wake rule: at 40 requests/s on 3 CPUs hardly anyone waits, so the rule would start
	 * (nearly) every wake-up itself and the lord would have no reason to read a hint.
	 */
	int rc = sh("rm -rf /tmp/bench-sj.db; " + build_path("bin/cos-shinjuku") +
			    " --no-wake-rules --cpus " + enclave_list() + " --stall-ms " + stall_arg(1000) +
			    " --starve-ms " + starve_arg(10000) + " --slice-us 20000 2>/tmp/bench-sj-lord.txt & "
			    "L=$!; for i in $(seq 100); do grep -q 'lord on CPU' /tmp/bench-sj-lord.txt && break; sleep 0.1; done; " +
			    build_path("bin/cos-bench-shinjuku") +
			    " --rate 40 --seconds 1.5 --workers 4 --keys 2000 --get-keys 2 --scan-keys 300"
			    " --scan-permille 100 --db /tmp/bench-sj.db --sched-ext --hints --csv /tmp/bench-sj.csv; "
			    "rc=$?; kill -INT $L; wait $L; cat /tmp/bench-sj-lord.txt; exit $rc", &out);
	INFO(out);
	REQUIRE(rc == 0);
	auto rows = read_csv("/tmp/bench-sj.csv");
	int gets = 0, scans = 0;
	for (auto &r : rows) {
		CHECK(std::stod(r["latency_us"]) >= 0);	/* finished */
		gets += r["type"] == "get";
		scans += r["type"] == "scan";
	}
	CHECK(gets > 20);
	CHECK(scans > 0);
	CHECK(out.find("unfinished 0 ") != std::string::npos);
	CHECK(out.find("workers 4 on " + enclave_text() + " offered") != std::string::npos);
	/* the workers were this lord's tasks and it read their hints */
	auto num_after = [&](const std::string &key) {
		size_t p = out.rfind(key + " ");
		return p == std::string::npos ? 0ul : std::stoul(out.substr(p + key.size() + 1));
	};
	/* each wake-up reached the policy, which read the worker's hint */
	CHECK(out.find("wake rules off") != std::string::npos);
	CHECK(num_after("wake-placed") == 0);
	CHECK(num_after("runnable") > 20);
	CHECK(num_after("hinted") > 0);
	CHECK(sched_ext_state() == "enabled");
}

TEST_CASE("cos-bench-shinjuku --pin keeps each worker on one enclave CPU, two per CPU", "[bench][shinjuku]")
{
	/* the default scheduler: the pinned configuration is the default's best (bench/run 4b) */
	int ne = enclave_size(), w = 2 * ne;
	std::string out;
	int rc = sh("rm -rf /tmp/bench-pin.db; " + build_path("bin/cos-bench-shinjuku") +
			    " --rate 20 --seconds 3 --workers " + std::to_string(w) +
			    " --pin --keys 2000 --get-keys 2 --scan-keys 100 --db /tmp/bench-pin.db"
			    " >/tmp/bench-pin.txt 2>&1 & P=$!; "
			    /* the threads allowed on one enclave CPU (the generator is on CPU 0, RocksDB's
			     * own threads on every CPU), once there are as many as workers */
			    "for i in $(seq 1200); do "
			    "  l=$(sed -n 's/^Cpus_allowed_list:\t//p' /proc/$P/task/*/status 2>/dev/null |"
			    "     grep -x '[1-9][0-9]*' | sort -n); "
			    "  [ \"$(echo \"$l\" | grep -c .)\" = " + std::to_string(w) + " ] && break; sleep 0.05; "
			    "done; echo \"$l\" | uniq -c | awk '{print $2 \"x\" $1}' | paste -sd' '; "
			    "wait $P; rc=$?; cat /tmp/bench-pin.txt; exit $rc", &out);
	INFO(out);
	CHECK(rc == 0);
	std::string want;
	for (int c = 1; c <= ne; c++)
		want += (c > 1 ? " " : "") + std::to_string(c) + "x2";
	CHECK(out.find(want + "\n") == 0);
	CHECK(out.find("unfinished 0 ") != std::string::npos);
}

TEST_CASE("benchmark programs explain themselves and refuse bad usage with status 2", "[bench][usage]")
{
	for (const char *p : {"bin/cos-bench-delegation", "bin/cos-bench-lord", "bin/cos-bench-shinjuku",
			      "bin/cos-bench-wakeup", "bin/cos-bench-bandwidth", "bin/cos-bench-waits"}) {
		CAPTURE(p);
		std::string out;
		CHECK(sh(build_path(p) + " --help", &out) == 0);
		CHECK(out.find("usage: ") == 0);
		if (std::string(p) != "bin/cos-bench-wakeup" &&	/* the others name this enclave */
		    std::string(p) != "bin/cos-bench-waits")
			CHECK(out.find("Here N = " + std::to_string(enclave_size() + 1) +
				       ": the enclave is " + enclave_text() + ".") != std::string::npos);
		CHECK(sh(build_path(p) + " --bogus 2>/dev/null") == 2);
	}
	/* a hog per enclave CPU at most */
	std::string deleg = build_path("bin/cos-bench-delegation");
	std::string too_many = std::to_string(enclave_size() + 1);
	std::string out;
	CHECK(sh(deleg + " --hogs " + too_many + " 2>&1", &out) == 2);
	CHECK(out.find("--hogs " + too_many + ": must be a comma-separated list of at most 8 integers from 0 to " +
		       std::to_string(enclave_size())) != std::string::npos);
	CHECK(out.find("one hog per enclave CPU at most (" + enclave_text() + ")") != std::string::npos);
	CHECK(sh(deleg + " --hogs 0," + too_many + " 2>/dev/null") == 2);
	CHECK(sh(deleg + " --hogs -1 2>/dev/null") == 2);
	std::string sj = build_path("bin/cos-bench-shinjuku");
	CHECK(sh(sj + " 2>/dev/null") == 2);				/* no --rate */
	CHECK(sh(sj + " --rate 10 --hints 2>/dev/null") == 2);	/* hints without --sched-ext */
	CHECK(sh(sj + " --rate 10 --workers 0 2>/dev/null") == 2);
	CHECK(sh(sj + " --help", &out) == 0);
	CHECK(out.find("--pin") != std::string::npos);
	CHECK(sh(build_path("bin/cos-bench-lord") + " --modes ioctl-1,nope 2>&1") == 2);
	CHECK(sh(build_path("bin/cos-bench-lord") + " --seconds 0 2>/dev/null") == 2);
	/* every option value is checked whole, and the message names the option (bench/bench.c) */
	CHECK(sh(build_path("bin/cos-bench-wakeup") + " --rounds 5x 2>&1", &out) == 2);
	CHECK(out.find("cos-bench-wakeup: --rounds 5x: must be an integer from 1 to") == 0);
	CHECK(sh(sj + " --rate 10 --seed -3 2>&1", &out) == 2);
	CHECK(out.find("cos-bench-shinjuku: --seed -3: must be an integer from 1 to") == 0);
	std::string bw = build_path("bin/cos-bench-bandwidth");
	CHECK(sh(bw + " 2>&1", &out) == 2);				/* no --cgroup */
	CHECK(out.find("cos-bench-bandwidth: --cgroup is required") == 0);
	CHECK(sh(bw + " --cgroup /tmp 2>&1", &out) == 1);		/* not a cgroup */
	CHECK(out.find("/tmp/cgroup.procs") != std::string::npos);
	CHECK(sh(bw + " --cgroup /sys/fs/cgroup --submissions 2000 2>&1", &out) == 2);
	std::string waits = build_path("bin/cos-bench-waits");
	CHECK(sh(waits + " --comm abcdefghijklmnop 2>&1", &out) == 2);	/* 16 characters */
	CHECK(out.find("cos-bench-waits: --comm abcdefghijklmnop: at most 32 names of 1 to 15") == 0);
	CHECK(sh(waits + " --comm a,,b 2>/dev/null") == 2);
	CHECK(sh(waits + " --seconds 0 2>/dev/null") == 2);
}

/*
 * Two threads pinned to one CPU, each spinning until both have started and then for a while:
 * they take turns there, so each waits at least once, under the default scheduler and under the
 * shim alike (cos-bench-waits sits on the kernel's tracepoints, not on a scheduler).  Only the
 * threads named by --comm are kept; each record is consistent (the longest wait within the
 * total, the histogram counting every wait) and says that the thread ran, on CPU 1.
 */
TEST_CASE("cos-bench-waits records the waits of two threads taking turns on a CPU", "[bench][waits]")
{
	for (bool under_shim : {false, true}) {
		CAPTURE(under_shim);
		std::optional<Shim> shim;
		if (under_shim)
			shim.emplace();
		std::string csv = "/tmp/test-bench-waits." + std::to_string(getpid()) + ".csv";
		PolicyProc w({build_path("bin/cos-bench-waits"), "--comm", "waits-spin,nothing", "--csv", csv});
		REQUIRE(w.wait_for("recording"));
		struct Ids {
			pid_t pid, tid[2];
			std::atomic<int> started;
		};
		Shared<Ids> ids;
		CHECK(in_child_threads(2, [&](int i) {
			pthread_setname_np(pthread_self(), "waits-spin");
			pin_self(1);
			ids->pid = getpid();
			ids->tid[i] = gettid();
			ids->started++;
			while (ids->started < 2)	/* the first must give way to the second */
				;
			spin_for(std::chrono::milliseconds(200));
		}) == 0);
		CHECK(w.stop(SIGINT) == 0);
		auto rows = read_csv(csv);
		unlink(csv.c_str());
		REQUIRE(rows.size() == 2);
		std::set<std::string> tids;
		for (auto &r : rows) {
			CAPTURE(r["tid"], r["hist"]);
			tids.insert(r["tid"]);
			CHECK(r["comm"] == "waits-spin");
			CHECK(r["pid"] == std::to_string(ids->pid));
			long long n = std::stoll(r["waits"]);
			CHECK(n >= 1);
			CHECK(std::stod(r["max_us"]) <= std::stod(r["total_us"]));
			long long counted = 0;
			std::stringstream h(r["hist"]);
			for (std::string pair; h >> pair;)
				counted += std::stoll(pair.substr(pair.find(':') + 1));
			CHECK(counted == n);
			CHECK(std::stod(r["run_us"]) > 0);
			std::stringstream cpus(r["cpus"]);	/* pinned to CPU 1: it ran there */
			bool on1 = false;
			for (int cpu; cpus >> cpu;)
				on1 |= cpu == 1;
			CHECK(on1);
		}
		CHECK(tids == std::set<std::string>{std::to_string(ids->tid[0]), std::to_string(ids->tid[1])});
	}
}

TEST_CASE("cos-bench-lock and cos-bench-leveldb count what they ran, under cos-lock too", "[bench][lock]")
{
	std::string out, dir = "/tmp/test-bench-lock." + std::to_string(getpid());
	std::string lk = build_path("bin/cos-bench-lock"), ldb = build_path("bin/cos-bench-leveldb");
	REQUIRE(sh("rm -rf " + dir + " && mkdir -p " + dir) == 0);
	/* each scenario appends one row; a row per run, labelled, with the preload seen */
	for (const char *sc : {"uncontended", "contended --threads 3", "handoff", "cs --threads 3",
			       "burst --threads 3 --rounds 5", "oversub --threads 3 --cs-us 20 --work-us 20"})
		CHECK(sh(lk + " --scenario " + sc + " --seconds 0.2 --label x --csv " + dir + "/lock.csv" +
			 " >/dev/null") == 0);
	CHECK(sh("env COS_LOCK_HANDOFF=1 LD_PRELOAD=" + build_path("lib/libcos-lock.so") + " " + lk +
		 " --scenario cs --threads 2 --seconds 0.2 --csv " + dir + "/lock.csv >/dev/null") == 0);
	CHECK(sh(lk + " --scenario uncontended --lock cos --seconds 0.2 --csv " + dir + "/lock.csv >/dev/null") == 0);
	auto rows = read_csv(dir + "/lock.csv");
	REQUIRE(rows.size() == 8);
	for (auto &r : rows) {
		CAPTURE(r["scenario"]);
		CHECK(std::stoull(r["ops"]) > 0);
		CHECK(std::stoull(r["ops_min"]) <= std::stoull(r["ops_max"]));
	}
	CHECK(rows[0]["label"] == "x");
	CHECK(rows[0]["threads"] == "1");
	CHECK(rows[2]["threads"] == "2");		/* handoff: always two */
	CHECK(std::stoull(rows[3]["ops_min"]) > 0);	/* every thread of cs took the lock */
	CHECK(std::stoull(rows[4]["ops"]) == 15);	/* burst: threads x rounds */
	CHECK(rows[6]["preload"] == "1");
	CHECK(rows[6]["handoff"] == "1");
	CHECK(rows[5]["preload"] == "0");
	CHECK(rows[5]["handoff"] == "0");
	CHECK(rows[7]["lock"] == "cos");
	CHECK(sh(lk + " --scenario nope 2>&1", &out) == 2);
	CHECK(out.find("--scenario nope: not one of") != std::string::npos);
	CHECK(sh(lk + " --lock futex 2>/dev/null") == 2);
	CHECK(sh(lk + " --seconds 0 2>/dev/null") == 2);
	CHECK(sh(lk + " --help", &out) == 0);
	CHECK(out.find("usage: ") == 0);

	/* LevelDB: a filled database reads every key; writes count every operation */
	CHECK(sh(ldb + " --db " + dir + "/r --benchmark readrandom --fill --keys 500 --num 300 --threads 2 "
		 "--csv " + dir + "/ldb.csv", &out) == 0);
	CHECK(out.find("readrandom") == 0);
	CHECK(out.find("not found") == std::string::npos);
	CHECK(sh(ldb + " --db " + dir + "/w --num 200 --threads 3 --csv " + dir + "/ldb.csv >/dev/null") == 0);
	auto l = read_csv(dir + "/ldb.csv");
	REQUIRE(l.size() == 2);
	CHECK(l[0]["ops"] == "600");
	CHECK(l[1]["ops"] == "600");
	CHECK(l[1]["benchmark"] == "fillrandom");
	CHECK(sh(ldb + " --num 10 2>&1", &out) == 2);		/* no --db */
	CHECK(out.find("--db DIR is required") != std::string::npos);
	CHECK(sh(ldb + " --db " + dir + "/w --benchmark scan 2>/dev/null") == 2);

	/* as COS tasks under cos-lock: the same rows, from the lord's enclave */
	require_lords();
	{
		Shim shim;
		PolicyProc lord({build_path("bin/cos-lock"), "--cpus", enclave_list(), "--stall-ms",
				 stall_arg(1000)});
		REQUIRE(lord.wait_for("cos-lock: lord on CPU 0"));
		CHECK(sh(build_path("bin/cosctl") + " run -- " + lk + " --scenario cs --threads 3 --seconds 0.3 "
			 "--csv " + dir + "/cos.csv >/dev/null") == 0);
		CHECK(lord.stop(SIGINT) == 0);
		CAPTURE(lord.err);
		CHECK(lord.err.find("runnable 0 ") == std::string::npos);
		auto c = read_csv(dir + "/cos.csv");
		REQUIRE(c.size() == 1);
		CHECK(std::stoull(c[0]["ops_min"]) > 0);
	}
	sh("rm -rf " + dir);
}
