#!/bin/bash
# pg-ab.sh — in the guest, one boot: PostgreSQL on CPU 1 (16 connections), pgbench select-only
# and the simple update, its client pinned to CPU 0 or unpinned, under the default, the shim
# as built (new) and the shim of $OLD (old), 2 rounds: tps and the longest wait for a CPU of a
# postgres thread (cos-bench-waits), in ms.  Set up as bench/run's apps do.
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- env OLD=<cosctl> bench/experiments/2026-12-07-shim-clock/pg-ab.sh
export PATH=$COS_BUILD/bin:$PATH
OLD=${OLD:-/src/build/oldshim/bin/cosctl}
. "$(dirname "$(readlink -f "$0")")/pg-setup.sh"
echo "test,client,config,tps,max_wait_ms"
for rep in 1 2; do for cfg in default new old; do
	run=()
	case $cfg in new) cosctl shim attach >/dev/null; run=(cosctl run --) ;; old) $OLD shim attach >/dev/null; run=($OLD run --) ;; esac
	"${run[@]}" taskset -c 1 "${as_pg[@]}" "$PGBIN/postgres" -D "$www/pg" "${opts[@]}" >/dev/null 2>&1 & pid=$!; up
	for cl in pinned unpinned; do for mode in select update; do
		pre=(); [ $cl = pinned ] && pre=(taskset -c 0)
		cos-bench-waits --comm postgres --top 0 --csv /tmp/w.csv >/dev/null 2>/tmp/w.err & w=$!
		for _ in $(seq 100); do grep -q recording /tmp/w.err && break; sleep 0.05; done
		tps=$("${pre[@]}" "$PGBIN/pgbench" -h "$www" -p 15432 -U postgres "$([ $mode = select ] && echo -S || echo -N)" \
			-c 16 -j 1 -T 5 postgres 2>/dev/null | awk '/^tps = / { print $3; exit }')
		kill -INT $w; wait $w
		echo "pgbench-$mode,$cl,$cfg,$tps,$(awk -F, 'NR > 1 && $6 > m { m = $6 } END { printf "%.1f", m / 1000 }' /tmp/w.csv)"
	done; done
	kill -INT $pid; wait $pid 2>/dev/null
	case $cfg in new) cosctl shim detach >/dev/null ;; old) $OLD shim detach >/dev/null ;; esac
done; done
