#!/usr/bin/env bash
# throng load --http3 against oha (built with its http3 feature) on the
# same Caddy, same core, same run.
#
# Caddy (Debian's 2.6, quic-go) serves a 7-byte index.html over HTTP/3
# with a self-signed ECDSA P-256 certificate for localhost, access log
# off, pinned to core 0 (GOMAXPROCS=1). Each client: pinned to core 1,
# one thread; rounds alternate the tools so drift on a shared machine
# spreads over both. Load: 4 connections of 10 streams each, 40 requests
# in flight (throng -c 4 --streams 10; oha -c 4 -p 10, its tokio runtime
# on one worker thread). throng naps up to 1/16 of the latency between
# turns (its default over HTTP/3; at TCP's 1/128, a nap is shorter than a
# turn with 40 requests in flight, and buys nothing), and says what that
# holds (client_held_connections, printed below). Client CPU is
# user+sys of the whole client process (GNU time) divided by the
# responses it reports.
#
# oha is installed from crates.io on first use, into $OHA_ROOT
# (default ~/.cache/throng-bench/oha), with `--features http3`.
#
# Usage: bench/vs-peers-h3.sh [rounds] [seconds]
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
for t in caddy openssl /usr/bin/time taskset python3 cargo; do
  command -v "$t" >/dev/null || { echo "missing $t: run scripts/setup" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }
oha_root=${OHA_ROOT:-$HOME/.cache/throng-bench/oha}
oha=${OHA:-$oha_root/bin/oha}
if [ ! -x "$oha" ]; then
  echo "installing oha with http3 into $oha_root (a few minutes)" >&2
  cargo install oha --locked --features http3 --root "$oha_root" >/dev/null 2>&1 \
    || { echo "cargo install oha --features http3 failed" >&2; exit 1; }
fi

work=$(mktemp -d /tmp/throng-bench-h3.XXXXXX); chmod 755 "$work"
trap 'kill "$caddy_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/www"; printf '1234567' > "$work/www/index.html"
# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
self_signed "$work"
port=$(free_port)
cat > "$work/Caddyfile" <<CONF
{
	admin off
	auto_https off
	storage file_system $work/data
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:$port {
	tls $work/cert.pem $work/key.pem
	root * $work/www
	file_server
}
CONF
HOME=$work XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/config GOMAXPROCS=1 \
  taskset -c 0 caddy run --adapter caddyfile --config "$work/Caddyfile" > "$work/caddy.log" 2>&1 &
caddy_pid=$!
url=https://localhost:$port/index.html
for _ in $(seq 100); do
  ss -Hlun "sport = :$port" | grep -q . && break; sleep 0.1
done
ss -Hlun "sport = :$port" | grep -q . || { echo "caddy bound no UDP port" >&2; cat "$work/caddy.log" >&2; exit 1; }

ticks() { awk '{print $14 + $15}' "/proc/$caddy_pid/stat"; }
hz=$(getconf CLK_TCK)
timed() { /usr/bin/time -f 'CPU %U %S' -o "$work/time" taskset -c 1 "$@"; }
results=$work/results.txt; : > "$results"
for r in $(seq "$rounds"); do
  for tool in throng oha; do
    t0=$(ticks)
    case $tool in
      throng) timed "$throng" load "$url" -k --http3 --streams 10 -t 1 -c 4 -d "${secs}s" --json > "$work/out"
              n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["completed"])' "$work/out")
              python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get("client_held_connections") or 0, j.get("client_hold_us") or 0)' "$work/out" >> "$work/held";;
      oha)    timed "$oha" --no-tui --insecure --http-version 3 -c 4 -p 10 --worker-threads 1 -z "${secs}s" --output-format json "$url" > "$work/out"
              n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(v for k, v in d["statusCodeDistribution"].items() if k.startswith("2")))' "$work/out");;
    esac
    t1=$(ticks)
    read -r _ u s < "$work/time"
    echo "$tool $r $n $u $s $secs $((t1 - t0)) $hz" >> "$results"
  done
done

python3 - "$results" "$secs" "$rounds" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
tools = ["throng", "oha"]
med = {}
for t in tools:
    rs = [r for r in rows if r[0] == t]
    rps = [int(r[2]) / float(r[5]) for r in rs]
    cpu = [(float(r[3]) + float(r[4])) * 1e6 / max(int(r[2]), 1) for r in rs]
    srv = [int(r[6]) * 1e6 / int(r[7]) / max(int(r[2]), 1) for r in rs]
    med[t] = (st.median(rps), st.median(cpu), rps, cpu, st.median(srv))
print("| tool | median req/s | median client CPU µs/response | req/s vs throng, paired | CPU/response vs throng, paired | Caddy CPU µs/request | rounds (req/s) |")
print("|---|---:|---:|---:|---:|---:|---|")
th = med["throng"]
for t in tools:
    rps, cpu, all_rps, all_cpu, srv = med[t]
    pr = st.median(a / b for a, b in zip(all_rps, th[2]))
    pc = st.median(a / b for a, b in zip(all_cpu, th[3]))
    print(f"| {t} | {rps:,.0f} | {cpu:.2f} | {pr:.2f} | {pc:.2f} | {srv:.1f} | {', '.join(f'{x:,.0f}' for x in all_rps)} |")
print(f"\n{sys.argv[3]} rounds of {sys.argv[2]} s, one client thread on core 1, Caddy (GOMAXPROCS=1, HTTP/3, ECDSA P-256) on core 0.")
PY
# What throng's naps held: request places of the 40, and µs a place waited.
python3 - "$work/held" <<'PY'
import sys, statistics as st
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1])]
print(f"throng held {st.median(r[0] for r in rows):.2f} of 40 places (median; {st.median(r[1] for r in rows):.1f} µs a place)")
PY
