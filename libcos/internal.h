/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * internal.h — helpers shared by libcos's files; not installed.
 */
#ifndef COS_INTERNAL_H
#define COS_INTERNAL_H

#include "cos.h"

#define COS_EXPORT __attribute__((visibility("default")))

/* Record a detailed message for @err (negative errno) and return @err. */
int cos_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read a one-line sysfs file into @buf without the newline; -errno on failure. */
int cos_read_line(const char *path, char *buf, size_t len);

/* cos_sys_status() with every path below @root (for tests: a fake sysfs/dev tree). */
int cos_sys_status_at(const char *root, struct cos_sys_status *st);

#endif /* COS_INTERNAL_H */
