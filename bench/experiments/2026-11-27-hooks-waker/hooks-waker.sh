#!/bin/bash
# hooks-waker.sh: BENCH=hooks with the build before cos_msg.waker (45b658c, a worktree at
# build/wtw) and with it (main), alternating, twice each, in one guest booted --no-module:
#   git worktree add build/wtw 45b658c
#   tests/vm/chroot exec make -C /src/build/wtw COS_INNER=1 KVER=7.3.4+deb13-cloud-amd64 \
#       inner-user build/7.3.4+deb13-cloud-amd64/kmod/cos.ko
#   COS_ACCEL=tcg tests/vm/run --kver 7.3.4 --smp 2 --no-module --out build/vm/hooks-waker \
#       -- /src/bench/experiments/2026-11-27-hooks-waker/hooks-waker.sh
K=7.3.4+deb13-cloud-amd64
for n in 1 2; do
	for which in before after; do
		if [ "$which" = before ]; then
			B=/src/build/wtw/build/$K R=/src/build/wtw
		else
			B=/src/build/$K R=/src
		fi
		insmod $B/kmod/cos.ko || exit 1
		PATH=$B/bin:/src/build/$K/bin:$PATH COS_BUILD=$B OUT=/src/build/hkw-$which-$n \
			BENCH=hooks $R/bench/run >/dev/null 2>&1
		echo "$which $n: rc=$?"
		for i in $(seq 30); do rmmod cos 2>/dev/null && break; sleep 1; done
	done
done
