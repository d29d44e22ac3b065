#!/bin/bash
# diagnostic: where the lord's time goes in a shoot (perf on CPU 0), one CPU per call vs the mask
O=/src/build/lordprof
for m in ioctl-1 ioctl-mask; do
  perf record -q -F 999 -C 0 -g -o $O/$m.data -- cos-bench-lord --seconds 3 --modes $m > $O/$m.txt 2>&1
  perf report -i $O/$m.data --stdio --no-children --sort sym --percent-limit 0.7 -g none 2>/dev/null | grep -v '^#' | grep -v '^$' > $O/$m-sym.txt
  perf report -i $O/$m.data --stdio --no-children --sort comm,dso -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -20 > $O/$m-dso.txt
done
