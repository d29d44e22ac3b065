#!/bin/bash
# In the guest: bw-cost.sh BUILD...  The shim's hooks per call (bpf_stats) while a cgroup has a
# quota and hackbench + perf bench sched pipe run in the root cgroup; each build's cos.ko and
# cosctl in turn, three rounds, one boot.
set -u
cg=/sys/fs/cgroup/cos-cost
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
stats() { bpftool prog show --json; }
for rep in 1 2 3; do
	for b in "$@"; do
		rmmod cos 2>/dev/null
		insmod "$b/kmod/cos.ko" || exit 1
		"$b/bin/cosctl" shim attach >/dev/null || exit 1
		mkdir -p $cg
		echo "50000 100000" >$cg/cpu.max
		echo 1 >/proc/sys/kernel/bpf_stats_enabled
		stats >/tmp/before.json
		s0=$(date +%s.%N)
		hackbench -g 4 -f 10 -l 300 >/dev/null 2>&1
		perf bench -f simple sched pipe -l 30000 >/dev/null 2>&1
		s1=$(date +%s.%N)
		stats >/tmp/after.json
		echo 0 >/proc/sys/kernel/bpf_stats_enabled
		python3 - "$b" "$rep" "$s0" "$s1" <<'PY'
import json, sys
b, rep, s0, s1 = sys.argv[1:]
def load(p):
    return {x["id"]: x for x in json.load(open(p)) if x.get("type") == "struct_ops" and x.get("name", "").startswith("cos_")}
a, z = load("/tmp/before.json"), load("/tmp/after.json")
out = []
for i, x in z.items():
    n = x.get("run_cnt", 0) - a.get(i, {}).get("run_cnt", 0)
    t = x.get("run_time_ns", 0) - a.get(i, {}).get("run_time_ns", 0)
    if n and x["name"] in ("cos_running", "cos_stopping", "cos_tick", "cos_enqueue"):
        out.append(f"{x['name']} {t / n:.0f}ns/{n}")
print(f"rep {rep} {b}: {float(s1) - float(s0):.2f}s  " + "  ".join(sorted(out)))
PY
		rmdir $cg
		"$b/bin/cosctl" shim detach >/dev/null
	done
done
