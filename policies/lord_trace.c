// SPDX-License-Identifier: GPL-2.0
/*
 * lord_trace.c — the decision records' socket (see lord_trace.h).  Its thread starts and
 * stops the recording (libcos's cos_sched_trace_start()/stop(), which the lord thread picks up
 * at its next step); the records themselves go through shared memory, never through here.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cos_trace.h>

#include "lord_stats.h"
#include "lord_trace.h"

struct lord_trace_server {
	struct lord_server server;	/* the socket and its thread */
	struct cos_sched *s;
	char args[256];
};

static void say(int c, const char *line)
{
	if (send(c, line, strlen(line), MSG_NOSIGNAL) < 0) {
		/* the client left: it learns nothing more */
	}
}

/* Start a recording for client @c: the ring's memfd and "ok", or "error: ...". */
static int start(struct lord_trace_server *srv, int c)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 }, line[160];
	struct timeval limit = { .tv_sec = 1 };
	uint64_t bytes = 0;
	struct iovec iov = { .iov_base = "ok\n", .iov_len = 3 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	int ring;

	/* the size: 8 bytes within a second, else the default */
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
	if (recv(c, &bytes, sizeof(bytes), MSG_WAITALL) != sizeof(bytes))
		bytes = 0;
	ring = cos_sched_trace_start(srv->s, (size_t)bytes, srv->args);
	if (ring < 0) {
		snprintf(line, sizeof(line), "error: %s\n", cos_strerror(ring));
		say(c, line);
		return -1;
	}
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &ring, sizeof(int));
	if (sendmsg(c, &mh, MSG_NOSIGNAL) != 3) {
		close(ring);
		cos_sched_trace_stop(srv->s);
		return -1;
	}
	close(ring);		/* the lord keeps its mapping; the client has its fd */
	return 0;
}

static void *trace_thread(void *arg)
{
	struct lord_trace_server *srv = arg;
	struct pollfd p[3] = { { .fd = srv->server.fd, .events = POLLIN },
			       { .fd = srv->server.stop[0], .events = POLLIN },
			       { .fd = -1, .events = POLLIN } };	/* the recording client */

	for (;;) {
		int c;

		if (poll(p, 3, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[2].fd >= 0 && p[2].revents) {
			char buf[64];

			/* anything it sends is ignored; its end ends the recording */
			if (recv(p[2].fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0 || (p[2].revents & POLLHUP)) {
				cos_sched_trace_stop(srv->s);
				close(p[2].fd);
				p[2].fd = -1;
			}
		}
		if (!(p[0].revents & POLLIN))
			continue;
		c = accept4(srv->server.fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		if (p[2].fd >= 0) {
			say(c, "error: busy: another client records this lord\n");
			close(c);
		} else if (start(srv, c)) {
			close(c);
		} else {
			p[2].fd = c;
		}
	}
	if (p[2].fd >= 0) {
		cos_sched_trace_stop(srv->s);
		close(p[2].fd);
	}
	return NULL;
}

int lord_trace_serve(struct lord_trace_server **out, const char *path, struct cos_sched *s,
		     const char *args, const cpu_set_t *cpus)
{
	struct lord_trace_server *srv = calloc(1, sizeof(*srv));
	int err;

	if (!srv)
		return -ENOMEM;
	snprintf(srv->args, sizeof(srv->args), "%s", args ? args : "");
	srv->s = s;
	err = lord_server_start(&srv->server, path, trace_thread, srv, cpus, "cos-trace");
	if (err) {
		free(srv);
		return err;
	}
	*out = srv;
	return 0;
}

void lord_trace_stop(struct lord_trace_server *srv)
{
	if (!srv)
		return;
	lord_server_stop(&srv->server);	/* a recording still going ends with the thread */
	free(srv);
}
