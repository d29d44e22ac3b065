import sys, re, statistics
for path in sys.argv[1:]:
    rows = [l.split() for l in open(path) if l.strip() and l.split()[0] in ("old","off","on","on-kernel")]
    rounds = [rows[i:i+4] for i in range(0, len(rows) - 3, 4)]
    res = {"off": [], "on": [], "on-kernel": []}
    cpu = {"old": [], "off": [], "on": [], "on-kernel": []}
    for r in rounds:
        d = {row[0]: dict(kv.split("=") for kv in row[1:] if "=" in kv) for row in r}
        for m in res:
            res[m].append(float(d[m]["wall"]) / float(d["old"]["wall"]))
        for m in cpu:
            cpu[m].append(int(d[m]["lord_cpu_ticks"]) * 10000 / 40000)   # us of lord CPU per request (20000 SET + 20000 GET)
    print(path)
    for m, v in res.items():
        print(f"  {m:10s} wall / old: " + " ".join(f"{x:.2f}" for x in v) + f"  median {statistics.median(v):.2f}")
    for m, v in cpu.items():
        print(f"  {m:10s} lord CPU us/request: " + " ".join(f"{x:.2f}" for x in v))
