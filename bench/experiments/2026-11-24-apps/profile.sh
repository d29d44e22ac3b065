#!/usr/bin/env bash
# profile.sh — where nginx's CPUs go under the shim alone and under cos-fifo (one boot):
#   tests/vm/run --kver 7.3.4 -- [env WWW=/tmp] /src/bench/experiments/2026-11-24-apps/profile.sh
# perf samples (cpu-clock, 500 Hz) of the server CPUs 1-2 while wrk (CPU 3) drives nginx for 6 s;
# the lord (cos-fifo) on CPU 0, sampled too.  Writes build/apps-profile/ (git-ignored).
set -euo pipefail
out=/src/build/apps-profile
www=${WWW:-$out}	# WWW=/tmp: the page on tmpfs (bench/run does so now), else on virtiofs
rm -rf "$out"
mkdir -p "$out" "$www/www" "$www/tmp"
export PATH=$COS_BUILD/bin:$PATH
head -c 3840 /dev/urandom | base64 >"$www/www/index.html"
cat >"$out/nginx.conf" <<CONF
user root;
worker_processes 2;
pid $out/nginx.pid;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $www/tmp/body;
	proxy_temp_path $www/tmp/proxy;
	fastcgi_temp_path $www/tmp/fastcgi;
	uwsgi_temp_path $www/tmp/uwsgi;
	scgi_temp_path $www/tmp/scgi;
	server { listen 127.0.0.1:18080; root $www/www; }
}
CONF
run() {	# NAME
	taskset -c 1-2 cosctl run -- nginx -e "$out/nginx-error.log" -c "$out/nginx.conf" -g 'daemon off;' &
	local pid=$!
	sleep 1
	perf record -q -F 500 -e cpu-clock -a -g -o "$out/$1.data" -- \
		taskset -c 3 wrk -t 1 -c 16 -d 6s --latency http://127.0.0.1:18080/index.html >"$out/$1-wrk.txt" 2>&1
	kill -TERM "$pid"; wait "$pid" || true
	rep() { perf report -i "$out/$1.data" --stdio --no-children -g none --percentage relative "${@:2}" 2>/dev/null |
		grep -v '^#' | grep -v '^$' || true; }
	rep "$1" -C 1-2 --sort comm,dso | sed -n 1,15p >"$out/$1-servers-by-dso.txt"
	rep "$1" -C 1-2 --sort sym | sed -n 1,40p >"$out/$1-servers-top.txt"
	rep "$1" -C 0 --sort comm,sym | sed -n 1,25p >"$out/$1-cpu0-top.txt"
	grep Requests/sec "$out/$1-wrk.txt"
}
cosctl shim attach >/dev/null
echo "shim alone: $(run shim)"
cosctl shim detach >/dev/null
cosctl shim attach >/dev/null
cos-fifo --cpus 1-2 --lord-cpu 0 --stall-ms 1000 2>"$out/lord.txt" &
lord=$!
sleep 1
echo "cos-fifo: $(run cos-fifo)"
kill -INT "$lord"; wait "$lord" || true
cosctl shim detach >/dev/null
tail -n 2 "$out/lord.txt"
