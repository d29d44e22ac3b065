#!/usr/bin/env python3
"""ratios.py BOOTDIR... — per boot, each app's throughput, p99 and longest server wait ÷ the
default's (summary.json), and per unit of work the lord's wait for its CPU, its CPU time, the
context switches and the messages (work.csv)."""
import collections
import csv
import json
import sys

for d in sys.argv[1:]:
    print(d.rstrip('/').split('/')[-1])
    for a in json.load(open(d + '/summary.json'))['apps']:
        r = lambda k: '%.2f' % a[k] if k in a else '-'
        print('  %-15s %-9s %-22s %9.1f/s  ratio %5s  p99 %5s  wait %5s' % (
            a['app'], a['client'], a['scheduler'], a['requests_per_s'],
            r('throughput_ratio'), r('p99_ratio'), r('wait_ratio')))
    work = collections.defaultdict(lambda: [0, 0.0, 0.0, 0, 0])
    for row in csv.DictReader(open(d + '/work.csv')):
        w = work[(row['benchmark'], row['scheduler'])]
        w[0] += int(row['units'])
        w[1] += float(row['lord_wait_us'] or 0)
        w[2] += float(row['lord_ms'] or 0)
        w[3] += int(row['ctxt'])
        w[4] += int(row['messages'])
    for (bench, sched), w in sorted(work.items()):
        if sched != 'default':
            print('  %-26s %-22s lord waited %7.1f us  lord CPU %7.1f us  switches %5.2f  '
                  'messages %5.2f' % (bench, sched, w[1] / w[0], w[2] * 1000 / w[0],
                                      w[3] / w[0], w[4] / w[0]))
