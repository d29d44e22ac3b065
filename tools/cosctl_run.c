// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl_run.c — `cosctl run`: become a COS task and exec the command.  The policy survives
 * exec and is inherited by the command's threads and children.  With --policy-class the hint
 * table (kept open across exec) carries a record for this thread, which becomes the command's
 * main thread.  See docs/operating.md, "cosctl".
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cos.h>

#include "cosctl.h"

const char run_usage[] =
	"usage: cosctl run [--policy-class N] [--enclave NAME] [--] CMD [ARG...]\n"
	"Run CMD as a COS task (SCHED_EXT, inherited by its threads and children): a lord places\n"
	"it, or the shim's fair policy runs it while there is none.  --policy-class N publishes\n"
	"hint class N for its main thread.  --enclave NAME runs it on the CPUs of the enclave\n"
	"registered as NAME (or cos-NAME), under its lord, and refuses when no such lord runs\n"
	"(`cosctl status` lists them; needs CAP_SYS_NICE).  Options end at the first word that is\n"
	"not one, or at --.\n"
	"In partial mode CMD runs in the partition's cgroup (" COS_PARTITION_PATH "), on its CPUs.\n";

/* Confine this process to the CPUs of the enclave named @name: 0, or exit status 1 (said). */
static int run_in_enclave(const char *name)
{
	struct cos_enclave_info e;
	int fd = cos_open(), err;

	err = fd < 0 ? fd : cos_find_enclave(fd, name, &e);
	if (fd >= 0)
		close(fd);
	if (err) {
		fprintf(stderr, "cosctl run: --enclave %s: %s\n", name, cos_strerror(err));
		return 1;
	}
	if (e.flags & COS_ENCLAVE_F_CPUS_CUT) {
		fprintf(stderr, "cosctl run: --enclave %s: its CPUs go past CPU %zu\n", name,
			8 * sizeof(e.cpus) - 1);
		return 1;
	}
	/* a COS task whose CPUs are all outside the enclave never waits for its lord */
	if (sched_setaffinity(0, sizeof(e.cpus), (const cpu_set_t *)e.cpus)) {
		fprintf(stderr, "cosctl run: --enclave %s: cannot run on its CPUs: %s\n", name,
			strerror(errno));
		return 1;
	}
	return 0;
}

int cmd_run(int argc, char **argv, int json)
{
	struct sched_param sp = { 0 };
	const char *enclave = NULL;
	long hint_class = -1;

	while (argc > 0 && strcmp(argv[0], "--")) {
		const char *v = NULL;
		char *end;

		if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
			fputs(run_usage, stdout);
			return 0;
		} else if (!strcmp(argv[0], "--enclave") || !strncmp(argv[0], "--enclave=", 10)) {
			if (argv[0][9] == '=') {
				enclave = argv[0] + 10;
			} else if (argc > 1) {
				enclave = argv[1];
				argc--, argv++;
			}
			if (!enclave || !enclave[0]) {
				fprintf(stderr, "cosctl run: --enclave needs a NAME\n%s", run_usage);
				return 2;
			}
			argc--, argv++;
			continue;
		} else if (!strcmp(argv[0], "--policy-class") && argc > 1) {
			v = argv[1];
			argc--, argv++;
		} else if (!strncmp(argv[0], "--policy-class=", 15)) {
			v = argv[0] + 15;
		} else if (argv[0][0] == '-') {
			/* an option of ours we do not know, not a command: commands come after -- */
			fprintf(stderr, "cosctl run: unknown option '%s'\n%s", argv[0], run_usage);
			return 2;
		} else {
			break;
		}
		hint_class = strtol(v, &end, 10);
		if (*end || end == v || hint_class < 0 || hint_class > COS_HINT_CLASS_MAX) {
			fprintf(stderr, "cosctl run: bad --policy-class '%s'\n", v);
			return 2;
		}
		argc--, argv++;
	}
	if (argc > 0 && !strcmp(argv[0], "--")) {
		argc--;
		argv++;
	}
	if (argc == 0) {
		fputs(run_usage, stderr);
		return 2;
	}
	if (hint_class >= 0) {
		struct cos_hint *h = cos_hint_self();

		if (!h || cos_hint_keep_on_exec()) {
			fprintf(stderr, "cosctl run: cannot make the hint record: %s\n",
				strerror(h ? ENOENT : errno));
			return 1;
		}
		cos_hint_set(h, hint_class, 0, 0);
	}
	if (enclave && run_in_enclave(enclave))
		return 1;
	/* partial mode: only the partition's CPUs are kept for COS tasks, so go there first */
	if (cos_shim_partial() == 1) {
		int err = cos_partition_enter(0);

		if (err) {
			fprintf(stderr, "cosctl run: %s\n", cos_strerror(err));
			return 1;
		}
	}
	if (sched_setscheduler(0, COS_SCHED_EXT, &sp)) {
		int err = errno;

		fprintf(stderr, "cosctl run: cannot switch to SCHED_EXT: %s%s\n", strerror(err),
			err == EINVAL ? " (does this kernel have sched_ext?)" : "");
		return 1;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "cosctl run: %s: %s\n", argv[0], strerror(errno));
	return 127;
}
