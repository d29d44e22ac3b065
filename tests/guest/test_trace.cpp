// test_trace.cpp — decision traces on the real module: `cosctl trace` beside cos-fifo running
// redis writes a Perfetto trace that Perfetto's own protos parse, with the kernel's scheduling
// per CPU, the lord's decisions and the flows that link a wake-up to the run it led to, in
// order for a task that sleeps and wakes; its summary names the longest waits.  cos-replay
// replays a recording of cos-fifo to the same decisions and shows another slice as differences.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "guest.h"

using namespace guest;

namespace {

/* The tree's venv with Perfetto's protos (tests/vm/common.sh, COS_PYTHON). */
const std::string PYTHON_DIR = "/opt/cos-python/bin";

struct TmpDir {
	std::string path;
	TmpDir()
	{
		char t[] = "/tmp/cos-trace-test-XXXXXX";
		REQUIRE(mkdtemp(t));
		path = t;
	}
	~TmpDir() { sh("rm -rf '" + path + "'"); }
};

/* Start @cmd (a shell command) in the background: its pid. */
pid_t spawn(const std::string &cmd)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd.c_str(), (char *)nullptr);
		_exit(127);
	}
	return pid;
}

int reap(pid_t pid)
{
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A COS task that sleeps @ms and wakes, @n times: the scenario the flows are checked on. */
pid_t sleeper(int n, int ms)
{
	pid_t pid = fork();
	if (pid == 0) {
		unpin_self();
		if (become_cos_task())
			_exit(10);
		for (int i = 0; i < n; i++)
			usleep(ms * 1000);
		_exit(0);
	}
	return pid;
}

/*
 * Facts of a Perfetto trace, read with Perfetto's own protos: the CPUs with sched_switch
 * events, the lord's placements, the flows that run from a wake-up through the lord's message
 * and placement to the run, and for the task PID its episodes in order (woken <= message <=
 * placement <= runs, with 1 us of slack: the kernel's text has microseconds).
 */
const char *CHECK_PY = R"PY(
import sys, collections
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
pid = int(sys.argv[2])
cpus, tracks, ev = set(), {}, []
for p in t.packet:
    if p.HasField("ftrace_events"):
        for e in p.ftrace_events.event:
            if e.HasField("sched_switch"):
                cpus.add(p.ftrace_events.cpu)
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        tracks[d.uuid] = d.thread.tid if d.HasField("thread") else d.name
    if p.HasField("track_event"):
        ev.append((p.timestamp, p.track_event))
lords = [u for u, n in tracks.items() if isinstance(n, str) and n.startswith("lord cos-fifo")]
places = [e for ts, e in ev if e.name.startswith("place ")]
by_flow = collections.defaultdict(dict)
for ts, e in ev:
    kind = ("woken" if e.name == "woken" else "msg" if e.name.startswith("msg ") else
            "place" if e.name.startswith("place ") else "runs" if e.name.startswith("runs ") else None)
    if kind:
        for f in list(e.flow_ids) + list(e.terminating_flow_ids):
            by_flow[f][kind] = (ts, tracks.get(e.track_uuid))
whole = [f for f, k in by_flow.items() if len(k) == 4]
mine = [k for f, k in by_flow.items() if len(k) == 4 and k["runs"][1] == pid]
ordered = [k for k in mine if k["woken"][0] <= k["msg"][0] + 1000 and k["msg"][0] <= k["place"][0]
           and k["place"][0] <= k["runs"][0] + 1000]
print(f"cpus {len(cpus)} lords {len(lords)} places {len(places)} flows {len(whole)} "
      f"episodes {len(mine)} ordered {len(ordered)}")
)PY";

int field(const std::string &facts, const std::string &key)
{
	size_t at = facts.find(key + " ");
	return at == std::string::npos ? -1 : std::stoi(facts.substr(at + key.size() + 1));
}

} // namespace

TEST_CASE("cosctl trace beside cos-fifo and redis: CPUs, decisions and flows in Perfetto's format",
	  "[trace]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	REQUIRE(access((PYTHON_DIR + "/python3").c_str(), X_OK) == 0);
	TmpDir dir;
	/* every wake-up through the lord: each is a decision to see */
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1-3", "--no-wake-rules",
			 "--stats-socket", dir.path + "/cos-fifo.stats"});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	const std::string cosctl = build_path("bin/cosctl");
	REQUIRE(sh(cosctl + " run -- redis-server --port 6399 --save '' --appendonly no "
		   "--daemonize yes --dir " + dir.path + " >/dev/null") == 0);
	bool up = false;
	for (int i = 0; i < 100 && !up; i++, usleep(100000))
		up = sh("redis-cli -p 6399 ping 2>/dev/null | grep -q PONG") == 0;
	REQUIRE(up);

	pid_t trace = spawn("COS_STATS_DIR=" + dir.path + " PATH=" + PYTHON_DIR + ":$PATH " + cosctl +
			    " trace --seconds 4 -o " + dir.path + "/t.pftrace --summary >" + dir.path +
			    "/summary 2>" + dir.path + "/trace.err");
	usleep(500000);		/* recording by now (the lord adopts its ring at its next step) */
	pid_t task = sleeper(40, 50);
	CHECK(sh("redis-benchmark -p 6399 -n 20000 -c 4 -q -t set,get >/dev/null 2>&1") == 0);
	CHECK(reap(task) == 0);
	int rc = reap(trace);
	std::string err = read_file(dir.path + "/trace.err"), summary = read_file(dir.path + "/summary");
	CAPTURE(err, summary);
	REQUIRE(rc == 0);
	CHECK(err.find("decision records in " + dir.path + "/t.pftrace.cos-fifo.lord") != std::string::npos);
	CHECK(summary.find("enclave cos-fifo: cos-fifo (pid " + std::to_string(lord.pid)) != std::string::npos);
	CHECK(summary.find("wait of runnable COS tasks") != std::string::npos);
	CHECK(summary.find("longest waits:") != std::string::npos);
	CHECK(summary.find("redis-server:") != std::string::npos);	/* the server's waits are named */

	std::string facts;
	{
		FILE *f = fopen((dir.path + "/check.py").c_str(), "w");
		REQUIRE(f);
		fputs(CHECK_PY, f);
		fclose(f);
	}
	REQUIRE(sh(PYTHON_DIR + "/python3 " + dir.path + "/check.py " + dir.path + "/t.pftrace " +
		   std::to_string(task) + " 2>&1", &facts) == 0);
	CAPTURE(facts);
	CHECK(field(facts, "cpus") >= 3);	/* the kernel's scheduling, per CPU */
	CHECK(field(facts, "lords") == 1);	/* the lord's track */
	CHECK(field(facts, "places") > 40);	/* its decisions */
	CHECK(field(facts, "flows") > 0);	/* wake-up -> message -> placement -> run */
	/* the sleeper: most of its wake-ups linked through, each in order */
	CHECK(field(facts, "episodes") >= 20);
	CHECK(field(facts, "ordered") == field(facts, "episodes"));

	sh("redis-cli -p 6399 shutdown nosave >/dev/null 2>&1");
	CHECK(lord.stop(SIGINT) == 0);
}

TEST_CASE("cosctl trace: no lord, a bad option, a busy lord", "[trace]")
{
	TmpDir dir;
	const std::string cosctl = build_path("bin/cosctl");
	std::string out;
	CHECK(sh("COS_STATS_DIR=" + dir.path + " " + cosctl + " trace --seconds 1 -o " + dir.path +
		 "/x 2>&1", &out) == 1);
	CHECK(out.find("no lord serves decision records") != std::string::npos);
	CHECK(sh(cosctl + " trace --seconds 0 2>&1", &out) == 2);
	CHECK(out.find("bad value '0' for --seconds") != std::string::npos);
	CHECK(sh(cosctl + " trace extra 2>&1", &out) == 2);
	CHECK(sh(cosctl + " trace --buffer-mb 65 2>&1", &out) == 2);	/* the lord's memory is locked */
	CHECK(out.find("bad value '65' for --buffer-mb") != std::string::npos);

	Shim shim;
	REQUIRE_LORD_SUPPORT();
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1-3", "--stats-socket",
			 dir.path + "/cos-fifo.stats"});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	{
		/* the lord itself refuses a ring over 64 MiB (what cosctl refuses, from any client) */
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		REQUIRE(c >= 0);
		sockaddr_un a = {};
		a.sun_family = AF_UNIX;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s/cos-fifo.trace", dir.path.c_str());
		REQUIRE(connect(c, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0);
		uint64_t bytes = 1ull << 30;
		REQUIRE(send(c, &bytes, sizeof(bytes), 0) == (ssize_t)sizeof(bytes));
		char line[200] = {};
		ssize_t n = recv(c, line, sizeof(line) - 1, MSG_WAITALL);
		close(c);
		CAPTURE(line);
		CHECK(n > 0);
		CHECK(std::string(line).rfind("error: ", 0) == 0);
		CHECK(std::string(line).find("at most") != std::string::npos);
	}
	pid_t first = spawn("COS_STATS_DIR=" + dir.path + " " + cosctl + " trace --raw --no-kernel "
			    "--seconds 3 -o " + dir.path + "/a 2>/dev/null");
	usleep(1000000);
	CHECK(sh("COS_STATS_DIR=" + dir.path + " " + cosctl + " trace --raw --no-kernel --seconds 1 -o " +
		 dir.path + "/b 2>&1", &out) == 1);
	CHECK(out.find("busy") != std::string::npos);	/* one reader at a time */
	CHECK(reap(first) == 0);
	/* the first ended: the lord lets go of its ring, and serves the next reader */
	CHECK(sh("COS_STATS_DIR=" + dir.path + " " + cosctl + " trace --raw --no-kernel --seconds 1 -o " +
		 dir.path + "/c 2>&1", &out) == 0);
	CAPTURE(out);
	CHECK(access((dir.path + "/c.cos-fifo.lord").c_str(), R_OK) == 0);
	CHECK(lord.stop(SIGINT) == 0);
}

TEST_CASE("cos-replay: cos-fifo's recording replays to the same decisions; another slice differs",
	  "[trace][replay]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	TmpDir dir;
	/* one CPU, three spinning tasks: the turns (--slice-us, 5 ms) make the decisions */
	PolicyProc lord({build_path("bin/cos-fifo"), "--cpus", "1", "--no-wake-rules",
			 "--stats-socket", dir.path + "/cos-fifo.stats"});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	const std::string cosctl = build_path("bin/cosctl"), rec = dir.path + "/r.cos-fifo.lord";
	pid_t trace = spawn("COS_STATS_DIR=" + dir.path + " " + cosctl + " trace --raw --no-kernel "
			    "--seconds 3 -o " + dir.path + "/r 2>" + dir.path + "/trace.err");
	usleep(500000);
	pid_t spinners[3];
	for (pid_t &p : spinners) {
		p = fork();
		if (p == 0) {
			unpin_self();
			if (become_cos_task())
				_exit(10);
			uint64_t until = now_ns() + 1500000000ull;
			while (now_ns() < until)
				if (rand() % 1000 == 0)
					usleep(100);	/* and a wake-up now and then */
			_exit(0);
		}
	}
	for (pid_t p : spinners)
		CHECK(reap(p) == 0);
	CHECK(reap(trace) == 0);
	CAPTURE(read_file(dir.path + "/trace.err"));
	CHECK(lord.stop(SIGINT) == 0);

	std::string out;
	int rc = sh(build_path("bin/cos-replay") + " " + rec + " 2>&1", &out);
	CAPTURE(out);
	CHECK(rc == 0);
	CHECK(out.find("recorded with: --cpus 1 --no-wake-rules") != std::string::npos);
	CHECK(out.find(" 0 steps differ") != std::string::npos);
	CHECK(out.find("placements recorded") != std::string::npos);
	CHECK(out.find(" 0 placements recorded") == std::string::npos);
	CHECK(out.find("cos-fifo: tasks ") != std::string::npos);	/* the counters it would show */

	rc = sh(build_path("bin/cos-replay") + " " + rec + " -- --slice-us 1000 2>&1", &out);
	CAPTURE(out);
	CHECK(rc == 1);
	CHECK(out.find("recorded: task ") != std::string::npos);
	CHECK(out.find("replayed: ") != std::string::npos);
	CHECK(out.find(" 0 steps differ") == std::string::npos);

	/* not a recording: refused, with the reason */
	CHECK(sh(build_path("bin/cos-replay") + " " + dir.path + "/cos-fifo.stats 2>&1", &out) == 2);
	CHECK(sh(build_path("bin/cos-replay") + " /etc/hostname 2>&1", &out) == 2);
	CHECK(out.find("not a cos recording") != std::string::npos);
}
