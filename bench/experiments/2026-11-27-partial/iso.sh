#!/bin/bash
export PATH=$COS_BUILD/bin:$PATH
pipe() { "$@" perf bench -f simple sched pipe -l 20000 2>/dev/null | awk 'NF { v = $1 } END { print v }'; }
hb() { "$@" hackbench -g 4 -f 10 -l 100 2>/dev/null | awk '/^Time:/ { print $2 }'; }
for rep in 1 2 3 4; do
	echo "rep $rep taskset: pipe $(pipe taskset -c 0) hb $(hb taskset -c 0)"
	echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control; mkdir /sys/fs/cgroup/p; echo 1 > /sys/fs/cgroup/p/cpuset.cpus; echo root > /sys/fs/cgroup/p/cpuset.cpus.partition
	echo "rep $rep partition-only: pipe $(pipe) hb $(hb)"
	rmdir /sys/fs/cgroup/p; echo -cpuset > /sys/fs/cgroup/cgroup.subtree_control
	cosctl shim attach --partial 1 >/dev/null
	echo "rep $rep shim-partial: pipe $(pipe) hb $(hb)"
	cosctl shim detach >/dev/null
	cosctl shim attach --partial 1 >/dev/null
	echo "rep $rep shim-partial+taskset: pipe $(pipe taskset -c 0) hb $(hb taskset -c 0)"
	cosctl shim detach >/dev/null
done
