// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * replay.c — a recording (cos_trace.h) fed to a policy again, through the framework's backend
 * seam instead of /dev/cos: each recorded step's messages, clock readings, status and affinity
 * reads and hints, in their order.  The same recording and policy make the same decisions;
 * where they differ from the recorded ones, the report says so.
 *
 * After the first difference the replayed policy's books and the recorded messages part ways
 * (the kernel answered the recorded decisions, not the replayed ones): a placement the
 * recording has no outcome for is taken as started, and the report counts the differing steps.
 *
 * The file is untrusted input: every record is bounded and checked before use (replay_load()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define REPLAY_MAX_FILE		(1ull << 32)	/* 4 GiB: larger is not a recording of ours */
#define REPLAY_SHOWN		10		/* differing steps described in full */

struct replay_place {
	int cpu;
	unsigned int slot, gen, flags;
	unsigned long long slice_ns;
};

struct cos_replay {
	unsigned char *buf;		/* the file */
	size_t len;
	struct cos_trace_header hdr;
	size_t *steps;			/* offsets of the STEP records */
	size_t nr_steps;
	size_t book_from, book_to;	/* the step with the BOOK records (the lord's books) */
	/* the step being replayed: its records are [at, end) */
	size_t at, end;
	size_t msg_off;			/* the next MSG's offset (end: none) */
	size_t status_off;		/* where the next status read looks (rp_task_status()) */
	struct cos_msg msg;
	struct cos_clock clock;
	size_t clock_off;		/* the next CLOCK's */
	unsigned long long last_clock;
	unsigned char *used;		/* [len / COS_TRACE_ALIGN]: AFFINITY, HINT records taken */
	bool creating;			/* task_status() answers from the BOOK records */
	struct replay_place *placed;	/* this step's replayed placements */
	size_t nr_placed, cap_placed;
	struct cos_replay_result res;
};

static const struct cos_trace_rec *rec_at(const struct cos_replay *r, size_t off)
{
	return (const struct cos_trace_rec *)(r->buf + off);
}

/* The first record of @type at or after @off before @to, or @to. */
static size_t next_in(const struct cos_replay *r, size_t off, size_t to, unsigned int type)
{
	while (off < to && rec_at(r, off)->type != type)
		off += rec_at(r, off)->size;
	return off < to ? off : to;
}

/* The first record of @type at or after @off in the current step, or r->end. */
static size_t next_of(const struct cos_replay *r, size_t off, unsigned int type)
{
	return next_in(r, off, r->end, type);
}

/* Check every record: sizes, types, alignment; index the steps. */
static int replay_load(struct cos_replay *r, const char *path)
{
	size_t off, cap = 0;

	if (r->len < sizeof(r->hdr))
		return cos_fail(-EINVAL, "%s: %zu bytes: not a cos recording", path, r->len);
	memcpy(&r->hdr, r->buf, sizeof(r->hdr));
	if (r->hdr.magic != COS_TRACE_MAGIC)
		return cos_fail(-EINVAL, "%s: not a cos recording (no magic)", path);
	if (r->hdr.version != COS_TRACE_VERSION || r->hdr.header_size != sizeof(r->hdr))
		return cos_fail(-EINVAL, "%s: a recording of version %u (header %u bytes); this "
				"libcos reads version %u", path, r->hdr.version, r->hdr.header_size,
				COS_TRACE_VERSION);
	if (!r->hdr.nr_cpus || r->hdr.nr_cpus > CPU_SETSIZE || !r->hdr.max_tasks ||
	    r->hdr.max_tasks > (1u << 20))
		return cos_fail(-EINVAL, "%s: %u CPUs, %u task slots: not a lord's", path,
				r->hdr.nr_cpus, r->hdr.max_tasks);
	r->hdr.enclave[sizeof(r->hdr.enclave) - 1] = '\0';
	r->hdr.policy[sizeof(r->hdr.policy) - 1] = '\0';
	r->hdr.args[sizeof(r->hdr.args) - 1] = '\0';
	for (off = sizeof(r->hdr); off < r->len;) {
		const struct cos_trace_rec *rec = rec_at(r, off);
		size_t want;

		if (r->len - off < sizeof(*rec))
			return cos_fail(-EINVAL, "%s: cut at byte %zu (a record's header)", path, off);
		want = cos_trace_rec_size(rec->type);
		if (!want || rec->type == COS_TREC_PAD || rec->size != want ||
		    r->len - off < want)
			return cos_fail(-EINVAL, "%s: bad record at byte %zu (type %u, %u bytes)",
					path, off, rec->type, rec->size);
		if ((rec->type == COS_TREC_PLACE || rec->type == COS_TREC_SHOT) &&
		    rec->cpu >= r->hdr.nr_cpus)
			return cos_fail(-EINVAL, "%s: record at byte %zu names CPU %u of %u", path,
					off, rec->cpu, r->hdr.nr_cpus);
		if (rec->type == COS_TREC_STEP) {
			if (r->nr_steps == cap) {
				size_t *n = realloc(r->steps, (cap = cap ? 2 * cap : 1024) *
						    sizeof(*n));

				if (!n)
					return cos_fail(-ENOMEM, "out of memory");
				r->steps = n;
			}
			r->steps[r->nr_steps++] = off;
			if (r->book_from && !r->book_to)
				r->book_to = off;
		} else if (rec->type == COS_TREC_BOOK && r->nr_steps && !r->book_from) {
			r->book_from = r->steps[r->nr_steps - 1];
		} else if (!r->nr_steps && rec->type != COS_TREC_LOST) {
			return cos_fail(-EINVAL, "%s: a record before the first step (byte %zu)",
					path, off);
		}
		off += want;
	}
	if (r->book_from && !r->book_to)
		r->book_to = r->len;
	return 0;
}

COS_EXPORT int cos_replay_open(struct cos_replay **rp, const char *path)
{
	struct cos_replay *r;
	struct stat st;
	size_t got = 0;
	int fd, err;

	*rp = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cos_fail(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size >= REPLAY_MAX_FILE) {
		close(fd);
		return cos_fail(-EINVAL, "%s: not a recording (a regular file under 4 GiB)", path);
	}
	r = calloc(1, sizeof(*r));
	if (r)
		r->buf = malloc((size_t)st.st_size + 1);
	if (!r || !r->buf) {
		close(fd);
		free(r);
		return cos_fail(-ENOMEM, "out of memory for %s", path);
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, r->buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	r->len = got;
	r->used = calloc(r->len / COS_TRACE_ALIGN + 1, 1);
	err = r->used ? replay_load(r, path) : cos_fail(-ENOMEM, "out of memory");
	if (err) {
		cos_replay_close(r);
		return err;
	}
	*rp = r;
	return 0;
}

COS_EXPORT void cos_replay_close(struct cos_replay *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r->used);
	free(r->steps);
	free(r->placed);
	free(r);
}

COS_EXPORT const struct cos_trace_header *cos_replay_header(const struct cos_replay *r)
{
	return &r->hdr;
}

/* ---------------------------------------------------------------- the backend */

static const struct cos_msg *rp_peek(void *b)
{
	struct cos_replay *r = b;

	if (r->msg_off >= r->end)
		return NULL;
	memcpy(&r->msg, &((const struct cos_trace_msg *)rec_at(r, r->msg_off))->msg, sizeof(r->msg));
	return &r->msg;
}

static void rp_consume(void *b)
{
	struct cos_replay *r = b;

	if (r->msg_off < r->end)
		r->msg_off = next_of(r, r->msg_off + rec_at(r, r->msg_off)->size, COS_TREC_MSG);
}

static void rp_publish(void *b)
{
}

/*
 * While creating: the BOOK records; in a step: its STATUS records.  Else FREE.  The framework
 * reads the table slot by slot (learn()), and the records were written in that order, so one
 * cursor walks them: a record for a later slot waits for it, one for an earlier slot (a read
 * the replay does not make) is passed over.  A second resync in the step walks on from there.
 */
static int rp_task_status(void *b, unsigned int slot, struct cos_task_status *out)
{
	struct cos_replay *r = b;
	size_t to = r->creating ? r->book_to : r->end;
	unsigned int type = r->creating ? COS_TREC_BOOK : COS_TREC_STATUS;
	const struct cos_trace_status *s;

	memset(out, 0, sizeof(*out));
	for (;;) {
		r->status_off = next_in(r, r->status_off, to, type);
		if (r->status_off >= to)
			return 0;
		s = (const void *)rec_at(r, r->status_off);
		if (s->slot >= slot)
			break;
		r->status_off += s->h.size;
	}
	if (s->slot != slot)
		return 0;
	r->status_off += s->h.size;
	*out = s->st;
	return s->ret;
}

static int rp_prepare(void *b, int cpu, unsigned int slot, unsigned int gen,
		      unsigned long long slice_ns, unsigned int flags)
{
	struct cos_replay *r = b;

	if (r->nr_placed == r->cap_placed) {
		size_t cap = r->cap_placed ? 2 * r->cap_placed : 64;
		struct replay_place *n = realloc(r->placed, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->placed = n;
		r->cap_placed = cap;
	}
	r->placed[r->nr_placed++] = (struct replay_place){ .cpu = cpu, .slot = slot, .gen = gen,
		.flags = flags, .slice_ns = slice_ns };
	return 0;
}

static int rp_shoot(void *b)
{
	struct cos_replay *r = b;
	size_t off = next_of(r, r->at, COS_TREC_SHOOT);

	if (off < r->end && ((const struct cos_trace_shoot *)rec_at(r, off))->ret < 0)
		return ((const struct cos_trace_shoot *)rec_at(r, off))->ret;
	return (int)r->nr_placed;
}

/* The recorded outcome of the same placement on @cpu; one the recording lacks started. */
static unsigned int rp_shoot_status(void *b, int cpu)
{
	struct cos_replay *r = b;
	const struct replay_place *p = NULL;

	for (size_t i = 0; i < r->nr_placed; i++)
		if (r->placed[i].cpu == cpu)
			p = &r->placed[i];
	for (size_t off = r->at; p && off < r->end; off += rec_at(r, off)->size) {
		const struct cos_trace_shot *s = (const void *)rec_at(r, off);

		if (s->h.type == COS_TREC_SHOT && s->h.cpu == (unsigned int)cpu &&
		    s->slot == p->slot && s->gen == p->gen)
			return s->status;
	}
	return COS_SHOOT_OK;
}

static int rp_wait(void *b, unsigned long long timeout_ns)
{
	return 0;
}

/* The step's next unused record of @type that @match accepts. */
static const struct cos_trace_rec *take(struct cos_replay *r, unsigned int type,
					bool (*match)(const struct cos_trace_rec *, long), long key)
{
	for (size_t off = r->at; off < r->end; off += rec_at(r, off)->size) {
		const struct cos_trace_rec *rec = rec_at(r, off);

		if (rec->type == type && !r->used[off / COS_TRACE_ALIGN] && match(rec, key)) {
			r->used[off / COS_TRACE_ALIGN] = 1;
			return rec;
		}
	}
	return NULL;
}

static bool affinity_of(const struct cos_trace_rec *rec, long pid)
{
	return ((const struct cos_trace_affinity *)rec)->pid == pid;
}

static int rp_affinity(void *b, int pid, cpu_set_t *set)
{
	struct cos_replay *r = b;
	const struct cos_trace_affinity *a = (const void *)take(r, COS_TREC_AFFINITY, affinity_of, pid);

	CPU_ZERO(set);
	for (unsigned int cpu = 0; cpu < r->hdr.nr_cpus && cpu < COS_TRACE_CPU_WORDS * 64; cpu++)
		if (!a || a->cpus[cpu / 64] & (1ull << (cpu % 64)))
			CPU_SET(cpu, set);	/* none recorded (the books at the start): all */
	return a ? a->ret : 0;
}

static bool hint_of(const struct cos_trace_rec *rec, long slot)
{
	return ((const struct cos_trace_hint *)rec)->slot == (unsigned long)slot;
}

static int rp_hint(void *b, unsigned int slot, int pid, struct cos_hint *out)
{
	struct cos_replay *r = b;
	const struct cos_trace_hint *h = (const void *)take(r, COS_TREC_HINT, hint_of, slot);

	memset(out, 0, sizeof(*out));
	if (!h)
		return -ENOENT;
	*out = h->hint;
	return h->ret;
}

/* The step's clock readings in their order; past the last, the last again. */
static unsigned long long rp_clock(struct cos_clock *c, unsigned long long real)
{
	struct cos_replay *r = (struct cos_replay *)((char *)c - offsetof(struct cos_replay, clock));

	if (r->clock_off < r->end && !r->creating) {
		r->last_clock = rec_at(r, r->clock_off)->ts;
		r->clock_off = next_of(r, r->clock_off + rec_at(r, r->clock_off)->size,
				       COS_TREC_CLOCK);
	}
	return r->last_clock;
}

static const struct cos_backend replay_backend = {
	.peek = rp_peek,
	.consume = rp_consume,
	.publish = rp_publish,
	.task_status = rp_task_status,
	.prepare = rp_prepare,
	.shoot = rp_shoot,
	.shoot_status = rp_shoot_status,
	.wait = rp_wait,
	.affinity = rp_affinity,
	.hint = rp_hint,
};

COS_EXPORT int cos_sched_create_replay(struct cos_sched **sp, const struct cos_policy *policy,
				       const struct cos_sched_opts *opts, struct cos_replay *r)
{
	struct cos_sched_opts o = *opts;
	cpu_set_t enclave;
	int err;

	/* the recorded enclave: the policy places on the CPUs the recording has */
	CPU_ZERO(&enclave);
	for (unsigned int cpu = 0; cpu < r->hdr.nr_cpus && cpu < COS_TRACE_CPU_WORDS * 64; cpu++)
		if (r->hdr.enclave_cpus[cpu / 64] & (1ull << (cpu % 64)))
			CPU_SET(cpu, &enclave);
	o.lord.enclave = &enclave;
	o.lord.enclave_size = sizeof(enclave);
	o.lord.lord_cpu = r->hdr.lord_cpu;
	r->creating = true;
	/* learn() reads the BOOK records, and the affinity records that follow each */
	r->at = r->status_off = r->book_from;
	r->end = r->book_to;
	r->msg_off = r->len;
	cos_replay_clock(r, true);	/* learn() may read it: the first step's time */
	err = cos_sched_create_backend(sp, policy, &replay_backend, r, &o, r->hdr.max_tasks,
				       r->hdr.nr_cpus);
	cos_replay_clock(r, false);
	r->creating = false;
	if (err)
		return err;
	for (size_t off = r->book_from; off < r->book_to; off += rec_at(r, off)->size) {
		const struct cos_trace_status *b = (const void *)rec_at(r, off);

		if (b->h.type == COS_TREC_BOOK)
			cos_sched_replay_seed(*sp, b->slot, b->placed_at, b->runnable_at);
	}
	cos_sched_replay_tick(*sp, r->hdr.last_tick_ns);
	return 0;
}

COS_EXPORT void cos_replay_clock(struct cos_replay *r, bool on)
{
	if (on) {
		r->last_clock = r->nr_steps ? rec_at(r, r->steps[0])->ts : r->hdr.started_ns;
		r->clock.now = rp_clock;
		r->clock_off = r->len;	/* no reading to give back: the first step's time */
		cos_clock_hook = &r->clock;
	} else if (cos_clock_hook == &r->clock) {
		cos_clock_hook = NULL;
	}
}

/* ---------------------------------------------------------------- comparing */

static void print_place(FILE *f, const char *who, int cpu, unsigned int slot, unsigned int gen,
			int pid, unsigned long long slice_ns, unsigned int flags)
{
	fprintf(f, "    %s: task %u.%u", who, slot, gen);
	if (pid)
		fprintf(f, " (pid %d)", pid);
	fprintf(f, " on CPU %d", cpu);
	if (slice_ns)
		fprintf(f, ", slice %llu us", slice_ns / 1000);
	fprintf(f, "%s%s\n", flags & COS_SHOOT_F_LATCH ? ", latched" : "",
		flags & COS_SHOOT_F_URGENT ? ", urgent" : "");
}

/* Do the step's replayed placements equal the recorded ones, in their order? */
static bool step_same(const struct cos_replay *r, size_t *nr_recorded)
{
	size_t i = 0;
	bool same = true;

	*nr_recorded = 0;
	for (size_t off = r->at; off < r->end; off += rec_at(r, off)->size) {
		const struct cos_trace_place *p = (const void *)rec_at(r, off);

		if (p->h.type != COS_TREC_PLACE)
			continue;
		(*nr_recorded)++;
		if (i >= r->nr_placed || r->placed[i].cpu != (int)p->h.cpu ||
		    r->placed[i].slot != p->slot || r->placed[i].gen != p->gen ||
		    r->placed[i].slice_ns != p->slice_ns || r->placed[i].flags != p->flags)
			same = false;
		i++;
	}
	return same && i == r->nr_placed;
}

static void describe(const struct cos_replay *r, FILE *f, size_t step)
{
	const struct cos_trace_rec *st = rec_at(r, r->at);

	fprintf(f, "step %zu, %.3f ms into the recording:\n", step,
		(double)(st->ts - r->hdr.started_ns) / 1e6);
	for (size_t off = r->at; off < r->end; off += rec_at(r, off)->size) {
		const struct cos_trace_place *p = (const void *)rec_at(r, off);

		if (p->h.type == COS_TREC_PLACE)
			print_place(f, "recorded", (int)p->h.cpu, p->slot, p->gen, p->pid,
				    p->slice_ns, p->flags);
	}
	for (size_t i = 0; i < r->nr_placed; i++)
		print_place(f, "replayed", r->placed[i].cpu, r->placed[i].slot, r->placed[i].gen, 0,
			    r->placed[i].slice_ns, r->placed[i].flags);
	if (!r->nr_placed)
		fprintf(f, "    replayed: no placement\n");
}

COS_EXPORT int cos_replay_run(struct cos_replay *r, struct cos_sched *s, FILE *report,
			      struct cos_replay_result *res)
{
	memset(&r->res, 0, sizeof(r->res));
	/* steps lost before the first one kept */
	for (size_t off = next_in(r, sizeof(r->hdr), r->nr_steps ? r->steps[0] : r->len, COS_TREC_LOST);
	     off < (r->nr_steps ? r->steps[0] : r->len);
	     off = next_in(r, off + rec_at(r, off)->size, r->nr_steps ? r->steps[0] : r->len,
			   COS_TREC_LOST))
		r->res.lost_steps += ((const struct cos_trace_lost *)rec_at(r, off))->steps;
	for (size_t i = 0; i < r->nr_steps; i++) {
		size_t recorded;

		r->at = r->steps[i];
		r->end = i + 1 < r->nr_steps ? r->steps[i + 1] : r->len;
		/* a LOST record ends a step: it tells of steps dropped before the next */
		for (size_t off = next_of(r, r->at, COS_TREC_LOST); off < r->end;
		     off = next_of(r, off + rec_at(r, off)->size, COS_TREC_LOST)) {
			unsigned long long n = ((const struct cos_trace_lost *)rec_at(r, off))->steps;

			r->res.lost_steps += n;
			if (report)
				fprintf(report, "after step %zu the recording lost %llu steps: what "
					"follows may differ for that reason\n", i, n);
		}
		r->msg_off = next_of(r, r->at, COS_TREC_MSG);
		r->clock_off = next_of(r, r->at, COS_TREC_CLOCK);
		r->status_off = r->at;
		r->last_clock = rec_at(r, r->at)->ts;
		r->nr_placed = 0;
		cos_clock_hook = &r->clock;
		cos_sched_step(s);
		cos_clock_hook = NULL;
		r->res.steps++;
		r->res.replayed += r->nr_placed;
		if (step_same(r, &recorded)) {
			r->res.recorded += recorded;
			continue;
		}
		r->res.recorded += recorded;
		if (!r->res.differing++)
			r->res.first_differing = i;
		if (report && r->res.differing <= REPLAY_SHOWN)
			describe(r, report, i);
	}
	if (report && r->res.differing > REPLAY_SHOWN)
		fprintf(report, "... and %llu more differing steps\n",
			r->res.differing - REPLAY_SHOWN);
	if (res)
		*res = r->res;
	return r->res.differing ? 1 : 0;
}
