/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * cos.h — the libcos API: open /dev/cos, query the module, attach and detach the BPF shim, read
 * the system's cos/sched_ext status.
 *
 * Conventions.  Every call returns 0 (or a non-negative value) on success and a negative errno
 * on failure.  cos_strerror() turns that errno into a sentence that says what to do about it;
 * for the most recent failure of the calling thread it carries the details (which file, what the
 * kernel said).  No call prints anything.  The ABI types come from <linux/cos.h>.
 */
#ifndef COS_H
#define COS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/cos.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The scheduling policy of COS tasks (SCHED_EXT; older libc headers lack the name). */
#define COS_SCHED_EXT 7

/* Where a persistent shim attachment (cosctl shim attach) is pinned. */
#define COS_SHIM_PIN_PATH "/sys/fs/bpf/cos_shim"

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

/** struct cos_shim_opts - options of cos_shim_attach(); zero-initialise, set @size */
struct cos_shim_opts {
	size_t size;			/* sizeof(struct cos_shim_opts) */
	unsigned long long slice_ns;	/* fair-policy slice; 0 = default (5 ms) */
	unsigned int abi_expected;	/* 0 = COS_ABI_VERSION; others only to test the refusal */
};

struct cos_shim;

/**
 * cos_shim_attach() - load the embedded BPF shim and make it the system's sched_ext scheduler
 * @shimp: set to the attachment on success
 * @opts: NULL for defaults
 *
 * The attachment lasts until cos_shim_detach() or until the process exits, unless pinned.
 *
 * Context: needs CAP_BPF + CAP_SYS_ADMIN (root) and cos.ko loaded.
 * Return: 0; -EOPNOTSUPP without sched_ext; -ENODEV without cos.ko; -EBUSY if another sched_ext
 * scheduler is attached; -EPROTO if the module's ABI differs from the shim's; -EPERM without
 * privilege; other negative errnos from libbpf (see cos_strerror()).
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
 * cos_shim_detach_pinned() - detach a shim pinned by cos_shim_pin() (in any process)
 * @path: NULL for COS_SHIM_PIN_PATH
 * Return: 0, -ENOENT if nothing is pinned there, or a negative errno.
 */
int cos_shim_detach_pinned(const char *path);

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
};

/**
 * cos_lord_register() - become the lord of an enclave
 * @lordp: set on success
 * @opts: required
 *
 * Opens /dev/cos, registers (the calling thread is pinned to @opts->lord_cpu) and maps the ring,
 * status table, shoot area and control page.  The shim must be attached.
 * Return: 0; -EPERM without CAP_SYS_NICE; -EBUSY if another lord holds CPUs; -ENXIO if the shim
 * is not attached; -EOPNOTSUPP if this kernel cannot run lords (see COS_SHIM_CAP_FAIR_DSQ);
 * -EINVAL for bad options; -ENODEV without cos.ko; see cos_strerror().
 */
int cos_lord_register(struct cos_lord **lordp, const struct cos_lord_opts *opts);

/**
 * cos_lord_destroy() - give up the enclave (tasks go to the fair policy), unmap, close
 * @lord: NULL is a no-op
 */
void cos_lord_destroy(struct cos_lord *lord);

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
 * cos_lord_shoot() - commit every prepared CPU (publishes the consumed sequence number too)
 * @flags: COS_SHOOT_STRICT or 0
 *
 * Afterwards cos_lord_shoot_status() tells each prepared CPU's outcome.
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

#ifdef __cplusplus
}
#endif
#endif /* COS_H */
