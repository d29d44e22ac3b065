#!/usr/bin/env python3
"""ranges.py BOOT_DIR... — per app and configuration, the range over the boots of the
throughput ÷ the default's and the p99 ÷ the default's (each boot's apps.csv, medians over its
repetitions), as a Markdown table."""
import csv
import statistics
import sys
from collections import defaultdict


def ratios(path):
    vals = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            try:
                vals[(r["app"], r["scheduler"])].append((float(r["requests_per_s"]), float(r["p99_us"])))
            except ValueError:
                pass
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for k, v in vals.items()}
    out = {}
    for (app, sched), (tp, p99) in med.items():
        base = med.get((app, "default"))
        if base and sched != "default" and base[0] and base[1]:
            out[(app, sched)] = (tp / base[0], p99 / base[1])
    return out


boots = [ratios(d.rstrip("/") + "/apps.csv") for d in sys.argv[1:]]
keys = sorted(set().union(*boots), key=lambda k: (k[0], k[1].startswith("scx_"), k[1]))
print("| app | configuration | throughput ÷ default | p99 ÷ default |")
print("|---|---|---|---|")
for k in keys:
    tp = [b[k][0] for b in boots if k in b]
    p99 = [b[k][1] for b in boots if k in b]
    fmt = lambda v: f"{min(v):.2f}–{max(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"
    print(f"| {k[0]} | {k[1]} | {fmt(tp)} | {fmt(p99)} |")
