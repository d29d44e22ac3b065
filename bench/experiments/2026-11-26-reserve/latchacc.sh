#!/bin/bash
# COS tasks' cap accuracy under cos-fifo (5 ms turns) without and with --latch 1, alternating.
out=$1; S=${2:-8}; mkdir -p $out
cg=/sys/fs/cgroup/cos-latchacc
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
stat() { cosctl --json groups | python3 -c 'import json, sys
g = [x for x in json.load(sys.stdin) if x["path"] == sys.argv[1]][0]
print(g["nr_throttled"], g["overrun_ns"])' $cg; }
echo "pass,latch,cap,rate,throttles,overrun_us_per" > $out/latchacc.csv
cosctl shim attach >/dev/null
for pass in 1 2; do
for latch in 0 1; do
	cos-fifo --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 --latch $latch 2>>$out/lord.txt >>$out/lord.txt & L=$!; sleep 1
	for cap in 150 250 max; do
		cosctl groups set $cg $([ $cap = max ] && echo max || echo $cap%) >/dev/null
		read -r n0 o0 <<<"$(stat)"
		rate=$(cosctl run -- cos-bench-bandwidth --cgroup $cg --submissions 4 --measure-s $S --label x | awk '/used/ {print $5}')
		read -r n1 o1 <<<"$(stat)"
		echo "$pass,$latch,$cap,$rate,$((n1-n0)),$(((o1-o0)/1000/(n1>n0?n1-n0:1)))" | tee -a $out/latchacc.csv
	done
	kill -INT $L; wait $L
done
done
cosctl shim detach >/dev/null
dmesg | grep -iE "warn|bug|oops|disabled" | head
