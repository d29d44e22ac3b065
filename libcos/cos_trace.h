/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * cos_trace.h — a lord's decision records: what the policy framework (libcos) saw and decided
 * in each step of its loop, for `cosctl trace` and `cos-replay`.  See docs/tracing.md.
 *
 * While a reader asks for them (cos_sched_trace_start()), the lord thread appends records to
 * a ring in shared memory; the reader copies them out.  The same records, the ring's header
 * first, make a recording file (a ".lord" file), which cos-replay feeds to a policy again.
 *
 * A step is STEP, its MSG records, the clock readings (CLOCK), the tick, SCHEDULE, the
 * policy's placements (PLACE), the shoot (SHOOT, then SHOT per placement) and STEP_END.  Only
 * steps that handled a message, ticked or placed a task are kept: a spinning lord's empty
 * steps are not.  A step that does not fit in the ring is dropped whole and counted; the
 * next kept step starts with LOST.  Records never wrap: PAD fills the ring's end.
 *
 * The reader must treat the ring as untrusted: bound every size and offset it reads.
 */
#ifndef COS_TRACE_H
#define COS_TRACE_H

#include <stddef.h>

#include "cos.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COS_TRACE_MAGIC		0x63727463u	/* "ctrc" */
#define COS_TRACE_VERSION	2
#define COS_TRACE_ALIGN		16		/* every record's size is a multiple */
#define COS_TRACE_CPU_WORDS	16		/* enclave_cpus: 1024 CPUs */
#define COS_TRACE_MAX_MB	64		/* a ring's size at most: a lord's memory is locked */

/* At offset 0 of the ring's mapping, and of a recording file. */
struct cos_trace_header {
	__u32 magic;			/* COS_TRACE_MAGIC */
	__u32 version;			/* COS_TRACE_VERSION */
	__u32 header_size;		/* bytes before the first record: sizeof(this) */
	__u32 data_size;		/* the ring's bytes, a power of two; 0 in a file */
	__u64 started_ns;		/* CLOCK_MONOTONIC when the lord began recording */
	__s32 lord_pid, lord_cpu;
	__u32 nr_cpus, max_tasks;	/* the framework's books: CPUs 0..nr_cpus-1, task slots */
	__u64 tick_ns;
	__u64 enclave_cpus[COS_TRACE_CPU_WORDS];
	char enclave[32];		/* the enclave's name, or the program's */
	char policy[32];		/* the program, "cos-fifo" */
	char args[256];			/* its options, space-separated (cos-replay reuses them) */
	__u64 last_tick_ns;		/* the framework's last tick when the recording began */
	__u64 __reserved[3];
	/* the ring: each index on a cache line of its own */
	__u64 head __attribute__((aligned(64)));	/* bytes the lord published (release) */
	__u64 lost_steps;		/* steps dropped because the ring was full */
	__u64 tail __attribute__((aligned(64)));	/* bytes the reader consumed (release) */
	__u64 __pad[7];
};

struct cos_trace_rec {
	__u16 type;			/* COS_TREC_* */
	__u16 size;			/* bytes, this header included; a multiple of COS_TRACE_ALIGN */
	__u32 cpu;			/* PLACE, SHOT: the CPU; else 0 */
	__u64 ts;			/* CLOCK_MONOTONIC ns: when (CLOCK: the value read) */
};

enum cos_trace_type {
	COS_TREC_PAD = 0,	/* no payload: skip to the ring's start */
	COS_TREC_STEP,		/* a step of the lord's loop begins */
	COS_TREC_MSG,		/* struct cos_trace_msg; ts: when the lord read it */
	COS_TREC_CLOCK,		/* a cos_now_ns() in the step, ts its value */
	COS_TREC_SCHEDULE,	/* the policy's schedule() is called */
	COS_TREC_PLACE,		/* struct cos_trace_place: a placement the policy made */
	COS_TREC_SHOOT,		/* struct cos_trace_shoot: the step's placements committed */
	COS_TREC_SHOT,		/* struct cos_trace_shot: one placement's outcome */
	COS_TREC_STEP_END,	/* struct cos_trace_step_end */
	COS_TREC_STATUS,	/* struct cos_trace_status: a read of the status table */
	COS_TREC_AFFINITY,	/* struct cos_trace_affinity: a task's allowed CPUs read */
	COS_TREC_HINT,		/* struct cos_trace_hint: a task's hint read */
	COS_TREC_LOST,		/* struct cos_trace_lost: steps dropped before this one */
	COS_TREC_BOOK,		/* struct cos_trace_status: a task the lord knew at the start (its
				 * allowed CPUs follow as an AFFINITY record) */
	COS_TREC_NR,
};

struct cos_trace_msg {
	struct cos_trace_rec h;
	struct cos_msg msg;
};

/* struct cos_trace_place.flags: COS_SHOOT_F_LATCH, COS_SHOOT_F_URGENT */
struct cos_trace_place {
	struct cos_trace_rec h;
	__u32 slot, gen;
	__s32 pid;
	__u32 flags;
	__u32 reason;			/* cos_sched_reason()'s, 0 if none */
	__u32 __pad;
	__u64 slice_ns;
};

struct cos_trace_shoot {
	struct cos_trace_rec h;		/* ts: when the shoot began */
	__s32 ret;			/* placed count, or -errno */
	__u32 nr;			/* placements committed */
	__u64 end_ns;
};

struct cos_trace_shot {
	struct cos_trace_rec h;
	__u32 slot, gen;
	__u32 status;			/* COS_SHOOT_* */
	__u32 __pad;
};

struct cos_trace_step_end {
	struct cos_trace_rec h;
	__u32 nr_msgs, nr_placed;	/* messages handled, placements made */
	__u64 __pad;
};

struct cos_trace_status {
	struct cos_trace_rec h;
	__u32 slot;
	__s32 ret;
	struct cos_task_status st;	/* BOOK: st.last_seq orders the waiting tasks as the
					 * lord's queues held them (from 1; trace_books()) */
	__u64 placed_at;		/* BOOK: the task's placed_at; STATUS: 0 */
	__u64 runnable_at;		/* BOOK: the task's runnable_at; STATUS: 0 */
	__u64 __pad;
};

struct cos_trace_affinity {
	struct cos_trace_rec h;
	__s32 pid, ret;
	__u64 cpus[COS_TRACE_CPU_WORDS];
	__u64 __pad;
};

struct cos_trace_hint {
	struct cos_trace_rec h;
	__u32 slot;
	__s32 ret;
	struct cos_hint hint;
	__u64 __pad;
};

struct cos_trace_lost {
	struct cos_trace_rec h;
	__u64 steps;
	__u64 __pad;
};

/* The size of a record of @type, or 0 for a type this version does not know. */
static inline size_t cos_trace_rec_size(unsigned int type)
{
	switch (type) {
	case COS_TREC_PAD: case COS_TREC_STEP: case COS_TREC_CLOCK: case COS_TREC_SCHEDULE:
		return sizeof(struct cos_trace_rec);
	case COS_TREC_MSG: return sizeof(struct cos_trace_msg);
	case COS_TREC_PLACE: return sizeof(struct cos_trace_place);
	case COS_TREC_SHOOT: return sizeof(struct cos_trace_shoot);
	case COS_TREC_SHOT: return sizeof(struct cos_trace_shot);
	case COS_TREC_STEP_END: return sizeof(struct cos_trace_step_end);
	case COS_TREC_STATUS: case COS_TREC_BOOK: return sizeof(struct cos_trace_status);
	case COS_TREC_AFFINITY: return sizeof(struct cos_trace_affinity);
	case COS_TREC_HINT: return sizeof(struct cos_trace_hint);
	case COS_TREC_LOST: return sizeof(struct cos_trace_lost);
	}
	return 0;
}

/**
 * cos_sched_trace_start() - begin recording the lord's steps into a new ring
 * @s: the scheduler
 * @ring_bytes: the ring's size, rounded up to a power of two (0: 16 MiB; at most
 *	COS_TRACE_MAX_MB MiB: a reader's request, checked here)
 * @args: the program's options, for the header (cos-replay runs the policy with them); NULL: none
 * Context: any thread of the lord's process; the lord thread starts writing at its next step.
 * Return: a file descriptor (memfd, close-on-exec) of the ring for the reader to map
 * (header, then @ring_bytes of records), or a negative errno: -EBUSY while one is recording.
 */
int cos_sched_trace_start(struct cos_sched *s, size_t ring_bytes, const char *args);

/**
 * cos_sched_trace_stop() - end the recording cos_sched_trace_start() began
 * Context: any thread of the lord's process; the lord thread lets go of the ring at its next
 * step (it stays mapped until then; the reader's mapping is its own).
 */
void cos_sched_trace_stop(struct cos_sched *s);

/**
 * cos_trace_observing() - the calling thread's clock reads from now until the call with @on
 * false are an observer's (statistics, a log line), not the policy's decisions: a recording
 * leaves them out and a replay answers them without using up a recorded reading.  Nests.
 * Context: the lord thread; lord_main() wraps its statistics in it.
 */
void cos_trace_observing(bool on);

/**
 * cos_sched_reason() - name why the policy makes its next placement or latch, for the record
 * @reason: the policy's code (its docs say what each means), kept with that placement
 * Context: the lord thread, in a policy callback; it costs a store when nothing records.
 */
void cos_sched_reason(struct cos_sched *s, unsigned int reason);

/* ---------------------------------------------------------------- reading a ring */

/**
 * cos_trace_save_header() - start a recording file: write the ring's header to @fd
 * @ring: the mapping of the fd cos_sched_trace_start() returned, @map_size bytes
 * Return: 0, or a negative errno (-EINVAL: not a ring of this version).
 */
int cos_trace_save_header(const struct cos_trace_header *ring, size_t map_size, int fd);

/**
 * cos_trace_drain() - append the records the lord published since the last call to @fd and
 * give their room back (the ring's tail)
 * Context: the one reader of the ring.  Every record is checked before it is copied.
 * Return: the bytes written, or a negative errno (-EIO: the ring holds nonsense).
 */
long long cos_trace_drain(struct cos_trace_header *ring, size_t map_size, int fd);

/* ---------------------------------------------------------------- replay (cos-replay) */

struct cos_replay;

/* What a replay found (cos_replay_run()). */
struct cos_replay_result {
	unsigned long long steps;		/* recorded steps replayed */
	unsigned long long recorded, replayed;	/* placements in them, and the replay's */
	unsigned long long differing;		/* steps whose placements differ */
	unsigned long long first_differing;	/* the first one's index (if differing) */
	unsigned long long lost_steps;		/* steps the recording dropped (a full ring) */
};

/**
 * cos_replay_open() - read a recording (a ".lord" file: the header and the records)
 * Return: 0 and *@rp, or a negative errno (the details in cos_strerror()): -EINVAL for a file
 * that is not a whole recording of this version.
 */
int cos_replay_open(struct cos_replay **rp, const char *path);

/** cos_replay_header() - the recording's header (its enclave, policy, options, CPUs) */
const struct cos_trace_header *cos_replay_header(const struct cos_replay *r);

/**
 * cos_sched_create_replay() - a scheduler that runs @policy on the recording @r instead of
 * the kernel: no lord, no /dev/cos, no privilege.  @opts as for cos_sched_create(); the
 * enclave and lord CPU are the recording's.  It knows the tasks the lord knew when the
 * recording began.  Free it with cos_sched_destroy() before cos_replay_close().
 * Context: one thread; cos_now_ns() in that thread returns the recorded clock while it replays.
 */
int cos_sched_create_replay(struct cos_sched **sp, const struct cos_policy *policy,
			    const struct cos_sched_opts *opts, struct cos_replay *r);

/**
 * cos_replay_run() - feed every recorded step to the scheduler, compare its placements with
 * the recorded ones, and describe the first differing steps on @report (NULL: quiet)
 * Return: 0 if every step placed the same tasks on the same CPUs with the same slices and
 * flags, 1 if not; *@res (if not NULL) says how many.
 */
int cos_replay_run(struct cos_replay *r, struct cos_sched *s, FILE *report,
		   struct cos_replay_result *res);

/**
 * cos_replay_clock() - while @on, cos_now_ns() in the calling thread returns the recording's
 * first time: for a policy's set-up before cos_sched_create_replay() (its ready()), which
 * would otherwise read the replaying machine's clock
 */
void cos_replay_clock(struct cos_replay *r, bool on);

/** cos_replay_close() - free the recording */
void cos_replay_close(struct cos_replay *r);

#ifdef __cplusplus
}
#endif
#endif /* COS_TRACE_H */
