// SPDX-License-Identifier: GPL-2.0
/*
 * btf-rededup.c — a build tool, not part of cos.ko: run libbpf's BTF dedup again over a
 * module's split BTF (pahole's --btf_encode_detached output, over --btf_base vmlinux) until the
 * type count stops falling, and rewrite the file in place.
 *
 * Why: libbpf before 1.6 (Debian trixie's pahole links 1.5) leaves module copies of vmlinux
 * types after one pass.  gcc 14 emits __percpu pointers as distinct types and pahole drops the
 * address space, so two identical pointers compare unequal, and every struct that reaches one
 * (struct task_struct among them) stays a copy.  A second pass of 1.5 reaches 1.6's result.
 * Then the kfuncs' task arguments are vmlinux's struct task_struct, which the verifier can
 * require to be trusted (kmod/cos_kfuncs.c).  See docs/design.md, "How the kfuncs are bound
 * and filtered".
 *
 * Usage: btf-rededup BASE_BTF SPLIT_BTF (kmod/pahole-rededup calls it).  Exit 0 on success, 1
 * on failure, also when the result still has its own struct task_struct (the build fails).
 */
#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MAX_PASSES 8

int main(int argc, char **argv)
{
	unsigned int n, prev = 0, size, id;
	struct btf *base, *split;
	const void *raw;
	FILE *f;
	int i, err;

	if (argc != 3) {
		fprintf(stderr, "usage: btf-rededup BASE_BTF SPLIT_BTF\n");
		return 2;
	}
	base = btf__parse(argv[1], NULL);
	if (!base) {
		fprintf(stderr, "btf-rededup: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	split = btf__parse_split(argv[2], base);
	if (!split) {
		fprintf(stderr, "btf-rededup: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	for (i = 0; i < MAX_PASSES; i++) {
		n = btf__type_cnt(split);
		if (n == prev)
			break;
		prev = n;
		err = btf__dedup(split, NULL);
		if (err) {
			fprintf(stderr, "btf-rededup: dedup of %s: %s\n", argv[2], strerror(-err));
			return 1;
		}
	}
	/* What the kfuncs need: checked here, so that no build hands out a module they cannot use. */
	for (id = btf__type_cnt(base); id < btf__type_cnt(split); id++) {
		const struct btf_type *t = btf__type_by_id(split, id);

		if (btf_is_struct(t) && !strcmp(btf__name_by_offset(split, t->name_off), "task_struct")) {
			fprintf(stderr, "btf-rededup: %s still has its own struct task_struct after %d "
				"dedup passes: the shim could not pass cos.ko task pointers\n", argv[2], i);
			return 1;
		}
	}
	raw = btf__raw_data(split, &size);
	f = raw ? fopen(argv[2], "w") : NULL;
	if (!f || fwrite(raw, 1, size, f) != size || fclose(f)) {
		fprintf(stderr, "btf-rededup: cannot write %s\n", argv[2]);
		return 1;
	}
	btf__free(split);
	btf__free(base);
	return 0;
}
