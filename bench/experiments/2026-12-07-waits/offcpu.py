"""offcpu.py KERNEL-EVENTS: per db_bench thread, from `cosctl trace`'s kernel text (sched_switch,
sched_wakeup): how often it left the CPU blocked (S/D) or preempted, and its longest stretch off
the CPU of each kind (ms), with when it began."""
import re, sys, collections
sw = re.compile(r'\[(\d+)\].*?\s(\d+\.\d+): sched_switch: prev_comm=(\S+) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)')
wk = re.compile(r'\s(\d+\.\d+): sched_wakeup: comm=(\S+) pid=(\d+)')
out = {}   # tid -> (t_out, state)
gaps = collections.defaultdict(list)
ev = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = sw.search(line)
    if m:
        cpu, ts, pc, pp, st, nc, np_ = m.groups(); ts = float(ts)
        if pc == 'db_bench':
            out[pp] = (ts, st); ev[pp].append((ts, 'out', st))
        if nc == 'db_bench':
            if np_ in out:
                t0, st0 = out.pop(np_)
                gaps[np_].append((ts - t0, t0, st0))
            ev[np_].append((ts, 'in', ''))
        continue
    m = wk.search(line)
    if m and m.group(2) == 'db_bench':
        ev[m.group(3)].append((float(m.group(1)), 'wake', ''))
for tid in sorted(ev):
    g = gaps[tid]
    if not g: continue
    n_s = sum(1 for d, t, s in g if s[0] in 'SD'); n_r = len(g) - n_s
    mx = max(g)
    print(tid, 'switch-outs', len(g), 'blocked', n_s, 'preempted', n_r, 'max gap %.1f ms at %.3f state %s' % (mx[0]*1000, mx[1], mx[2]),
          'max blocked gap %.1f' % (max([d for d, t, s in g if s[0] in 'SD'] or [0])*1000),
          'max preempted gap %.1f' % (max([d for d, t, s in g if s[0] not in 'SD'] or [0])*1000))
