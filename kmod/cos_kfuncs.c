// SPDX-License-Identifier: GPL-2.0
/*
 * cos_kfuncs.c — the kfunc set cos.ko offers to its BPF shim (struct_ops programs of sched_ext).
 *
 * sched_ext's own kfunc filter covers only vmlinux kfuncs, so this set carries its own filter:
 * only struct_ops programs that implement sched_ext_ops may call these.  A missing module BTF
 * makes register_btf_kfunc_id_set() warn and return 0, so cos_kfuncs_init() checks for the BTF
 * itself and refuses to load without it.
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/module.h>
#include <linux/string.h>

#include "cos.h"

__bpf_kfunc_start_defs();

/**
 * cos_kf_abi_version() - the COS_ABI_VERSION this module implements
 *
 * The shim calls it from ops.init and fails to attach when it differs from the version it was
 * built with.
 *
 * Context: any BPF context of a sched_ext_ops program; no locks taken, cannot sleep.
 * Return: COS_ABI_VERSION.
 */
__bpf_kfunc u32 cos_kf_abi_version(void)
{
	return COS_ABI_VERSION;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(cos_kfunc_ids)
BTF_ID_FLAGS(func, cos_kf_abi_version)
BTF_KFUNCS_END(cos_kfunc_ids)

/*
 * The verifier calls this for every kfunc of this module's BTF a program references.  While a
 * struct_ops program is first verified aux->st_ops may still be NULL: allow then, the program is
 * checked again once attached to its struct_ops type.
 */
static int cos_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	if (prog->type != BPF_PROG_TYPE_STRUCT_OPS)
		return -EACCES;
	if (prog->aux->st_ops && strcmp(prog->aux->st_ops->name, "sched_ext_ops"))
		return -EACCES;
	return 0;
}

static const struct btf_kfunc_id_set cos_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &cos_kfunc_ids,
	.filter = cos_kfunc_filter,
};

int cos_kfuncs_init(void)
{
	int ret;

	if (!THIS_MODULE->btf_data_size) {
		pr_err("module has no BTF (built without pahole?): the shim could not call it; refusing to load\n");
		return -ENOENT;
	}
	ret = register_btf_kfunc_id_set(BPF_PROG_TYPE_STRUCT_OPS, &cos_kfunc_set);
	if (ret)
		pr_err("cannot register the kfunc set: %d\n", ret);
	return ret;
}
