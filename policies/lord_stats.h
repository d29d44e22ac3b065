/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lord_stats.h — a lord's statistics as named counters (struct lord_stats): lord_main() prints
 * them on one stderr line and serves them as JSON on a UNIX socket, /run/cos/NAME.stats, which
 * `cosctl stats` and `cosctl metrics` read.  The schema is docs/operating.md's ("Live
 * statistics"); its name carries its version (LORD_STATS_SCHEMA).
 */
#ifndef POLICIES_LORD_STATS_H
#define POLICIES_LORD_STATS_H

#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include <cos.h>

#define LORD_STATS_MAX		64
#define LORD_STATS_SCHEMA	"cos-lord-stats/1"
#define LORD_STATS_DIR		COS_STATS_DIR	/* libcos/cos.h */
#define LORD_STATS_GROUP	"cos"		/* may read the sockets (mode 0660) */
#define LORD_STATS_RATE		10		/* snapshots a second the lord makes at most */

/* Counters in the order they were added; keys are static strings, "lc-runnable". */
struct lord_stats {
	unsigned int n;
	const char *key[LORD_STATS_MAX];
	unsigned long long v[LORD_STATS_MAX];
};

/* Add counter @key = @v (dropped past LORD_STATS_MAX: a policy has a few dozen at most). */
void lord_stat(struct lord_stats *st, const char *key, unsigned long long v);

/* Print @st as "key value key value ..." to @f. */
void lord_stats_print(const struct lord_stats *st, FILE *f);

struct lord_stats_server;

/*
 * A lord's UNIX socket served by a thread of its own (the statistics', the decision records'):
 * mode 0660 and group LORD_STATS_GROUP where that group exists, else 0600 (its directory made
 * if missing).  A stale socket at the path is replaced; anything else there is left alone
 * (-EEXIST).  The thread polls @fd and @stop[0]: a byte on the pipe ends it.  It blocks every
 * signal (they are the lord thread's) and runs on @cpus (NULL or none: where the caller may).
 */
struct lord_server {
	pthread_t thread;
	int fd;				/* listening */
	int stop[2];			/* a pipe: the thread's signal to end */
	char path[108];			/* sun_path */
};

/* Listen on @path and start @fn(@arg) as thread @name.  Return: 0, or a negative errno. */
int lord_server_start(struct lord_server *srv, const char *path, void *(*fn)(void *), void *arg,
		      const cpu_set_t *cpus, const char *name);

/* Stop the thread, close and remove the socket. */
void lord_server_stop(struct lord_server *srv);

/*
 * Serve snapshots on the UNIX socket @path from a thread of its own, on @cpus (NULL or none:
 * where the caller may run).  The socket is mode 0660 and group "cos" where that group exists,
 * else 0600: root and the cos group read a lord's statistics.  A stale socket at @path is
 * replaced; anything else there is left alone (-EEXIST).  A client connects and gets the next
 * snapshot the lord thread publishes (within a second; else the last one), then EOF; the lord
 * is asked for at most LORD_STATS_RATE snapshots a second, and a client that does not read is
 * dropped after a second.
 * Return: 0 and *@out, or a negative errno.
 */
int lord_stats_serve(struct lord_stats_server **out, const char *path, const cpu_set_t *cpus);

/* Does a client wait for a snapshot?  (The lord thread, lock-free.) */
int lord_stats_wanted(struct lord_stats_server *srv);

/* Publish @json (malloc()ed; the server owns it now) to the clients waiting. */
void lord_stats_publish(struct lord_stats_server *srv, char *json);

/* Stop the thread, close and remove the socket.  NULL: nothing. */
void lord_stats_stop(struct lord_stats_server *srv);

#endif /* POLICIES_LORD_STATS_H */
