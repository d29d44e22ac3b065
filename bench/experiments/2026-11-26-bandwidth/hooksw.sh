#!/bin/bash
# hooksw.sh OUT: the shim's hooks per call with every cgroup at weight 100 (plain) and with one
# empty cgroup at cpu.weight 200 (weighted: the shares' counting and cos_kf_group_share() run for
# every fair task), alternating in one boot, 3 passes: perf bench sched pipe + hackbench under
# kernel.bpf_stats_enabled, ns per call from bpftool's run_time_ns / run_cnt.
out=$1; mkdir -p $out
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
cosctl shim attach >/dev/null
echo 1 >/proc/sys/kernel/bpf_stats_enabled
echo "pass,mode,op,calls,ns_per_call" > $out/hooks.csv
for pass in 1 2 3; do
for mode in plain weighted; do
	if [ $mode = weighted ]; then mkdir -p /sys/fs/cgroup/cos-hw; echo 200 > /sys/fs/cgroup/cos-hw/cpu.weight;
	else rmdir /sys/fs/cgroup/cos-hw 2>/dev/null; fi
	bpftool prog show --json > $out/before.json
	t0=$(date +%s%N)
	perf bench -f simple sched pipe -l 20000 > $out/pipe-$mode-$pass.txt 2>&1
	hackbench -g 4 -f 10 -l 200 > $out/hb-$mode-$pass.txt 2>&1
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
rmdir /sys/fs/cgroup/cos-hw 2>/dev/null
cosctl shim detach >/dev/null
