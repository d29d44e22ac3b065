#!/usr/bin/env bash
# run.sh — A/B of the latch in one boot: cos-shinjuku --latch 0/1, cos-fifo --latch 0/2 (see README.md).
set -u
cd /src
OUT=/src/build/latchab/out; mkdir -p $OUT
ENCLAVE=1-3
start_lord() { local p=$1 log=$2; shift 2; cosctl shim attach >/dev/null
  "$p" --cpus $ENCLAVE --lord-cpu 0 --stall-ms 1000 "$@" 2>>"$log" & LORD=$!
  for _ in $(seq 100); do cosctl status | grep -q '^lord: *thread' && return 0; sleep 0.1; done; echo nolord; }
stop_lord() { kill -INT $LORD; wait $LORD; cosctl shim detach >/dev/null; }
sj="cos-bench-shinjuku --get-keys 8 --scan-keys 20000 --scan-permille 5 --drain-s 10"
$sj --calibrate --seconds 5 | tee $OUT/cal.txt
cap=$(sed -n 's/.*capacity_rps=\([0-9.]*\).*/\1/p' $OUT/cal.txt)
get=$(sed -n 's/.*get_us=\([0-9.]*\).*/\1/p' $OUT/cal.txt)
slice=$(awk "BEGIN { printf \"%d\", 10 * $get }")
for rep in 1 2; do
 for load in 0.5 0.7; do
  rate=$(awk "BEGIN { printf \"%d\", $load * $cap }")
  echo "== rep $rep load $load default" | tee -a $OUT/sj.txt
  $sj --rate $rate --seconds 6 --workers 6 | tee -a $OUT/sj.txt
  for latch in 0 1; do
   echo "== rep $rep load $load cos latch $latch" | tee -a $OUT/sj.txt
   start_lord cos-shinjuku $OUT/lord-sj.txt --slice-us $slice --starve-ms 10000 --latch $latch
   $sj --rate $rate --seconds 6 --workers 6 --sched-ext | tee -a $OUT/sj.txt
   stop_lord
  done
 done
done
for rep in 1 2 3; do
  h=$(hackbench -g 4 -f 10 -l 50 2>/dev/null | awk '/^Time:/ { print $2 }'); echo "rep $rep default $h" | tee -a $OUT/hb.txt
  for latch in 0 2; do
    start_lord cos-fifo $OUT/lord-fifo.txt --starve-ms 10000 --latch $latch --slice-us 4000
    h=$(cosctl run -- hackbench -g 4 -f 10 -l 50 2>/dev/null | awk '/^Time:/ { print $2 }')
    echo "rep $rep fifo latch $latch $h" | tee -a $OUT/hb.txt
    stop_lord
  done
done
echo DONE
