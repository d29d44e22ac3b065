#!/bin/bash
B=/src/build/7.3.4+deb13-cloud-amd64
export PATH=$B/bin:$PATH
PRE=$B/lib/libcos-lock.so
E=${E:-1}
for sc in "cs" "oversub --threads ${OT:-3}"; do
for sched in default "cos-lock" "cos-lock --no-handoff"; do
  if [ "$sched" = default ]; then run=(taskset -c $E); else
  cosctl shim attach >/dev/null
  $sched --cpus $E --lord-cpu 0 --stall-ms 1000 2>/tmp/lord.txt & L=$!
  sleep 1; run=(cosctl run --); fi
  for h in 0 1; do for i in 1 2; do
  "${run[@]}" env LD_PRELOAD=$PRE COS_LOCK_HANDOFF=$h cos-bench-lock --scenario $sc --seconds 2 | sed "s/^/[$sched H=$h] /" | sed 's/lock=pthread //; s/cpus=[0-9]*: //; s/ns\/op, //'
  done; done
  if [ "$sched" != default ]; then
  kill -INT $L; wait $L; tail -2 /tmp/lord.txt | head -1 | sed 's/.*| runnable/runnable/' | cut -c1-300
  cosctl shim detach >/dev/null; fi
done
done
