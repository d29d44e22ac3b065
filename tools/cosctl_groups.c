// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl_groups.c — `cosctl groups`: list the bandwidth groups the shim knows (cgroups with a
 * cpu controller), or set one's rate (its cpu.max).  See docs/operating.md, "cosctl", and
 * docs/design.md, "7. CPU bandwidth".
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cos.h>

#include "cosctl.h"

const char groups_usage[] =
	"usage: cosctl groups [--json]\n"
	"       cosctl groups set [--period US] PATH RATE%|max\n"
	"The bandwidth groups the shim knows (cgroups with a cpu controller): rate (cpu.max),\n"
	"period, weight, usage in the last period and in all, throttling, tasks.\n"
	"set: cap cgroup v2 directory PATH at RATE % of one CPU (0 < RATE <= 100 x the online\n"
	"CPUs): writes QUOTA PERIOD to its cpu.max, QUOTA = RATE x PERIOD / 100 (at least 1000 us).\n"
	"max removes the cap.  PERIOD is US microseconds, 1000..1000000 (default 100000).\n";

/* The number of lines of @file (a cgroup's cgroup.threads: its tasks), -1 if unreadable. */
static long count_lines(const char *dir, const char *file)
{
	char path[4096 + 32];
	long n = 0;
	FILE *f;
	int c;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* One group's JSON object: @path its cgroup, @tasks how many it has (-1: unknown). */
static json_t *group_json(const struct cos_group_info *g, const char *path, long tasks)
{
	bool limited = g->quota_ns != COS_GROUP_NO_QUOTA;

	return json_pack("{s:I,s:I,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:b,s:I}",
			 "id", (json_int_t)g->id, "parent_id", (json_int_t)g->parent_id,
			 "path", json_text(path),
			 "quota_ns", limited ? json_integer((json_int_t)g->quota_ns) : json_null(),
			 "period_ns", (json_int_t)g->period_ns, "burst_ns", (json_int_t)g->burst_ns,
			 "runtime_ns", (json_int_t)g->runtime_ns,
			 "usage_ns", (json_int_t)g->usage_ns,
			 "last_usage_ns", (json_int_t)g->last_usage_ns,
			 "throttled_ns", (json_int_t)g->throttled_ns,
			 "nr_throttled", (json_int_t)g->nr_throttled,
			 "overrun_ns", (json_int_t)g->overrun_ns, "weight", g->weight,
			 "throttled", (g->flags & COS_GROUP_F_THROTTLED) != 0,
			 "tasks", (json_int_t)tasks);
}

/* One group's line of the table (group_json()'s arguments). */
static void print_group(const struct cos_group_info *g, const char *path, long tasks)
{
	char rate[32], last[32];

	if (g->quota_ns != COS_GROUP_NO_QUOTA) {
		snprintf(rate, sizeof(rate), "%.0f%%", 100.0 * g->quota_ns / g->period_ns);
		snprintf(last, sizeof(last), "%.1f", 100.0 * g->last_usage_ns / g->period_ns);
	} else {
		snprintf(rate, sizeof(rate), "max");
		snprintf(last, sizeof(last), "-");
	}
	printf("%-8llu %8s %9.1f %6u %9s %10.3f %6llu %11.3f %6ld  %s%s\n",
	       (unsigned long long)g->id, rate, g->period_ns / 1e6, g->weight, last,
	       g->usage_ns / 1e9, (unsigned long long)g->nr_throttled, g->throttled_ns / 1e9,
	       tasks, path, g->flags & COS_GROUP_F_THROTTLED ? " (throttled)" : "");
}

static int cmd_groups_list(int json)
{
	struct cos_group_info *groups;
	char **paths;
	size_t n, i;
	int fd, err;

	fd = cos_open();
	err = fd < 0 ? fd : cos_get_groups(fd, &groups, &n);
	if (fd >= 0)
		close(fd);
	if (err)
		return fail(err);
	paths = calloc(n ?: 1, sizeof(*paths));
	err = paths ? cos_group_paths(groups, n, paths) : -ENOMEM;
	if (err) {
		free(paths);
		free(groups);
		return fail(err);
	}
	json_t *list = json ? json_array() : NULL;

	if (!json && n)
		printf("%-8s %8s %9s %6s %9s %10s %6s %11s %6s  %s\n", "ID", "RATE", "PERIOD_ms",
		       "WEIGHT", "LAST_%", "USED_s", "THROTL", "THROTL_s", "TASKS", "PATH");
	else if (!json)
		printf("no bandwidth groups (is the shim attached?)\n");
	for (i = 0; i < n; i++) {
		const char *path = paths[i] ?: "?";
		long tasks = paths[i] ? count_lines(path, "cgroup.threads") : -1;

		if (json)
			json_array_append_new(list, group_json(&groups[i], path, tasks));
		else
			print_group(&groups[i], path, tasks);
	}
	if (json)
		json_print(list);
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(groups);
	return 0;
}

/* `groups set [--period US] PATH RATE%|max` (@argv: the words after set). */
static int cmd_groups_set(int argc, char **argv, int json)
{
	unsigned long period = 0;
	char *end;
	double rate;
	int err;

	if (argc >= 2 && !strcmp(argv[0], "--period")) {
		errno = 0;
		period = strtoul(argv[1], &end, 10);
		if (errno || *end || !period || period > 1000000 || period < 1000) {
			fprintf(stderr, "cosctl: --period '%s': want 1000..1000000 microseconds\n",
				argv[1]);
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc != 2) {
		fputs(groups_usage, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "max")) {
		rate = 0;
	} else {
		errno = 0;
		rate = strtod(argv[1], &end);
		if (errno || end == argv[1] || (*end && strcmp(end, "%")) || !(rate > 0)) {
			fprintf(stderr, "cosctl: rate '%s': want a number above 0 with an optional %%, "
				"or max\n", argv[1]);
			return 2;
		}
	}
	err = cos_group_set_rate(argv[0], rate, period);
	if (err) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		return err == -EINVAL ? 2 : 1;
	}
	if (json)
		json_print(json_pack("{s:o,s:f,s:I}", "path", json_text(argv[0]), "rate_pct", rate,
				     "period_us", (json_int_t)(period ?: 100000)));
	else if (rate)
		printf("%s: capped at %g %% of a CPU\n", argv[0], rate);
	else
		printf("%s: no cap\n", argv[0]);
	return 0;
}

int cmd_groups(int argc, char **argv, int json)
{
	if (argc == 0)
		return cmd_groups_list(json);
	if (strcmp(argv[0], "set")) {
		fprintf(stderr, "cosctl groups: unknown command '%s'\n%s", argv[0], groups_usage);
		return 2;
	}
	return cmd_groups_set(argc - 1, argv + 1, json);
}
