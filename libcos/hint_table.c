// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * hint_table.c — the hint table's format, as both sides read it: its header, and the checks a
 * table must pass before it is mapped.  The app runs them on a table it inherited across exec
 * (hint_app.c), the lord's finder thread on an app's (hint_finder.c), and the lord's thread
 * copies a mapped table's header to see whether it changed (hint_cache.c).  See docs/abi.md,
 * "App hint pages".
 *
 * One table per process: a memfd named COS_HINT_MEMFD_NAME, sealed at its full size
 * (COS_HINT_PAGES pages, exactly) so that it cannot shrink under a reader.  Page 0 is a header
 * (struct hint_header); each other page holds one thread's struct cos_hint.
 *
 * Ordering: the writer makes seq odd, fences (release), writes the fields and makes seq even
 * with a release store; the reader loads seq (acquire), copies, fences (acquire), reloads seq and
 * retries if it changed or was odd — the contract of the kernel's status table.
 *
 * Hostile input: a table is memory the app (any user: a COS task needs no privilege) may keep
 * writing after it was checked.  What is checked is a copy, taken once (cos_hint_header_copy()),
 * and only a regular, sealed file of the exact size is mapped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hint_internal.h"

/* Is @hd (a copy, not the shared page) the header of a table for pages of @ps bytes? */
bool cos_hint_header_ok(const struct hint_header *hd, size_t ps)
{
	return !memcmp(hd->magic, HINT_MAGIC, sizeof(hd->magic)) && hd->version == 1 &&
	       hd->page_size == ps && hd->max_pages == COS_HINT_PAGES;
}

/* A copy of the header at @base, taken once: what is checked is what is used. */
void cos_hint_header_copy(struct hint_header *hd, const char *base)
{
	memcpy(hd, base, sizeof(*hd));
	__atomic_signal_fence(__ATOMIC_ACQUIRE);	/* no load of @base after this is merged into it */
	hd->pages = __atomic_load_n(&((const struct hint_header *)base)->pages, __ATOMIC_ACQUIRE);
}

/*
 * Is @fd a hint table we may map: a regular file (a memfd: it has seals), sealed against
 * shrinking (else it could shrink under a reader: SIGBUS), of exactly COS_HINT_PAGES pages,
 * with a good header?  Its size in @size.  Both sides use it: the app on a table it inherited,
 * the lord on an app's.
 */
bool cos_hint_table_check(int fd, size_t *size)
{
	size_t ps = sysconf(_SC_PAGESIZE), want = (size_t)COS_HINT_PAGES * ps;
	struct hint_header hd;
	struct stat stt;
	const char *p;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &stt) || !S_ISREG(stt.st_mode) ||
	    stt.st_size != (off_t)want)
		return false;
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return false;
	cos_hint_header_copy(&hd, p);
	munmap((void *)p, ps);
	*size = want;
	return cos_hint_header_ok(&hd, ps);
}

/*
 * Open (@oflags) the first good hint table among the fds listed in @fd_dir (/proc/<pid>/fd): the
 * memfd named COS_HINT_MEMFD_NAME.  Its number there in @found, its size in @size.
 * Returns the new fd (O_CLOEXEC) or -ENOENT.
 */
int cos_hint_table_find(const char *fd_dir, int oflags, int *found, size_t *size)
{
	static const char want[] = "/memfd:" COS_HINT_MEMFD_NAME " (deleted)";
	char path[64 + sizeof(((struct dirent *)0)->d_name)], target[128];
	struct dirent *de;
	struct stat st;
	int fd = -1;
	DIR *d = opendir(fd_dir);

	if (!d)
		return -ENOENT;
	while (fd < 0 && (de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", fd_dir, de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, want))
			continue;
		/*
		 * Any file can be named so (a FIFO at "/memfd:cos-hints" in a container's root):
		 * only a regular one is opened, and without blocking (a FIFO swapped in after the
		 * stat() opens at once, and cos_hint_table_check() refuses it).
		 */
		if (stat(path, &st) || !S_ISREG(st.st_mode) ||
		    (fd = open(path, oflags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
			continue;
		if (!cos_hint_table_check(fd, size)) {
			close(fd);
			fd = -1;
			continue;
		}
		*found = atoi(de->d_name);
	}
	closedir(d);
	return fd < 0 ? -ENOENT : fd;
}
