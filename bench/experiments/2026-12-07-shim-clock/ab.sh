#!/bin/bash
# ab.sh — in the guest, one boot: the default, the shim as built (new) and the shim of $OLD
# (old), in turn.  wake.c with 3 and 5 busy threads on CPU 1, with and without a busy thread
# alone on CPU 0 (2 rounds); then the redis/nginx A/B of 2026-12-07-shim-placement and the
# sysbench mutex / RocksDB A/B of 2026-12-07-shim-yield, each with the same $OLD.
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- env OLD=<cosctl> bench/experiments/2026-12-07-shim-clock/ab.sh
export PATH=$COS_BUILD/bin:$PATH
export OLD=${OLD:-/src/build/oldshim/bin/cosctl}
here=$(dirname "$(readlink -f "$0")")
gcc -O2 -pthread -o /tmp/wake "$here/wake.c" || exit 1
for rep in 1 2; do for n in 3 5; do for lone in 1 0; do for cfg in default new old; do
	case $cfg in default) run=() ;; new) cosctl shim attach >/dev/null; run=(cosctl run --) ;;
	old) $OLD shim attach >/dev/null; run=($OLD run --) ;; esac
	echo "wake,$cfg,$("${run[@]}" /tmp/wake $lone $n)"
	case $cfg in new) cosctl shim detach >/dev/null ;; old) $OLD shim detach >/dev/null ;; esac
done; done; done; done
"$here/../2026-12-07-shim-placement/ab.sh"
TESTS="mutex rocksdb" ROUNDS="1 2" "$here/../2026-12-07-shim-yield/ab.sh"
