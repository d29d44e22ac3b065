import csv,sys
B=sys.argv[1]
rows=list(csv.DictReader(open(B+'/lock/lock.csv')))
def v(r): return 'cos_mutex' if r['lock']=='cos' else ('yield' if r['handoff']=='1' else 'interposer' if r['preload']=='1' else 'plain')
base={(r['scenario'],v(r)):r for r in rows if r['label']=='default'}
for sc in ('cs','oversub','contended','handoff','burst'):
  for r in rows:
    if r['scenario']!=sc or r['label']=='default': continue
    b=base[(sc,v(r))]
    mw = f"max {float(r['wait_max_us'])/1000:.2f} ms (default {float(b['wait_max_us'])/1000:.2f})" if sc in ('cs','oversub') else ''
    print(f"{sc:9} {v(r):10} {r['label']:15} {float(r['ops_per_s'])/float(b['ops_per_s']):.2f}x {mw} late {r['stop_late_ms']} (default {b['stop_late_ms']}) ops/thread {r['ops_min']}-{r['ops_max']}")
lv=list(csv.DictReader(open(B+'/lock/leveldb.csv')))
def w(r): return 'plain' if r['preload']=='0' else ('yield' if r['handoff']=='1' else 'interposer')
bl={(r['benchmark'],r['threads'],w(r)):r for r in lv if r['label']=='default'}
out={}
for r in lv:
  if r['label']=='default': continue
  b=bl[(r['benchmark'],r['threads'],w(r))]
  out.setdefault((r['benchmark'],int(r['threads'])),[]).append(f"{w(r)} {float(r['ops_per_s'])/float(b['ops_per_s']):.2f}")
for k,x in sorted(out.items()): print('leveldb',k[0],k[1],', '.join(x))
