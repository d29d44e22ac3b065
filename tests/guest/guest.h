// guest.h — helpers for the in-guest tests (run as root inside the QEMU guest, cos.ko loaded).
// See docs/testing.md.
#pragma once

#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <map>
#include <new>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" {
#include <bpf/btf.h>
#include <cos.h>
}

namespace guest {

inline std::string read_file(const std::string &path)
{
	std::ifstream f(path);
	std::stringstream ss;
	ss << f.rdbuf();
	std::string s = ss.str();
	while (!s.empty() && s.back() == '\n')
		s.pop_back();
	return s;
}

/* A field of /proc/<pid>/<file>: "Cpus_allowed_list" in status, "policy" or "ext.enabled" in sched. */
inline std::string proc_field(pid_t pid, const std::string &file, const std::string &key)
{
	std::ifstream f("/proc/" + std::to_string(pid) + "/" + file);
	std::string line;
	while (std::getline(f, line))
		if (line.compare(0, key.size(), key) == 0) {
			size_t v = line.find_first_not_of(" \t:", key.size());
			return v == std::string::npos ? "" : line.substr(v);
		}
	return "";
}

inline std::string sched_ext_state() { return read_file("/sys/kernel/sched_ext/state"); }
inline std::string sched_ext_ops() { return read_file("/sys/kernel/sched_ext/root/ops"); }

inline std::string env(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "";
}

/*
 * How many times slower than a stock kernel this guest's kernel runs the suite: COS_TEST_TIME_SCALE
 * when set (1-100), else 10 on the debug kernels (release "*-cos-debug": lockdep and KASAN,
 * "*-cos-kcsan": KCSAN slow the scheduling paths), else 1.  It scales the limits of a lord that must NOT be declared
 * stalled or starved (limit_ms below): a rule meant to catch a stuck lord must not fire on a
 * healthy one that the kernel's own checks slow down.  Tests that stop a lord on purpose keep
 * their short limits: there the rule must fire.  See docs/testing.md, "The debug kernel".
 */
inline unsigned time_scale()
{
	static const unsigned scale = [] {
		const char *v = getenv("COS_TEST_TIME_SCALE");
		if (v && *v) {
			long n = strtol(v, nullptr, 10);
			return n >= 1 && n <= 100 ? (unsigned)n : 1u;
		}
		std::ifstream f("/proc/sys/kernel/osrelease");
		std::string rel;
		std::getline(f, rel);
		auto ends = [&rel](const std::string &tail) {
			return rel.size() >= tail.size() &&
			       rel.compare(rel.size() - tail.size(), tail.size(), tail) == 0;
		};
		return ends("-cos-debug") || ends("-cos-kcsan") ? 10u : 1u;
	}();
	return scale;
}

/*
 * A lord's stall_ms or starve_ms (0: the module's default @dflt) scaled by time_scale(), at most
 * the module's maximum (10 s).  Unchanged at scale 1: 0 stays "the default".
 */
inline unsigned limit_ms(unsigned ms, unsigned dflt)
{
	if (time_scale() == 1)
		return ms;
	unsigned v = (ms ? ms : dflt) * time_scale();
	return v > 10000 ? 10000 : v;
}
constexpr unsigned STALL_MS_DEFAULT = 20, STARVE_MS_DEFAULT = 1000;	/* kmod/cos_lord.c */

/* A policy's --stall-ms / --starve-ms value for a lord that must not fall back ("0": the default). */
inline std::string stall_arg(unsigned ms) { return std::to_string(limit_ms(ms, STALL_MS_DEFAULT)); }
inline std::string starve_arg(unsigned ms) { return std::to_string(limit_ms(ms, STARVE_MS_DEFAULT)); }

/* Take CPU @cpu offline (CPU hotplug) for the scope; it comes back online at the end. */
struct CpuOffline {
	int cpu;
	bool ok;
	explicit CpuOffline(int c) : cpu(c) { ok = set(false); }
	bool set(bool online) const
	{
		std::ofstream f("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/online");
		f << (online ? "1" : "0") << std::flush;
		return f.good();
	}
	~CpuOffline() { set(true); }
	CpuOffline(const CpuOffline &) = delete;
	CpuOffline &operator=(const CpuOffline &) = delete;
};

/* A cos.ko debugfs knob (/sys/kernel/debug/cos/@name) set to @v for the scope, 0 after. */
struct DebugfsKnob {
	std::string path;
	DebugfsKnob(const std::string &name, unsigned v) : path("/sys/kernel/debug/cos/" + name) { set(v); }
	void set(unsigned v) const
	{
		std::ofstream f(path);
		f << v << std::flush;
		REQUIRE(f.good());
	}
	~DebugfsKnob() { set(0); }
	DebugfsKnob(const DebugfsKnob &) = delete;
	DebugfsKnob &operator=(const DebugfsKnob &) = delete;
};

/* Paths the suite runner exports (tests/guest/run-suite). */
inline std::string build_path(const std::string &rel) { return env("COS_BUILD") + "/" + rel; }

/* Write a line to the kernel log (for the expect-begin/end markers of tests/vm/check-log.py). */
inline void kmsg(const std::string &line)
{
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, line.c_str(), line.size());
		close(fd);
	}
}

/* Run fn in a child process; return its exit status (fn's return value), or -1 on a crash. */
inline int in_child(const std::function<int()> &fn)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn());
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Run a shell command; return its exit status and put its stdout in *out. */
inline int sh(const std::string &cmd, std::string *out = nullptr)
{
	FILE *p = popen(cmd.c_str(), "r");
	if (!p)
		return -1;
	std::string s;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		s.append(buf, n);
	int st = pclose(p);
	if (out)
		*out = s;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The kernel log's last @n lines that match @regex (grep -E): what a failed check captures. */
inline std::string kernel_log(const std::string &regex, int n = 5)
{
	std::string out;
	sh("dmesg | grep -E '" + regex + "' | tail -n " + std::to_string(n), &out);
	return out;
}

/* delete_module(2); returns 0 or errno. */
/* A lord's statistic @key from the last statistics line it printed (its stderr), or -1. */
inline long long last_stat(const std::string &err, const std::string &key)
{
	size_t at = err.rfind(" " + key + " ");
	return at == std::string::npos ? -1 : std::atoll(err.c_str() + at + key.size() + 2);
}

inline int unload_module_once() { return syscall(SYS_delete_module, "cos", O_NONBLOCK) ? errno : 0; }

/* Unload cos.ko, retrying transient EAGAIN (BPF objects are freed after an RCU grace period). */
inline int unload_module(int tries = 50)
{
	int err = 0;
	for (int i = 0; i < tries; i++) {
		err = unload_module_once();
		if (err != EAGAIN && err != EBUSY)
			return err;
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	return err;
}

/* finit_module(2) of a .ko file; returns 0 or errno. */
inline int load_module(const std::string &path)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int err = syscall(SYS_finit_module, fd, "", 0) ? errno : 0;
	close(fd);
	return err;
}

inline bool module_loaded() { return access("/sys/module/cos", F_OK) == 0; }

/* The module's counters and features now (COS_IOC_GET_INFO); zeros if /dev/cos cannot answer. */
inline cos_info module_info()
{
	cos_info info = {};
	info.size = sizeof(info);
	int fd = cos_open();
	if (fd >= 0) {
		if (cos_get_info(fd, &info) != 0)
			info = {};
		close(fd);
	}
	return info;
}

/*
 * Does the running kernel offer kfunc @name to BPF programs with @nargs arguments, as the shim
 * declares it (shim/shim_compat.h)?  Read from the kernel's own BTF, not from cos: Debian's
 * 7.2.x describes scx_bpf_create_dsq with a trailing 'aux' argument the verifier cannot bind,
 * so libbpf finds no match for the shim's weak declaration and the shim goes without it.
 */
inline bool kernel_offers_kfunc(const char *name, unsigned nargs)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool offered = false;

	if (!btf)
		return false;
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
	const struct btf_type *fn = id > 0 ? btf__type_by_id(btf, id) : nullptr;
	const struct btf_type *proto = fn ? btf__type_by_id(btf, fn->type) : nullptr;
	offered = proto && btf_is_func_proto(proto) && btf_vlen(proto) == nargs;
	btf__free(btf);
	return offered;
}

/* What the shim needs for lords (COS_FEAT_LORD): a fair DSQ of its own. */
inline bool kernel_offers_lords() { return kernel_offers_kfunc("scx_bpf_create_dsq", 2); }

/* What the shim needs to enforce cpu.max (COS_FEAT_BANDWIDTH): that and DSQ iterators. */
inline bool kernel_offers_bandwidth()
{
	return kernel_offers_lords() && kernel_offers_kfunc("bpf_iter_scx_dsq_new", 3);
}

/* sched_setattr(2)'s argument, first version. */
struct sched_attr_v0 {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

constexpr int SCHED_EXT_POLICY = 7;

/* Make the calling thread a COS task (policy SCHED_EXT); returns 0 or errno. */
inline int become_cos_task()
{
	sched_attr_v0 a = {};
	a.size = sizeof(a);
	a.sched_policy = SCHED_EXT_POLICY;
	return syscall(SYS_sched_setattr, 0, &a, 0) ? errno : 0;
}

/*
 * Sleep long enough to block: a task that just became a COS task keeps the CPU it was on
 * until it blocks, and comes under the lord at its wake-up.  A sleep of a few hundred
 * microseconds is not enough on the debug kernel: its timer can fire before schedule()
 * takes the task off the CPU, and the task then runs on where it was.
 */
inline void leave_cpu()
{
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

inline uint64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Wait for an event instead of sleeping a fixed time: poll @done every millisecond until it
 * holds, for at most @ms scaled by time_scale() (a slow kernel outlasts any fixed sleep).
 * Whether it held.  Never a measure of time: the caller checks the event, not how long it took.
 */
template <class Done> bool wait_until(Done done, unsigned ms = 5000)
{
	uint64_t until = now_ns() + (uint64_t)ms * time_scale() * 1000000ull;
	while (!done()) {
		if (now_ns() >= until)
			return done();	/* a last look, past the deadline */
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return true;
}

/* Allow the calling thread only @cpus; sched_setaffinity()'s result. */
inline int set_cpus(const std::vector<int> &cpus)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	for (int c : cpus)
		CPU_SET(c, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

/* Allow every CPU again (a child of the lord inherits the lord's pinning). */
inline void unpin_self()
{
	cpu_set_t all;
	CPU_ZERO(&all);
	for (unsigned c = 0; c < std::thread::hardware_concurrency(); c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
}

/* A T in MAP_SHARED memory, visible to forked children; never freed by the child. */
template <typename T> T *shared_new()
{
	void *m = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		abort();
	return new (m) T();
}

template <typename T> void shared_delete(T *p)
{
	p->~T();
	munmap(p, sizeof(T));
}

/*
 * Can a lord register now (shim attached with its own fair DSQ)?  If not (Debian's 7.2.12, see
 * COS_SHIM_CAP_FAIR_DSQ in shim/cos_shim_intf.h), check that the kernel does not offer what
 * lords need (else the missing feature is a failure, not a skip), that registration is refused
 * as documented, and skip the rest.
 */
#define REQUIRE_LORD_SUPPORT()								\
	do {										\
		int fd_ = cos_open();							\
		REQUIRE(fd_ >= 0);							\
		cos_info info_;								\
		REQUIRE(cos_get_info(fd_, &info_) == 0);				\
		close(fd_);								\
		if (!(info_.features & COS_FEAT_LORD)) {				\
			INFO("the kernel offers what lords need: the shim must too");	\
			REQUIRE_FALSE(guest::kernel_offers_lords());			\
			cpu_set_t s_;							\
			CPU_ZERO(&s_);							\
			CPU_SET(1, &s_);						\
			cos_lord_opts o_ = {};						\
			o_.size = sizeof(o_);						\
			o_.enclave = &s_;						\
			o_.enclave_size = sizeof(s_);					\
			cos_lord *l_ = nullptr;						\
			int e_ = guest::in_child([&] { return -cos_lord_register(&l_, &o_); }); \
			CHECK(e_ == EOPNOTSUPP);					\
			SKIP("lords are refused on this kernel (no private fair DSQ)");	\
		}									\
	} while (0)

inline void pin_self(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

inline void spin_for(std::chrono::microseconds d)
{
	auto until = std::chrono::steady_clock::now() + d;
	while (std::chrono::steady_clock::now() < until)
		;
}

/*
 * Runs fn(i) in N threads of a forked child process and waits for it.  A lord must not schedule
 * threads of its own process: a thread waiting in custody may hold the process's mmap_lock, and
 * the lord blocks on it at its next page fault or malloc.  Results go through T, which lives in
 * shared memory.
 */
template <typename T> struct Shared {
	T *p = shared_new<T>();
	~Shared() { shared_delete(p); }
	T *operator->() { return p; }
};

inline int in_child_threads(int n, const std::function<void(int)> &fn)
{
	return in_child([&] {
		std::vector<std::thread> ts;
		for (int i = 0; i < n; i++)
			ts.emplace_back(fn, i);
		for (auto &t : ts)
			t.join();
		return 0;
	});
}

/* The enclaves COS_IOC_GET_ENCLAVES lists now (an empty list on error: the caller checks rc). */
inline std::vector<cos_enclave_info> enclaves_now(int *rc = nullptr)
{
	std::vector<cos_enclave_info> v;
	cos_enclave_info *e = nullptr;
	size_t nr = 0;
	int fd = cos_open();
	int err = fd < 0 ? fd : cos_get_enclaves(fd, &e, &nr);
	if (fd >= 0)
		close(fd);
	if (rc)
		*rc = err;
	v.assign(e, e + nr);
	free(e);
	return v;
}

/* Lord options: lord on @lord_cpu, enclave @cpus.  The CPU set lives in the object (not copyable). */
struct LordOpts {
	cpu_set_t set;
	cos_lord_opts o = {};
	LordOpts(const std::vector<int> &cpus, unsigned stall_ms = 0, unsigned starve_ms = 0,
		 int lord_cpu = 0)
	{
		CPU_ZERO(&set);
		for (int c : cpus)
			CPU_SET(c, &set);
		o.size = sizeof(o);
		o.lord_cpu = lord_cpu;
		o.enclave = &set;
		o.enclave_size = sizeof(set);
		o.stall_ms = limit_ms(stall_ms, STALL_MS_DEFAULT);	/* scaled on a slow kernel */
		o.starve_ms = limit_ms(starve_ms, STARVE_MS_DEFAULT);
	}
	LordOpts(const LordOpts &) = delete;
	LordOpts &operator=(const LordOpts &) = delete;
};

/*
 * COS_IOC_REGISTER_LORD's arguments as libcos would not send them, for tests of the ioctl
 * itself: enclave @cpus, lord CPU 0, the module's defaults unless set.  register_on(fd) calls
 * the ioctl; 0 or the errno.  The CPU set lives in the object (not copyable).
 */
struct RawLordArgs {
	cpu_set_t set;
	cos_lord_args a = {};
	explicit RawLordArgs(const std::vector<int> &cpus = {1})
	{
		CPU_ZERO(&set);
		for (int c : cpus)
			CPU_SET(c, &set);
		a.size = sizeof(a);
		a.cpumask = (uintptr_t)&set;
		a.cpumask_size = sizeof(set);
	}
	RawLordArgs(const RawLordArgs &) = delete;
	RawLordArgs &operator=(const RawLordArgs &) = delete;
	int register_on(int fd) { return ioctl(fd, COS_IOC_REGISTER_LORD, &a) ? errno : 0; }
};

/*
 * Consume every message in @lord's ring: each goes to @seen, then into @log; publishes the
 * consumption once at the end.  Returns how many.
 */
template <class Seen> int drain_ring(cos_lord *lord, std::vector<cos_msg> &log, Seen seen)
{
	int n = 0;
	const cos_msg *m;
	while ((m = cos_lord_peek(lord))) {
		seen(*m);
		log.push_back(*m);
		cos_lord_consume(lord);
		n++;
	}
	cos_lord_publish(lord);
	return n;
}

/* What a test's lord knows of its tasks from their messages: tid -> (slot, gen). */
using TaskSlots = std::map<pid_t, std::pair<uint32_t, uint32_t>>;

/*
 * Wait up to 5 s until task @tid waits for a shoot (WAITING, of the generation @task knows,
 * every message about it consumed), calling @drain (which fills @task) between looks.  True
 * with *@slot set; false with *@last set to its last status seen.
 */
template <class Drain>
bool await_waiting(cos_lord *lord, const TaskSlots &task, pid_t tid, Drain drain,
		   std::pair<uint32_t, uint32_t> *slot, cos_task_status *last)
{
	*last = {};
	for (int tries = 0; tries < 5000; tries++) {
		drain();
		auto it = task.find(tid);
		if (it != task.end()) {
			cos_lord_task_status(lord, it->second.first, last);
			if (last->state == COS_TASK_WAITING && last->gen == it->second.second &&
			    last->last_seq <= cos_lord_consumed(lord)) {
				*slot = it->second;
				return true;
			}
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return false;
}

/* A policy program running in its own process; its stderr is collected through a pipe. */
struct PolicyProc {
	pid_t pid = -1;
	int err_fd = -1;
	std::string err;

	explicit PolicyProc(const std::vector<std::string> &argv)
	{
		int p[2];
		REQUIRE(pipe(p) == 0);
		pid = fork();
		if (pid == 0) {
			dup2(p[1], 2);
			close(p[0]);
			std::vector<char *> a;
			for (auto &s : argv)
				a.push_back(const_cast<char *>(s.c_str()));
			a.push_back(nullptr);
			execv(a[0], a.data());
			_exit(127);
		}
		close(p[1]);
		err_fd = p[0];
	}
	/* Read its stderr until @what appears (or it exits, or @ms pass). */
	bool wait_for(const std::string &what, int ms = 20000)
	{
		uint64_t until = now_ns() + ms * 1000000ull;
		while (err.find(what) == std::string::npos && now_ns() < until) {
			fd_set set;
			FD_ZERO(&set);
			FD_SET(err_fd, &set);
			timeval tv = {0, 100000};
			if (select(err_fd + 1, &set, nullptr, nullptr, &tv) > 0) {
				char buf[4096];
				ssize_t n = read(err_fd, buf, sizeof(buf));
				if (n <= 0)
					break;
				err.append(buf, n);
			}
		}
		return err.find(what) != std::string::npos;
	}
	int stop(int sig)
	{
		kill(pid, sig);
		int st = 0;
		waitpid(pid, &st, 0);
		wait_for("\x01", 200);	/* collect the rest of its output */
		pid = -1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	~PolicyProc()
	{
		if (pid > 0)
			stop(SIGKILL);
		close(err_fd);
	}
};

/* The shim attached for the scope (also while a SKIP or a failed REQUIRE unwinds). */
struct Shim {
	cos_shim *shim = nullptr;
	Shim()
	{
		int err = cos_shim_attach(&shim, nullptr);
		INFO(cos_strerror(err));
		REQUIRE(err == 0);
	}
	~Shim() { cos_shim_detach(shim); }
};

/*
 * Thread @tid's /proc schedstat (of this process, or of process @pid): its time on a CPU and
 * waiting on a run queue (ns), its runs.  Zeros if it cannot be read.
 */
struct SchedStat {
	unsigned long long run = 0, wait = 0, runs = 0;
};

inline SchedStat schedstat(pid_t tid, pid_t pid = 0)
{
	SchedStat st;
	std::string line = read_file((pid ? "/proc/" + std::to_string(pid) : std::string("/proc/self")) +
				     "/task/" + std::to_string(tid) + "/schedstat");
	sscanf(line.c_str(), "%llu %llu %llu", &st.run, &st.wait, &st.runs);
	return st;
}

/* A field of /proc/PID/task/TID/sched ("se.nr_migrations" ...) in @value; false if it is not there. */
inline bool sched_field(pid_t pid, pid_t tid, const std::string &field, unsigned long long *value)
{
	std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
					"/sched"));
	std::string line;
	while (std::getline(in, line))
		if (line.compare(0, field.size(), field) == 0 && line.size() > field.size() &&
		    (line[field.size()] == ' ' || line[field.size()] == ':')) {
			*value = strtoull(line.c_str() + line.find(':') + 1, nullptr, 10);
			return true;
		}
	return false;
}

/*
 * A thread that spins until stopped: it starts on CPU @first, then may run on @cpus, so that it
 * is movable but begins where the test put it.  ok() is false if either affinity failed.
 */
class MovableBusyThread {
public:
	MovableBusyThread(int first, const std::vector<int> &cpus)
	{
		thread_ = std::thread([this, first] {
			if (set_cpus({first}) != 0)
				ok_ = false;
			tid_ = gettid();
			while (!stop_.load(std::memory_order_relaxed))
				;
		});
		while (!tid_)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		cpu_set_t set;
		CPU_ZERO(&set);
		for (int cpu : cpus)
			CPU_SET(cpu, &set);
		if (sched_setaffinity(tid_, sizeof(set), &set) != 0)
			ok_ = false;
	}
	~MovableBusyThread() { stop(); }
	void stop()
	{
		stop_ = true;
		if (thread_.joinable())
			thread_.join();
	}
	pid_t tid() const { return tid_; }
	bool ok() const { return ok_; }

private:
	std::atomic<bool> stop_{false}, ok_{true};
	std::atomic<pid_t> tid_{0};
	std::thread thread_;
};

/* N threads that spin at nice @nice, counting iterations, until destroyed. */
class BusyThreads {
public:
	explicit BusyThreads(int n, int nice = 0) : counts_(n)
	{
		for (int i = 0; i < n; i++)
			threads_.emplace_back([this, i, nice] {
				if (nice)
					setpriority(PRIO_PROCESS, gettid(), nice);
				while (!stop_.load(std::memory_order_relaxed))
					counts_[i].fetch_add(1, std::memory_order_relaxed);
			});
	}
	~BusyThreads()
	{
		stop_ = true;
		for (auto &t : threads_)
			t.join();
	}
	std::vector<unsigned long> snapshot() const
	{
		std::vector<unsigned long> v;
		for (auto &c : counts_)
			v.push_back(c.load(std::memory_order_relaxed));
		return v;
	}

private:
	std::atomic<bool> stop_{false};
	std::vector<std::atomic<unsigned long>> counts_;
	std::vector<std::thread> threads_;
};

} // namespace guest
