#!/bin/bash
# Ceiling of 4 spinners on CPUs 1-3 under cos-fifo --slice-us 5000 with --latch 0..4; per-CPU idle.
out=$1; mkdir -p $out
cg=/sys/fs/cgroup/cos-ceil
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
cosctl shim attach >/dev/null
for latch in 0 1 2 4; do
	cos-fifo --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 --latch $latch >$out/lord-$latch.txt 2>&1 & L=$!; sleep 1
	i0=$(awk '/^cpu[123] / {s+=$5} END {print s}' /proc/stat)
	r=$(cosctl run -- cos-bench-bandwidth --cgroup $cg --submissions 4 --measure-s 6 --label x | awk '/used/ {print $5}')
	i1=$(awk '/^cpu[123] / {s+=$5} END {print s}' /proc/stat)
	echo "latch $latch rate $r idle_cpu1-3 $(( (i1-i0) )) jiffies-ish"
	kill -INT $L; wait $L; tail -2 $out/lord-$latch.txt
done
cosctl shim detach >/dev/null
