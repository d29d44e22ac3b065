#!/bin/bash
# bwab.sh: BENCH=bandwidth with debugfs cos/bw_stop_at_tick set (tick) and not (kick), alternating
for m in tick kick kick tick; do
	[ $m = tick ] && echo Y > /sys/kernel/debug/cos/bw_stop_at_tick || echo N > /sys/kernel/debug/cos/bw_stop_at_tick
	n=$((${n:-0} + 1))
	OUT=/src/build/bwab-$n-$m BENCH=bandwidth /src/bench/run > /dev/null 2>&1
	echo "$n $m rc=$?"
done
