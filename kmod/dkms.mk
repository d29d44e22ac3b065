# dkms.mk — DKMS's build of cos.ko (dkms.conf's MAKE[0]): btf-rededup for this machine, then the
# module through kbuild with pahole-rededup as its PAHOLE (kmod/btf-rededup.c says why).
# DKMS runs it as `make -jN KERNELRELEASE=... -C <build>/kmod -f dkms.mk KDIR=...`: a MAKE[0]
# that begins with `make` is given the machine's CPUs, and kbuild's make shares them through
# the jobserver.
KDIR ?= /lib/modules/$(KERNELRELEASE)/build

modules: btf-rededup
	$(MAKE) -C $(KDIR) M=$(CURDIR) PAHOLE=$(CURDIR)/pahole-rededup RESOLVE_BTFIDS_FLAGS= modules

btf-rededup: btf-rededup.c
	$(CC) -O2 -o $@ $< -lbpf

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -f btf-rededup

.PHONY: modules clean
