#!/bin/bash
# reproduce cos-shinjuku's starvation stalls: module reloaded and shim attached per run
out=$1; mkdir -p $out
cg=/sys/fs/cgroup/cos-bench-submissions
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
# (the dump of the lord's books at a stall was a temporary print in libcos, not kept)
for pass in $(seq ${2:-6}); do
	for _ in $(seq 50); do rmmod cos 2>/dev/null; grep -q "^cos " /proc/modules || break; sleep 0.2; done
	insmod $COS_BUILD/kmod/cos.ko || exit 1
	cosctl shim attach >/dev/null
	cos-shinjuku --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 2>>$out/lord-$pass.txt &
	L=$!
	for _ in $(seq 100); do cosctl status | grep -q '^lord: *thread' && break; sleep 0.1; done
	cosctl run --policy-class 1 -- cos-bench-bandwidth --cgroup $cg --submissions 10 --reps 20 --work-ms 50 --label p$pass | tee -a $out/res.txt
	kill -INT $L; wait $L
	cosctl shim detach >/dev/null
	grep -c STALL $out/lord-$pass.txt
done
dmesg | grep stalled
