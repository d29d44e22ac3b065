#!/bin/bash
# cos.ko's tracepoints: the module before them, with them off, with them on (its own tracefs
# instance), in one boot, cos-bench-lord (ioctl-1: one shoot per call; uring-mask), 3 rounds.
set -u
B=$COS_BUILD
OLD=/src/build/oldmod/cos.ko
NEW=$B/kmod/cos.ko
T=/sys/kernel/tracing
[ -d $T/instances ] || mount -t tracefs nodev $T
load() { rmmod cos 2>/dev/null; insmod "$1" || exit 1; }
run() { $B/bin/cos-bench-lord --seconds 4 --modes ioctl-1,uring-mask 2>&1 | grep -E "^(mode|ioctl|uring)" | sed "s/^/$1 /"; }
for r in 1 2 3; do
	load $OLD; run "r$r before"
	load $NEW; run "r$r off"
	mkdir $T/instances/tpb && echo 1 >$T/instances/tpb/events/cos/enable
	run "r$r on"
	echo 0 >$T/instances/tpb/events/cos/enable
	echo "r$r events: $(grep -c cos_ $T/instances/tpb/trace) in the buffer; per type: $(grep -o ' cos_[a-z_]*:' $T/instances/tpb/trace | sort | uniq -c | tr '\n' ' ')"
	rmdir $T/instances/tpb
done
rmmod cos
