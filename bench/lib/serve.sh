# Sourced by the bench scripts that load one server on this machine: a
# free loopback port, a self-signed certificate for localhost, and nginx
# with one worker pinned to CPU 0 serving a 7-byte index.html, access log
# off, keep-alive unbounded. Each takes the script's work folder.
# shellcheck shell=bash

# A TCP port nothing listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# An ECDSA P-256 certificate for localhost and 127.0.0.1, valid two days:
# $1/cert.pem and $1/key.pem.
self_signed() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -addext basicConstraints=critical,CA:FALSE \
    -keyout "$1/key.pem" -out "$1/cert.pem" 2>/dev/null
}

# nginx serving $1/html/index.html on a free port; its pid in
# $1/nginx.pid. Sets `port` and `url`, and returns once nginx answers.
start_nginx() {
  local work=$1
  mkdir -p "$work/html"; printf '1234567' > "$work/html/index.html"
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
  server { listen 127.0.0.1:$port; root $work/html; }
}
CONF
  taskset -c 0 nginx -c "$work/nginx.conf" -p "$work"
  url=http://127.0.0.1:$port/index.html
  for _ in $(seq 50); do curl -sf "$url" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf "$url" >/dev/null || { echo "nginx did not start" >&2; exit 1; }
}

# A work folder of the bench's own, removed at exit with the nginx it
# serves, and that nginx started: sets `work`, `port` and `url`.
nginx_in_work() {
  work=$(mktemp -d /tmp/throng-bench.XXXXXX); chmod 755 "$work"
  trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
  start_nginx "$work"
}
