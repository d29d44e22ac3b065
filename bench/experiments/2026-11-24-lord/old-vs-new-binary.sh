#!/bin/bash
# cos-bench-lord: the 3f9aea8 binary (build/old) vs this tree's, same boot, same module
for round in 1 2; do for which in old new; do
  if [ $which = old ]; then B=/src/build/old/build/7.3.4+deb13-cloud-amd64; else B=$COS_BUILD; fi
  echo "round $round $which"; $B/bin/cos-bench-lord --seconds 3 --modes ioctl-1,ioctl-mask | tail -2
done; done
