#!/bin/bash
# runs.sh TAG — two boots of BENCH=apps (pgbench, or $APPS) with the schedulers in $SCHEDS,
# clients pinned and unpinned, from the host.  With lord-variants.patch applied (at fac410f),
# cos-fifo-xs / -xn / -xm are cos-fifo whose lord asks EEVDF for a 0.1 ms slice / that and
# nice -20 / nice -20 alone.  Results in bench-results/; ratios.py reads them.
set -eu
cd "$(dirname "$0")/../../.."
for b in 1 2; do
	COS_ACCEL=tcg BENCH=apps BENCH_SMP=2 BENCH_QUICK=1 BENCH_PEERS="" \
		BENCH_APPS="${APPS:-pgbench}" BENCH_APPS_CLIENTS="pinned unpinned" \
		BENCH_APPS_SCHEDS="$SCHEDS" bench/host 7.3.4+deb13-cloud-amd64 >"build/pg-$1-$b.log" 2>&1
done
