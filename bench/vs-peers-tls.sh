#!/usr/bin/env bash
# throng load vs wrk and h2load over TLS, on the same nginx, same core, same run.
#
# nginx: 1 worker pinned to core 0, TLS 1.3 only, HTTP/2 and HTTP/1.1
# offered over ALPN, an ECDSA P-256 certificate, access log off, a 7-byte
# index.html. Each client: pinned to core 1, one thread; rounds alternate
# the tools so drift on a shared machine spreads over all of them. Modes:
#   keepalive  HTTPS/1.1, -c 100: one handshake per connection, then requests
#              (throng --http1.1, h2load --h1; wrk offers no ALPN)
#   h2-10x10   HTTP/2, 10 connections of 10 streams (throng --http2
#              --streams 10, h2load -c 10 -m 10)
#   h2-1x100   HTTP/2, 1 connection of 100 streams
#   close      a new connection and a handshake per request, -c 50
#              (throng --close, wrk -H 'Connection: close'; h2load has no
#              such mode and is left out). wrk resumes its TLS session on
#              every new connection (nginx logs `$ssl_session_reused` "r"
#              for all but the first), so it is compared with throng
#              --tls-resume; throng's full handshakes are shown beside.
# Client CPU is user+sys of the whole client process (GNU time) divided by
# the responses it reports.
#
# Usage: bench/vs-peers-tls.sh [rounds] [seconds]
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
for t in nginx wrk h2load openssl /usr/bin/time taskset python3 curl; do
  command -v "$t" >/dev/null || { echo "missing $t: run scripts/setup" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }

work=$(mktemp -d /tmp/throng-bench-tls.XXXXXX); chmod 755 "$work"
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/html"; printf '1234567' > "$work/html/index.html"
# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
self_signed "$work"
port=$(free_port)
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
error_log $work/error.log;
pid $work/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work;
  uwsgi_temp_path $work; scgi_temp_path $work;
  server {
    listen 127.0.0.1:$port ssl http2;
    ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.3;
    root $work/html;
  }
}
CONF
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work"
url=https://127.0.0.1:$port/index.html
for _ in $(seq 50); do curl -skf "$url" >/dev/null 2>&1 && break; sleep 0.1; done
curl -skf "$url" >/dev/null || { echo "nginx did not start" >&2; exit 1; }

worker=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
hz=$(getconf CLK_TCK)
timed() { /usr/bin/time -f 'CPU %U %S' -o "$work/time" taskset -c 1 "$@"; }
completed() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["completed"])' "$1"; }
results=$work/results.txt; : > "$results"
for r in $(seq "$rounds"); do
  for mode in keepalive h2-10x10 h2-1x100 close; do
    case $mode in
      keepalive) c=100; tools="throng wrk h2load";;
      h2-10x10)  c=10; m=10; tools="throng h2load";;
      h2-1x100)  c=1; m=100; tools="throng h2load";;
      close)     c=50; tools="throng wrk throng-full";;
    esac
    for tool in $tools; do
      t0=$(ticks)
      case $mode/$tool in
        keepalive/throng) timed "$throng" load "$url" -k --http1.1 -t 1 -c $c -d "${secs}s" --json > "$work/out"
                          n=$(completed "$work/out");;
        h2-*/throng)      timed "$throng" load "$url" -k --http2 --streams $m -t 1 -c $c -d "${secs}s" --json > "$work/out"
                          n=$(completed "$work/out");;
        h2-*/h2load)      timed h2load -t1 -c$c -m$m -D "$secs" "$url" > "$work/out"
                          n=$(awk '/^requests:/ {print $8}' "$work/out");;
        close/throng)     timed "$throng" load "$url" -k --http1.1 --close --tls-resume -t 1 -c $c -d "${secs}s" --json > "$work/out"
                          n=$(completed "$work/out");;
        close/throng-full) timed "$throng" load "$url" -k --http1.1 --close -t 1 -c $c -d "${secs}s" --json > "$work/out"
                          n=$(completed "$work/out");;
        keepalive/wrk)    timed wrk -t1 -c$c -d"${secs}s" "$url" > "$work/out"
                          n=$(awk '/requests in/ {print $1}' "$work/out");;
        close/wrk)        timed wrk -t1 -c$c -d"${secs}s" -H 'Connection: close' "$url" > "$work/out"
                          n=$(awk '/requests in/ {print $1}' "$work/out");;
        keepalive/h2load) timed h2load --h1 -t1 -c$c -D "$secs" "$url" > "$work/out"
                          n=$(awk '/^requests:/ {print $8}' "$work/out");;
      esac
      t1=$(ticks)
      read -r _ u s < "$work/time"
      echo "$mode $tool $r $n $u $s $secs $((t1 - t0)) $hz" >> "$results"
    done
  done
done

python3 - "$results" "$secs" "$rounds" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for mode, conns, tools in [("keepalive", 100, ["throng", "wrk", "h2load"]), ("h2-10x10", 10, ["throng", "h2load"]), ("h2-1x100", 1, ["throng", "h2load"]), ("close", 50, ["throng", "wrk", "throng-full"])]:
    med = {}
    for t in tools:
        rs = [r for r in rows if r[0] == mode and r[1] == t]
        rps = [int(r[3]) / float(r[6]) for r in rs]
        cpu = [(float(r[4]) + float(r[5])) * 1e6 / int(r[3]) for r in rs]
        srv = [int(r[7]) * 1e6 / int(r[8]) / int(r[3]) for r in rs]
        med[t] = (st.median(rps), st.median(cpu), rps, cpu, st.median(srv))
    print(f"\n{mode}, -c {conns}{' (throng: --tls-resume, as wrk resumes; throng-full: full handshakes)' if mode == 'close' else ''}:\n")
    print("| tool | median req/s | median client CPU µs/response | req/s vs throng, paired | CPU/response vs throng, paired | nginx CPU µs/request | rounds (req/s) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    th = med["throng"]
    for t in tools:
        rps, cpu, all_rps, all_cpu, srv = med[t]
        pr = st.median(a / b for a, b in zip(all_rps, th[2]))
        pc = st.median(a / b for a, b in zip(all_cpu, th[3]))
        print(f"| {t} | {rps:,.0f} | {cpu:.2f} | {pr:.2f} | {pc:.2f} | {srv:.1f} | {', '.join(f'{x:,.0f}' for x in all_rps)} |")
print(f"\n{sys.argv[3]} rounds of {sys.argv[2]} s, one client thread on core 1, nginx (1 worker, TLS 1.3, ECDSA P-256, h2 and http/1.1 over ALPN) on core 0.")
PY
