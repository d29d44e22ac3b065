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

/* Run's options: where its command runs and how it starts. */
struct run_options {
	const char *enclave;	/* --enclave NAME, or NULL */
	long hint_class;	/* --policy-class N, or -1 */
};

/*
 * Take run's options off the front of @argc and @argv into @o, and the -- after them: -1 to go
 * on with the command left there, else the exit status (--help, bad usage).
 */
static int parse_run_options(int *argc, char ***argv, struct run_options *o)
{
	while (*argc > 0 && strcmp((*argv)[0], "--")) {
		const char *arg = (*argv)[0], *v = NULL;
		char *end;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			fputs(run_usage, stdout);
			return 0;
		} else if (!strcmp(arg, "--enclave") || !strncmp(arg, "--enclave=", 10)) {
			if (arg[9] == '=') {
				o->enclave = arg + 10;
			} else if (*argc > 1) {
				o->enclave = (*argv)[1];
				(*argc)--, (*argv)++;
			}
			if (!o->enclave || !o->enclave[0]) {
				fprintf(stderr, "cosctl run: --enclave needs a NAME\n%s", run_usage);
				return 2;
			}
			(*argc)--, (*argv)++;
			continue;
		} else if (!strcmp(arg, "--policy-class") && *argc > 1) {
			v = (*argv)[1];
			(*argc)--, (*argv)++;
		} else if (!strncmp(arg, "--policy-class=", 15)) {
			v = arg + 15;
		} else if (arg[0] == '-') {
			/* an option of ours we do not know, not a command: commands come after -- */
			fprintf(stderr, "cosctl run: unknown option '%s'\n%s", arg, run_usage);
			return 2;
		} else {
			break;
		}
		o->hint_class = strtol(v, &end, 10);
		if (*end || end == v || o->hint_class < 0 || o->hint_class > COS_HINT_CLASS_MAX) {
			fprintf(stderr, "cosctl run: bad --policy-class '%s'\n", v);
			return 2;
		}
		(*argc)--, (*argv)++;
	}
	if (*argc > 0 && !strcmp((*argv)[0], "--")) {
		(*argc)--;
		(*argv)++;
	}
	if (*argc == 0) {
		fputs(run_usage, stderr);
		return 2;
	}
	return -1;
}

/* Publish hint class @hint_class for this thread, kept across exec: 0, or exit status 1. */
static int publish_hint_class(long hint_class)
{
	struct cos_hint *h = cos_hint_self();

	if (!h || cos_hint_keep_on_exec()) {
		fprintf(stderr, "cosctl run: cannot make the hint record: %s\n",
			strerror(h ? ENOENT : errno));
		return 1;
	}
	cos_hint_set(h, hint_class, 0, 0);
	return 0;
}

/* Become a COS task (in partial mode in the partition first): 0, or exit status 1 (said). */
static int become_cos_task(void)
{
	struct sched_param sp = { 0 };
	int err;

	/* partial mode: only the partition's CPUs are kept for COS tasks, so go there first */
	if (cos_shim_partial() == 1) {
		err = cos_partition_enter(0);
		if (err) {
			fprintf(stderr, "cosctl run: %s\n", cos_strerror(err));
			return 1;
		}
	}
	if (sched_setscheduler(0, COS_SCHED_EXT, &sp)) {
		err = errno;
		fprintf(stderr, "cosctl run: cannot switch to SCHED_EXT: %s%s\n", strerror(err),
			err == EINVAL ? " (does this kernel have sched_ext?)" : "");
		return 1;
	}
	return 0;
}

int cmd_run(int argc, char **argv, int json)
{
	struct run_options o = { .hint_class = -1 };
	int rc = parse_run_options(&argc, &argv, &o);

	if (rc >= 0)
		return rc;
	if (o.hint_class >= 0 && publish_hint_class(o.hint_class))
		return 1;
	if (o.enclave && run_in_enclave(o.enclave))
		return 1;
	if (become_cos_task())
		return 1;
	execvp(argv[0], argv);
	fprintf(stderr, "cosctl run: %s: %s\n", argv[0], strerror(errno));
	return 127;
}
