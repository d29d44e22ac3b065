#!/usr/bin/env python3
"""where.py RESULTS_DIR... — where each server and its client ran under each scheduler (issue 52,
item 2), from BENCH=apps' <app>-<sched>[-unpinned]-<rep>.waits.csv (cos-bench-waits): per app,
client placement and scheduler, the server's and the client's threads together: their time on a
CPU, the CPUs they ran on, their migrations and waits (count, mean, longest), summed over the
threads and the repetitions of every results directory given."""
import csv
import glob
import os
import re
import sys
from collections import defaultdict

SERVER = {"nginx": {"nginx"}, "redis": {"redis-server"} | {f"io_thd_{i}" for i in range(1, 64)},
          "pgbench-select": {"postgres"}, "pgbench-update": {"postgres"}, "rocksdb": {"db_bench"},
          "sysbench-threads": {"sysbench"}, "sysbench-mutex": {"sysbench"}}
CLIENT = {"nginx": {"wrk"}, "redis": {"redis-benchmark"}, "pgbench-select": {"pgbench"},
          "pgbench-update": {"pgbench"}}


def main():
    acc = defaultdict(lambda: defaultdict(float))
    cpus = defaultdict(set)
    for d in sys.argv[1:]:
        for f in glob.glob(os.path.join(d, "apps", "*.waits.csv")):
            m = re.match(r"(.*?)-((?:default|shim|cos|scx)[a-z_-]*?)(-unpinned)?-(\d+)\.waits\.csv$",
                         os.path.basename(f))
            if not m:
                continue
            app, sched, unp = m.group(1), m.group(2), bool(m.group(3))
            if app not in SERVER:
                continue
            client = "unpinned" if unp else ("pinned" if app in CLIENT else "none")
            for r in csv.DictReader(open(f)):
                side = ("server" if r["comm"] in SERVER[app] else
                        "client" if r["comm"] in CLIENT.get(app, ()) else None)
                if not side:
                    continue
                k = (app, client, sched, side)
                a = acc[k]
                a["threads"] += 1
                a["waits"] += int(r["waits"])
                a["wait_us"] += float(r["total_us"])
                a["max_us"] = max(a["max_us"], float(r["max_us"]))
                a["run_us"] += float(r.get("run_us") or 0)
                a["migrations"] += int(r.get("migrations") or 0)
                cpus[k] |= set((r.get("cpus") or "").split())
    print("| app | client | scheduler | side | threads | run ms | CPUs | migrations | waits | mean wait | longest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(acc):
        a = acc[k]
        mean = a["wait_us"] / a["waits"] if a["waits"] else 0
        print(f"| {' | '.join(k)} | {a['threads']:.0f} | {a['run_us'] / 1000:.0f} | "
              f"{' '.join(sorted(cpus[k], key=int))} | {a['migrations']:.0f} | {a['waits']:.0f} | "
              f"{mean:.0f} µs | {a['max_us'] / 1000:.1f} ms |")


if __name__ == "__main__":
    main()
