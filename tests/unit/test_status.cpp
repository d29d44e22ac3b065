// test_status.cpp — libcos's status reader and error messages, against a fake sysfs tree.
// Host unit tests: see docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

extern "C" {
#include "internal.h"
}

namespace fs = std::filesystem;

namespace {
struct FakeRoot {
	fs::path root;
	FakeRoot()
	{
		char tmpl[] = "/tmp/cos-unit.XXXXXX";
		REQUIRE(mkdtemp(tmpl));
		root = tmpl;
	}
	~FakeRoot() { fs::remove_all(root); }
	void dir(const std::string &p) { fs::create_directories(root / p.substr(1)); }
	void file(const std::string &p, const std::string &text)
	{
		dir(fs::path(p).parent_path().string());
		std::ofstream(root / p.substr(1)) << text;
	}
	struct cos_sys_status status()
	{
		struct cos_sys_status st;
		REQUIRE(cos_sys_status_at(root.c_str(), &st) == 0);
		return st;
	}
};
} // namespace

TEST_CASE("a kernel without sched_ext or cos reports nothing attached", "[status]")
{
	FakeRoot r;
	auto st = r.status();
	CHECK_FALSE(st.sched_ext);
	CHECK_FALSE(st.module_loaded);
	CHECK_FALSE(st.device);
	CHECK_FALSE(st.shim_attached);
	CHECK(std::string(st.state).empty());
	CHECK(std::string(st.ops).empty());
}

TEST_CASE("sched_ext disabled with the module loaded", "[status]")
{
	FakeRoot r;
	r.file("/sys/kernel/sched_ext/state", "disabled\n");
	r.dir("/sys/module/cos");
	r.file("/dev/cos", "");
	auto st = r.status();
	CHECK(st.sched_ext);
	CHECK(st.module_loaded);
	CHECK(st.device);
	CHECK(std::string(st.state) == "disabled");
	CHECK(std::string(st.ops).empty());
	CHECK_FALSE(st.shim_attached);
}

TEST_CASE("the shim counts as attached only when enabled and named cos", "[status]")
{
	FakeRoot r;
	r.file("/sys/kernel/sched_ext/state", "enabled\n");
	r.file("/sys/kernel/sched_ext/root/ops", "cos\n");
	CHECK(r.status().shim_attached);

	r.file("/sys/kernel/sched_ext/root/ops", "simple\n");
	auto other = r.status();
	CHECK_FALSE(other.shim_attached);
	CHECK(std::string(other.ops) == "simple");

	r.file("/sys/kernel/sched_ext/root/ops", "cos\n");
	r.file("/sys/kernel/sched_ext/state", "disabling\n");
	CHECK_FALSE(r.status().shim_attached);
}

TEST_CASE("a pinned shim is reported", "[status]")
{
	FakeRoot r;
	r.file(COS_SHIM_PIN_PATH, "");
	CHECK(r.status().shim_pinned);
}

TEST_CASE("cos_strerror gives the last failure's details, else strerror", "[error]")
{
	CHECK(cos_fail(-ENODEV, "cos module is not loaded (%s)", "hint") == -ENODEV);
	CHECK(std::string(cos_strerror(-ENODEV)) == "cos module is not loaded (hint)");
	CHECK(std::string(cos_strerror(ENODEV)) == "cos module is not loaded (hint)");
	CHECK(std::string(cos_strerror(-EPERM)) == strerror(EPERM));
}

TEST_CASE("every feature bit the ABI defines has a name; unknown bits have none", "[status]")
{
	const unsigned long long known = COS_FEAT_KFUNCS | COS_FEAT_LORD | COS_FEAT_SHIM_ATTACHED |
		COS_FEAT_CPU_MSGS | COS_FEAT_WAKE_RULES | COS_FEAT_SHOOT_REPLACE |
		COS_FEAT_SHOOT_LATCH | COS_FEAT_BANDWIDTH | COS_FEAT_LAZY_WAKE | COS_FEAT_WAKER |
		COS_FEAT_ENCLAVES | COS_FEAT_ENCLAVE_NAMES | COS_FEAT_WAKE_HANDOFF |
		COS_FEAT_WAKE_PREEMPT | COS_FEAT_WAKE_HANDOFF_BLOCK | COS_FEAT_WAKE_NEXT;
	for (unsigned bit = 0; bit < 64; bit++) {
		CAPTURE(bit);
		CHECK((cos_feature_name(bit) != nullptr) == !!(known & (1ULL << bit)));
	}
	CHECK(std::string(cos_feature_name(15)) == "wake-next");
	CHECK(std::string(cos_feature_name(0)) == "kfuncs");
	CHECK(cos_feature_name(64) == nullptr);
	CHECK(std::string(cos_version()) == COS_VERSION);	/* dkms.conf's, from the Makefile */
}
