// SPDX-License-Identifier: GPL-2.0
/*
 * lord_stats.c — named counters and the socket that serves them (see lord_stats.h).  The
 * lord thread never blocks on a client: it publishes a snapshot at its next tick after one
 * asked (lord_stats_wanted()), and the server thread writes it out.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lord_stats.h"

void lord_stat(struct lord_stats *st, const char *key, unsigned long long v)
{
	if (st->n >= LORD_STATS_MAX)
		return;
	st->key[st->n] = key;
	st->v[st->n++] = v;
}

void lord_stats_print(const struct lord_stats *st, FILE *f)
{
	for (unsigned int i = 0; i < st->n; i++)
		fprintf(f, "%s%s %llu", i ? " " : "", st->key[i], st->v[i]);
}

struct lord_stats_server {
	struct lord_server server;	/* the socket and its thread */
	atomic_int want;		/* clients waiting: the lord publishes at its next tick */
	pthread_mutex_t lock;		/* guards json and gen */
	pthread_cond_t published;
	char *json;			/* the last snapshot, NULL before the first */
	unsigned long gen;		/* snapshots published */
	struct timespec asked;		/* when the lord was last asked for one (the server thread) */
};

int lord_stats_wanted(struct lord_stats_server *srv)
{
	return srv && atomic_load_explicit(&srv->want, memory_order_relaxed);
}

void lord_stats_publish(struct lord_stats_server *srv, char *json)
{
	pthread_mutex_lock(&srv->lock);
	free(srv->json);
	srv->json = json;
	srv->gen++;
	atomic_store(&srv->want, 0);
	pthread_cond_broadcast(&srv->published);
	pthread_mutex_unlock(&srv->lock);
}

/* Write all of @len bytes at @buf to @fd (a client that stops reading loses the rest). */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0 && errno != EINTR)
			return;
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		}
	}
}

/*
 * One client: the next snapshot (a second at most), else the last; one line of JSON.  The lord
 * makes at most LORD_STATS_RATE a second: a client that comes sooner gets the last one, so
 * that clients in a loop cost the lord nothing more.
 */
static void serve_one(struct lord_stats_server *srv, int c)
{
	struct timespec until, now;
	struct timeval send_limit = { .tv_sec = 1 };
	unsigned long gen;
	char *copy = NULL;
	long long since_ns;

	/* a client that does not read keeps the thread a second at most */
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof(send_limit));
	clock_gettime(CLOCK_MONOTONIC, &now);
	since_ns = (now.tv_sec - srv->asked.tv_sec) * 1000000000ll + (now.tv_nsec - srv->asked.tv_nsec);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	pthread_mutex_lock(&srv->lock);
	gen = srv->gen;
	if (!srv->json || since_ns >= 1000000000ll / LORD_STATS_RATE) {
		srv->asked = now;
		atomic_store(&srv->want, 1);
		while (srv->gen == gen &&
		       pthread_cond_timedwait(&srv->published, &srv->lock, &until) != ETIMEDOUT)
			;
	}
	if (srv->json)
		copy = strdup(srv->json);
	pthread_mutex_unlock(&srv->lock);
	if (copy) {
		write_all(c, copy, strlen(copy));
		write_all(c, "\n", 1);
	}
	free(copy);
}

static void *server_thread(void *arg)
{
	struct lord_stats_server *srv = arg;
	struct pollfd p[2] = { { .fd = srv->server.fd, .events = POLLIN },
			       { .fd = srv->server.stop[0], .events = POLLIN } };

	for (;;) {
		int c;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		c = accept4(srv->server.fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve_one(srv, c);
		close(c);
	}
	return NULL;
}

/*
 * Make the socket at @path readable by root and the LORD_STATS_GROUP group only (0660), or by
 * root alone (0600) where that group does not exist.
 */
static int socket_mode(const char *path)
{
	struct group *g = getgrnam(LORD_STATS_GROUP);

	if (g && chown(path, (uid_t)-1, g->gr_gid))
		return -1;
	return chmod(path, g ? 0660 : 0600);
}

/* Listen on @path: the socket, or a negative errno. */
static int socket_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat st;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* a killed lord's socket is replaced; a file of another kind is nobody's to remove */
	if (!lstat(path, &st) && !S_ISSOCK(st.st_mode))
		return -EEXIST;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);		/* /run/cos: made by the first lord */
	}
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a killed lord's socket: this enclave's name is ours now (registered) */
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	if (socket_mode(path) || listen(fd, 16)) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	return fd;
}

int lord_server_start(struct lord_server *srv, const char *path, void *(*fn)(void *), void *arg,
		      const cpu_set_t *cpus, const char *name)
{
	sigset_t all, old;
	int err;

	if (strlen(path) >= sizeof(srv->path))
		return -ENAMETOOLONG;
	snprintf(srv->path, sizeof(srv->path), "%s", path);
	srv->fd = socket_listen(path);
	if (srv->fd < 0)
		return srv->fd;
	if (pipe2(srv->stop, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	/* signals are the lord thread's: its wait must see SIGINT, not this thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&srv->thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(srv->stop[0]);
		close(srv->stop[1]);
		goto fail;
	}
	/* off the lord's CPU, where it would run only while the lord sleeps (and delay it) */
	if (cpus && CPU_COUNT(cpus))
		pthread_setaffinity_np(srv->thread, sizeof(*cpus), cpus);
	pthread_setname_np(srv->thread, name);
	return 0;
fail:
	close(srv->fd);
	unlink(path);
	return err;
}

void lord_server_stop(struct lord_server *srv)
{
	if (write(srv->stop[1], "x", 1) < 0) {
		/* a pipe with room: cannot fail; the join below would wait forever if it did */
	}
	pthread_join(srv->thread, NULL);
	close(srv->fd);
	unlink(srv->path);
	close(srv->stop[0]);
	close(srv->stop[1]);
}

int lord_stats_serve(struct lord_stats_server **out, const char *path, const cpu_set_t *cpus)
{
	struct lord_stats_server *srv = calloc(1, sizeof(*srv));
	int err;

	if (!srv)
		return -ENOMEM;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->published, NULL);
	err = lord_server_start(&srv->server, path, server_thread, srv, cpus, "cos-stats");
	if (err) {
		pthread_mutex_destroy(&srv->lock);
		pthread_cond_destroy(&srv->published);
		free(srv);
		return err;
	}
	*out = srv;
	return 0;
}

void lord_stats_stop(struct lord_stats_server *srv)
{
	if (!srv)
		return;
	lord_server_stop(&srv->server);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->published);
	free(srv->json);
	free(srv);
}
