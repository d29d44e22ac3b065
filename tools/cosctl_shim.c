// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl_shim.c — `cosctl shim`: attach the cos BPF shim (full or partial mode) and pin it so
 * that it stays after cosctl exits, or detach the pinned one.  See docs/operating.md,
 * "cosctl", and docs/design.md, "8.6 Full and partial mode".
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <cos.h>

#include "cosctl.h"

const char shim_usage[] =
	"usage: cosctl shim attach [--partial CPUS]\n"
	"       cosctl shim detach\n"
	"attach: attach the cos BPF shim (the sched_ext scheduler cos runs on) and pin it at\n"
	COS_SHIM_PIN_PATH ", so that it stays after cosctl exits.  --partial: only COS tasks\n"
	"run on sched_ext, every other task stays on the kernel's scheduler; CPUS (e.g. 1-3)\n"
	"become a cpuset partition (" COS_PARTITION_PATH ") where only COS tasks run.\n"
	"detach: detach the pinned shim (and remove partial mode's partition).\n";

/* Attach the shim with @opts and pin it (@cpus: partial mode's CPU list, as given). */
static int shim_attach_pinned(const struct cos_shim_opts *opts, const char *cpus)
{
	struct cos_shim *shim;
	int err;

	err = cos_shim_attach(&shim, opts);
	if (err)
		return fail(err);
	err = cos_shim_pin(shim, NULL);
	if (err) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		cos_shim_detach(shim);
		return 1;
	}
	cos_shim_detach(shim);	/* drops our reference; the pin keeps it attached */
	if (opts->flags & COS_SHIM_F_PARTIAL)
		printf("shim attached in partial mode, COS tasks on CPUs %s (pinned at %s)\n",
		       cpus, COS_SHIM_PIN_PATH);
	else
		printf("shim attached (pinned at %s)\n", COS_SHIM_PIN_PATH);
	return 0;
}

int cmd_shim(int argc, char **argv, int json)
{
	struct cos_shim_opts opts = { .size = sizeof(opts) };
	const char *cpus = NULL;
	cpu_set_t part;
	int err;

	if (argc == 3 && !strcmp(argv[0], "attach") && !strcmp(argv[1], "--partial")) {
		if (cos_parse_cpus(argv[2], &part, sizeof(part))) {
			fprintf(stderr, "cosctl: bad CPU list '%s' (CPUs and ranges such as 1-3,5)\n",
				argv[2]);
			return 2;
		}
		opts.flags = COS_SHIM_F_PARTIAL;
		opts.partition = &part;
		opts.partition_size = sizeof(part);
		cpus = argv[2];
		argc = 1;
	}
	if (argc != 1) {
		fputs(shim_usage, stderr);
		return 2;
	}
	if (!strcmp(argv[0], "attach"))
		return shim_attach_pinned(&opts, cpus);
	if (strcmp(argv[0], "detach")) {
		fprintf(stderr, "cosctl shim: unknown command '%s'\n%s", argv[0], shim_usage);
		return 2;
	}
	err = cos_shim_detach_pinned(NULL);
	if (err)
		return fail(err);
	printf("shim detached\n");
	return 0;
}
