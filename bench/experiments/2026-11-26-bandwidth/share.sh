#!/bin/bash
# One boot: overrun per throttling and rate with each CPU's budget timer for the whole budget
# (debugfs cos/bw_whole_budget=1) and for its share (=0), alternating; fair tasks under the
# shim and COS tasks under cos-fifo (5 ms turns), 4 spinners on CPUs 1-3, caps 50/150/250 %.
out=$1; S=${2:-8}; mkdir -p $out
cg=/sys/fs/cgroup/cos-share
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
stat() { cosctl --json groups | python3 -c 'import json, sys
g = [x for x in json.load(sys.stdin) if x["path"] == sys.argv[1]][0]
print(g["nr_throttled"], g["overrun_ns"])' $cg; }
echo "pass,kind,mode,cap,rate,throttles,overrun_us_per" > $out/share.csv
for pass in 1 2; do
for kind in fair cos; do
	if [ $kind = fair ]; then cosctl shim attach >/dev/null; run=();
	else cosctl shim attach >/dev/null; cos-fifo --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 2>>$out/lord.txt & L=$!; sleep 1; run=(cosctl run --); fi
	for mode in whole share; do
		echo $([ $mode = whole ] && echo 1 || echo 0) > /sys/kernel/debug/cos/bw_whole_budget
		for cap in 50 150 250; do
			cosctl groups set $cg $cap% >/dev/null
			read -r n0 o0 <<<"$(stat)"
			rate=$("${run[@]}" cos-bench-bandwidth --cgroup $cg --submissions 4 --measure-s $S --label x | awk '/used/ {print $5}')
			read -r n1 o1 <<<"$(stat)"
			echo "$pass,$kind,$mode,$cap,$rate,$((n1-n0)),$(((o1-o0)/1000/(n1>n0?n1-n0:1)))" | tee -a $out/share.csv
		done
	done
	[ $kind = cos ] && { kill -INT $L; wait $L; }
	cosctl shim detach >/dev/null
done
done
