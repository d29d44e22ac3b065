#!/bin/bash
# A/B in one boot: the default, the shim as built (new) and the shim of build/oldshim (old), the
# redis server on CPU 1, its client pinned to CPU 0 or unpinned; wrk on nginx unpinned.
# CONFIGS (default: "default new old") may add fifo-new and fifo-old: the servers under cos-fifo
# (CPU 1, the lord on CPU 0) with that shim attached first.  ROUNDS: default "1 2 3".
export PATH=$COS_BUILD/bin:$PATH
OLD=${OLD:-/src/build/oldshim/bin/cosctl}
cd /tmp
www=$(mktemp -d); mkdir -p $www/www $www/tmp; head -c 3840 /dev/urandom | base64 > $www/www/index.html
cat > $www/nginx.conf <<EOC
user root; worker_processes 1; pid $www/nginx.pid; error_log $www/err.log;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $www/tmp/b; proxy_temp_path $www/tmp/p; fastcgi_temp_path $www/tmp/f; uwsgi_temp_path $www/tmp/u; scgi_temp_path $www/tmp/s;
server { listen 127.0.0.1:18080; root $www/www; } }
EOC
up() { for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.05; done; }
one() {  # CFG
	local run=() cfg=$1
	case $cfg in *new) cosctl shim attach >/dev/null; run=(cosctl run --) ;; *old) $OLD shim attach >/dev/null; run=($OLD run --) ;; esac
	local lord=
	if [[ $cfg == fifo-* ]]; then
		cos-fifo --cpus 1 --lord-cpu 0 2>/tmp/ab-lord.err &
		lord=$!
		for i in $(seq 100); do grep -q "lord on CPU" /tmp/ab-lord.err && break; sleep 0.05; done
	fi
	"${run[@]}" taskset -c 1 redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no --protected-mode no >/dev/null 2>&1 &
	local pid=$!; up 16379
	for cl in pinned unpinned; do
		local pre=(); [ $cl = pinned ] && pre=(taskset -c 0)
		"${pre[@]}" redis-benchmark -p 16379 -c 16 -n 20000 -r 100000 -d 64 -t set,get --csv 2>/dev/null |
			awk -F'"' -v c=$cfg -v cl=$cl '$2=="SET"||$2=="GET" { printf "redis-%s,%s,%s,%s\n", tolower($2), cl, c, $4 }'
	done
	kill $pid; wait $pid 2>/dev/null
	"${run[@]}" taskset -c 1 nginx -c $www/nginx.conf -g 'daemon off;' &
	pid=$!; up 18080
	wrk -t 1 -c 16 -d 5s http://127.0.0.1:18080/index.html 2>/dev/null | awk -v c=$cfg '/^Requests\/sec/ { printf "nginx,unpinned,%s,%s\n", c, $2 }'
	kill $pid; wait $pid 2>/dev/null
	[ -z "$lord" ] || { kill -INT $lord; wait $lord; }
	case $cfg in *new) cosctl shim detach >/dev/null ;; *old) $OLD shim detach >/dev/null ;; esac
}
echo "app,client,config,rps"
for rep in ${ROUNDS:-1 2 3}; do for cfg in ${CONFIGS:-default new old}; do one $cfg; done; done
