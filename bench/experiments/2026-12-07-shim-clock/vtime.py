#!/usr/bin/env python3
"""vtime.py SCRIPT — read `perf script` output of why-vtime.sh: who advanced CPU 1's clock (the
largest vtime started there), the three longest waits of a db_bench thread on CPU 1 with where
each other reader's vtime stood against the waiter's when it began, and every reader's vtime at
insertion against CPU 1's clock."""
import collections
import re
import sys

ev = []
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)', line)
    if m:
        comm, tid, cpu, t, e, rest = m.groups()
        ev.append((float(t), int(cpu), comm, int(tid), e, rest))

def args(rest):
    return dict(re.findall(r'(\w+)=(\S+)', rest))

comm_of = {}
starts = []      # (t, cpu, pid, vtime, CPU 1's clock before)
waits = []       # (length, pid, end, how it began)
waitfrom = {}
clock = 0
for t, cpu, comm, tid, e, rest in ev:
    if e.startswith('fprobes:setnext'):
        a = args(rest)
        pid, v = int(a['arg1']), int(a['arg2'])
        starts.append((t, cpu, pid, v, clock))
        if cpu == 1 and v > clock:
            clock = v
    elif e.startswith('sched:sched_switch'):
        pc = re.search(r'prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)', rest)
        pcomm, ppid, pst, ncomm, npid = pc.groups()
        ppid, npid = int(ppid), int(npid)
        comm_of[ppid], comm_of[npid] = pcomm, ncomm
        if cpu == 1 and pst.startswith('R') and pcomm == 'db_bench':
            waitfrom[ppid] = (t, 'preempted')
        if cpu == 1 and npid in waitfrom:
            t0, how = waitfrom.pop(npid)
            waits.append((t - t0, npid, t, how))
    elif e.startswith('sched:sched_wakeup'):
        w = re.search(r'comm=(.*?) pid=(\d+)', rest)
        if w.group(1) == 'db_bench':
            waitfrom[int(w.group(2))] = (t, 'woken')

adv = collections.Counter()
last = {}
for t, cpu, pid, v, c in starts:
    if cpu == 1 and v > c:
        adv[comm_of.get(pid, '?')] += v - c
print('  CPU 1\'s clock advanced by, ms:', ', '.join('%s %.1f' % (k, v / 1e6) for k, v in adv.most_common(4)))

waits.sort(reverse=True)
for w, pid, t, how in waits[:3]:
    t0 = t - w
    wv = next((s[3] for s in starts if s[2] == pid and abs(s[0] - t) < 1e-4), None)
    if wv is None:
        continue
    print('  %d waited %.1f ms (%s)' % (pid, 1e3 * w, how))
    seen, clk, wins = {}, 0, None
    for tt, cpu, comm, tid, e, rest in ev:
        if tt > t0 + 1e-4:
            break
        a = args(rest)
        if e.startswith('fprobes:setnext'):
            seen[int(a['arg1'])] = ('started', int(a['arg2']), tt)
            if cpu == 1 and int(a['arg2']) > clk:
                clk = int(a['arg2'])
        elif e.startswith('fprobes:insv'):
            seen[int(a['arg1'])] = ('queued', int(a['vtime']), tt)
            if int(a['arg1']) == pid:
                wins = (int(a['vtime']), clk, tt)
    if wins:
        print('    it was queued at the clock %+.2f ms' % ((wins[0] - wins[1]) / 1e6))
    for p, (k, v, tt) in sorted(seen.items()):
        if comm_of.get(p) == 'db_bench' and p != pid and t0 - tt < 0.1:
            print('    %d last %s %.1f ms before, at its vtime %+.2f ms' % (p, k, 1e3 * (t0 - tt), (v - wv) / 1e6))
    per = collections.defaultdict(list)
    for s in starts:
        if t0 < s[0] < t and s[1] == 1:
            per[s[2]].append((s[3] - wv) / 1e6)
    for p, vs in per.items():
        print('    meanwhile %s/%d started %d times, at its vtime %s ms' % (comm_of.get(p, '?'), p, len(vs), ' '.join('%+.1f' % x for x in vs)))

d = collections.defaultdict(list)
clock = 0
for t, cpu, comm, tid, e, rest in ev:
    a = args(rest)
    if e.startswith('fprobes:setnext') and cpu == 1:
        clock = max(clock, int(a['arg2']))
    elif e.startswith('fprobes:insv') and comm_of.get(int(a['arg1'])) == 'db_bench':
        d['woken' if int(a['enq_flags'], 16) & 1 else 'other'].append((int(a['vtime']) - clock) / 1e6)
for k, vs in sorted(d.items()):
    vs.sort()
    n = len(vs)
    print('  readers queued (%s): %d, vtime against the clock, ms: min %.2f p10 %.2f p50 %.2f p90 %.2f max %.2f'
          % (k, n, vs[0], vs[n // 10], vs[n // 2], vs[9 * n // 10], vs[-1]))
