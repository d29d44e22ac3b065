// test_kfuncs.cpp — cos.ko's kfuncs take only the tasks sched_ext hands its scheduler, and only
// from the ops that may call them: a program named like the shim (so the module's filter admits
// it) that passes a made-up or a walked task pointer, or that calls a dispatch kfunc from
// ops.enqueue, is refused when it loads, as is a program not named like the shim; the genuine
// call (ops.enqueue passing the task it was given to cos_kf_enqueue) loads.  And the kfuncs act
// only for the struct_ops map that attached as the shim: a look-alike scheduler whose programs
// belong to two maps is ignored while attached, one with its own map is served.
// See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <bpf/libbpf.h>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/wait.h>
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

TEST_CASE("the kfuncs act only for the struct_ops map that attached as the shim",
	  "[kfuncs][security]")
{
	REQUIRE(module_loaded());
	REQUIRE(sched_ext_state() == "disabled");
	int fd = cos_open();
	REQUIRE(fd >= 0);
	pid_t task = spawn_cos_task();	/* wakes up every millisecond: ops.select_cpu sees it */
	REQUIRE(task > 0);

	int err;
	bpf_object *obj = open_rogue("rogue-bind", &err);
	INFO(verifier_log);
	REQUIRE(err == 0);
	rogue_vars *vars = nullptr;
	bpf_map *map;
	bpf_object__for_each_map(map, obj) {
		size_t size = 0;
		const char *name = bpf_map__name(map);
		if (strlen(name) > 5 && !strcmp(name + strlen(name) - 5, ".data"))
			vars = (rogue_vars *)bpf_map__initial_value(map, &size);
	}
	REQUIRE(vars != nullptr);
	/* what ops.select_cpu got from cos_kf_task_attach() for the COS task (2 s at most) */
	auto probe = [&](uint32_t *calls) {
		vars->attach_ret = 1;
		vars->attach_calls = 0;
		for (int i = 0; i < 200 && !vars->attach_calls; i++)
			usleep(10000);
		usleep(50000);
		*calls = vars->attach_calls;
		return vars->attach_ret;
	};
	uint32_t calls = 0;

	bpf_link *link = bpf_map__attach_struct_ops(bpf_object__find_map_by_name(obj, "cos_rogue_a"));
	REQUIRE(link != nullptr);
	CHECK(sched_ext_ops() == "cos_rogue_a");
	/* its programs belong to the attached map alone: it is the shim, for cos.ko */
	CHECK(shim_attached_per_module(fd));
	int32_t ret = probe(&calls);
	INFO("attach answered " << ret << " (" << calls << " calls) while the programs are the attached map's");
	CHECK(calls > 0);
	CHECK(ret >= 0);

	/* the programs go into a second map too; cos_rogue_a stays the scheduler */
	bpf_link *second = bpf_map__attach_struct_ops(bpf_object__find_map_by_name(obj, "cos_rogue_b"));
	CHECK(second == nullptr);
	CHECK(sched_ext_ops() == "cos_rogue_a");
	ret = probe(&calls);
	INFO("attach answered " << ret << " (" << calls << " calls) once the programs are in two maps");
	CHECK(calls > 0);
	CHECK(ret == -EPERM);

	/* its ops.exit (a program of no single map now) still ends the binding: fail safe */
	bpf_link__destroy(link);
	for (int i = 0; i < 100 && sched_ext_state() != "disabled"; i++)
		usleep(20000);
	CHECK(sched_ext_state() == "disabled");
	CHECK_FALSE(shim_attached_per_module(fd));
	bpf_link__destroy(second);
	bpf_object__close(obj);
	kill(task, SIGKILL);
	waitpid(task, nullptr, 0);
	close(fd);
}
