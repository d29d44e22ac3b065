#!/bin/bash
# waits.sh — the longest wait of RocksDB's readers (issue 52, part 1): db_bench readrandom,
# 8 threads on CPU 1 (a 200,000-key database in its cache), under the default scheduler, the
# shim alone and cos-fifo (lord on CPU 0), alternating, REPS rounds.  `perf sched latency`
# gives each thread's longest wait from the kernel's own events; under cos-fifo, `cosctl trace
# --summary` names the longest waits and what they waited behind.
#   COS_ACCEL=tcg tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 --out DIR -- \
#       env OUT=/src/build/waits REPS=2 bench/experiments/2026-12-07-waits/waits.sh
# (SCHEDS="default cos-fifo cos-fifo:--slice-us:1500": a lord's options after ':'; TRACE_S the trace's seconds; KEEP=1 keeps perf.data
# and the traces)
set -u
B=$COS_BUILD/bin
OUT=${OUT:-/src/build/waits}
REPS=${REPS:-2}
SCHEDS=${SCHEDS:-default shim cos-fifo}
TRACE_S=${TRACE_S:-7}		# db_bench's 4 s, its start and its end
mkdir -p "$OUT"
D=$(mktemp -d)
db_bench --benchmarks=fillseq --db="$D/db" --num=200000 --value_size=100 \
	--compression_type=none --disable_wal=1 >/dev/null 2>&1
readers() {	# PREFIX...: db_bench's readers on CPU 1 for 4 s
	"$@" taskset -c 1 db_bench --benchmarks=readrandom --use_existing_db=1 --db="$D/db" \
		--num=200000 --threads=8 --duration=4 --histogram=1 --cache_size=268435456 \
		--compression_type=none
}
for rep in $(seq "$REPS"); do
	for s in $SCHEDS; do
		# a lord's options after its name, ':'-separated: cos-fifo:--slice-us:1500
		IFS=: read -r -a opts <<<"$s"
		prog=${opts[0]}
		opts=("${opts[@]:1}")
		n=$prog$(printf '%s' "${opts[@]}" | sed 's/--/_/g')-$rep	# cos-fifo_slice-us1500-1
		run=()
		lord=
		case $prog in
		default) "$B/cosctl" shim detach >/dev/null 2>&1 ;;
		shim) "$B/cosctl" shim attach >/dev/null; run=("$B/cosctl" run --) ;;
		cos-*)
			"$B/cosctl" shim attach >/dev/null
			"$B/$prog" --cpus 1 --stats-socket "$D/$prog.stats" "${opts[@]}" 2>"$OUT/$n.lord.txt" &
			lord=$!
			for _ in $(seq 100); do grep -q "lord on CPU" "$OUT/$n.lord.txt" && break; sleep 0.1; done
			run=("$B/cosctl" run --)
			;;
		esac
		tr=
		if [ -n "$lord" ]; then	# the lord's view of the whole run (db_bench's start too)
			COS_STATS_DIR=$D PATH=/opt/cos-python/bin:$PATH "$B/cosctl" trace \
				--seconds "$TRACE_S" -o "$D/$n.pftrace" --summary >"$OUT/$n.summary.txt" 2>&1 &
			tr=$!
			for _ in $(seq 300); do grep -q recording "$OUT/$n.summary.txt" && break; sleep 0.1; done
		fi
		perf sched record -q -o "$D/perf.data" -- bash -c "$(declare -f readers); D=$D; \
			readers ${run[*]}" >"$OUT/$n.db_bench.txt" 2>&1
		# per thread (-p), the longest first; the times are perf's (CLOCK_MONOTONIC)
		perf sched latency -p -i "$D/perf.data" --sort max 2>/dev/null |
			grep -E "db_bench|Task|----|TOTAL" | head -14 >"$OUT/$n.latency.txt"
		[ -z "$tr" ] || wait "$tr"
		if [ -n "${KEEP:-}" ]; then	# the raw events, for perf sched timehist and Perfetto
			cp "$D/perf.data" "$OUT/$n.perf.data"
			cp "$D/$n".pftrace* "$OUT/" 2>/dev/null
		fi
		[ -z "$lord" ] || { kill -INT "$lord"; wait "$lord"; }
		echo "$n: $(awk '$1 == "readrandom" { print $3, $4, $5 }' "$OUT/$n.db_bench.txt");" \
			"max $(awk '/^Min:/ { print $6, "us" }' "$OUT/$n.db_bench.txt");" \
			"longest wait of a reader $(awk -F'|' '/db_bench/ { print $5; exit }' "$OUT/$n.latency.txt")"
	done
done
"$B/cosctl" shim detach >/dev/null 2>&1
rm -rf "$D"
