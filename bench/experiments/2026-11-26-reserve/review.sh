#!/bin/bash
# one boot: reserve A/B, then hooks A/B; kernel log check
o=$1; P=$(dirname "$(readlink -f "$0")")
$P/reserve.sh $o/reserve 8 | tail -24
$P/hooksr.sh $o/hooks
dmesg | grep -iE "WARN|BUG:|oops|Call Trace|runtime error" | head
