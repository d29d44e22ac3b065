#!/usr/bin/env python3
"""waits.py COMM SCRIPT — from `perf script` of sched_switch and sched_wakeup on one CPU: the
turns of COMM's threads on it, their waits (from a wake-up or a preemption to running), and the
three longest with what ran meanwhile (who, for how long, in how many turns)."""
import collections
import re
import sys

comm_want, path = sys.argv[1], sys.argv[2]
tl, last, waitfrom, waits = [], None, {}, []
runlen = collections.defaultdict(list)
for line in open(path):
    m = re.search(r'\s([\d.]+):\s+sched:sched_(switch|wakeup):\s+(.*)', line)
    if not m:
        continue
    t, rest = float(m.group(1)), m.group(3)
    if m.group(2) == 'wakeup':
        w = re.search(r'comm=(.*?) pid=(\d+)', rest)
        if w.group(1) == comm_want:
            waitfrom[w.group(2)] = (t, 'woken')
        continue
    pc = re.search(r'prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)', rest)
    pcomm, ppid, pst, ncomm, npid = pc.groups()
    if last:
        tl.append((last[0], t, last[1]))
        if last[1].startswith(comm_want + '/'):
            runlen[last[1]].append(t - last[0])
    if pst.startswith('R') and pcomm == comm_want:
        waitfrom[ppid] = (t, 'preempted')
    if npid in waitfrom:
        t0, kind = waitfrom.pop(npid)
        waits.append((t - t0, npid, t, kind))
    last = (t, ncomm + '/' + npid)
rl = sorted(x for v in runlen.values() for x in v)
if rl:
    print('  turns of %s: %d, median %.2f ms, p90 %.2f, max %.2f' % (comm_want, len(rl), 1e3 * rl[len(rl) // 2], 1e3 * rl[int(len(rl) * .9)], 1e3 * rl[-1]))
print('  waits by start:', dict(collections.Counter(k for _, _, _, k in waits)))
waits.sort(reverse=True)
for w, pid, t, kind in waits[:3]:
    who, turns = collections.Counter(), collections.Counter()
    for a, b, c in tl:
        if b > t - w and a < t:
            who[c] += min(b, t) - max(a, t - w)
            turns[c] += 1
    print('  %s/%s waited %.1f ms (%s); meanwhile: %s' % (comm_want, pid, 1e3 * w, kind, ', '.join(
        '%s %.1f ms/%d' % (c, 1e3 * v, turns[c]) for c, v in who.most_common(9))))
