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
 * placement <= runs, with 1 us of slack: the kernel's text has microseconds); cos.ko's tracks,
 * and the episodes whose flow also holds cos.ko's post and dispatch, in order (woken <= post,
 * placement <= dispatch <= runs; the post's event comes once the message is in the ring, and
 * the lord may read it before).
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
            "place" if e.name.startswith("place ") else "runs" if e.name.startswith("runs ") else
            "post" if e.name.startswith("post ") else
            "dispatch" if e.name.startswith("dispatch ") else None)
    if kind:
        for f in list(e.flow_ids) + list(e.terminating_flow_ids):
            by_flow[f][kind] = (ts, tracks.get(e.track_uuid))
LORD = ("woken", "msg", "place", "runs")
whole = [f for f, k in by_flow.items() if all(x in k for x in LORD)]
mine = [k for f, k in by_flow.items() if all(x in k for x in LORD) and k["runs"][1] == pid]
ordered = [k for k in mine if k["woken"][0] <= k["msg"][0] + 1000 and k["msg"][0] <= k["place"][0]
           and k["place"][0] <= k["runs"][0] + 1000]
kmine = [k for k in mine if "post" in k and "dispatch" in k]
# the post's event fires once the message is in the ring: the lord may read it first
kordered = [k for k in kmine if k["woken"][0] <= k["post"][0] + 1000
            and k["place"][0] <= k["dispatch"][0] and k["dispatch"][0] <= k["runs"][0] + 1000]
cosko = [n for n in tracks.values() if isinstance(n, str) and n.startswith("cos.ko CPU")]
print(f"cpus {len(cpus)} lords {len(lords)} places {len(places)} flows {len(whole)} "
      f"episodes {len(mine)} ordered {len(ordered)} cosko {len(cosko)} kepisodes {len(kmine)} "
      f"kordered {len(kordered)}")
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
	/* the sleeper starts once cosctl records (a debug kernel takes seconds to set up) */
	bool recording = false;
	for (int i = 0; i < 300 && !recording; i++, usleep(100000))
		recording = read_file(dir.path + "/trace.err").find("recording") != std::string::npos;
	CHECK(recording);
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
	/* cos.ko's events: the dispatch split at the CPU's take, and why no wake rule applied */
	CHECK(summary.find("decides -> its CPU takes it (cos.ko)") != std::string::npos);
	CHECK(summary.find("wake rules (cos.ko), per waking task: none:no_rule") != std::string::npos);

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
	/* cos.ko's tracks, and its post and dispatch in most of those flows, in order */
	CHECK(field(facts, "cosko") >= 3);
	CHECK(field(facts, "kepisodes") >= field(facts, "episodes") / 2);
	CHECK(field(facts, "kordered") == field(facts, "kepisodes"));

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
	{
		/* a "lord" that hands out a ring not sealed against shrinking: refused, not mapped */
		TmpDir fake;
		pid_t srv = spawn("python3 -c '\n"
				  "import os, socket, sys\n"
				  "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)\n"
				  "c, _ = s.accept(); c.recv(8)\n"
				  "fd = os.memfd_create(\"fake\"); os.ftruncate(fd, 1 << 20)\n"
				  "socket.send_fds(c, [b\"ok\\n\"], [fd]); c.recv(1)' " +
				  fake.path + "/fake.trace");
		for (int i = 0; i < 100 && access((fake.path + "/fake.trace").c_str(), F_OK); i++)
			usleep(50000);
		CHECK(sh("COS_STATS_DIR=" + fake.path + " " + cosctl + " trace --raw --no-kernel "
			 "--seconds 1 -o " + fake.path + "/u 2>&1", &out) == 1);
		CHECK(out.find("the lord's ring is not one") != std::string::npos);
		kill(srv, SIGKILL);
		reap(srv);
	}

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
	CAPTURE(out);
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

namespace {

/* A tracefs instance of its own (no other reader's settings touched), gone with the object. */
struct TraceInstance {
	std::string dir = "/sys/kernel/tracing/instances/cos-tp-test";
	TraceInstance()
	{
		if (access("/sys/kernel/tracing/instances", F_OK))
			sh("mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null");
		sh("rmdir " + dir + " 2>/dev/null");
		REQUIRE(sh("mkdir " + dir) == 0);
		REQUIRE(sh("echo 8192 >" + dir + "/buffer_size_kb && echo 1 >" + dir +
			   "/events/cos/enable && echo 1 >" + dir + "/tracing_on") == 0);
	}
	~TraceInstance() { sh("echo 0 >" + dir + "/tracing_on; rmdir " + dir + " 2>/dev/null"); }
	std::string text()
	{
		sh("echo 0 >" + dir + "/tracing_on");
		return read_file(dir + "/trace");
	}
};

/* Does a line of @text hold event @name (as tracefs prints it: "name: ") and every one of @parts? */
bool has_event(const std::string &text, const std::string &name,
	       std::initializer_list<std::string> parts)
{
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line)) {
		if (line.find(" " + name + ": ") == std::string::npos)
			continue;
		bool all = true;
		for (const auto &p : parts)
			all = all && line.find(p) != std::string::npos;
		if (all)
			return true;
	}
	return false;
}

/* @n COS tasks, each spinning @spin_ms and sleeping @sleep_ms, @rounds times: a process group. */
pid_t cos_workers(int n, int spin_ms, int sleep_ms, int rounds)
{
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		unpin_self();
		for (int i = 1; i < n; i++)
			if (fork() == 0)
				break;
		if (become_cos_task())
			_exit(10);
		for (int r = 0; r < rounds; r++) {
			uint64_t until = now_ns() + spin_ms * 1000000ull;
			while (now_ns() < until)
				;
			usleep(sleep_ms * 1000);
		}
		while (wait(nullptr) > 0)
			;
		_exit(0);
	}
	return pid;
}

} // namespace

TEST_CASE("cos.ko's tracepoints: each event with its fields, from a lord's life", "[trace][kernel]")
{
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	TraceInstance tr;
	/* wake rules on (cos-fifo's default); a short stall limit: the stall below must fire */
	PolicyProc lord({build_path("bin/cos-fifo"), "--name", "tpt", "--cpus", "1-3", "--stall-ms",
			 "200", "--starve-ms", "5000"});
	REQUIRE(lord.wait_for("cos-fifo: lord on CPU 0"));
	const std::string lord_pid = std::to_string(lord.pid);	/* stop() forgets it */
	/* one task that sleeps: its wake-ups find free CPUs, the wake rules start it */
	CHECK(reap(cos_workers(1, 1, 5, 40)) == 0);
	/* six busy tasks on three CPUs: the lord's turns shoot them onto busy CPUs (kicks) */
	pid_t busy = cos_workers(6, 3, 1, 1000000);
	usleep(500000);
	/* the lord stopped while they post messages: declared stalled, its tasks fall back */
	REQUIRE(kill(lord.pid, SIGSTOP) == 0);
	usleep(1000000);
	REQUIRE(kill(lord.pid, SIGCONT) == 0);
	usleep(300000);
	kill(-busy, SIGKILL);
	reap(busy);
	CHECK(lord.stop(SIGINT) == 0);	/* unregisters: the enclave ends */
	std::string text = tr.text();
	{	/* kept beside the suite's reports, for a failure's reader */
		const char *run = getenv("COS_RUN_DIR");
		std::ofstream(std::string(run ? run : "/tmp") + "/test_trace-kernel-events.txt") << text;
	}
	INFO("the events: test_trace-kernel-events.txt in the run directory");
	CHECK(has_event(text, "cos_enclave", {"name=tpt", "lord=" + lord_pid,
					      "lord_cpu=0", "registered=1"}));
	CHECK(has_event(text, "cos_post", {"type=TASK_NEW", "seq="}));
	CHECK(has_event(text, "cos_post", {"type=TASK_RUNNABLE", "woke=1"}));
	CHECK(has_event(text, "cos_shoot", {"status=OK", "flags=0x"}));
	CHECK(has_event(text, "cos_dispatch", {"latched=0"}));
	CHECK(has_event(text, "cos_kick", {"why=shoot"}));
	CHECK(has_event(text, "cos_select_cpu", {"prev_cpu="}));
	CHECK(has_event(text, "cos_wake_rule", {"how=free"}));
	CHECK(has_event(text, "cos_wake_rule", {"how=none:"}));
	CHECK(has_event(text, "cos_stall", {"reason=unconsumed: lord " + lord_pid}));
	CHECK(has_event(text, "cos_fallback", {"tasks="}));
	CHECK(has_event(text, "cos_enclave", {"name=tpt", "registered=0"}));
}
