#!/bin/bash
# Is cos-cap's distance from CFS-cap the lord's vCPU?  CFS configs with and without a spinner
# on CPU 0 (where the lord sits), beside the cos ones, two passes.
out=$1; R=${2:-20}; mkdir -p $out
cg=/sys/fs/cgroup/cos-bench-submissions
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
bw="cos-bench-bandwidth --cgroup $cg --submissions 10 --reps $R --work-ms 50"
for pass in 1 2; do
for conf in alone alone-spin0 default-cap default-cap-spin0 cos-alone cos-cap cos-class1-alone cos-class1-cap; do
	cap=max; [[ $conf == *-cap* ]] && cap=150%
	cosctl groups set $cg $cap >/dev/null
	run=(); subs=(); S=
	[[ $conf == *alone* ]] && subs=(--submissions 0)
	[[ $conf == *spin0 ]] && { taskset -c 0 sh -c 'while :; do :; done' & S=$!; }
	case $conf in
	cos-class1*) cosctl shim attach >/dev/null; cos-shinjuku --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 >>$out/lord.txt 2>&1 & L=$!; run=(cosctl run --policy-class 1 --);;
	cos*) cosctl shim attach >/dev/null; cos-fifo --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 --latch 1 >>$out/lord.txt 2>&1 & L=$!; run=(cosctl run --);;
	esac
	[[ $conf == cos* ]] && for _ in $(seq 100); do cosctl status | grep -q '^lord: *thread' && break; sleep 0.1; done
	echo "$pass $("${run[@]}" $bw "${subs[@]}" --label $conf)" | tee -a $out/spin0.txt
	[ -n "$S" ] && kill $S
	[[ $conf == cos* ]] && { kill -INT $L; wait $L; cosctl shim detach >/dev/null; }
done
done
cosctl groups set $cg max; rmdir $cg
