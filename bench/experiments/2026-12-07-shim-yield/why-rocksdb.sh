#!/bin/bash
# why-rocksdb.sh — in the guest: RocksDB readrandom, 8 readers on CPU 1 for 3 s, under the default
# and the shim (`cosctl run --`), CPU 1's sched_switch and sched_wakeup events recorded; the
# readers' turns on the CPU, their waits (from a wake-up or a preemption), and the three
# longest with what ran meanwhile (who, for how long, in how many turns).
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- bench/experiments/2026-12-07-shim-yield/why-rocksdb.sh
export PATH=$COS_BUILD/bin:$PATH
cd /tmp
db_bench --benchmarks=fillseq --db=/tmp/rdb --num=200000 --value_size=100 --compression_type=none --disable_wal=1 >/dev/null 2>&1
for cfg in default shim; do
run=(); [ $cfg = shim ] && { cosctl shim attach >/dev/null; run=(cosctl run --); }
perf record -q -e sched:sched_switch -e sched:sched_wakeup -C 1 -o /tmp/s.data -- "${run[@]}" taskset -c 1 db_bench --benchmarks=readrandom --use_existing_db=1 --db=/tmp/rdb --num=200000 --threads=8 --duration=3 --cache_size=$((256 << 20)) --compression_type=none >/tmp/s.txt 2>&1
[ $cfg = shim ] && cosctl shim detach >/dev/null
echo "== $cfg: $(grep readrandom /tmp/s.txt)"
perf script -i /tmp/s.data -F comm,tid,cpu,time,event,trace 2>/dev/null > /tmp/s.script
python3 - /tmp/s.script <<'PY'
import sys, re, collections
tl = []; last = None; waitfrom = {}; waits = []; runlen = collections.defaultdict(list); wakes = collections.Counter(); why = collections.Counter()
for line in open(sys.argv[1]):
    m = re.search(r'\s([\d.]+):\s+sched:sched_(switch|wakeup):\s+(.*)', line)
    if not m: continue
    t = float(m.group(1)); rest = m.group(3)
    if m.group(2) == 'wakeup':
        w = re.search(r'comm=(.*?) pid=(\d+)', rest)
        if w.group(1) == 'db_bench': waitfrom[w.group(2)] = (t, 'woken'); wakes[w.group(2)] += 1
        continue
    pc = re.search(r'prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)', rest)
    pcomm, ppid, pst, ncomm, npid = pc.groups()
    if last:
        tl.append((last[0], t, last[1]))
        if last[1].startswith('db_bench'): runlen[last[1]].append(t - last[0])
    if pst.startswith('R') and pcomm == 'db_bench': waitfrom[ppid] = (t, 'preempted')
    if npid in waitfrom:
        t0, kind = waitfrom.pop(npid); waits.append((t - t0, npid, t, kind))
    last = (t, ncomm + '/' + npid)
allrl = [x for v in runlen.values() for x in v]
allrl.sort()
print('  turns of readers: %d, median %.2f ms, p90 %.2f, max %.2f' % (len(allrl), 1e3*allrl[len(allrl)//2], 1e3*allrl[int(len(allrl)*.9)], 1e3*allrl[-1]))
kinds = collections.Counter(k for _,_,_,k in waits); print('  waits by start:', dict(kinds))
waits.sort(reverse=True)
for w, pid, t, kind in waits[:3]:
    who = collections.Counter(); turns = collections.Counter()
    for a, b, c in tl:
        if b > t - w and a < t:
            who[c] += min(b, t) - max(a, t - w); turns[c] += 1
    print('  db_bench/%s waited %.1f ms (%s); meanwhile: %s' % (pid, 1e3*w, kind, ', '.join('%s %.1f ms/%d' % (c, 1e3*v, turns[c]) for c, v in who.most_common(9))))
PY
done
