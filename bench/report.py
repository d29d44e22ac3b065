#!/usr/bin/env python3
"""report.py — turn a `make bench` results directory into summary.json, PNG plots and report.md.

Reads what bench/run wrote (delegation/rep*/delegation-<phase>-<hogs>hogs.csv, lord.csv,
overhead.csv, shinjuku/runs.csv and one CSV per run, wakeup/<scheduler>.csv, apps/apps.csv,
bandwidth/bandwidth.csv, meta.json). Every number is a comparison within one boot: cos against
the default scheduler, as a ratio; a statistic repeated over repetitions is reported as the
median across them. Plots need matplotlib (in the build tree); without it the summary and report
still come. See docs/performance.md.
"""
import csv
import glob
import json
import math
import os
import re
import statistics
import sys


def pct(sorted_vals, p):
    """Percentile of an ascending list, as the C tools compute it: element (n - 1) * p / 100."""
    if not sorted_vals:
        return float("nan")
    return sorted_vals[int((len(sorted_vals) - 1) * p / 100.0)]


def enclave_size(meta):
    """Enclave CPUs of the run: every CPU but the lord's CPU 0 (3 for runs before meta said)."""
    return max(1, int(meta.get("cpus", 4)) - 1)


def enclave_text(meta):
    n = enclave_size(meta)
    return "CPU 1" if n == 1 else f"CPUs 1-{n}"


def read_delegation(out, enclave=3):
    """{(phase, hogs): [ [latencies of rep 1], [rep 2], ... ]} in microseconds.

    With some but not all @enclave target CPUs hogged (hogs run on CPUs 1..hogs), a cos round lands on a
    hogged CPU (the shoot preempts the hog) or an idle one (the lord's round robin), while the
    default scheduler wakes the thread on an idle CPU when there is one. Those cos rounds are also
    kept apart, as phases "<phase>@idle" and "<phase>@hogged".
    """
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "delegation", "rep*", "delegation-*.csv"))):
        m = re.search(r"delegation-(.+)-(\d+)hogs\.csv$", path)
        phase, hogs = m.group(1), int(m.group(2))
        with open(path) as f:
            rows = [(int(r["latency_ns"]) / 1000.0, int(r["cpu"])) for r in csv.DictReader(f)]
        runs.setdefault((phase, hogs), []).append(sorted(v for v, _ in rows))
        if phase != "default" and 0 < hogs < enclave:
            for part, keep in (("idle", lambda c: c > hogs), ("hogged", lambda c: c <= hogs)):
                lat = sorted(v for v, c in rows if keep(c))
                if lat:
                    runs.setdefault((f"{phase}@{part}", hogs), []).append(lat)
    return runs


def summarize_delegation(runs):
    rows = []
    for (phase, hogs), reps in sorted(runs.items(),
                                      key=lambda kv: (kv[0][1], kv[0][0] != "default", kv[0][0])):
        stats = [{"p50": pct(r, 50), "p99": pct(r, 99), "max": r[-1]} for r in reps]
        rows.append({
            "phase": phase, "hogs": hogs, "reps": len(reps), "samples": sum(len(r) for r in reps),
            **{k: statistics.median(s[k] for s in stats) for k in ("p50", "p99", "max")},
        })
    by = {(r["phase"], r["hogs"]): r for r in rows}
    for r in rows:
        d = by.get(("default", r["hogs"]))
        if d and r["phase"] != "default":
            for k in ("p50", "p99", "max"):
                r[k + "_ratio"] = r[k] / d[k] if d[k] else float("nan")
    return rows


def read_grouped(path, keys, value):
    """The rows of CSV file @path grouped by the columns @keys: {(key, ...): [value(row), ...]}.
    A row whose value does not parse (a run that printed nothing) is left out, counted as
    missing; a file that does not exist gives {}."""
    vals = {}
    if not os.path.exists(path):
        return vals
    with open(path) as f:
        for r in csv.DictReader(f):
            try:
                v = value(r)
            except (ValueError, TypeError):
                continue
            vals.setdefault(tuple(r[k] for k in keys), []).append(v)
    return vals


def peer_order(s):
    """Sort key for schedulers: the default, cos's configurations, then the peers (scx_*)."""
    return (s != "default", s.startswith("scx_"), s)


def read_overhead(out):
    """overhead.csv: per benchmark, the default's and the shim's median seconds and the
    throughput ratio (default / shim: > 1 means the shim is faster, the goal is >= 0.97), and
    under `peers` the same for each peer scheduler that ran (scx_simple, ...)."""
    vals = read_grouped(os.path.join(out, "overhead.csv"), ("benchmark", "scheduler"),
                        lambda r: float(r["seconds"]))
    rows = []
    for bench in sorted({b for b, _ in vals}):
        d, c = vals.get((bench, "default"), []), vals.get((bench, "cos"), [])
        if not d or not c:
            rows.append({"benchmark": bench, "missing": True})  # said so in the report
            continue
        md, mc = statistics.median(d), statistics.median(c)
        peers = {}
        for s in sorted({s for b, s in vals if b == bench and s.startswith("scx_")}):
            mp = statistics.median(vals[(bench, s)])
            peers[s] = {"s": mp, "reps": len(vals[(bench, s)]),
                        "throughput_ratio": md / mp if mp else float("nan"),
                        "shim_to_peer": mp / mc if mc else float("nan")}
        row = {"benchmark": bench, "default_s": md, "cos_s": mc, "reps": min(len(d), len(c)),
               "throughput_ratio": md / mc if mc else float("nan"), "peers": peers,
               "default_all": d, "cos_all": c}
        # partial mode: its workloads lose the partition's CPU, so its baseline is the default
        # scheduler on the same CPUs (default-rest)
        rest, part = vals.get((bench, "default-rest"), []), vals.get((bench, "partial"), [])
        if rest and part:
            mr, mp = statistics.median(rest), statistics.median(part)
            row["partial"] = {"s": mp, "default_rest_s": mr, "reps": min(len(rest), len(part)),
                              "throughput_ratio": mr / mp if mp else float("nan")}
        rows.append(row)
    return rows


def read_wakeup(out, sub="wakeup"):
    """{scheduler: [per-round p99 in us]} from <sub>/<scheduler>.csv (default, cos, then the
    peers)."""
    res = {}
    d = os.path.join(out, sub)
    names = [f[:-4] for f in (os.listdir(d) if os.path.isdir(d) else []) if f.endswith(".csv")]
    for sched in sorted(names, key=peer_order):
        path = os.path.join(d, sched + ".csv")
        rounds = {}
        with open(path) as f:
            for r in csv.DictReader(f):
                rounds.setdefault(int(r["round"]), []).append(int(r["latency_ns"]) / 1000.0)
        res[sched] = [pct(sorted(v), 99) for _, v in sorted(rounds.items())]
    return res


def summarize_wakeup(wk):
    rows = []
    for sched, p99s in wk.items():
        rows.append({"scheduler": sched, "rounds": len(p99s), "p99_mean": statistics.mean(p99s),
                     "p99_median": statistics.median(p99s),
                     "p99_stdev": statistics.pstdev(p99s), "p99_per_round": p99s})
    d = next((r for r in rows if r["scheduler"] == "default"), None)
    for r in rows:
        if d and r is not d and d["p99_median"]:
            r["p99_median_ratio"] = r["p99_median"] / d["p99_median"]
    return rows


def read_lcbe(out):
    """lcbe/<scheduler>-lc<N>.csv (each latency-critical process's wake-ups, cos-bench-wakeup
    --csv) and lcbe/be.csv (scheduler, the best-effort hogs' bogo ops/s): per scheduler the
    reference's statistic over the LC processes' wake-ups pooled per round (P99 within each
    round; mean, median and stdev across rounds; the wake-ups over 1 ms), the BE throughput,
    and the ratios to the default's."""
    d = os.path.join(out, "lcbe")
    if not os.path.isdir(d):
        return []
    rounds, over = {}, {}
    for f in sorted(os.listdir(d)):
        m = re.match(r"(.+)-lc\d+\.csv$", f)
        if not m:
            continue
        sched = m.group(1)
        with open(os.path.join(d, f)) as fh:
            for r in csv.DictReader(fh):
                us = int(r["latency_ns"]) / 1000.0
                rounds.setdefault(sched, {}).setdefault(int(r["round"]), []).append(us)
                over[sched] = over.get(sched, 0) + (us > 1000)
    be = {}
    if os.path.exists(os.path.join(d, "be.csv")):
        with open(os.path.join(d, "be.csv")) as fh:
            for r in csv.DictReader(fh):
                be.setdefault(r["scheduler"], []).append(float(r["bogo_ops_per_s"]))
    rows = []
    for sched in sorted(rounds, key=peer_order):
        p99s = [pct(sorted(v), 99) for _, v in sorted(rounds[sched].items())]
        row = {"scheduler": sched, "rounds": len(p99s), "p99_mean": statistics.mean(p99s),
               "p99_median": statistics.median(p99s), "p99_stdev": statistics.pstdev(p99s),
               "over_1ms": over.get(sched, 0),
               "samples": sum(len(v) for v in rounds[sched].values())}
        if be.get(sched):
            row["be_ops_per_s"] = statistics.median(be[sched])
        row.update(read_lcbe_cpu(d, sched, row["samples"]))
        rows.append(row)
    d0 = next((r for r in rows if r["scheduler"] == "default"), None)
    for r in rows:
        if not d0 or r is d0:
            continue
        for k in ("p99_mean", "p99_stdev"):
            if d0[k]:
                r[k + "_ratio"] = r[k] / d0[k]
        if d0.get("be_ops_per_s") and "be_ops_per_s" in r:
            r["be_ratio"] = r["be_ops_per_s"] / d0["be_ops_per_s"]
    return rows


def read_lcbe_cpu(d, sched, wakeups):
    """Where BE's throughput went over a run of lcbe: its CPU time over its real time and its
    bogo ops per CPU second (stress-ng: the sum of user and system is the kernel's exact count,
    their split is sampled at the tick), the LC processes' CPU per wake-up (getrusage, their
    last line), and per LC wake-up the machine's context switches and the enclave CPUs'
    rescheduling + function-call IPIs (bench/run's lcbe_cpu_snapshot before and after; the
    enclave CPUs' /proc/stat jiffies are kept too). {} without the snapshots."""
    def snap(name):
        path = os.path.join(d, f"{sched}-cpu-{name}.txt")
        if not os.path.exists(path):
            return None
        v = {"jiffies": [0] * 8, "irq": {}}
        with open(path) as f:
            for line in f:
                w = line.split()
                if line.startswith("# uptime"):
                    v["uptime"] = float(w[2])
                elif re.match(r"cpu\d+$", w[0]):
                    for i in range(8):
                        v["jiffies"][i] += int(w[1 + i])
                elif w[0] == "ctxt":
                    v["ctxt"] = int(w[1])
                elif w[0] == "irq" and len(w) == 3:
                    v["irq"][w[1].rstrip(":")] = int(w[2])
        return v
    a, b = snap("before"), snap("after")
    if not a or not b:
        return {}
    hz = 100.0  # USER_HZ
    j = [(y - x) / hz for x, y in zip(a["jiffies"], b["jiffies"])]
    # /proc/stat: user nice system idle iowait irq softirq steal
    r = {"cpu_window_s": b["uptime"] - a["uptime"], "cpu_user_s": j[0] + j[1],
         "cpu_system_s": j[2], "cpu_idle_s": j[3] + j[4], "cpu_irq_s": j[5] + j[6]}
    be_txt = os.path.join(d, f"{sched}-be.txt")
    if os.path.exists(be_txt):
        with open(be_txt) as f:
            for line in f:
                w = line.split()
                if len(w) >= 9 and w[1] == "metrc:" and w[3] == "cpu":
                    ops, real, usr, sy = (float(x) for x in w[4:8])
                    r["be_user_s"], r["be_system_s"], r["be_real_s"] = usr, sy, real
                    if real and usr + sy:
                        r["be_cpu_share"] = (usr + sy) / real
                        r["be_ops_per_cpu_s"] = ops / (usr + sy)
                    break
    lc_u = lc_s = 0.0
    for f in sorted(os.listdir(d)):
        if re.match(re.escape(sched) + r"-lc\d+\.txt$", f):
            with open(os.path.join(d, f)) as fh:
                for line in fh:
                    m = re.match(r"rusage: user ([\d.]+) s, system ([\d.]+) s", line)
                    if m:
                        lc_u += float(m.group(1))
                        lc_s += float(m.group(2))
    r["lc_user_s"], r["lc_system_s"] = lc_u, lc_s
    if wakeups:
        r["lc_cpu_us_per_wakeup"] = 1e6 * (lc_u + lc_s) / wakeups
        r["lc_system_us_per_wakeup"] = 1e6 * lc_s / wakeups
        r["switches_per_wakeup"] = (b["ctxt"] - a["ctxt"]) / wakeups
        irq = {k: b["irq"].get(k, 0) - a["irq"].get(k, 0) for k in b["irq"]}
        r["ipis_per_wakeup"] = (irq.get("RES", 0) + irq.get("CAL", 0)) / wakeups
    return r


def read_pair(out):
    """pair/pair.csv (cos-bench-pair: round trips/s per scheduler and number of pairs) and
    pair/perf.csv (concurrent `perf bench sched pipe`: seconds for the lot): one row per
    benchmark, scheduler and count, with the throughput ratio to the default's."""
    d = os.path.join(out, "pair")
    rows = []
    if os.path.exists(os.path.join(d, "pair.csv")):
        with open(os.path.join(d, "pair.csv")) as f:
            for r in csv.DictReader(f):
                rows.append({"benchmark": "context1", "scheduler": r["label"],
                             "n": int(r["pairs"]), "per_s": float(r["trips_per_s"]),
                             "slowest_per_s": float(r["slowest_pair_per_s"])})
    if os.path.exists(os.path.join(d, "perf.csv")):
        with open(os.path.join(d, "perf.csv")) as f:
            for r in csv.DictReader(f):
                secs = float(r["seconds"]) or float("nan")
                rows.append({"benchmark": "perf-pipe", "scheduler": r["scheduler"],
                             "n": int(r["instances"]),
                             "per_s": int(r["instances"]) * int(r["loops"]) / secs})
    base = {(r["benchmark"], r["n"]): r for r in rows if r["scheduler"] == "default"}
    for r in rows:
        b = base.get((r["benchmark"], r["n"]))
        if b and b is not r and b["per_s"]:
            r["ratio"] = r["per_s"] / b["per_s"]
    return sorted(rows, key=lambda r: (r["benchmark"], r["n"], peer_order(r["scheduler"])))


def read_wakeup_hogs(out):
    """The many-core profile's wake-ups beside N hogs (wakeup/h<N>/<scheduler>.csv): one row per
    hog count and scheduler, as summarize_wakeup's."""
    rows = []
    base = os.path.join(out, "wakeup")
    subs = sorted((int(d[1:]), d) for d in (os.listdir(base) if os.path.isdir(base) else [])
                  if d.startswith("h") and d[1:].isdigit())
    for hogs, sub in subs:
        for r in summarize_wakeup(read_wakeup(out, os.path.join("wakeup", sub))):
            r["hogs"] = hogs
            rows.append(r)
    return rows


def read_hooks_cpus(out):
    """The many-core profile's hooks-cpus.csv: per CPU count, perf bench sched pipe and hackbench
    seconds under the default scheduler and with the shim attached, the ratio (default / cos: the
    shim's throughput relative to the default's), and the shim's hook costs (hooks-c<N>/)."""
    vals = read_grouped(os.path.join(out, "hooks-cpus.csv"), ("cpus", "benchmark", "scheduler"),
                        lambda r: float(r["seconds"]) if r["seconds"] else float("nan"))
    rows = []
    for cpus, bench in sorted({(int(c), b) for c, b, _ in vals}):
        d = vals.get((str(cpus), bench, "default"), [float("nan")])[0]
        c = vals.get((str(cpus), bench, "cos"), [float("nan")])[0]
        peers = {s: v[0] for (cc, b, s), v in vals.items()
                 if cc == str(cpus) and b == bench and s not in ("default", "cos")}
        rows.append({"cpus": cpus, "benchmark": bench, "default_s": d, "cos_s": c,
                     "throughput_ratio": d / c if c else float("nan"),
                     "peers": {s: {"s": v, "throughput_ratio": d / v if v else float("nan")}
                               for s, v in sorted(peers.items())},
                     "hooks": read_hooks(out, f"hooks-c{cpus}")})
    return rows


HOST_BOUND_PCT = 5  # a vCPU that waited more than this share of its runnable time: not evidence


def read_host_wait_samples(out):
    """vm/host-wait.csv (tests/vm/host-wait, on the host): {vCPU thread: [(run_ns, wait_ns,
    phase), ...]} in sample order; phase is the benchmark the guest's console last named."""
    path = os.path.join(out, "vm", "host-wait.csv")
    samples = {}
    if not os.path.exists(path):
        return samples
    with open(path) as f:
        for r in csv.DictReader(f):
            if not r["thread"].startswith("CPU "):
                continue
            try:
                v = (int(r["run_ns"]), int(r["wait_ns"]), r.get("phase") or "")
            except (ValueError, TypeError):
                continue  # a line cut short when QEMU ended
            samples.setdefault(r["thread"], []).append(v)
    return samples


def wait_pct(run, wait):
    return 100.0 * wait / (run + wait) if run + wait else 0.0


def read_host_wait(out):
    """Per vCPU thread, the share of its runnable time it waited for a host CPU over the whole
    boot.  A vCPU that waits blurs cross-CPU latencies: more than a few percent and the run is
    host-bound."""
    samples = read_host_wait_samples(out)
    rows = []
    for t in sorted(samples, key=lambda t: int(t.split()[1].split("/")[0])):
        (r0, w0, _), (r1, w1, _) = samples[t][0], samples[t][-1]
        rows.append({"vcpu": t, "run_s": (r1 - r0) / 1e9, "wait_s": (w1 - w0) / 1e9,
                     "wait_pct": wait_pct(r1 - r0, w1 - w0)})
    return rows


def read_host_wait_phases(out):
    """Per benchmark phase (in the order they ran): each vCPU's wait share over the samples of
    that phase (a 5 s interval counts for the phase its first sample named), their mean and the
    worst, and whether the phase was host-bound."""
    acc, order = {}, []
    for t, s in read_host_wait_samples(out).items():
        for (r0, w0, ph), (r1, w1, _) in zip(s, s[1:]):
            if not ph:
                continue
            if ph not in order:
                order.append(ph)
            a = acc.setdefault(ph, {}).setdefault(t, [0, 0])
            a[0] += r1 - r0
            a[1] += w1 - w0
    rows = []
    for ph in order:
        pcts = [wait_pct(run, wait) for run, wait in acc[ph].values()]
        rows.append({"phase": ph, "mean_pct": statistics.mean(pcts), "max_pct": max(pcts),
                     "host_bound": max(pcts) > HOST_BOUND_PCT})
    return rows


def many_core_lines(wk_hogs, hooks_cpus, host_wait, host_phases=()):
    """report.md's sections for the many-core profile's rows and the host's vCPU waits."""
    lines = []
    if wk_hogs:
        lines += ["## Wake-ups beside 1-3 hogs", "",
                  "The timer task on CPU 1 (as in the wake-up section) with N stress-ng hogs on "
                  "CPUs 1..N; `cos`: a COS task under cos-fifo. Per round its P99; the median of "
                  "the rounds' P99 and its ratio to the default's (goal <= 0.5).", "",
                  "| hogs | scheduler | rounds | P99 median | P99 mean | ratio |",
                  "|---|---|---|---|---|---|"]
        for r in wk_hogs:
            ratio = f"{r['p99_median_ratio']:.2f}×" if "p99_median_ratio" in r else "—"
            lines.append(f"| {r['hogs']} | {r['scheduler']} | {r['rounds']} | "
                         f"{r['p99_median']:.1f} µs | {r['p99_mean']:.1f} µs | {ratio} |")
        lines.append("")
    if hooks_cpus:
        peers = sorted({p for r in hooks_cpus for p in r.get("peers", {})})
        lines += ["## The shim's cost by CPU count", "",
                  "`perf bench sched pipe` and hackbench (N groups) confined to CPUs 0..N-1, "
                  "default scheduler, the shim attached (no lord, fair tasks), then each peer. "
                  "Ratio: default's seconds / the scheduler's (goal >= 0.97). Then the shim's "
                  "three busiest hooks during the shim's run.", "",
                  "| CPUs | benchmark | default | shim | ratio | "
                  + "".join(f"{p} ratio | " for p in peers) + "busiest hooks (ns per call) |",
                  "|---|---|---|---|---|" + "---|" * len(peers) + "---|"]
        for r in hooks_cpus:
            top = ", ".join(f"{h['op']} {h['ns_per_call']:.0f}" for h in r["hooks"][:3])
            pr = "".join(f"{r['peers'][p]['throughput_ratio']:.2f}× | " if p in r.get("peers", {})
                         else "— | " for p in peers)
            lines.append(f"| {r['cpus']} | {r['benchmark']} | {r['default_s']:.3f} s | "
                         f"{r['cos_s']:.3f} s | {r['throughput_ratio']:.2f}× | {pr}"
                         f"{top if r['benchmark'] == 'hackbench' else ''} |")
        lines.append("")
    if host_wait:
        worst = max(host_wait, key=lambda r: r["wait_pct"])
        mean = statistics.mean(r["wait_pct"] for r in host_wait)
        lines += ["## The host's side", "",
                  f"The vCPU threads waited for a host CPU {mean:.1f} % of their runnable time on "
                  f"average over the boot, at most {worst['wait_pct']:.1f} % ({worst['vcpu']})"
                  + (": host-bound, cross-CPU latencies here are not evidence."
                     if worst["wait_pct"] > HOST_BOUND_PCT else "."), ""]
    if host_phases:
        lines += ["Each benchmark's share (5 s samples; a row whose vCPUs waited more than "
                  f"{HOST_BOUND_PCT} % is host-bound: its cross-CPU latencies are not evidence):", "",
                  "| benchmark | vCPU wait, mean | worst vCPU | |", "|---|---|---|---|"]
        for r in host_phases:
            lines.append(f"| {r['phase']} | {r['mean_pct']:.1f} % | {r['max_pct']:.1f} % | "
                         f"{'host-bound: not evidence' if r['host_bound'] else ''} |")
        lines.append("")
    return lines


def read_work(out):
    """work.csv (bench/run's work_done): per benchmark and scheduler, the medians over the
    repetitions of the work per unit (a pipe round trip, a hackbench message, a request):
    context switches, IPIs (rescheduling + function call), cos.ko's messages and placements,
    and the lord's CPU time in µs.  These do not depend on the emulator's speed."""
    def per_unit(r):
        u = float(r["units"])
        if u <= 0:
            raise ValueError("no units")
        return {"ctxt": int(r["ctxt"]) / u, "ipi": (int(r["ipi_res"]) + int(r["ipi_cal"])) / u,
                "messages": int(r["messages"]) / u, "placed": int(r["placed"]) / u,
                "lord_us": int(r["lord_ms"]) * 1000.0 / u,
                # the lord's sleeps (voluntary switches); older work.csv files lack the column
                "lord_sleeps": int(r["lord_sleeps"]) / u if r.get("lord_sleeps") else None,
                # sched_ext program runs (BENCH_HOOK_CALLS=1 only; 0 otherwise)
                "hook_calls": int(r["hook_calls"]) / u if r.get("hook_calls") else None,
                # the lord's wait for its CPU while runnable; older files lack the column
                "lord_wait_us": int(r["lord_wait_us"]) / u if r.get("lord_wait_us") else None}
    vals = read_grouped(os.path.join(out, "work.csv"), ("benchmark", "scheduler"), per_unit)
    rows = []
    for (bench, sched) in sorted(vals, key=lambda k: (k[0], peer_order(k[1]))):
        v = vals[(bench, sched)]
        r = {"benchmark": bench, "scheduler": sched, "reps": len(v)}
        for k in v[0]:
            xs = [x[k] for x in v if x[k] is not None]
            r[k] = statistics.median(xs) if xs else None
        rows.append(r)
    return rows


def work_lines(work):
    """report.md's section for the work per request (read_work())."""
    if not work:
        return []
    lines = ["## Work per request", "",
             "Counted, not timed (the same on any hardware): per unit of work (`pipe`: a round "
             "trip; `hackbench`: a message; `nginx`, `redis`: a request; `pgbench-*`: a transaction; "
             "`rocksdb`: a read), the machine's context "
             "switches, rescheduling and function-call IPIs, cos.ko's ring messages and "
             "placements, the lord's CPU time, how often the lord slept (its voluntary "
             "context switches) and how long it waited runnable for its CPU (timed, unlike "
             "the rest: compare it within a boot). With `BENCH_HOOK_CALLS=1`, also the sched_ext scheduler's "
             "BPF program runs (the shim's or a peer's). Medians over the repetitions.", ""]
    hooks = any(r.get("hook_calls") for r in work)
    lines += ["| benchmark | scheduler | reps | context switches | IPIs | messages | placed | "
              "lord CPU | lord sleeps | lord waited |" + (" sched_ext runs |" if hooks else ""),
              "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if hooks else "")]
    for r in work:
        sleeps = "—" if r.get("lord_sleeps") is None else f"{r['lord_sleeps']:.3f}"
        waited = "—" if r.get("lord_wait_us") is None else f"{r['lord_wait_us']:.2f} µs"
        line = (f"| {r['benchmark']} | {r['scheduler']} | {r['reps']} | {r['ctxt']:.2f} | "
                f"{r['ipi']:.3f} | {r['messages']:.2f} | {r['placed']:.2f} | "
                f"{r['lord_us']:.2f} µs | {sleeps} | {waited} |")
        if hooks:
            line += " — |" if r.get("hook_calls") is None else f" {r['hook_calls']:.2f} |"
        lines.append(line)
    lines.append("")
    return lines


def read_apps(out):
    """apps/apps.csv: per app, client placement and scheduler, the medians over repetitions and
    the ratios to the default's with the same placement (throughput: higher is better; p99, the
    longest request and the longest wait for a CPU: lower is better).  `client` is pinned,
    unpinned or none (an app without a client); files from before it count as pinned."""
    path = os.path.join(out, "apps", "apps.csv")
    if not os.path.exists(path):
        return []

    def num(r, k):
        try:
            return float(r[k]) if r.get(k) not in (None, "", "-") else None
        except ValueError:
            return None

    vals = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            v = {k: num(r, k) for k in ("requests_per_s", "p50_us", "p99_us", "max_us",
                                        "wait_max_us", "client_wait_max_us")}
            if v["requests_per_s"] is None or v["p99_us"] is None:
                continue  # a run that printed nothing
            key = (r["app"], r.get("client") or "pinned", r["scheduler"])
            vals.setdefault(key, []).append(v)
    order = ["default", "shim", "cos-fifo", "cos-fifo-wf", "cos-fifo-nowf", "cos-fifo-nospin", "cos-fifo-wake-all",
             "cos-shinjuku", "shim-partial", "cos-fifo-partial"]  # then the peers

    def med(v, k):
        xs = [x[k] for x in v if x[k] is not None]
        return statistics.median(xs) if xs else None

    rows = []
    for app, client in sorted({(a, c) for a, c, _ in vals}, key=lambda k: (k[0], k[1] != "pinned", k[1])):
        base = vals.get((app, client, "default"))
        for sched in sorted({s for a, c, s in vals if (a, c) == (app, client)},
                            key=lambda s: (order.index(s) if s in order else len(order), s)):
            v = vals[(app, client, sched)]
            r = {"app": app, "client": client, "scheduler": sched, "reps": len(v)}
            for k in v[0]:
                r[k] = med(v, k)
            if base and sched != "default":
                for k, name in (("requests_per_s", "throughput_ratio"), ("p99_us", "p99_ratio"),
                                ("max_us", "max_ratio"), ("wait_max_us", "wait_ratio"),
                                ("client_wait_max_us", "client_wait_ratio")):
                    b = med(base, k)
                    if b and r[k] is not None:
                        r[name] = r[k] / b
            rows.append(r)
    return rows


def read_bandwidth(out):
    """bandwidth/bandwidth.csv (config, cap_pct, rep, server_ns) and the submissions' rate from
    bandwidth/<config>.txt: per configuration the server's mean and p99 completion time, the
    submissions' CPU rate, and the ratios the goals name (cos-cap to default-cap, and to cos;
    likewise cos-class1-cap, the server in shinjuku's class 1, to default-cap and cos-class1)."""
    vals = read_grouped(os.path.join(out, "bandwidth", "bandwidth.csv"), ("config", "cap_pct"),
                        lambda r: int(r["server_ns"]) / 1e6)
    order = ["alone", "default", "default-cap", "cos", "cos-cap", "cos-class1", "cos-class1-cap"]
    rows = {}
    for (conf, cap), v in vals.items():
        v = sorted(v)
        r = {"config": conf, "cap_pct": cap, "reps": len(v), "mean_ms": statistics.mean(v),
             "p99_ms": pct(v, 99)}
        txt = os.path.join(out, "bandwidth", conf + ".txt")
        if os.path.exists(txt):
            m = re.search(r"submissions used ([0-9.]+) %", open(txt).read())
            if m:
                r["submissions_pct"] = float(m.group(1))
        rows[conf] = r
    for conf, base in (("default-cap", "default"), ("cos-cap", "default-cap"), ("cos", "default"),
                       ("cos-class1-cap", "default-cap"), ("cos-class1", "default")):
        if conf in rows and base in rows and rows[base]["mean_ms"]:
            rows[conf]["mean_ratio"] = rows[conf]["mean_ms"] / rows[base]["mean_ms"]
            rows[conf]["ratio_to"] = base
    # the goal's ratio (and class 1's), and the floor any cap could reach
    for conf, base in (("cos-cap", "cos"), ("alone", "cos"), ("cos-class1-cap", "cos-class1")):
        if conf in rows and base in rows and rows[base]["mean_ms"]:
            rows[conf]["ratio_to_uncapped"] = rows[conf]["mean_ms"] / rows[base]["mean_ms"]
    return sorted(rows.values(), key=lambda r: order.index(r["config"])
                  if r["config"] in order else len(order))


def read_bw_accuracy(out):
    """bandwidth/accuracy.csv (kind, cap_pct, rate_pct[, throttles, overrun_us_per_throttle]):
    each cap's measured rate, its error relative to the cap, and cos.ko's throttling count and
    overrun per throttling."""
    rows = []
    path = os.path.join(out, "bandwidth", "accuracy.csv")
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                try:
                    rate = float(r["rate_pct"])
                    cap = None if r["cap_pct"] == "max" else float(r["cap_pct"])
                except (ValueError, TypeError):
                    continue
                row = {"kind": r["kind"], "cap_pct": cap, "rate_pct": rate}
                if cap:		# None: uncapped, the most these tasks reach here
                    row["error_pct"] = 100.0 * (rate - cap) / cap
                if r.get("throttles"):
                    row["throttles"] = int(r["throttles"])
                    row["overrun_us"] = int(r["overrun_us_per_throttle"])
                rows.append(row)
    return rows


def read_bw_weights(out):
    """bandwidth/weights.csv (sched, weight, rate_pct): each group's rate, its ratio to the
    weight-100 group's beside it, and that ratio's error against weight / 100."""
    rates = {}
    path = os.path.join(out, "bandwidth", "weights.csv")
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                try:
                    rates[(r["sched"], int(r["weight"]))] = float(r["rate_pct"])
                except (ValueError, TypeError):
                    continue
    rows = []
    for (sched, weight), rate in rates.items():
        base = rates.get((sched, 100))
        row = {"sched": sched, "weight": weight, "rate_pct": rate}
        if base:
            row["ratio"] = rate / base
            row["error_pct"] = 100.0 * (row["ratio"] - weight / 100) / (weight / 100)
        rows.append(row)
    return rows


def read_lock(out):
    """lock/lock.csv (cos-bench-lock's rows, labelled by scheduler): per scenario, lock
    (pthread, preload: the interposer, cos: cos_mutex) and scheduler the medians over the
    repetitions of ops/s, ns/op, the lock's mean and max wait and context switches per second,
    and the ratios to the default scheduler's (same scenario and lock)."""
    path = os.path.join(out, "lock", "lock.csv")
    if not os.path.exists(path):
        return []
    groups = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            lock = "preload" if r["preload"] == "1" else r["lock"]
            if r.get("handoff") == "1":
                lock += "-yield"
            key = (r["scenario"], int(r["threads"]), lock, r["label"])
            g = groups.setdefault(key, {"ops": [], "ns": [], "mean": [], "max": [], "csw": []})
            secs = float(r["seconds"]) or 1
            g["ops"].append(float(r["ops_per_s"]))
            g["ns"].append(float(r["ns_per_op"]))
            g["mean"].append(float(r["wait_mean_us"]))
            g["max"].append(float(r["wait_max_us"]))
            g["csw"].append(int(r["csw"]) / secs)
    rows = []
    for (sc, threads, lock, sched), g in groups.items():
        rows.append({"scenario": sc, "threads": threads, "lock": lock, "scheduler": sched,
                     "reps": len(g["ops"]), "ops_per_s": statistics.median(g["ops"]),
                     "ns_per_op": statistics.median(g["ns"]),
                     "wait_mean_us": statistics.median(g["mean"]),
                     "wait_max_us": statistics.median(g["max"]),
                     "csw_per_s": statistics.median(g["csw"])})
    base = {(r["scenario"], r["lock"]): r for r in rows if r["scheduler"] == "default"}
    for r in rows:
        b = base.get((r["scenario"], r["lock"]))
        if b and r is not b and b["ops_per_s"]:
            r["throughput_ratio"] = r["ops_per_s"] / b["ops_per_s"]
            if b["wait_max_us"]:
                r["max_wait_ratio"] = r["wait_max_us"] / b["wait_max_us"]
    order = ["uncontended", "contended", "handoff", "cs", "burst", "oversub"]
    scheds = ["default", "cos-lock", "cos-lock-nobh", "cos-shinjuku", "scx_simple", "scx_central",
              "scx_userland",
              "scx_rustland"]
    return sorted(rows, key=lambda r: (order.index(r["scenario"]) if r["scenario"] in order else 9,
                                       ["pthread", "preload", "preload-yield", "cos",
                                        "cos-yield", "pthread-yield"].index(r["lock"]),
                                       scheds.index(r["scheduler"]) if r["scheduler"] in scheds else 9))


def read_leveldb(out):
    """lock/leveldb.csv (cos-bench-leveldb's rows): per benchmark, threads, lock (plain, or
    preload: the interposer) and scheduler the median ops/s over the repetitions, its ratio to
    the default scheduler's and, for preload, to the same scheduler's plain run."""
    path = os.path.join(out, "lock", "leveldb.csv")
    if not os.path.exists(path):
        return []
    groups = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            lock = "preload" if r["preload"] == "1" else "plain"
            if r.get("handoff") == "1":
                lock += "-yield"
            key = (r["benchmark"], int(r["threads"]), lock, r["label"])
            groups.setdefault(key, []).append(float(r["ops_per_s"]))
    rows = [{"benchmark": b, "threads": t, "lock": lk, "scheduler": sc, "reps": len(v),
             "ops_per_s": statistics.median(v)} for (b, t, lk, sc), v in groups.items()]
    by = {(r["benchmark"], r["threads"], r["lock"], r["scheduler"]): r for r in rows}
    for r in rows:
        b = by.get((r["benchmark"], r["threads"], r["lock"], "default"))
        if b and b is not r and b["ops_per_s"]:
            r["ratio"] = r["ops_per_s"] / b["ops_per_s"]
        p = by.get((r["benchmark"], r["threads"], "plain", r["scheduler"]))
        if r["lock"].startswith("preload") and p and p["ops_per_s"]:
            r["preload_ratio"] = r["ops_per_s"] / p["ops_per_s"]
    scheds = ["default", "cos-lock", "cos-lock-nobh", "cos-shinjuku", "scx_simple", "scx_central",
              "scx_userland",
              "scx_rustland"]
    return sorted(rows, key=lambda r: (r["benchmark"], r["threads"], r["lock"],
                                       scheds.index(r["scheduler"]) if r["scheduler"] in scheds else 9))


def read_lord(out):
    """Rows of lord.csv with rates: shoots placed and started per second, lord µs per shoot."""
    path = os.path.join(out, "lord.csv")
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            sec, placed, calls = float(r["seconds"]), int(r["placed"]), int(r["calls"])
            rows.append({"mode": r["mode"], "shoots_per_s": placed / sec,
                         "started_per_s": int(r["started"]) / sec, "calls_per_s": calls / sec,
                         "shoots_per_call": placed / calls if calls else float("nan"),
                         "us_per_shoot": int(r["call_ns"]) / 1000.0 / placed if placed else float("nan"),
                         "refused": int(r["refused"])})
    return rows


def pair_ratios(lord):
    """Each lord's shoots/s beside the other over its shoots/s alone (the pair rows), as text."""
    rate = {r["mode"]: r["shoots_per_s"] for r in lord}
    parts = []
    for who in ("a", "b"):
        both, alone = rate.get(f"pair-{who}"), rate.get(f"pair-{who}-alone")
        if both is not None and alone:
            parts.append(f"{who.upper()} {both / alone:.2f}")
    return ("beside the other / alone: " + ", ".join(parts) + ".") if parts else "(no pair rows)."


def read_hooks(out, sub="hooks"):
    """Per shim program (sched_ext op): calls and ns per call during the hooks workload.

    <sub>/before.json and after.json are `bpftool prog show --json` with bpf_stats enabled; the
    shim's programs are the struct_ops programs named cos_*.  Sorted by calls, most first.
    sub: "hooks" (the workload's tasks are fair tasks), "hooks-cos" (COS tasks, no lord) or
    "hooks-lord" (COS tasks under cos-fifo).
    """
    paths = [os.path.join(out, sub, f) for f in ("before.json", "after.json")]
    if not all(os.path.exists(p) for p in paths):
        return []
    snaps = []
    for p in paths:
        with open(p) as f:
            snaps.append({prog["id"]: prog for prog in json.load(f)
                          if prog.get("type") == "struct_ops" and prog.get("name", "").startswith("cos_")})
    rows = []
    for pid, after in snaps[1].items():
        before = snaps[0].get(pid, {})
        calls = after.get("run_cnt", 0) - before.get("run_cnt", 0)
        ns = after.get("run_time_ns", 0) - before.get("run_time_ns", 0)
        if calls > 0:
            rows.append({"op": after["name"], "calls": calls, "ns_per_call": ns / calls})
    return sorted(rows, key=lambda r: -r["calls"])


def read_shinjuku(out, sub="shinjuku"):
    """One row per run of <sub>/runs.csv: latency percentiles (µs) and achieved throughput.  A
    request still unfinished when the run ended counts as an unbounded latency (inf): a run that
    left more than 1 % of its GETs unserved has no finite GET p99."""
    path = os.path.join(out, sub, "runs.csv")
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        runs = list(csv.DictReader(f))
    for run in runs:
        get, scan, done, unfinished = [], [], [], 0
        with open(os.path.join(out, sub, run["file"])) as f:
            for r in csv.DictReader(f):
                lat = float(r["latency_us"])
                if lat < 0:
                    unfinished += 1
                    lat = math.inf
                else:
                    done.append(float(r["arrival_us"]) + lat)
                (get if r["type"] == "get" else scan).append(lat)
        get.sort()
        scan.sort()
        rows.append({"load": float(run["load"]), "rate": int(run["rate"]),
                     "scheduler": run["scheduler"], "workers": int(run["workers"]),
                     "config": f"{run['scheduler']}-w{run['workers']}",
                     "slice_us": int(run["slice_us"]), "gets": len(get), "scans": len(scan),
                     "busy_pct": float(run.get("busy_pct") or "nan"),
                     "unfinished": unfinished,
                     "achieved_per_s": len(done) / (max(done) / 1e6) if done else 0.0,
                     "get_p50": pct(get, 50), "get_p99": pct(get, 99), "get_p999": pct(get, 99.9),
                     "scan_p50": pct(scan, 50), "scan_p99": pct(scan, 99)})
    return rows


def summarize_shinjuku(rows):
    """Per load: the default scheduler's and cos's best configuration (lowest GET p99), ratio."""
    best = []
    for load in sorted({r["load"] for r in rows}):
        at = [r for r in rows if r["load"] == load]
        d = min((r for r in at if r["scheduler"].startswith("default")), key=lambda r: r["get_p99"],
                default=None)
        c = min((r for r in at if r["scheduler"].startswith("cos")), key=lambda r: r["get_p99"],
                default=None)
        p = min((r for r in at if r["scheduler"].startswith("scx_")), key=lambda r: r["get_p99"],
                default=None)
        if d and c:
            b = {"load": load, "default": d["config"], "cos": c["config"],
                 "default_get_p99": d["get_p99"], "cos_get_p99": c["get_p99"],
                 "get_p99_ratio": (c["get_p99"] / d["get_p99"]
                                   if d["get_p99"] and not math.isinf(c["get_p99"]) else
                                   float("nan")),
                 "default_achieved": d["achieved_per_s"], "cos_achieved": c["achieved_per_s"]}
            if p:  # the best peer, beside them
                b.update({"peer": p["config"], "peer_get_p99": p["get_p99"],
                          "peer_ratio": (p["get_p99"] / d["get_p99"]
                                         if d["get_p99"] and not math.isinf(p["get_p99"]) else
                                         float("nan"))})
            best.append(b)
    return best


def plots(out, runs, deleg, over, wake=(), lord=(), sj=()):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)
        made.append(name)

    hogs_levels = sorted({h for _, h in runs})
    phases = sorted({p for p, _ in runs if "@" not in p}, key=lambda p: (p != "default", p))
    # latency CDFs: the fewest and the most hogs
    for hogs in sorted({hogs_levels[0], hogs_levels[-1]}) if hogs_levels else []:
        fig, ax = plt.subplots(figsize=(6, 4))
        for phase in phases:
            reps = runs.get((phase, hogs))
            if not reps:
                continue
            lat = sorted(v for r in reps for v in r)
            ax.plot(lat, [(i + 1) / len(lat) for i in range(len(lat))], label=phase)
        ax.set_xscale("log")
        ax.set_xlabel("latency (µs, log)")
        ax.set_ylabel("fraction of rounds")
        ax.set_title(f"delegation vs cross-CPU wake-up, {hogs} hogs")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        save(fig, f"delegation-cdf-{hogs}hogs.png")
    if deleg:
        fig, ax = plt.subplots(figsize=(6, 4))
        for phase in phases:
            pts = sorted((r["hogs"], r["p99"]) for r in deleg if r["phase"] == phase)
            if pts:
                ax.plot([h for h, _ in pts], [v for _, v in pts], marker="o", label=phase)
        ax.set_xlabel("CPU hogs on the target CPUs")
        ax.set_ylabel("p99 latency (µs)")
        ax.set_title("delegation p99 vs hogs (median over repetitions)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        save(fig, "delegation-p99-vs-hogs.png")
    if over:
        fig, ax = plt.subplots(figsize=(6, 4))
        ok = [r for r in over if not r.get("missing")]
        ax.bar([r["benchmark"] for r in ok], [r["throughput_ratio"] for r in ok], color="tab:blue")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(0.95, color="tab:red", ls="--", lw=0.8, label="goal 0.95")
        ax.set_ylabel("throughput with the shim / default")
        ax.set_title("overhead on normal tasks (higher is better)")
        ax.legend()
        save(fig, "overhead.png")
    if lord:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.8))
        names = [r["mode"] for r in lord]
        a1.bar(names, [r["shoots_per_s"] for r in lord], color="tab:blue")
        a1.set_ylabel("shoots placed per second")
        a1.set_title("lord throughput")
        a2.bar(names, [r["us_per_shoot"] for r in lord], color="tab:orange")
        a2.set_ylabel("µs in the commit call per shoot")
        a2.set_title("lord cost per shoot")
        for a in (a1, a2):
            a.tick_params(axis="x", rotation=30)
        save(fig, "lord-throughput.png")
    if sj:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for cfg in sorted({r["config"] for r in sj}, key=lambda c: (not c.startswith("default"), c)):
            pts = sorted((r["load"], r["get_p99"]) for r in sj if r["config"] == cfg and not r["unfinished"])
            if pts:
                ax.plot([x for x, _ in pts], [y / 1000 for _, y in pts], marker="o", label=cfg,
                        ls="--" if cfg.startswith("default") else "-")
        ax.set_yscale("log")
        ax.set_xlabel("offered load (fraction of the closed-loop capacity)")
        ax.set_ylabel("GET p99 latency (ms, log)")
        ax.set_title("Shinjuku: short-request p99 vs load")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, "shinjuku-p99-vs-load.png")
    if wake:
        fig, ax = plt.subplots(figsize=(6, 4))
        for r in wake:
            ax.plot(range(1, r["rounds"] + 1), r["p99_per_round"], marker="o", label=r["scheduler"])
        ax.set_yscale("log")
        ax.set_xlabel("round")
        ax.set_ylabel("P99 wake-up latency (µs, log)")
        ax.set_title("timer wake-ups on a CPU with a stress-ng hog")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        save(fig, "wakeup-p99-per-round.png")
    return made


def fmt_us(v):
    if v is None:
        return "—"
    if math.isinf(v):
        return "unserved"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} µs"


def md_table(cols, rows):
    """A Markdown table: the header row, its rule, one row per list of cells."""
    return (["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)] +
            ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def report(out, meta, deleg, over, made, wake=(), lord=(), sj=(), sj_best=(), hooks=(),
           hooks_cos=(), hooks_lord=(), sji=(), sji_best=(), apps=(), bw=(), bw_acc=(), bw_w=(),
           lock=(), ldb=(), extra=(), lcbe=(), pair=()):
    accel = str(meta.get("accel", "tcg")).split()[0]
    host = meta.get("host_cores")
    cpus = enclave_text(meta)
    lines = [f"# cos benchmarks — {meta.get('kernel', '?')}, {meta.get('date', '?')}", "",
             f"**{meta.get('cpus', 4)} vCPUs** (the lord on CPU 0, the enclave {cpus}) on "
             f"**{host if host else 'an unrecorded number of'} host cores**, "
             + ("a KVM guest: absolute times are close to metal's, but a vCPU can still wait for the "
                "host to run it; read the ratios (cos / default, same boot)." if accel == "kvm" else
                "an emulated guest (QEMU TCG): absolute times are ~20× metal and drift between "
                "boots; read the ratios (cos / default, same boot)."), ""]

    def section(title, text, cols, rows):
        lines.extend([title, "", text, ""] if text else [title, ""])
        lines.extend(md_table(cols, rows) + [""])

    def ratio(r, k):
        return f"{r[k]:.2f}×" if k in r else "—"

    def best_of(best, title):  # follows the runs' table, without a title of its own
        del lines[-1]
        lines.extend(["", title, ""])
        peers = any("peer" in b for b in best)

        def vs_default(b, k, v):
            return ("≪ 1 (the default left requests unserved)" if math.isinf(b["default_get_p99"])
                    and not math.isinf(v) else f"{b[k]:.2f}×")
        lines.extend(md_table(
            ["load", "default", "cos", "GET p99 default", "GET p99 cos", "ratio"] +
            (["best peer", "GET p99 peer", "peer ratio"] if peers else []),
            [[f"{b['load']:.2f}", b["default"], b["cos"], fmt_us(b["default_get_p99"]),
              fmt_us(b["cos_get_p99"]), vs_default(b, "get_p99_ratio", b["cos_get_p99"])] +
             ([b["peer"], fmt_us(b["peer_get_p99"]), vs_default(b, "peer_ratio", b["peer_get_p99"])]
              if "peer" in b else (["—", "—", "—"] if peers else [])) for b in best]))
        lines.append("")

    if deleg:
        section("## Delegation latency",
                f"{meta.get('rounds')} rounds per run, median of {meta.get('reps')} repetition(s). "
                "`default`: futex wake → woken thread runs on another CPU; `cos`: the lord's "
                f"shoot (ioctl) → the task runs on the chosen CPU (round robin over {cpus}); "
                "`cos-ur`: the same through io_uring; `cos-wake`: the lord's wake rule "
                "(COS_WAKE_IDLE) starts the woken task with no shoot, measured from the futex wake "
                "as `default` is. Hogs run on CPUs 1..N; with some CPUs hogged, "
                "`@hogged` rows are the cos rounds whose shoot preempted a hog, `@idle` those that "
                "went to an idle CPU (the default scheduler wakes the thread on an idle CPU when "
                "there is one).",
                ["phase", "hogs", "p50", "p99", "max", "p50 ratio", "p99 ratio"],
                [[r["phase"], r["hogs"], fmt_us(r["p50"]), fmt_us(r["p99"]), fmt_us(r["max"]),
                  ratio(r, "p50_ratio"), ratio(r, "p99_ratio")] for r in deleg])
    if lord:
        section("## Lord throughput",
                f"One lord keeps {cpus} busy with {2 * enclave_size(meta)} CPU-bound COS tasks for "
                f"{meta.get('lord_seconds')} s per mode, shooting a new task to a CPU as soon as its "
                "last one started. `-1`: one CPU per call; `-mask`: every enclave CPU in one call "
                "once all have started. `pair-*`: two lords (A on CPU 0, B on the first CPU of the "
                "upper half) each keep their half busy, first alone, then both at once; "
                + pair_ratios(lord),
                ["mode", "shoots/s", "started/s", "calls/s", "shoots/call", "µs in the call per shoot"],
                [[r["mode"], f"{r['shoots_per_s']:.0f}", f"{r['started_per_s']:.0f}",
                  f"{r['calls_per_s']:.0f}", f"{r['shoots_per_call']:.2f}",
                  f"{r['us_per_shoot']:.1f}"] for r in lord])
    if over:
        rows = []
        for r in over:
            if r.get("missing"):
                rows.append([r["benchmark"], "no result on one side (see log.txt)", "", "", ""])
                continue
            rows.append([r["benchmark"], "shim", f"{r['default_s']:.3f}", f"{r['cos_s']:.3f}",
                         f"{r['throughput_ratio']:.2f}"])
            for s, p in r.get("peers", {}).items():
                rows.append([r["benchmark"], s, f"{r['default_s']:.3f}", f"{p['s']:.3f}",
                             f"{p['throughput_ratio']:.2f}"])
            if "partial" in r:
                p = r["partial"]
                rows.append([r["benchmark"], "partial (vs default-rest)", f"{p['default_rest_s']:.3f}",
                             f"{p['s']:.3f}", f"{p['throughput_ratio']:.2f}"])
        section("## Overhead on normal tasks (shim attached, or a peer, vs default scheduler)",
                "Medians over the repetitions; throughput ratio: the default's seconds / the "
                "scheduler's (goal for the shim: >= 0.97 and >= each peer's). `scx_*`: the peer "
                "scheduler for the whole machine. `partial`: the shim in partial mode with the "
                "last CPU its partition, the workloads normal tasks on the other CPUs, against "
                "the default scheduler on those same CPUs (`default-rest`; goal: within 1 %).",
                ["benchmark", "scheduler", "default (s)", "scheduler (s)", "throughput ratio"],
                rows)
    if sj:
        section("## Shinjuku tail latency",
                f"Open-loop RocksDB server, {meta.get('shinjuku_seconds')} s of Poisson arrivals per "
                "run, 99.5 % GETs (8 random keys), 0.5 % SCANs (20000 keys); load = fraction of the "
                f"capacity (requests/s with one worker per enclave CPU, {cpus}, serving back to back, no "
                "wake-ups). `default-wN`: N workers under the default scheduler; `cos-wN`: N workers "
                "as COS tasks under cos-shinjuku; `cos-hints-wN`: and each worker publishes its "
                "request's class. Latency from the scheduled arrival.",
                ["load", "config", "offered/s", "achieved/s", f"{cpus} busy", "GET p50", "GET p99",
                 "GET p99.9", "SCAN p50", "unfinished"],
                [[f"{r['load']:.2f}", r["config"], r["rate"], f"{r['achieved_per_s']:.0f}",
                  f"{r['busy_pct']:.0f} %", fmt_us(r["get_p50"]), fmt_us(r["get_p99"]),
                  fmt_us(r["get_p999"]), fmt_us(r["scan_p50"]), r["unfinished"]]
                 for r in sorted(sj, key=lambda r: (r["load"], not r["config"].startswith("default"),
                                                    r["config"]))])
        best_of(sj_best, "Best of each (lowest GET p99; the goal: cos ≤ 1.0× default at every load):")
    if sji:
        hogs = meta.get("shinjuku_interfere_hogs", "?")
        section("## Shinjuku with interfering threads (COS's RocksDB experiment)",
                f"The same server, loads and capacity while {hogs} normal CPU-bound threads "
                f"(stress-ng, not COS tasks) run on {cpus} the whole time. `default-pinned-wN`: one "
                "worker pinned to each enclave CPU under the default scheduler (COS's best CFS "
                "configuration); `default-wN`: N workers; `cos-wN`, `cos-hints-wN`: N workers as "
                "COS tasks under cos-shinjuku, which preempts the hogs for them. `unserved`: more "
                "than 1 % of the requests were still unfinished when the run ended (10 s after "
                "the last arrival).",
                ["load", "config", "offered/s", "achieved/s", "GET p50", "GET p99", "GET p99.9",
                 "SCAN p50", "unfinished"],
                [[f"{r['load']:.2f}", r["config"], r["rate"], f"{r['achieved_per_s']:.0f}",
                  fmt_us(r["get_p50"]), fmt_us(r["get_p99"]), fmt_us(r["get_p999"]),
                  fmt_us(r["scan_p50"]), r["unfinished"]]
                 for r in sorted(sji, key=lambda r: (r["load"], not r["config"].startswith("default"),
                                                     r["config"]))])
        best_of(sji_best, "Best of each (the goal at 0.5 and 0.7: cos ≤ 0.2× default):")
    if wake:
        section("## Wake-up latency under batch load (per-round P99)",
                f"A timer loop (1 ms period) on CPU 1 with stress-ng CPU hogs on {cpus}: under the "
                "default scheduler, as a COS task under cos-fifo (the hogs stay normal tasks), and "
                "under each peer scheduler (`scx_*`, task and hogs alike; half the rounds of a "
                "fifth of the loops each, so its P99 is over fewer wake-ups).",
                ["scheduler", "rounds", "P99 mean", "P99 median", "P99 stdev", "median ratio"],
                [[r["scheduler"], r["rounds"], fmt_us(r["p99_mean"]), fmt_us(r["p99_median"]),
                  fmt_us(r["p99_stdev"]), ratio(r, "p99_median_ratio")] for r in wake])
    if apps:
        section("## Unmodified servers (nginx, redis-server, PostgreSQL, RocksDB, sysbench)",
                "Debian's nginx (a worker per server CPU, a 5 KiB static page) under wrk, "
                "redis-server (an I/O thread per server CPU) under redis-benchmark and PostgreSQL "
                "17 under pgbench (`select`: -S, `update`: -N; scale 4, on tmpfs), closed loop, "
                "16 connections; RocksDB's db_bench readrandom, 8 threads (the whole process under "
                "the configuration: ops/s and the per-read p50/p99); sysbench threads and mutex. "
                "The servers on CPUs 1..N-2; the client (a normal task) `pinned` on the "
                "last CPU (2 CPUs: servers on CPU 1, client on CPU 0 beside the lord) or "
                "`unpinned`, wherever its scheduler puts it; `none`: no client. `shim`: the shim "
                "attached, the server a COS task under its fair policy (no lord); `cos-fifo`, "
                "`cos-shinjuku`: `cosctl run --` under that lord (on CPU 0); `cos-fifo-nowf`: "
                "`cos-fifo --no-wake-first`; `cos-fifo-nospin`: under `cos-fifo --spin-us 0`, a lord "
                "that sleeps between events; `-partial`: the same in partial mode (only the "
                "servers on sched_ext, their CPUs its partition). `max`: the longest request; "
                "`wait`: the longest wait for a CPU of any server thread (and of any client "
                "thread), from the kernel's tracepoints (cos-bench-waits). Medians over the "
                "repetitions; ratios to `default` with the same client placement.",
                ["app", "client", "scheduler", "reps", "requests/s", "p50", "p99", "max",
                 "wait (server)", "wait (client)", "throughput ratio", "p99 ratio", "max ratio",
                 "wait ratio"],
                [[r["app"], r["client"], r["scheduler"], r["reps"], f"{r['requests_per_s']:.0f}",
                  fmt_us(r["p50_us"]), fmt_us(r["p99_us"]), fmt_us(r.get("max_us")),
                  fmt_us(r.get("wait_max_us")), fmt_us(r.get("client_wait_max_us")),
                  ratio(r, "throughput_ratio"), ratio(r, "p99_ratio"), ratio(r, "max_ratio"),
                  ratio(r, "wait_ratio")] for r in apps])
    if bw:
        section("## CPU bandwidth (COS's sandbox, scaled)",
                "A server thread doing 50 ms of work per repetition beside CPU-bound submissions "
                "in one cgroup, all on the enclave; `-cap`: the submissions' cgroup capped with "
                "cpu.max (`default-cap` is the kernel's own CFS bandwidth control). `cos`: "
                "cos-fifo --slice-us 5000 --latch 1, the server and the submissions alike in its "
                "one queue (the policy does not know the server: only the cap protects it, as "
                "against COS's reference ghOSt, which had no groups). `cos-class1`: cos-shinjuku "
                "--slice-us 5000, the server in class 1, the submissions in the default class (a "
                "policy that knows the server). "
                "`alone`: the server with no submissions, its floor. "
                "Ratios: `default-cap` to `default`, `cos-cap` to `default-cap` (goal <= 1.0) "
                "and to `cos` (goal <= 0.4; `alone` / `cos` is the least any cap could reach), "
                "`cos` to `default`; `cos-class1-cap` likewise to `default-cap` and `cos-class1`.",
                ["config", "cap %", "reps", "mean", "p99", "submissions' CPU %", "mean ratio",
                 "to", "capped / uncapped"],
                [[r["config"], r["cap_pct"], r["reps"], f"{r['mean_ms']:.1f} ms",
                  f"{r['p99_ms']:.1f} ms",
                  f"{r['submissions_pct']:.1f}" if "submissions_pct" in r else "-",
                  ratio(r, "mean_ratio"), r.get("ratio_to", "-"),
                  ratio(r, "ratio_to_uncapped")] for r in bw])
    if bw_acc:
        section("## CPU bandwidth: accuracy of a cap",
                "Enclave + 1 CPU-bound submissions alone in a cgroup capped with cpu.max, their "
                "rate from the cgroup's cpu.stat: `fair` as normal tasks under the shim's fair "
                "policy, `cos` as COS tasks under cos-shinjuku (5 ms turns); cap `none`: "
                "uncapped, the "
                "most these tasks reach here (no cap above it can be met). Goal: within 3 %. "
                "Throttled: times cos.ko throttled the group; overrun: CPU time its tasks ran "
                "beyond the budget, per throttling (the delay before they all stopped).",
                ["kind", "cap %", "measured %", "error", "throttled", "overrun"],
                [[r["kind"], f"{r['cap_pct']:.0f}" if r["cap_pct"] else "none",
                  f"{r['rate_pct']:.2f}",
                  f"{r['error_pct']:+.1f} %" if "error_pct" in r else "-", r.get("throttles", "-"),
                  f"{r['overrun_us']} µs" if "overrun_us" in r else "-"] for r in bw_acc])
    if bw_w:
        section("## CPU bandwidth: cpu.weight",
                "Three sibling cgroups of cpu.weight 100, 200 and 400, enclave-many CPU-bound "
                "submissions each, all at once: `default` is the kernel's own group scheduling "
                "(the reference), `shim` the shim's fair policy. Ratio: the group's rate over "
                "the weight-100 group's. Goal: 1:2:4 within 10 %.",
                ["sched", "weight", "measured %", "ratio", "error"],
                [[r["sched"], r["weight"], f"{r['rate_pct']:.1f}",
                  f"{r['ratio']:.2f}" if "ratio" in r else "-",
                  f"{r['error_pct']:+.1f} %" if "error_pct" in r else "-"] for r in bw_w])
    if lock:
        section("## Locks (cos-bench-lock)",
                "The lock-handoff reference's scenarios on the enclave's CPUs: `pthread` a plain "
                "pthread mutex, `preload` the same under LD_PRELOAD=libcos-lock.so (hints from "
                "an unmodified program; a COS task's contended unlock yields its CPU to the waiter "
                "it woke), `preload-yield` the same with COS_LOCK_HANDOFF=1 (every thread's does, "
                "the default scheduler's too), `cos` cos_mutex (as `preload`). ns/op: per lock or unlock "
                "(uncontended), per lock taken (others), per pass (handoff). Medians over the "
                "repetitions; ratios to `default` with the same lock. Goals (issue 32): threads > "
                "CPUs (`oversub`) +30 % throughput with the max wait within 1.5x the default's; "
                "`preload` within 5 % of `cos`.",
                ["scenario", "threads", "lock", "scheduler", "ops/s", "ns/op", "wait mean",
                 "wait max", "ctx sw/s", "throughput ratio", "max-wait ratio"],
                [[r["scenario"], r["threads"], r["lock"], r["scheduler"], f"{r['ops_per_s']:.0f}",
                  f"{r['ns_per_op']:.1f}", fmt_us(r["wait_mean_us"]), fmt_us(r["wait_max_us"]),
                  f"{r['csw_per_s']:.0f}", ratio(r, "throughput_ratio"),
                  ratio(r, "max_wait_ratio")] for r in lock])
    if ldb:
        section("## Locks: LevelDB (cos-bench-leveldb)",
                "db_bench's fillrandom and readrandom on Debian's LevelDB, the threads sharing "
                "one database and a fixed number of operations; `preload`: under "
                "LD_PRELOAD=libcos-lock.so (LevelDB's mutex hinted, unmodified; a COS task's "
                "contended unlock yields); `preload-yield`: the same with COS_LOCK_HANDOFF=1 "
                "(every thread's). Ratios: to "
                "`default` with the same lock, and `preload` to `plain` under the same "
                "scheduler (goal: within 5 %). Goal at one thread: >= 0.97x.",
                ["benchmark", "threads", "lock", "scheduler", "ops/s", "ratio",
                 "preload / plain"],
                [[r["benchmark"], r["threads"], r["lock"], r["scheduler"], f"{r['ops_per_s']:.0f}",
                  ratio(r, "ratio"), ratio(r, "preload_ratio")] for r in ldb])
    if lcbe:
        section("## Latency-critical beside best-effort (cos-lcbe)",
                "Two latency-critical processes (a 1 ms timer, short work at each wake-up) beside "
                "CPU-bound best-effort hogs on the enclave's CPUs. The reference's statistic: the "
                "P99 wake-up latency within each round (both LC processes' wake-ups), then the "
                "mean, median and standard deviation across rounds, and the wake-ups over 1 ms; "
                "the hogs' bogo ops/s. Goals (issue 33): LC per-round P99 mean and stdev <= 0.1x "
                "the default's, BE throughput >= 0.95x.",
                ["scheduler", "rounds", "P99 mean", "P99 median", "P99 stdev", "over 1 ms",
                 "BE ops/s", "P99 mean ratio", "stdev ratio", "BE ratio"],
                [[r["scheduler"], r["rounds"], fmt_us(r["p99_mean"]), fmt_us(r["p99_median"]),
                  fmt_us(r["p99_stdev"]), r["over_1ms"],
                  f"{r['be_ops_per_s']:.0f}" if "be_ops_per_s" in r else "—",
                  ratio(r, "p99_mean_ratio"), ratio(r, "p99_stdev_ratio"), ratio(r, "be_ratio")]
                 for r in lcbe])
        cpu = [r for r in lcbe if "be_cpu_share" in r]
        if cpu:
            def num(r, k, f):
                return f.format(r[k]) if k in r else "—"
            section("### Where BE's throughput went",
                    "BE's throughput is its CPU time times its work per CPU second. Over the hogs' "
                    "lifetime: their CPU time (user + system, the kernel's exact sum) over their "
                    "real time, and their bogo ops per CPU second; the LC processes' CPU per "
                    "wake-up (user + system, and the system part); per LC wake-up the context "
                    "switches of the whole machine (the lord's own on its CPU among them) and the "
                    "rescheduling + function-call IPIs of the enclave CPUs.",
                    ["scheduler", "BE CPU / real time", "BE ops per CPU s", "LC CPU / wake-up",
                     "of it system", "switches / wake-up (machine)", "IPIs / wake-up"],
                    [[r["scheduler"], num(r, "be_cpu_share", "{:.1%}"),
                      num(r, "be_ops_per_cpu_s", "{:.1f}"),
                      num(r, "lc_cpu_us_per_wakeup", "{:.0f} µs"),
                      num(r, "lc_system_us_per_wakeup", "{:.0f} µs"),
                      num(r, "switches_per_wakeup", "{:.2f}"),
                      num(r, "ipis_per_wakeup", "{:.2f}")]
                     for r in cpu])
    if pair:
        section("## Pipe partners (cos-pair)",
                "`context1`: cos-bench-pair, N pairs of processes passing a counter through two "
                "pipes (round trips/s, all pairs); `perf-pipe`: N concurrent `perf bench sched "
                "pipe` (round trips/s, all). On the enclave's CPUs; `shim`: the shim attached, "
                "the processes fair tasks. Goals (issue 33): cos-pair >= 1.5x the default with "
                "1-4 pairs, never < 0.95x with 8.",
                ["benchmark", "pairs", "scheduler", "round trips/s", "slowest pair/s", "ratio"],
                [[r["benchmark"], r["n"], r["scheduler"], f"{r['per_s']:.0f}",
                  f"{r['slowest_per_s']:.0f}" if "slowest_per_s" in r else "—",
                  ratio(r, "ratio")] for r in pair])
    hook_sections = [
        (hooks, "## The shim's hooks (time per call, shim attached, no lord)",
         "Each sched_ext op of the shim: its BPF program and the cos.ko kfuncs it calls, counted by "
         "the kernel (kernel.bpf_stats_enabled) while `perf bench sched pipe` and hackbench ran. "
         "Under emulation the times are ~20× metal's: compare runs of the same setup."),
        (hooks_cos, "## The shim's hooks for COS tasks (time per call, no lord)",
         "The same workloads started by `cosctl run --`: every task is a COS task (a slot in "
         "cos.ko's task table, every event a kfunc that changes its state), and with no lord the "
         "shim's fair policy runs them."),
        (hooks_lord, "## The shim's hooks for COS tasks under a lord (time per call)",
         "The same again under `cos-fifo`: each event of a COS task posts to the lord's ring, and "
         "the lord places the tasks (shoots, dispatches of shot tasks)."),
    ]
    for rows, title, text in hook_sections:
        if rows:
            section(title, text, ["op", "calls", "ns per call"],
                    [[r["op"], r["calls"], f"{r['ns_per_call']:.0f}"] for r in rows])
    lines += extra
    for name in made:
        lines.append(f"![{name}]({name})")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: report.py RESULTS_DIR", file=sys.stderr)
        return 2
    out = sys.argv[1]
    meta = {}
    if os.path.exists(os.path.join(out, "meta.json")):
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
    runs = read_delegation(out, enclave_size(meta))
    deleg = summarize_delegation(runs)
    over = read_overhead(out)
    wake = summarize_wakeup(read_wakeup(out))
    lord = read_lord(out)
    sj = read_shinjuku(out)
    sj_best = summarize_shinjuku(sj)
    sji = read_shinjuku(out, "shinjuku-interfere")
    sji_best = summarize_shinjuku(sji)
    hooks = read_hooks(out)
    hooks_cos = read_hooks(out, "hooks-cos")
    hooks_lord = read_hooks(out, "hooks-lord")
    apps = read_apps(out)
    bw = read_bandwidth(out)
    bw_acc = read_bw_accuracy(out)
    bw_w = read_bw_weights(out)
    lock = read_lock(out)
    ldb = read_leveldb(out)
    lcbe = read_lcbe(out)
    pair = read_pair(out)
    wk_hogs = read_wakeup_hogs(out)
    hooks_cpus = read_hooks_cpus(out)
    host_wait = read_host_wait(out)
    host_phases = read_host_wait_phases(out)
    work = read_work(out)
    made = plots(out, runs, deleg, over, wake, lord, sj)
    summary = {"meta": meta, "delegation": deleg, "lord": lord,
               "overhead": [{k: v for k, v in r.items() if not k.endswith("_all")} for r in over],
               "shinjuku": sj, "shinjuku_best": sj_best, "shinjuku_interfere": sji,
               "shinjuku_interfere_best": sji_best, "wakeup": wake, "hooks": hooks,
               "hooks_cos": hooks_cos, "hooks_lord": hooks_lord, "apps": apps, "bandwidth": bw, "bandwidth_accuracy": bw_acc,
               "bandwidth_weights": bw_w, "lock": lock, "leveldb": ldb, "lcbe": lcbe, "pair": pair, "wakeup_hogs": wk_hogs, "hooks_cpus": hooks_cpus,
               "host_wait": host_wait, "host_wait_phases": host_phases, "work": work,
               "plots": made}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(report(out, meta, deleg, over, made, wake, lord, sj, sj_best, hooks, hooks_cos, hooks_lord,
                 sji, sji_best, apps, bw, bw_acc, bw_w, lock, ldb,
                 many_core_lines(wk_hogs, hooks_cpus, host_wait, host_phases) + work_lines(work),
                 lcbe, pair))
    return 0


if __name__ == "__main__":
    sys.exit(main())
