#!/usr/bin/env python3
"""summary.py DIR — per round and build: ns per call of the shim's ops under cos-fifo, the
COS workload's throughput, context switches and the lord's counters, delegation p50s."""
import gzip, json, os, re, sys

d = sys.argv[1]
rounds = sorted({int(m.group(1)) for f in os.listdir(d) if (m := re.match(r'old-(\d+)-after', f))})


def progs(path):	# bpftool prog show --json, kept gzipped
    f = gzip.open(path + '.gz', 'rt') if os.path.exists(path + '.gz') else open(path)
    return {p['name']: p for p in json.load(f) if 'run_cnt' in p}


def ops(v, r):
    a, b = progs(f'{d}/{v}-{r}-before.json'), progs(f'{d}/{v}-{r}-after.json')
    res = {}
    for name in ('cos_dispatch', 'cos_enqueue', 'cos_running', 'cos_stopping'):
        if name in a and name in b:
            n = b[name]['run_cnt'] - a[name]['run_cnt']
            t = b[name]['run_time_ns'] - a[name]['run_time_ns']
            res[name] = (t / n if n else 0, n)
    return res


def ctxt(v, r):
    get = lambda f: int(re.search(r'^ctxt (\d+)', open(f).read(), re.M).group(1))
    return get(f'{d}/{v}-{r}-stat-after.txt') - get(f'{d}/{v}-{r}-stat-before.txt')


def pipe(v, r):	# perf bench -f simple sched pipe: the total time in seconds
    m = re.search(r'^\s*([\d.]+)\s*$', open(f'{d}/{v}-{r}-pipe.txt').read(), re.M)
    return m.group(1) + ' s' if m else '?'


def hackbench(v, r):
    m = re.search(r'Time: ([\d.]+)', open(f'{d}/{v}-{r}-hackbench.txt').read())
    return m.group(1) if m else '?'


def deleg(v, r):
    rows = []
    for line in open(f'{d}/{v}-{r}-delegation.txt'):
        if re.search(r'p50', line) or re.match(r'\s*(cos|default|call)\b', line):
            rows.append(line.rstrip())
    return rows


for r in rounds:
    for v in ('old', 'new'):
        o = ops(v, r)
        s = ', '.join(f'{k} {ns:.0f} ns x{n}' for k, (ns, n) in o.items())
        print(f'round {r} {v}: {s}; pipe {pipe(v, r)}; hackbench {hackbench(v, r)} s; '
              f'ctxt {ctxt(v, r)}')
        lord = open(f'{d}/{v}-{r}-lord.txt').read().strip().splitlines()
        counts = [l for l in lord if 'messages' in l]
        print('   lord: ' + (counts[0] if counts else '?'))
        print('   lord: ' + (lord[-1] if lord else '?'))
        for line in deleg(v, r):
            print('   ' + line)
