// hand_table.h — a hint table made by hand, as any app may make one without libcos: a sealed
// memfd named like libcos's tables, of @pages_total pages, with a good header.  For the tests of
// what a lord does with what an app writes (tests/unit/test_hint.cpp, test_hostile.cpp).
#pragma once

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

extern "C" {
#include <cos.h>
}

/*
 * Make the table, its header saying @pages are in use; map its first @map_pages read-write.
 * The header's 32-bit words: 0-1 magic, 2 version, 3 page_size, 4 pages, 5 max_pages.
 * Return: the mapping, or nullptr.
 */
inline char *hand_table(size_t pages_total, size_t map_pages, unsigned int pages)
{
	long ps = sysconf(_SC_PAGESIZE);
	int fd = memfd_create(COS_HINT_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)(pages_total * ps)) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		return nullptr;
	char *m = (char *)mmap(nullptr, map_pages * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return nullptr;
	unsigned int hdr[6] = {0};
	memcpy(hdr, "COSHINT1", 8);
	hdr[2] = 1, hdr[3] = (unsigned int)ps, hdr[4] = pages, hdr[5] = COS_HINT_PAGES;
	memcpy(m, hdr, sizeof(hdr));
	return m;	/* the fd stays open: it is how the lord finds the table */
}
