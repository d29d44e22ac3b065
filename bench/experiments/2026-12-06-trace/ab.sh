#!/bin/bash
# A/B in one boot: cos-fifo before the decision records (ab71e04), after with no reader, after
# with cosctl trace (lord records only; and with the kernel's events): redis under the lord.
set -u
B=$COS_BUILD/bin
D=$(mktemp -d)
ROUNDS=${ROUNDS:-3}
one() {
	local mode=$1 fifo=$B/cos-fifo tr=
	[ $mode = old ] && fifo=/src/build/ab/cos-fifo-old
	$fifo --cpus 1 --stats-socket $D/cos-fifo.stats 2>$D/lord.err &
	local L=$!
	for i in $(seq 100); do grep -q "lord on CPU" $D/lord.err && break; sleep 0.1; done
	$B/cosctl run -- redis-server --port 6399 --save '' --appendonly no --daemonize yes --dir $D >/dev/null
	for i in $(seq 100); do redis-cli -p 6399 ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
	case $mode in
	on) COS_STATS_DIR=$D $B/cosctl trace --raw --no-kernel --seconds 600 -o $D/t 2>$D/tr.err & tr=$! ;;
	on-kernel) COS_STATS_DIR=$D $B/cosctl trace --raw --seconds 600 -o $D/t 2>$D/tr.err & tr=$! ;;
	esac
	sleep 0.5
	local c0=$(awk '{print $14+$15}' /proc/$L/stat)
	local t0=$(date +%s.%N)
	local out=$(redis-benchmark -p 6399 -n ${N:-20000} -c 4 -t set,get -q --csv 2>/dev/null | tr -d '"' | awk -F, '/^(SET|GET)/ {printf "%s=%s ", $1, $2}')
	local t1=$(date +%s.%N)
	local c1=$(awk '{print $14+$15}' /proc/$L/stat)
	local st=$(COS_STATS_DIR=$D $B/cosctl stats --json 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); j=j[0] if isinstance(j,list) else j; f=j["framework"]; print("placed=%d messages=%d" % (f["placed"], f["messages"]))' 2>/dev/null)
	[ -n "$tr" ] && { kill -INT $tr; wait $tr; }
	redis-cli -p 6399 shutdown nosave >/dev/null 2>&1
	kill -INT $L; wait $L
	echo "$mode $out lord_cpu_ticks=$((c1-c0)) wall=$(awk "BEGIN{print $t1-$t0}") $st $(grep -o 'lost' $D/tr.err 2>/dev/null | head -1)"
	rm -f $D/t*
}
# the order turns each round: the emulator drifts, and no mode always goes first
modes=(old off on on-kernel)
for r in $(seq $ROUNDS); do
	for k in 0 1 2 3; do one ${modes[$(( (k + r) % 4 ))]}; done
done
