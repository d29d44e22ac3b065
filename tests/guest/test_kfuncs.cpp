// test_kfuncs.cpp — cos.ko's kfuncs take only the tasks sched_ext hands its scheduler: a program
// named like the shim (so the module's filter admits it) that passes a made-up or a walked task
// pointer is refused when it loads; the same program passing the task it was given loads.
#include <catch2/catch_test_macros.hpp>

#include <bpf/libbpf.h>
#include <cstdarg>
#include <cstdio>
#include <string>

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

/* Open and load (never attach) tests/rogue-VARIANT.bpf.o; libbpf's error, 0 if it loaded. */
int load_rogue(const std::string &variant)
{
	std::string path = build_path("tests/rogue-" + variant + ".bpf.o");
	verifier_log.clear();
	libbpf_print_fn_t old = libbpf_set_print(collect);
	bpf_object *obj = bpf_object__open_file(path.c_str(), nullptr);
	int err = obj ? bpf_object__load(obj) : -errno;
	bpf_object__close(obj);
	libbpf_set_print(old);
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
