/*
 * wake.c — on CPU 1, N busy threads (argv[2], 3 by default) and a sleeper that wakes every
 * 10 ms, 300 times; with argv[1] = 1, a busy thread alone on CPU 0 as well.  Prints per
 * wake-up of the sleeper how many turns of the busy threads began on CPU 1 between its
 * deadline and its running, and its mean and longest wait for the CPU (us).  A busy thread
 * counts a turn where its clock jumped by over 50 us (it was off the CPU).
 * Build: gcc -O2 -pthread -o wake wake.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define RING 65536
static atomic_int stop;
static atomic_ullong nr_turns;
static unsigned long long turn_at[RING];

static unsigned long long now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void *busy(void *arg)
{
	int cpu = (long)arg;
	unsigned long long last, t;

	pin(cpu);
	last = now();
	while (!stop) {
		t = now();
		if (cpu == 1 && t - last > 50000)
			turn_at[atomic_fetch_add(&nr_turns, 1) % RING] = t;
		last = t;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int lone = argc > 1 && atoi(argv[1]), n = argc > 2 ? atoi(argv[2]) : 3, wakes = 300;
	unsigned long long turns = 0, sum = 0, max = 0, dl, t, w, hi, i;
	pthread_t th[33];
	struct timespec d;

	if (n < 1 || n > 32)
		return 2;
	for (long k = 0; k < n; k++)
		pthread_create(&th[k], NULL, busy, (void *)1);
	if (lone)
		pthread_create(&th[n], NULL, busy, (void *)0);
	pin(1);
	usleep(200000);
	clock_gettime(CLOCK_MONOTONIC, &d);
	for (int k = 0; k < wakes; k++) {
		d.tv_nsec += 10000000;
		if (d.tv_nsec >= 1000000000) {
			d.tv_sec++;
			d.tv_nsec -= 1000000000;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &d, NULL);
		t = now();
		dl = d.tv_sec * 1000000000ULL + d.tv_nsec;
		w = t - dl;
		sum += w;
		max = w > max ? w : max;
		hi = atomic_load(&nr_turns);
		for (i = hi; i-- > 0 && hi - i < RING;) {
			if (turn_at[i % RING] <= dl)
				break;
			turns += turn_at[i % RING] < t;
		}
	}
	stop = 1;
	for (int k = 0; k < n + lone; k++)
		pthread_join(th[k], NULL);
	printf("busy=%d lone_cpu0=%d turns_before_run=%.2f mean_wait_us=%.0f max_wait_us=%.0f\n",
	       n, lone, (double)turns / wakes, sum / wakes / 1e3, max / 1e3);
	return 0;
}
