// SPDX-License-Identifier: GPL-2.0
/*
 * cos-shinjuku.c — the Shinjuku lord (ghOSt's Shinjuku policy, COS's shinjuku lord): one
 * centralized preemptive FIFO over the enclave.  A task runs until it blocks; once it has held a
 * CPU longer than the slice while others wait, the lord preempts it by shooting the next waiting
 * task to its CPU, and it goes to the back of the queue.  Short requests thus never wait behind
 * long ones for more than a slice (Shinjuku, NSDI '19).
 *
 * Preemption is the lord's decision, not a kernel slice: a task that exceeded the slice keeps
 * its CPU while nobody waits.  The tick (a quarter slice) finds the tasks over their slice.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cos.h>

#define MAX_CPUS 1024

struct shinjuku {
	struct cos_taskq runq;
	int cpus[MAX_CPUS], nr_cpus;
	unsigned long long slice_ns;
	unsigned long long stats_every_ns, last_stats;
	unsigned long long preemptions, runnable;
};

static void sj_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	j->runnable++;
	cos_taskq_push(&j->runq, t);
}

static void sj_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	/* over its slice: to the back; interrupted by the kernel (kthread, RT): keep its place */
	if (why == COS_PREEMPT_BY_OTHER)
		cos_taskq_push_head(&j->runq, t);
	else
		cos_taskq_push(&j->runq, t);
}

static struct cos_task *first_for(struct cos_sched *s, struct shinjuku *j, int cpu)
{
	for (struct cos_task *t = j->runq.head; t; t = t->q_next)
		if (cos_sched_task_may_run(s, t, cpu))
			return t;
	return NULL;
}

/* Idle CPUs first; then, while tasks still wait, CPUs whose task is over its slice. */
static void sj_schedule(struct cos_sched *s)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);
	unsigned long long now = 0;

	for (int i = 0; i < j->nr_cpus && j->runq.head; i++) {
		int cpu = j->cpus[i];
		struct cos_task *t;

		if (cos_sched_cpu_task(s, cpu))
			continue;
		t = first_for(s, j, cpu);
		if (t)
			cos_sched_place(s, t, cpu, 0);
	}
	for (int i = 0; i < j->nr_cpus && j->runq.head; i++) {
		int cpu = j->cpus[i];
		struct cos_task *cur = cos_sched_cpu_task(s, cpu), *t;

		if (!cur)
			continue;
		if (!now)
			now = cos_now_ns();
		if (now - cur->placed_at < j->slice_ns)
			continue;
		t = first_for(s, j, cpu);
		if (t && cos_sched_place(s, t, cpu, 0) == 0)
			j->preemptions++;
	}
}

static void print_stats(struct cos_sched *s, struct shinjuku *j)
{
	struct cos_sched_stats st;

	cos_sched_get_stats(s, &st);
	fprintf(stderr,
		"cos-shinjuku: tasks %llu | messages %llu placed %llu failed %llu resyncs %llu "
		"stalls %llu | runnable %llu preemptions %llu | queued %u\n",
		st.tasks, st.messages, st.placed, st.failed, st.resyncs, st.stalls, j->runnable,
		j->preemptions, j->runq.len);
}

static void sj_tick(struct cos_sched *s, unsigned long long now)
{
	struct shinjuku *j = cos_sched_policy_ctx(s);

	if (cos_sched_stats_requested(s) ||
	    (j->stats_every_ns && now - j->last_stats >= j->stats_every_ns)) {
		j->last_stats = now;
		print_stats(s, j);
	}
}

static int parse_cpus(const char *list, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (const char *p = list; *p;) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return -1;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p)
				return -1;
		}
		if (a < 0 || b < a || b >= MAX_CPUS)
			return -1;
		for (long c = a; c <= b; c++)
			CPU_SET(c, set);
		if (*end && *end != ',')
			return -1;
		p = *end == ',' ? end + 1 : end;
	}
	return CPU_COUNT(set) ? 0 : -1;
}

static const char usage[] =
	"usage: cos-shinjuku [options]\n"
	"The Shinjuku lord: one preemptive FIFO; a COS task (start them with `cosctl run -- CMD`)\n"
	"that held its CPU longer than the slice yields it to the next waiting task.  Ctrl-C gives\n"
	"the CPUs back.\n"
	"\n"
	"  -c, --cpus LIST      enclave CPUs, e.g. 1-3 (default: every online CPU but the lord's)\n"
	"  -l, --lord-cpu N     the CPU the lord runs on (default 0)\n"
	"  -s, --slice-us N     preemption slice in us (default 30 x COS_TIME_SCALE, see below)\n"
	"      --stall-ms N     the kernel's stall timeout (default: the module's, 20 ms)\n"
	"      --starve-ms N    longest a runnable task may wait (default: the module's, 1000 ms)\n"
	"      --stats N        print statistics every N seconds (also on SIGUSR1)\n"
	"      --no-shim        do not attach the cos shim (it must be attached already)\n"
	"  -h, --help           this text\n"
	"\n"
	"COS_TIME_SCALE (environment, default 1) scales the default slice for slow machines: an\n"
	"emulated guest runs ~20x slower than metal (the test suite uses 20).\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "lord-cpu", required_argument, NULL, 'l' },
		{ "slice-us", required_argument, NULL, 's' },
		{ "stall-ms", required_argument, NULL, 'S' },
		{ "starve-ms", required_argument, NULL, 'R' },
		{ "stats", required_argument, NULL, 'T' },
		{ "no-shim", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct shinjuku j;
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "shinjuku",
		.task_runnable = sj_runnable,
		.task_preempted = sj_preempted,
		.task_yield = sj_runnable,
		.tick = sj_tick,
		.schedule = sj_schedule,
		.ctx = &j,
	};
	struct cos_sched_opts so = { .size = sizeof(so) };
	struct cos_shim *shim = NULL;
	struct cos_sys_status sys;
	struct cos_sched *s;
	cpu_set_t enclave;
	const char *cpus = NULL, *scale = getenv("COS_TIME_SCALE");
	int c, err, lord_cpu = 0, no_shim = 0;

	j.slice_ns = 30000ull * (scale && atoi(scale) > 0 ? atoi(scale) : 1);
	while ((c = getopt_long(argc, argv, "c:l:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cpus = optarg; break;
		case 'l': lord_cpu = atoi(optarg); break;
		case 's': j.slice_ns = strtoull(optarg, NULL, 10) * 1000; break;
		case 'S': so.lord.stall_ms = atoi(optarg); break;
		case 'R': so.lord.starve_ms = atoi(optarg); break;
		case 'T': j.stats_every_ns = strtoull(optarg, NULL, 10) * 1000000000ull; break;
		case 'N': no_shim = 1; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc || !j.slice_ns) {
		fputs(usage, stderr);
		return 2;
	}
	if (cpus) {
		if (parse_cpus(cpus, &enclave)) {
			fprintf(stderr, "cos-shinjuku: bad CPU list '%s'\n", cpus);
			return 2;
		}
	} else {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		CPU_ZERO(&enclave);
		for (long i = 0; i < n && i < MAX_CPUS; i++)
			if (i != lord_cpu)
				CPU_SET(i, &enclave);
	}
	if (CPU_ISSET(lord_cpu, &enclave)) {
		fprintf(stderr, "cos-shinjuku: the lord's CPU %d cannot be in the enclave\n", lord_cpu);
		return 2;
	}
	for (int i = 0; i < MAX_CPUS; i++)
		if (CPU_ISSET(i, &enclave))
			j.cpus[j.nr_cpus++] = i;

	cos_sys_status(&sys);
	if (!no_shim && !sys.shim_attached) {
		err = cos_shim_attach(&shim, NULL);
		if (err) {
			fprintf(stderr, "cos-shinjuku: cannot attach the cos shim: %s\n", cos_strerror(err));
			return 1;
		}
	}
	so.lord.lord_cpu = lord_cpu;
	so.lord.enclave = &enclave;
	so.lord.enclave_size = sizeof(enclave);
	so.tick_ns = j.slice_ns / 4;	/* finds tasks over their slice; stats */
	so.flags = COS_SCHED_F_SIGNALS;
	err = cos_sched_create(&s, &policy, &so);
	if (err) {
		fprintf(stderr, "cos-shinjuku: %s\n", cos_strerror(err));
		cos_shim_detach(shim);
		return 1;
	}
	fprintf(stderr, "cos-shinjuku: lord on CPU %d, %d enclave CPUs, slice %llu us\n", lord_cpu,
		j.nr_cpus, j.slice_ns / 1000);
	err = cos_sched_run(s);
	print_stats(s, &j);
	cos_sched_destroy(s);
	cos_shim_detach(shim);
	if (err) {
		fprintf(stderr, "cos-shinjuku: %s\n", cos_strerror(err));
		return 1;
	}
	return 0;
}
