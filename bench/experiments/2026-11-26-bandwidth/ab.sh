#!/bin/bash
# A/B in one boot: the cos (uncapped) config of BENCH=bandwidth with the HEAD build and the
# working tree's build, alternating.  $1: output dir
out=$1; mkdir -p $out
K=$(uname -r)
NEW=/src/build/$K; OLD=/src/build/ab-head/build/$K
cg=/sys/fs/cgroup/cos-bench-submissions
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
for pass in 1 2 3; do
for v in new old; do
	B=$NEW; [ $v = old ] && B=$OLD
	for _ in $(seq 50); do rmmod cos 2>/dev/null; grep -q "^cos " /proc/modules || break; sleep 0.2; done; insmod $B/kmod/cos.ko || { echo insmod failed; exit 1; }
	export PATH=$B/bin:$PATH
	$B/bin/cosctl shim attach >/dev/null
	$B/bin/cos-shinjuku --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 2>>$out/lord-$v-$pass.txt &
	L=$!
	for _ in $(seq 100); do $B/bin/cosctl status | grep -q '^lord: *thread' && break; sleep 0.1; done
	id=$(bpftool map show | awk -F: '/\.bss/ {print $1}' | tail -1); bpftool map dump id $id | grep -E 'cos_nr_(weighted|limited)' | tr -d ' \n' ; echo
	$B/bin/cosctl run --policy-class 1 -- $B/bin/cos-bench-bandwidth --cgroup $cg --submissions 10 --reps 20 --work-ms 50 --label $v-$pass | tee -a $out/res.txt
	kill -INT $L; wait $L
	$B/bin/cosctl shim detach >/dev/null
	tail -2 $out/lord-$v-$pass.txt | head -1
done
done
dmesg | grep stalled
