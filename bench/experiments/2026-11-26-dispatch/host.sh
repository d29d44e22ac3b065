#!/usr/bin/env bash
# host.sh OUT — run ab.sh in one guest (--smp 2 --no-module) and record, on the host, the time
# QEMU's threads spent runnable but waiting for a host CPU (schedstat field 2), at the start
# and the end of the run: the host-side wait of the vCPUs.
set -u
out=$1
top=$(git rev-parse --show-toplevel)
k=7.3.4+deb13-cloud-amd64
cd "$top"
COS_ACCEL=tcg tests/vm/run --kver 7.3.4 --smp 2 --no-module --quiet --timeout 1500 --out "$out" -- \
	bench/experiments/2026-11-26-dispatch/ab.sh "/src/build/ab-old/build/$k" "/src/build/$k" 5 &
run=$!
wait_of() {	# the sum of schedstat's run and wait fields over QEMU's threads
	local pid
	pid=$(pgrep -n -f "qemu-system-x86_64.*$out") || return
	cat /proc/"$pid"/task/*/schedstat 2>/dev/null | awk '{r += $1; w += $2} END {print r, w}'
}
sleep 20
first=$(wait_of)
last=$first
while kill -0 "$run" 2>/dev/null; do
	now=$(wait_of)
	[ -n "$now" ] && last=$now
	sleep 5
done
wait "$run"
echo "qemu threads (run_ns wait_ns): first $first, last $last" | tee "$out/host-wait.txt"
