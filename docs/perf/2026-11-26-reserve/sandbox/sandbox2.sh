#!/bin/bash
# Sandbox configs side by side, two passes: the lord polling (default spin) vs sleeping
# between events (--spin-us 0), capped and not; alone and CFS for reference.
out=$1; R=${2:-20}; mkdir -p $out
cg=/sys/fs/cgroup/cos-bench-submissions
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
bw="cos-bench-bandwidth --cgroup $cg --submissions 10 --reps $R --work-ms 50"
echo "pass,config,mean_ms,p99_ms,subs_pct" > $out/sandbox.csv
for pass in 1 2; do
for conf in alone default default-cap cos-cap sj-cap sj fifo-cap fifo; do
	cap=max; [[ $conf == *-cap* ]] && cap=150%
	cosctl groups set $cg $cap >/dev/null
	run=(); subs=()
	if [[ $conf == cos* || $conf == sj* || $conf == fifo* ]]; then
		spin=(); [[ $conf == *nospin ]] && spin=(--spin-us 0)
		cosctl shim attach >/dev/null
		pol=cos-shinjuku; [[ $conf == fifo* ]] && pol="cos-fifo --latch 1"
		$pol --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 2>>$out/lord-$conf.txt >>$out/lord-$conf.txt & L=$!
		for _ in $(seq 100); do cosctl status | grep -q '^lord: *thread' && break; sleep 0.1; done
		run=(cosctl run --policy-class 1 --); [[ $conf == cos* ]] || run=(cosctl run --)
	fi
	[ $conf = alone ] && subs=(--submissions 0)
	"${run[@]}" $bw "${subs[@]}" --label $conf --csv $out/$conf-$pass.csv > $out/$conf-$pass.txt
	[[ $conf == cos* || $conf == sj* || $conf == fifo* ]] && { kill -INT $L; wait $L; cosctl shim detach >/dev/null; }
	python3 - $out/$conf-$pass.csv $pass $conf $out/$conf-$pass.txt >> $out/sandbox.csv <<'PY'
import csv, sys, re
v = sorted(int(r[-1]) / 1e6 for r in csv.reader(open(sys.argv[1])) if r[-1].isdigit())
txt = open(sys.argv[4]).read()
m = re.search(r'used\s+\S+\s+\S+\s+\S+\s+([0-9.]+)', txt)
print(f"{sys.argv[2]},{sys.argv[3]},{sum(v)/len(v):.1f},{v[min(len(v)-1, int(len(v)*0.99))]:.1f},{m.group(1) if m else ''}")
PY
	tail -1 $out/sandbox.csv
done
done
cosctl groups set $cg max; rmdir $cg
dmesg | grep -iE "WARN|BUG|oops|runtime error" | head
