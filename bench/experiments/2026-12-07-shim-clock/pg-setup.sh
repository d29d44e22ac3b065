# pg-setup.sh — sourced by pg-ab.sh and why-pg.sh: a scale-4 pgbench database in a temporary
# directory, as bench/run's apps make it; sets PGBIN, as_pg, www, opts and up() (wait for the server).
PGBIN=/usr/lib/postgresql/17/bin
as_pg=(setpriv --reuid=postgres --regid=postgres --clear-groups --)
www=$(mktemp -d); chown postgres: "$www"
opts=(-p 15432 -k "$www" -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=64MB -c max_connections=40)
up() { for _ in $(seq 300); do "$PGBIN/pg_isready" -h "$www" -p 15432 -q && return; sleep 0.1; done; }
"${as_pg[@]}" "$PGBIN/initdb" -D "$www/pg" -U postgres --auth=trust -N >/dev/null 2>&1
"${as_pg[@]}" "$PGBIN/postgres" -D "$www/pg" "${opts[@]}" >/dev/null 2>&1 & pid=$!; up
"$PGBIN/pgbench" -h "$www" -p 15432 -U postgres -i -s 4 -q postgres >/dev/null 2>&1
kill -INT $pid; wait $pid
