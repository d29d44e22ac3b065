#!/bin/bash
# hooksr.sh OUT: the shim's hooks per call for tasks of a limited cgroup (cpu.max 400 %: never
# throttled on 4 CPUs, but every start, tick and stop goes through the budget), with each CPU
# reserving its slice of the budget (debugfs cos/bw_no_reserve=0) and with the share timer of
# before (=1), alternating in one boot, 3 passes: perf bench sched pipe + hackbench in that
# cgroup under kernel.bpf_stats_enabled, ns per call from bpftool's run_time_ns / run_cnt.
out=$1; mkdir -p $out
cg=/sys/fs/cgroup/cos-hr
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg; echo "400000 100000" > $cg/cpu.max
cosctl shim attach >/dev/null
echo 1 >/proc/sys/kernel/bpf_stats_enabled
echo "pass,mode,op,calls,ns_per_call" > $out/hooks.csv
for pass in 1 2 3; do
for mode in share reserve; do
	echo $([ $mode = share ] && echo 1 || echo 0) > /sys/kernel/debug/cos/bw_no_reserve
	bpftool prog show --json > $out/before.json
	t0=$(date +%s%N)
	sh -c "echo \$\$ > $cg/cgroup.procs; perf bench -f simple sched pipe -l 20000; hackbench -g 4 -f 10 -l 200" \
		> $out/work-$mode-$pass.txt 2>&1
	t1=$(date +%s%N)
	bpftool prog show --json > $out/after.json
	echo "$mode $pass: workloads $(( (t1 - t0) / 1000000 )) ms" | tee -a $out/times.txt
	python3 - $out $pass $mode <<'PY'
import json, sys
out, p, mode = sys.argv[1:]
b = {x["id"]: x for x in json.load(open(out + "/before.json"))}
with open(out + "/hooks.csv", "a") as f:
    for x in json.load(open(out + "/after.json")):
        if not x.get("name", "").startswith("cos_") or x["id"] not in b:
            continue
        n = x.get("run_cnt", 0) - b[x["id"]].get("run_cnt", 0)
        t = x.get("run_time_ns", 0) - b[x["id"]].get("run_time_ns", 0)
        if n:
            f.write(f"{p},{mode},{x['name']},{n},{t / n:.0f}\n")
PY
done
done
echo 0 > /sys/kernel/debug/cos/bw_no_reserve
cosctl shim detach >/dev/null
rmdir $cg
