// SPDX-License-Identifier: GPL-2.0
/*
 * cos-fifo.c — the FIFO lord (COS's fifo lord): runnable COS tasks run in arrival order on the
 * enclave's CPUs, each until it blocks, yields or is preempted (run to block), or for --slice-us.
 * One global queue by default; --per-cpu keeps a queue per CPU (a task returns to the CPU it
 * last ran on, idle CPUs steal from the longest queue).
 *
 * Put workloads under it with `cosctl run -- CMD` (their threads become SCHED_EXT tasks).
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

struct fifo {
	struct cos_taskq global;
	struct cos_taskq percpu[MAX_CPUS];
	int cpus[MAX_CPUS], nr_cpus;
	char in_enclave[MAX_CPUS];
	int per_cpu;
	unsigned long long slice_ns;
	unsigned long long stats_every_ns, last_stats;
	unsigned long long runnable, blocked, preempted;
};

static struct cos_taskq *queue_for(struct fifo *f, struct cos_task *t)
{
	if (!f->per_cpu)
		return &f->global;
	/* its last CPU's queue; one outside the enclave (it ran under the fair policy) -> the first */
	return t->cpu >= 0 && t->cpu < MAX_CPUS && f->in_enclave[t->cpu] ? &f->percpu[t->cpu] :
									    &f->percpu[f->cpus[0]];
}

static void fifo_runnable(struct cos_sched *s, struct cos_task *t)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->runnable++;
	cos_taskq_push(queue_for(f, t), t);
}

static void fifo_preempted(struct cos_sched *s, struct cos_task *t, unsigned int why)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->preempted++;
	/* preempted by a kthread or another class: it did not use up its turn, keep it first */
	if (why == COS_PREEMPT_BY_OTHER)
		cos_taskq_push_head(queue_for(f, t), t);
	else
		cos_taskq_push(queue_for(f, t), t);
}

static void fifo_blocked(struct cos_sched *s, struct cos_task *t)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	f->blocked++;
}

/* The first task of @q that may run on @cpu. */
static struct cos_task *first_for(struct cos_sched *s, struct cos_taskq *q, int cpu)
{
	for (struct cos_task *t = q->head; t; t = t->q_next)
		if (cos_sched_task_may_run(s, t, cpu))
			return t;
	return NULL;
}

static void fifo_schedule(struct cos_sched *s)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	for (int i = 0; i < f->nr_cpus; i++) {
		int cpu = f->cpus[i];
		struct cos_task *t;

		if (cos_sched_cpu_task(s, cpu))
			continue;
		if (!f->per_cpu) {
			t = first_for(s, &f->global, cpu);
		} else {
			t = first_for(s, &f->percpu[cpu], cpu);
			for (int j = 0; !t && j < f->nr_cpus; j++) {	/* steal */
				struct cos_taskq *q = &f->percpu[f->cpus[j]];

				if (q->len > 0)
					t = first_for(s, q, cpu);
			}
		}
		if (t && cos_sched_place(s, t, cpu, f->slice_ns) == 0)
			continue;
	}
}

static void print_stats(struct cos_sched *s, struct fifo *f)
{
	struct cos_sched_stats st;
	const struct cos_ctl *ctl = cos_sched_lord(s) ? cos_lord_ctl(cos_sched_lord(s)) : NULL;

	cos_sched_get_stats(s, &st);
	fprintf(stderr,
		"cos-fifo: tasks %llu | messages %llu placed %llu failed %llu resyncs %llu stalls %llu | "
		"runnable %llu blocked %llu preempted %llu | queued %u | kernel dropped %llu\n",
		st.tasks, st.messages, st.placed, st.failed, st.resyncs, st.stalls, f->runnable,
		f->blocked, f->preempted,
		f->per_cpu ? 0 : f->global.len, ctl ? (unsigned long long)ctl->dropped : 0ULL);
}

static void fifo_tick(struct cos_sched *s, unsigned long long now)
{
	struct fifo *f = cos_sched_policy_ctx(s);

	if (cos_sched_stats_requested(s) ||
	    (f->stats_every_ns && now - f->last_stats >= f->stats_every_ns)) {
		f->last_stats = now;
		print_stats(s, f);
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
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return CPU_COUNT(set) ? 0 : -1;
}

static const char usage[] =
	"usage: cos-fifo [options]\n"
	"The FIFO lord: COS tasks (SCHED_EXT; start them with `cosctl run -- CMD`) run in arrival\n"
	"order on the enclave's CPUs until they block.  Ctrl-C gives the CPUs back.\n"
	"\n"
	"  -c, --cpus LIST      enclave CPUs, e.g. 1-3 (default: every online CPU but the lord's)\n"
	"  -l, --lord-cpu N     the CPU the lord runs on (default 0)\n"
	"  -p, --per-cpu        a queue per CPU (tasks return to their last CPU; idle CPUs steal)\n"
	"  -s, --slice-us N     preempt a task after N us of CPU (default 0: run to block)\n"
	"      --stall-ms N     the kernel's stall timeout (default: the module's, 20 ms)\n"
	"      --starve-ms N    longest a runnable task may wait (default: the module's, 1000 ms)\n"
	"      --stats N        print statistics every N seconds (also on SIGUSR1)\n"
	"      --no-shim        do not attach the cos shim (it must be attached already)\n"
	"  -h, --help           this text\n"
	"\n"
	"Needs root (CAP_SYS_NICE, CAP_BPF/CAP_SYS_ADMIN to attach the shim) and cos.ko.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "lord-cpu", required_argument, NULL, 'l' },
		{ "per-cpu", no_argument, NULL, 'p' },
		{ "slice-us", required_argument, NULL, 's' },
		{ "stall-ms", required_argument, NULL, 'S' },
		{ "starve-ms", required_argument, NULL, 'R' },
		{ "stats", required_argument, NULL, 'T' },
		{ "no-shim", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct fifo f;
	struct cos_policy policy = {
		.size = sizeof(policy),
		.name = "fifo",
		.task_runnable = fifo_runnable,
		.task_preempted = fifo_preempted,
		.task_yield = fifo_runnable,
		.task_blocked = fifo_blocked,
		.tick = fifo_tick,
		.schedule = fifo_schedule,
		.ctx = &f,
	};
	struct cos_sched_opts so = { .size = sizeof(so) };
	struct cos_shim *shim = NULL;
	struct cos_sys_status sys;
	struct cos_sched *s;
	cpu_set_t enclave;
	const char *cpus = NULL;
	int c, err, lord_cpu = 0, no_shim = 0;

	while ((c = getopt_long(argc, argv, "c:l:ps:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cpus = optarg; break;
		case 'l': lord_cpu = atoi(optarg); break;
		case 'p': f.per_cpu = 1; break;
		case 's': f.slice_ns = strtoull(optarg, NULL, 10) * 1000; break;
		case 'S': so.lord.stall_ms = atoi(optarg); break;
		case 'R': so.lord.starve_ms = atoi(optarg); break;
		case 'T': f.stats_every_ns = strtoull(optarg, NULL, 10) * 1000000000ull; break;
		case 'N': no_shim = 1; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (cpus) {
		if (parse_cpus(cpus, &enclave)) {
			fprintf(stderr, "cos-fifo: bad CPU list '%s'\n", cpus);
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
		fprintf(stderr, "cos-fifo: the lord's CPU %d cannot be in the enclave\n", lord_cpu);
		return 2;
	}
	for (int i = 0; i < MAX_CPUS; i++)
		if (CPU_ISSET(i, &enclave)) {
			f.cpus[f.nr_cpus++] = i;
			f.in_enclave[i] = 1;
		}

	cos_sys_status(&sys);
	if (!no_shim && !sys.shim_attached) {
		err = cos_shim_attach(&shim, NULL);
		if (err) {
			fprintf(stderr, "cos-fifo: cannot attach the cos shim: %s\n", cos_strerror(err));
			return 1;
		}
	}
	so.lord.lord_cpu = lord_cpu;
	so.lord.enclave = &enclave;
	so.lord.enclave_size = sizeof(enclave);
	so.tick_ns = 100000000;		/* 100 ms: stats */
	so.flags = COS_SCHED_F_SIGNALS;
	err = cos_sched_create(&s, &policy, &so);
	if (err) {
		fprintf(stderr, "cos-fifo: %s\n", cos_strerror(err));
		cos_shim_detach(shim);
		return 1;
	}
	fprintf(stderr, "cos-fifo: lord on CPU %d, %d enclave CPUs, %s queue, %s\n", lord_cpu,
		f.nr_cpus, f.per_cpu ? "per-CPU" : "global",
		f.slice_ns ? "sliced" : "run to block");
	err = cos_sched_run(s);
	print_stats(s, &f);
	cos_sched_destroy(s);		/* the tasks go to the fair policy */
	cos_shim_detach(shim);
	if (err) {
		fprintf(stderr, "cos-fifo: %s\n", cos_strerror(err));
		return 1;
	}
	return 0;
}
