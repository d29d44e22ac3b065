#!/bin/bash
export PATH=$COS_BUILD/bin:$PATH
sysctl -q kernel.bpf_stats_enabled=1
runs() { bpftool -j prog show 2>/dev/null | python3 -c '
import json,sys
t=0; per={}
for p in json.load(sys.stdin):
    if p.get("name","").startswith("cos_"):
        per[p["name"]]=p.get("run_cnt",0); t+=p.get("run_cnt",0)
print(t, " ".join(f"{k}={v}" for k,v in sorted(per.items()) if v))'; }
for mode in full partial; do
	if [ $mode = full ]; then cosctl shim attach >/dev/null; pin=(); else cosctl shim attach --partial 1 >/dev/null; pin=(); fi
	a=$(runs); c0=$(awk '$1=="ctxt"{print $2}' /proc/stat)
	perf bench -f simple sched pipe -l 20000 >/dev/null 2>&1
	hackbench -g 4 -f 10 -l 100 >/dev/null 2>&1
	b=$(runs); c1=$(awk '$1=="ctxt"{print $2}' /proc/stat)
	echo "$mode: before [$a] after [$b] ctxt $((c1-c0))"
	cosctl shim detach >/dev/null
done
