#!/bin/bash
# overrun.sh OUT: caps of 50/150/250 % on 4 spinners (fair tasks, then COS tasks under cos-fifo),
# 10 s each, with the budget timer and throttle kick (kick) and without (tick: debugfs
# cos/bw_stop_at_tick), alternating; rate from cpu.stat, throttlings and overrun from cos.ko.
out=$1
mkdir -p $out
cg=/sys/fs/cgroup/cos-ovr
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p $cg
stat() { cosctl --json groups | python3 -c 'import json, sys
g = [x for x in json.load(sys.stdin) if x["path"] == sys.argv[1]][0]
print(g["nr_throttled"], g["overrun_ns"])' $cg; }
echo "round,mode,kind,cap,rate,throttles,overrun_us_per_throttle" > $out/overrun.csv
for round in 1 2; do
for mode in tick kick tick kick; do
	[ $mode = tick ] && echo Y > /sys/kernel/debug/cos/bw_stop_at_tick || echo N > /sys/kernel/debug/cos/bw_stop_at_tick
	for kind in fair cos; do
		if [ $kind = fair ]; then cosctl shim attach >/dev/null; run=();
		else cosctl shim attach >/dev/null; cos-fifo --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 2>>$out/lord.txt & L=$!; sleep 1; run=(cosctl run --); fi
		for cap in 50 150 250; do
			cosctl groups set $cg $cap% >/dev/null
			read -r n0 o0 <<<"$(stat)"
			rate=$("${run[@]}" cos-bench-bandwidth --cgroup $cg --submissions 4 --measure-s 4 --label x | awk '/used/ { print $5 }')
			read -r n1 o1 <<<"$(stat)"
			echo "$round,$mode,$kind,$cap,$rate,$((n1-n0)),$(( (o1-o0)/1000/(n1>n0?n1-n0:1) ))" | tee -a $out/overrun.csv
		done
		[ $kind = cos ] && { kill -INT $L; wait $L; }
		cosctl shim detach >/dev/null
	done
done
break
done
cosctl groups set $cg max >/dev/null; rmdir $cg
