#!/usr/bin/env bash
# ab.sh OLD NEW [ROUNDS] — in one guest boot, alternate two builds of cos (each a build/<kver>
# directory with kmod/cos.ko and bin/) and measure what the dispatch change touches: the
# shim's ops per call under cos-fifo (bpf_stats), the COS workload's throughput, and
# delegation latency (cos-bench-delegation, beside the futex wake-up in the same run).
# Run in a guest: tests/vm/run --no-module -- bench/experiments/2026-11-26-dispatch/ab.sh OLD NEW 3
set -u
old=$1 new=$2 rounds=${3:-3}
out=${COS_RUN_DIR:-/tmp}/ab
last=$(($(nproc) - 1))	# the lord on CPU 0, its enclave the others
mkdir -p "$out"
echo 1 >/proc/sys/kernel/bpf_stats_enabled
unload() {	# the last shim's programs may hold cos.ko a moment after they detach
	for _ in $(seq 100); do
		grep -q '^cos ' /proc/modules || return 0
		rmmod cos 2>/dev/null && return 0
		sleep 0.1
	done
	echo "ab: cos.ko stays loaded" >&2
	exit 1
}
for r in $(seq "$rounds"); do
	for v in old new; do
		b=${!v}
		unload
		insmod "$b/kmod/cos.ko" || exit 1
		grep -E '^(ctxt|intr)' /proc/stat >"$out/$v-$r-stat-before.txt"
		"$b/bin/cos-fifo" --cpus "1-$last" --lord-cpu 0 --stall-ms 1000 2>"$out/$v-$r-lord.txt" &
		lord=$!
		for _ in $(seq 100); do
			"$b/bin/cosctl" status | grep -q '^lord: *thread' && break
			sleep 0.1
		done
		bpftool prog show --json >"$out/$v-$r-before.json"
		"$b/bin/cosctl" run -- perf bench -f simple sched pipe -l 20000 >"$out/$v-$r-pipe.txt" 2>&1
		"$b/bin/cosctl" run -- hackbench -g 4 -f 10 -l 100 >"$out/$v-$r-hackbench.txt" 2>&1
		bpftool prog show --json >"$out/$v-$r-after.json"
		kill -USR1 "$lord"
		sleep 0.5
		kill -INT "$lord"
		wait "$lord"
		grep -E '^(ctxt|intr)' /proc/stat >"$out/$v-$r-stat-after.txt"
		"$b/bin/cos-bench-delegation" --shoots 500 --hogs "0,$last" --submit ioctl \
			>"$out/$v-$r-delegation.txt" 2>&1
	done
done
unload
echo "ab: done"
