#!/usr/bin/env python3
"""summarize.py OUTPUT... — ab.sh's and pg-ab.sh's output per boot: wake.c's turns and waits
(range over the rounds), redis/nginx throughput ÷ the default's of the same round, pgbench's tps
÷ the default's and its longest wait, and sysbench mutex / RocksDB rate ÷ the default's with
the longest wait (ms) of each."""
import collections
import re
import sys

def print_wake(wake):
    print('\nwake.c: turns begun before a wake-up runs / mean wait us / longest wait us (range over rounds)\n')
    print('| busy on CPU 1 | lone task on CPU 0 | default | new | old |\n|---|---|---|---|---|')
    for busy in ('3', '5'):
        for lone in ('1', '0'):
            cells = []
            for cfg in ('default', 'new', 'old'):
                v = wake.get((busy, lone, cfg), [])
                if not v:
                    cells.append('-'); continue
                r = lambda i, f: ('%' + f + '–%' + f) % (min(x[i] for x in v), max(x[i] for x in v))
                cells.append('%s / %s / %s' % (r(0, '.2f'), r(1, '.0f'), r(2, '.0f')))
            print('| %s | %s | %s |' % (busy, 'yes' if lone == '1' else 'no', ' | '.join(cells)))


for path in sys.argv[1:]:
    wake = collections.defaultdict(list)
    rps = collections.defaultdict(list)
    ab = collections.defaultdict(list)
    pg = collections.defaultdict(list)
    for line in open(path):
        line = line.strip()
        if line.startswith('wake,'):
            _, cfg, rest = line.split(',', 2)
            d = dict(re.findall(r'(\w+)=([\d.]+)', rest))
            wake[(d['busy'], d['lone_cpu0'], cfg)].append((float(d['turns_before_run']), float(d['mean_wait_us']), float(d['max_wait_us'])))
        elif re.match(r'(redis-\w+|nginx),(pinned|unpinned),', line):
            app, cl, cfg, v = line.split(',')
            rps[(app, cl, cfg)].append(float(v))
        elif line.startswith('pgbench-'):
            t, cl, cfg, tps, mw = line.split(',')
            pg[(t, cl, cfg)].append((float(tps or 0), float(mw)))
        elif re.match(r'(mutex|rocksdb|threads),(default|new|old),', line):
            t, cfg, rate, mx, mw = line.split(',')
            ab[(t, cfg)].append((float(rate), float(mw)))
    print('## %s' % path)
    if wake:
        print_wake(wake)
    if rps:
        print('\nservers, requests/s ÷ the default in the same round (range over rounds)\n')
        print('| app | client | new | old |\n|---|---|---|---|')
        for (app, cl) in sorted({(a, c) for a, c, _ in rps}):
            d = rps[(app, cl, 'default')]
            cells = []
            for cfg in ('new', 'old'):
                q = [x / y for x, y in zip(rps[(app, cl, cfg)], d)]
                cells.append('%.2f–%.2f' % (min(q), max(q)) if q else '-')
            print('| %s | %s | %s |' % (app, cl, ' | '.join(cells)))
    if pg:
        print('\npgbench: tps ÷ the default (same round); the longest wait of a postgres thread, ms\n')
        print('| test | client | new tps | old tps | default wait | new wait | old wait |\n|---|---|---|---|---|---|---|')
        for (t, cl) in sorted({(t, c) for t, c, _ in pg}):
            d = pg[(t, cl, 'default')]
            rr = lambda cfg: '%.2f–%.2f' % (min(x[0] / y[0] for x, y in zip(pg[(t, cl, cfg)], d)), max(x[0] / y[0] for x, y in zip(pg[(t, cl, cfg)], d)))
            ww = lambda cfg: '%.0f–%.0f' % (min(x[1] for x in pg[(t, cl, cfg)]), max(x[1] for x in pg[(t, cl, cfg)]))
            print('| %s | %s | %s | %s | %s | %s | %s |' % (t, cl, rr('new'), rr('old'), ww('default'), ww('new'), ww('old')))
    if ab:
        print('\nrate ÷ the default (same round) and the longest wait of a thread, ms\n')
        print('| test | new rate | old rate | default wait | new wait | old wait |\n|---|---|---|---|---|---|')
        for t in sorted({t for t, _ in ab}):
            d = ab[(t, 'default')]
            rr = lambda cfg: '%.2f–%.2f' % (min(x[0] / y[0] for x, y in zip(ab[(t, cfg)], d)), max(x[0] / y[0] for x, y in zip(ab[(t, cfg)], d)))
            ww = lambda cfg: '%.0f–%.0f' % (min(x[1] for x in ab[(t, cfg)]), max(x[1] for x in ab[(t, cfg)]))
            print('| %s | %s | %s | %s | %s | %s |' % (t, rr('new'), rr('old'), ww('default'), ww('new'), ww('old')))
    print()
