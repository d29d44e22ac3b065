#!/bin/bash
# why-vtime.sh — in the guest: RocksDB readrandom, 8 readers on CPU 1 for 3 s under the shim, 2
# rounds, with fprobes on scx_bpf_dsq_insert_vtime() (each queued task's vtime) and
# set_next_task_scx() (each started task's vtime) beside sched_switch and sched_wakeup; vtime.py
# then names who advanced the clocks, and for the three longest waits of a reader, where its
# vtime stood against the others'.
# Run as: tests/vm/run --kver 7.3.4+deb13-cloud-amd64 --smp 2 -- bench/experiments/2026-12-07-shim-clock/why-vtime.sh
# KEEP=PATH keeps each round's perf script as PATH.N.
export PATH=$COS_BUILD/bin:$PATH
here=$(dirname "$(readlink -f "$0")")
COSCTL=${COSCTL:-cosctl}   # another build's cosctl: its shim
cd /sys/kernel/tracing
echo 'f:insv scx_bpf_dsq_insert_vtime p->pid vtime enq_flags' >> dynamic_events
echo 'f:setnext set_next_task_scx p->pid p->scx.dsq_vtime' >> dynamic_events
cd /tmp
db_bench --benchmarks=fillseq --db=/tmp/rdb --num=200000 --value_size=100 --compression_type=none --disable_wal=1 >/dev/null 2>&1
for round in 1 2; do
$COSCTL shim attach >/dev/null
perf record -q -a -e fprobes:insv -e fprobes:setnext -e sched:sched_switch -e sched:sched_wakeup -o /tmp/s.data -- $COSCTL run -- taskset -c 1 db_bench --benchmarks=readrandom --use_existing_db=1 --db=/tmp/rdb --num=200000 --threads=8 --duration=3 --cache_size=$((256 << 20)) --compression_type=none >/tmp/s.txt 2>&1
$COSCTL shim detach >/dev/null
echo "== round $round: $(grep readrandom /tmp/s.txt)"
perf script -i /tmp/s.data -F comm,tid,cpu,time,event,trace 2>/dev/null > /tmp/s.script
[ -n "$KEEP" ] && cp /tmp/s.script "$KEEP.$round"
python3 "$here/vtime.py" /tmp/s.script
done
