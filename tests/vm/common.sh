# common.sh — shared settings for the build chroot and the QEMU guest (sourced, not run).
#
# Everything kernel-side is built in a cached Debian trixie tree made by mmdebstrap, and the same
# tree is the guest's root filesystem.  The cache lives outside the repository ($COS_CACHE,
# default ~/.cache/cos) and is keyed by suite + package list + this file's recipe version, so a
# change to any of them builds a new tree and an unchanged one is reused.  Kernels are added to a
# tree on demand and recorded by a stamp per version (see tests/vm/kernel).  See docs/testing.md.

set -euo pipefail

COS_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COS_CACHE=${COS_CACHE:-$HOME/.cache/cos}
COS_SUITE=trixie
COS_MIRROR=${COS_MIRROR:-http://deb.debian.org/debian}
# Bump when the way the tree is made changes (not needed for package list changes).
COS_RECIPE=2

# Everything the build and the guest need.  Keep sorted.
COS_PACKAGES=(
	bpftool busybox-static catch2 clang crun dkms g++ gcc iproute2 kmod libbpf-dev libc6-dev
	libcap-dev libelf-dev libjansson-dev libkmod-dev librocksdb-dev liburing-dev
	linux-headers-cloud-amd64 linux-perf llvm make mount nginx pahole pkg-config procps python3
	python3-matplotlib qemu-system-x86 redis-server redis-tools rt-tests stress-ng util-linux
	virtiofsd wrk zlib1g-dev
)
# nginx, redis-server, redis-tools and wrk: `make bench BENCH=apps` (servers nobody here wrote).
# linux-headers-cloud-amd64 comes from trixie itself (6.12, without sched_ext): DKMS must refuse
# it (tests/guest/install-test).  The sched_ext kernels' headers are added by tests/vm/kernel.

# Added to an existing tree (apt-get install, recorded by a stamp per list) rather than building
# a new one, so that a new package keeps the kernels built inside the tree (tests/vm/debug-kernel
# takes most of an hour).  Packages only add files, so the tree stays what a fresh build of both
# lists would give.  Keep sorted.
COS_ADDED_PACKAGES=(
	bash-completion build-essential containerd debhelper dh-dkms golang-github-containerd-nri-dev
	golang-github-kubernetes-cri-api-dev golang-go golang-google-grpc-dev help2man libclang-rt-19-dev
	libleveldb-dev libsystemd-dev lintian postgresql-17 python3-pytest python3-venv rocksdb-tools
	runc sysbench
)
# Python packages Debian does not have, from PyPI into a venv of the tree (COS_PYTHON, made once
# per list): Perfetto's protos and the protobuf runtime they need, for cos-perfetto
# (`cosctl trace`); Debian's python3-protobuf is too old for them.  python3-venv makes the venv.
COS_PYTHON=/opt/cos-python
COS_PYTHON_PACKAGES=(perfetto==0.59.1 protobuf==6.33.6)
# postgresql-17 (postgres, initdb and pgbench; no cluster is made at install), rocksdb-tools
# (db_bench) and sysbench: more software nobody here wrote for BENCH=apps and the policies'
# tests.  libleveldb-dev: Debian's LevelDB for cos-bench-leveldb (BENCH=lock; Debian ships no
# db_bench for it).  help2man: the man pages (from each program's --help); build-essential,
# debhelper, dh-dkms and lintian: `make deb`; python3-pytest: the harness's host tests
# (tests/harness); libclang-rt-19-dev: clang's libFuzzer and sanitizers (tests/fuzz);
# libsystemd-dev: the lords' sd_notify() (cos-lord@.service is Type=notify); bash-completion:
# install-test tries the completion.  containerd, runc, golang-go and the three golang-*-dev:
# cos-nri (an NRI plugin, built in GOPATH mode on Debian's sources) and tests/guest/nri-test's
# CRI client; containerd's unit is disabled (tests/vm/chroot), the test starts its own.

# Taken from trixie-backports.  QEMU >= 11: multi-threaded TCG in 10.x (trixie) executes stale
# int3 breakpoints while the guest kernel patches its text (sched_ext enable flips static keys),
# an "Oops: int3" in __schedule (docs/testing.md, "Known kernel and emulator quirks").
COS_BACKPORTS=(qemu-system-x86)

cos_die() { echo "cos: $*" >&2; exit 1; }
cos_log() { echo "cos: $*" >&2; }

cos_chroot_key() {
	printf '%s\n' "$COS_RECIPE" "$COS_SUITE" "$COS_MIRROR" "${COS_PACKAGES[@]}" "${COS_BACKPORTS[@]}" |
		sha256sum | cut -c1-12
}

COS_CHROOT="$COS_CACHE/chroot-$COS_SUITE-$(cos_chroot_key)"
COS_KERNELS="$COS_CACHE/kernels"
