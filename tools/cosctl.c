// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl.c — the cos command line: status of the module and the shim, the COS tasks, the
 * bandwidth groups (list, set a rate), load/unload the module, attach/detach the shim, run a
 * command as COS tasks.  See docs/operating.md, "cosctl".
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cos.h>

#include "cosctl.h"

/* Where a lord unit's settings live: cos-lord@NAME.service reads COS_DEFAULTS_DIR/cos-NAME. */
#ifndef COS_DEFAULTS_DIR
#define COS_DEFAULTS_DIR "/etc/default"
#endif

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

static const char status_usage[] =
	"usage: cosctl status [--check] [--json]\n"
	"The module (ABI, features), sched_ext's state and scheduler, the shim, each enclave with\n"
	"its lord and counters, and the problems: what keeps cos from working here (no sched_ext,\n"
	"cos.ko not loaded or of another ABI, another sched_ext scheduler, the shim not attached, a\n"
	"lord configured in " COS_DEFAULTS_DIR "/cos-NAME that is not running).\n"
	"--check: print only the problems (or \"ok\"), exit status 1 if there is one.  Without it\n"
	"the exit status is 1 only on a kernel that cannot run cos at all.\n";

static const char tasks_usage[] =
	"usage: cosctl tasks [--json]\n"
	"The COS tasks: slot, generation, pid, state, CPU, enclave, CPU time, last event and how\n"
	"long ago.  Needs read access to /dev/cos.\n";

static const char groups_usage[] =
	"usage: cosctl groups [--json]\n"
	"       cosctl groups set [--period US] PATH RATE%|max\n"
	"The bandwidth groups the shim knows (cgroups with a cpu controller): rate (cpu.max),\n"
	"period, weight, usage in the last period and in all, throttling, tasks.\n"
	"set: cap cgroup v2 directory PATH at RATE % of one CPU (0 < RATE <= 100 x the online\n"
	"CPUs): writes QUOTA PERIOD to its cpu.max, QUOTA = RATE x PERIOD / 100 (at least 1000 us).\n"
	"max removes the cap.  PERIOD is US microseconds, 1000..1000000 (default 100000).\n";

static const char load_usage[] =
	"usage: cosctl load [--path FILE] [PARAM=VALUE...] [--json]\n"
	"Load cos.ko: the one installed for the running kernel (libkmod, as modprobe), or FILE\n"
	"(as insmod), with module parameters such as max_tasks=8192.  A module loaded already\n"
	"is left as it is (its parameters are not changed).\n";

static const char unload_usage[] =
	"usage: cosctl unload [--json]\n"
	"Unload cos.ko.  Fails while a lord, the shim or an open /dev/cos holds it.\n";

static const char stats_usage[] =
	"usage: cosctl stats [--enclave NAME] [--monitor SEC] [--json]\n"
	"Each running lord's statistics, read from the socket it serves (" COS_STATS_DIR "/NAME.stats):\n"
	"its policy, enclave, CPUs, uptime and CPU time, the framework's counters (messages,\n"
	"placements, failed shoots by reason, the wake rules' starts) and the policy's own.\n"
	"--enclave NAME: that lord's only (NAME or cos-NAME).  --monitor SEC: again every SEC\n"
	"seconds (e.g. 0.5), each counter with its rate since the last, until interrupted.\n"
	"--json: one JSON object per lord and line, as the socket serves it (schema\n"
	"cos-lord-stats/1, docs/operating.md).  Exit status 1 if no lord answers.\n";

static const char metrics_usage[] =
	"usage: cosctl metrics\n"
	"The module's, the enclaves', the bandwidth groups' and each running lord's counters in\n"
	"Prometheus's text format, e.g. for node_exporter's textfile collector:\n"
	"  cosctl metrics > /var/lib/prometheus/node-exporter/cos.prom.tmp &&\n"
	"    mv /var/lib/prometheus/node-exporter/cos.prom.tmp /var/lib/prometheus/node-exporter/cos.prom\n";

static const char shim_usage[] =
	"usage: cosctl shim attach [--partial CPUS]\n"
	"       cosctl shim detach\n"
	"attach: attach the cos BPF shim (the sched_ext scheduler cos runs on) and pin it at\n"
	COS_SHIM_PIN_PATH ", so that it stays after cosctl exits.  --partial: only COS tasks\n"
	"run on sched_ext, every other task stays on the kernel's scheduler; CPUS (e.g. 1-3)\n"
	"become a cpuset partition (" COS_PARTITION_PATH ") where only COS tasks run.\n"
	"detach: detach the pinned shim (and remove partial mode's partition).\n";

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

/* Does enclave @e serve the lord unit NAME (its name, or NAME with "cos-" before it)? */
static bool enclave_is(const struct cos_enclave_info *e, const char *name)
{
	return !strcmp(e->name, name) || (!strncmp(e->name, "cos-", 4) && !strcmp(e->name + 4, name));
}

/*
 * Add to @problems what keeps cos from working here, each with what to do.  The lords
 * configured for cos-lord@NAME.service (a file COS_DEFAULTS_DIR/cos-NAME, cos-shim's aside)
 * must have their enclaves registered.
 */
static void find_problems(json_t *problems, const struct cos_sys_status *st, bool have_info,
			  const struct cos_info *info, const char *info_err,
			  const struct cos_enclave_info *enclaves, size_t nr_enclaves)
{
	const char *dir = getenv("COS_DEFAULTS_DIR") ?: COS_DEFAULTS_DIR;
	bool other = st->ops[0] && !st->shim_attached && strcmp(st->state, "disabled");
	struct dirent *d;
	DIR *dp;

	if (!st->sched_ext) {
		json_array_append_new(problems, json_string(
			"this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT): cos cannot run on it"));
		return;
	}
	if (!st->module_loaded)
		json_array_append_new(problems, json_string(
			"cos.ko is not loaded: cosctl load (or modprobe cos; DKMS builds it)"));
	else if (!have_info)
		json_array_append_new(problems, json_sprintf("cannot read cos.ko's state: %s",
							     info_err));
	else if (info->abi_version != COS_ABI_VERSION)
		json_array_append_new(problems, json_sprintf(
			"cos.ko's ABI %u is not libcos's %d: install the same release of both",
			info->abi_version, COS_ABI_VERSION));
	if (other)
		json_array_append_new(problems, json_sprintf(
			"another sched_ext scheduler runs (\"%s\"): stop it first (scx's: systemctl stop "
			"scx.service, or scxctl stop)", st->ops));
	else if (!st->shim_attached)
		json_array_append_new(problems, json_string(
			"the shim is not attached: cosctl shim attach (or systemctl start cos-shim)"));
	dp = opendir(dir);
	while (dp && (d = readdir(dp))) {
		const char *name = d->d_name + 4;
		bool found = false;

		if (strncmp(d->d_name, "cos-", 4) || !*name || !strcmp(name, "shim") ||
		    strchr(name, '.') || strchr(name, '~'))	/* editors' and dpkg's leftovers */
			continue;
		for (size_t i = 0; i < nr_enclaves && !found; i++)
			found = enclave_is(&enclaves[i], name);
		if (!found)
			json_array_append_new(problems, json_sprintf(
				"no lord runs the enclave '%s' configured in %s/%s: systemctl status "
				"cos-lord@%s", name, dir, d->d_name, name));
	}
	if (dp)
		closedir(dp);
}

static int cmd_status(int argc, char **argv, int json)
{
	struct cos_enclave_info *enclaves = NULL;
	size_t nr_enclaves = 0, nr_problems;
	int have_enclaves = 0;
	struct cos_sys_status st;
	struct cos_info info = {0};
	char kv[32], part_str[256] = "";
	int fd, err, have_info = 0, check = 0;
	const char *info_err = "";
	json_t *problems;
	cpu_set_t part;
	bool partial;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--check")) {
			fprintf(stderr, "cosctl status: unexpected '%s'\n%s", argv[i], status_usage);
			return 2;
		}
		check = 1;
	}
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
	problems = json_array();
	find_problems(problems, &st, have_info, &info, info_err, enclaves, nr_enclaves);
	nr_problems = json_array_size(problems);
	err = check ? nr_problems != 0 : !st.sched_ext;

	if (check && !json) {
		size_t i;
		json_t *p;

		json_array_foreach(problems, i, p)
			printf("%s\n", json_string_value(p));
		if (!nr_problems)
			printf("ok\n");
		json_decref(problems);
		free(enclaves);
		return err;
	}
	if (json) {
		json_t *module = json_pack("{s:b,s:b}", "loaded", st.module_loaded, "device", st.device);

		if (have_info) {
			json_t *names = json_array();

			for (unsigned int bit = 0; bit < 64; bit++)
				if (info.features & (1ULL << bit))
					json_array_append_new(names, cos_feature_name(bit) ?
						json_string(cos_feature_name(bit)) :
						json_sprintf("bit-%u", bit));
			json_object_set_new(module, "abi_version", json_integer(info.abi_version));
			json_object_set_new(module, "features", json_integer((json_int_t)info.features));
			json_object_set_new(module, "feature_names", names);
			json_object_set_new(module, "nr_cpu_ids", json_integer(info.nr_cpu_ids));
			json_object_set_new(module, "kernel_version",
					    json_string(kver_str(info.kernel_version, kv, sizeof(kv))));
		} else if (info_err[0]) {
			json_object_set_new(module, "error", json_text(info_err));
		}
		json_t *out = json_pack("{s:o,s:{s:i,s:s},s:{s:b,s:o,s:o},s:{s:b,s:b}}",
					"module", module, "libcos", "abi_version", COS_ABI_VERSION,
					"version", cos_version(),
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
		json_object_set_new(out, "problems", problems);
		json_print(out);
		free(enclaves);
		return err;
	}

	if (!st.module_loaded)
		printf("module:     not loaded%s\n", st.sched_ext ? " (cosctl load)" : "");
	else if (have_info)
		printf("module:     loaded, ABI %u, %u CPU ids, built for Linux %s\n",
		       info.abi_version, info.nr_cpu_ids, kver_str(info.kernel_version, kv, sizeof(kv)));
	else
		printf("module:     loaded (%s)\n", info_err);
	if (have_info) {
		printf("features:  ");
		for (unsigned int bit = 0; bit < 64; bit++)
			if (info.features & (1ULL << bit)) {
				if (cos_feature_name(bit))
					printf(" %s", cos_feature_name(bit));
				else
					printf(" bit-%u", bit);
			}
		putchar('\n');
	}
	printf("libcos:     %s, ABI %u%s\n", cos_version(), COS_ABI_VERSION,
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
	}
	if (have_info) {
		if (info.lord_pid && !have_enclaves)
			printf("lord:       thread %d on CPU %d, enclave of %u CPUs\n", info.lord_pid,
			       info.lord_cpu, info.enclave_cpus);
		else if (!info.lord_pid && !nr_enclaves)
			printf("lord:       none (COS tasks run under the shim's fair policy)\n");
		printf("counters:   %u COS tasks; since load: %llu messages, %llu placed, %llu "
		       "refused, %llu fallbacks, %llu stalls, %llu dropped\n", info.tasks,
		       (unsigned long long)info.messages, (unsigned long long)info.placed,
		       (unsigned long long)info.refused, (unsigned long long)info.fallbacks,
		       (unsigned long long)info.stalls, (unsigned long long)info.dropped);
		if (info.stalls || info.dropped)
			printf("            stalls: a lord fell behind (the fair policy ran its tasks "
			       "meanwhile); dropped: its ring overflowed (it resynced). If they grow,\n"
			       "            keep other work off the lord's CPU, or give the lord a longer "
			       "--stall-ms\n");
	}
	for (size_t i = 0; i < nr_problems; i++)
		printf("%s %s\n", i ? "           " : "problem:   ",
		       json_string_value(json_array_get(problems, i)));
	json_decref(problems);
	free(enclaves);
	return err;
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

static int cmd_tasks(int argc, char **argv, int json)
{
	struct cos_task_info *tasks;
	struct cos_enclave_info *encl = NULL;
	struct timespec ts;
	unsigned long long now;
	size_t n, i, nencl = 0;
	int fd, err;

	if (argc) {
		fprintf(stderr, "cosctl tasks: unexpected '%s'\n%s", argv[0], tasks_usage);
		return 2;
	}
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

static int cmd_groups(int argc, char **argv, int json)
{
	unsigned long period = 0;
	char *end;
	double rate;
	int err;

	if (argc == 0)
		return cmd_groups_list(json);
	if (strcmp(argv[0], "set")) {
		fprintf(stderr, "cosctl groups: unknown command '%s'\n%s", argv[0], groups_usage);
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
			fprintf(stderr, "cosctl load: unexpected '%s'\n%s", argv[i], load_usage);
			return 2;
		}
	}
	err = cos_module_load(path, used ? params : NULL);
	if (err < 0) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		return 1;
	}
	if (json)
		json_print(json_pack("{s:b,s:b}", "loaded", 1, "already", err > 0));
	else if (err)
		printf("cos.ko is loaded already%s\n", used ? " (parameters not applied)" : "");
	else
		printf("cos.ko loaded%s%s\n", path ? " from " : "", path ? path : "");
	return 0;
}

static int cmd_unload(int argc, char **argv, int json)
{
	int err;

	if (argc) {
		fprintf(stderr, "cosctl unload: unexpected '%s'\n%s", argv[0], unload_usage);
		return 2;
	}
	err = cos_module_unload();
	if (err < 0) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		return 1;
	}
	if (json)
		json_print(json_pack("{s:b,s:b}", "loaded", 0, "already", err > 0));
	else
		printf(err ? "cos.ko is not loaded\n" : "cos.ko unloaded\n");
	return 0;
}

static int cmd_shim(int argc, char **argv, int json)
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
		fputs(shim_usage, stderr);
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
		fprintf(stderr, "cosctl shim: unknown command '%s'\n%s", argv[0], shim_usage);
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

static int cmd_run(int argc, char **argv, int json)
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

/*
 * Live statistics: each lord serves one JSON object per connection on COS_STATS_DIR/NAME.stats
 * (policies/lord_stats.c).
 */

/* The snapshot of the lord serving @path, or NULL (said on stderr unless @quiet). */
static json_t *lord_snapshot(const char *path, bool quiet)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 3 };
	char buf[65536];
	size_t len = 0;
	json_error_t jerr;
	json_t *j = NULL;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return NULL;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (!quiet)
			fprintf(stderr, "cosctl: %s: %s%s\n", path, strerror(errno),
				errno == ECONNREFUSED ? " (its lord is gone: a stale socket)" : "");
		close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	close(fd);
	buf[len] = '\0';
	if (len)
		j = json_loads(buf, 0, &jerr);
	if (!j && !quiet)
		fprintf(stderr, "cosctl: %s: %s\n", path, len ? jerr.text : "no answer");
	return j;
}

/* Is @file a socket of a lord (NAME@suffix), of enclave @name or cos-@name if @name? */
static bool lord_file_of(const char *file, const char *suffix, const char *name)
{
	size_t len = strlen(file), sl = strlen(suffix);

	if (len <= sl || strcmp(file + len - sl, suffix))
		return false;
	len -= sl;
	return !name || (strlen(name) == len && !strncmp(file, name, len)) ||
	       (len > 4 && !strncmp(file, "cos-", 4) && strlen(name) == len - 4 &&
		!strncmp(file + 4, name, len - 4));
}

size_t lord_sockets(const char *name, const char *suffix, char ***paths)
{
	const char *dir = getenv("COS_STATS_DIR") ?: COS_STATS_DIR;
	struct dirent **ents;
	size_t n = 0;
	int nr;

	*paths = NULL;
	nr = scandir(dir, &ents, NULL, alphasort);
	if (nr <= 0)
		return 0;
	*paths = calloc((size_t)nr, sizeof(**paths));
	for (int i = 0; i < nr; i++) {
		char *p;

		if (*paths && lord_file_of(ents[i]->d_name, suffix, name) &&
		    asprintf(&p, "%s/%s", dir, ents[i]->d_name) > 0)
			(*paths)[n++] = p;
		free(ents[i]);
	}
	free(ents);
	return n;
}

/* Print @o's counters ("key value", with "(+R/s)" against @prev over @dt seconds). */
static void print_counters(const char *label, json_t *o, json_t *prev, double dt)
{
	const char *key;
	json_t *v;

	printf("  %-10s", label);
	json_object_foreach(o, key, v) {
		json_int_t now = json_integer_value(v), was;

		printf(" %s %lld", key, (long long)now);
		if (prev && dt > 0 && json_is_integer(json_object_get(prev, key))) {
			was = json_integer_value(json_object_get(prev, key));
			if (now != was)
				printf(" (%+.1f/s)", (now - was) / dt);
		}
	}
	putchar('\n');
}

static void print_lord(json_t *j, json_t *prev)
{
	double up = json_real_value(json_object_get(j, "uptime_s")),
	       cpu = json_real_value(json_object_get(j, "lord_cpu_s")),
	       dt = prev ? up - json_real_value(json_object_get(prev, "uptime_s")) : 0;

	printf("enclave %s: %s, pid %lld, lord CPU %lld, CPUs %s, up %.1f s, lord CPU time %.2f s "
	       "(%.0f %%)\n", json_string_value(json_object_get(j, "enclave")) ?: "?",
	       json_string_value(json_object_get(j, "policy")) ?: "?",
	       (long long)json_integer_value(json_object_get(j, "pid")),
	       (long long)json_integer_value(json_object_get(j, "lord_cpu")),
	       json_string_value(json_object_get(j, "cpus")) ?: "?", up, cpu,
	       up > 0 ? 100 * cpu / up : 0);
	print_counters("framework", json_object_get(j, "framework"),
		       prev ? json_object_get(prev, "framework") : NULL, dt);
	print_counters("policy", json_object_get(j, "policy_stats"),
		       prev ? json_object_get(prev, "policy_stats") : NULL, dt);
}

static int cmd_stats(int argc, char **argv, int json)
{
	json_t **prev = NULL;
	const char *name = NULL;
	double every = 0;
	int rc = 0;

	for (int i = 0; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--enclave") && i + 1 < argc && argv[i + 1][0]) {
			name = argv[++i];
		} else if (!strcmp(argv[i], "--monitor") && i + 1 < argc) {
			errno = 0;
			every = strtod(argv[++i], &end);
			if (errno || end == argv[i] || *end || !(every >= 0.1 && every <= 3600)) {
				fprintf(stderr, "cosctl stats: bad value '%s' for --monitor: want "
					"0.1..3600 seconds\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "cosctl stats: unexpected '%s'\n%s", argv[i], stats_usage);
			return 2;
		}
	}
	for (unsigned long round = 0;; round++) {
		char **paths;
		size_t n = lord_sockets(name, ".stats", &paths), got = 0;
		json_t **cur = calloc(n + 1, sizeof(*cur));

		if (every && !json && round)
			putchar('\n');
		for (size_t i = 0; i < n; i++) {
			json_t *j = cur ? lord_snapshot(paths[i], false) : NULL, *was = NULL;

			free(paths[i]);
			if (!j)
				continue;
			cur[got++] = j;
			if (json) {
				json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
				putchar('\n');
				continue;
			}
			/* the same lord (its pid) in the last round: the rates */
			for (size_t k = 0; prev && prev[k] && !was; k++)
				if (json_equal(json_object_get(prev[k], "pid"), json_object_get(j, "pid")))
					was = prev[k];
			print_lord(j, was);
		}
		free(paths);
		for (size_t k = 0; prev && prev[k]; k++)
			json_decref(prev[k]);
		free(prev);
		prev = cur;
		fflush(stdout);
		if (!every && !got) {
			fprintf(stderr, "cosctl: no lord serves statistics%s%s in %s\n",
				name ? " for enclave " : "", name ? name : "",
				getenv("COS_STATS_DIR") ?: COS_STATS_DIR);
			rc = 1;
		}
		if (!every)
			break;
		usleep((useconds_t)(every * 1e6));
	}
	for (size_t k = 0; prev && prev[k]; k++)
		json_decref(prev[k]);
	free(prev);
	return rc;
}

/* @s as a Prometheus label value: backslash, quote and newline escaped. */
static void prom_label(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
	}
}

/* A metric's HELP and TYPE lines. */
static void prom_head(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The lords' counters of @section ("framework" or "policy_stats") as metric @metric. */
static void prom_lords(json_t *const *lords, size_t n, const char *section, const char *metric,
		       const char *help)
{
	prom_head(metric, "gauge", help);
	for (size_t i = 0; i < n; i++) {
		const char *key;
		json_t *v;

		json_object_foreach(json_object_get(lords[i], section), key, v) {
			printf("%s{enclave=\"", metric);
			prom_label(json_string_value(json_object_get(lords[i], "enclave")) ?: "");
			printf("\",policy=\"");
			prom_label(json_string_value(json_object_get(lords[i], "policy")) ?: "");
			printf("\",counter=\"");
			prom_label(key);
			printf("\"} %lld\n", (long long)json_integer_value(v));
		}
	}
}

static int cmd_metrics(int argc, char **argv, int json)
{
	struct cos_enclave_info *enc = NULL;
	struct cos_group_info *groups = NULL;
	struct cos_sys_status st;
	struct cos_info info;
	size_t nenc = 0, ngroups = 0, nlords, got = 0;
	char **paths = NULL, **sockets;
	json_t **lords;
	int fd, have_info = 0;

	if (argc) {
		fprintf(stderr, "cosctl metrics: unexpected '%s'\n%s", argv[0], metrics_usage);
		return 2;
	}
	cos_sys_status(&st);
	fd = st.module_loaded ? cos_open() : -ENODEV;
	if (fd >= 0) {
		have_info = !cos_get_info(fd, &info);
		if (have_info && (info.features & COS_FEAT_ENCLAVE_NAMES) &&
		    cos_get_enclaves(fd, &enc, &nenc))
			nenc = 0;
		if (cos_get_groups(fd, &groups, &ngroups))
			ngroups = 0;
		close(fd);
	}
	paths = calloc(ngroups ?: 1, sizeof(*paths));
	if (!paths || cos_group_paths(groups, ngroups, paths))
		ngroups = 0;	/* no group lines rather than none at all */
	nlords = lord_sockets(NULL, ".stats", &sockets);
	lords = calloc(nlords + 1, sizeof(*lords));
	for (size_t i = 0; i < nlords; i++) {
		json_t *j = lords ? lord_snapshot(sockets[i], true) : NULL;

		if (j)
			lords[got++] = j;
		free(sockets[i]);
	}
	free(sockets);

	prom_head("cos_module_loaded", "gauge", "Whether cos.ko is loaded.");
	printf("cos_module_loaded %d\n", st.module_loaded);
	prom_head("cos_shim_attached", "gauge", "Whether the cos shim is the sched_ext scheduler.");
	printf("cos_shim_attached %d\n", st.shim_attached);
	if (have_info) {
		prom_head("cos_abi_version", "gauge", "The module's ABI version.");
		printf("cos_abi_version %u\n", info.abi_version);
		prom_head("cos_tasks", "gauge", "COS tasks now.");
		printf("cos_tasks %u\n", info.tasks);
#define MODULE_COUNTER(field, help)						\
		prom_head("cos_" #field "_total", "counter", help);			\
		printf("cos_" #field "_total %llu\n", (unsigned long long)info.field)
		MODULE_COUNTER(messages, "Messages posted to the lords since the module loaded.");
		MODULE_COUNTER(placed, "Tasks the lords' shoots placed.");
		MODULE_COUNTER(refused, "Shoots the module refused.");
		MODULE_COUNTER(fallbacks, "Tasks that fell back to the fair policy.");
		MODULE_COUNTER(stalls, "Times a lord stalled.");
		MODULE_COUNTER(dropped, "Messages dropped on a full ring.");
#undef MODULE_COUNTER
	}
	if (nenc) {
		prom_head("cos_enclave_waiting", "gauge", "Tasks waiting for the enclave's lord.");
		for (size_t i = 0; i < nenc; i++) {
			printf("cos_enclave_waiting{enclave=\"");
			prom_label(enc[i].name);
			printf("\"} %u\n", enc[i].waiting);
		}
#define ENCLAVE_COUNTER(metric, field, help)					\
		prom_head("cos_enclave_" metric "_total", "counter", help);		\
		for (size_t i = 0; i < nenc; i++) {					\
			printf("cos_enclave_" metric "_total{enclave=\"");		\
			prom_label(enc[i].name);					\
			printf("\"} %llu\n", (unsigned long long)enc[i].field);		\
		}
		ENCLAVE_COUNTER("messages", produced, "Messages posted to the enclave's lord.")
		ENCLAVE_COUNTER("placed", placed, "Tasks the enclave's lord placed.")
		ENCLAVE_COUNTER("refused", refused, "Shoots of the enclave's lord refused.")
		ENCLAVE_COUNTER("fallbacks", fallbacks, "The enclave's tasks that fell back.")
		ENCLAVE_COUNTER("stalls", stalls, "Times the enclave's lord stalled.")
		ENCLAVE_COUNTER("dropped", dropped, "Messages to the enclave's lord dropped.")
#undef ENCLAVE_COUNTER
	}
	if (ngroups) {
#define GROUP_METRIC(metric, type, value, help)				\
		prom_head("cos_group_" metric, type, help);				\
		for (size_t i = 0; i < ngroups; i++) {					\
			const struct cos_group_info *g = &groups[i];			\
											\
			printf("cos_group_" metric "{cgroup=\"");			\
			prom_label(paths[i] ?: "?");					\
			printf("\"} %.9g\n", (double)(value));				\
		}
		GROUP_METRIC("usage_seconds_total", "counter", g->usage_ns / 1e9,
			     "CPU time the group's tasks used under the shim.")
		GROUP_METRIC("throttled_seconds_total", "counter", g->throttled_ns / 1e9,
			     "Time the group spent throttled (cpu.max).")
		GROUP_METRIC("throttles_total", "counter", g->nr_throttled,
			     "Times the group was throttled.")
		GROUP_METRIC("quota_cpus", "gauge", g->quota_ns == COS_GROUP_NO_QUOTA ? -1 :
			     (double)g->quota_ns / g->period_ns,
			     "cpu.max as CPUs (-1: no limit).")
		GROUP_METRIC("weight", "gauge", g->weight, "cpu.weight.")
#undef GROUP_METRIC
	}
	if (got) {
		prom_head("cos_lord_cpu_seconds_total", "counter", "CPU time of each lord's process.");
		for (size_t i = 0; i < got; i++) {
			printf("cos_lord_cpu_seconds_total{enclave=\"");
			prom_label(json_string_value(json_object_get(lords[i], "enclave")) ?: "");
			printf("\"} %.6f\n", json_real_value(json_object_get(lords[i], "lord_cpu_s")));
		}
		prom_lords(lords, got, "framework", "cos_lord_framework",
			   "Each lord's framework counters (libcos), by name.");
		prom_lords(lords, got, "policy_stats", "cos_lord_policy",
			   "Each lord's policy counters, by name.");
	}
	for (size_t i = 0; i < ngroups; i++)
		free(paths ? paths[i] : NULL);
	for (size_t i = 0; i < got; i++)
		json_decref(lords[i]);
	free(lords);
	free(paths);
	free(groups);
	free(enc);
	return 0;
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

/*
 * The global options may come before the command and among its words, except in run's
 * command: run's own options end at its first word that is not one (or --), and the global
 * ones are taken up to there (the value of --enclave or --policy-class is not a word).
 */
int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	int json = 0, i, n = 0;
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
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(argv[i], commands[k].name))
			cmd = &commands[k];
	if (!cmd) {
		fprintf(stderr, "cosctl: unknown command '%s'\nTry 'cosctl --help' for more.\n",
			argv[i]);
		return 2;
	}
	args = calloc(argc, sizeof(*args));
	if (!args)
		return fail(-ENOMEM);
	for (int k = i + 1; k < argc; k++) {
		bool in_cmd = false;

		if (cmd->fn == cmd_run) {	/* past run's options: CMD's own words */
			in_cmd = !strcmp(argv[k], "--") || argv[k][0] != '-';
			if ((!strcmp(argv[k], "--enclave") || !strcmp(argv[k], "--policy-class")) &&
			    k + 1 < argc) {
				args[n++] = argv[k++];
				args[n++] = argv[k];
				continue;
			}
		}
		if (in_cmd) {
			while (k < argc)
				args[n++] = argv[k++];
			break;
		}
		switch (global_opt(argv[k])) {
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(cmd->usage, stdout);
			free(args);
			return 0;
		case 'V':
			cos_print_version(stdout, "cosctl");
			free(args);
			return 0;
		default:
			args[n++] = argv[k];
		}
	}
	i = cmd->fn(n, args, json);
	free(args);
	return i;
}
