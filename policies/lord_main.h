/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lord_main.h — what every policy program shares: the common options (--cpus, --lord-cpu,
 * --stall-ms, --starve-ms, --stats, --no-shim, --no-wake-rules, --help, --version), the shim,
 * the wake rules the policy asks for, and the lord's life (create, run until Ctrl-C or SIGTERM,
 * statistics on stderr and on a socket, sd_notify, give the CPUs back).  A policy program fills struct lord_main and calls lord_main() from main().
 * See docs/writing-a-policy.md.
 */
#ifndef POLICIES_LORD_MAIN_H
#define POLICIES_LORD_MAIN_H

#include <getopt.h>
#include <sched.h>
#include <stdio.h>

#include <cos.h>

#include "lord_stats.h"

#define LORD_MAX_CPUS 1024

struct lord_main {
	/* filled by the policy program */
	const char *prog;			/* "cos-fifo" */
	const char *about;			/* the usage text's first lines: what the policy does */
	const char *own_usage;			/* lines for its own options ("" if none) */
	const char *own_short;			/* its own short options (getopt syntax) */
	const struct option *own_long;		/* its own long options, NULL-terminated */
	int (*parse)(int opt, const char *arg);	/* one of its options; non-zero: bad */
	int (*ready)(struct lord_main *m);	/* after parsing (enclave known); non-zero: bad usage */
	/* its counters: the statistics line's part after the framework's, and the socket's */
	void (*stats)(struct cos_sched *s, struct lord_stats *st);
	void (*banner)(FILE *f);		/* its part of the start-up line */
	unsigned long long tick_ns;		/* the framework's tick (0: 100 ms, for statistics) */
	unsigned int wake_rules;		/* COS_WAKE_* the policy agrees with (ready() may set) */
	unsigned long long wake_slice_ns;	/* their slice (0: no limit) */

	/* filled by lord_main() before ready() */
	int lord_cpu;
	int cpus[LORD_MAX_CPUS], nr_cpus;	/* the enclave */
	char in_enclave[LORD_MAX_CPUS];
	struct cos_sched_opts sched_opts;	/* ready() may adjust it */
	unsigned long long stats_every_ns, last_stats;

	/* lord_main()'s own */
	cpu_set_t enclave;
	char name[COS_ENCLAVE_NAME_LEN + 8];	/* the enclave's, or the program's */
	struct lord_stats_server *server;	/* NULL: no statistics socket */
	unsigned long long started_at;		/* when the lord's loop began */
	double cpu0;				/* its process's CPU seconds then */
};

/*
 * When @cpu's turn began, for a policy that gives CPUs turns (*@turn_at, one per CPU, is the
 * policy's): the start of its task @cur, unless the kernel handed it that CPU (its waker
 * yielded or blocked: COS_PLACED_BY_HANDOFF), which continues the turn of the task before it.
 * Counted per task, a chain of handoffs would renew the turn at each link and starve the tasks
 * queued for the lord.  A policy's own placement starts a turn: it sets *@turn_at itself.
 */
unsigned long long lord_turn(unsigned long long *turn_at, const struct cos_task *cur);

/*
 * A policy option's number: decimal @arg in @min..@max into *@out; -1 if it is not one (the
 * policy's parse() returns non-zero, and lord_main() names the option and quotes its usage).
 */
int lord_number(const char *arg, unsigned long long min, unsigned long long max,
		unsigned long long *out);

/* Parse the options, attach the shim if needed, run the lord; returns main()'s exit status. */
int lord_main(int argc, char **argv, struct cos_policy *policy, struct lord_main *m);

#endif /* POLICIES_LORD_MAIN_H */
