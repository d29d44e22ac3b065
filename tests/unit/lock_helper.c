// SPDX-License-Identifier: GPL-2.0
/*
 * lock_helper.c — run by test_hint.cpp with LD_PRELOAD=libcos-lock.so: plain pthread mutexes,
 * no libcos call (with the argument "clock" the waiter takes the mutex with
 * pthread_mutex_clocklock()).  Prints "<main tid> <waiter tid> <mutex address>" once the main thread holds
 * the mutex and the waiter is about to block on it; a line on stdin lets the main thread unlock;
 * then prints "done" once the waiter holds it, and exits at end of input.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile int waiter_tid;
static int clocked;

static void *waiter(void *arg)
{
	(void)arg;
	waiter_tid = gettid();
	if (clocked) {
		struct timespec far;

		clock_gettime(CLOCK_MONOTONIC, &far);
		far.tv_sec += 3600;
		pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &far);	/* blocks: main holds it */
	} else {
		pthread_mutex_lock(&m);		/* blocks: main holds it */
	}
	printf("done\n");
	fflush(stdout);
	getchar();			/* hold it until the test has looked */
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char line[16];

	clocked = argc > 1 && !strcmp(argv[1], "clock");
	setvbuf(stdout, NULL, _IONBF, 0);
	pthread_mutex_lock(&m);
	pthread_create(&t, NULL, waiter, NULL);
	while (!waiter_tid)
		usleep(1000);
	printf("%d %d %llu\n", gettid(), waiter_tid, (unsigned long long)(uintptr_t)&m);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	return 0;
}
