// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl_stats.c — `cosctl stats` (each running lord's statistics, read from the socket it
 * serves, once or again and again with rates) and `cosctl metrics` (the module's, the
 * enclaves', the bandwidth groups' and the lords' counters in Prometheus's text format).  Each
 * lord serves one JSON object per connection on COS_STATS_DIR/NAME.stats
 * (policies/lord_stats.c).  See docs/operating.md, "cosctl".
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cos.h>

#include "cosctl.h"

const char stats_usage[] =
	"usage: cosctl stats [--enclave NAME] [--monitor SEC] [--json]\n"
	"Each running lord's statistics, read from the socket it serves (" COS_STATS_DIR "/NAME.stats):\n"
	"its policy, enclave, CPUs, uptime and CPU time, the framework's counters (messages,\n"
	"placements, failed shoots by reason, the wake rules' starts) and the policy's own.\n"
	"--enclave NAME: that lord's only (NAME or cos-NAME).  --monitor SEC: again every SEC\n"
	"seconds (e.g. 0.5), each counter with its rate since the last, until interrupted.\n"
	"--json: one JSON object per lord and line, as the socket serves it (schema\n"
	"cos-lord-stats/1, docs/operating.md).  Exit status 1 if no lord answers.\n";

const char metrics_usage[] =
	"usage: cosctl metrics\n"
	"The module's, the enclaves', the bandwidth groups' and each running lord's counters in\n"
	"Prometheus's text format, e.g. for node_exporter's textfile collector:\n"
	"  cosctl metrics > /var/lib/prometheus/node-exporter/cos.prom.tmp &&\n"
	"    mv /var/lib/prometheus/node-exporter/cos.prom.tmp /var/lib/prometheus/node-exporter/cos.prom\n";

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

/* Stats' options into *@name (NULL: every lord) and *@every (0: once): 0, or 2 (said). */
static int parse_stats_options(int argc, char **argv, const char **name, double *every)
{
	for (int i = 0; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--enclave") && i + 1 < argc && argv[i + 1][0]) {
			*name = argv[++i];
		} else if (!strcmp(argv[i], "--monitor") && i + 1 < argc) {
			errno = 0;
			*every = strtod(argv[++i], &end);
			if (errno || end == argv[i] || *end || !(*every >= 0.1 && *every <= 3600)) {
				fprintf(stderr, "cosctl stats: bad value '%s' for --monitor: want "
					"0.1..3600 seconds\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "cosctl stats: unexpected '%s'\n%s", argv[i], stats_usage);
			return 2;
		}
	}
	return 0;
}

/* Free the snapshots of @lords (NULL-ended; NULL is none) and the array. */
static void free_snapshots(json_t **lords)
{
	for (size_t k = 0; lords && lords[k]; k++)
		json_decref(lords[k]);
	free(lords);
}

/* The snapshot among @prev (NULL-ended) of the same lord (its pid) as @j, or NULL. */
static json_t *same_lord(json_t **prev, json_t *j)
{
	for (size_t k = 0; prev && prev[k]; k++)
		if (json_equal(json_object_get(prev[k], "pid"), json_object_get(j, "pid")))
			return prev[k];
	return NULL;
}

/*
 * One round: print the snapshot of each lord (of enclave @name if not NULL), as JSON or as
 * text with the rates since @prev (the last round's).  Return: this round's snapshots
 * (NULL-ended; NULL if out of memory), how many in *@got.
 */
static json_t **stats_round(const char *name, int json, json_t **prev, size_t *got)
{
	char **paths;
	size_t n = lord_sockets(name, ".stats", &paths);
	json_t **cur = calloc(n + 1, sizeof(*cur));

	*got = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *j = cur ? lord_snapshot(paths[i], false) : NULL;

		free(paths[i]);
		if (!j)
			continue;
		cur[(*got)++] = j;
		if (json) {
			json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
			putchar('\n');
		} else {
			print_lord(j, same_lord(prev, j));
		}
	}
	free(paths);
	return cur;
}

int cmd_stats(int argc, char **argv, int json)
{
	json_t **prev = NULL;
	const char *name = NULL;
	double every = 0;
	int rc = 0;

	if (parse_stats_options(argc, argv, &name, &every))
		return 2;
	for (unsigned long round = 0;; round++) {
		json_t **cur;
		size_t got;

		if (every && !json && round)
			putchar('\n');
		cur = stats_round(name, json, prev, &got);
		free_snapshots(prev);
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
	free_snapshots(prev);
	return rc;
}

/* What `cosctl metrics` reports, read once. */
struct metrics_state {
	struct cos_sys_status st;
	struct cos_info info;
	bool have_info;
	struct cos_enclave_info *enclaves;	/* malloc()ed, as the rest */
	size_t nr_enclaves;
	struct cos_group_info *groups;
	char **paths;			/* each group's cgroup path (NULL: unknown) */
	size_t nr_groups;
	json_t **lords;			/* the lords' snapshots */
	size_t nr_lords;
};

/* Read into @m the module's info, its enclaves and groups, and the lords' snapshots. */
static void read_metrics(struct metrics_state *m)
{
	char **sockets;
	size_t n;
	int fd;

	cos_sys_status(&m->st);
	fd = m->st.module_loaded ? cos_open() : -ENODEV;
	if (fd >= 0) {
		m->have_info = !cos_get_info(fd, &m->info);
		if (m->have_info && (m->info.features & COS_FEAT_ENCLAVE_NAMES) &&
		    cos_get_enclaves(fd, &m->enclaves, &m->nr_enclaves))
			m->nr_enclaves = 0;
		if (cos_get_groups(fd, &m->groups, &m->nr_groups))
			m->nr_groups = 0;
		close(fd);
	}
	m->paths = calloc(m->nr_groups ?: 1, sizeof(*m->paths));
	if (!m->paths || cos_group_paths(m->groups, m->nr_groups, m->paths))
		m->nr_groups = 0;	/* no group lines rather than none at all */
	n = lord_sockets(NULL, ".stats", &sockets);
	m->lords = calloc(n + 1, sizeof(*m->lords));
	for (size_t i = 0; i < n; i++) {
		json_t *j = m->lords ? lord_snapshot(sockets[i], true) : NULL;

		if (j)
			m->lords[m->nr_lords++] = j;
		free(sockets[i]);
	}
	free(sockets);
}

/* The module's metrics: loaded, the shim, and (with its info) its ABI, tasks and counters. */
static void print_module_metrics(const struct metrics_state *m)
{
	prom_head("cos_module_loaded", "gauge", "Whether cos.ko is loaded.");
	printf("cos_module_loaded %d\n", m->st.module_loaded);
	prom_head("cos_shim_attached", "gauge", "Whether the cos shim is the sched_ext scheduler.");
	printf("cos_shim_attached %d\n", m->st.shim_attached);
	if (!m->have_info)
		return;
	prom_head("cos_abi_version", "gauge", "The module's ABI version.");
	printf("cos_abi_version %u\n", m->info.abi_version);
	prom_head("cos_tasks", "gauge", "COS tasks now.");
	printf("cos_tasks %u\n", m->info.tasks);
#define MODULE_COUNTER(field, help)						\
	prom_head("cos_" #field "_total", "counter", help);			\
	printf("cos_" #field "_total %llu\n", (unsigned long long)m->info.field)
	MODULE_COUNTER(messages, "Messages posted to the lords since the module loaded.");
	MODULE_COUNTER(placed, "Tasks the lords' shoots placed.");
	MODULE_COUNTER(refused, "Shoots the module refused.");
	MODULE_COUNTER(fallbacks, "Tasks that fell back to the fair policy.");
	MODULE_COUNTER(stalls, "Times a lord stalled.");
	MODULE_COUNTER(dropped, "Messages dropped on a full ring.");
#undef MODULE_COUNTER
}

/* Each enclave's waiting tasks and counters. */
static void print_enclave_metrics(const struct cos_enclave_info *enc, size_t nenc)
{
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

/* Each bandwidth group's usage, throttling, rate and weight, by its cgroup (@paths). */
static void print_group_metrics(const struct cos_group_info *groups, char *const *paths,
				size_t ngroups)
{
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

/* Each lord's CPU time and its framework's and policy's counters. */
static void print_lord_metrics(json_t *const *lords, size_t n)
{
	prom_head("cos_lord_cpu_seconds_total", "counter", "CPU time of each lord's process.");
	for (size_t i = 0; i < n; i++) {
		printf("cos_lord_cpu_seconds_total{enclave=\"");
		prom_label(json_string_value(json_object_get(lords[i], "enclave")) ?: "");
		printf("\"} %.6f\n", json_real_value(json_object_get(lords[i], "lord_cpu_s")));
	}
	prom_lords(lords, n, "framework", "cos_lord_framework",
		   "Each lord's framework counters (libcos), by name.");
	prom_lords(lords, n, "policy_stats", "cos_lord_policy",
		   "Each lord's policy counters, by name.");
}

int cmd_metrics(int argc, char **argv, int json)
{
	struct metrics_state m = { 0 };

	if (argc) {
		fprintf(stderr, "cosctl metrics: unexpected '%s'\n%s", argv[0], metrics_usage);
		return 2;
	}
	read_metrics(&m);
	print_module_metrics(&m);
	if (m.nr_enclaves)
		print_enclave_metrics(m.enclaves, m.nr_enclaves);
	if (m.nr_groups)
		print_group_metrics(m.groups, m.paths, m.nr_groups);
	if (m.nr_lords)
		print_lord_metrics(m.lords, m.nr_lords);
	for (size_t i = 0; i < m.nr_groups; i++)
		free(m.paths ? m.paths[i] : NULL);
	for (size_t i = 0; i < m.nr_lords; i++)
		json_decref(m.lords[i]);
	free(m.lords);
	free(m.paths);
	free(m.groups);
	free(m.enclaves);
	return 0;
}
