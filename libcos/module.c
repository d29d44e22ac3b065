// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * module.c — load and unload cos.ko through libkmod (what modprobe and rmmod use), with messages
 * that say what to do when the module is not installed for the running kernel or is in use.
 */
#include <errno.h>
#include <stdarg.h>
#include <libkmod.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * libkmod logs every failed call to stderr, and an unload retries EAGAIN, one line per try.
 * Our own message says what failed and what to do: keep libkmod quiet.
 */
static void module_log_quiet(void *data, int priority, const char *file, int line,
			     const char *fn, const char *format, va_list args)
{
	(void)data, (void)priority, (void)file, (void)line, (void)fn, (void)format, (void)args;
}

static int module_ctx(struct kmod_ctx **ctx)
{
	*ctx = kmod_new(NULL, NULL);
	if (!*ctx)
		return cos_fail(-ENOMEM, "libkmod: cannot create a context");
	kmod_set_log_fn(*ctx, module_log_quiet, NULL);
	return 0;
}

static bool module_is_loaded(void)
{
	return access("/sys/module/cos", F_OK) == 0;
}

COS_EXPORT int cos_module_load(const char *path, const char *params)
{
	struct kmod_list *list = NULL;
	struct kmod_module *mod = NULL;
	struct kmod_ctx *ctx;
	struct utsname u;
	int err;

	if (module_is_loaded())
		return 1;
	err = module_ctx(&ctx);
	if (err)
		return err;
	uname(&u);
	if (path) {
		err = kmod_module_new_from_path(ctx, path, &mod);
		if (err) {
			err = cos_fail(err, "cannot use %s as cos.ko: %s", path, strerror(-err));
			goto out;
		}
		err = kmod_module_insert_module(mod, 0, params);
	} else {
		err = kmod_module_new_from_lookup(ctx, "cos", &list);
		if (err || !list) {
			err = cos_fail(-ENOENT, "cos.ko is not installed for the running kernel %s "
				       "(nothing named cos in /lib/modules/%s): install it with "
				       "'dkms install cos/<version>' (docs/operating.md), or name the "
				       "file, e.g. 'cosctl load --path build/<kernel>/kmod/cos.ko'", u.release, u.release);
			goto out;
		}
		mod = kmod_module_ref(kmod_module_get_module(list));
		err = kmod_module_probe_insert_module(mod, 0, params, NULL, NULL, NULL);
	}
	if (err == -EEXIST) {
		err = 1;	/* raced with another loader: it is there, which is what was asked */
	} else if (err == -ENOEXEC || err == -EINVAL) {
		err = cos_fail(err, "the kernel refused %s: %s (a bad parameter, or built for another "
			       "kernel than %s? see 'dmesg')", path ? path : "cos.ko", strerror(-err),
			       u.release);
	} else if (err == -ENOENT && path) {
		err = cos_fail(err, "the kernel refused %s: %s (a module without BTF? see 'dmesg')",
			       path, strerror(-err));
	} else if (err < 0) {
		err = cos_fail(err, "loading %s failed: %s%s", path ? path : "cos.ko", strerror(-err),
			       err == -EPERM ? " (it needs root: CAP_SYS_MODULE)" : " (see 'dmesg')");
	}
out:
	kmod_module_unref(mod);
	kmod_module_unref_list(list);
	kmod_unref(ctx);
	return err;
}

COS_EXPORT int cos_module_unload(void)
{
	struct kmod_module *mod = NULL;
	struct kmod_ctx *ctx;
	int err, i;

	if (!module_is_loaded())
		return 1;
	err = module_ctx(&ctx);
	if (err)
		return err;
	err = kmod_module_new_from_name(ctx, "cos", &mod);
	if (err) {
		err = cos_fail(err, "libkmod: %s", strerror(-err));
		goto out;
	}
	/*
	 * Right after the shim detaches, its BPF objects (which hold the module) are freed after
	 * an RCU grace period: retry EAGAIN/EBUSY for up to 5 s before calling the module in use.
	 */
	for (i = 0; i < 50; i++) {
		err = kmod_module_remove_module(mod, 0);
		if (err != -EAGAIN && err != -EBUSY)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	if (err == -EAGAIN || err == -EBUSY)
		err = cos_fail(-EBUSY, "cos.ko is in use: stop the lords, detach the shim "
			       "(cosctl shim detach) and close /dev/cos, then retry");
	else if (err == -ENOENT)
		err = 1;	/* gone meanwhile */
	else if (err < 0)
		err = cos_fail(err, "unloading cos.ko failed: %s%s", strerror(-err),
			       err == -EPERM ? " (it needs root: CAP_SYS_MODULE)" : "");
out:
	kmod_module_unref(mod);
	kmod_unref(ctx);
	return err;
}
