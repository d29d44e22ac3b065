# 8 threads x 5 us sections on one CPU: default, then cos-lock with each variant of $VARIANTS
# ("name:args" ...), 6 runs x (cos_mutex, interposer+yield) each, one line per run.
B=$COS_BUILD/bin
cosctl shim attach >/dev/null 2>&1 || $B/cosctl shim attach
run() {	# label prefix
  for lk in cos preload; do
    if [ $lk = preload ]; then pre="env LD_PRELOAD=$COS_BUILD/lib/libcos-lock.so"; l=pthread; else pre=""; l=cos; fi
    $2 $pre $B/cos-bench-lock --scenario cs --threads 8 --lock $l --seconds 1 | sed "s/^/$1 $lk: /" | grep -o "^[a-z0-9-]* [a-z]*: \|[0-9]* ops/s\|max [0-9.]* us\|ops per thread [0-9-]*\|stopped.*"  | paste -sd' '
  done
}
for i in 1 2; do run default ""; done
for V in base: w10:--max-wait-us_10000 w5:--max-wait-us_5000; do
  name=${V%%:*}; args=$(echo ${V#*:} | tr _ " ")
  $B/${LORD:-cos-lock} --cpus 1 --lord-cpu 0 --stall-ms 1000 $args 2>/tmp/lord.txt &
  L=$!
  sleep 2
  for i in 1 2 3 4 5 6; do run $name "$B/cosctl run --"; done
  kill -INT $L; wait $L; tail -2 /tmp/lord.txt | cut -c1-400
done
