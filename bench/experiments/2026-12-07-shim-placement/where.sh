#!/bin/bash
# where.sh [occupancy|migrations] [CONFIG...] — in the guest: an unpinned redis client beside its
# server on CPU 1, under the default and under the shim (`cosctl run --`), seen through the
# kernel's events.  CONFIGs: default, shim, and any lord (e.g. cos-fifo: the lord on CPU 0, its
# enclave CPU 1); "default shim" if none.
#   occupancy:  per CPU, what ran there and for how long; where client and server ran and waited
#   migrations: each migration of the client with its call stack (where in the kernel it moved)
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- bench/experiments/2026-12-07-shim-placement/where.sh MODE
mode=${1:-occupancy}
shift
configs=${*:-default shim}
case $mode in
occupancy) events=(-e sched:sched_switch -e sched:sched_wakeup) fields=comm,tid,cpu,time,event,trace ;;
migrations) events=(-e sched:sched_migrate_task -e sched:sched_wakeup -g) fields=comm,cpu,event,trace,ip,sym ;;
*) echo "usage: where.sh [occupancy|migrations]" >&2; exit 2 ;;
esac
export PATH=$COS_BUILD/bin:$PATH
cd /tmp
occupancy() {
	python3 - "$1" <<'PY'
import sys, collections, re
occ=collections.defaultdict(collections.Counter); last={}; nsw=collections.Counter()
wk=collections.Counter(); pending={}; waits=collections.defaultdict(list)
for line in open(sys.argv[1]):
    m=re.match(r'\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)',line)
    if not m: continue
    comm,tid,cpu,t,ev,rest=m.groups(); cpu=int(cpu); t=float(t)
    if ev=='sched:sched_switch':
        pc=re.search(r'prev_comm=(.*?) prev_pid=(\d+).*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)',rest)
        prev,ppid,pst,nxt,npid=pc.groups()
        if cpu in last: occ[cpu][prev]+=t-last[cpu]
        last[cpu]=t; nsw[(cpu,nxt)]+=1
        if pst in ('R','R+'): pending[npid]=None; pending[ppid]=(t,cpu)
        if npid in pending and pending[npid]:
            waits[nxt].append(t-pending[npid][0])
        pending.pop(npid,None)
    elif ev=='sched:sched_wakeup':
        w=re.search(r'comm=(.*?) pid=(\d+).*target_cpu=(\d+)',rest)
        wk[(w.group(1),cpu,int(w.group(3)))]+=1
        pending[w.group(2)]=(t,cpu)
for cpu in sorted(occ):
    tot=sum(occ[cpu].values())
    print('cpu%d:'%cpu, ', '.join('%s %.0f%%'%(c,100*v/tot) for c,v in occ[cpu].most_common(6)))
for k in ('redis-benchmark','redis-server'):
    print(k,'switched in on cpu0/1:',nsw[(0,k)],nsw[(1,k)],
          ' waits n=%d mean=%.0fus max=%.0fus'%(len(waits[k]),1e6*sum(waits[k])/max(1,len(waits[k])),1e6*max(waits[k] or [0])))
print('wakeups (comm, waker cpu, target):', [(k,v) for k,v in wk.most_common(6)])
PY
}
migrations() {
	python3 - "$1" <<'PY'
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
run() {  # LABEL PREFIX...
	local label=$1; shift
	"$@" taskset -c 1 redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no --protected-mode no >/dev/null 2>&1 &
	local pid=$!
	for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/16379) 2>/dev/null && break; sleep 0.05; done
	perf record -q "${events[@]}" -a -o /tmp/$label.data -- \
		redis-benchmark -p 16379 -c 16 -n 20000 -r 100000 -d 64 -t set,get --csv > /tmp/$label.txt 2>&1
	kill $pid; wait $pid 2>/dev/null
	echo "== $label: $(grep -o '"[GS]ET","[0-9.]*"' /tmp/$label.txt | tr '\n' ' ')"
	perf script -i /tmp/$label.data -F $fields 2>/dev/null > /tmp/$label.script
	$mode /tmp/$label.script
}
for config in $configs; do
	case $config in
	default) run default ;;
	shim)
		cosctl shim attach >/dev/null
		run shim cosctl run --
		cosctl shim detach >/dev/null
		;;
	*)
		$config --cpus 1 --lord-cpu 0 2>/tmp/$config.lord &
		lord=$!
		for i in $(seq 100); do grep -q "lord on CPU" /tmp/$config.lord && break; sleep 0.05; done
		run "$config" cosctl run --
		kill -INT $lord; wait $lord
		tail -3 /tmp/$config.lord
		;;
	esac
done
