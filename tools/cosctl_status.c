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

/* What `cosctl status` reports, read once: the text, the JSON and --check print it. */
struct status_state {
	struct cos_sys_status st;
	bool partial;			/* the shim is in partial mode */
	char part_str[256];		/* then its partition's CPUs (or why they are unknown) */
	struct cos_info info;
	bool have_info;			/* info was read; else info_err says why ("": not tried) */
	const char *info_err;
	struct cos_enclave_info *enclaves;	/* malloc()ed */
	size_t nr_enclaves;
	bool have_enclaves;		/* the module names its enclaves and they were read */
	json_t *problems;		/* find_problems()'s strings */
};

/* Read into @s the system's state, the shim's mode, the module's info and enclaves. */
static void read_status(struct status_state *s)
{
	cpu_set_t part;
	int fd, err;

	*s = (struct status_state){ .info_err = "" };
	cos_sys_status(&s->st);
	s->partial = cos_shim_partial() == 1;
	if (s->partial && cos_partition_cpus(&part, sizeof(part)))
		snprintf(s->part_str, sizeof(s->part_str), "%s", cos_strerror(-EIO));
	else if (s->partial)
		cos_format_cpus(&part, sizeof(part), s->part_str, sizeof(s->part_str));
	fd = s->st.module_loaded ? cos_open() : -ENODEV;
	if (fd >= 0) {
		err = cos_get_info(fd, &s->info);
		s->have_info = !err;
		if (err)
			s->info_err = cos_strerror(err);
		if (s->have_info && (s->info.features & COS_FEAT_ENCLAVE_NAMES))
			s->have_enclaves = !cos_get_enclaves(fd, &s->enclaves, &s->nr_enclaves);
		close(fd);
	} else if (s->st.module_loaded) {
		s->info_err = cos_strerror(fd);
	}
	s->problems = json_array();
	find_problems(s->problems, &s->st, s->have_info, &s->info, s->info_err, s->enclaves,
		      s->nr_enclaves);
}

/* The name of feature @bit, "bit-N" (in @buf) for one libcos does not know. */
static const char *feature_name(unsigned int bit, char *buf, size_t len)
{
	if (cos_feature_name(bit))
		return cos_feature_name(bit);
	snprintf(buf, len, "bit-%u", bit);
	return buf;
}

/* --check without --json: only the problems, or "ok". */
static void print_problems_only(const struct status_state *s)
{
	size_t i;
	json_t *p;

	json_array_foreach(s->problems, i, p)
		printf("%s\n", json_string_value(p));
	if (!json_array_size(s->problems))
		printf("ok\n");
}

/* The JSON form's "module": loaded, the device, and the module's info or why it is missing. */
static json_t *module_json(const struct status_state *s)
{
	json_t *module = json_pack("{s:b,s:b}", "loaded", s->st.module_loaded, "device",
				   s->st.device);
	json_t *names;
	char buf[32];

	if (!s->have_info) {
		if (s->info_err[0])
			json_object_set_new(module, "error", json_text(s->info_err));
		return module;
	}
	names = json_array();
	for (unsigned int bit = 0; bit < 64; bit++)
		if (s->info.features & (1ULL << bit))
			json_array_append_new(names,
					      json_string(feature_name(bit, buf, sizeof(buf))));
	json_object_set_new(module, "abi_version", json_integer(s->info.abi_version));
	json_object_set_new(module, "features", json_integer((json_int_t)s->info.features));
	json_object_set_new(module, "feature_names", names);
	json_object_set_new(module, "nr_cpu_ids", json_integer(s->info.nr_cpu_ids));
	json_object_set_new(module, "kernel_version",
			    json_string(kver_str(s->info.kernel_version, buf, sizeof(buf))));
	return module;
}

/* Add to JSON object @o the counters the module keeps in all and per enclave; return @o. */
static json_t *with_counters(json_t *o, unsigned long long messages, unsigned long long placed,
			     unsigned long long refused, unsigned long long fallbacks,
			     unsigned long long stalls, unsigned long long dropped)
{
	json_object_set_new(o, "messages", json_integer((json_int_t)messages));
	json_object_set_new(o, "placed", json_integer((json_int_t)placed));
	json_object_set_new(o, "refused", json_integer((json_int_t)refused));
	json_object_set_new(o, "fallbacks", json_integer((json_int_t)fallbacks));
	json_object_set_new(o, "stalls", json_integer((json_int_t)stalls));
	json_object_set_new(o, "dropped", json_integer((json_int_t)dropped));
	return o;
}

/* The JSON form's "enclaves": each enclave with its lord and counters. */
static json_t *enclaves_json(const struct status_state *s)
{
	json_t *list = json_array();
	char cpus[256];

	for (size_t i = 0; i < s->nr_enclaves; i++) {
		const struct cos_enclave_info *e = &s->enclaves[i];
		json_t *o = json_pack("{s:i,s:s,s:i,s:i,s:s,s:i,s:b,s:i}",
				      "id", e->id, "name", e->name, "lord_pid", e->lord_pid,
				      "lord_cpu", e->lord_cpu,
				      "cpus", enclave_cpus(e, cpus, sizeof(cpus)),
				      "nr_cpus", e->nr_cpus,
				      "active", !!(e->flags & COS_ENCLAVE_F_ACTIVE),
				      "waiting", e->waiting);

		json_array_append_new(list, with_counters(o, e->produced, e->placed, e->refused,
							  e->fallbacks, e->stalls, e->dropped));
	}
	return list;
}

/* The JSON form: module, libcos, sched_ext, shim, then lord, enclaves, counters, problems. */
static json_t *status_json(const struct status_state *s)
{
	const struct cos_info *info = &s->info;
	json_t *out = json_pack("{s:o,s:{s:i,s:s},s:{s:b,s:o,s:o},s:{s:b,s:b}}",
				"module", module_json(s), "libcos", "abi_version", COS_ABI_VERSION,
				"version", cos_version(),
				"sched_ext", "supported", s->st.sched_ext, "state",
				json_text(s->st.state), "ops", json_text(s->st.ops),
				"shim", "attached", s->st.shim_attached,
				"pinned", s->st.shim_pinned);
	json_t *shim = json_object_get(out, "shim");

	json_object_set_new(shim, "mode", !s->st.shim_attached ? json_null() :
			    json_string(s->partial ? "partial" : "full"));
	json_object_set_new(shim, "partition", s->partial ? json_text(s->part_str) : json_null());
	if (s->have_info) {
		json_object_set_new(out, "lord", info->lord_pid ?
				    json_pack("{s:i,s:i,s:i}", "pid", info->lord_pid, "cpu",
					      info->lord_cpu, "enclave_cpus", info->enclave_cpus) :
				    json_null());
		if (s->have_enclaves)
			json_object_set_new(out, "enclaves", enclaves_json(s));
		json_object_set_new(out, "counters",
				    with_counters(json_pack("{s:i}", "tasks", info->tasks),
						  info->messages, info->placed, info->refused,
						  info->fallbacks, info->stalls, info->dropped));
	}
	json_object_set(out, "problems", s->problems);
	return out;
}

/* The text's first lines: the module, its features, libcos. */
static void print_module(const struct status_state *s)
{
	const struct cos_info *info = &s->info;
	char buf[32];

	if (!s->st.module_loaded)
		printf("module:     not loaded%s\n", s->st.sched_ext ? " (cosctl load)" : "");
	else if (s->have_info)
		printf("module:     loaded, ABI %u, %u CPU ids, built for Linux %s\n",
		       info->abi_version, info->nr_cpu_ids,
		       kver_str(info->kernel_version, buf, sizeof(buf)));
	else
		printf("module:     loaded (%s)\n", s->info_err);
	if (s->have_info) {
		printf("features:  ");
		for (unsigned int bit = 0; bit < 64; bit++)
			if (info->features & (1ULL << bit))
				printf(" %s", feature_name(bit, buf, sizeof(buf)));
		putchar('\n');
	}
	printf("libcos:     %s, ABI %u%s\n", cos_version(), COS_ABI_VERSION,
	       s->have_info && info->abi_version != COS_ABI_VERSION ?
	       " (differs from the module!)" : "");
}

/* The text's sched_ext, shim and (in partial mode) partition lines. */
static void print_sched_ext_and_shim(const struct status_state *s)
{
	const struct cos_sys_status *st = &s->st;

	if (!st->sched_ext)
		printf("sched_ext:  not supported by this kernel\n");
	else
		printf("sched_ext:  %s%s%s%s\n", st->state[0] ? st->state : "unknown",
		       st->ops[0] ? ", scheduler \"" : "", st->ops, st->ops[0] ? "\"" : "");
	printf("shim:       %s%s\n", !st->shim_attached ? "not attached" : s->partial ?
	       "attached, partial mode (only COS tasks on sched_ext)" : "attached, full mode",
	       st->shim_pinned ? " (pinned at " COS_SHIM_PIN_PATH ")" : "");
	if (s->partial)
		printf("partition:  CPUs %s for COS tasks (" COS_PARTITION_PATH ")\n", s->part_str);
}

/* The text's enclave lines: each enclave with its lord and counters. */
static void print_enclaves(const struct status_state *s)
{
	char cpus[256];

	for (size_t i = 0; i < s->nr_enclaves; i++) {
		const struct cos_enclave_info *e = &s->enclaves[i];

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

/* The text's lord line (with no enclaves to show it) and the module's counters. */
static void print_module_counters(const struct status_state *s)
{
	const struct cos_info *info = &s->info;

	if (info->lord_pid && !s->have_enclaves)
		printf("lord:       thread %d on CPU %d, enclave of %u CPUs\n", info->lord_pid,
		       info->lord_cpu, info->enclave_cpus);
	else if (!info->lord_pid && !s->nr_enclaves)
		printf("lord:       none (COS tasks run under the shim's fair policy)\n");
	printf("counters:   %u COS tasks; since load: %llu messages, %llu placed, %llu "
	       "refused, %llu fallbacks, %llu stalls, %llu dropped\n", info->tasks,
	       (unsigned long long)info->messages, (unsigned long long)info->placed,
	       (unsigned long long)info->refused, (unsigned long long)info->fallbacks,
	       (unsigned long long)info->stalls, (unsigned long long)info->dropped);
	if (info->stalls || info->dropped)
		printf("            stalls: a lord fell behind (the fair policy ran its tasks "
		       "meanwhile); dropped: its ring overflowed (it resynced). If they grow,\n"
		       "            keep other work off the lord's CPU, or give the lord a longer "
		       "--stall-ms\n");
}

/* The text form: every section, then the problems. */
static void print_status(const struct status_state *s)
{
	print_module(s);
	print_sched_ext_and_shim(s);
	if (s->have_enclaves)
		print_enclaves(s);
	if (s->have_info)
		print_module_counters(s);
	for (size_t i = 0; i < json_array_size(s->problems); i++)
		printf("%s %s\n", i ? "           " : "problem:   ",
		       json_string_value(json_array_get(s->problems, i)));
}

/*
 * The exit status: with --check 1 if there is a problem, else 1 only on a kernel without
 * sched_ext.
 */
int cmd_status(int argc, char **argv, int json)
{
	struct status_state s;
	int check = 0, err;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--check")) {
			fprintf(stderr, "cosctl status: unexpected '%s'\n%s", argv[i], status_usage);
			return 2;
		}
		check = 1;
	}
	read_status(&s);
	err = check ? json_array_size(s.problems) != 0 : !s.st.sched_ext;
	if (check && !json)
		print_problems_only(&s);
	else if (json)
		json_print(status_json(&s));
	else
		print_status(&s);
	json_decref(s.problems);
	free(s.enclaves);
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

/* One task's JSON object: @enclave its enclave's name, @last its last event, @ago ns or -1. */
static json_t *task_json(const struct cos_task_info *t, const char *enclave, const char *last,
			 long long ago)
{
	return json_pack("{s:i,s:i,s:i,s:i,s:s,s:i,s:o,s:I,s:I,s:s,s:I,s:I,s:o}",
			 "slot", t->slot, "gen", t->gen, "pid", t->pid, "tgid", t->tgid,
			 "state", cos_task_state_name(t->state), "cpu", t->cpu,
			 "enclave", t->enclave_id ? json_text(enclave) : json_null(),
			 "enclave_id", (json_int_t)t->enclave_id,
			 "runtime_ns", (json_int_t)t->runtime_ns, "last_event", last,
			 "last_seq", (json_int_t)t->last_seq, "last_ns_ago", (json_int_t)ago,
			 "comm", json_text(t->comm));
}

/* One task's line of the table (task_json()'s arguments). */
static void print_task(const struct cos_task_info *t, const char *enclave, const char *last,
		       long long ago)
{
	printf("%6u %5u %7d %7d %-7s %3u %-15s %12llu %-14s ", t->slot, t->gen, t->pid,
	       t->tgid, cos_task_state_name(t->state), t->cpu, enclave,
	       (unsigned long long)t->runtime_ns / 1000, last);
	if (ago >= 0)
		printf("%10.1f", ago / 1e6);
	else
		printf("%10s", "-");
	printf("  %s\n", t->comm);
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

		if (json)
			json_array_append_new(list, task_json(t, enclave, last, ago));
		else
			print_task(t, enclave, last, ago);
	}
	if (json)
		json_print(list);
	free(tasks);
	free(encl);
	return 0;
}
