// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl_trace.c — `cosctl trace`: record the lords' decision records (each lord's ring,
 * through its NAME.trace socket: policies/lord_trace.h) and the kernel's scheduler events (a
 * tracefs instance of our own, on CLOCK_MONOTONIC like the lords' records) for a while, then
 * let cos-perfetto make the Perfetto trace and the summary.  See docs/tracing.md.
 *
 * Files: FILE (the Perfetto trace), FILE.kernel (the kernel's events, tracefs text) and
 * FILE.NAME.lord per lord (its records: cos-replay's input).  The recording stays when the
 * conversion cannot be made here (no Python perfetto package): cos-perfetto can make it
 * elsewhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cos.h>
#include <cos_trace.h>

#include "cosctl.h"

#define TRACE_MAX_LORDS		64
#define DRAIN_EVERY_NS		20000000ull	/* 20 ms: a 16 MiB ring holds far more */

const char trace_usage[] =
	"usage: cosctl trace [--enclave NAME] [--seconds N] [-o FILE] [--summary] [--buffer-mb N]\n"
	"                    [--no-kernel] [--raw]\n"
	"\n"
	"Record, for N seconds (default 5; Ctrl-C ends it sooner), what each running lord decided\n"
	"(its decision records: the messages it read, its placements, its shoots, with their\n"
	"times) and what the kernel ran (sched_switch, sched_wakeup, sched_migrate_task and cos.ko's\n"
	"own events where it has them), then write a Perfetto trace to FILE (default cos.pftrace):\n"
	"open it in ui.perfetto.dev or with Perfetto's trace processor.\n"
	"\n"
	"  --enclave NAME    only the lord of this enclave (default: every lord)\n"
	"  --seconds N       how long (1-3600, default 5)\n"
	"  -o FILE           the trace; the recording goes beside it: FILE.kernel and\n"
	"                    FILE.NAME.lord per lord (cos-replay's input)\n"
	"  --summary         print per enclave the phases of a decision (p50, p99, max) and\n"
	"                    the longest waits of runnable tasks with their cause\n"
	"  --buffer-mb N     each lord's ring, 1-64 (default 16; a full ring drops whole steps)\n"
	"  --no-kernel       the lords' records only (no tracefs)\n"
	"  --raw             keep the recording, make no trace (cos-perfetto makes it later)\n"
	"\n"
	"Needs root (tracefs, the lords' sockets).  Making the trace needs Python's perfetto\n"
	"package (pip install perfetto); without it the recording stays, and cos-perfetto makes\n"
	"the trace wherever that package is.\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

struct lord_rec {
	char name[128];
	int sock, out;
	struct cos_trace_header *ring;
	size_t map_size;
	long long bytes;
};

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Connect to @path, ask for a ring of @bytes: the ring's memfd, or -1 (said why). */
static int ask_lord(const char *path, uint64_t bytes, int *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char ctl[CMSG_SPACE(sizeof(int))], answer[256];
	struct iovec iov = { .iov_base = answer, .iov_len = sizeof(answer) - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct timeval limit = { .tv_sec = 2 };
	struct cmsghdr *cm;
	ssize_t n;
	int fd = -1, s;

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "cosctl: %s: %s\n", path, s < 0 ? strerror(errno) : "path too long");
		if (s >= 0)
			close(s);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path));
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "cosctl: %s: %s (is its lord running?)\n", path, strerror(errno));
		close(s);
		return -1;
	}
	/* a lord that refuses (busy) answers at once and closes: its answer, not EPIPE, says why */
	if (send(s, &bytes, sizeof(bytes), MSG_NOSIGNAL) != sizeof(bytes)) {
		int err = errno;

		n = recv(s, answer, sizeof(answer) - 1, 0);
		answer[n > 0 ? n : 0] = '\0';
		answer[strcspn(answer, "\n")] = '\0';
		fprintf(stderr, "cosctl: %s: %s\n", path, n > 0 ? answer : strerror(err));
		close(s);
		return -1;
	}
	n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	answer[n > 0 ? n : 0] = '\0';
	for (cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (fd < 0 || strncmp(answer, "ok", 2)) {
		answer[strcspn(answer, "\n")] = '\0';
		fprintf(stderr, "cosctl: %s: %s\n", path, n > 0 ? answer : "no answer from its lord");
		if (fd >= 0)
			close(fd);
		close(s);
		return -1;
	}
	*sock = s;
	return fd;
}

/* The lord at socket @path: its ring mapped, the recording file begun. */
static int lord_open(struct lord_rec *l, const char *path, const char *out, uint64_t bytes)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char file[PATH_MAX];
	struct stat st;
	int ring, seals;

	*l = (struct lord_rec){ .sock = -1, .out = -1 };
	snprintf(l->name, sizeof(l->name), "%.*s", (int)(strlen(base) - strlen(".trace")), base);
	ring = ask_lord(path, bytes, &l->sock);
	if (ring < 0)
		return -1;
	/* sealed against shrinking, or a lord could make this reader fault (SIGBUS) */
	seals = fcntl(ring, F_GET_SEALS);
	if (fstat(ring, &st) || st.st_size < (off_t)sizeof(struct cos_trace_header) ||
	    seals < 0 || !(seals & F_SEAL_SHRINK)) {
		fprintf(stderr, "cosctl: %s: the lord's ring is not one\n", path);
		goto fail;
	}
	l->map_size = (size_t)st.st_size;
	l->ring = mmap(NULL, l->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, ring, 0);
	close(ring);
	ring = -1;
	if (l->ring == MAP_FAILED) {
		fprintf(stderr, "cosctl: %s: mmap: %s\n", path, strerror(errno));
		goto fail;
	}
	snprintf(file, sizeof(file), "%s.%s.lord", out, l->name);
	l->out = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (l->out < 0 || cos_trace_save_header(l->ring, l->map_size, l->out)) {
		fprintf(stderr, "cosctl: %s: %s\n", file, l->out < 0 ? strerror(errno) :
			"not a ring of this version (a newer lord?)");
		goto fail;
	}
	return 0;
fail:
	if (ring >= 0)
		close(ring);
	if (l->ring && l->ring != MAP_FAILED)
		munmap(l->ring, l->map_size);
	if (l->out >= 0)
		close(l->out);
	close(l->sock);
	*l = (struct lord_rec){ .sock = -1, .out = -1 };
	return -1;
}

/* ---------------------------------------------------------------- tracefs */

static char tracefs[PATH_MAX];

static int tfs_write(const char *file, const char *value)
{
	char path[PATH_MAX + 64];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", tracefs, file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ok = write(fd, value, strlen(value)) == (ssize_t)strlen(value);
	close(fd);
	return ok ? 0 : -EIO;
}

/* Our own tracefs instance, on the monotonic clock, with the scheduler's events on. */
static int kernel_start(unsigned int buffer_kb)
{
	static const char *const events[] = {
		"events/sched/sched_switch/enable", "events/sched/sched_wakeup/enable",
		"events/sched/sched_wakeup_new/enable", "events/sched/sched_migrate_task/enable",
	};
	const char *roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char kb[32];
	int err;

	for (size_t i = 0; i < 2; i++) {
		char probe[PATH_MAX];

		snprintf(probe, sizeof(probe), "%s/instances", roots[i]);
		if (!access(probe, W_OK)) {
			snprintf(tracefs, sizeof(tracefs), "%s/instances/cosctl-trace-%d", roots[i],
				 (int)getpid());
			break;
		}
	}
	if (!tracefs[0]) {
		fprintf(stderr, "cosctl: no tracefs (mount -t tracefs nodev /sys/kernel/tracing; "
			"or --no-kernel)\n");
		return -1;
	}
	if (mkdir(tracefs, 0700)) {
		fprintf(stderr, "cosctl: %s: %s\n", tracefs, strerror(errno));
		tracefs[0] = '\0';
		return -1;
	}
	snprintf(kb, sizeof(kb), "%u", buffer_kb);
	if ((err = tfs_write("trace_clock", "mono")) || (err = tfs_write("buffer_size_kb", kb))) {
		fprintf(stderr, "cosctl: %s: trace_clock, buffer_size_kb: %s\n", tracefs,
			strerror(-err));
		return -1;
	}
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if ((err = tfs_write(events[i], "1"))) {
			fprintf(stderr, "cosctl: %s/%s: %s\n", tracefs, events[i], strerror(-err));
			return -1;
		}
	tfs_write("events/cos/enable", "1");	/* cos.ko's own events, where it has them */
	return tfs_write("tracing_on", "1");
}

/* Stop, copy the events to @out, say what the kernel dropped, remove the instance. */
static long kernel_stop(const char *out, unsigned long long *dropped)
{
	char path[PATH_MAX + 64], buf[65536];
	long lines = 0;
	ssize_t n;
	int in, fd;

	*dropped = 0;
	if (!tracefs[0])
		return -1;
	tfs_write("tracing_on", "0");
	snprintf(path, sizeof(path), "%s/trace", tracefs);
	in = open(path, O_RDONLY | O_CLOEXEC);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	while (in >= 0 && fd >= 0 && (n = read(in, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
		if (write(fd, buf, (size_t)n) != n) {
			fprintf(stderr, "cosctl: %s: %s\n", out, strerror(errno));
			break;
		}
	}
	if (in >= 0)
		close(in);
	if (fd >= 0)
		close(fd);
	else
		fprintf(stderr, "cosctl: %s: %s\n", out, strerror(errno));
	for (int cpu = 0; cpu < 4096; cpu++) {
		FILE *f;
		char line[128];

		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", tracefs, cpu);
		f = fopen(path, "re");
		if (!f)
			break;
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;

			if (sscanf(line, "overrun: %llu", &v) == 1)
				*dropped += v;
		}
		fclose(f);
	}
	tfs_write("events/enable", "0");
	if (rmdir(tracefs))
		fprintf(stderr, "cosctl: cannot remove %s: %s\n", tracefs, strerror(errno));
	tracefs[0] = '\0';
	return lines;
}

/* ---------------------------------------------------------------- the conversion */

/* cos-perfetto beside cosctl (a build tree, /usr/bin), else on PATH. */
static int convert(const char *out, bool summary, bool no_trace)
{
	char self[PATH_MAX], prog[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *argv[8];
	int argc = 0, status;
	pid_t pid;

	snprintf(prog, sizeof(prog), "cos-perfetto");
	if (n > 0) {
		self[n] = '\0';
		if (strrchr(self, '/')) {
			*strrchr(self, '/') = '\0';
			snprintf(prog, sizeof(prog), "%s/cos-perfetto", self);
			if (access(prog, X_OK))
				snprintf(prog, sizeof(prog), "cos-perfetto");
		}
	}
	argv[argc++] = prog;
	argv[argc++] = out;
	if (summary)
		argv[argc++] = "--summary";
	if (no_trace)
		argv[argc++] = "--no-trace";
	argv[argc] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execvp(prog, (char **)argv);
		fprintf(stderr, "cosctl: cannot run cos-perfetto: %s\n", strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int cmd_trace(int argc, char **argv, int json)
{
	static const struct option longs[] = {
		{ "enclave", required_argument, NULL, 'e' },
		{ "seconds", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "summary", no_argument, NULL, 'S' },
		{ "buffer-mb", required_argument, NULL, 'b' },
		{ "no-kernel", no_argument, NULL, 'K' },
		{ "raw", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = NULL, *out = "cos.pftrace";
	unsigned long seconds = 5, buffer_mb = 16;
	bool summary = false, no_kernel = false, raw = false;
	struct lord_rec lords[TRACE_MAX_LORDS];
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	unsigned long long until, dropped = 0;
	char **paths, kfile[PATH_MAX];
	size_t nr_paths, nr = 0;
	long events = -1;
	int c, ret = 0;
	char *end;

	char **av = calloc((size_t)argc + 2, sizeof(*av));

	if (!av)
		return 1;
	av[0] = "cosctl trace";	/* getopt's argv[0] */
	memcpy(av + 1, argv, (size_t)argc * sizeof(*av));
	optind = 1;
	while ((c = getopt_long(argc + 1, av, "o:", longs, NULL)) != -1) {
		switch (c) {
		case 'e': name = optarg; break;
		case 'o': out = optarg; break;
		case 'S': summary = true; break;
		case 'K': no_kernel = true; break;
		case 'r': raw = true; break;
		case 's':
		case 'b':
			errno = 0;
			*(c == 's' ? &seconds : &buffer_mb) = strtoul(optarg, &end, 10);
			if (errno || *end || optarg[0] < '0' || optarg[0] > '9' ||
			    (c == 's' ? seconds < 1 || seconds > 3600 :
			     buffer_mb < 1 || buffer_mb > COS_TRACE_MAX_MB)) {
				fprintf(stderr, "cosctl trace: bad value '%s' for --%s (1-%u)\n", optarg,
					c == 's' ? "seconds" : "buffer-mb",
					c == 's' ? 3600 : COS_TRACE_MAX_MB);
				free(av);
				return 2;
			}
			break;
		default:
			fputs("Try 'cosctl trace --help' for more.\n", stderr);
			free(av);
			return 2;
		}
	}
	if (optind <= argc) {
		fprintf(stderr, "cosctl trace: unexpected '%s'\nTry 'cosctl trace --help' for more.\n",
			av[optind]);
		free(av);
		return 2;
	}
	free(av);
	if (json)
		fputs("cosctl trace: --json is not for trace (its output is the files)\n", stderr);
	nr_paths = lord_sockets(name, ".trace", &paths);
	if (!nr_paths) {
		fprintf(stderr, "cosctl trace: no lord%s%s serves decision records (a running "
			"cos-* lord serves them on %s/NAME.trace)\n", name ? " of enclave " : "",
			name ? name : "", getenv("COS_STATS_DIR") ?: COS_STATS_DIR);
		free(paths);
		return 1;
	}
	/* Ctrl-C from here on ends the recording, and removes the tracefs instance */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* kernel events first: a lord's first step is then among them */
	if (!no_kernel && kernel_start(8192)) {
		ret = 1;
		goto out;
	}
	for (size_t i = 0; i < nr_paths && nr < TRACE_MAX_LORDS; i++)
		if (!lord_open(&lords[nr], paths[i], out, (uint64_t)buffer_mb << 20))
			nr++;
	if (!nr) {
		ret = 1;
		goto out;
	}
	fprintf(stderr, "cosctl trace: recording %zu lord%s%s for %lu s (Ctrl-C ends it)\n", nr,
		nr == 1 ? "" : "s", no_kernel ? "" : " and the kernel's scheduler events", seconds);
	until = now_ns() + seconds * 1000000000ull;
	while (!stop && now_ns() < until) {
		struct timespec nap = { 0, DRAIN_EVERY_NS };

		nanosleep(&nap, NULL);
		for (size_t i = 0; i < nr; i++) {
			long long n = lords[i].ring ? cos_trace_drain(lords[i].ring, lords[i].map_size,
								      lords[i].out) : 0;

			if (n < 0) {
				fprintf(stderr, "cosctl trace: %s: %s; its recording ends here\n",
					lords[i].name, cos_strerror((int)n));
				close(lords[i].sock);
				lords[i].sock = -1;
				munmap(lords[i].ring, lords[i].map_size);
				lords[i].ring = NULL;
				close(lords[i].out);
				lords[i].out = -1;
				ret = 1;
			} else {
				lords[i].bytes += n;
			}
		}
	}
	snprintf(kfile, sizeof(kfile), "%s.kernel", out);
	if (!no_kernel)
		events = kernel_stop(kfile, &dropped);
	for (size_t i = 0; i < nr; i++)
		if (lords[i].ring)
			close(lords[i].sock);	/* the lord stops recording at its next step */
	usleep(50000);			/* the step it was in is published by then */
	for (size_t i = 0; i < nr; i++) {
		struct lord_rec *l = &lords[i];
		long long n;

		if (!l->ring)
			continue;
		n = cos_trace_drain(l->ring, l->map_size, l->out);
		if (n > 0)
			l->bytes += n;
		fprintf(stderr, "cosctl trace: %s: %lld bytes of decision records in %s.%s.lord%s\n",
			l->name, l->bytes, out, l->name, l->ring->lost_steps ?
			" (steps were lost: a larger --buffer-mb)" : "");
		if (l->ring->lost_steps)
			fprintf(stderr, "cosctl trace: %s: %llu steps lost\n", l->name,
				(unsigned long long)l->ring->lost_steps);
		munmap(l->ring, l->map_size);
		close(l->out);
	}
	if (events >= 0)
		fprintf(stderr, "cosctl trace: the kernel: %ld events in %s%s\n", events, kfile,
			dropped ? " (some were dropped: the kernel's buffer was full)" : "");
	if (!raw) {
		int st = convert(out, summary, false);

		if (st) {
			fprintf(stderr, "cosctl trace: no Perfetto trace made; the recording stays (%s.*); "
				"make it with: cos-perfetto %s%s\n", out, out, summary ? " --summary" : "");
			ret = 1;
		} else {
			fprintf(stderr, "cosctl trace: the trace: %s (ui.perfetto.dev)\n", out);
		}
	}
out:
	if (tracefs[0])
		kernel_stop("/dev/null", &dropped);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	for (size_t i = 0; i < nr_paths; i++)
		free(paths[i]);
	free(paths);
	return ret;
}
