// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * error.c — libcos error messages: the last failure's details, per thread.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local int last_err;
static _Thread_local char last_msg[512];
static _Thread_local char generic[128];

int cos_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	last_err = err < 0 ? -err : err;
	return err;
}

COS_EXPORT const char *cos_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err && err == last_err && last_msg[0])
		return last_msg;
	snprintf(generic, sizeof(generic), "%s", strerror(err));
	return generic;
}
