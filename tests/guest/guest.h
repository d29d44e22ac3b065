// guest.h — helpers for the in-guest tests (run as root inside the QEMU guest, cos.ko loaded).
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

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

inline std::string sched_ext_state() { return read_file("/sys/kernel/sched_ext/state"); }
inline std::string sched_ext_ops() { return read_file("/sys/kernel/sched_ext/root/ops"); }

inline std::string env(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "";
}

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

/* delete_module(2); returns 0 or errno. */
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

/* N threads that spin, counting iterations, until destroyed. */
class BusyThreads {
public:
	explicit BusyThreads(int n) : counts_(n)
	{
		for (int i = 0; i < n; i++)
			threads_.emplace_back([this, i] {
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
