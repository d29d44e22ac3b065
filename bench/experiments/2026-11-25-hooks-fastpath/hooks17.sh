#!/bin/bash
# hooks17.sh WHICH N: BENCH=hooks with the build before the hooks' fast path (wt17) or now (main)
which=$1 n=$2
if [ "$which" = before ]; then
	B=/src/build/wt17/build/7.3.4+deb13-cloud-amd64 R=/src/build/wt17
else
	B=/src/build/7.3.4+deb13-cloud-amd64 R=/src
fi
insmod $B/kmod/cos.ko || exit 1
export COS_BUILD=$B PATH=$B/bin:$PATH
OUT=/src/build/hk17-$which-$n BENCH=hooks $R/bench/run > /dev/null 2>&1
echo "$which $n: rc=$?"
for i in $(seq 30); do rmmod cos 2>/dev/null && break; sleep 1; done
