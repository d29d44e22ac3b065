/* SPDX-License-Identifier: GPL-2.0 */
/*
 * other_sched.bpf.c — a sched_ext scheduler that is not cos's: no callbacks, so sched_ext's
 * defaults run every task (one global queue).  test_shim attaches it to check what cos says
 * while another scheduler holds sched_ext: the shim's attach, `cosctl status --check` and a
 * lord refuse, and name what to stop.  See docs/testing.md.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

SEC(".struct_ops.link")
struct sched_ext_ops other_ops = {
	.name = "cos_test_other",
};
