/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cos.h — the one cos ABI: what the module (kmod/), the BPF shim and libcos share.
 *
 * Nothing here is copied by hand anywhere else.  Only fixed-width types, so the BPF shim can
 * include it after vmlinux.h.
 *
 * Extensible structs.  Every ioctl argument starts with a __u32 @size that user space sets to
 * sizeof() of the struct as it was compiled.  The module accepts any @size that is a multiple of 8,
 * at least the struct's *_SIZE_VER0 and at most COS_STRUCT_SIZE_MAX, and answers -EINVAL otherwise
 * ("unknown size").  Output fields are written up to min(@size, the module's size); bytes past the
 * module's size are zeroed and @size is set to the number of bytes the module filled.  Input fields
 * past the module's size must be zero (else -E2BIG), so old modules refuse requests they would
 * misread.  The ioctl number encodes the struct size too; the module ignores those bits and
 * dispatches on the command number, so binaries built against other versions of this header reach
 * the same command.
 */
#ifndef _UAPI_LINUX_COS_H
#define _UAPI_LINUX_COS_H

#ifndef __VMLINUX_H__		/* BPF programs get these types from vmlinux.h */
#include <linux/types.h>
#include <linux/ioctl.h>
#endif

/* Bumped on any incompatible change; the shim refuses to attach to a module of another version. */
#define COS_ABI_VERSION		1

#define COS_DEVICE_NAME		"cos"
#define COS_DEVICE_PATH		"/dev/cos"

/* The sched_ext ops name of the shim, as seen in /sys/kernel/sched_ext/root/ops. */
#define COS_SHIM_NAME		"cos"

#define COS_STRUCT_SIZE_MAX	4096

/* Feature bits (struct cos_info.features). */
#define COS_FEAT_KFUNCS		(1ULL << 0)	/* kfunc set for the shim registered */

/**
 * struct cos_info - what this module offers (COS_IOC_GET_INFO)
 * @size:		in: sizeof(struct cos_info) as the caller knows it; out: bytes filled
 * @abi_version:	COS_ABI_VERSION of the module
 * @features:		COS_FEAT_* bits
 * @nr_cpu_ids:		number of possible CPU ids (width of every cpumask in this ABI)
 * @kernel_version:	LINUX_VERSION_CODE the module was built against
 */
struct cos_info {
	__u32 size;
	__u32 abi_version;
	__u64 features;
	__u32 nr_cpu_ids;
	__u32 kernel_version;
};
#define COS_INFO_SIZE_VER0	24

#define COS_IOC_MAGIC		0xCE

#ifndef __VMLINUX_H__
/* Get struct cos_info.  Errors: EINVAL (size), EFAULT (pointer). */
#define COS_IOC_GET_INFO	_IOWR(COS_IOC_MAGIC, 0x00, struct cos_info)
#endif

#endif /* _UAPI_LINUX_COS_H */
