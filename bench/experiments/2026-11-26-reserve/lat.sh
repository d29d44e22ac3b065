#!/bin/bash
# Timer lateness on CPU 3 while 0 or 3 other vCPUs spin (host: 2 cores for 4 vCPUs).
for n in 0 3; do
	pids=(); for c in $(seq 0 $((n-1))); do taskset -c $c sh -c 'while :; do :; done' & pids+=($!); done
	sleep 0.5
	taskset -c 3 python3 -c '
import time
lat=[]
for i in range(2000):
    t=time.monotonic_ns(); time.sleep(0.001); lat.append(time.monotonic_ns()-t-1000000)
lat.sort(); print("spinners", '$n', "late us p50 %.0f p90 %.0f p99 %.0f max %.0f" % (lat[1000]/1e3, lat[1800]/1e3, lat[1980]/1e3, lat[-1]/1e3))'
	[ ${#pids[@]} -gt 0 ] && kill ${pids[@]}
done
