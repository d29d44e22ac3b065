// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * trace.c — the decision records' ring (cos_trace.h): the lord thread writes a step's records
 * past the published head and publishes them at the step's end, or drops them (an empty step,
 * or one that did not fit).  The reader owns the tail; the lord reads it, bounded, once a step
 * and again when the ring looks full.
 *
 * Barriers: the lord's release store of head pairs with the reader's acquire load (the records
 * before it are written); the reader's release store of tail pairs with the lord's acquire load
 * (the bytes before it are read and may be overwritten).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

_Static_assert(sizeof(struct cos_trace_rec) == COS_TRACE_ALIGN, "record header");
_Static_assert(sizeof(struct cos_trace_msg) % COS_TRACE_ALIGN == 0, "msg");
_Static_assert(sizeof(struct cos_trace_place) % COS_TRACE_ALIGN == 0, "place");
_Static_assert(sizeof(struct cos_trace_shoot) % COS_TRACE_ALIGN == 0, "shoot");
_Static_assert(sizeof(struct cos_trace_shot) % COS_TRACE_ALIGN == 0, "shot");
_Static_assert(sizeof(struct cos_trace_step_end) % COS_TRACE_ALIGN == 0, "step_end");
_Static_assert(sizeof(struct cos_trace_status) % COS_TRACE_ALIGN == 0, "status");
_Static_assert(sizeof(struct cos_trace_affinity) % COS_TRACE_ALIGN == 0, "affinity");
_Static_assert(sizeof(struct cos_trace_hint) % COS_TRACE_ALIGN == 0, "hint");
_Static_assert(sizeof(struct cos_trace_lost) % COS_TRACE_ALIGN == 0, "lost");
_Static_assert(sizeof(struct cos_trace_header) % 64 == 0, "header");

#define TRACE_DEFAULT_BYTES	(16u << 20)
#define TRACE_MAX_BYTES		((size_t)COS_TRACE_MAX_MB << 20)

__thread struct cos_clock *cos_clock_hook __attribute__((tls_model("initial-exec")));
__thread unsigned int cos_clock_observing __attribute__((tls_model("initial-exec")));

COS_EXPORT void cos_trace_observing(bool on)
{
	if (on)
		cos_clock_observing++;
	else if (cos_clock_observing)
		cos_clock_observing--;
}

unsigned long long cos_clock_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The recorder's clock: each reading of the step is kept, for replay. */
static unsigned long long trace_clock(struct cos_clock *c, unsigned long long real)
{
	struct cos_trace *t = (struct cos_trace *)((char *)c - offsetof(struct cos_trace, clock));

	cos_trace_put(t, COS_TREC_CLOCK, 0, real);
	return real;
}

int cos_trace_new(struct cos_trace **tp, size_t bytes, int *fd_out)
{
	struct cos_trace *t;
	size_t size = TRACE_DEFAULT_BYTES;
	int fd, err;

	if (bytes > TRACE_MAX_BYTES)
		return cos_fail(-EINVAL, "a trace ring of %zu bytes: at most %zu", bytes,
				TRACE_MAX_BYTES);
	if (bytes) {
		for (size = 4096; size < bytes; size <<= 1)
			;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return cos_fail(-ENOMEM, "out of memory");
	fd = memfd_create("cos-trace", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		err = -errno;
		free(t);
		return cos_fail(err, "memfd_create: %s", strerror(-err));
	}
	t->map_size = sizeof(struct cos_trace_header) + size;
	/* sealed: a reader cannot shrink it under the lord (SIGBUS) */
	if (ftruncate(fd, (off_t)t->map_size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		goto fail;
	}
	t->hdr = mmap(NULL, t->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t->hdr == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	t->data = (unsigned char *)(t->hdr + 1);
	t->mask = size - 1;
	t->hdr->magic = COS_TRACE_MAGIC;
	t->hdr->version = COS_TRACE_VERSION;
	t->hdr->header_size = sizeof(struct cos_trace_header);
	t->hdr->data_size = (__u32)size;
	t->hdr->started_ns = cos_clock_real();
	t->clock.now = trace_clock;
	*tp = t;
	*fd_out = fd;
	return 0;
fail:
	close(fd);
	free(t);
	return cos_fail(err, "a trace ring of %zu bytes: %s", size, strerror(-err));
}

void cos_trace_free(struct cos_trace *t)
{
	if (!t)
		return;
	if (cos_clock_hook == &t->clock)
		cos_clock_hook = NULL;
	munmap(t->hdr, t->map_size);
	free(t);
}

/* Room for @size bytes at pos (with a PAD first to the ring's end if it would wrap)? */
static bool trace_room(struct cos_trace *t, __u64 size)
{
	__u64 ring = t->mask + 1, off = t->pos & t->mask;
	__u64 need = size + (off + size > ring ? ring - off : 0);

	if (t->pos - t->tail + need <= ring)
		return true;
	/* the reader may have moved on: read its tail again, bounded (it is the reader's word) */
	t->tail = __atomic_load_n(&t->hdr->tail, __ATOMIC_ACQUIRE);
	if (t->tail > t->pos || t->pos - t->tail > ring) {
		t->tail = t->pos - ring;	/* nonsense: the ring counts as full */
		return false;
	}
	return t->pos - t->tail + need <= ring;
}

void *cos_trace_put(struct cos_trace *t, unsigned int type, unsigned int cpu,
		    unsigned long long ts)
{
	size_t size = cos_trace_rec_size(type);
	__u64 ring = t->mask + 1, off;
	struct cos_trace_rec *r;

	if (t->full || !trace_room(t, size)) {
		t->full = true;
		return NULL;
	}
	off = t->pos & t->mask;
	if (off + size > ring) {	/* never wraps: PAD to the end, then from the start */
		r = (struct cos_trace_rec *)(t->data + off);
		*r = (struct cos_trace_rec){ .type = COS_TREC_PAD, .size = (__u16)(ring - off) };
		t->pos += ring - off;
		off = 0;
	}
	r = (struct cos_trace_rec *)(t->data + off);
	memset(r, 0, size);
	r->type = (__u16)type;
	r->size = (__u16)size;
	r->cpu = cpu;
	r->ts = ts;
	t->pos += size;
	return r;
}

void cos_trace_step_begin(struct cos_trace *t)
{
	t->pos = t->head;	/* the lord's own copy: the shared word is the reader's to scribble on */
	t->full = false;
	t->tail = __atomic_load_n(&t->hdr->tail, __ATOMIC_ACQUIRE);
	if (t->tail > t->pos || t->pos - t->tail > t->mask + 1)
		t->tail = t->pos - (t->mask + 1);
	if (t->lost) {
		struct cos_trace_lost *l = cos_trace_put(t, COS_TREC_LOST, 0, cos_clock_real());

		if (l)
			l->steps = t->lost;
	}
	cos_trace_put(t, COS_TREC_STEP, 0, cos_clock_real());
	cos_clock_hook = &t->clock;
}

void cos_trace_step_end(struct cos_trace *t, bool keep, unsigned int nr_msgs,
			unsigned int nr_placed)
{
	struct cos_trace_step_end *e;

	cos_clock_hook = NULL;
	if (!keep)
		return;
	e = cos_trace_put(t, COS_TREC_STEP_END, 0, cos_clock_real());
	if (e) {
		e->nr_msgs = nr_msgs;
		e->nr_placed = nr_placed;
	}
	if (t->full) {
		t->lost++;
		t->lost_total++;
		__atomic_store_n(&t->hdr->lost_steps, t->lost_total, __ATOMIC_RELAXED);
		return;
	}
	t->lost = 0;
	t->head = t->pos;
	__atomic_store_n(&t->hdr->head, t->pos, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- the reader */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Is @h a ring of this version that fits in @map_size bytes?  Its size in *@size: read once
 * (the lord could write it again; only this copy is used).
 */
static bool ring_ok(const struct cos_trace_header *h, size_t map_size, __u32 *size)
{
	__u32 ds;

	if (map_size < sizeof(*h))
		return false;
	ds = __atomic_load_n(&h->data_size, __ATOMIC_RELAXED);
	*size = ds;
	return h->magic == COS_TRACE_MAGIC && h->version == COS_TRACE_VERSION &&
	       h->header_size == sizeof(*h) && ds >= 4096 && !(ds & (ds - 1)) &&
	       map_size - sizeof(*h) >= ds;
}

COS_EXPORT int cos_trace_save_header(const struct cos_trace_header *ring, size_t map_size, int fd)
{
	struct cos_trace_header h;
	__u32 size;

	if (!ring_ok(ring, map_size, &size))
		return cos_fail(-EINVAL, "not a cos trace ring of version %u", COS_TRACE_VERSION);
	memcpy(&h, ring, sizeof(h));
	h.data_size = 0;
	h.head = h.tail = 0;
	h.lost_steps = 0;
	return write_all(fd, &h, sizeof(h));
}

COS_EXPORT long long cos_trace_drain(struct cos_trace_header *ring, size_t map_size, int fd)
{
	const unsigned char *data = (const unsigned char *)(ring + 1);
	__u64 head, tail, mask, run_from, run_len = 0;
	long long copied = 0;
	__u32 size;
	int err;

	if (!ring_ok(ring, map_size, &size))
		return cos_fail(-EINVAL, "not a cos trace ring of version %u", COS_TRACE_VERSION);
	mask = size - 1;
	head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	tail = __atomic_load_n(&ring->tail, __ATOMIC_RELAXED);	/* the reader's own word */
	if (head < tail || head - tail > mask + 1 || (head | tail) % COS_TRACE_ALIGN)
		return cos_fail(-EIO, "the trace ring's head %llu and tail %llu make no sense",
				(unsigned long long)head, (unsigned long long)tail);
	run_from = tail & mask;
	while (tail < head) {
		__u64 off = tail & mask;
		struct cos_trace_rec r;

		if (off != run_from + run_len) {	/* round the ring's end: one write each side */
			if ((err = write_all(fd, data + run_from, run_len)))
				return err;
			copied += (long long)run_len;
			run_from = off;
			run_len = 0;
		}
		memcpy(&r, data + off, sizeof(r));
		if (r.type == COS_TREC_PAD) {	/* the rest of the ring: the next is at 0 */
			tail += mask + 1 - off;
			continue;
		}
		if (r.size != cos_trace_rec_size(r.type) || !r.size || off + r.size > mask + 1 ||
		    r.size > head - tail)
			return cos_fail(-EIO, "a bad record in the trace ring (type %u, %u bytes)",
					r.type, r.size);
		run_len += r.size;
		tail += r.size;
	}
	if ((err = write_all(fd, data + run_from, run_len)))
		return err;
	copied += (long long)run_len;
	__atomic_store_n(&ring->tail, tail, __ATOMIC_RELEASE);
	return copied;
}
