// lord_fifo.h — a minimal FIFO lord for the in-guest tests: runs in its own thread, pinned to
// its CPU, places runnable COS tasks on free enclave CPUs in arrival order, run to block, and
// records every message and every placement for the tests to check.  With wake_rules set it
// asks the kernel to start waking tasks itself (cos_lord_set_wake_rules) and books the tasks
// the kernel placed (COS_MSG_TASK_PLACED) on their CPUs.  A task of a throttled bandwidth group
// (COS_MSG_TASK_THROTTLED) waits until its group's COS_MSG_GROUP_UNTHROTTLED.
// See docs/testing.md.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <string>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

extern "C" {
#include <cos.h>
}
#include "guest.h"

struct FifoLord {
	struct Placement {
		uint32_t slot, gen, pid;
		int cpu;
	};

	int lord_cpu;
	std::vector<int> cpus;
	unsigned stall_ms;
	unsigned ring_entries;
	unsigned starve_ms;
	uint64_t dropped = 0;			/* ctl->dropped when the lord stopped */
	std::atomic<bool> stop{false};
	std::atomic<bool> ready{false};
	std::atomic<bool> pause{false};	/* stop consuming (the tests' stand-in for a stuck lord) */
	int register_error = 0;
	std::vector<cos_msg> log;		/* every message, in order */
	uint64_t stall_reasons = 0;		/* OR of LORD_STALL args seen */
	std::vector<Placement> placed;		/* every successful shoot */
	std::vector<Placement> wake_placed;	/* every TASK_PLACED (the kernel's, by the wake rules) */
	unsigned handoffs = 0;			/* of those, by COS_WAKE_HANDOFF */
	unsigned wake_rules = 0;		/* COS_WAKE_*, set before the lord starts */
	int wake_rules_error = 0;
	std::map<unsigned, unsigned> shoot_errors;	/* status -> count */
	std::atomic<bool> probe_throttled{false};	/* shoot each TASK_THROTTLED task once (probe()) */
	std::thread thread;
	cos_lord *lord = nullptr;
	uint64_t max_gap_ns = 0, max_gap_at_ns = 0;	/* longest pause of the loop, and when */
	uint64_t max_gap_end_ns = 0;
	pid_t tid = 0;
	int max_gap_cpu = -1;

	std::string name;			/* the enclave's ("": the thread's comm) */

	FifoLord(int lord_cpu, std::vector<int> cpus, unsigned stall_ms = 1000, unsigned ring_entries = 0,
		 unsigned starve_ms = 0, unsigned wake_rules = 0, std::string name = "")
		: lord_cpu(lord_cpu), cpus(std::move(cpus)), stall_ms(stall_ms), ring_entries(ring_entries),
		  starve_ms(starve_ms), wake_rules(wake_rules), name(std::move(name))
	{
		thread = std::thread([this] { run(); });
		while (!ready)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	~FifoLord() { finish(); }

	void finish()
	{
		stop = true;
		if (thread.joinable())
			thread.join();
	}

private:
	void run()
	{
		guest::LordOpts lo(cpus, stall_ms, starve_ms, lord_cpu);
		lo.o.ring_entries = ring_entries;
		if (!name.empty())
			lo.o.name = name.c_str();
		tid = gettid();
		register_error = cos_lord_register(&lord, &lo.o);
		if (!register_error && wake_rules)
			wake_rules_error = cos_lord_set_wake_rules(lord, wake_rules, 0);
		ready = true;
		if (register_error)
			return;
		resync();
		uint64_t last = guest::now_ns(), first = last;
		while (!stop) {
			uint64_t t = guest::now_ns();
			if (t - last > max_gap_ns) {
				max_gap_ns = t - last;
				max_gap_at_ns = t - first;
				max_gap_end_ns = t;
				max_gap_cpu = sched_getcpu();
			}
			last = t;
			if (pause) {
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
				continue;
			}
			bool progress = drain();
			progress |= place();
			cos_lord_publish(lord);
			if (!progress)
				cos_lord_wait(lord, 2000000);	/* 2 ms */
		}
		dropped = cos_lord_ctl(lord)->dropped;
		cos_lord_destroy(lord);
	}

	/* On a stall: what the kernel says waits or is queued, beside what this lord believes. */
	void dump_waiting()
	{
		for (unsigned s = 0; s < cos_lord_max_tasks(lord); s++) {
			cos_task_status st;
			cos_lord_task_status(lord, s, &st);
			if (!cos_lord_owns(lord, &st) || (st.state != COS_TASK_WAITING &&
			    st.state != COS_TASK_QUEUED && st.state != COS_TASK_FAIR))
				continue;
			auto q = queued.find(s);
			auto o = owner_of.find(s);
			fprintf(stderr, "stall: slot %u gen %u pid %u state %u cpu %u last_seq %llu | lord: %s%s consumed %llu\n",
				s, st.gen, st.pid, st.state, st.cpu, (unsigned long long)st.last_seq,
				q != queued.end() ? "queued " : "",
				o != owner_of.end() ? ("owner of cpu " + std::to_string(o->second)).c_str() : "",
				(unsigned long long)cos_lord_consumed(lord));
		}
		for (auto &[c, sl] : cpu_owner)
			fprintf(stderr, "stall: lord thinks cpu %d runs slot %u\n", c, sl);
		fprintf(stderr, "stall: lord runq %zu;", runq.size());
		for (auto &[st, n] : shoot_errors)
			fprintf(stderr, " %s x%u", cos_shoot_status_name(st), n);
		fprintf(stderr, "\n");
	}

	/* Tasks runnable before we registered are in the status table, not in the ring. */
	void resync()
	{
		for (unsigned s = 0; s < cos_lord_max_tasks(lord); s++) {
			cos_task_status st;
			cos_lord_task_status(lord, s, &st);
			if (st.state == COS_TASK_WAITING && cos_lord_owns(lord, &st))
				enqueue(s, st.gen);
		}
	}

	void enqueue(uint32_t slot, uint32_t gen)
	{
		auto it = queued.find(slot);
		if (it != queued.end() && it->second == gen)
			return;			/* already queued */
		queued[slot] = gen;		/* a reused slot: the old entry fails BAD_GEN */
		runq.push_back({slot, gen});
	}

	void release_cpu(uint32_t slot)
	{
		auto it = owner_of.find(slot);
		if (it != owner_of.end()) {
			cpu_owner.erase(it->second);
			owner_of.erase(it);
		}
	}

	bool drain()
	{
		bool any = false;
		const cos_msg *m;
		while ((m = cos_lord_peek(lord))) {
			cos_msg msg = *m;
			cos_lord_consume(lord);
			log.push_back(msg);
			any = true;
			switch (msg.type) {
			case COS_MSG_TASK_RUNNABLE:
			case COS_MSG_TASK_PREEMPTED:
			case COS_MSG_TASK_YIELD:
			case COS_MSG_SHOOT_FAILED:
			case COS_MSG_SHOOT_STALE:
				throttled.erase(msg.slot);
				release_cpu(msg.slot);
				enqueue(msg.slot, msg.gen);
				break;
			case COS_MSG_TASK_BLOCKED:
			case COS_MSG_TASK_DEAD:
				throttled.erase(msg.slot);
				release_cpu(msg.slot);
				queued.erase(msg.slot);
				refused.erase(msg.slot);
				break;
			case COS_MSG_TASK_AFFINITY:
				refused.erase(msg.slot);
				break;
			case COS_MSG_TASK_THROTTLED:	/* waits for group arg: not ours to place */
				release_cpu(msg.slot);
				queued.erase(msg.slot);
				throttled[msg.slot] = {msg.gen, msg.arg};
				if (probe_throttled && !cpu_owner.count(cpus[0]))
					probe(msg.slot, msg.gen);
				break;
			case COS_MSG_GROUP_UNTHROTTLED:	/* its tasks are runnable again */
				for (auto it = throttled.begin(); it != throttled.end();) {
					if (it->second.second == msg.arg) {
						enqueue(it->first, it->second.first);
						it = throttled.erase(it);
					} else {
						++it;
					}
				}
				break;
			case COS_MSG_TASK_PLACED: {	/* the kernel started it on arg's CPU */
				int cpu = (int)(uint32_t)msg.arg;

				release_cpu(msg.slot);
				queued.erase(msg.slot);
				if (cpu_owner.count(cpu))	/* its task left; a message follows */
					owner_of.erase(cpu_owner[cpu]);
				cpu_owner[cpu] = msg.slot;
				owner_of[msg.slot] = cpu;
				wake_placed.push_back({msg.slot, msg.gen, msg.pid, cpu});
				handoffs += !!(msg.arg & COS_PLACED_F_HANDOFF);
				break;
			}
			case COS_MSG_LORD_STALL:
				stall_reasons |= msg.arg;
				dump_waiting();
				[[fallthrough]];
			case COS_MSG_OVERFLOW:
				runq.clear();
				queued.clear();
				throttled.clear();
				cpu_owner.clear();
				owner_of.clear();
				resync();
				break;
			}
		}
		return any;
	}

	bool place()
	{
		std::vector<std::pair<int, std::pair<uint32_t, uint32_t>>> shot;
		for (int c : cpus) {
			if (cpu_owner.count(c) || runq.empty())
				continue;
			/* the first task in line that was not refused this CPU (COS_SHOOT_AFFINITY) */
			auto it = std::find_if(runq.begin(), runq.end(), [&](auto &e) {
				auto r = refused.find(e.first);
				return r == refused.end() || !r->second.count(c);
			});
			if (it == runq.end())
				continue;
			auto [slot, gen] = *it;
			runq.erase(it);
			auto q = queued.find(slot);
			if (q != queued.end() && q->second == gen)
				queued.erase(q);
			cos_lord_prepare(lord, c, slot, gen, 0);
			shot.push_back({c, {slot, gen}});
		}
		if (shot.empty())
			return false;
		cos_lord_shoot(lord, 0);
		bool placed_any = false;
		for (auto &[c, t] : shot) {
			unsigned st = cos_lord_shoot_status(lord, c);
			if (st == COS_SHOOT_OK) {
				placed_any = true;
				cpu_owner[c] = t.first;
				owner_of[t.first] = c;
				cos_task_status ts;
				cos_lord_task_status(lord, t.first, &ts);
				placed.push_back({t.first, t.second, ts.pid, c});
			} else if (st == COS_SHOOT_AFFINITY) {
				/* not allowed there: back in line, for another CPU */
				shoot_errors[st]++;
				refused[t.first].insert(c);
				queued[t.first] = t.second;
				runq.push_front(t);
			} else if (st == COS_SHOOT_BUSY) {
				/*
				 * The CPU still holds an earlier shoot (we forgot it in a resync).  No
				 * message will come for this task: keep it first in line.
				 */
				shoot_errors[st]++;
				queued[t.first] = t.second;
				runq.push_front(t);
			} else {
				shoot_errors[st]++;
				/* behind on its messages or not waiting: its next message re-queues it */
			}
		}
		return placed_any;
	}

	/*
	 * A shoot of a task the kernel just said is throttled, to see it refused
	 * (COS_SHOOT_THROTTLED, counted in shoot_errors); placed like any shoot if its group was
	 * released meanwhile.
	 */
	void probe(uint32_t slot, uint32_t gen)
	{
		int c = cpus[0];
		cos_lord_prepare(lord, c, slot, gen, 0);
		cos_lord_shoot(lord, 0);
		unsigned st = cos_lord_shoot_status(lord, c);
		if (st == COS_SHOOT_OK) {
			throttled.erase(slot);
			cpu_owner[c] = slot;
			owner_of[slot] = c;
		} else {
			shoot_errors[st]++;
		}
	}

	std::map<uint32_t, std::pair<uint32_t, uint64_t>> throttled;	/* slot -> gen, group */
	std::deque<std::pair<uint32_t, uint32_t>> runq;
	std::map<uint32_t, uint32_t> queued;	/* slot -> gen of queued entries */
	std::map<int, uint32_t> cpu_owner;	/* cpu -> slot placed there */
	std::map<uint32_t, int> owner_of;	/* slot -> cpu */
	std::map<uint32_t, std::set<int>> refused;	/* slot -> CPUs its shoots got AFFINITY on */
};
