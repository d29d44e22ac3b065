#!/bin/bash
# why.sh — in the guest: sysbench threads (8 threads on CPU 1, 3 s) under the default and
# under the shim (`cosctl run --`: COS tasks with no lord; and plain tasks), CPU 1's
# sched_switch events recorded over the whole run; per configuration, each
# thread's longest wait for CPU 1 and what ran there meanwhile (who, how many turns, how long).
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- bench/experiments/2026-12-07-shim-yield/why.sh
export PATH=$COS_BUILD/bin:$PATH
cd /tmp
analyse() {
	python3 - "$1" <<'PY'
import sys, re, collections
waitfrom = {}; longest = {}; timeline = []; runs = collections.Counter(); ran = collections.Counter()
last = None
for line in open(sys.argv[1]):
    m = re.match(r'\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:\s+(.*)', line)
    if not m:
        continue
    t = float(m.group(4)); rest = m.group(5)
    pc = re.search(r'prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)', rest)
    if not pc:
        continue
    pcomm, ppid, pst, ncomm, npid = pc.groups()
    if last:
        timeline.append((last[0], t, last[1], last[2]))
        ran[(last[1], last[2])] += t - last[0]
    runs[(ncomm, npid)] += 1
    if pst.startswith('R'):
        waitfrom[ppid] = t
    if npid in waitfrom:
        w = t - waitfrom.pop(npid)
        if ncomm == 'sysbench' and w > longest.get(npid, (0,))[0]:
            longest[npid] = (w, t)
    last = (t, ncomm, npid)
span = timeline[-1][1] - timeline[0][0] if timeline else 0
print('  switches on CPU 1: %d in %.2f s' % (len(timeline), span))
print('  time on CPU 1:', ', '.join('%s/%s %.0f ms (%d turns)' % (c, p, 1e3 * v, runs[(c, p)]) for (c, p), v in ran.most_common(12)))
for tid, (w, t) in sorted(longest.items(), key=lambda x: -x[1][0])[:3]:
    during = collections.Counter(); turns = collections.Counter()
    for a, b, c, p in timeline:
        if b > t - w and a < t:
            during[(c, p)] += min(b, t) - max(a, t - w); turns[(c, p)] += 1
    print('  sysbench/%s waited %.1f ms until %.3f s in; meanwhile: %s' % (tid, 1e3 * w, t - timeline[0][0],
          ', '.join('%s/%s %.1f ms in %d turns' % (c, p, 1e3 * v, turns[(c, p)]) for (c, p), v in during.most_common(9))))
PY
}
one() {  # LABEL PREFIX...
	local label=$1; shift
	perf record -q -e sched:sched_switch -C 1 -o /tmp/$label.data -- \
		"$@" taskset -c 1 sysbench threads --threads=8 --thread-locks=8 --thread-yields=100 --time=3 run >/tmp/$label.txt 2>&1
	echo "== $label: $(awk '/events per second|total number of events|max:/' /tmp/$label.txt | tr -s ' ' | tr '\n' ' ')"
	perf script -i /tmp/$label.data -F comm,tid,cpu,time,event,trace 2>/dev/null > /tmp/$label.script
	analyse /tmp/$label.script
}
one default
cosctl shim attach >/dev/null
one shim cosctl run --
one shim-fair
cosctl shim detach >/dev/null
