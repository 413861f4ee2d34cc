#!/usr/bin/env bash
# Peak client memory (max RSS) of throng and wrk at growing connection
# counts against one nginx: memory must depend on connections, not on the
# number of requests or the run's length.
#
# Usage: bench/memory.sh [seconds]
set -euo pipefail
secs=${1:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
work=$(mktemp -d /tmp/throng-mem.XXXXXX); chmod 755 "$work"
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/html"; printf '1234567' > "$work/html/index.html"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 30000;
error_log $work/error.log;
pid $work/nginx.pid;
events { worker_connections 25000; }
http {
  access_log off; keepalive_requests 1000000;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work;
  uwsgi_temp_path $work; scgi_temp_path $work;
  server { listen 127.0.0.1:$port backlog=16384; root $work/html; }
}
CONF
ulimit -n "$(ulimit -Hn)"
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work"
url=http://127.0.0.1:$port/index.html
for _ in $(seq 50); do curl -sf "$url" >/dev/null 2>&1 && break; sleep 0.1; done

# throng on each backend, and wrk; the last column is throng's (io_uring)
# memory per connection over the 100-connection run of the same length.
echo "| connections | run | throng io_uring max RSS (MiB) | throng epoll max RSS (MiB) | wrk max RSS (MiB) | throng io_uring KB per connection over c=100 | throng epoll KB per connection over c=100 |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
rss() { tail -1 "$1"; }
for d in "$secs" "$((secs * 3))"; do
  for c in 100 1000 10000 15000; do
    /usr/bin/time -f '%M' -o "$work/t1" taskset -c 1 "$throng" load "$url" -t 1 -c "$c" -d "${d}s" --json --io uring >/dev/null
    /usr/bin/time -f '%M' -o "$work/t3" taskset -c 1 "$throng" load "$url" -t 1 -c "$c" -d "${d}s" --json --io epoll >/dev/null
    /usr/bin/time -f '%M' -o "$work/t2" taskset -c 1 wrk -t1 -c"$c" -d"${d}s" "$url" >/dev/null
    if [ "$c" = 100 ]; then base1=$(rss "$work/t1"); base3=$(rss "$work/t3"); fi
    per() { [ "$c" = 100 ] && echo "-" || python3 -c "print(f'{($1 - $2) * 1024 / 1000 / ($c - 100):.2f}')"; }
    printf '| %s | %s s | %.1f | %.1f | %.1f | %s | %s |\n' "$c" "$d" \
      "$(echo "$(rss "$work/t1") / 1024" | bc -l)" "$(echo "$(rss "$work/t3") / 1024" | bc -l)" \
      "$(echo "$(rss "$work/t2") / 1024" | bc -l)" \
      "$(per "$(rss "$work/t1")" "$base1")" "$(per "$(rss "$work/t3")" "$base3")"
  done
done
