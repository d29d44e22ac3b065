#!/bin/bash
# cos (uncapped) config of BENCH=bandwidth under cos-shinjuku --latch 1 and --latch 0, alternating
out=$1; mkdir -p $out
cg=/sys/fs/cgroup/cos-bench-submissions
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
cosctl shim attach >/dev/null
for pass in 1 2 3 4; do
for latch in 1 0; do
	cos-shinjuku --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 --latch $latch 2>>$out/lord-$latch-$pass.txt &
	L=$!
	for _ in $(seq 100); do cosctl status | grep -q '^lord: *thread' && break; sleep 0.1; done
	s0=$(dmesg | grep -c stalled)
	cosctl run --policy-class 1 -- cos-bench-bandwidth --cgroup $cg --submissions 10 --reps 20 --work-ms 50 --label latch$latch-$pass | tee -a $out/res.txt
	kill -INT $L; wait $L
	echo "stalls: $(( $(dmesg | grep -c stalled) - s0 ))"
done
done
dmesg | grep stalled
