// SPDX-License-Identifier: GPL-2.0
/*
 * cos-oci-hook.c — the OCI runtime hook: puts an annotated container under the running cos lord.
 * See docs/operating.md, "Containers: the OCI runtime hook".
 *
 * The runtime runs it at createRuntime with the container's state JSON on stdin: in the
 * runtime's namespaces (the pid is usable, /sys/fs/cgroup is the host's), after the container's
 * first process exists and before it runs the container's program, so every task of the
 * container is a COS task from its first instruction.  (prestart is deprecated.)
 *
 * The annotations (all values are strings):
 *   io.cos.policy=<name>    required to do anything: the lord policy the container wants.  A lord
 *                           must be running and its program be <name> or cos-<name>.
 *   io.cos.class=<N>        optional: the container's class for the lord (1..1000000), written as
 *                           the cgroup xattr trusted.cos.class (see libcos/hint_finder.c).
 *   io.cos.enclave=<cpus>   optional: a CPU list ("1-3,5") the container's tasks are limited to,
 *                           within the enclave's CPUs (default: all of them).  A COS task
 *                           belongs to the enclave of its CPUs, so this is what puts the
 *                           container under the lord it asked for when several run.
 * Without io.cos.policy the hook does nothing (another io.cos.* annotation alone is an error).
 *
 * What a container may have is the operator's to say, never the container's: the rules file
 * (--config, default COS_CONTAINERS_CONF; see docs/operating.md, "Which containers may join").
 * An enclave named there admits only the containers one of its rules matches (by the cgroup
 * the container's process is in, or by the pod namespace cos-nri passes as --pod-namespace:
 * both come from the runtime, not from the container's annotations), and a rule's best_class
 * is the most urgent io.cos.class it allows.  An enclave not named there admits any container
 * and gives none a class.  The best class allowed ("none" without one) goes on the container's
 * cgroup too (COS_HINT_CGROUP_BEST_XATTR): the lord caps the classes its tasks claim in their own
 * hint records with it.  No file: no rules; a file that cannot be read or checked refuses
 * every annotated container.  "fail_open": true lets an annotated container start outside cos
 * when no lord serves the policy it asked for (only then: a refusal by the rules stands).
 *
 * Safety: every field is checked before any task is touched (unknown io.cos.* keys, bad values,
 * a pid that is 1, ours, our parent's or dead, a process in the root cgroup or ours, the wrong
 * lord: an error, nothing changed).  Then the class xattr, and, task by task over the
 * container's process tree only, the affinity and SCHED_EXT.  No other program is run.
 * Exit status: 0 done (or nothing to do), 1 error (the runtime fails the container), 2 usage.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <syslog.h>
#include <unistd.h>

#include <jansson.h>

#include <cos.h>

#define STATE_MAX	(1 << 20)	/* bytes of state JSON accepted */
#define CONFIG_MAX	(1 << 20)	/* bytes of the rules file accepted */
#define COS_CONTAINERS_CONF	"/etc/cos/containers.json"
#define TREE_MAX	65536		/* tasks of a container's tree the hook handles */

static const char usage[] =
	"usage: cos-oci-hook [--config PATH] [--pod-namespace NS] [-h|--help] [-V|--version]\n"
	"\n"
	"An OCI runtime hook for the createRuntime stage: reads the container's state JSON on stdin\n"
	"and, if the container is annotated io.cos.policy=<name>, makes its tasks COS tasks\n"
	"(SCHED_EXT) of the running lord, which must be <name> or cos-<name>.\n"
	"\n"
	"annotations:\n"
	"  io.cos.policy=NAME   the lord policy the container wants (without it: nothing is done)\n"
	"  io.cos.class=N       the container's class for the lord, 1..1000000 (cos-shinjuku: 1 is\n"
	"                       the most urgent); tasks that publish their own hint keep theirs\n"
	"  io.cos.enclave=CPUS  limit the container's tasks to these CPUs, e.g. 1-3,5, of\n"
	"                       the lord's enclave (default: all of its CPUs)\n"
	"\n"
	"options (the runtime's, from the hook's configuration; never the container's):\n"
	"  --config PATH        the operator's rules: which containers may join which enclave,\n"
	"                       and the best class each may ask for (default " COS_CONTAINERS_CONF ";\n"
	"                       none there: any container may join, none may ask for a class)\n"
	"  --pod-namespace NS   the container's pod namespace, for the rules (cos-nri passes it)\n"
	"\n"
	"Exit status: 0 done or nothing to do, 1 error (nothing changed when the input was bad),\n"
	"2 bad usage.  Errors go to stderr and to syslog (crun drops a hook's stderr unless the\n"
	"annotation run.oci.hooks.stderr names a file).\n";

static const char *container_id = "";

/* An error, to stderr and to syslog: runtimes may drop a hook's stderr (crun does by default). */
static void __attribute__((format(printf, 1, 2))) err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cos-oci-hook: %s%s%s\n", container_id, *container_id ? ": " : "", msg);
	syslog(LOG_ERR, "%s%s%s", container_id, *container_id ? ": " : "", msg);
}

/* ---------------------------------------------------------------- the state and annotations */

struct request {
	pid_t pid;
	const char *policy;		/* NULL: not annotated */
	long class;			/* 0: none */
	cpu_set_t cpus;
	bool have_cpus;
	char enclave[64];		/* the enclave that serves it (check_lord()) */
};

static bool printable(const char *s, size_t max)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (n >= max || !isprint((unsigned char)*s))
			return false;
	return n > 0;
}

static int parse_class(const char *v, long *class)
{
	char *end;

	errno = 0;
	*class = strtol(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno || *class < 1 ||
	    *class > COS_HINT_CLASS_MAX) {
		err("io.cos.class '%s': not a number in 1..%d", v, COS_HINT_CLASS_MAX);
		return -1;
	}
	return 0;
}

/* A CPU list, in libcos's grammar (cos_parse_cpus()), not empty. */
static int parse_cpus(const char *v, cpu_set_t *set)
{
	if (!cos_parse_cpus(v, set, sizeof(*set)) && CPU_COUNT(set))
		return 0;
	err("io.cos.enclave '%s': not a CPU list such as 1-3,5 (CPUs below %d)", v, CPU_SETSIZE);
	return -1;
}

/* Check the state's shape and read what the hook needs; nothing is touched here. */
static int parse_state(json_t *st, struct request *rq)
{
	json_t *v, *ann, *pid;
	const char *key;

	if (!json_is_object(st)) {
		err("the state is not a JSON object");
		return -1;
	}
	v = json_object_get(st, "id");
	if (!json_is_string(v) || !printable(json_string_value(v), 1024)) {
		err("the state has no valid \"id\" (a printable string)");
		return -1;
	}
	container_id = json_string_value(v);
	v = json_object_get(st, "ociVersion");
	if (!json_is_string(v)) {
		err("the state has no \"ociVersion\" string");
		return -1;
	}
	ann = json_object_get(st, "annotations");
	if (ann && !json_is_object(ann)) {
		err("\"annotations\" is not an object");
		return -1;
	}
	json_object_foreach(ann, key, v) {
		const char *s;

		if (strncmp(key, "io.cos.", 7))
			continue;
		if (!json_is_string(v)) {
			err("annotation %s is not a string", key);
			return -1;
		}
		s = json_string_value(v);
		if (!strcmp(key, "io.cos.policy")) {
			if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
			    strlen(s) || !*s || strlen(s) > 32 || *s == '.' || *s == '-') {
				err("io.cos.policy '%s': not a policy name (letters, digits, _ . -; "
				    "at most 32)", s);
				return -1;
			}
			rq->policy = s;
		} else if (!strcmp(key, "io.cos.class")) {
			if (parse_class(s, &rq->class))
				return -1;
		} else if (!strcmp(key, "io.cos.enclave")) {
			if (parse_cpus(s, &rq->cpus))
				return -1;
			rq->have_cpus = true;
		} else {
			err("unknown annotation %s (known: io.cos.policy, io.cos.class, "
			    "io.cos.enclave)", key);
			return -1;
		}
	}
	if (!rq->policy && (rq->class || rq->have_cpus)) {
		err("io.cos.class or io.cos.enclave without io.cos.policy");
		return -1;
	}
	pid = json_object_get(st, "pid");
	if (!rq->policy) {
		/* nothing to do; a pid, if given, must still be a pid */
		if (pid && !json_is_integer(pid)) {
			err("\"pid\" is not an integer");
			return -1;
		}
		return 0;
	}
	if (!json_is_integer(pid) || json_integer_value(pid) <= 1 ||
	    json_integer_value(pid) > INT_MAX) {
		err("the state has no valid \"pid\" (an integer above 1)");
		return -1;
	}
	rq->pid = (pid_t)json_integer_value(pid);
	return 0;
}

/* ---------------------------------------------------------------- the container's process */

/* Is cgroup @a (a path) @b or one of @b's ancestors? */
static bool cgroup_covers(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (!strcmp(a, "/"))
		return true;
	return !strncmp(a, b, n) && (b[n] == 0 || b[n] == '/');
}

/* Check the container's process: alive, not us or our parent, in a cgroup of its own. */
static int check_process(pid_t pid, unsigned long long *start, char *cg, size_t len)
{
	char mine[PATH_MAX];

	if (pid == getpid() || pid == getppid()) {
		err("pid %d is the hook or the runtime, not a container", pid);
		return -1;
	}
	if (cos_proc_start_time(pid, start)) {
		err("the container's process %d does not exist", pid);
		return -1;
	}
	if (cos_proc_cgroup(pid, cg, len)) {
		err("cannot read the cgroup (v2) of process %d", pid);
		return -1;
	}
	if (cos_proc_cgroup(getpid(), mine, sizeof(mine)))
		strcpy(mine, "/");
	if (cgroup_covers(cg, mine)) {
		err("process %d is in cgroup %s, which holds the runtime too: not a container's",
		    pid, cg);
		return -1;
	}
	return 0;
}

/*
 * Confine @rq to @enclave's CPUs: all of them by default, else the io.cos.enclave list, which
 * must lie within them (a COS task belongs to the enclave of its CPUs: docs/design.md 6.2).
 */
static int enclave_cpus(struct request *rq, const struct cos_enclave_info *enclave)
{
	const unsigned int n = 64 * sizeof(enclave->cpus) / sizeof(enclave->cpus[0]);
	cpu_set_t mine;

	CPU_ZERO(&mine);
	for (unsigned int c = 0; c < n && c < CPU_SETSIZE; c++)
		if (enclave->cpus[c / 64] >> (c % 64) & 1)
			CPU_SET(c, &mine);
	if (!rq->have_cpus) {
		rq->cpus = mine;
		rq->have_cpus = true;
		return 0;
	}
	for (unsigned int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &rq->cpus) && !CPU_ISSET(c, &mine)) {
			err("io.cos.enclave: CPU %u is not one of enclave '%s''s CPUs", c,
			    enclave->name);
			return -1;
		}
	return 0;
}

/* check_lord(): no lord serves the policy asked for ("fail_open" may let the container be) */
#define NO_LORD	(-2)

/*
 * The running lord must be the policy asked for: an enclave registered under <name> or
 * cos-<name> (a lord's name is its program's unless it chose one); the container is confined
 * to its CPUs (enclave_cpus()).  A module that predates enclave names is asked for its one
 * lord, whose comm must match the same way.  Returns 0, -1 (an error) or NO_LORD.
 */
static int check_lord(const char *policy, struct request *rq)
{
	struct cos_enclave_info enclave;
	struct cos_info info = { 0 };
	char path[64], comm[64] = "";
	bool named;
	FILE *f;
	int fd, e;

	fd = cos_open();
	if (fd < 0) {
		err("asks for cos policy '%s', but /dev/cos cannot be opened: %s", policy,
		    cos_strerror(fd));
		return NO_LORD;
	}
	e = cos_get_info(fd, &info);
	named = !e && (info.features & COS_FEAT_ENCLAVE_NAMES);
	if (named)
		e = cos_find_enclave(fd, policy, &enclave);
	close(fd);
	if (named && e == -ENOENT) {
		err("asks for cos policy '%s': %s", policy, cos_strerror(e));
		return NO_LORD;
	}
	if (e) {
		err("cannot ask cos.ko about its lords: %s", cos_strerror(e));
		return -1;
	}
	if (!named && info.lord_pid <= 0) {
		err("asks for cos policy '%s', but no lord is running", policy);
		return NO_LORD;
	}
	/*
	 * Partial mode keeps its CPUs for the tasks of one cgroup, the partition: a container's
	 * tasks would have to leave the container's cgroup (and its limits) to reach them.
	 */
	if (cos_shim_partial() == 1) {
		err("asks for cos policy '%s', but the cos shim runs in partial mode, where only "
		    "tasks in %s reach the lord's CPUs: containers need full mode ('cosctl shim attach')",
		    policy, COS_PARTITION_PATH);
		return NO_LORD;
	}
	if (named) {
		snprintf(rq->enclave, sizeof(rq->enclave), "%.*s", (int)sizeof(enclave.name),
			 enclave.name);
		return enclave_cpus(rq, &enclave);
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", info.lord_pid);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = 0;
	if (strcmp(comm, policy) && !(!strncmp(comm, "cos-", 4) && !strcmp(comm + 4, policy))) {
		err("asks for cos policy '%s', but the running lord is '%s' (thread %d)", policy,
		    comm, info.lord_pid);
		return NO_LORD;
	}
	snprintf(rq->enclave, sizeof(rq->enclave), "%s", comm);
	return 0;
}

/* ---------------------------------------------------------------- the operator's rules */

/* A rule's "cgroup": an absolute cgroup v2 path, no "." or ".." step, no empty step. */
static bool cgroup_path_ok(const char *p)
{
	if (p[0] != '/' || strlen(p) >= PATH_MAX || !printable(p, PATH_MAX))
		return false;
	if (!strcmp(p, "/"))
		return true;
	for (const char *q = p; *q; ) {
		size_t n = strcspn(++q, "/");

		if (!n || (n == 1 && q[0] == '.') || (n == 2 && q[0] == '.' && q[1] == '.'))
			return false;
		q += n;
	}
	return true;
}

/* One rule of an enclave's list: checked whole, so that a typo never widens what it allows. */
static int check_rule(const char *path, const char *enclave, size_t i, json_t *r)
{
	const char *key;
	json_t *v;
	bool who = false;

	if (!json_is_object(r)) {
		err("%s: enclave '%s', rule %zu: not an object", path, enclave, i + 1);
		return -1;
	}
	json_object_foreach(r, key, v) {
		if (!strcmp(key, "cgroup")) {
			if (!json_is_string(v) || !cgroup_path_ok(json_string_value(v))) {
				err("%s: enclave '%s', rule %zu: \"cgroup\" is not a cgroup path such "
				    "as /machine.slice", path, enclave, i + 1);
				return -1;
			}
			who = true;
		} else if (!strcmp(key, "namespace")) {
			if (!json_is_string(v) || !printable(json_string_value(v), 253)) {
				err("%s: enclave '%s', rule %zu: \"namespace\" is not a pod namespace",
				    path, enclave, i + 1);
				return -1;
			}
			who = true;
		} else if (!strcmp(key, "best_class")) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > COS_HINT_CLASS_MAX) {
				err("%s: enclave '%s', rule %zu: \"best_class\" is not a number in 1..%d",
				    path, enclave, i + 1, COS_HINT_CLASS_MAX);
				return -1;
			}
		} else {
			err("%s: enclave '%s', rule %zu: unknown key \"%s\" (known: cgroup, namespace, "
			    "best_class)", path, enclave, i + 1, key);
			return -1;
		}
	}
	if (!who) {
		err("%s: enclave '%s', rule %zu: names no container (\"cgroup\" or \"namespace\")",
		    path, enclave, i + 1);
		return -1;
	}
	return 0;
}

/*
 * The rules file at @path, checked whole: {"fail_open": bool, "enclaves": {NAME: [rule...]}}.
 * A missing file is no rules (an empty object); any other failure is an error (NULL).
 */
static json_t *load_rules(const char *path)
{
	json_t *cfg, *v, *rules;
	json_error_t jerr;
	const char *key;
	struct stat sb;
	FILE *f;

	f = fopen(path, "re");
	if (!f && errno == ENOENT)
		return json_object();
	if (!f || fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode) || sb.st_size > CONFIG_MAX) {
		err("the rules file %s: %s", path, !f ? strerror(errno) :
		    "not a regular file of at most 1 MiB");
		if (f)
			fclose(f);
		return NULL;
	}
	cfg = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	if (!cfg || !json_is_object(cfg)) {
		err("the rules file %s: %s (line %d, column %d)", path,
		    cfg ? "not a JSON object" : jerr.text, cfg ? 1 : jerr.line, cfg ? 1 : jerr.column);
		json_decref(cfg);
		return NULL;
	}
	json_object_foreach(cfg, key, v) {
		if (!strcmp(key, "fail_open") && json_is_boolean(v))
			continue;
		if (strcmp(key, "enclaves") || !json_is_object(v)) {
			err("the rules file %s: \"%s\": %s", path, key,
			    strcmp(key, "fail_open") && strcmp(key, "enclaves") ?
			    "unknown key (known: fail_open, enclaves)" : "wrong type");
			json_decref(cfg);
			return NULL;
		}
		json_object_foreach(v, key, rules) {
			size_t i;
			json_t *r;

			if (!json_is_array(rules)) {
				err("the rules file %s: enclave '%s': not a list of rules", path, key);
				json_decref(cfg);
				return NULL;
			}
			json_array_foreach(rules, i, r)
				if (check_rule(path, key, i, r)) {
					json_decref(cfg);
					return NULL;
				}
		}
	}
	return cfg;
}

/*
 * May the container (cgroup @cg, pod namespace @ns or NULL) join rq->enclave with the class it
 * asked for?  The first rule of the enclave's list that matches decides: every key it has must
 * match (its cgroup is @cg or an ancestor; its namespace is @ns).  *@best: the most urgent
 * class the container may claim, 0 for none.
 */
static int check_rules(json_t *cfg, const char *path, const char *cg, const char *ns,
		       const struct request *rq, long *best_class)
{
	json_t *rules = json_object_get(json_object_get(cfg, "enclaves"), rq->enclave), *r;
	size_t i;

	*best_class = 0;
	if (!rules) {
		if (rq->class) {
			err("io.cos.class %ld: enclave '%s' gives no container a class (%s names no "
			    "rule for it)", rq->class, rq->enclave, path);
			return -1;
		}
		return 0;
	}
	json_array_foreach(rules, i, r) {
		json_t *rcg = json_object_get(r, "cgroup"), *rns = json_object_get(r, "namespace");
		json_int_t best = json_integer_value(json_object_get(r, "best_class"));

		if (rcg && !cgroup_covers(json_string_value(rcg), cg))
			continue;
		if (rns && (!ns || strcmp(json_string_value(rns), ns)))
			continue;
		if (rq->class && !best) {
			err("io.cos.class %ld: rule %zu of enclave '%s' in %s gives no class",
			    rq->class, i + 1, rq->enclave, path);
			return -1;
		}
		if (rq->class && rq->class < best) {
			err("io.cos.class %ld: rule %zu of enclave '%s' in %s allows no class more "
			    "urgent than %lld", rq->class, i + 1, rq->enclave, path, (long long)best);
			return -1;
		}
		*best_class = (long)best;
		return 0;
	}
	err("the container (cgroup %s%s%s) is not one that enclave '%s' admits: no rule in %s "
	    "matches it", cg, ns ? ", pod namespace " : "", ns ? ns : "", rq->enclave, path);
	return -1;
}

/* ---------------------------------------------------------------- acting on the tree */

struct tree {
	pid_t tids[TREE_MAX];
	size_t nr;
};

static bool tree_has(const struct tree *t, pid_t tid)
{
	for (size_t i = 0; i < t->nr; i++)
		if (t->tids[i] == tid)
			return true;
	return false;
}

static int tree_add(struct tree *t, pid_t tid)
{
	if (tree_has(t, tid))
		return 0;
	if (t->nr == TREE_MAX) {
		err("the container has more than %d tasks already", TREE_MAX);
		return -1;
	}
	t->tids[t->nr++] = tid;
	return 1;
}

/* Add process @pid's threads, and recurse into their children; returns tasks added, or -1. */
static int tree_walk(struct tree *t, pid_t pid, int depth)
{
	char path[96];
	struct dirent *d;
	DIR *dir;
	int added = 0, r;

	if (depth > 64)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;			/* gone meanwhile */
	while ((d = readdir(dir))) {
		pid_t tid = atoi(d->d_name), child;
		FILE *f;

		if (tid <= 0)
			continue;
		r = tree_add(t, tid);
		if (r < 0)
			goto out;
		added += r;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, tid);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fscanf(f, "%d", &child) == 1) {
			r = tree_walk(t, child, depth + 1);
			if (r < 0) {
				fclose(f);
				goto out;
			}
			added += r;
		}
		fclose(f);
	}
	r = added;
out:
	closedir(dir);
	return r;
}

/* One task of the container: its CPUs first (if asked), then SCHED_EXT, so the lord never sees
 * it with CPUs it is not to run on.  A task that exited meanwhile is no error. */
static int put_under_cos(pid_t tid, const struct request *rq)
{
	struct sched_param sp = { 0 };

	if (rq->have_cpus && sched_setaffinity(tid, sizeof(rq->cpus), &rq->cpus) &&
	    errno != ESRCH) {
		err("cannot limit task %d to the io.cos.enclave CPUs: %s%s", tid, strerror(errno),
		    errno == EINVAL ? " (offline, or outside its cpuset)" : "");
		return -1;
	}
	if (sched_setscheduler(tid, COS_SCHED_EXT, &sp) && errno != ESRCH) {
		err("cannot make task %d SCHED_EXT: %s%s", tid, strerror(errno),
		    errno == EINVAL ? " (does this kernel have sched_ext?)" : "");
		return -1;
	}
	return 0;
}

/*
 * Put every task of @pid's tree under cos, and walk again until a pass finds nothing new (a task
 * forked meanwhile inherits what its parent had by then, or is found by the next pass).
 */
static int put_tree_under_cos(struct tree *t, pid_t pid, const struct request *rq)
{
	size_t done = 0;

	for (int pass = 0; pass < 100; pass++) {
		int r = tree_walk(t, pid, 0);

		if (r < 0)
			return -1;
		for (; done < t->nr; done++)
			if (put_under_cos(t->tids[done], rq))
				return -1;
		if (r == 0)
			return 0;
	}
	err("the container's tasks keep forking; gave up");
	return -1;
}

/* Set xattr @name of cgroup @cg to @class ("none" for 0). */
static int set_class(const char *cg, const char *name, long class)
{
	char path[PATH_MAX + sizeof(COS_HINT_CGROUP_ROOT)], val[16];
	int n = class ? snprintf(val, sizeof(val), "%ld", class) : snprintf(val, sizeof(val), "none");

	snprintf(path, sizeof(path), "%s%s", COS_HINT_CGROUP_ROOT, cg);
	if (setxattr(path, name, val, n, 0)) {
		err("cannot set %s on %s: %s", name, path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "config", required_argument, NULL, 'c' },
		{ "pod-namespace", required_argument, NULL, 'n' },
		{ 0 },
	};
	const char *config = COS_CONTAINERS_CONF, *pod_ns = NULL;
	static struct tree tree;
	struct request rq = { 0 };
	unsigned long long start, start2;
	char cg[PATH_MAX], *buf;
	json_error_t jerr;
	size_t len = 0;
	json_t *st, *rules;
	long best;
	int c, r;

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		if (c == 'V') {
			cos_print_version(stdout, "cos-oci-hook");
			return 0;
		}
		if (c == 'c' && *optarg) {
			config = optarg;
			continue;
		}
		if (c == 'n' && printable(optarg, 253)) {
			pod_ns = optarg;
			continue;
		}
		if (c == 'c' || c == 'n') {
			fprintf(stderr, "cos-oci-hook: --%s '%s': %s\n", c == 'c' ? "config" :
				"pod-namespace", optarg, c == 'c' ? "an empty path" :
				"not a namespace name (printable, 1-253 characters)");
			return 2;
		}
		fputs("Try 'cos-oci-hook --help' for more.\n", stderr);	/* getopt named it */
		return 2;
	}
	if (optind < argc) {
		/* runtimes may pass args from the hook's config: none is ours, refuse to guess */
		fprintf(stderr, "cos-oci-hook: unexpected argument '%s'\n\n%s", argv[optind], usage);
		return 2;
	}

	openlog("cos-oci-hook", LOG_PID, LOG_DAEMON);
	buf = malloc(STATE_MAX + 1);
	if (!buf) {
		err("out of memory");
		return 1;
	}
	while (len <= STATE_MAX) {
		size_t n = fread(buf + len, 1, STATE_MAX + 1 - len, stdin);

		if (!n)
			break;
		len += n;
	}
	if (ferror(stdin) || len > STATE_MAX) {
		err(ferror(stdin) ? "cannot read the state from stdin" :
		    "the state on stdin is larger than %d bytes", STATE_MAX);
		return 1;
	}
	st = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!st) {
		err("malformed state JSON on stdin (line %d, column %d): %s", jerr.line,
		    jerr.column, jerr.text);
		return 1;
	}
	if (parse_state(st, &rq))
		return 1;
	if (!rq.policy)
		return 0;			/* not a cos container */

	rules = load_rules(config);
	if (!rules || check_process(rq.pid, &start, cg, sizeof(cg)))
		return 1;
	r = check_lord(rq.policy, &rq);
	if (r == NO_LORD && json_is_true(json_object_get(rules, "fail_open"))) {
		err("\"fail_open\" in %s: the container runs without cos", config);
		return 0;
	}
	if (r || check_rules(rules, config, cg, pod_ns, &rq, &best))
		return 1;
	/* the cap first: the lord reads both when it first sees a task of the container */
	if (set_class(cg, COS_HINT_CGROUP_BEST_XATTR, best) ||
	    (rq.class && set_class(cg, COS_HINT_CGROUP_XATTR, rq.class)))
		return 1;
	if (put_tree_under_cos(&tree, rq.pid, &rq))
		return 1;
	/* the pid was the container's all along (not reused by a stranger after it died)? */
	if (cos_proc_start_time(rq.pid, &start2) || start2 != start) {
		err("the container's process %d exited while the hook ran", rq.pid);
		return 1;
	}
	json_decref(rules);
	json_decref(st);
	free(buf);
	return 0;
}
