#!/bin/bash
# sandbox.sh OUT REPS CONFIG...: the sandbox (a server's 50 ms of work beside 10 submissions on
# CPUs 1-3) in each CONFIG, two passes in one boot.  A config ending in -cap caps the
# submissions at 150 %.  alone: no submissions; default: CFS; cos...: cos-shinjuku with the
# server in class 1 (...-nospin: the lord sleeps between events, --spin-us 0); sj...:
# cos-shinjuku, the server in the submissions' class; fifo...: cos-fifo --latch 1, one queue.
# sandbox1.csv: `sandbox.sh OUT 20 alone default-cap cos-cap cos-cap-nospin cos cos-nospin`;
# sandbox2.csv: `sandbox.sh OUT 20 alone default default-cap cos-cap sj-cap sj fifo-cap fifo`.
out=$1; R=${2:-20}; shift 2; mkdir -p $out
cg=/sys/fs/cgroup/cos-bench-submissions
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; mkdir -p $cg
bw="cos-bench-bandwidth --cgroup $cg --submissions 10 --reps $R --work-ms 50"
echo "pass,config,mean_ms,p99_ms,subs_pct" > $out/sandbox.csv
for pass in 1 2; do
for conf in "$@"; do
	cap=max; [[ $conf == *-cap* ]] && cap=150%
	cosctl groups set $cg $cap >/dev/null
	run=(); subs=(); lord=()
	case $conf in
	cos*) lord=(cos-shinjuku); run=(cosctl run --policy-class 1 --);;
	sj*) lord=(cos-shinjuku); run=(cosctl run --);;
	fifo*) lord=(cos-fifo --latch 1); run=(cosctl run --);;
	esac
	[[ $conf == *nospin ]] && lord+=(--spin-us 0)
	if [ ${#lord[@]} -gt 0 ]; then
		cosctl shim attach >/dev/null
		"${lord[@]}" --cpus 1-3 --lord-cpu 0 --stall-ms 1000 --slice-us 5000 >>$out/lord-$conf.txt 2>&1 & L=$!
		for _ in $(seq 100); do cosctl status | grep -q '^lord: *thread' && break; sleep 0.1; done
	fi
	[ $conf = alone ] && subs=(--submissions 0)
	"${run[@]}" $bw "${subs[@]}" --label $conf --csv $out/$conf-$pass.csv > $out/$conf-$pass.txt
	[ ${#lord[@]} -gt 0 ] && { kill -INT $L; wait $L; cosctl shim detach >/dev/null; }
	python3 - $out/$conf-$pass.csv $pass $conf $out/$conf-$pass.txt >> $out/sandbox.csv <<'PY'
import csv, sys, re
v = sorted(int(r[-1]) / 1e6 for r in csv.reader(open(sys.argv[1])) if r[-1].isdigit())
m = re.search(r'submissions used ([0-9.]+) %', open(sys.argv[4]).read())
print(f"{sys.argv[2]},{sys.argv[3]},{sum(v)/len(v):.1f},{v[min(len(v)-1, int(len(v)*0.99))]:.1f},{m.group(1) if m else ''}")
PY
	tail -1 $out/sandbox.csv
done
done
cosctl groups set $cg max; rmdir $cg
