// SPDX-License-Identifier: GPL-2.0
/*
 * lord_main.c — the life of a policy program (see lord_main.h): options common to every
 * policy, the shim, the lord's loop, statistics on SIGUSR1 or every --stats seconds, and a
 * clean exit that gives the CPUs back.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "lord_main.h"
#include "lord_trace.h"

#include <cos_trace.h>

#define HANDOFFS	(COS_WAKE_HANDOFF | COS_WAKE_HANDOFF_BLOCK)

static struct lord_main *the_main;

/* The framework's counters (libcos), as the statistics line and the socket name them. */
static void framework_stats(struct cos_sched *s, struct lord_stats *fw)
{
	/* "LATCH_FULL" becomes "latch-full": made once, kept for the keys */
	static char names[COS_SHOOT_OTHER_ENCLAVE + 1][32];
	struct cos_sched_stats st;

	cos_sched_get_stats(s, &st);
	lord_stat(fw, "tasks", st.tasks);
	lord_stat(fw, "messages", st.messages);
	lord_stat(fw, "placed", st.placed);
	lord_stat(fw, "failed", st.failed);
	for (int status = COS_SHOOT_OK + 1; status <= COS_SHOOT_OTHER_ENCLAVE; status++) {
		if (!cos_sched_shoot_failures(s, status))
			continue;
		if (!names[status][0]) {
			const char *n = cos_shoot_status_name(status);
			size_t i;

			for (i = 0; n[i] && i < sizeof(names[0]) - 1; i++)
				names[status][i] = n[i] == '_' ? '-' : (char)tolower((unsigned char)n[i]);
		}
		lord_stat(fw, names[status], cos_sched_shoot_failures(s, status));
	}
	lord_stat(fw, "not-started", cos_sched_shoot_failures(s, COS_SCHED_NOT_STARTED));
	lord_stat(fw, "stale", cos_sched_shoot_failures(s, COS_SCHED_STALE));
	lord_stat(fw, "resyncs", st.resyncs);
	lord_stat(fw, "stalls", st.stalls);
	lord_stat(fw, "wake-placed", cos_sched_wake_placed(s));
	/* of those: handed over, started in an urgent task's place, queued next (wake rules) */
	lord_stat(fw, "wake-handoffs", cos_sched_wake_handoffs(s));
	lord_stat(fw, "wake-preempts", cos_sched_wake_preempts(s));
	lord_stat(fw, "wake-nexts", cos_sched_wake_nexts(s));
	lord_stat(fw, "hint-bad-tables", cos_sched_hint_bad_tables(s));
	lord_stat(fw, "waits", st.waits);
}

static void print_stats(struct cos_sched *s, struct lord_main *m)
{
	struct lord_stats fw = { 0 }, pol = { 0 };

	framework_stats(s, &fw);
	fprintf(stderr, "%s: ", m->prog);
	lord_stats_print(&fw, stderr);
	if (m->stats) {
		m->stats(s, &pol);
		fputs(" | ", stderr);
		lord_stats_print(&pol, stderr);
	}
	fputc('\n', stderr);
}

/* CPU time this process has used, in seconds (user and system), or -1. */
static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return -1;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static json_t *stats_object(const struct lord_stats *st)
{
	json_t *o = json_object();

	for (unsigned int i = 0; i < st->n; i++)
		json_object_set_new(o, st->key[i], json_integer((json_int_t)st->v[i]));
	return o;
}

/* A snapshot for the socket (schema LORD_STATS_SCHEMA, docs/operating.md). */
static void publish_stats(struct cos_sched *s, struct lord_main *m, unsigned long long now)
{
	struct lord_stats fw = { 0 }, pol = { 0 };
	char cpus[256];
	json_t *j;
	char *text;

	framework_stats(s, &fw);
	if (m->stats)
		m->stats(s, &pol);
	cos_format_cpus(&m->enclave, sizeof(m->enclave), cpus, sizeof(cpus));
	j = json_pack("{s:s,s:s,s:s,s:i,s:i,s:s,s:f,s:f,s:o,s:o}",
		      "schema", LORD_STATS_SCHEMA, "policy", m->prog, "enclave", m->name,
		      "pid", (int)getpid(), "lord_cpu", m->lord_cpu, "cpus", cpus,
		      "uptime_s", (now - m->started_at) / 1e9, "lord_cpu_s", cpu_seconds() - m->cpu0,
		      "framework", stats_object(&fw), "policy_stats", stats_object(&pol));
	text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(j);
	if (text)
		lord_stats_publish(m->server, text);
}

/* The policy's tick when it has none: statistics. */
static void stats_tick(struct cos_sched *s, unsigned long long now)
{
	struct lord_main *m = the_main;

	/* the counters' own clock reads are no decision: not in a recording, nor its replay */
	cos_trace_observing(true);
	if (cos_sched_stats_requested(s) ||
	    (m->stats_every_ns && now - m->last_stats >= m->stats_every_ns)) {
		m->last_stats = now;
		print_stats(s, m);
	}
	if (lord_stats_wanted(m->server))
		publish_stats(s, m, now);
	cos_trace_observing(false);
}

/* --events: the framework's last messages and shoots, oldest first, times from the last one. */
static void print_events(struct cos_sched *s, struct lord_main *m)
{
	struct cos_sched_event ev[COS_SCHED_RECENT];
	int n = cos_sched_recent(s, ev, COS_SCHED_RECENT);

	fprintf(stderr, "%s: the last %d events (us before the last; slot.gen pid CPU):\n", m->prog, n);
	for (int i = 0; i < n; i++) {
		long long us = ((long long)ev[i].ts - (long long)ev[n - 1].ts) / 1000;

		if (ev[i].kind == COS_SCHED_EV_MSG)
			fprintf(stderr, "%s: %9lld  msg   %-16s %u.%u %d cpu %d arg %#llx\n", m->prog,
				us, cos_msg_type_name(ev[i].type), ev[i].slot, ev[i].gen, ev[i].pid,
				ev[i].cpu, ev[i].arg);
		else
			fprintf(stderr, "%s: %9lld  shoot %-16s %u.%u %d cpu %d slice %llu us%s%s\n",
				m->prog, us, cos_shoot_status_name(ev[i].type), ev[i].slot, ev[i].gen,
				ev[i].pid, ev[i].cpu, ev[i].arg / 1000,
				ev[i].flags & COS_SHOOT_F_LATCH ? " latch" : "",
				ev[i].flags & COS_SHOOT_F_URGENT ? " urgent" : "");
	}
}

/* The common options' usage, before and after the policy's own (bad_value() quotes them). */
static const char usage_head[] =
	"  -c, --cpus LIST      enclave CPUs, e.g. 1-3 (default: every online CPU but the lord's)\n"
	"  -l, --lord-cpu N     the CPU the lord runs on (default 0)\n"
	"  -n, --name NAME      the enclave's name, as `cosctl status` and the OCI hook's\n"
	"                       io.cos.policy know it (default: the program's name)\n";
static const char usage_tail[] =
	"      --stall-ms N     the kernel's stall timeout (default: the module's, 20 ms)\n"
	"      --starve-ms N    longest a runnable task may wait (default: the module's, 1000 ms)\n"
	"      --stats SEC      print statistics every SEC seconds, e.g. 0.5 (also on SIGUSR1)\n"
	"      --stats-socket PATH  serve them as JSON on this UNIX socket (default\n"
	"                       " LORD_STATS_DIR "/NAME.stats, NAME the enclave's; `cosctl stats`);\n"
	"                       the decision records on PATH with .trace for .stats (`cosctl trace`)\n"
	"      --no-stats-socket  serve neither\n"
	"      --replay FILE    run the policy on a recording (`cosctl trace`'s NAME.lord file)\n"
	"                       instead of the kernel, and say where its decisions differ from\n"
	"                       the recorded ones (exit status 1 if they do); see cos-replay(1)\n"
	"      --events         at exit, print the framework's last messages and shoots (for a\n"
	"                       bug report: what the lord's books were made of)\n"
	"      --submit HOW     commit shoots with 'ioctl' (default) or 'uring' (io_uring)\n"
	"      --spin-us N      busy-poll N us after the last event before sleeping (default\n"
	"                       50; 0: sleep at once, leaving the lord's CPU idle between events)\n"
	"      --no-shim        do not attach the cos shim (it must be attached already)\n"
	"      --partial        attach the shim in partial mode: only COS tasks on sched_ext,\n"
	"                       the enclave a cpuset partition kept for them (with the shim\n"
	"                       already in partial mode, the enclave defaults to its partition)\n"
	"      --no-wake-rules  every waking task waits for the lord (default: the kernel starts\n"
	"                       a waking task on a free enclave CPU while no task waits)\n"
	"      --wake-all       wake the lord for every message (default: not for a task that\n"
	"                       blocked or that a wake rule started while no task waits)\n"
	"  -h, --help           this text\n"
	"  -V, --version        the version, and the ABI of libcos and of the cos.ko loaded\n"
	"\n"
	"Put work under it with `cosctl run -- CMD`.  Ctrl-C gives the CPUs back.  Needs root\n"
	"(CAP_SYS_NICE; CAP_BPF and CAP_SYS_ADMIN to attach the shim) and cos.ko.\n";

static void usage(FILE *f, const struct lord_main *m)
{
	fprintf(f, "usage: %s [options]\n\n%s\n%s%s%s", m->prog, m->about, usage_head,
		m->own_usage, usage_tail);
}

int lord_number(const char *arg, unsigned long long min, unsigned long long max,
		unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (arg[0] < '0' || arg[0] > '9')	/* strtoull() would take a sign or blanks */
		return -1;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * A bad value @arg for option @opt (a getopt value): named, with the usage lines that explain
 * it (the one naming it and those continuing it), and where the rest is.  Exit status 2.
 */
static int bad_value(const struct lord_main *m, const struct option *longs, int opt,
		     const char *arg, const char *usage_text)
{
	const char *name = NULL, *at, *end;
	char key[64];

	for (const struct option *o = longs; o->name; o++)
		if (o->val == opt) {
			name = o->name;
			break;
		}
	if (name)
		fprintf(stderr, "%s: bad value '%s' for --%s\n", m->prog, arg ? arg : "", name);
	else
		fprintf(stderr, "%s: bad value '%s' for -%c\n", m->prog, arg ? arg : "", opt);
	snprintf(key, sizeof(key), "--%s ", name ? name : "");
	if (!usage_text)	/* a common option */
		usage_text = strstr(usage_head, key) ? usage_head : usage_tail;
	at = name ? strstr(usage_text, key) : NULL;
	if (at) {
		while (at > usage_text && at[-1] != '\n')
			at--;
		/* the line, and the lines continuing it (indented past the option column) */
		for (end = strchr(at, '\n'); end && !strncmp(end + 1, "                    ", 20) &&
		     end[21] == ' ' && end[22] != '-'; end = strchr(end + 1, '\n'))
			;
		fprintf(stderr, "%.*s\n", (int)(end ? end - at : (long)strlen(at)), at);
	}
	fprintf(stderr, "Try '%s --help' for more.\n", m->prog);
	return 2;
}

unsigned long long lord_turn(unsigned long long *turn_at, const struct cos_task *cur)
{
	if (cur->placed_by != COS_PLACED_BY_HANDOFF || !*turn_at || *turn_at > cur->placed_at)
		*turn_at = cur->placed_at;
	return *turn_at;
}

enum { OPT_STALL = 1000, OPT_STARVE, OPT_STATS, OPT_NO_SHIM, OPT_SUBMIT, OPT_NO_WAKE_RULES,
	OPT_SPIN, OPT_PARTIAL, OPT_WAKE_ALL, OPT_STATS_SOCKET, OPT_NO_STATS_SOCKET,
	OPT_EVENTS, OPT_REPLAY };

/* The program's options on one line, for a recording's header (cos-replay reuses them). */
static void options_line(int argc, char **argv, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 1; i < argc && at < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s", at ? " " : "", argv[i]);

		if (n < 0 || (size_t)n >= len - at) {
			buf[at] = '\0';	/* whole options only */
			break;
		}
		at += (size_t)n;
	}
}

/* The decision records' socket: the statistics socket's path with .trace for .stats. */
static void trace_socket_path(char *path, size_t len)
{
	size_t n = strlen(path);

	if (n > 6 && !strcmp(path + n - 6, ".stats"))
		path[n - 6] = '\0';
	strncat(path, ".trace", len - strlen(path) - 1);
}

/* --replay: the policy on a recording, then its report and counters; no kernel, no lord. */
static int replay_main(struct cos_policy *policy, struct lord_main *m, struct cos_replay *r,
		       const char *path, int events)
{
	const struct cos_trace_header *h = cos_replay_header(r);
	struct cos_replay_result res;
	struct cos_sched *s;
	int err, differs;

	m->sched_opts.flags &= ~(unsigned int)COS_SCHED_F_SIGNALS;
	err = cos_sched_create_replay(&s, policy, &m->sched_opts, r);
	if (err) {
		fprintf(stderr, "%s: %s\n", m->prog, cos_strerror(err));
		cos_replay_close(r);
		return 1;
	}
	snprintf(m->name, sizeof(m->name), "%.*s", (int)sizeof(m->name) - 1, h->enclave);
	m->enclave = *(cpu_set_t *)m->sched_opts.lord.enclave;
	printf("%s: replaying %s: %s on '%s', %u CPUs, recorded with: %s\n", m->prog, path,
	       h->policy, h->enclave, m->nr_cpus, h->args[0] ? h->args : "(no options)");
	fflush(stdout);
	differs = cos_replay_run(r, s, stdout, &res);
	printf("%s: %llu steps, %llu placements recorded, %llu replayed, %llu steps differ",
	       m->prog, res.steps, res.recorded, res.replayed, res.differing);
	if (res.differing)
		printf(" (the first: step %llu)", res.first_differing);
	if (res.lost_steps)
		printf("; the recording lost %llu steps (a full ring)", res.lost_steps);
	putchar('\n');
	fflush(stdout);
	print_stats(s, m);
	if (events)
		print_events(s, m);
	cos_sched_destroy(s);
	cos_replay_close(r);
	return differs ? 1 : 0;
}

int lord_main(int argc, char **argv, struct cos_policy *policy, struct lord_main *m)
{
	static const struct option common[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "lord-cpu", required_argument, NULL, 'l' },
		{ "name", required_argument, NULL, 'n' },
		{ "stall-ms", required_argument, NULL, OPT_STALL },
		{ "starve-ms", required_argument, NULL, OPT_STARVE },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "no-shim", no_argument, NULL, OPT_NO_SHIM },
		{ "submit", required_argument, NULL, OPT_SUBMIT },
		{ "no-wake-rules", no_argument, NULL, OPT_NO_WAKE_RULES },
		{ "spin-us", required_argument, NULL, OPT_SPIN },
		{ "partial", no_argument, NULL, OPT_PARTIAL },
		{ "wake-all", no_argument, NULL, OPT_WAKE_ALL },
		{ "stats-socket", required_argument, NULL, OPT_STATS_SOCKET },
		{ "no-stats-socket", no_argument, NULL, OPT_NO_STATS_SOCKET },
		{ "events", no_argument, NULL, OPT_EVENTS },
		{ "replay", required_argument, NULL, OPT_REPLAY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
	};
	struct option longs[64];
	char shorts[64];
	struct cos_shim *shim = NULL;
	struct cos_sys_status sys;
	struct cos_sched *s;
	cpu_set_t enclave;
	const char *cpus = NULL, *stats_socket = NULL, *replay_path = NULL;
	struct cos_replay *replay = NULL;
	struct lord_trace_server *tracer = NULL;
	char args[256];
	char socket_path[128];
	int n = 0, c, err, no_shim = 0, no_wake_rules = 0, partial = 0, events = 0;
	unsigned long long t0;
	double cpu0;

	the_main = m;
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		longs[n++] = common[i];
	for (const struct option *o = m->own_long; o && o->name && n < 63; o++)
		longs[n++] = *o;
	memset(&longs[n], 0, sizeof(longs[n]));
	snprintf(shorts, sizeof(shorts), ":c:l:n:hV%s", m->own_short ? m->own_short : "");
	m->sched_opts.size = sizeof(m->sched_opts);
	opterr = 0;	/* ':' first in shorts: a missing value is ':', said below */
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		unsigned long long v;

		switch (c) {
		case 'c': cpus = optarg; break;
		case 'l':
			if (lord_number(optarg, 0, LORD_MAX_CPUS - 1, &v))
				return bad_value(m, longs, c, optarg, NULL);
			m->lord_cpu = (int)v;
			break;
		case 'n': m->sched_opts.lord.name = optarg; break;
		case OPT_STALL:
		case OPT_STARVE:
			/* the module's bounds (struct cos_lord_args); 0 is its default */
			if (lord_number(optarg, 0, 10000, &v))
				return bad_value(m, longs, c, optarg, NULL);
			*(c == OPT_STALL ? &m->sched_opts.lord.stall_ms :
					   &m->sched_opts.lord.starve_ms) = (unsigned int)v;
			break;
		case OPT_STATS: {
			char *end;
			double sec;

			errno = 0;
			sec = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(sec >= 0.001 && sec <= 86400))
				return bad_value(m, longs, c, optarg, NULL);
			m->stats_every_ns = (unsigned long long)(sec * 1e9);
			break;
		}
		case OPT_NO_SHIM: no_shim = 1; break;
		case OPT_NO_WAKE_RULES: no_wake_rules = 1; break;
		case OPT_PARTIAL: partial = 1; break;
		case OPT_WAKE_ALL: m->sched_opts.flags |= COS_SCHED_F_WAKE_ALL; break;
		case OPT_STATS_SOCKET:
			if (!optarg[0] || strlen(optarg) >= 108)	/* sun_path */
				return bad_value(m, longs, c, optarg, NULL);
			stats_socket = optarg;
			break;
		case OPT_NO_STATS_SOCKET: stats_socket = ""; break;
		case OPT_EVENTS: events = 1; break;
		case OPT_REPLAY: replay_path = optarg; break;
		case OPT_SPIN:
			if (lord_number(optarg, 0, 1000000, &v))
				return bad_value(m, longs, c, optarg, NULL);
			m->sched_opts.spin_ns = v * 1000;
			if (!v)
				m->sched_opts.flags |= COS_SCHED_F_NO_SPIN;
			break;
		case OPT_SUBMIT:
			if (!strcmp(optarg, "ioctl"))
				m->sched_opts.lord.submit = COS_SUBMIT_IOCTL;
			else if (!strcmp(optarg, "uring"))
				m->sched_opts.lord.submit = COS_SUBMIT_URING;
			else
				return bad_value(m, longs, c, optarg, NULL);
			break;
		case 'h': usage(stdout, m); return 0;
		case 'V': cos_print_version(stdout, m->prog); return 0;
		case ':':
			fprintf(stderr, "%s: %s needs a value\nTry '%s --help' for more.\n", m->prog,
				argv[optind - 1], m->prog);
			return 2;
		case '?':
			if (optopt)
				fprintf(stderr, "%s: unknown option -%c\n", m->prog, optopt);
			else
				fprintf(stderr, "%s: unknown option '%s'\n", m->prog, argv[optind - 1]);
			fprintf(stderr, "Try '%s --help' for more.\n", m->prog);
			return 2;
		default:
			if (!m->parse || m->parse(c, optarg))
				return bad_value(m, longs, c, optarg, m->own_usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected '%s' (a policy takes options only)\n"
			"Try '%s --help' for more.\n", m->prog, argv[optind], m->prog);
		return 2;
	}
	options_line(argc, argv, args, sizeof(args));
	if (replay_path) {
		const struct cos_trace_header *h;

		err = cos_replay_open(&replay, replay_path);
		if (err) {
			fprintf(stderr, "%s: %s\n", m->prog, cos_strerror(err));
			return 2;
		}
		h = cos_replay_header(replay);
		/* the recording's enclave and lord CPU, whatever --cpus says */
		CPU_ZERO(&enclave);
		for (unsigned int i = 0; i < h->nr_cpus && i < LORD_MAX_CPUS; i++)
			if (h->enclave_cpus[i / 64] & (1ull << (i % 64)))
				CPU_SET(i, &enclave);
		m->lord_cpu = h->lord_cpu;
		cpus = NULL;
	} else if (cpus) {
		if (cos_parse_cpus(cpus, &enclave, sizeof(enclave))) {
			fprintf(stderr, "%s: bad CPU list '%s' (CPUs and ranges such as 1-3,5)\n",
				m->prog, cpus);
			return 2;
		}
	} else if (cos_shim_partial() == 1 && !cos_partition_cpus(&enclave, sizeof(enclave))) {
		CPU_CLR(m->lord_cpu, &enclave);	/* partial mode: the partition; a lord CPU in it is refused */
	} else {
		long nr = sysconf(_SC_NPROCESSORS_ONLN);

		CPU_ZERO(&enclave);
		for (long i = 0; i < nr && i < LORD_MAX_CPUS; i++)
			if (i != m->lord_cpu)
				CPU_SET(i, &enclave);
	}
	if (partial && no_shim) {
		fprintf(stderr, "%s: --partial attaches the shim; --no-shim forbids it\n", m->prog);
		return 2;
	}
	if (CPU_ISSET(m->lord_cpu, &enclave)) {
		fprintf(stderr, "%s: the lord's CPU %d cannot be in the enclave\n", m->prog, m->lord_cpu);
		return 2;
	}
	for (int i = 0; i < LORD_MAX_CPUS; i++)
		if (CPU_ISSET(i, &enclave)) {
			m->cpus[m->nr_cpus++] = i;
			m->in_enclave[i] = 1;
		}
	m->sched_opts.lord.lord_cpu = m->lord_cpu;
	m->sched_opts.lord.enclave = &enclave;
	m->sched_opts.lord.enclave_size = sizeof(enclave);
	m->sched_opts.flags |= COS_SCHED_F_SIGNALS;
	if (!policy->tick)
		policy->tick = stats_tick;
	if (replay)		/* the policy's set-up reads the recording's clock, not this machine's */
		cos_replay_clock(replay, true);
	err = m->ready ? m->ready(m) : 0;
	if (replay)
		cos_replay_clock(replay, false);
	if (err) {
		usage(stderr, m);
		cos_replay_close(replay);
		return 2;
	}
	/* after ready(): that is where a policy sets its tick */
	m->sched_opts.tick_ns = m->tick_ns ? m->tick_ns : 100000000ull;
	if (replay)
		return replay_main(policy, m, replay, replay_path, events);

	cos_sys_status(&sys);
	if (partial && sys.shim_attached && cos_shim_partial() != 1) {
		fprintf(stderr, "%s: --partial: the shim is attached already, in full mode\n", m->prog);
		return 1;
	}
	if (!no_shim && !sys.shim_attached) {
		struct cos_shim_opts so = { .size = sizeof(so) };

		if (partial) {
			so.flags = COS_SHIM_F_PARTIAL;
			so.partition = &enclave;
			so.partition_size = sizeof(enclave);
		}
		err = cos_shim_attach(&shim, &so);
		if (err) {
			fprintf(stderr, "%s: cannot attach the cos shim: %s\n", m->prog, cos_strerror(err));
			return 1;
		}
	}
	err = cos_sched_create(&s, policy, &m->sched_opts);
	if (err) {
		fprintf(stderr, "%s: %s\n", m->prog, cos_strerror(err));
		cos_shim_detach(shim);
		return 1;
	}
	if (no_wake_rules)
		m->wake_rules = 0;
	err = m->wake_rules ? cos_sched_set_wake_rules(s, m->wake_rules, m->wake_slice_ns) : 0;
	/* an older cos.ko: the newest rule first, then the older ones; the rest still helps */
	for (int i = 0; err == -EOPNOTSUPP && i < 4; i++) {
		static const unsigned int newest_first[] = {
			COS_WAKE_NEXT, COS_WAKE_PREEMPT, COS_WAKE_HANDOFF_BLOCK, COS_WAKE_HANDOFF,
		};
		unsigned int drop = newest_first[i];

		if (!(m->wake_rules & drop))
			continue;
		fprintf(stderr, "%s: %s; going on without it\n", m->prog, cos_strerror(err));
		m->wake_rules &= ~drop;
		err = m->wake_rules ? cos_sched_set_wake_rules(s, m->wake_rules, m->wake_slice_ns) : 0;
	}
	if (m->wake_rules && err) {
		fprintf(stderr, "%s: %s; going on without them\n", m->prog, cos_strerror(err));
		m->wake_rules = 0;
	}
	/* before the start-up line, which says the lord is ready */
	m->enclave = enclave;
	snprintf(m->name, sizeof(m->name), "%s",
		 cos_lord_name(cos_sched_lord(s))[0] ? cos_lord_name(cos_sched_lord(s)) : m->prog);
	if (!stats_socket)
		snprintf(socket_path, sizeof(socket_path), LORD_STATS_DIR "/%s.stats", m->name);
	else
		snprintf(socket_path, sizeof(socket_path), "%s", stats_socket);
	if (socket_path[0]) {
		cpu_set_t helpers;

		cos_sched_helper_cpus(s, &helpers);
		err = lord_stats_serve(&m->server, socket_path, &helpers);
		if (err)	/* the lord works without: said, not fatal */
			fprintf(stderr, "%s: cannot serve statistics on %s: %s; going on without\n",
				m->prog, socket_path, strerror(-err));
		trace_socket_path(socket_path, sizeof(socket_path));
		err = lord_trace_serve(&tracer, socket_path, s, args, &helpers);
		if (err)
			fprintf(stderr, "%s: cannot serve decision records on %s: %s; going on "
				"without\n", m->prog, socket_path, strerror(-err));
	}
	fprintf(stderr, "%s: lord on CPU %d, %d enclave CPUs, shoots by %s, wake rules %s%s",
		m->prog, m->lord_cpu, m->nr_cpus,
		cos_lord_submit(cos_sched_lord(s)) == COS_SUBMIT_URING ? "io_uring" : "ioctl",
		!(m->wake_rules & ~(HANDOFFS | COS_WAKE_PREEMPT | COS_WAKE_NEXT)) ? "off" :
		m->wake_rules & COS_WAKE_IDLE ? "idle" : "prev",
		(m->wake_rules & HANDOFFS) == HANDOFFS ? " and handoff at a yield or a block" :
		m->wake_rules & COS_WAKE_HANDOFF ? " and handoff at a yield" :
		m->wake_rules & COS_WAKE_HANDOFF_BLOCK ? " and handoff at a block" : "");
	if (m->wake_rules & COS_WAKE_PREEMPT)
		fputs(m->wake_rules & COS_WAKE_NEXT ? ", urgent tasks preempt or go next" :
		      ", urgent tasks preempt", stderr);
	if (cos_lord_name(cos_sched_lord(s))[0])
		fprintf(stderr, ", enclave '%s'", cos_lord_name(cos_sched_lord(s)));
	fprintf(stderr, ", tick %llu us", m->sched_opts.tick_ns / 1000);
	if (m->banner)
		m->banner(stderr);
	fputc('\n', stderr);
	t0 = cos_now_ns();
	cpu0 = cpu_seconds();
	m->started_at = t0;
	m->cpu0 = cpu0;
	/* under systemd (cos-lord@.service, Type=notify): started once the enclave is registered */
	sd_notifyf(0, "READY=1\nSTATUS=lord on CPU %d, %d enclave CPUs", m->lord_cpu, m->nr_cpus);
	err = cos_sched_run(s);
	sd_notify(0, "STOPPING=1");
	lord_stats_stop(m->server);
	m->server = NULL;
	lord_trace_stop(tracer);
	print_stats(s, m);
	if (events)
		print_events(s, m);
	if (cpu0 >= 0) {	/* what the loop cost the lord's CPU (not the setup before it) */
		double cpu = cpu_seconds() - cpu0, wall = (cos_now_ns() - t0) / 1e9;

		fprintf(stderr, "%s: lord CPU time %.2f s in %.2f s (%.0f %%)\n", m->prog, cpu, wall,
			wall > 0 ? 100 * cpu / wall : 0);
	}
	cos_sched_destroy(s);		/* the tasks go to the fair policy */
	cos_shim_detach(shim);
	if (err) {
		fprintf(stderr, "%s: %s\n", m->prog, cos_strerror(err));
		return 1;
	}
	return 0;
}
