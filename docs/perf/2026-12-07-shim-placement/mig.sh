#!/bin/bash
# Where does an unpinned redis client migrate, default vs shim?  perf stacks of sched_migrate_task.
export PATH=$COS_BUILD/bin:$PATH
cd /tmp
run() {  # LABEL PREFIX...
	local label=$1; shift
	"$@" taskset -c 1 redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no --protected-mode no >/dev/null 2>&1 &
	local pid=$!
	for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/16379) 2>/dev/null && break; sleep 0.05; done
	perf record -q -e sched:sched_migrate_task -e sched:sched_wakeup -g -a -o /tmp/$label.data -- \
		redis-benchmark -p 16379 -c 16 -n 20000 -r 100000 -d 64 -t set,get --csv > /tmp/$label.txt 2>&1
	kill $pid; wait $pid 2>/dev/null
	echo "== $label: $(tr '\n' ' ' < /tmp/$label.txt)"
	perf script -i /tmp/$label.data -F comm,cpu,event,trace,ip,sym 2>/dev/null > /tmp/$label.script
	python3 - /tmp/$label.script <<'PY'
import sys, collections
evs=[]; cur=None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur: evs.append(cur); cur=None
        continue
    if not line.startswith((' ','\t')):
        cur={'head':line.strip(),'stack':[]}
    elif cur is not None:
        parts=line.split()
        if len(parts)>=2: cur['stack'].append(parts[1])
if cur: evs.append(cur)
mig=collections.Counter(); wake=collections.Counter()
for e in evs:
    h=e['head']
    if 'sched_migrate_task' in h and 'comm=redis-benchmark' in h:
        key=' <- '.join(e['stack'][:9])
        mig[(h.split('orig_cpu=')[1].split()[0], h.split('dest_cpu=')[1].split()[0], key)]+=1
    if 'sched_wakeup' in h and 'comm=redis-benchmark' in h:
        wake[(h.split()[1], 'target_cpu='+h.split('target_cpu=')[1].split()[0])]+=1
print('migrations of redis-benchmark:', sum(mig.values()))
for k,v in mig.most_common(8): print(v, k)
print('wakeups of redis-benchmark (waker cpu, target):')
for k,v in wake.most_common(8): print(v, k)
PY
}
run default
cosctl shim attach >/dev/null
run shim cosctl run --
cosctl shim detach >/dev/null
