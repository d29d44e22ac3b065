#!/bin/bash
# Ceiling of 4 spinners on CPUs 1-3 under cos-shinjuku --slice-us 5000 (lord preempts only when one waits); and capped 250.
out=$1; mkdir -p $out
cg=/sys/fs/cgroup/cos-ceil
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
cosctl shim attach >/dev/null
for pass in 1 2; do
for cap in max 250% 150%; do
	cosctl groups set $cg $cap >/dev/null
	cos-shinjuku --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 >$out/lord-$cap.txt 2>&1 & L=$!; sleep 1
	i0=$(awk '/^cpu[123] / {s+=$5} END {print s}' /proc/stat)
	r=$(cosctl run -- cos-bench-bandwidth --cgroup $cg --submissions 4 --measure-s 8 --label x | awk '/used/ {print $5}')
	i1=$(awk '/^cpu[123] / {s+=$5} END {print s}' /proc/stat)
	echo "shinjuku cap $cap rate $r idle_cpu1-3 $(( (i1-i0) ))"
	kill -INT $L; wait $L; tail -2 $out/lord-$cap.txt
done
done
cosctl shim detach >/dev/null
