#!/bin/bash
# why-pg.sh — in the guest: PostgreSQL on CPU 1 (16 connections), pgbench select-only 5 s with
# its client pinned to CPU 0, under the default and the shim (`cosctl run --`, or $COSCTL's),
# 2 rounds, CPU 1's sched_switch and sched_wakeup recorded; waits.py then gives the backends'
# turns, their waits and the three longest with what ran meanwhile.
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- bench/experiments/2026-12-07-shim-clock/why-pg.sh
export PATH=$COS_BUILD/bin:$PATH
here=$(dirname "$(readlink -f "$0")")
COSCTL=${COSCTL:-cosctl}
. "$here/pg-setup.sh"
for round in 1 2; do for cfg in default shim; do
	run=(); [ $cfg = shim ] && { $COSCTL shim attach >/dev/null; run=($COSCTL run --); }
	"${run[@]}" taskset -c 1 "${as_pg[@]}" "$PGBIN/postgres" -D "$www/pg" "${opts[@]}" >/dev/null 2>&1 & pid=$!; up
	perf record -q -e sched:sched_switch -e sched:sched_wakeup -C 1 -o /tmp/s.data -- \
		taskset -c 0 "$PGBIN/pgbench" -h "$www" -p 15432 -U postgres -S -c 16 -j 1 -T 5 postgres >/tmp/pg.txt 2>&1
	kill -INT $pid; wait $pid 2>/dev/null
	[ $cfg = shim ] && $COSCTL shim detach >/dev/null
	echo "== round $round, $cfg: $(awk '/^tps = / { print $3 " tps"; exit }' /tmp/pg.txt)"
	perf script -i /tmp/s.data -F comm,tid,cpu,time,event,trace 2>/dev/null > /tmp/s.script
	python3 "$here/waits.py" postgres /tmp/s.script
done; done
