/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lord_trace.h — the socket through which `cosctl trace` asks a lord for its decision records
 * (libcos/cos_trace.h): /run/cos/NAME.trace, beside the statistics socket.  A client connects
 * and sends the ring's size (a native unsigned 64-bit number of bytes, 0: the default); the
 * lord answers with the ring's memfd (SCM_RIGHTS) and one line, "ok" or "error: why".  It
 * records until the client closes the connection.  One client at a time; another is told
 * "error: busy".
 */
#ifndef POLICIES_LORD_TRACE_H
#define POLICIES_LORD_TRACE_H

#include <sched.h>

#include <cos.h>

struct lord_trace_server;

/*
 * Serve the socket @path (mode 0660, group "cos", as the statistics socket) from a thread on
 * @cpus for the scheduler @s; @args are the program's options, for the recording's header.
 * Return: 0 and *@out, or a negative errno.
 */
int lord_trace_serve(struct lord_trace_server **out, const char *path, struct cos_sched *s,
		     const char *args, const cpu_set_t *cpus);

/* Stop the thread (ending a recording), close and remove the socket.  NULL: nothing. */
void lord_trace_stop(struct lord_trace_server *srv);

#endif /* POLICIES_LORD_TRACE_H */
