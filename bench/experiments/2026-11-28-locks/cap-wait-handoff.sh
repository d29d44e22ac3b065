#!/bin/bash
B=/src/build/7.3.4+deb13-cloud-amd64
export PATH=$B/bin:$PATH
PRE=$B/lib/libcos-lock.so
E=${E:-1}
for sc in "cs" "oversub --threads ${OT:-3}"; do
for sched in default "cos-lock --no-handoff --max-wait-us 100000" "cos-lock --max-wait-us 100000" "cos-lock --cap-us 100000 --max-wait-us 100000" "cos-lock --cap-us 100000 --max-wait-us 200000 --no-handoff"; do
  if [ "$sched" = default ]; then run=(taskset -c $E); else
  cosctl shim attach >/dev/null
  $sched --cpus $E --lord-cpu 0 --stall-ms 1000 2>/tmp/lord.txt & L=$!
  sleep 1; run=(cosctl run --); fi
  for i in 1 2; do
  "${run[@]}" env LD_PRELOAD=$PRE cos-bench-lock --scenario $sc --seconds 2 | sed "s/^/[$sched] /" | sed 's/lock=pthread //; s/cpus=[0-9]*: //; s/ns\/op, //'
  done
  if [ "$sched" != default ]; then
  kill -INT $L; wait $L; tail -2 /tmp/lord.txt | head -1 | sed 's/.*| runnable/runnable/' | cut -c1-300
  cosctl shim detach >/dev/null; fi
done
done
