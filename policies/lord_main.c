// SPDX-License-Identifier: GPL-2.0
/*
 * lord_main.c — the life of a policy program (see lord_main.h): options common to every
 * policy, the shim, the lord's loop, statistics on SIGUSR1 or every --stats seconds, and a
 * clean exit that gives the CPUs back.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lord_main.h"

#define HANDOFFS	(COS_WAKE_HANDOFF | COS_WAKE_HANDOFF_BLOCK)

static struct lord_main *the_main;

static void print_stats(struct cos_sched *s, struct lord_main *m)
{
	struct cos_sched_stats st;

	cos_sched_get_stats(s, &st);
	fprintf(stderr, "%s: tasks %llu | messages %llu placed %llu failed %llu (", m->prog, st.tasks,
		st.messages, st.placed, st.failed);
	for (int status = COS_SHOOT_OK + 1; status <= COS_SHOOT_OTHER_ENCLAVE; status++)
		if (cos_sched_shoot_failures(s, status))
			fprintf(stderr, "%s %llu, ", cos_shoot_status_name(status),
				cos_sched_shoot_failures(s, status));
	fprintf(stderr, "%llu not started) stale %llu resyncs %llu stalls %llu wake-placed %llu "
		"(handoffs %llu, preempts %llu) nexts %llu waits %llu",
		cos_sched_shoot_failures(s, COS_SCHED_NOT_STARTED),
		cos_sched_shoot_failures(s, COS_SCHED_STALE), st.resyncs, st.stalls,
		cos_sched_wake_placed(s), cos_sched_wake_handoffs(s), cos_sched_wake_preempts(s),
		cos_sched_wake_nexts(s), st.waits);
	if (m->stats) {
		fputs(" | ", stderr);
		m->stats(s, stderr);
	}
	fputc('\n', stderr);
}

/* The policy's tick when it has none: statistics. */
static void stats_tick(struct cos_sched *s, unsigned long long now)
{
	struct lord_main *m = the_main;

	if (cos_sched_stats_requested(s) ||
	    (m->stats_every_ns && now - m->last_stats >= m->stats_every_ns)) {
		m->last_stats = now;
		print_stats(s, m);
	}
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

static void usage(FILE *f, const struct lord_main *m)
{
	fprintf(f,
		"usage: %s [options]\n%s\n"
		"  -c, --cpus LIST      enclave CPUs, e.g. 1-3 (default: every online CPU but the lord's)\n"
		"  -l, --lord-cpu N     the CPU the lord runs on (default 0)\n"
		"  -n, --name NAME      the enclave's name, as `cosctl status` and the OCI hook's\n"
		"                       io.cos.policy know it (default: the program's, %s)\n"
		"%s"
		"      --stall-ms N     the kernel's stall timeout (default: the module's, 20 ms)\n"
		"      --starve-ms N    longest a runnable task may wait (default: the module's, 1000 ms)\n"
		"      --stats N        print statistics every N seconds (also on SIGUSR1)\n"
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
		"\n"
		"Put work under it with `cosctl run -- CMD`.  Ctrl-C gives the CPUs back.  Needs root\n"
		"(CAP_SYS_NICE; CAP_BPF and CAP_SYS_ADMIN to attach the shim) and cos.ko.\n",
		m->prog, m->about, m->prog, m->own_usage);
}

unsigned long long lord_turn(unsigned long long *turn_at, const struct cos_task *cur)
{
	if (cur->placed_by != COS_PLACED_BY_HANDOFF || !*turn_at || *turn_at > cur->placed_at)
		*turn_at = cur->placed_at;
	return *turn_at;
}

enum { OPT_STALL = 1000, OPT_STARVE, OPT_STATS, OPT_NO_SHIM, OPT_SUBMIT, OPT_NO_WAKE_RULES,
	OPT_SPIN, OPT_PARTIAL, OPT_WAKE_ALL };

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
		{ "help", no_argument, NULL, 'h' },
	};
	struct option longs[64];
	char shorts[64];
	struct cos_shim *shim = NULL;
	struct cos_sys_status sys;
	struct cos_sched *s;
	cpu_set_t enclave;
	const char *cpus = NULL;
	int n = 0, c, err, no_shim = 0, no_wake_rules = 0, partial = 0;
	unsigned long long t0;
	double cpu0;

	the_main = m;
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		longs[n++] = common[i];
	for (const struct option *o = m->own_long; o && o->name && n < 63; o++)
		longs[n++] = *o;
	memset(&longs[n], 0, sizeof(longs[n]));
	snprintf(shorts, sizeof(shorts), "c:l:n:h%s", m->own_short ? m->own_short : "");
	m->sched_opts.size = sizeof(m->sched_opts);
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		switch (c) {
		case 'c': cpus = optarg; break;
		case 'l': m->lord_cpu = atoi(optarg); break;
		case 'n': m->sched_opts.lord.name = optarg; break;
		case OPT_STALL: m->sched_opts.lord.stall_ms = atoi(optarg); break;
		case OPT_STARVE: m->sched_opts.lord.starve_ms = atoi(optarg); break;
		case OPT_STATS: m->stats_every_ns = strtoull(optarg, NULL, 10) * 1000000000ull; break;
		case OPT_NO_SHIM: no_shim = 1; break;
		case OPT_NO_WAKE_RULES: no_wake_rules = 1; break;
		case OPT_PARTIAL: partial = 1; break;
		case OPT_WAKE_ALL: m->sched_opts.flags |= COS_SCHED_F_WAKE_ALL; break;
		case OPT_SPIN: {
			char *end;
			unsigned long us = strtoul(optarg, &end, 10);

			if (*end || end == optarg || optarg[0] == '-' || us > 1000000) {
				fprintf(stderr, "%s: --spin-us takes 0 to 1000000\n", m->prog);
				return 2;
			}
			m->sched_opts.spin_ns = us * 1000;
			if (!us)
				m->sched_opts.flags |= COS_SCHED_F_NO_SPIN;
			break;
		}
		case OPT_SUBMIT:
			if (!strcmp(optarg, "ioctl")) {
				m->sched_opts.lord.submit = COS_SUBMIT_IOCTL;
			} else if (!strcmp(optarg, "uring")) {
				m->sched_opts.lord.submit = COS_SUBMIT_URING;
			} else {
				fprintf(stderr, "%s: --submit takes ioctl or uring\n", m->prog);
				return 2;
			}
			break;
		case 'h': usage(stdout, m); return 0;
		default:
			if (c == '?' || !m->parse || m->parse(c, optarg)) {
				usage(stderr, m);
				return 2;
			}
		}
	}
	if (optind < argc) {
		usage(stderr, m);
		return 2;
	}
	if (cpus) {
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
	if (m->ready && m->ready(m)) {
		usage(stderr, m);
		return 2;
	}
	/* after ready(): that is where a policy sets its tick */
	m->sched_opts.tick_ns = m->tick_ns ? m->tick_ns : 100000000ull;

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
	err = cos_sched_run(s);
	print_stats(s, m);
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
