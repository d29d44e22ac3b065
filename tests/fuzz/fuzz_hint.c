// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * fuzz_hint.c — libFuzzer target: the lord's hint reader (libcos/hint_cache.c) against a hint
 * table an app wrote, as any user may write one (docs/testing.md, "Fuzzing").
 *
 * Each input is a table and what its app does to it while the lord reads:
 *   bytes 0-23   XORed onto a valid header (an all-zero input is a good table)
 *   byte 24      bit 0: the table's size is off by a page; bit 1: no seals; bit 2: the records
 *                name the reading thread; bit 3: page 1 is the reader's record, whole
 *   bytes 25-    up to 4 records of 64 bytes (pages 1-4), then rewrites of 6 bytes each
 *                (page 0-4, offset 0-63 in it, a 32-bit value) that a second thread applies,
 *                over and over, while the lord's thread reads
 * The table is a real sealed memfd of this process, found the way a lord finds one (its finder
 * thread, /proc/<pid>/fd).  What must hold: no crash, no hang (libFuzzer's -timeout), and a
 * read answers 0 with the reader's own record, or an error a lord handles.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define RECORDS		4
#define REWRITE_ROUNDS	64

struct rewrite {
	uint8_t page, offset;
	uint32_t value;
};

struct writer {
	char *map;			/* pages 0..RECORDS, read-write */
	size_t ps;
	const struct rewrite *rw;
	size_t n;
	volatile int stop;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	for (int round = 0; round < REWRITE_ROUNDS && !w->stop; round++)
		for (size_t i = 0; i < w->n; i++) {
			char *at = w->map + (w->rw[i].page % (RECORDS + 1)) * w->ps + w->rw[i].offset % 61;

			__atomic_store_n((uint32_t *)(void *)((uintptr_t)at & ~(uintptr_t)3), w->rw[i].value,
					 __ATOMIC_RELAXED);
		}
	return NULL;
}

static void check_read(int err, const struct cos_hint *out, int tid)
{
	if (err == 0 && out->tid != tid)
		abort();	/* a record that is not the reader's */
	if (err && err != -ENOENT && err != -EAGAIN && err != -ESRCH && err != -ENOSPC)
		abort();	/* an answer a lord does not expect */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned int good[6] = {0x48534f43, 0x31544e49, 1, 0, 1, COS_HINT_PAGES};
	size_t ps = sysconf(_SC_PAGESIZE), table = (size_t)COS_HINT_PAGES * ps;
	unsigned int header[6];
	struct rewrite rw[256];
	struct writer w = {.ps = ps, .rw = rw};
	struct cos_hint_cache *c;
	struct cos_hint out;
	uint8_t flags = size > 24 ? data[24] : 0;
	int tid = gettid(), fd;
	pthread_t th;

	memcpy(header, good, sizeof(header));
	header[3] = ps;
	for (size_t i = 0; i < 24 && i < size; i++)
		((uint8_t *)header)[i] ^= data[i];
	fd = memfd_create(COS_HINT_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (flags & 1) ? table + ps : table))
		abort();
	if (!(flags & 2) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		abort();
	w.map = mmap(NULL, (RECORDS + 1) * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w.map == MAP_FAILED)
		abort();
	memcpy(w.map, header, sizeof(header));
	data += size > 25 ? 25 : size;
	size -= size > 25 ? 25 : size;
	for (int r = 1; r <= RECORDS && size; r++) {
		size_t n = size < 64 ? size : 64;
		struct cos_hint *h = (struct cos_hint *)(void *)(w.map + r * ps);

		memcpy(h, data, n);
		if (flags & 4)
			h->tid = tid;
		data += n;
		size -= n;
	}
	if (flags & 8) {
		struct cos_hint *h = (struct cos_hint *)(void *)(w.map + ps);

		memset(h, 0, sizeof(*h));
		h->tid = tid;
		h->hint_class = 3;
	}
	for (; size >= 6 && w.n < sizeof(rw) / sizeof(rw[0]); data += 6, size -= 6) {
		rw[w.n].page = data[0];
		rw[w.n].offset = data[1];
		memcpy(&rw[w.n].value, data + 2, 4);
		w.n++;
	}

	if (cos_hint_cache_new(&c, 4, NULL))
		abort();
	check_read(cos_hint_cache_read(c, 0, tid, &out, 1), &out, tid);
	cos_hint_cache_settle(c);
	if (pthread_create(&th, NULL, writer_main, &w))
		abort();
	for (int i = 0; i < 32; i++) {
		check_read(cos_hint_cache_read(c, i & 1, tid, &out, 1 + i * 10000000ull), &out, tid);
		if (i == 16)
			cos_hint_cache_settle(c);
	}
	w.stop = 1;
	pthread_join(th, NULL);
	cos_hint_cache_settle(c);
	check_read(cos_hint_cache_read(c, 2, tid, &out, 1000000000ull), &out, tid);
	cos_hint_cache_forget(c, 0);
	cos_hint_cache_free(c);
	munmap(w.map, (RECORDS + 1) * ps);
	close(fd);
	return 0;
}
