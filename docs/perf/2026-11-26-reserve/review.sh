#!/bin/bash
# one boot: reserve A/B, then hooks A/B; kernel log check
o=$1; P=/src/docs/perf/2026-11-26-reserve
$P/reserve/reserve.sh $o/reserve 8 | tail -24
$P/hooks/hooksr.sh $o/hooks
dmesg | grep -iE "WARN|BUG:|oops|Call Trace|runtime error" | head
