// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl.c — the cos command line: main() (the global options, each command's words), the
 * usage text, and the helpers every command uses.  The commands are in one file per group:
 * cosctl_status.c (status, tasks), cosctl_groups.c, cosctl_module.c (load, unload),
 * cosctl_shim.c, cosctl_run.c, cosctl_stats.c (stats, metrics), cosctl_trace.c; cosctl.h is
 * what they share.  See docs/operating.md, "cosctl".
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cos.h>

#include "cosctl.h"

static const char usage[] =
	"usage: cosctl [--json] COMMAND [ARG...]\n"
	"\n"
	"commands:\n"
	"  status [--check]  module (ABI, features), sched_ext state, shim, enclaves and their\n"
	"                    lords, counters, and what is missing; --check: only what is missing,\n"
	"                    exit status 1 if anything is\n"
	"  tasks             the COS tasks: state, CPU, CPU time, last event and how long ago\n"
	"  groups            the bandwidth groups (cgroups with a cpu controller) the shim knows:\n"
	"                    rate (cpu.max), weight, usage in the last period, throttling, tasks\n"
	"  groups set [--period US] PATH RATE%|max\n"
	"                    cap cgroup PATH at RATE % of one CPU (e.g. 600%: six CPUs' worth) by\n"
	"                    writing its cpu.max; max removes the cap.  US: the period (100000)\n"
	"  load [--path FILE] [PARAM=VALUE...]\n"
	"                    load cos.ko: the one installed for the running kernel (modprobe), or\n"
	"                    FILE (insmod); parameters such as max_tasks=8192\n"
	"  unload            unload cos.ko (fails while a lord, the shim or an open /dev/cos holds it)\n"
	"  stats [--enclave NAME] [--monitor SEC]\n"
	"                    each running lord's statistics (its framework's and its policy's\n"
	"                    counters), read from its socket; --monitor: again every SEC seconds\n"
	"  metrics           Prometheus text: the module's, the enclaves', the bandwidth groups'\n"
	"                    and each lord's counters (node_exporter's textfile collector)\n"
	"  shim attach [--partial CPUS]\n"
	"                    attach the cos BPF shim and pin it so it stays after cosctl exits.\n"
	"                    --partial: partial mode, only COS tasks on sched_ext, every other\n"
	"                    task stays on the kernel's scheduler; CPUS (e.g. 1-3) become a cpuset\n"
	"                    partition (" COS_PARTITION_PATH ") where only COS tasks run\n"
	"  shim detach       detach a pinned shim (and remove partial mode's partition)\n"
	"  run [--policy-class N] [--enclave NAME] [--] CMD [ARG...]\n"
	"                    run CMD as a COS task (policy SCHED_EXT, inherited by its threads and\n"
	"                    children): a lord, e.g. cos-fifo, schedules it on its enclave.  In\n"
	"                    partial mode CMD first moves into the partition's cgroup\n"
	"                    --policy-class N: CMD's main thread starts with app hint class N\n"
	"                    (cos-shinjuku: 1 = most urgent); its own libcos calls can change it\n"
	"  trace [--enclave NAME] [--seconds N] [-o FILE] [--summary]\n"
	"                    record what the lords decided and what the kernel ran for N seconds\n"
	"                    (5) and write a Perfetto trace to FILE (cos.pftrace; docs/tracing.md)\n"
	"  help              this text\n"
	"\n"
	"options (anywhere, but not inside run's CMD):\n"
	"  -j, --json        machine-readable output (status, tasks, groups, load, unload, stats)\n"
	"  -h, --help        this text; after a command, that command's\n"
	"  -V, --version     the version, and the ABI of libcos and of the cos.ko loaded\n"
	"\n"
	"Most commands need root.  Exit status: 0 on success, 1 on failure, 2 on bad usage.\n";

/* Are the @k bytes at @s one valid UTF-8 character (as jansson checks it)? */
static bool utf8_char(const char *s, int k)
{
	json_t *j = json_stringn(s, k);

	json_decref(j);
	return j;
}

/* JSON text must be UTF-8: each byte that does not start a valid character becomes U+FFFD. */
json_t *json_text(const char *s)
{
	size_t len = strlen(s), n = 0;
	json_t *j = json_stringn(s, len);
	char *buf;

	if (j)
		return j;
	buf = malloc(3 * len + 1);
	if (!buf)
		return json_null();
	while (*s) {
		unsigned char c = (unsigned char)*s;
		int k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			(c & 0xf8) == 0xf0 ? 4 : 0;
		int i;

		for (i = 1; i < k && ((unsigned char)s[i] & 0xc0) == 0x80; i++)
			;
		if (k && i == k && (k == 1 || utf8_char(s, k))) {	/* one valid character */
			memcpy(buf + n, s, k);
			n += k;
			s += k;
		} else {
			memcpy(buf + n, "\xef\xbf\xbd", 3);
			n += 3;
			s++;
		}
	}
	j = json_stringn(buf, n);
	free(buf);
	return j ? j : json_null();
}

/* Print @j (compact, one line) and free it. */
void json_print(json_t *j)
{
	json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(j);
}

/* Say what went wrong (a libcos error): exit status 1. */
int fail(int err)
{
	fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
	return 1;
}

/* A global option (-j, -h, -V and their long names): its letter, 0 if @arg is none. */
static int global_opt(const char *arg)
{
	if (!strcmp(arg, "-j") || !strcmp(arg, "--json"))
		return 'j';
	if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
		return 'h';
	if (!strcmp(arg, "-V") || !strcmp(arg, "--version"))
		return 'V';
	return 0;
}

static const struct command {
	const char *name;
	const char *usage;
	int (*fn)(int argc, char **argv, int json);
} commands[] = {
	{ "status", status_usage, cmd_status },
	{ "tasks", tasks_usage, cmd_tasks },
	{ "groups", groups_usage, cmd_groups },
	{ "load", load_usage, cmd_load },
	{ "unload", unload_usage, cmd_unload },
	{ "shim", shim_usage, cmd_shim },
	{ "stats", stats_usage, cmd_stats },
	{ "metrics", metrics_usage, cmd_metrics },
	{ "run", run_usage, cmd_run },
	{ "trace", trace_usage, cmd_trace },
};

/* The command named @name, or NULL. */
static const struct command *find_command(const char *name)
{
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(name, commands[k].name))
			return &commands[k];
	return NULL;
}

/*
 * The words after @cmd's name (@argv[@first..@argc)) into @args, *@n of them, less the global
 * options (-j sets *@json): -1 to go on, else the exit status (-h and -V end cosctl here).
 * Run's command: run's own options end at its first word that is not one (or --), and the
 * global ones are taken up to there (the value of --enclave or --policy-class is not a word).
 */
static int command_args(const struct command *cmd, int argc, char **argv, int first,
			char **args, int *n, int *json)
{
	for (int k = first; k < argc; k++) {
		bool in_cmd = false;

		if (cmd->fn == cmd_run) {	/* past run's options: CMD's own words */
			in_cmd = !strcmp(argv[k], "--") || argv[k][0] != '-';
			if ((!strcmp(argv[k], "--enclave") || !strcmp(argv[k], "--policy-class")) &&
			    k + 1 < argc) {
				args[(*n)++] = argv[k++];
				args[(*n)++] = argv[k];
				continue;
			}
		}
		if (in_cmd) {
			while (k < argc)
				args[(*n)++] = argv[k++];
			break;
		}
		switch (global_opt(argv[k])) {
		case 'j':
			*json = 1;
			break;
		case 'h':
			fputs(cmd->usage, stdout);
			return 0;
		case 'V':
			cos_print_version(stdout, "cosctl");
			return 0;
		default:
			args[(*n)++] = argv[k];
		}
	}
	return -1;
}

/* The global options may come before the command and among its words (command_args()). */
int main(int argc, char **argv)
{
	const struct command *cmd;
	int json = 0, i, n = 0, rc;
	char **args;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		switch (global_opt(argv[i])) {
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			cos_print_version(stdout, "cosctl");
			return 0;
		default:
			fprintf(stderr, "cosctl: unknown option '%s'\nTry 'cosctl --help' for more.\n",
				argv[i]);
			return 2;
		}
	}
	if (i == argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(argv[i], "help")) {
		fputs(usage, stdout);
		return 0;
	}
	cmd = find_command(argv[i]);
	if (!cmd) {
		fprintf(stderr, "cosctl: unknown command '%s'\nTry 'cosctl --help' for more.\n",
			argv[i]);
		return 2;
	}
	args = calloc(argc, sizeof(*args));
	if (!args)
		return fail(-ENOMEM);
	rc = command_args(cmd, argc, argv, i + 1, args, &n, &json);
	if (rc < 0)
		rc = cmd->fn(n, args, json);
	free(args);
	return rc;
}
