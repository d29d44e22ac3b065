// SPDX-License-Identifier: GPL-2.0
/*
 * cos-replay — run a policy on a lord's recording (`cosctl trace` writes NAME.lord files) and
 * say where its decisions differ from the recorded ones.  It finds the policy program the
 * recording names (beside itself first, then on PATH) and runs it with --replay, with the
 * recorded options or those given after "--".  See docs/tracing.md.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cos_trace.h>

#define MAX_ARGS	64

static void usage(FILE *f)
{
	fputs("usage: cos-replay [-p PROGRAM] FILE [-- POLICY-OPTIONS...]\n\n"
	      "Feed a lord's recording (a NAME.lord file of `cosctl trace`) to a policy again,\n"
	      "deterministically, without the kernel: it prints the steps where the policy's\n"
	      "placements differ from the recorded ones, then the counters it would have shown.\n\n"
	      "  -p, --policy PROGRAM  the policy program (default: the recording's, if it is one\n"
	      "                        of cos-fifo, cos-shinjuku, cos-lock, cos-lcbe, cos-pair)\n"
	      "  -h, --help            this text\n"
	      "  -V, --version         the version\n\n"
	      "With no POLICY-OPTIONS the recorded ones are used; give others after \"--\" to see\n"
	      "what they change, e.g. cos-replay web.lord -- --slice-us 1000\n\n"
	      "Exit status: 0 the same decisions, 1 different ones, 2 a bad call or recording.\n", f);
}

/* @prog beside this program (a build tree, or /usr/bin), else the name for PATH. */
static const char *find_program(const char *prog, char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (strchr(prog, '/'))
		return prog;
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, len, "%s/%s", self, prog);
			if (!access(buf, X_OK))
				return buf;
		}
	}
	return prog;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char *args[MAX_ARGS + 4], recorded[sizeof(((struct cos_trace_header *)0)->args)];
	char path[PATH_MAX + 64], prog_name[64];
	const char *prog = NULL, *file;
	struct cos_replay *r;
	int c, n = 0, err;

	while ((c = getopt_long(argc, argv, "+p:hV", longs, NULL)) != -1) {
		switch (c) {
		case 'p': prog = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': cos_print_version(stdout, "cos-replay"); return 0;
		default:
			fputs("Try 'cos-replay --help' for more.\n", stderr);
			return 2;
		}
	}
	if (optind >= argc || (optind + 1 < argc && strcmp(argv[optind + 1], "--"))) {
		fputs("cos-replay: one recording, then \"--\" and the policy's options if others\n"
		      "Try 'cos-replay --help' for more.\n", stderr);
		return 2;
	}
	file = argv[optind];
	err = cos_replay_open(&r, file);
	if (err) {
		fprintf(stderr, "cos-replay: %s\n", cos_strerror(err));
		return 2;
	}
	snprintf(prog_name, sizeof(prog_name), "%s", cos_replay_header(r)->policy);
	snprintf(recorded, sizeof(recorded), "%s", cos_replay_header(r)->args);
	cos_replay_close(r);
	if (!prog) {
		/* a recording is a file from anywhere: it picks among the sample lords only */
		static const char *const known[] = { "cos-fifo", "cos-shinjuku", "cos-lock",
						      "cos-lcbe", "cos-pair" };

		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]) && !prog; i++)
			if (!strcmp(prog_name, known[i]))
				prog = known[i];
		if (!prog) {
			fprintf(stderr, "cos-replay: the recording names the program '%s'; say which "
				"to run with --policy\n", prog_name);
			return 2;
		}
	}
	prog = find_program(prog, path, sizeof(path));
	args[n++] = (char *)prog;
	args[n++] = "--replay";
	args[n++] = (char *)file;
	if (optind + 1 < argc) {
		for (int i = optind + 2; i < argc && n < MAX_ARGS; i++)
			args[n++] = argv[i];
	} else {
		/* the recorded options: split at blanks (as the lord joined them) */
		for (char *save, *w = strtok_r(recorded, " ", &save); w && n < MAX_ARGS;
		     w = strtok_r(NULL, " ", &save))
			args[n++] = w;
	}
	args[n] = NULL;
	execvp(prog, args);
	fprintf(stderr, "cos-replay: cannot run %s: %m\n", prog);
	return 2;
}
