# Makefile — cos: build, test, run.  `make` alone lists the targets (make help).
#
# Development machines need no sched_ext: the build runs inside a cached Debian trixie tree
# against stock Debian sched_ext kernels, and kernel-side tests boot them in a QEMU guest
# (docs/testing.md).  On a target machine, `make install` builds against the running kernel
# (docs/operating.md).
#
# Variables: KVER=<version|prefix|auto> pins one kernel; KVERS="a b" sets the matrix;
# COS_CACHE=<dir> moves the cache of build trees and kernels (default ~/.cache/cos).

# the ABI version (uapi/linux/cos.h) is libcos's soname version
COS_ABI = $(shell sed -n 's/^\#define COS_ABI_VERSION[[:space:]]*//p' uapi/linux/cos.h)
# the release (dkms.conf's PACKAGE_VERSION): every program's --version, the packages'
COS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)

ifneq ($(COS_INNER),1)
# ---------------------------------------------------------------- host side

KVERS ?= $(if $(KVER),$(KVER),matrix)

.PHONY: help all build test run bench bench-pack peers vm-run native install uninstall dkms-source dkms-install dkms-uninstall deb clean distclean
help all:
	@echo 'cos: user-space delegated CPU scheduling on sched_ext.  Targets:'
	@echo ''
	@echo 'On a target machine (a sched_ext kernel with its headers; as root):'
	@echo '  make install      user space, the OCI hook, cos.ko through DKMS (docs/operating.md)'
	@echo '                    PREFIX=/usr/local, DESTDIR= (packaging), MODULES_LOAD=1 (load at boot)'
	@echo '  make uninstall    remove all that install made'
	@echo '  make deb          Debian packages (cos-dkms, libcos2, libcos-dev, cos-tools) in build/deb/,'
	@echo '                    built in the Debian trixie tree and checked with lintian'
	@echo '  make native       build for the running kernel into build/<kernel>/, install nothing'
	@echo ''
	@echo 'On a development machine (no sched_ext needed; root, ~3 GiB in ~/.cache/cos):'
	@echo '  make build        build for the kernel matrix in a Debian trixie tree (KVER=, KVERS=)'
	@echo '  make test         host unit tests + in-guest tests on every kernel of the matrix'
	@echo '  make run          the demo, in a guest'
	@echo '  make vm-run CMD=  run CMD in a fresh guest with cos.ko loaded'
	@echo '  make bench        the benchmarks, in a guest (BENCH=a,b; BENCH_QUICK=1)'
	@echo '  make bench-pack   build/cos-bench-pack.tar.xz: the benchmark guest for any x86-64 host'
	@echo '  make peers        the sched_ext schedulers cos is measured beside (scx_simple, ...;'
	@echo '                    make bench and bench-pack build them first; COS_PEERS= for none)'
	@echo '  make clean        remove build/ (the cached trees stay)'
	@echo ''
	@echo 'See README.md, docs/testing.md and docs/operating.md.'

build:
	tests/vm/build $(KVERS) >/dev/null

test:
	tests/run-tests $(KVERS)

run:
	tests/vm/build $(if $(KVER),$(KVER),auto) >/dev/null
	tests/vm/run --kver $(if $(KVER),$(KVER),auto) -- tests/demo

bench: peers
	BENCH=$(BENCH) BENCH_QUICK=$(BENCH_QUICK) BENCH_SMP=$(BENCH_SMP) bench/host $(KVER)

bench-pack: peers
	bench/pack $(KVER)

peers:
	bench/peers $(KVER)

vm-run:
	@test -n "$(CMD)" || { echo "usage: make vm-run CMD='command' [KVER=...]" >&2; exit 2; }
	tests/vm/build $(if $(KVER),$(KVER),auto) >/dev/null
	tests/vm/run --kver $(if $(KVER),$(KVER),auto) -- bash -c '$(CMD)'

# Install on the target machine (a sched_ext kernel, run as root): user space built here against
# the running kernel's BTF (the shim is CO-RE: the object loads on every supported kernel), and
# cos.ko through DKMS for the running kernel.  With DESTDIR (packaging) the DKMS source tree is
# only copied, and registering it is left to the package.  MODULES_LOAD=1 also loads cos.ko at boot
# (modules-load.d).  uninstall removes everything install made.
PREFIX ?= /usr/local
VMLINUX ?= /sys/kernel/btf/vmlinux
IB := build/install
BINDIR := $(DESTDIR)$(PREFIX)/bin
# LIBSUBDIR: lib/<multiarch> for Debian's packages (debian/rules)
LIBSUBDIR ?= lib
LIBDIR := $(DESTDIR)$(PREFIX)/$(LIBSUBDIR)
# podman and CRI-O read /usr/share/containers/oci/hooks.d and /etc/containers/oci/hooks.d,
# not /usr/local's: a PREFIX other than /usr puts the hook's JSON in /etc
HOOKS_D := $(DESTDIR)$(if $(filter /usr,$(PREFIX)),/usr/share,/etc)/containers/oci/hooks.d
MANDIR := $(DESTDIR)$(PREFIX)/share/man/man1
UNITDIR := $(DESTDIR)$(PREFIX)/lib/systemd/system
UNITS := cos-shim.service cos-lord@.service
SYSUSERS := $(DESTDIR)$(PREFIX)/lib/sysusers.d/cos.conf
DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/cos
# systemd runs here (not a package build nor a chroot): tell it about the units
SYSTEMD_HERE := $(if $(DESTDIR),,$(wildcard /run/systemd/system))
COMPLETIONS := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
MODLOAD := $(DESTDIR)/etc/modules-load.d/cos.conf
USRSRC := $(DESTDIR)/usr/src/cos-$(COS_VERSION)
POLICY_PROGRAMS := $(patsubst policies/%.c,%,$(wildcard policies/cos-*.c))
PROGRAMS := cosctl cos-oci-hook cos-replay cos-perfetto $(POLICY_PROGRAMS)
HAVE_HELP2MAN := $(shell command -v help2man)
# cos-nri (Go) is built where Go and Debian's NRI sources are (golang-go,
# golang-github-containerd-nri-dev): a containerd node needs it, other hosts do not.
HAVE_NRI := $(and $(shell command -v go),$(wildcard /usr/share/gocode/src/github.com/containerd/nri/pkg/stub))

# make install builds on all CPUs unless the caller chose with -j (the build under `make -j` shares
# the caller's jobserver)
INSTALL_JOBS = $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(shell nproc))

install:
	@test -r $(VMLINUX) || { echo "make install: no kernel BTF at $(VMLINUX): run it on the target" \
		"machine (a sched_ext kernel), or set VMLINUX=<a sched_ext vmlinux>" >&2; exit 1; }
	$(MAKE) --no-print-directory $(INSTALL_JOBS) COS_INNER=1 COS_OUT=$(IB) VMLINUX=$(VMLINUX) inner-user \
		$(if $(HAVE_HELP2MAN),inner-man) $(if $(HAVE_NRI),$(IB)/bin/cos-nri \
		$(if $(HAVE_HELP2MAN),$(IB)/man/cos-nri.1))
	$(if $(HAVE_HELP2MAN),,@echo "make install: no help2man here: no man pages (apt install help2man)")
	$(if $(HAVE_NRI),,@echo "make install: no Go and NRI sources here: no cos-nri (apt install golang-go golang-github-containerd-nri-dev)")
	install -D -m644 libcos/cos.h $(DESTDIR)$(PREFIX)/include/cos.h
	install -D -m644 libcos/cos_trace.h $(DESTDIR)$(PREFIX)/include/cos_trace.h
	install -D -m644 uapi/linux/cos.h $(DESTDIR)$(PREFIX)/include/linux/cos.h
	install -D -m644 $(IB)/lib/libcos.a $(LIBDIR)/libcos.a
	install -D -m755 $(IB)/lib/libcos.so $(LIBDIR)/libcos.so.$(COS_ABI)
	install -D -m755 $(IB)/lib/libcos-lock.so $(LIBDIR)/cos/libcos-lock.so	# LD_PRELOAD only
	ln -sf libcos.so.$(COS_ABI) $(LIBDIR)/libcos.so
	mkdir -p $(LIBDIR)/pkgconfig
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBSUBDIR@|$(LIBSUBDIR)|' -e 's|@VERSION@|$(COS_VERSION)|' \
		libcos/libcos.pc.in \
		> $(LIBDIR)/pkgconfig/libcos.pc
	install -D -m755 -t $(BINDIR) $(addprefix $(IB)/bin/,$(PROGRAMS))
	$(if $(HAVE_NRI),install -D -m755 -t $(BINDIR) $(IB)/bin/cos-nri)
	$(if $(and $(HAVE_NRI),$(HAVE_HELP2MAN)),install -D -m644 -t $(MANDIR) $(IB)/man/cos-nri.1)
	$(if $(HAVE_HELP2MAN),install -D -m644 -t $(MANDIR) $(addprefix $(IB)/man/,$(addsuffix .1,$(PROGRAMS))))
	install -D -m644 tools/cosctl.bash-completion $(COMPLETIONS)/cosctl
	mkdir -p $(UNITDIR)
	for u in $(UNITS); do sed 's|@BINDIR@|$(PREFIX)/bin|g' tools/systemd/$$u.in > $(UNITDIR)/$$u; done
	install -D -m644 tools/systemd/cos-default.example $(DOCDIR)/cos-default.example
	install -D -m644 tools/systemd/cos.sysusers $(SYSUSERS)
	$(if $(SYSTEMD_HERE),systemd-sysusers $(SYSUSERS))
	$(if $(SYSTEMD_HERE),systemctl daemon-reload)
	for p in $(POLICY_PROGRAMS); do ln -sf cosctl $(COMPLETIONS)/$$p; done
	mkdir -p $(HOOKS_D)
	sed 's|@BINDIR@|$(PREFIX)/bin|' tools/cos-oci-hook.json.in > $(HOOKS_D)/cos.json
	$(if $(filter 1,$(MODULES_LOAD)),install -D -m644 tools/modules-load.conf $(MODLOAD))
	$(if $(DESTDIR),,-ldconfig)
	$(if $(DESTDIR),$(MAKE) --no-print-directory dkms-source DKMS_SRC=$(USRSRC),$(MAKE) --no-print-directory dkms-install)

uninstall:
	$(if $(SYSTEMD_HERE),-systemctl disable --now 'cos-lord@*.service' cos-shim.service 2>/dev/null)
	$(if $(DESTDIR),rm -rf $(USRSRC),$(MAKE) --no-print-directory dkms-uninstall)
	rm -f $(DESTDIR)$(PREFIX)/include/cos.h $(DESTDIR)$(PREFIX)/include/cos_trace.h $(DESTDIR)$(PREFIX)/include/linux/cos.h \
		$(LIBDIR)/libcos.a $(LIBDIR)/libcos.so.$(COS_ABI) $(LIBDIR)/libcos.so $(LIBDIR)/cos/libcos-lock.so \
		$(LIBDIR)/pkgconfig/libcos.pc $(addprefix $(BINDIR)/,$(PROGRAMS) cos-nri) $(HOOKS_D)/cos.json \
		$(MODLOAD) $(addprefix $(MANDIR)/,$(addsuffix .1,$(PROGRAMS) cos-nri)) \
		$(COMPLETIONS)/cosctl $(addprefix $(COMPLETIONS)/,$(POLICY_PROGRAMS)) \
		$(addprefix $(UNITDIR)/,$(UNITS)) $(DOCDIR)/cos-default.example $(SYSUSERS)
	-rmdir $(DESTDIR)$(PREFIX)/include/linux $(HOOKS_D) $(dir $(HOOKS_D)) \
		$(dir $(patsubst %/,%,$(dir $(HOOKS_D)))) $(MANDIR) $(COMPLETIONS) \
		$(DESTDIR)$(PREFIX)/share/bash-completion $(UNITDIR) $(DESTDIR)$(PREFIX)/lib/systemd \
		$(dir $(SYSUSERS)) \
		$(DOCDIR) $(LIBDIR)/cos 2>/dev/null
	$(if $(DESTDIR),,-ldconfig)

# The module through DKMS, for KVER (default: the running kernel).  dkms-source assembles the
# tree DKMS keeps in /usr/src (dkms.conf, kmod/, uapi/ and the module-shim interface header:
# what cos.ko is built from, nothing else).
DKMS_SRC := build/dkms/cos-$(COS_VERSION)
dkms-source:
	rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)
	cp -r dkms.conf kmod uapi $(DKMS_SRC)/
	mkdir -p $(DKMS_SRC)/shim && cp shim/cos_shim_intf.h $(DKMS_SRC)/shim/
dkms-install: dkms-source
	dkms add $(DKMS_SRC)
	dkms build cos/$(COS_VERSION) $(if $(KVER),-k $(KVER))
	dkms install cos/$(COS_VERSION) $(if $(KVER),-k $(KVER))
dkms-uninstall:
	-dkms remove cos/$(COS_VERSION) --all
	rm -rf /usr/src/cos-$(COS_VERSION)

# Debian packages (debian/), built in the trixie tree from a copy of the sources (no build/,
# no .git), against the first kernel of the matrix's BTF for the CO-RE shim; lintian after.
# Expanded only by `make deb` ('=', not ':='): every other make, the package build's and the
# users' `make install` among them, must not resolve (or make) the build tree.
DEB_KVER = $(firstword $(if $(KVER),$(KVER),$(shell tests/vm/kernel resolve auto 2>/dev/null)))
deb:
	tests/vm/build $(DEB_KVER) >/dev/null
	rm -rf build/deb && mkdir -p build/deb/cos-$(COS_VERSION)
	tar --exclude=./build --exclude=./.git --exclude=./bench-results -cf - . | \
		tar -C build/deb/cos-$(COS_VERSION) -xf -
	tests/vm/chroot exec bash -c 'cd /src/build/deb/cos-$(COS_VERSION) && \
		VMLINUX=/usr/src/linux-headers-$(DEB_KVER)/vmlinux dpkg-buildpackage -us -uc -b \
		>../build.log 2>&1 || { tail -40 ../build.log; exit 1; }; cd .. && \
		lintian --fail-on error,warning --info *.changes'
	@ls build/deb/*.deb

native:
	$(MAKE) COS_INNER=1 KVER=$$(uname -r) KDIR=/lib/modules/$$(uname -r)/build inner-kver inner-unit

clean:
	rm -rf build

distclean: clean
	@echo "the build trees and kernels stay in $${COS_CACHE:-$$HOME/.cache/cos}; remove it by hand"

else
# ---------------------------------------------------------------- inside the build tree

ifeq ($(KVER),)
ifneq ($(filter inner-kver,$(MAKECMDGOALS)),)
$(error KVER is required)
endif
endif

KDIR ?= /usr/src/linux-headers-$(KVER)
O := $(if $(COS_OUT),$(COS_OUT),build/$(KVER))
VMLINUX ?= $(KDIR)/vmlinux
GEN := $(O)/gen
U := build/unit

CC := gcc
CXX := g++
CLANG := clang
BPFTOOL := bpftool
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Wno-unused-parameter
COS_CFLAGS := -std=c11 $(WARN) -D_GNU_SOURCE -Iuapi -Ilibcos -DCOS_VERSION='"$(COS_VERSION)"'
TEST_CXXFLAGS := -std=c++17 $(WARN) -D_GNU_SOURCE -Iuapi -Ilibcos -Itests/guest -DCOS_VERSION='"$(COS_VERSION)"'
LIBCOS_SRCS := libcos/error.c libcos/device.c libcos/module.c libcos/status.c libcos/shim.c libcos/lord.c libcos/sched.c libcos/sched_lord.c libcos/hint_table.c libcos/hint_app.c libcos/hint_lock.c libcos/hint_cache.c libcos/hint_finder.c libcos/proc.c libcos/cpus.c libcos/group.c libcos/partition.c libcos/trace.c libcos/replay.c
LIBCOS_HDRS := libcos/cos.h libcos/cos_trace.h libcos/internal.h libcos/hint_internal.h uapi/linux/cos.h shim/cos_shim_intf.h
BPF_LIBS := -lbpf -lelf -lz -lcap -lkmod -luring
CATCH2 := -lCatch2Main -lCatch2
POLICIES := $(patsubst policies/%.c,$(O)/bin/%,$(wildcard policies/cos-*.c))
GUEST_TESTS := $(patsubst tests/guest/%.cpp,$(O)/tests/%,$(wildcard tests/guest/test_*.cpp))
ROGUE_OBJS := $(foreach v,genuine scalar walked wrongop unnamed,$(O)/tests/rogue-$(v).bpf.o) \
	$(O)/tests/rogue-bind.bpf.o $(O)/tests/other-sched.bpf.o
UNIT_SRCS := $(wildcard tests/unit/*.cpp)

.PHONY: inner-kver inner-user inner-unit inner-man
inner-user: $(O)/lib/libcos.a $(O)/lib/libcos.so $(O)/lib/libcos-lock.so $(O)/bin/cosctl $(O)/bin/cos-oci-hook $(O)/bin/cos-replay $(O)/bin/cos-perfetto $(POLICIES)
inner-kver: inner-user inner-man $(O)/bin/cos-nri $(O)/man/cos-nri.1 $(O)/tests/cri-client $(O)/kmod/cos.ko $(O)/kmod/cos-nobtf.ko $(O)/kmod/cos-distilled.ko $(O)/bin/cos-bench-delegation $(O)/bin/cos-bench-lord $(O)/bin/cos-bench-framework $(O)/bin/cos-bench-shinjuku $(O)/bin/cos-bench-wakeup $(O)/bin/cos-bench-pair $(O)/bin/cos-bench-bandwidth $(O)/bin/cos-bench-lock $(O)/bin/cos-bench-leveldb $(O)/bin/cos-bench-waits $(O)/bin/example-policy $(GUEST_TESTS) $(ROGUE_OBJS)
inner-unit: $(U)/cos-unit $(U)/libcos-lock.so $(U)/lock-helper $(U)/fuzz-hint

# Man pages from each program's --help and --version (help2man): `make build` makes them, so a
# --help that help2man cannot read fails the build.
MAN_PROGRAMS := cosctl cos-oci-hook cos-replay cos-perfetto $(patsubst policies/%.c,%,$(wildcard policies/cos-*.c))
inner-man: $(patsubst %,$(O)/man/%.1,$(MAN_PROGRAMS))
MAN_NAME_cosctl := control cos: the module, the shim, enclaves, COS tasks, bandwidth groups
MAN_NAME_cos-oci-hook := OCI runtime hook that puts an annotated container under a cos lord
MAN_NAME_cos-replay := run a cos policy on a recording of a lord and show where its decisions differ
MAN_NAME_cos-perfetto := turn a cosctl trace recording into a Perfetto trace and a summary
MAN_NAME_cos-fifo := cos lord: COS tasks in arrival order, in turns
MAN_NAME_cos-shinjuku := cos lord: preemptive FIFO per request class (Shinjuku)
MAN_NAME_cos-lock := cos lord: lock-aware scheduling from lock hints
MAN_NAME_cos-lcbe := cos lord: latency-critical tasks before best-effort ones, with a floor
MAN_NAME_cos-pair := cos lord: tasks that wake each other share a CPU
MAN_NAME_cos-nri := NRI plugin: the containers of an annotated pod run under a cos lord
$(O)/man/%.1: $(O)/bin/%
	@mkdir -p $(@D)
	help2man -N --no-discard-stderr --version-string='$(COS_VERSION)' \
		-n '$(or $(MAN_NAME_$*),a cos program)' -o $@.tmp $< && mv $@.tmp $@

# Go, in GOPATH mode on Debian's packaged sources (/usr/share/gocode): nothing is downloaded.
GO := go
GO_BUILD = GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$(CURDIR)/build/gocache GOTOOLCHAIN=local \
	GOFLAGS= $(GO) build -trimpath
$(O)/bin/cos-nri: tools/cos-nri/main.go
	@mkdir -p $(@D)
	$(GO_BUILD) -ldflags '-X main.version=$(COS_VERSION)' -o $@ ./tools/cos-nri
# the CRI calls of tests/guest/nri-test
$(O)/tests/cri-client: tests/guest/cri-client/main.go
	@mkdir -p $(@D)
	$(GO_BUILD) -o $@ ./tests/guest/cri-client

# cos.ko, built out of tree with the output in $(O)/kmod (kbuild MO=, Linux >= 6.13).  kbuild's
# pahole runs through kmod/pahole-rededup, which dedups the module's BTF again so that its task
# arguments are vmlinux's struct task_struct (kmod/btf-rededup.c says why; dkms.conf does the same).
$(O)/kmod/btf-rededup: kmod/btf-rededup.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -o $@ $< -lbpf

# RESOLVE_BTFIDS_FLAGS= : no distilled base BTF (kbuild's --distill_base for external modules):
# the module's BTF ids are then vmlinux's, as the kfunc filter needs (kmod/cos_kfuncs.c).
$(O)/kmod/cos.ko: $(wildcard kmod/*.c kmod/*.h) shim/cos_shim_intf.h kmod/Kbuild kmod/pahole-rededup $(O)/kmod/btf-rededup \
		uapi/linux/cos.h
	@mkdir -p $(@D)
	COS_BTF_REDEDUP=$(CURDIR)/$(O)/kmod/btf-rededup $(MAKE) -C $(KDIR) M=$(CURDIR)/kmod \
		MO=$(CURDIR)/$(O)/kmod PAHOLE=$(CURDIR)/kmod/pahole-rededup RESOLVE_BTFIDS_FLAGS= modules

# The same module without BTF: the in-guest test checks that it refuses to load.
$(O)/kmod/cos-nobtf.ko: $(O)/kmod/cos.ko
	objcopy --remove-section=.BTF --remove-section=.BTF.base $< $@

# The same module with kbuild's distilled base BTF (what RESOLVE_BTFIDS_FLAGS= turns off): the
# in-guest test checks that it refuses to load, its kfunc ids would move (kmod/cos_kfuncs.c).
$(O)/kmod/cos-distilled.ko: $(O)/kmod/cos.ko
	@mkdir -p $(O)/kmod-distilled
	COS_BTF_REDEDUP=$(CURDIR)/$(O)/kmod/btf-rededup $(MAKE) -C $(KDIR) M=$(CURDIR)/kmod \
		MO=$(CURDIR)/$(O)/kmod-distilled PAHOLE=$(CURDIR)/kmod/pahole-rededup modules
	cp $(O)/kmod-distilled/cos.ko $@

# The shim: BPF object, then a libbpf skeleton that libcos embeds.
$(GEN)/vmlinux.h: $(VMLINUX)
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file $< format c > $@.tmp && mv $@.tmp $@

$(GEN)/cos_shim.bpf.o: shim/cos_shim.bpf.c shim/cos_shim_intf.h shim/shim_compat.h uapi/linux/cos.h \
		$(GEN)/vmlinux.h
	$(CLANG) -g -O2 -Wall -Wno-missing-declarations -target bpf -D__TARGET_ARCH_x86 -I$(GEN) -Iuapi -Ishim -c $< -o $@.tmp
	llvm-strip -g $@.tmp -o $@ && rm -f $@.tmp	# keep BTF, drop DWARF: the skeleton embeds it

$(GEN)/cos_shim.skel.h: $(GEN)/cos_shim.bpf.o
	$(BPFTOOL) gen skeleton $< name cos_shim_bpf > $@.tmp && mv $@.tmp $@

# libcos
$(O)/libcos/%.o: libcos/%.c $(LIBCOS_HDRS) $(GEN)/cos_shim.skel.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -fPIC -fvisibility=hidden -I$(GEN) -c $< -o $@

LIBCOS_OBJS := $(patsubst libcos/%.c,$(O)/libcos/%.o,$(LIBCOS_SRCS))

$(O)/lib/libcos.a: $(LIBCOS_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(O)/lib/libcos.so: $(LIBCOS_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libcos.so.$(COS_ABI) -o $@ $^ $(BPF_LIBS)

# libcos-lock.so: the pthread mutex interposer (LD_PRELOAD) with the hint code it needs (the
# app's side: its table, its records, the lock hints), not part of libcos (it would interpose
# every program that links libcos).  error and proc: their calls are among what it exports.
LOCK_PRELOAD_OBJS := lock_preload hint_lock hint_app hint_table error proc
$(O)/lib/libcos-lock.so: $(patsubst %,$(O)/libcos/%.o,$(LOCK_PRELOAD_OBJS))
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--no-undefined -o $@ $^ -ldl -lpthread

# tools
# cosctl: main() and the shared helpers, then one file per command group
COSCTL_SRCS := $(addprefix tools/,cosctl.c cosctl_status.c cosctl_groups.c cosctl_module.c \
	cosctl_shim.c cosctl_run.c cosctl_stats.c cosctl_trace.c)
$(O)/bin/cosctl: $(COSCTL_SRCS) tools/cosctl.h $(O)/lib/libcos.a libcos/cos.h libcos/cos_trace.h uapi/linux/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) $(filter %.c,$^) -o $@ $(O)/lib/libcos.a $(BPF_LIBS) -ljansson

# a Python program (Perfetto's own protos through the perfetto package, when it runs)
$(O)/bin/cos-perfetto: tools/cos-perfetto
	@mkdir -p $(@D)
	install -m755 $< $@

$(O)/bin/cos-replay: tools/cos-replay.c $(O)/lib/libcos.a libcos/cos.h libcos/cos_trace.h uapi/linux/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) $< -o $@ $(O)/lib/libcos.a $(BPF_LIBS)

$(O)/bin/cos-oci-hook: tools/cos-oci-hook.c $(O)/lib/libcos.a libcos/cos.h uapi/linux/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) $< -o $@ $(O)/lib/libcos.a $(BPF_LIBS) -ljansson

# the benchmarks: bench/cos-bench-*.c, each with the shared bench/bench.c
BENCH_LIB := bench/bench.c bench/bench.h

$(O)/bin/cos-bench-delegation: bench/cos-bench-delegation.c $(BENCH_LIB) $(O)/lib/libcos.a libcos/cos.h uapi/linux/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ $(O)/lib/libcos.a $(BPF_LIBS) -lm -lpthread

$(O)/bin/cos-bench-lord: bench/cos-bench-lord.c $(BENCH_LIB) $(O)/lib/libcos.a libcos/cos.h uapi/linux/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ $(O)/lib/libcos.a $(BPF_LIBS) -lm -lpthread

$(O)/bin/cos-bench-shinjuku: bench/cos-bench-shinjuku.c $(BENCH_LIB) $(O)/lib/libcos.a libcos/cos.h uapi/linux/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ $(O)/lib/libcos.a $(BPF_LIBS) -lrocksdb -lm -lpthread

$(O)/bin/cos-bench-framework: bench/cos-bench-framework.c $(BENCH_LIB) $(O)/lib/libcos.a libcos/cos.h libcos/internal.h libcos/cos_trace.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ $(O)/lib/libcos.a $(BPF_LIBS) -lm -lpthread

$(O)/bin/cos-bench-wakeup: bench/cos-bench-wakeup.c $(BENCH_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ -lm

$(O)/bin/cos-bench-pair: bench/cos-bench-pair.c $(BENCH_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ -lm

$(O)/bin/cos-bench-bandwidth: bench/cos-bench-bandwidth.c $(BENCH_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ -lm

$(O)/bin/cos-bench-lock: bench/cos-bench-lock.c $(BENCH_LIB) $(O)/lib/libcos.a libcos/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ $(O)/lib/libcos.a $(BPF_LIBS) -lm -lpthread

$(O)/bin/cos-bench-leveldb: bench/cos-bench-leveldb.c $(BENCH_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench $< bench/bench.c -o $@ -lleveldb -lm -lpthread

# cos-bench-waits: a BPF program on the scheduler's tracepoints, as a libbpf skeleton
$(GEN)/cos-bench-waits.bpf.o: bench/cos-bench-waits.bpf.c bench/cos-bench-waits.h $(GEN)/vmlinux.h
	$(CLANG) -g -O2 -Wall -Wno-missing-declarations -target bpf -D__TARGET_ARCH_x86 -I$(GEN) -Ibench -c $< -o $@.tmp
	llvm-strip -g $@.tmp -o $@ && rm -f $@.tmp

$(GEN)/cos-bench-waits.skel.h: $(GEN)/cos-bench-waits.bpf.o
	$(BPFTOOL) gen skeleton $< name cos_bench_waits_bpf > $@.tmp && mv $@.tmp $@

$(O)/bin/cos-bench-waits: bench/cos-bench-waits.c bench/cos-bench-waits.h $(GEN)/cos-bench-waits.skel.h $(BENCH_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -Ibench -I$(GEN) $< bench/bench.c -o $@ -lbpf -lelf -lz -lm

# policies: one program per policies/*.c
$(O)/bin/cos-%: policies/cos-%.c policies/lord_main.c policies/lord_main.h policies/lord_stats.c policies/lord_trace.c policies/lord_trace.h \
		policies/lord_stats.h $(O)/lib/libcos.a libcos/cos.h uapi/linux/cos.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) $< policies/lord_main.c policies/lord_stats.c policies/lord_trace.c -o $@ \
		$(O)/lib/libcos.a $(BPF_LIBS) -ljansson -lsystemd -lpthread

# The example policy of docs/writing-a-policy.md, compiled as printed there.
POLICY_DOC := docs/writing-a-policy.md
$(O)/bin/example-policy: $(POLICY_DOC) $(O)/lib/libcos.a libcos/cos.h uapi/linux/cos.h
	@mkdir -p $(GEN) $(@D)
	awk '/^```c/ { inb = 1; buf = ""; next } /^```/ { if (inb && buf ~ /my-policy.c/) printf "%s", buf; inb = 0; next } inb { buf = buf $$0 "\n" }' $(POLICY_DOC) > $(GEN)/example-policy.c
	@test -s $(GEN)/example-policy.c || { echo "$(POLICY_DOC): the my-policy.c example is missing" >&2; exit 1; }
	$(CC) $(CFLAGS) -std=c11 $(WARN) -Iuapi -Ilibcos $(GEN)/example-policy.c -o $@ $(O)/lib/libcos.a $(BPF_LIBS)

# In-guest tests: one Catch2 binary per tests/guest/test_*.cpp.
# test_kfuncs's rogue schedulers (tests/guest/rogue_shim.bpf.c): loaded, never attached.
# test_kfuncs's look-alike scheduler (tests/guest/rogue_bind.bpf.c): attached.
$(O)/tests/rogue-bind.bpf.o: tests/guest/rogue_bind.bpf.c shim/cos_shim_intf.h shim/shim_compat.h \
		uapi/linux/cos.h $(GEN)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -Wall -Wno-missing-declarations -target bpf -D__TARGET_ARCH_x86 \
		-I$(GEN) -Iuapi -Ishim -c $< -o $@

# test_shim's other scheduler (tests/guest/other_sched.bpf.c): attached, cos refuses beside it.
$(O)/tests/other-sched.bpf.o: tests/guest/other_sched.bpf.c $(GEN)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -Wall -Wno-missing-declarations -target bpf -D__TARGET_ARCH_x86 -I$(GEN) -c $< -o $@

$(O)/tests/rogue-%.bpf.o: tests/guest/rogue_shim.bpf.c shim/cos_shim_intf.h uapi/linux/cos.h $(GEN)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -Wall -Wno-missing-declarations -target bpf -D__TARGET_ARCH_x86 -DROGUE_$(shell echo $* | tr a-z A-Z) \
		-I$(GEN) -Iuapi -Ishim -c $< -o $@

$(O)/tests/%: tests/guest/%.cpp $(wildcard tests/guest/*.h) $(O)/lib/libcos.a libcos/cos.h
	@mkdir -p $(@D)
	$(CXX) $(CFLAGS) $(TEST_CXXFLAGS) -I$(GEN) $< -o $@ $(O)/lib/libcos.a $(BPF_LIBS) $(CATCH2) -lcap -lpthread

# Host unit tests: the kernel-independent parts of libcos, and the benchmarks' library.
$(U)/%.o: libcos/%.c $(LIBCOS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -c $< -o $@

# The interposer and a program it is tested on (test_hint.cpp).
$(U)/pic/%.o: libcos/%.c $(LIBCOS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(U)/libcos-lock.so: $(patsubst %,$(U)/pic/%.o,$(LOCK_PRELOAD_OBJS))
	$(CC) -shared -Wl,--no-undefined -o $@ $^ -ldl -lpthread

$(U)/lock-helper: tests/unit/lock_helper.c
	$(CC) $(CFLAGS) -std=c11 $(WARN) -D_GNU_SOURCE $< -o $@ -lpthread

$(U)/bench.o: bench/bench.c bench/bench.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(COS_CFLAGS) -c $< -o $@

# The fuzz target of the lord's hint reader (tests/fuzz/): libFuzzer, ASan and UBSan, with
# libcos's sources built into it.  make test runs it for a fixed time on the corpus in the tree.
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(U)/fuzz-hint: tests/fuzz/fuzz_hint.c libcos/hint_cache.c libcos/hint_finder.c libcos/hint_table.c \
		libcos/proc.c libcos/error.c $(LIBCOS_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) $(COS_CFLAGS) $(filter %.c,$^) -o $@ -lpthread

$(U)/cos-unit: $(UNIT_SRCS) $(U)/trace.o $(U)/replay.o $(U)/status.o $(U)/error.o $(U)/device.o $(U)/sched.o \
		$(U)/hint_table.o $(U)/hint_app.o $(U)/hint_lock.o $(U)/hint_cache.o $(U)/hint_finder.o $(U)/proc.o $(U)/cpus.o $(U)/bench.o
	$(CXX) $(CFLAGS) $(TEST_CXXFLAGS) -Itests/unit -Ibench $(filter-out %.h,$^) -o $@ $(CATCH2) -lcap -lm

endif
