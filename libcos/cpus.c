// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * cpus.c — CPU lists, the one grammar every cos program accepts ("0-3,6,8-9", the kernel's
 * cpulist format without strides), and the CPUs online now.  Used by the policy programs'
 * --cpus, the OCI hook's io.cos.cpus and libcos's own explanation of a refused lord.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

COS_EXPORT int cos_parse_cpus(const char *list, void *set, size_t setsize)
{
	const char *p = list;

	CPU_ZERO_S(setsize, (cpu_set_t *)set);
	if (!list || !*list)
		return -EINVAL;
	while (*p) {
		unsigned long a, b;
		char *end;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		a = b = strtoul(p, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return -EINVAL;
			b = strtoul(end + 1, &end, 10);
		}
		if (a > b || b >= setsize * 8)
			return -EINVAL;
		for (unsigned long c = a; c <= b; c++)
			CPU_SET_S(c, setsize, (cpu_set_t *)set);
		p = end;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -EINVAL;	/* a stray character, or a trailing comma */
	}
	return 0;
}

COS_EXPORT int cos_format_cpus(const void *set, size_t setsize, char *buf, size_t len)
{
	const cpu_set_t *s = set;
	int nbits = setsize * 8, c = 0;
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	while (c < nbits) {
		int a;

		if (!CPU_ISSET_S(c, setsize, s)) {
			c++;
			continue;
		}
		for (a = c; c + 1 < nbits && CPU_ISSET_S(c + 1, setsize, s); c++)
			;
		char *at = n < len ? buf + n : NULL;	/* past the end: count, write nothing */
		size_t room = n < len ? len - n : 0;

		n += a == c ? snprintf(at, room, "%s%d", n ? "," : "", a) :
			      snprintf(at, room, "%s%d-%d", n ? "," : "", a, c);
		c++;
	}
	return n < len ? 0 : -ENOSPC;
}

COS_EXPORT int cos_online_cpus(void *set, size_t setsize)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char buf[4096], *p;

	CPU_ZERO_S(setsize, (cpu_set_t *)set);
	if (!f)
		return -errno;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p)
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return cos_parse_cpus(buf, set, setsize);
}
