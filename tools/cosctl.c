// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl.c — the cos command line: status of the module and the shim, the COS tasks, the
 * bandwidth groups (list, set a rate), load/unload the module, attach/detach the shim, run a
 * command as COS tasks.  See docs/operating.md, "cosctl".
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cos.h>

static const char usage[] =
	"usage: cosctl [--json] COMMAND\n"
	"\n"
	"commands:\n"
	"  status            module (ABI, features), sched_ext state, shim, the lord, counters\n"
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
	"  shim attach [--partial CPUS]\n"
	"                    attach the cos BPF shim and pin it so it stays after cosctl exits.\n"
	"                    --partial: partial mode, only COS tasks on sched_ext, every other\n"
	"                    task stays on the kernel's scheduler; CPUS (e.g. 1-3) become a cpuset\n"
	"                    partition (" COS_PARTITION_PATH ") where only COS tasks run\n"
	"  shim detach       detach a pinned shim (and remove partial mode's partition)\n"
	"  run [--policy-class N] -- CMD [ARG]\n"
	"                    run CMD as a COS task (policy SCHED_EXT, inherited by its threads and\n"
	"                    children): a lord, e.g. cos-fifo, schedules it on its enclave.  In\n"
	"                    partial mode CMD first moves into the partition's cgroup\n"
	"                    --policy-class N: CMD's main thread starts with app hint class N\n"
	"                    (cos-shinjuku: 1 = most urgent); its own libcos calls can change it\n"
	"  help              this text\n"
	"\n"
	"options:\n"
	"  -j, --json        machine-readable output (status, tasks, groups, load, unload)\n"
	"  -h, --help        this text\n"
	"\n"
	"Most commands need root.  Exit status: 0 on success, 1 on failure, 2 on bad usage.\n";

/*
 * A JSON string of @s (jansson).  Names from the kernel (a task's comm, a scheduler's name)
 * are bytes, not always UTF-8, and JSON text must be: a byte that does not start a valid UTF-8
 * sequence becomes U+FFFD, as decoders do.
 */
static bool utf8_char(const char *s, int k)
{
	json_t *j = json_stringn(s, k);

	json_decref(j);
	return j;
}

static json_t *json_text(const char *s)
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
static void json_print(json_t *j)
{
	json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(j);
}

static const char *kver_str(unsigned int code, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u", code >> 16, (code >> 8) & 0xff, code & 0xff);
	return buf;
}

/* One enclave's CPUs as a list ("1-3"); "?" if it does not fit. */
static const char *enclave_cpus(const struct cos_enclave_info *e, char *buf, size_t len)
{
	if (cos_format_cpus(e->cpus, sizeof(e->cpus), buf, len))
		snprintf(buf, len, "?");
	return buf;
}

static int cmd_status(int json)
{
	struct cos_enclave_info *enclaves = NULL;
	size_t nr_enclaves = 0;
	int have_enclaves = 0;
	struct cos_sys_status st;
	struct cos_info info = {0};
	char kv[32], part_str[256] = "";
	int fd, err, have_info = 0;
	const char *info_err = "";
	cpu_set_t part;
	bool partial;

	cos_sys_status(&st);
	partial = cos_shim_partial() == 1;
	if (partial && cos_partition_cpus(&part, sizeof(part)))
		snprintf(part_str, sizeof(part_str), "%s", cos_strerror(-EIO));
	else if (partial)
		cos_format_cpus(&part, sizeof(part), part_str, sizeof(part_str));
	fd = st.module_loaded ? cos_open() : -ENODEV;
	if (fd >= 0) {
		err = cos_get_info(fd, &info);
		have_info = !err;
		if (err)
			info_err = cos_strerror(err);
		if (have_info && (info.features & COS_FEAT_ENCLAVE_NAMES))
			have_enclaves = !cos_get_enclaves(fd, &enclaves, &nr_enclaves);
		close(fd);
	} else if (st.module_loaded) {
		info_err = cos_strerror(fd);
	}

	if (json) {
		json_t *module = json_pack("{s:b,s:b}", "loaded", st.module_loaded, "device", st.device);

		if (have_info) {
			json_object_set_new(module, "abi_version", json_integer(info.abi_version));
			json_object_set_new(module, "features", json_integer((json_int_t)info.features));
			json_object_set_new(module, "nr_cpu_ids", json_integer(info.nr_cpu_ids));
			json_object_set_new(module, "kernel_version",
					    json_string(kver_str(info.kernel_version, kv, sizeof(kv))));
		} else if (info_err[0]) {
			json_object_set_new(module, "error", json_text(info_err));
		}
		json_t *out = json_pack("{s:o,s:{s:i},s:{s:b,s:o,s:o},s:{s:b,s:b}}",
					"module", module, "libcos", "abi_version", COS_ABI_VERSION,
					"sched_ext", "supported", st.sched_ext, "state",
					json_text(st.state), "ops", json_text(st.ops),
					"shim", "attached", st.shim_attached, "pinned", st.shim_pinned);
		json_t *shim = json_object_get(out, "shim");

		json_object_set_new(shim, "mode", !st.shim_attached ? json_null() :
				    json_string(partial ? "partial" : "full"));
		json_object_set_new(shim, "partition", partial ? json_text(part_str) : json_null());
		if (have_info) {
			json_object_set_new(out, "lord", info.lord_pid ?
					    json_pack("{s:i,s:i,s:i}", "pid", info.lord_pid, "cpu",
						      info.lord_cpu, "enclave_cpus", info.enclave_cpus) :
					    json_null());
			if (have_enclaves) {
				json_t *list = json_array();
				char cpus[256];

				for (size_t i = 0; i < nr_enclaves; i++) {
					const struct cos_enclave_info *e = &enclaves[i];

					json_array_append_new(list, json_pack(
						"{s:i,s:s,s:i,s:i,s:s,s:i,s:b,s:i,s:I,s:I,s:I,s:I,s:I,s:I}",
						"id", e->id, "name", e->name, "lord_pid", e->lord_pid,
						"lord_cpu", e->lord_cpu,
						"cpus", enclave_cpus(e, cpus, sizeof(cpus)),
						"nr_cpus", e->nr_cpus,
						"active", !!(e->flags & COS_ENCLAVE_F_ACTIVE),
						"waiting", e->waiting,
						"messages", (json_int_t)e->produced,
						"placed", (json_int_t)e->placed,
						"refused", (json_int_t)e->refused,
						"fallbacks", (json_int_t)e->fallbacks,
						"stalls", (json_int_t)e->stalls,
						"dropped", (json_int_t)e->dropped));
				}
				json_object_set_new(out, "enclaves", list);
			}
			json_object_set_new(out, "counters",
					    json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I}",
						      "tasks", info.tasks,
						      "messages", (json_int_t)info.messages,
						      "placed", (json_int_t)info.placed,
						      "refused", (json_int_t)info.refused,
						      "fallbacks", (json_int_t)info.fallbacks,
						      "stalls", (json_int_t)info.stalls,
						      "dropped", (json_int_t)info.dropped));
		}
		json_print(out);
		free(enclaves);
		return 0;
	}

	if (!st.module_loaded)
		printf("module:     not loaded (modprobe cos)\n");
	else if (have_info)
		printf("module:     loaded, ABI %u, features 0x%llx, %u CPU ids, built for Linux %s\n",
		       info.abi_version, (unsigned long long)info.features, info.nr_cpu_ids,
		       kver_str(info.kernel_version, kv, sizeof(kv)));
	else
		printf("module:     loaded (%s)\n", info_err);
	printf("libcos:     ABI %u%s\n", COS_ABI_VERSION,
	       have_info && info.abi_version != COS_ABI_VERSION ? " (differs from the module!)" : "");
	if (!st.sched_ext)
		printf("sched_ext:  not supported by this kernel\n");
	else
		printf("sched_ext:  %s%s%s%s\n", st.state[0] ? st.state : "unknown",
		       st.ops[0] ? ", scheduler \"" : "", st.ops, st.ops[0] ? "\"" : "");
	printf("shim:       %s%s\n", !st.shim_attached ? "not attached" : partial ?
	       "attached, partial mode (only COS tasks on sched_ext)" : "attached, full mode",
	       st.shim_pinned ? " (pinned at " COS_SHIM_PIN_PATH ")" : "");
	if (partial)
		printf("partition:  CPUs %s for COS tasks (" COS_PARTITION_PATH ")\n", part_str);
	if (!have_info)
		return 0;
	if (have_enclaves) {
		char cpus[256];

		for (size_t i = 0; i < nr_enclaves; i++) {
			const struct cos_enclave_info *e = &enclaves[i];

			printf("enclave:    %s (id %u): lord thread %d on CPU %d, CPUs %s, %s\n"
			       "            %u waiting; %llu messages, %llu placed, %llu refused, "
			       "%llu fallbacks, %llu stalls, %llu dropped\n", e->name, e->id,
			       e->lord_pid, e->lord_cpu, enclave_cpus(e, cpus, sizeof(cpus)),
			       e->flags & COS_ENCLAVE_F_ACTIVE ? "active" : "not in control",
			       e->waiting, (unsigned long long)e->produced,
			       (unsigned long long)e->placed, (unsigned long long)e->refused,
			       (unsigned long long)e->fallbacks, (unsigned long long)e->stalls,
			       (unsigned long long)e->dropped);
		}
		free(enclaves);
	}
	if (info.lord_pid && !have_enclaves)
		printf("lord:       thread %d on CPU %d, enclave of %u CPUs\n", info.lord_pid,
		       info.lord_cpu, info.enclave_cpus);
	else if (!info.lord_pid && !nr_enclaves)
		printf("lord:       none (COS tasks run under the shim's fair policy)\n");
	printf("counters:   %u COS tasks; since load: %llu messages, %llu placed, %llu refused, "
	       "%llu fallbacks, %llu stalls, %llu dropped\n", info.tasks,
	       (unsigned long long)info.messages, (unsigned long long)info.placed,
	       (unsigned long long)info.refused, (unsigned long long)info.fallbacks,
	       (unsigned long long)info.stalls, (unsigned long long)info.dropped);
	if (info.stalls || info.dropped)
		printf("            stalls: a lord fell behind (the fair policy ran its tasks meanwhile);"
		       " dropped: its ring overflowed (it resynced). If they grow, keep other\n"
		       "            work off the lord's CPU, or give the lord a longer --stall-ms\n");
	return 0;
}

/* Say what went wrong (a libcos error): exit status 1. */
static int fail(int err)
{
	fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
	return 1;
}

/* The name of enclave @id among @all, "-" for none (0) or one that is gone. */
static const char *enclave_name(const struct cos_enclave_info *all, size_t nr, unsigned int id)
{
	for (size_t i = 0; id && i < nr; i++)
		if (all[i].id == id)
			return all[i].name;
	return "-";
}

static int cmd_tasks(int json)
{
	struct cos_task_info *tasks;
	struct cos_enclave_info *encl = NULL;
	struct timespec ts;
	unsigned long long now;
	size_t n, i, nencl = 0;
	int fd, err;

	fd = cos_open();
	err = fd < 0 ? fd : cos_get_tasks(fd, &tasks, &n);
	if (!err && cos_get_enclaves(fd, &encl, &nencl))
		nencl = 0;	/* a module that predates the call: every task's enclave is "-" */
	if (fd >= 0)
		close(fd);
	if (err)
		return fail(err);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	json_t *list = json ? json_array() : NULL;

	if (!json && n)
		printf("%6s %5s %7s %7s %-7s %3s %-15s %12s %-14s %10s  %s\n", "SLOT", "GEN", "PID",
		       "TGID", "STATE", "CPU", "ENCLAVE", "RUNTIME_us", "LAST_EVENT", "AGO_ms", "COMM");
	else if (!json)
		printf("no COS tasks\n");
	for (i = 0; i < n; i++) {
		const struct cos_task_info *t = &tasks[i];
		const char *last = t->last_msg ? cos_msg_type_name(t->last_msg) : "-";
		long long ago = t->last_ts && now > t->last_ts ? (long long)(now - t->last_ts) : -1;
		const char *enclave = enclave_name(encl, nencl, t->enclave_id);

		if (json) {
			json_array_append_new(list, json_pack(
				"{s:i,s:i,s:i,s:i,s:s,s:i,s:o,s:I,s:I,s:s,s:I,s:I,s:o}",
				"slot", t->slot, "gen", t->gen, "pid", t->pid, "tgid", t->tgid,
				"state", cos_task_state_name(t->state), "cpu", t->cpu,
				"enclave", t->enclave_id ? json_text(enclave) : json_null(),
				"enclave_id", (json_int_t)t->enclave_id,
				"runtime_ns", (json_int_t)t->runtime_ns, "last_event", last,
				"last_seq", (json_int_t)t->last_seq, "last_ns_ago", (json_int_t)ago,
				"comm", json_text(t->comm)));
			continue;
		}
		printf("%6u %5u %7d %7d %-7s %3u %-15s %12llu %-14s ", t->slot, t->gen, t->pid,
		       t->tgid, cos_task_state_name(t->state), t->cpu, enclave,
		       (unsigned long long)t->runtime_ns / 1000, last);
		if (ago >= 0)
			printf("%10.1f", ago / 1e6);
		else
			printf("%10s", "-");
		printf("  %s\n", t->comm);
	}
	if (json)
		json_print(list);
	free(tasks);
	free(encl);
	return 0;
}

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
		const struct cos_group_info *g = &groups[i];
		bool limited = g->quota_ns != COS_GROUP_NO_QUOTA;
		const char *path = paths[i] ?: "?";
		char rate[32], last[32];
		long tasks;

		tasks = paths[i] ? count_lines(path, "cgroup.threads") : -1;
		if (json) {
			json_array_append_new(list, json_pack(
				"{s:I,s:I,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:b,s:I}",
				"id", (json_int_t)g->id, "parent_id", (json_int_t)g->parent_id,
				"path", json_text(path),
				"quota_ns", limited ? json_integer((json_int_t)g->quota_ns) : json_null(),
				"period_ns", (json_int_t)g->period_ns, "burst_ns", (json_int_t)g->burst_ns,
				"runtime_ns", (json_int_t)g->runtime_ns, "usage_ns", (json_int_t)g->usage_ns,
				"last_usage_ns", (json_int_t)g->last_usage_ns,
				"throttled_ns", (json_int_t)g->throttled_ns,
				"nr_throttled", (json_int_t)g->nr_throttled,
				"overrun_ns", (json_int_t)g->overrun_ns, "weight", g->weight,
				"throttled", (g->flags & COS_GROUP_F_THROTTLED) != 0,
				"tasks", (json_int_t)tasks));
			continue;
		}
		if (limited) {
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
	if (json)
		json_print(list);
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(groups);
	return 0;
}

static const char groups_set_usage[] =
	"usage: cosctl groups set [--period US] PATH RATE%|max\n"
	"Cap cgroup v2 directory PATH at RATE % of one CPU (0 < RATE <= 100 x the online CPUs):\n"
	"writes QUOTA PERIOD to its cpu.max, QUOTA = RATE x PERIOD / 100 (at least 1000 us).  max\n"
	"removes the cap.  PERIOD is US microseconds, 1000..1000000 (default 100000).\n";

static int cmd_groups(int argc, char **argv, int json)
{
	unsigned long period = 0;
	char *end;
	double rate;
	int err;

	if (argc == 0)
		return cmd_groups_list(json);
	if (strcmp(argv[0], "set")) {
		fprintf(stderr, "cosctl: unknown groups command '%s'\n\n%s", argv[0], usage);
		return 2;
	}
	argc--;
	argv++;
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
		fputs(groups_set_usage, stderr);
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

static int cmd_load(int argc, char **argv, int json)
{
	char params[1024] = "";
	const char *path = NULL;
	size_t used = 0;
	int i, err;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--path") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strncmp(argv[i], "--path=", 7)) {
			path = argv[i] + 7;
		} else if (strchr(argv[i], '=') && argv[i][0] != '-') {
			int n = snprintf(params + used, sizeof(params) - used, "%s%s", used ? " " : "",
					 argv[i]);

			if (n < 0 || (size_t)n >= sizeof(params) - used) {
				fputs("cosctl load: parameters too long\n", stderr);
				return 2;
			}
			used += n;
		} else {
			fprintf(stderr, "cosctl load: unexpected '%s'\nusage: cosctl load [--path FILE] "
				"[PARAM=VALUE...]\n", argv[i]);
			return 2;
		}
	}
	err = cos_module_load(path, used ? params : NULL);
	if (err < 0) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		return 1;
	}
	if (json)
		printf("{\"loaded\":true,\"already\":%s}\n", err ? "true" : "false");
	else if (err)
		printf("cos.ko is loaded already%s\n", used ? " (parameters not applied)" : "");
	else
		printf("cos.ko loaded%s%s\n", path ? " from " : "", path ? path : "");
	return 0;
}

static int cmd_unload(int argc, int json)
{
	int err;

	if (argc) {
		fputs("usage: cosctl unload\n", stderr);
		return 2;
	}
	err = cos_module_unload();
	if (err < 0) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		return 1;
	}
	if (json)
		printf("{\"loaded\":false,\"already\":%s}\n", err ? "true" : "false");
	else
		printf(err ? "cos.ko is not loaded\n" : "cos.ko unloaded\n");
	return 0;
}

static int cmd_shim(int argc, char **argv)
{
	struct cos_shim_opts opts = { .size = sizeof(opts) };
	struct cos_shim *shim;
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
		argc = 1;
	}
	if (argc != 1) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(argv[0], "attach")) {
		err = cos_shim_attach(&shim, &opts);
		if (!err) {
			err = cos_shim_pin(shim, NULL);
			if (err) {
				fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
				cos_shim_detach(shim);
				return 1;
			}
			cos_shim_detach(shim);	/* drops our reference; the pin keeps it attached */
			if (opts.flags & COS_SHIM_F_PARTIAL)
				printf("shim attached in partial mode, COS tasks on CPUs %s (pinned at %s)\n",
				       argv[2], COS_SHIM_PIN_PATH);
			else
				printf("shim attached (pinned at %s)\n", COS_SHIM_PIN_PATH);
			return 0;
		}
	} else if (!strcmp(argv[0], "detach")) {
		err = cos_shim_detach_pinned(NULL);
		if (!err) {
			printf("shim detached\n");
			return 0;
		}
	} else {
		fprintf(stderr, "cosctl: unknown shim command '%s'\n", argv[0]);
		return 2;
	}
	fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
	return 1;
}

/*
 * Become a COS task and exec the command: the policy survives exec and is inherited.  With
 * --policy-class the hint table (kept open across exec) carries a record for this thread, which
 * becomes the command's main thread.
 */
static const char run_usage[] =
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

static int cmd_run(int argc, char **argv)
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int json = 0, c;

	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0 || !strcmp(argv[0], "help")) {
		fputs(usage, argc ? stdout : stderr);
		return argc ? 0 : 2;
	}
	if (!strcmp(argv[0], "status") && argc == 1)
		return cmd_status(json);
	if (!strcmp(argv[0], "tasks") && argc == 1)
		return cmd_tasks(json);
	if (!strcmp(argv[0], "groups"))
		return cmd_groups(argc - 1, argv + 1, json);
	if (!strcmp(argv[0], "load"))
		return cmd_load(argc - 1, argv + 1, json);
	if (!strcmp(argv[0], "unload"))
		return cmd_unload(argc - 1, json);
	if (!strcmp(argv[0], "shim"))
		return cmd_shim(argc - 1, argv + 1);
	if (!strcmp(argv[0], "run"))
		return cmd_run(argc - 1, argv + 1);
	fprintf(stderr, "cosctl: unknown command '%s'\n\n%s", argv[0], usage);
	return 2;
}
