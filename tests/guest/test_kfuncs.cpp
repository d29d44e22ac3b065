// test_kfuncs.cpp — cos.ko's kfuncs take only the tasks sched_ext hands its scheduler, and only
// from the ops that may call them: a program named like the shim (so the module's filter admits
// it) that passes a made-up or a walked task pointer, or that calls a dispatch kfunc from
// ops.enqueue, is refused when it loads, as is a program not named like the shim; the genuine
// call (ops.enqueue passing the task it was given to cos_kf_enqueue) loads.  And the kfuncs act
// only for the struct_ops map libcos named (COS_IOC_SHIM_BIND): a look-alike scheduler attached
// without it is not served, the named one is, and its programs put in a second map orphan the
// binding (the module counts the shim as gone).
// See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <bpf/libbpf.h>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <unistd.h>

extern "C" {
#include <cos.h>
}
#include "guest.h"

using namespace guest;

namespace {

std::string verifier_log;

int collect(enum libbpf_print_level, const char *fmt, va_list ap)
{
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	verifier_log += buf;
	return 0;
}

/* Open and load tests/NAME.bpf.o, libbpf's log in verifier_log; *err: 0 if it loaded. */
bpf_object *open_rogue(const std::string &name, int *err)
{
	std::string path = build_path("tests/" + name + ".bpf.o");
	verifier_log.clear();
	libbpf_print_fn_t old = libbpf_set_print(collect);
	bpf_object *obj = bpf_object__open_file(path.c_str(), nullptr);
	*err = obj ? bpf_object__load(obj) : -errno;
	libbpf_set_print(old);
	return obj;
}

/* Open and load (never attach) tests/rogue-VARIANT.bpf.o; libbpf's error, 0 if it loaded. */
int load_rogue(const std::string &variant)
{
	int err;
	bpf_object__close(open_rogue("rogue-" + variant, &err));
	return err;
}

} // namespace

TEST_CASE("the kfuncs refuse task pointers sched_ext did not give", "[kfuncs][security]")
{
	REQUIRE(access("/sys/module/cos", F_OK) == 0);
	SECTION("the task sched_ext passed to the op: loads")
	{
		int err = load_rogue("genuine");
		INFO(verifier_log);
		CHECK(err == 0);
	}
	SECTION("a number cast to a task pointer: refused")
	{
		int err = load_rogue("scalar");
		INFO(verifier_log);
		CHECK(err < 0);
		CHECK(verifier_log.find("cos_kf_enqueue") != std::string::npos);
	}
	SECTION("a task pointer read from memory (p->real_parent): refused")
	{
		int err = load_rogue("walked");
		INFO(verifier_log);
		CHECK(err < 0);
		CHECK(verifier_log.find("cos_kf_enqueue") != std::string::npos);
	}
	CHECK(sched_ext_state() == "disabled");	/* nothing attached */
}

TEST_CASE("each kfunc may be called only from its ops, and only by the shim's programs",
	  "[kfuncs][security]")
{
	REQUIRE(access("/sys/module/cos", F_OK) == 0);
	SECTION("ops.enqueue calling a dispatch kfunc (cos_kf_fallback_take): refused")
	{
		int err = load_rogue("wrongop");
		INFO(verifier_log);
		CHECK(err < 0);
		CHECK(verifier_log.find("cos_kf_fallback_take") != std::string::npos);
		/* the call it may make is not what was refused */
		CHECK(verifier_log.find("calling kernel function cos_kf_enqueue is not allowed") ==
		      std::string::npos);
	}
	SECTION("the genuine call from a program not named cos_*: refused")
	{
		int err = load_rogue("unnamed");
		INFO(verifier_log);
		CHECK(err < 0);
		CHECK(verifier_log.find("cos_kf_enqueue") != std::string::npos);
	}
	CHECK(sched_ext_state() == "disabled");
}

namespace {

/* rogue_bind.bpf.c's `rogue` (.data). */
struct rogue_vars {
	int32_t attach_ret;
	uint32_t attach_calls;
};

/* A child that became a COS task (policy SCHED_EXT) and wakes every millisecond until killed. */
pid_t spawn_cos_task()
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char c = become_cos_task() ? 'e' : 'k';
		(void)!write(p[1], &c, 1);
		for (;;)
			usleep(1000);
	}
	char c = 0;
	(void)!read(p[0], &c, 1);
	close(p[0]);
	close(p[1]);
	if (c != 'k') {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		return -1;
	}
	return pid;
}

bool shim_attached_per_module(int fd)
{
	cos_info info = {};
	return cos_get_info(fd, &info) == 0 && (info.features & COS_FEAT_SHIM_ATTACHED);
}

} // namespace

namespace {

/* The rogue-bind scheduler, loaded: its `rogue` variables and what ops.select_cpu got. */
struct Rogue {
	bpf_object *obj = nullptr;
	rogue_vars *vars = nullptr;

	Rogue()
	{
		int err;
		obj = open_rogue("rogue-bind", &err);
		INFO(verifier_log);
		REQUIRE(err == 0);
		bpf_map *map;
		bpf_object__for_each_map(map, obj) {
			size_t size = 0;
			const char *name = bpf_map__name(map);
			if (strlen(name) > 5 && !strcmp(name + strlen(name) - 5, ".data"))
				vars = (rogue_vars *)bpf_map__initial_value(map, &size);
		}
		REQUIRE(vars != nullptr);
	}
	~Rogue() { bpf_object__close(obj); }
	bpf_map *map(const char *name) { return bpf_object__find_map_by_name(obj, name); }
	uint32_t map_id(const char *name)
	{
		bpf_map_info info = {};
		uint32_t len = sizeof(info);
		return bpf_map_get_info_by_fd(bpf_map__fd(map(name)), &info, &len) ? 0 : info.id;
	}
	/* what cos_kf_task_attach() answered the COS task's wake-ups (2 s at most) */
	int32_t probe(uint32_t *calls)
	{
		vars->attach_ret = 1;
		vars->attach_calls = 0;
		for (int i = 0; i < 200 && !vars->attach_calls; i++)
			usleep(10000);
		usleep(50000);
		*calls = vars->attach_calls;
		return vars->attach_ret;
	}
};

/* COS_IOC_SHIM_BIND with @map_id and @flags; 0 or -errno. */
int shim_bind(int fd, uint32_t map_id, uint32_t flags = 0)
{
	cos_shim_bind b = {};
	b.map_id = map_id;
	b.flags = flags;
	return ioctl(fd, COS_IOC_SHIM_BIND, &b) ? -errno : 0;
}

void wait_disabled()
{
	for (int i = 0; i < 100 && sched_ext_state() != "disabled"; i++)
		usleep(20000);
}

} // namespace

TEST_CASE("the kfuncs act only for the struct_ops map libcos named", "[kfuncs][security]")
{
	REQUIRE(module_loaded());
	REQUIRE(sched_ext_state() == "disabled");
	int fd = cos_open();
	REQUIRE(fd >= 0);
	pid_t task = spawn_cos_task();	/* wakes up every millisecond: ops.select_cpu sees it */
	REQUIRE(task > 0);
	uint32_t calls = 0;
	int32_t ret;

	SECTION("a look-alike attached without COS_IOC_SHIM_BIND is not served")
	{
		Rogue r;
		bpf_link *link = bpf_map__attach_struct_ops(r.map("cos_rogue_a"));
		REQUIRE(link != nullptr);
		CHECK(sched_ext_ops() == "cos_rogue_a");
		CHECK_FALSE(shim_attached_per_module(fd));
		ret = r.probe(&calls);
		INFO("attach answered " << ret << " (" << calls << " calls)");
		CHECK(calls > 0);
		CHECK(ret == -EPERM);
		/* nor may a lord register under it */
		RawLordArgs args;
		CHECK(args.register_on(fd) == ENXIO);
		bpf_link__destroy(link);
		wait_disabled();
		CHECK(sched_ext_state() == "disabled");
	}
	SECTION("the named map is served; its programs put in a second map orphan the binding")
	{
		Rogue r;
		/* another map named: this one is refused at its ops.init, and not served */
		REQUIRE(shim_bind(fd, r.map_id("cos_rogue_b")) == 0);
		bpf_link *link = bpf_map__attach_struct_ops(r.map("cos_rogue_a"));
		REQUIRE(link != nullptr);
		CHECK_FALSE(shim_attached_per_module(fd));
		CHECK(r.probe(&calls) == -EPERM);
		bpf_link__destroy(link);
		wait_disabled();
		REQUIRE(sched_ext_state() == "disabled");

		Rogue g;
		REQUIRE(shim_bind(fd, g.map_id("cos_rogue_a")) == 0);
		link = bpf_map__attach_struct_ops(g.map("cos_rogue_a"));
		REQUIRE(link != nullptr);
		CHECK(shim_attached_per_module(fd));
		ret = g.probe(&calls);
		INFO("attach answered " << ret << " (" << calls << " calls) for the named map");
		CHECK(calls > 0);
		CHECK(ret >= 0);
		CHECK(shim_bind(fd, g.map_id("cos_rogue_b")) == -EBUSY);	/* one shim at a time */

		/* the programs go into a second map too; cos_rogue_a stays the scheduler */
		bpf_link *second = bpf_map__attach_struct_ops(g.map("cos_rogue_b"));
		CHECK(second == nullptr);
		CHECK(sched_ext_ops() == "cos_rogue_a");
		ret = g.probe(&calls);
		INFO("attach answered " << ret << " (" << calls << " calls) once the programs are in two maps");
		CHECK(calls > 0);
		CHECK(ret == -EPERM);
		/* orphaned: the module counts the shim as gone, so no lord can register */
		CHECK_FALSE(shim_attached_per_module(fd));

		/* its ops.exit (a program of no single map now) still ends the binding: fail safe */
		bpf_link__destroy(link);
		wait_disabled();
		CHECK(sched_ext_state() == "disabled");
		bpf_link__destroy(second);
	}
	SECTION("COS_IOC_SHIM_BIND refuses flags and map id 0")
	{
		CHECK(shim_bind(fd, 0) == -EINVAL);
		CHECK(shim_bind(fd, 1, 1) == -EINVAL);
	}
	kill(task, SIGKILL);
	waitpid(task, nullptr, 0);
	close(fd);
}
