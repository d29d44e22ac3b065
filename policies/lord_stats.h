/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lord_stats.h — a lord's statistics as named counters (struct lord_stats): lord_main() prints
 * them on one stderr line and serves them as JSON on a UNIX socket, /run/cos/NAME.stats, which
 * `cosctl stats` and `cosctl metrics` read.  The schema is docs/operating.md's ("Live
 * statistics"); its name carries its version (LORD_STATS_SCHEMA).
 */
#ifndef POLICIES_LORD_STATS_H
#define POLICIES_LORD_STATS_H

#include <stdio.h>

#include <cos.h>

#define LORD_STATS_MAX		64
#define LORD_STATS_SCHEMA	"cos-lord-stats/1"
#define LORD_STATS_DIR		COS_STATS_DIR	/* libcos/cos.h */

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
 * Serve snapshots on the UNIX socket @path (made world-connectable; a stale one is replaced),
 * from a thread of its own.  A client connects, and gets the next snapshot the lord thread
 * publishes (within a second; else the last one), then EOF.
 * Return: 0 and *@out, or a negative errno.
 */
int lord_stats_serve(struct lord_stats_server **out, const char *path);

/* Does a client wait for a snapshot?  (The lord thread, lock-free.) */
int lord_stats_wanted(struct lord_stats_server *srv);

/* Publish @json (malloc()ed; the server owns it now) to the clients waiting. */
void lord_stats_publish(struct lord_stats_server *srv, char *json);

/* Stop the thread, close and remove the socket.  NULL: nothing. */
void lord_stats_stop(struct lord_stats_server *srv);

#endif /* POLICIES_LORD_STATS_H */
