// SPDX-License-Identifier: GPL-2.0
/*
 * cosctl_module.c — `cosctl load` and `cosctl unload`: load cos.ko (the one installed for the
 * running kernel, or a file) with its parameters, and unload it.  See docs/operating.md,
 * "cosctl".
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <cos.h>

#include "cosctl.h"

const char load_usage[] =
	"usage: cosctl load [--path FILE] [PARAM=VALUE...] [--json]\n"
	"Load cos.ko: the one installed for the running kernel (libkmod, as modprobe), or FILE\n"
	"(as insmod), with module parameters such as max_tasks=8192.  A module loaded already\n"
	"is left as it is (its parameters are not changed).\n";

const char unload_usage[] =
	"usage: cosctl unload [--json]\n"
	"Unload cos.ko.  Fails while a lord, the shim or an open /dev/cos holds it.\n";

int cmd_load(int argc, char **argv, int json)
{
	char params[1024] = "";
	const char *path = NULL;
	size_t used = 0;
	int i, err;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--path") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strncmp(argv[i], "--path=", 7)) {
			path = argv[i] + 7;
		} else if (strchr(argv[i], '=') && argv[i][0] != '-') {
			int n = snprintf(params + used, sizeof(params) - used, "%s%s", used ? " " : "",
					 argv[i]);

			if (n < 0 || (size_t)n >= sizeof(params) - used) {
				fputs("cosctl load: parameters too long\n", stderr);
				return 2;
			}
			used += n;
		} else {
			fprintf(stderr, "cosctl load: unexpected '%s'\n%s", argv[i], load_usage);
			return 2;
		}
	}
	err = cos_module_load(path, used ? params : NULL);
	if (err < 0) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		return 1;
	}
	if (json)
		json_print(json_pack("{s:b,s:b}", "loaded", 1, "already", err > 0));
	else if (err)
		printf("cos.ko is loaded already%s\n", used ? " (parameters not applied)" : "");
	else
		printf("cos.ko loaded%s%s\n", path ? " from " : "", path ? path : "");
	return 0;
}

int cmd_unload(int argc, char **argv, int json)
{
	int err;

	if (argc) {
		fprintf(stderr, "cosctl unload: unexpected '%s'\n%s", argv[0], unload_usage);
		return 2;
	}
	err = cos_module_unload();
	if (err < 0) {
		fprintf(stderr, "cosctl: %s\n", cos_strerror(err));
		return 1;
	}
	if (json)
		json_print(json_pack("{s:b,s:b}", "loaded", 0, "already", err > 0));
	else
		printf(err ? "cos.ko is not loaded\n" : "cos.ko unloaded\n");
	return 0;
}
