#!/bin/bash
# a real run: cos-fifo (defaults), redis under it, redis-benchmark beside; cosctl trace --summary
set -u
B=$COS_BUILD/bin
D=$(mktemp -d)
$B/cos-fifo --cpus 1-3 --stats-socket $D/cos-fifo.stats 2>$D/lord.err &
L=$!
sleep 2
$B/cosctl run -- redis-server --port 6399 --save '' --appendonly no --daemonize yes --dir $D >/dev/null
for i in $(seq 50); do redis-cli -p 6399 ping 2>/dev/null | grep -q PONG && break; sleep 0.2; done
redis-benchmark -p 6399 -n 200000 -c 8 -q -t set,get >$D/bench 2>&1 &
RB=$!
sleep 1
COS_STATS_DIR=$D PATH=/opt/cos-python/bin:$PATH $B/cosctl trace --seconds 5 -o $D/t.pftrace --summary
echo "exit $?"
cp $D/t.pftrace* /src/build/tr-out/ 2>/dev/null; ls -la $D
kill $RB 2>/dev/null; wait $RB
cat $D/bench | tr '\r' '\n' | tail -3
redis-cli -p 6399 shutdown nosave
$B/cos-replay $D/t.pftrace.cos-fifo.lord | tail -5
echo "replay exit $?"
kill -INT $L; wait $L
tail -3 $D/lord.err
