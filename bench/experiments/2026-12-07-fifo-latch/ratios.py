#!/usr/bin/env python3
"""ratios.py BOOTDIR... : per app and client placement, each scheduler's throughput and its
server threads' longest wait for a CPU, as ratios to the default's in the same boot (the mean
of that boot's default rows), from bench/run's apps/apps.csv."""
import csv
import sys
from collections import defaultdict


def load(path):
    rows = defaultdict(list)        # (app, client, sched) -> [(rps, wait_max, max_us)]
    with open(path) as f:
        for r in csv.DictReader(f):
            wait = float(r["wait_max_us"]) if r["wait_max_us"] else float("nan")
            rows[(r["app"], r["client"], r["scheduler"])].append(
                (float(r["requests_per_s"]), wait, float(r["max_us"])))
    return rows


def main():
    for boot in sys.argv[1:]:
        rows = load(f"{boot}/apps.csv")
        print(f"## {boot}\n")
        print("| app | client | scheduler | throughput ÷ default | longest server wait, ms (÷ default) | slowest request, ms (÷ default) |")
        print("|---|---|---|---|---|---|")
        for (app, client, sched), runs in sorted(rows.items()):
            if sched == "default":
                continue
            base = rows.get((app, client, "default"))
            if not base:
                continue
            mean = lambda xs, i: sum(x[i] for x in xs) / len(xs)
            tp = ", ".join(f"{r[0] / mean(base, 0):.2f}" for r in runs)
            wt = ", ".join(f"{r[1] / 1000:.0f} ({r[1] / mean(base, 1):.2f})" for r in runs)
            mx = ", ".join(f"{r[2] / 1000:.0f} ({r[2] / mean(base, 2):.2f})" for r in runs)
            print(f"| {app} | {client} | {sched} | {tp} | {wt} | {mx} |")
        print()


if __name__ == "__main__":
    main()
