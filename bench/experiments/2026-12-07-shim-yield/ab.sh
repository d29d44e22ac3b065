#!/bin/bash
# ab.sh — in the guest, one boot: sysbench's threads and mutex tests and RocksDB's readrandom
# (8 threads on CPU 1) under the default, the shim as built (new) and the shim of
# $OLD (default build/yield-old/bin/cosctl: a fair task's sched_yield() ignored), in turn,
# 3 rounds (ROUNDS).  Per run: events/s (threads), locks/s (mutex) or reads/s, the longest
# event or read, and the longest wait for a CPU of any of its threads (cos-bench-waits), in ms;
# then a line (#) on the thread that waited longest.  TESTS: which (threads mutex rocksdb).
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- bench/experiments/2026-12-07-shim-yield/ab.sh
export PATH=$COS_BUILD/bin:$PATH
OLD=${OLD:-/src/build/yield-old/bin/cosctl}
cd /tmp
maxwait() { awk -F, 'NR > 1 && $6 > m { m = $6 } END { printf "%.1f", m / 1000 }' "$1"; }
# the thread that waited longest: main or worker, its waits, its histogram (bucket us:count)
longest() { awk -F, 'NR > 1 && $6 > m { m = $6; w = ($1 == $2 ? "main" : "worker") " waits=" $4 " hist=" $7 }
	END { print w }' "$1"; }
one() {  # CFG TEST
	local run=() cfg=$1 t=$2 rate mx
	case $cfg in new) cosctl shim attach >/dev/null; run=(cosctl run --) ;; old) $OLD shim attach >/dev/null; run=($OLD run --) ;; esac
	cos-bench-waits --comm sysbench,db_bench --top 0 --csv /tmp/w.csv >/dev/null 2>/tmp/w.err &
	local w=$!
	for _ in $(seq 100); do grep -q recording /tmp/w.err && break; sleep 0.05; done
	case $t in
	threads)
		"${run[@]}" taskset -c 1 sysbench threads --threads=8 --thread-locks=8 --thread-yields=100 \
			--time=4 --percentile=99 run >/tmp/out.txt 2>&1
		rate=$(awk '/total number of events:/ { n = $NF } /total time:/ { t = $NF + 0 } END { printf "%.1f", n / t }' /tmp/out.txt)
		mx=$(awk '$1 == "max:" { print $NF; exit }' /tmp/out.txt) ;;
	mutex)
		"${run[@]}" taskset -c 1 sysbench mutex --threads=8 --mutex-locks=2000 --mutex-loops=2000 \
			--percentile=99 run >/tmp/out.txt 2>&1
		rate=$(awk '/total time:/ { printf "%.1f", 16000 / ($NF + 0) }' /tmp/out.txt)
		mx=$(awk '$1 == "max:" { print $NF; exit }' /tmp/out.txt) ;;
	rocksdb)
		"${run[@]}" taskset -c 1 db_bench --benchmarks=readrandom --use_existing_db=1 --db=/tmp/rdb \
			--num=200000 --threads=8 --duration=4 --histogram=1 --cache_size=$((256 << 20)) \
			--compression_type=none >/tmp/out.txt 2>&1
		rate=$(awk '$1 == "readrandom" { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/sec") print $i }' /tmp/out.txt)
		# "Min: 1.0 Median: 9.8 Max: 1234" (us)
		mx=$(awk '$1 == "Min:" { printf "%.2f", $6 / 1000; exit }' /tmp/out.txt) ;;
	esac
	kill -INT $w; wait $w
	case $cfg in new) cosctl shim detach >/dev/null ;; old) $OLD shim detach >/dev/null ;; esac
	echo "$t,$cfg,$rate,$mx,$(maxwait /tmp/w.csv)"
	echo "# longest wait: $(longest /tmp/w.csv)"
}
case " ${TESTS:-threads mutex rocksdb} " in *" rocksdb "*)
	db_bench --benchmarks=fillseq --db=/tmp/rdb --num=200000 --value_size=100 --compression_type=none \
		--disable_wal=1 >/dev/null 2>&1 ;;
esac
echo "test,config,rate,max_event_ms,max_wait_ms"
for rep in ${ROUNDS:-1 2 3}; do for t in ${TESTS:-threads mutex rocksdb}; do for cfg in default new old; do one $cfg $t; done; done; done
