// test_fuzz.cpp — 20,000 random ioctls and mmaps on /dev/cos (random command numbers, sizes,
// pointers, flags, CPU masks, offsets, protections), in a child process, with the shim
// attached.  Every call must succeed or fail with an errno of the classes the ABI and the
// kernel's mmap and ioctl paths give (never a kernel-internal code such as ERESTARTSYS or
// ENOTSUPP leaking out, never an errno the module does not use); the kernel must stay clean
// (the harness fails the run on any WARNING/BUG/Oops) and sched_ext must stay enabled.
// See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <map>
#include <random>
#include <set>
#include <sys/ioctl.h>
#include <sys/mman.h>

extern "C" {
#include <cos.h>
}
#include "guest.h"

using namespace guest;

namespace {
constexpr int CALLS = 20000;

struct Fuzzer {
	std::mt19937_64 rng;
	std::vector<uint8_t> buf = std::vector<uint8_t>(8192);
	void *ro = nullptr;	/* a read-only page */
	/*
	 * Where the buffer's pointer fields point: as large as anything the module may write
	 * through one (256 struct cos_group_info of COS_IOC_GET_GROUPS: 24 KiB), so that an ioctl
	 * doing as asked cannot overrun the fuzzer's own heap.
	 */
	void *scratch = nullptr;
	std::map<int, int> unexpected;	/* errno (0: none) of the calls that failed outside the classes */

	/*
	 * What a failed call may say: the module's own errors (kmod/, uapi/linux/cos.h), E2BIG of
	 * copy_struct_from_user(), and what the kernel's mmap path adds (EOVERFLOW of an offset
	 * past the end, ENODEV, EAGAIN of a locked-memory limit).
	 */
	static bool expected(int err)
	{
		static const std::set<int> classes = {
			EINVAL, EPERM, EFAULT, ENOMEM, EBUSY, EACCES, EOPNOTSUPP, ENOTTY, ENOSPC,
			ENOENT, EEXIST, EAGAIN, ETIME, ESRCH, ENXIO, ENODEV, EINTR, E2BIG, EOVERFLOW,
		};
		return classes.count(err) != 0;
	}

	void failed(int err)
	{
		if (!expected(err))
			unexpected[err]++;
	}

	explicit Fuzzer(uint64_t seed) : rng(seed)
	{
		ro = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		scratch = mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}

	uint64_t pick(std::initializer_list<uint64_t> v) { return *(v.begin() + rng() % v.size()); }

	unsigned long cmd()
	{
		switch (rng() % 4) {
		case 0:
			return rng();						/* anything */
		case 1:
			return _IOC(rng() % 4, 0xCE, rng() % 9, rng() % 512);	/* ours, any size */
		default:
			return pick({COS_IOC_GET_INFO, COS_IOC_REGISTER_LORD, COS_IOC_SHOOT, COS_IOC_WAIT,
				     COS_IOC_UNREGISTER, COS_IOC_GET_ENCLAVES});
		}
	}

	void *ptr()
	{
		switch (rng() % 6) {
		case 0:
			return nullptr;
		case 1:
			return (void *)(uintptr_t)pick({1, 8, 4096, 0xffffffffffff0000ull, 0x7fffffffffffull});
		case 2:
			return ro;
		default: {	/* a buffer with a plausible size field and random or small fields */
			for (auto &b : buf)
				b = rng() % 3 ? 0 : rng();
			uint32_t size = pick({0, 8, 16, 24, 32, 104, 112, 136, 4096, 4104,
					      (uint64_t)rng() % 9000});
			memcpy(buf.data(), &size, 4);
			if (rng() % 2) {	/* point cpumask and array fields into the scratch area */
				uint64_t p = (uintptr_t)scratch;
				memcpy(buf.data() + 24, &p, 8);
				memcpy(buf.data() + 32, &p, 8);
			}
			return buf.data();
		}
		}
	}

	void one(int fd)
	{
		if (rng() % 10 == 0) {	/* an mmap instead */
			off_t off = pick({0, 0x10000000, 0x20000000, 0x30000000, 0x40000000, 4096, (uint64_t)rng() & ~0xfffull});
			size_t len = pick({4096, 8192, 65536, 262144, 0x100000, (uint64_t)(rng() % 16 + 1) * 4096});
			int prot = pick({PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_EXEC, PROT_NONE});
			void *m = mmap(nullptr, len, prot, rng() % 2 ? MAP_SHARED : MAP_PRIVATE, fd, off);
			if (m != MAP_FAILED) {
				if (prot & PROT_READ)
					(void)*(volatile char *)m;
				munmap(m, len);
			} else {
				failed(errno);
			}
			return;
		}
		unsigned long c = cmd();
		if (c == COS_IOC_WAIT) {	/* never block long */
			cos_wait_args w = {};
			w.size = sizeof(w);
			w.timeout_ns = rng() % 1000000;
			w.consumed = rng() % 3 ? 0 : rng();
			errno = 0;
			if (ioctl(fd, c, &w) < 0)
				failed(errno);
			return;
		}
		errno = 0;
		long r = ioctl(fd, c, ptr());
		if (r < 0)
			failed(errno);
	}
};
} // namespace

TEST_CASE("20k random ioctls and mmaps leave the kernel and sched_ext intact", "[fuzz]")
{
	cos_shim *shim = nullptr;
	REQUIRE(cos_shim_attach(&shim, nullptr) == 0);
	uint64_t seed = std::random_device{}();
	INFO("seed " << seed);
	int rc = in_child([seed] {
		Fuzzer f(seed);
		int fd = cos_open();
		if (fd < 0)
			return 10;
		for (int i = 0; i < CALLS; i++) {
			if (i % 2000 == 0) {	/* fresh files now and then: registered ones stay too */
				int nfd = cos_open();
				if (nfd >= 0)
					fd = nfd;
			}
			f.one(fd);
		}
		for (auto [err, n] : f.unexpected)
			fprintf(stderr, "test_fuzz: %d calls failed with errno %d (%s), not a class the "
				"ABI gives\n", n, err, strerror(err));
		return f.unexpected.empty() ? 0 : 11;
	});
	CHECK(rc == 0);
	CHECK(sched_ext_state() == "enabled");
	CHECK(sched_ext_ops() == COS_SHIM_NAME);
	/* the module still works */
	int fd = cos_open();
	REQUIRE(fd >= 0);
	cos_info info;
	CHECK(cos_get_info(fd, &info) == 0);
	close(fd);
	cos_shim_detach(shim);
	CHECK(sched_ext_state() == "disabled");
}
