// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl_status.c — `cosctl status` (the module, sched_ext, the shim, the enclaves and their
 * lords, the counters, and what keeps cos from working here) and `cosctl tasks` (the COS
 * tasks).  See docs/operating.md, "cosctl".
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cos.h>

#include "cosctl.h"

/* Where a lord unit's settings live: cos-lord@NAME.service reads COS_DEFAULTS_DIR/cos-NAME. */
#ifndef COS_DEFAULTS_DIR
#define COS_DEFAULTS_DIR "/etc/default"
#endif

const char status_usage[] =
	"usage: cosctl status [--check] [--json]\n"
	"The module (ABI, features), sched_ext's state and scheduler, the shim, each enclave with\n"
	"its lord and counters, and the problems: what keeps cos from working here (no sched_ext,\n"
	"cos.ko not loaded or of another ABI, another sched_ext scheduler, the shim not attached, a\n"
	"lord configured in " COS_DEFAULTS_DIR "/cos-NAME that is not running).\n"
	"--check: print only the problems (or \"ok\"), exit status 1 if there is one.  Without it\n"
	"the exit status is 1 only on a kernel that cannot run cos at all.\n";

const char tasks_usage[] =
	"usage: cosctl tasks [--json]\n"
	"The COS tasks: slot, generation, pid, state, CPU, enclave, CPU time, last event and how\n"
	"long ago.  Needs read access to /dev/cos.\n";

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

int cmd_status(int argc, char **argv, int json)
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

/* The name of enclave @id among @all, "-" for none (0) or one that is gone. */
static const char *enclave_name(const struct cos_enclave_info *all, size_t nr, unsigned int id)
{
	for (size_t i = 0; id && i < nr; i++)
		if (all[i].id == id)
			return all[i].name;
	return "-";
}

int cmd_tasks(int argc, char **argv, int json)
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
