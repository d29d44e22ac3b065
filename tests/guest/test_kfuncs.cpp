// test_kfuncs.cpp — cos.ko's kfuncs take only the tasks sched_ext hands its scheduler, and only
// from the ops that may call them: a program named like the shim (so the module's filter admits
// it) that passes a made-up or a walked task pointer, or that calls a dispatch kfunc from
// ops.enqueue, is refused when it loads, as is a program not named like the shim; the genuine
// call (ops.enqueue passing the task it was given to cos_kf_enqueue) loads.
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
