/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * cos.h — the libcos API: open /dev/cos, query the module, attach and detach the BPF shim, read
 * the system's cos/sched_ext status.
 *
 * Conventions.  Every call returns 0 (or a non-negative value) on success and a negative errno
 * on failure.  cos_strerror() turns that errno into a sentence that says what to do about it;
 * for the most recent failure of the calling thread it carries the details (which file, what the
 * kernel said).  No call prints anything.  The ABI types come from <linux/cos.h>.
 *
 * An installed public header: see docs/writing-a-policy.md.
 */
#ifndef COS_H
#define COS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <linux/cos.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The scheduling policy of COS tasks (SCHED_EXT; older libc headers lack the name). */
#define COS_SCHED_EXT 7

/* Where a persistent shim attachment (cosctl shim attach) is pinned. */
#define COS_SHIM_PIN_PATH "/sys/fs/bpf/cos_shim"

/* Partial mode's cpuset partition: the cgroup whose CPUs only COS tasks use (docs/design.md). */
#define COS_PARTITION_PATH "/sys/fs/cgroup/cos"
/* Where each lord serves its statistics (policies/lord_stats.h): NAME.stats, NAME its enclave's */
#define COS_STATS_DIR "/run/cos"

/**
 * cos_strerror() - explain an error returned by libcos
 * @err: a negative errno returned by a libcos call (the sign is ignored)
 *
 * Context: any thread.  Return: a message valid until the thread's next libcos call.
 */
const char *cos_strerror(int err);

/**
 * cos_open() - open /dev/cos
 *
 * Return: a file descriptor (O_CLOEXEC), -ENODEV if cos.ko is not loaded, -ENOENT if the device
 * node is missing, -EACCES/-EPERM without root (the device is 0600 and needs CAP_SYS_NICE).
 */
int cos_open(void);

/**
 * cos_get_info() - ask the module for its ABI version, features and CPU id range
 * @fd: from cos_open()
 * @info: filled on success
 *
 * Return: 0, or the ioctl's negative errno.
 */
int cos_get_info(int fd, struct cos_info *info);

/**
 * cos_get_tasks() - list the COS tasks the module knows (any state but FREE), in slot order
 * @fd: from cos_open()
 * @tasks: set to a malloc()ed array the caller frees (NULL when there is none)
 * @nr: set to its length
 *
 * Batches of COS_IOC_GET_TASKS: each entry is consistent, the list as a whole is not a snapshot.
 * Context: any thread; needs no lord.
 * Return: 0, -EOPNOTSUPP if the module predates the call, -ENOMEM, or the ioctl's negative errno.
 */
int cos_get_tasks(int fd, struct cos_task_info **tasks, size_t *nr);

/**
 * cos_get_enclaves() - list the registered enclaves (one snapshot)
 * @fd: from cos_open()
 * @enclaves: set to a malloc()ed array the caller frees (NULL when there is none)
 * @nr: set to its length
 *
 * Context: any thread; needs no lord and no privilege beyond opening /dev/cos.
 * Return: 0, -EOPNOTSUPP if the module predates COS_IOC_GET_ENCLAVES, -ENOMEM, or the ioctl's
 * negative errno.
 */
int cos_get_enclaves(int fd, struct cos_enclave_info **enclaves, size_t *nr);

/**
 * cos_find_enclave() - the registered enclave named @name
 * @fd: from cos_open()
 * @name: compared with the registered name, and with it less a leading "cos-"
 * @info: filled when found
 *
 * Return: 0; -ENOENT if none matches (the message lists the registered names); as
 * cos_get_enclaves() otherwise.
 */
int cos_find_enclave(int fd, const char *name, struct cos_enclave_info *info);

/**
 * cos_get_groups() - list the bandwidth groups (cgroups with a cpu controller) the shim knows,
 * in cgroup id order, with their cpu.max, cpu.weight, usage and throttling
 * @fd: from cos_open()
 * @groups: set to a malloc()ed array the caller frees (NULL when there is none)
 * @nr: set to its length
 *
 * Empty while no shim is attached.  Context: any thread; needs no lord.
 * Return: 0, -EOPNOTSUPP if the module predates the call, -ENOMEM, or the ioctl's negative errno.
 */
int cos_get_groups(int fd, struct cos_group_info **groups, size_t *nr);

/**
 * cos_group_set_rate() - cap a cgroup at @rate_pct % of one CPU (COS's rate groups), through
 * its cgroup v2 cpu.max: one mechanism for cos and for container runtimes
 * @cgroup: a cgroup v2 directory with the cpu controller enabled (by its parent's
 *	cgroup.subtree_control)
 * @rate_pct: the rate, > 0 and at most 100 x the online CPUs; 0 removes the cap ("max")
 * @period_us: the period, 1000..1000000 (0: 100000, the kernel's default)
 *
 * Writes "QUOTA PERIOD" to cpu.max, QUOTA = @rate_pct x @period_us / 100 (at least 1000 us, the
 * kernel's least quota).  Context: any thread; needs write access to cpu.max (root).
 * Return: 0; -EINVAL (a rate or period out of range, a quota under 1 ms), -ENOTDIR (@cgroup is
 * no cgroup v2 directory), -EOPNOTSUPP (no cpu controller there), or the write's negative errno.
 */
int cos_group_set_rate(const char *cgroup, double rate_pct, unsigned int period_us);

/**
 * cos_group_paths() - the cgroupfs paths of @groups (a cgroup's id is its directory's inode)
 * @groups: sorted by id, as cos_get_groups() returns them
 * @n: how many
 * @paths: set to @n malloc()ed paths ("/sys/fs/cgroup/..."), NULL for a cgroup gone since; the
 *	caller frees each
 *
 * One walk of /sys/fs/cgroup for them all.  Return: 0, or -ENOMEM (every @paths[i] NULL then).
 */
int cos_group_paths(const struct cos_group_info *groups, size_t n, char **paths);

/**
 * cos_module_load() - load cos.ko (libkmod), like modprobe or insmod
 * @path: a cos.ko file to load (insmod), or NULL for the one installed for the running kernel
 *	(modprobe: /lib/modules/$(uname -r), e.g. from DKMS)
 * @params: module parameters ("max_tasks=8192"), or NULL
 *
 * Context: needs CAP_SYS_MODULE.
 * Return: 0 if it was loaded now, 1 if it was loaded already (then @params were not applied),
 * -ENOENT if it is not installed for the running kernel (the message says how to install it),
 * -ENOEXEC/-EINVAL if the kernel refused it (built for another kernel), -EPERM, other negative
 * errnos from libkmod.
 */
int cos_module_load(const char *path, const char *params);

/**
 * cos_module_unload() - unload cos.ko (libkmod), like rmmod
 *
 * Retries for up to 5 s while the module is busy only because a detached shim is being freed.
 * Context: needs CAP_SYS_MODULE; may sleep.
 * Return: 0 if it was unloaded now, 1 if it was not loaded, -EBUSY if something holds it (a lord,
 * an attached shim, an open /dev/cos), -EPERM, other negative errnos from libkmod.
 */
int cos_module_unload(void);

/** cos_task_state_name() - "FREE", "BLOCKED", ... for enum cos_task_state, "?" if unknown */
const char *cos_task_state_name(unsigned int state);

/** struct cos_shim_opts - options of cos_shim_attach(); zero-initialise, set @size */
struct cos_shim_opts {
	size_t size;			/* sizeof(struct cos_shim_opts) */
	unsigned long long slice_ns;	/* fair-policy slice; 0 = default (5 ms) */
	unsigned int abi_expected;	/* 0 = COS_ABI_VERSION; others only to test the refusal */
	unsigned int flags;		/* COS_SHIM_F_* */
	/*
	 * Partial mode's CPUs (COS_SHIM_F_PARTIAL; a CPU bitmap of @partition_size bytes, as
	 * cos_parse_cpus() makes): the cpuset partition COS_PARTITION_PATH holds them, so only COS
	 * tasks (and per-CPU kernel threads) run there.  Required in partial mode.
	 */
	const void *partition;
	size_t partition_size;
};

/*
 * Partial mode: only COS tasks run on sched_ext (SCX_OPS_SWITCH_PARTIAL); every other task stays
 * on the kernel's fair scheduler at its own speed.  COS tasks live in the cpuset partition and
 * run only on its CPUs; the lord's enclave is within it.  See docs/design.md, "Full and partial
 * mode".
 */
#define COS_SHIM_F_PARTIAL	(1U << 0)

struct cos_shim;

/**
 * cos_shim_attach() - load the embedded BPF shim and make it the system's sched_ext scheduler
 * @shimp: set to the attachment on success
 * @opts: NULL for defaults (full mode)
 *
 * The attachment lasts until cos_shim_detach() or until the process exits, unless pinned.  In
 * partial mode (COS_SHIM_F_PARTIAL) it first sets up the cpuset partition of @opts->partition
 * (reusing one with the same CPUs, replacing another); cos_shim_detach() and
 * cos_shim_detach_pinned() remove it.  A full-mode attach removes a partition left behind (by a
 * partial-mode attachment whose process was killed).
 *
 * Context: needs CAP_BPF + CAP_SYS_ADMIN (root) and cos.ko loaded.
 * Return: 0; -EOPNOTSUPP without sched_ext (or, in partial mode, without cgroup v2's cpuset);
 * -ENODEV without cos.ko; -EBUSY if another sched_ext scheduler is attached; -EPROTO if the
 * module's ABI differs from the shim's; -EINVAL for partial mode without CPUs, with CPUs that
 * are offline or with every online CPU (the kernel's fair tasks need one); -EPERM without
 * privilege; other negative errnos from libbpf or cgroupfs (see cos_strerror()).
 */
int cos_shim_attach(struct cos_shim **shimp, const struct cos_shim_opts *opts);

/**
 * cos_shim_pin() - keep the attachment after this process exits
 * @shim: from cos_shim_attach()
 * @path: a bpffs path; NULL for COS_SHIM_PIN_PATH
 * Return: 0 or a negative errno (-EEXIST if something is pinned there already).
 */
int cos_shim_pin(struct cos_shim *shim, const char *path);

/**
 * cos_shim_detach() - detach the shim (unless pinned) and free @shim
 * @shim: from cos_shim_attach(); NULL is a no-op
 * Return: 0 or a negative errno; @shim is freed either way.
 */
int cos_shim_detach(struct cos_shim *shim);

/**
 * cos_shim_detach_pinned() - detach a shim pinned by cos_shim_pin() (in any process), and
 * remove partial mode's partition
 * @path: NULL for COS_SHIM_PIN_PATH
 * Return: 0, -ENOENT if nothing is pinned there (a partition left behind is removed all the
 * same), or a negative errno.
 */
int cos_shim_detach_pinned(const char *path);

/**
 * cos_shim_partial() - the running shim's mode
 * Context: any process (reads /sys/kernel/sched_ext).
 * Return: 1 if the cos shim is attached in partial mode, 0 if in full mode, -ENOENT if it is
 * not attached.
 */
int cos_shim_partial(void);

/**
 * cos_partition_cpus() - partial mode's CPUs: the cpuset partition's effective CPUs
 * @set: a CPU bitmap of @setsize bytes, filled on success
 * Context: any process (reads cgroupfs).
 * Return: 0; -ENOENT if there is no partition; -EIO if the kernel made it invalid (its
 * cpuset.cpus.partition reads "root invalid (...)": the message says why).
 */
int cos_partition_cpus(void *set, size_t setsize);

/**
 * cos_partition_enter() - move process @pid (every thread of it) into the partition, where its
 * COS tasks can reach partial mode's CPUs; cosctl run does it before it becomes SCHED_EXT
 * @pid: a process; 0 for the caller's
 * Context: needs write access to the partition's cgroup.procs (root).
 * Return: 0; -ENOENT if there is no partition; another negative errno from cgroupfs.
 */
int cos_partition_enter(int pid);

/**
 * cos_partition_remove() - remove partial mode's partition: its tasks move to the root cgroup,
 * its CPUs go back to everyone, the cpuset controller is disabled again if cos enabled it
 * Context: root.  Callers detach the shim first (cos_shim_detach() does both).  A cgroup of
 * that name that cos did not make (no trusted.cos.partition xattr) is never touched.
 * Return: 0; -ENOENT if there was none; -EEXIST if it is not cos's; another negative errno from
 * cgroupfs.
 */
int cos_partition_remove(void);

/** struct cos_sys_status - what cos_sys_status() found */
struct cos_sys_status {
	bool sched_ext;		/* the kernel has sched_ext (/sys/kernel/sched_ext) */
	bool module_loaded;	/* cos.ko is loaded (/sys/module/cos) */
	bool device;		/* /dev/cos exists */
	bool shim_attached;	/* the running sched_ext scheduler is the cos shim */
	bool shim_pinned;	/* a persistent attachment is pinned at COS_SHIM_PIN_PATH */
	char state[32];		/* sched_ext state ("enabled", "disabled", ...), "" if none */
	char ops[128];		/* name of the running sched_ext scheduler, "" if none */
};

/**
 * cos_sys_status() - read the module's and sched_ext's state from sysfs (no privilege needed)
 * @st: filled on success
 * Return: 0 or a negative errno.
 */
int cos_sys_status(struct cos_sys_status *st);

/**
 * cos_version() - cos's release ("0.1"), as dkms.conf's PACKAGE_VERSION names it; the ABI
 * versions are COS_ABI_VERSION (this header) and struct cos_info.abi_version (the module's)
 */
const char *cos_version(void);

/**
 * cos_feature_name() - the name of feature bit @bit of struct cos_info.features (COS_FEAT_*:
 * bit 15 is "wake-next"), NULL for a bit this libcos does not know
 */
const char *cos_feature_name(unsigned int bit);

/**
 * cos_print_version() - what every cos program's --version prints to @f: "@prog (cos)
 * VERSION", then libcos's ABI and that of the cos.ko loaded (/sys/module/cos/version), if any
 */
void cos_print_version(FILE *f, const char *prog);

/*
 * CPU lists.  @set is a CPU bitmap of @setsize bytes, e.g. a cpu_set_t and sizeof(cpu_set_t)
 * (the CPU_*_S macros' layout), as the enclave of struct cos_lord_opts.
 */

/**
 * cos_parse_cpus() - parse a CPU list ("0-3,6,8-9": CPUs and ranges, comma-separated) into
 * @set; the one grammar of every cos program (--cpus, io.cos.cpus)
 * Return: 0, or -EINVAL (empty, a stray character, a trailing comma, a range backwards, a CPU
 * past the set).
 */
int cos_parse_cpus(const char *list, void *set, size_t setsize);

/**
 * cos_format_cpus() - write @set as a CPU list ("0-3,6") into @buf (@len bytes, NUL-terminated)
 * Return: 0, or -ENOSPC if it did not fit (then @buf holds a truncated list).
 */
int cos_format_cpus(const void *set, size_t setsize, char *buf, size_t len);

/** cos_online_cpus() - the CPUs online now (/sys/devices/system/cpu/online); 0 or -errno */
int cos_online_cpus(void *set, size_t setsize);

/**
 * cos_proc_start_time() - @pid's start time (field 22 of /proc/<pid>/stat, clock ticks since
 * boot): a pid and its start time name a process, a reused pid has another
 * Return: 0, or -ESRCH if there is no such process.
 */
int cos_proc_start_time(int pid, unsigned long long *start);

/**
 * cos_proc_cgroup() - @pid's cgroup v2 path ("/a/b", below the cgroup2 mount), into @buf
 * Return: 0; -ESRCH (no such process), -ENOENT (no v2 line), -ENAMETOOLONG (@len too short).
 */
int cos_proc_cgroup(int pid, char *buf, size_t len);

/*
 * ---------------------------------------------------------------- the lord
 *
 * A lord registers for an enclave (a set of CPUs plus the CPU it runs on), reads messages from
 * the ring, fills shoot slots and commits them.  One thread only: none of these calls is
 * thread-safe, and the kernel accepts shoots only from the registering process.
 */

struct cos_lord;

/** struct cos_lord_opts - options of cos_lord_register(); zero-initialise, set @size */
struct cos_lord_opts {
	size_t size;			/* sizeof(struct cos_lord_opts) */
	int lord_cpu;			/* CPU the calling thread is pinned to */
	const void *enclave;		/* CPU bitmap (e.g. a cpu_set_t) of the enclave */
	size_t enclave_size;		/* its size in bytes */
	unsigned int stall_ms;		/* 0 = module default (20 ms) */
	unsigned int starve_ms;		/* 0 = module default (1000 ms) */
	unsigned int ring_entries;	/* 0 = module default (4096) */
	unsigned int flags;		/* COS_LORD_F_* */
	unsigned int submit;		/* how shoots are committed: COS_SUBMIT_* */
	const char *name;		/* the enclave's name: 1-15 of [A-Za-z0-9_.-]; NULL = the
					 * calling thread's comm (a policy's program name) */
};
#define COS_SUBMIT_IOCTL	0	/* COS_IOC_SHOOT (default) */
#define COS_SUBMIT_URING	1	/* io_uring uring_cmd (COS_URING_SHOOT), falling back to the
					 * ioctl where io_uring or the module's command is missing */

/**
 * cos_lord_register() - become the lord of an enclave
 * @lordp: set on success
 * @opts: required
 *
 * Opens /dev/cos, registers (the calling thread is pinned to @opts->lord_cpu) and maps the ring,
 * status table, shoot area and control page.  The shim must be attached.  A calling thread
 * under SCHED_EXT (inherited) is moved to SCHED_OTHER first: a lord is never a COS task.
 * A calling thread on a fair policy runs at nice -20 while it is registered, so that its
 * wake-ups go first on its CPU where the kernel's own scheduler runs it (partial mode);
 * cos_lord_destroy() gives it its nice value back unless someone changed it meanwhile.
 * Several lords may be registered at once (up to COS_ENCLAVES_MAX), each on CPUs of its own.
 *
 * Return: 0; -EPERM without CAP_SYS_NICE; -EBUSY if another enclave holds one of the CPUs (the
 * message names it); -EEXIST if an enclave has the name; -ENOSPC with COS_ENCLAVES_MAX
 * enclaves registered; -ENXIO if the shim is not attached; -EOPNOTSUPP if this kernel cannot run lords (see COS_SHIM_CAP_FAIR_DSQ in
 * shim/cos_shim_intf.h), or a name was asked of a module that predates names; -EINVAL for bad
 * options; -ENODEV without cos.ko; see cos_strerror().
 */
int cos_lord_register(struct cos_lord **lordp, const struct cos_lord_opts *opts);

/** cos_lord_name() - the enclave's name as the module registered it ("" before names) */
const char *cos_lord_name(const struct cos_lord *lord);

/** cos_lord_enclave_id() - the enclave's id (0 from a module that predates names) */
unsigned int cos_lord_enclave_id(const struct cos_lord *lord);

/**
 * cos_lord_owns() - is the task of this status entry in the lord's enclave?
 * @lord: the lord; @st: an entry read with cos_lord_task_status()
 *
 * The status table holds every COS task; a lord that scans it skips the others' (always true
 * on a module without COS_FEAT_ENCLAVES, which has one enclave).
 */
bool cos_lord_owns(const struct cos_lord *lord, const struct cos_task_status *st);

/**
 * cos_lord_destroy() - give up the enclave (tasks go to the fair policy), unmap, close
 * @lord: NULL is a no-op
 */
void cos_lord_destroy(struct cos_lord *lord);

/** cos_lord_submit() - COS_SUBMIT_URING if shoots go through io_uring now, else COS_SUBMIT_IOCTL */
unsigned int cos_lord_submit(const struct cos_lord *lord);

/** cos_lord_fd() - the /dev/cos file descriptor of @lord */
int cos_lord_fd(const struct cos_lord *lord);

/** cos_lord_max_tasks() - entries of the status table (task slots are below this) */
unsigned int cos_lord_max_tasks(const struct cos_lord *lord);

/**
 * cos_lord_peek() - the next message not yet consumed, or NULL if none
 *
 * The message stays valid until cos_lord_publish() hands its slot back to the kernel.
 */
const struct cos_msg *cos_lord_peek(struct cos_lord *lord);

/** cos_lord_consume() - step past the message cos_lord_peek() returned */
void cos_lord_consume(struct cos_lord *lord);

/**
 * cos_lord_publish() - tell the kernel every consumed message is handled (release store of
 * ctl->consumed): their ring slots may be reused and the stall clock restarts
 */
void cos_lord_publish(struct cos_lord *lord);

/** cos_lord_consumed() - sequence number of the last consumed message */
unsigned long long cos_lord_consumed(const struct cos_lord *lord);

/** cos_lord_ctl() - the control page (counters, lord_active) */
const struct cos_ctl *cos_lord_ctl(const struct cos_lord *lord);

/**
 * cos_lord_set_wake_rules() - let the kernel start waking tasks without a shoot
 * @rules: COS_WAKE_* (uapi/linux/cos.h: when and where they apply); 0 turns them off
 * @slice_ns: the slice of a task they start (0 = no limit)
 *
 * From the next wake-up on, a waking task that a rule starts is posted COS_MSG_TASK_PLACED
 * (QUEUED on that CPU, as if shot there) instead of TASK_RUNNABLE.  COS_WAKE_HANDOFF: from the
 * next yield on, a task that yields hands its CPU to the task it woke last (TASK_PLACED with
 * COS_PLACED_F_HANDOFF); COS_WAKE_HANDOFF_BLOCK: the same when it blocks.
 * Return: 0; -EINVAL for unknown bits; -EOPNOTSUPP if the module has no wake rules
 * (COS_FEAT_WAKE_RULES), or lacks a handoff rule asked for (COS_FEAT_WAKE_HANDOFF,
 * COS_FEAT_WAKE_HANDOFF_BLOCK): nothing changes then.
 */
int cos_lord_set_wake_rules(struct cos_lord *lord, unsigned int rules, unsigned long long slice_ns);

/**
 * cos_lord_task_status() - a consistent copy of one task's status entry
 * @slot: below cos_lord_max_tasks()
 * Return: 0 or -EINVAL for a bad slot.
 */
int cos_lord_task_status(const struct cos_lord *lord, unsigned int slot,
			 struct cos_task_status *out);

/**
 * cos_lord_prepare() - ask for task (@slot, @gen) to run on @cpu at the next cos_lord_shoot()
 * @slice_ns: 0 = until it blocks or yields
 * Return: 0, or -EINVAL if @cpu is out of range.
 */
int cos_lord_prepare(struct cos_lord *lord, int cpu, unsigned int slot, unsigned int gen,
		     unsigned long long slice_ns);

/**
 * cos_lord_prepare_flags() - cos_lord_prepare() with request flags
 * @flags: COS_SHOOT_F_REPLACE (a task prepared for @cpu by an earlier shoot that has not
 *	started yet waits again, COS_MSG_SHOOT_STALE, and this one takes its place; without it
 *	that shoot says COS_SHOOT_BUSY), or COS_SHOOT_F_LATCH (queue it behind the COS task
 *	running on @cpu instead of preempting it; see the uapi header), or 0; or'ed with
 *	COS_SHOOT_F_URGENT (the task is urgent for COS_WAKE_PREEMPT from this shoot on; dropped
 *	on a module without COS_FEAT_WAKE_PREEMPT, whose refusal of the rule says so)
 * Return: 0, -EINVAL if @cpu is out of range or @flags has an unknown bit or both, -EOPNOTSUPP
 * if the module does not know the flag (no COS_FEAT_SHOOT_REPLACE / COS_FEAT_SHOOT_LATCH).
 */
int cos_lord_prepare_flags(struct cos_lord *lord, int cpu, unsigned int slot, unsigned int gen,
			   unsigned long long slice_ns, unsigned int flags);

/**
 * cos_lord_shoot() - commit every prepared CPU (publishes the consumed sequence number too)
 * @flags: COS_SHOOT_STRICT or 0
 *
 * Afterwards cos_lord_shoot_status() tells each prepared CPU's outcome.  Through the ioctl, or
 * with COS_SUBMIT_URING through one io_uring_enter() (same semantics and result).
 * Context: the lord thread.
 * Return: the number of tasks placed, or a negative errno (nothing placed).
 */
int cos_lord_shoot(struct cos_lord *lord, unsigned int flags);

/**
 * cos_lord_shoot_slot() - @cpu's slot in the shoot area, for callers that fill it themselves
 * (set COS_SHOOT_F_VALID last) and commit it with cos_lord_prepare()d CPUs or a raw
 * COS_IOC_SHOOT.  Return: the slot, or NULL if @cpu is out of range.
 */
struct cos_shoot_slot *cos_lord_shoot_slot(struct cos_lord *lord, int cpu);

/** cos_lord_shoot_status() - enum cos_shoot_status of @cpu's slot after the last shoot */
unsigned int cos_lord_shoot_status(const struct cos_lord *lord, int cpu);

/**
 * cos_lord_wait() - sleep until a message is pending (publishes the consumed number first)
 * @timeout_ns: 0 = just check
 * Return: 1 if messages are pending, 0 on timeout, -EINTR on a signal, other negative errnos.
 */
int cos_lord_wait(struct cos_lord *lord, unsigned long long timeout_ns);

/** cos_msg_type_name() - "TASK_NEW", ... for enum cos_msg_type, "?" if unknown */
const char *cos_msg_type_name(unsigned int type);

/** cos_shoot_status_name() - "OK", "BAD_GEN", ... for enum cos_shoot_status */
const char *cos_shoot_status_name(unsigned int status);

/*
 * ---------------------------------------------------------------- app hints
 *
 * A COS task may publish a small record for whatever lord schedules it: a request class, a
 * priority, whether it is in a critical section (do not preempt me now), a deadline.  The meaning
 * of class and priority is the policy's (cos-shinjuku: class 1 = the most urgent, runs before
 * class 2, the default, and so on; 0 = none given).  Each thread has its own record in a page of
 * its process's hint table (a sealed memfd the lord maps read-only); writing it is a few stores,
 * no system call.  Only the owning thread writes its record.
 */
#define COS_HINT_MEMFD_NAME	"cos-hints"
#define COS_HINT_PAGES		1024		/* per process: the header + 1023 threads */
#define COS_HINT_F_CRITICAL	(1U << 0)	/* in a critical section: preempt me later */
/* A cgroup's class for its tasks without a record (written by cos-oci-hook; root only) */
#define COS_HINT_CGROUP_ROOT	"/sys/fs/cgroup"
#define COS_HINT_CGROUP_XATTR	"trusted.cos.class"
/*
 * The most urgent class the tasks of a cgroup, and of the cgroups below it, may claim in their
 * own records ("1".."1000000", or "none": their records' classes count as none given); written
 * by cos-oci-hook from the operator's rules, root only.  A lord caps a record's class with the
 * nearest one up the task's cgroup path.
 */
#define COS_HINT_CGROUP_BEST_XATTR	"trusted.cos.best_class"
#define COS_HINT_CLASS_MAX	1000000

/**
 * struct cos_hint - one thread's hint record (64 bytes, at the start of its page)
 *
 * The lock fields name a lock by its address in the publishing process (a lord compares them
 * within one process's tasks): @lock_held is the lock the thread took last while it holds
 * @nr_locks hinted locks (0: none), @lock_wait the one it is about to block on (0: none),
 * @lock_waits how many waits it has published: a lord that finds the same count twice knows
 * the thread has not got its lock in between (one wait, not two).
 * cos_hint_lock_wait(), cos_hint_lock_acquired() and cos_hint_lock_released() write them;
 * cos_mutex and the pthread interposer (libcos-lock.so) call those for you.  They are written
 * outside @seq (a lock must cost a couple of stores): read each on its own; @lock_held is set
 * before @nr_locks counts it and cleared after.
 */
struct cos_hint {
	unsigned int seq;		/* odd while the owner updates the record */
	int tid;			/* the owner thread; 0 = a free page */
	unsigned int flags;		/* COS_HINT_F_* */
	unsigned int hint_class;	/* request class, policy-defined; 0 = none given */
	int prio;			/* priority, policy-defined; 0 = none given */
	unsigned int nr_locks;		/* hinted locks held */
	unsigned long long deadline_ns;	/* CLOCK_MONOTONIC; 0 = none */
	unsigned long long lock_held;	/* the lock taken last, while nr_locks > 0; else 0 */
	unsigned long long lock_wait;	/* the lock it waits for; 0 = none */
	unsigned long long lock_waits;	/* waits published so far (0: none, or an older libcos) */
	unsigned long long __reserved[1];
};

/**
 * cos_hint_self() - the calling thread's hint record, created at the first call (class 0,
 * priority 0, no flags, no deadline)
 *
 * The first call in a process (or in a child after fork) creates the process's table, or takes
 * over one inherited across exec (see cos_hint_keep_on_exec()); the record is given back when
 * the thread exits.  Call it once before a process starts its threads: a lord that looked for
 * the table before it existed looks again only 50 ms later (libcos-lock.so makes it at load).
 * Context: any thread; needs no privilege.
 * Return: the record, or NULL with errno set (ENOSPC: COS_HINT_PAGES - 1 threads have one,
 * or memfd_create/mmap's errno).
 */
struct cos_hint *cos_hint_self(void);

/**
 * cos_hint_keep_on_exec() - let the process's hint table survive execve(): the calling thread's
 * record then stays the new program's (libcos in it finds the table and the record again)
 * Return: 0, or -ENOENT if this process has no table yet (call cos_hint_self() first).
 */
int cos_hint_keep_on_exec(void);

/** cos_hint_set() - publish class, priority and deadline (the owner thread only) */
void cos_hint_set(struct cos_hint *h, unsigned int hint_class, int prio,
		  unsigned long long deadline_ns);

/** cos_hint_critical() - enter (true) or leave (false) a critical section (the owner only) */
void cos_hint_critical(struct cos_hint *h, bool inside);

/**
 * cos_hint_lock_wait() - the owner is about to block on @lock (clears with _acquired())
 * cos_hint_lock_acquired() - the owner took @lock (it no longer waits)
 * cos_hint_lock_released() - the owner let @lock go
 * @h: the owner's record (cos_hint_self()); NULL: nothing is published
 * @lock: the lock's address, its name for the lord
 *
 * One to three plain stores each, outside the record's seqcount: cheap enough for every lock
 * operation.  The owner thread only.
 */
void cos_hint_lock_wait(struct cos_hint *h, const void *lock);
void cos_hint_lock_acquired(struct cos_hint *h, const void *lock);
void cos_hint_lock_released(struct cos_hint *h, const void *lock);

/**
 * struct cos_mutex - a pthread mutex that publishes its owner and waiters as app hints
 *
 * Initialise with COS_MUTEX_INITIALIZER or cos_mutex_init(); the calls take and give back the
 * mutex as pthread_mutex_lock()/_trylock()/_unlock() do, and return what they return.  A thread
 * whose record cannot be created (ENOSPC) locks without hints.  An unlock that wakes a waiter
 * yields the CPU after it if the thread is a COS task, so that a lord with the wake rule
 * COS_WAKE_HANDOFF runs that waiter before the releaser can take the mutex back
 * (COS_LOCK_HANDOFF=1 in the environment: any thread yields; 0: none does).
 */
struct cos_mutex {
	pthread_mutex_t m;
};
#define COS_MUTEX_INITIALIZER	{ PTHREAD_MUTEX_INITIALIZER }
int cos_mutex_init(struct cos_mutex *m);
int cos_mutex_lock(struct cos_mutex *m);
int cos_mutex_trylock(struct cos_mutex *m);
int cos_mutex_unlock(struct cos_mutex *m);
int cos_mutex_destroy(struct cos_mutex *m);

/*
 * ---------------------------------------------------------------- policies
 *
 * The policy framework: a policy is a struct of callbacks; cos_sched_run() runs the lord's loop
 * for it (consume every message, call the policy, commit its placements, handle per-CPU
 * failures, resync after an overflow or a stall, spin a little and then block when idle, stop
 * on a signal).  Everything happens on the lord thread: no callback needs a lock.
 *
 * Rule: a lord must not schedule threads of its own process (a thread waiting for the lord may
 * hold the process's mmap_lock, and the lord blocks on it at its next page fault).  Run the
 * workload in other processes (cosctl run, fork + exec).
 */

struct cos_sched;
struct cos_taskq;

/*
 * struct cos_task - one COS task as the framework tracks it (owned by the framework; valid from
 * task_new until task_dead returns).  Identity is (slot, gen): pids are reused, slots too.
 */
struct cos_task {
	unsigned int slot, gen;
	int pid;
	int cpu;			/* CPU it runs, is placed on, or last ran on */
	unsigned int state;		/* COS_TASK_BLOCKED, _WAITING (runnable: the policy's), _QUEUED
					 * (placed by the policy), _RUNNING */
	unsigned long long runnable_at;	/* CLOCK_MONOTONIC ns it last became runnable */
	unsigned long long placed_at;	/* when the policy last placed it */
	void *data;			/* the policy's per-task area (task_data_size bytes, zeroed) */
	/* queue links, for the cos_taskq helpers below only */
	struct cos_task *q_next, *q_prev;
	struct cos_taskq *q;
	/* (last: a field added keeps the others where policies built before it look) */
	struct cos_task *waker;		/* in task_runnable: this lord's task that woke it, when the
					 * module saw who (COS_FEAT_WAKER, struct cos_msg.waker);
					 * else NULL */
	unsigned long long event_at;	/* CLOCK_MONOTONIC ns of the kernel's latest message about
					 * it: when what the callback reports happened */
	unsigned int placed_by;		/* who started it where it is placed (with placed_at):
					 * COS_PLACED_BY_* */
	bool urgent;			/* the policy's: its placements mark it urgent
					 * (COS_SHOOT_F_URGENT, for COS_WAKE_PREEMPT) */
};

/* struct cos_task.placed_by */
#define COS_PLACED_BY_LORD	0	/* a placement of this lord's, or a latched start (one
					 * COS_WAKE_NEXT latched too) */
#define COS_PLACED_BY_RULE	1	/* a wake rule (COS_WAKE_IDLE, COS_WAKE_PREV) */
#define COS_PLACED_BY_HANDOFF	2	/* a handoff: the task before it on that CPU yielded or
					 * blocked after waking it (COS_WAKE_HANDOFF, _BLOCK) */
#define COS_PLACED_BY_PREEMPT	3	/* COS_WAKE_PREEMPT: in place of a task that was not
					 * urgent (its TASK_PREEMPTED follows) */

/* struct cos_taskq - an intrusive FIFO of tasks (a task is in at most one queue) */
struct cos_taskq {
	struct cos_task *head, *tail;
	unsigned int len;
};

void cos_taskq_push(struct cos_taskq *q, struct cos_task *t);		/* at the tail */
void cos_taskq_push_head(struct cos_taskq *q, struct cos_task *t);
struct cos_task *cos_taskq_pop(struct cos_taskq *q);			/* NULL if empty */
void cos_taskq_remove(struct cos_task *t);	/* from whatever queue holds it; no-op if none */

/*
 * struct cos_policy - what a policy implements.  Every callback is optional except schedule.
 * A task handed to task_runnable/task_preempted/task_yield waits for the policy to place it;
 * after task_blocked/task_dead it must not be placed (remove it from your queues).
 */
struct cos_policy {
	size_t size;			/* sizeof(struct cos_policy) */
	const char *name;
	size_t task_data_size;		/* bytes of cos_task.data per task */
	void (*task_new)(struct cos_sched *s, struct cos_task *t);
	void (*task_runnable)(struct cos_sched *s, struct cos_task *t);
	void (*task_blocked)(struct cos_sched *s, struct cos_task *t);
	void (*task_preempted)(struct cos_sched *s, struct cos_task *t, unsigned int why);
	void (*task_yield)(struct cos_sched *s, struct cos_task *t);
	void (*task_dead)(struct cos_sched *s, struct cos_task *t);
	void (*task_affinity)(struct cos_sched *s, struct cos_task *t);	/* still runnable or not */
	void (*tick)(struct cos_sched *s, unsigned long long now_ns);
	/* place waiting tasks with cos_sched_place(); called after every batch of messages */
	void (*schedule)(struct cos_sched *s);
	void *ctx;			/* for the policy: cos_sched_policy_ctx() */
};

/* struct cos_sched_opts - options of cos_sched_create(); zero-initialise, set @size */
struct cos_sched_opts {
	size_t size;			/* sizeof(struct cos_sched_opts) */
	struct cos_lord_opts lord;	/* enclave, lord CPU, stall_ms, ... (lord.size set for you) */
	unsigned long long tick_ns;	/* period of policy->tick and of schedule() while a task
					 * waits for a CPU; 0 = no tick.  With no task waiting
					 * an idle lord sleeps until a message, at most 100 ms */
	unsigned long long spin_ns;	/* busy-poll this long after the last decision (a
					 * placement, or a message while a task waits) before
					 * blocking in COS_IOC_WAIT; 0 = default (50 us), and
					 * see COS_SCHED_F_NO_SPIN */
	unsigned int flags;		/* COS_SCHED_F_* */
};
#define COS_SCHED_F_SIGNALS	(1U << 0)	/* from cos_sched_create() to cos_sched_destroy():
						 * SIGINT/SIGTERM stop cos_sched_run() (or make it
						 * return at once), SIGUSR1 sets
						 * cos_sched_stats_requested() */
#define COS_SCHED_F_DROP_CAPS	(1U << 1)	/* drop every capability once registered */
#define COS_SCHED_F_NO_MLOCK	(1U << 2)	/* do not mlockall() the process */
#define COS_SCHED_F_HINTS	(1U << 3)	/* the policy reads app hints: keep CAP_SYS_PTRACE
						 * (to open the apps' hint tables) when dropping caps,
						 * and look a task's up from its TASK_NEW on */
#define COS_SCHED_F_NO_SPIN	(1U << 4)	/* block as soon as nothing is left to do (spin_ns
						 * ignored): the lord's CPU idles between events, at
						 * the cost of a wake-up per message */
#define COS_SCHED_F_WAKE_ALL	(1U << 5)	/* wake for every message (the default, where the
						 * module knows it: COS_LORD_F_LAZY_WAKE, woken only
						 * for messages that ask a decision) */

/* struct cos_sched_stats - the framework's counters (cos_sched_get_stats) */
struct cos_sched_stats {
	unsigned long long messages, placed, shoot_calls, failed, resyncs, stalls, waits;
	unsigned long long tasks;	/* live tasks now */
};

/**
 * cos_sched_create() - become the lord of an enclave for @policy
 * @sp: set on success
 * @policy: callbacks (must outlive the scheduler)
 * @opts: required (@opts->lord.enclave at least)
 *
 * Checks CAP_SYS_NICE up front (libcap) and says if it is missing, mlockall()s the process
 * (unless COS_SCHED_F_NO_MLOCK), registers (the calling thread becomes the lord, pinned to
 * opts->lord.lord_cpu) and learns the tasks already in the status table.
 * Context: the thread that will call cos_sched_run().
 * Return: 0 or a negative errno (see cos_lord_register(); -EPERM names the capability).
 */
int cos_sched_create(struct cos_sched **sp, const struct cos_policy *policy,
		     const struct cos_sched_opts *opts);

/**
 * cos_sched_run() - the lord's loop, until cos_sched_stop() (or a signal, with
 * COS_SCHED_F_SIGNALS)
 * Return: 0 when stopped, or a negative errno if the kernel refused the lord (e.g. -EPERM).
 */
int cos_sched_run(struct cos_sched *s);

/**
 * cos_sched_helper_cpus() - where a lord's helper threads should run: the CPUs that are neither
 * the lord's nor the enclave's (on the lord's CPU a helper runs only while the lord sleeps; on
 * the enclave's it takes CPU time from the COS tasks).  libcos's hint finder runs there.
 * @set: gets them; none where a cpuset leaves none (then a helper stays where it is)
 * Return: how many.
 */
int cos_sched_helper_cpus(const struct cos_sched *s, cpu_set_t *set);

/** cos_sched_stop() - make cos_sched_run() return soon.  Async-signal-safe, any thread. */
void cos_sched_stop(struct cos_sched *s);

/** cos_sched_destroy() - give the enclave back (tasks go to the fair policy) and free @s */
void cos_sched_destroy(struct cos_sched *s);

/**
 * cos_sched_place() - run @t on @cpu once the current schedule step ends
 * @slice_ns: 0 = until it blocks or yields (or, on the lord's own CPU, stall_ms / 2)
 *
 * Only from policy->schedule or a callback.  @cpu may be busy: its task is then preempted (it
 * comes back through task_preempted), or, if an earlier placement there has not started yet,
 * that task waits again (COS_SHOOT_F_REPLACE; it comes back through task_runnable).  @t leaves
 * any queue it is in.
 * Return: 0; -EBUSY if @cpu already has a placement in this step or @t is neither waiting nor
 * latched (cos_sched_latch(): a latched task leaves its latch if this placement succeeds);
 * -EINVAL if @cpu is outside the enclave and not the lord's CPU, or offline (the module said so:
 * COS_MSG_CPU_OFFLINE); -EPERM if @t may not run there.
 */
int cos_sched_place(struct cos_sched *s, struct cos_task *t, int cpu, unsigned long long slice_ns);

/**
 * cos_sched_latch() - run @t on @cpu after the task running or placed there, without a round trip
 * @slice_ns: as cos_sched_place()
 *
 * The kernel queues @t in @cpu's latch (COS_SHOOT_F_LATCH): when the task there blocks, yields
 * or ends its slice, @cpu starts the first latched task itself, at once, and the framework's
 * books follow (cos_sched_cpu_task() names it from then on).  On a free CPU it starts at once,
 * as cos_sched_place() would.  A latched task stays out of the policy's hands (QUEUED) until it
 * runs or comes back through task_runnable (it changed, or its CPU could not start it); the
 * policy may place or latch it again elsewhere meanwhile (a refused attempt leaves it latched
 * where it was).  Mind that behind a task that runs without a slice it may wait long: the
 * kernel counts that wait against the lord's starvation limit.  Only from policy->schedule or
 * a callback; at most one placement or latch per CPU per step.
 * Return: as cos_sched_place(); -ENOSPC if @cpu's latch holds COS_SHOOT_LATCH_MAX tasks;
 * -EINVAL also on the lord's CPU; -EOPNOTSUPP if the module has no latch (COS_FEAT_SHOOT_LATCH).
 */
int cos_sched_latch(struct cos_sched *s, struct cos_task *t, int cpu, unsigned long long slice_ns);

/** cos_sched_cpu_latched() - the tasks latched on @cpu, first to run first (read only) */
const struct cos_taskq *cos_sched_cpu_latched(const struct cos_sched *s, int cpu);

/** cos_sched_cpu_task() - the task running or placed on @cpu, NULL if it is idle */
struct cos_task *cos_sched_cpu_task(const struct cos_sched *s, int cpu);

/** cos_sched_cpus() - the enclave's CPUs: fills @cpus (up to @max), returns how many */
int cos_sched_cpus(const struct cos_sched *s, int *cpus, int max);

/** cos_sched_task_may_run() - whether @t's affinity allows @cpu (as of its last message), online */
bool cos_sched_task_may_run(const struct cos_sched *s, const struct cos_task *t, int cpu);

/**
 * cos_sched_task_hint() - the app hint @t published (see cos_hint_self()), as of now
 * @out: a consistent copy of the record
 *
 * The first call for a task asks a thread of the lord's process (the finder) to find the task's
 * process and its hint table in /proc, and returns -EAGAIN: a later call has the answer (a
 * process without a table is looked at again at most every 50 ms).  The lord's thread makes no
 * system call here: a task waiting for it may hold what a lookup in /proc needs.  Once found,
 * a call copies 64 bytes from shared memory.  A task without a record of its own gets its
 * cgroup's class, if the cgroup has one (COS_HINT_CGROUP_XATTR: a record with only hint_class
 * and tid set).  From policy callbacks (the lord thread).
 * Return: 0; -ENOENT if the task publishes no hint (yet); -EAGAIN while the finder looks, or
 * if its owner was mid-update for long; -ESRCH if the task is gone; -ENOSPC if the lord tracks
 * too many hint tables (64).
 */
int cos_sched_task_hint(struct cos_sched *s, const struct cos_task *t, struct cos_hint *out);

/** cos_sched_first_for() - the first task of @q allowed on @cpu, or NULL */
struct cos_task *cos_sched_first_for(const struct cos_sched *s, const struct cos_taskq *q, int cpu);

/** cos_sched_policy_ctx() - the policy's @ctx */
void *cos_sched_policy_ctx(const struct cos_sched *s);

/** cos_sched_lord() - the underlying lord (for cos_lord_ctl() counters and the like) */
struct cos_lord *cos_sched_lord(const struct cos_sched *s);

/**
 * cos_sched_set_wake_rules() - cos_lord_set_wake_rules() for the framework's lord
 *
 * The framework books a task a rule started (COS_MSG_TASK_PLACED) as placed on its CPU, as if
 * the policy had placed it there; the policy sees no callback for it, and gets the task back
 * through task_preempted/task_blocked as usual.  Use rules that agree with the policy: they
 * apply only while no task waits for the lord, on free enclave CPUs.
 * Return: as cos_lord_set_wake_rules(); -ENODEV without a lord (a test backend).
 */
int cos_sched_set_wake_rules(struct cos_sched *s, unsigned int rules, unsigned long long slice_ns);

/**
 * cos_sched_wake_at() - call schedule() again by @at_ns (CLOCK_MONOTONIC) at the latest
 *
 * For a policy's own deadlines (a cap that ends, a wait bound): an idle lord blocks no longer
 * than that.  The earliest asked in a step counts, and only for that step: a policy that still
 * needs it asks again (schedule() is the place).  Context: the lord thread, in a callback.
 */
void cos_sched_wake_at(struct cos_sched *s, unsigned long long at_ns);

/** cos_sched_wake_placed() - tasks the wake rules started so far (COS_MSG_TASK_PLACED) */
unsigned long long cos_sched_wake_placed(const struct cos_sched *s);

/**
 * cos_sched_wake_handoffs() - of those, the ones a yield or a block handed its CPU to
 * (COS_WAKE_HANDOFF, COS_WAKE_HANDOFF_BLOCK: COS_PLACED_F_HANDOFF)
 */
unsigned long long cos_sched_wake_handoffs(const struct cos_sched *s);

/**
 * cos_sched_wake_preempts() - of those, the urgent ones started in place of a task that was not
 * (COS_WAKE_PREEMPT: COS_PLACED_F_PREEMPT)
 */
unsigned long long cos_sched_wake_preempts(const struct cos_sched *s);

/**
 * cos_sched_wake_nexts() - urgent waking tasks the kernel queued next behind an urgent one, to
 * start when it stops (COS_WAKE_NEXT: COS_PLACED_F_NEXT); not counted as started above
 */
unsigned long long cos_sched_wake_nexts(const struct cos_sched *s);

/**
 * cos_sched_hint_bad_tables() - hint tables dropped because their app changed the header after
 * the lord checked it (hostile input: their tasks get their class default from then on)
 */
unsigned long long cos_sched_hint_bad_tables(const struct cos_sched *s);

#define COS_SCHED_NOT_STARTED	(-1)
#define COS_SCHED_STALE		(-2)
/**
 * cos_sched_shoot_failures() - the placements that did not start so far, by cause
 * @s: the scheduler
 * @status: a COS_SHOOT_* status other than OK: the placements the module refused with it (their
 *	sum is cos_sched_stats.failed); or COS_SCHED_NOT_STARTED: placements it accepted whose CPU
 *	then could not start the task (COS_MSG_SHOOT_FAILED); or COS_SCHED_STALE: placements
 *	it accepted that left before they started (COS_MSG_SHOOT_STALE: the task was replaced
 *	by a later placement on its CPU, changed its properties, or the CPU went offline)
 * Return: the count; 0 for a status it does not know.
 */
unsigned long long cos_sched_shoot_failures(const struct cos_sched *s, int status);

/*
 * struct cos_sched_event - one of the framework's recent messages or shoots (cos_sched_recent()):
 * what a lord's books were made of, for a bug report (a lord's --events)
 */
struct cos_sched_event {
	unsigned long long ts;	/* a message's time stamp; a shoot's result, cos_now_ns() */
	unsigned int kind;	/* COS_SCHED_EV_MSG or COS_SCHED_EV_SHOOT */
	unsigned int type;	/* a message's COS_MSG_*; a shoot's COS_SHOOT_* status */
	unsigned int slot, gen;
	int pid, cpu;		/* a shoot: the CPU it was for */
	unsigned long long arg;	/* a message's arg; a shoot's slice (ns, 0: none) */
	unsigned int flags;	/* a shoot's COS_SHOOT_F_LATCH, COS_SHOOT_F_URGENT */
};
#define COS_SCHED_EV_MSG	1
#define COS_SCHED_EV_SHOOT	2
#define COS_SCHED_RECENT	64	/* how many the framework keeps */

/**
 * cos_sched_recent() - the framework's last messages and shoots, oldest first
 * @s: the scheduler
 * @ev: filled with at most @max (at most COS_SCHED_RECENT) events
 * @max: the room in @ev
 * Context: the lord's thread, or after cos_sched_run() returned.
 * Return: the number of events in @ev.
 */
int cos_sched_recent(const struct cos_sched *s, struct cos_sched_event *ev, int max);

/** cos_sched_get_stats() - the framework's counters so far */
void cos_sched_get_stats(const struct cos_sched *s, struct cos_sched_stats *st);

/** cos_sched_stats_requested() - true once after each SIGUSR1 (COS_SCHED_F_SIGNALS) */
bool cos_sched_stats_requested(struct cos_sched *s);

/** cos_now_ns() - CLOCK_MONOTONIC in ns (the clock of message timestamps) */
unsigned long long cos_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* COS_H */
