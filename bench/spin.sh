#!/usr/bin/env bash
# What a client's sleep costs the server on this machine, and what
# `throng load --spin` buys back: nginx (1 worker) pinned to core 0, one
# client thread on core 1, -c 100, keep-alive. Each round runs throng's
# default, then throng with each spin length given, then wrk, in that
# order, for SECS each, so every figure is paired with the default's of
# the same round (the machine's drift cancels; medians of the rounds'
# ratios, with their 95% interval from the order statistics, six rounds
# at least).
#
# Per client: req/s; the client's CPU a response (GNU time: the whole
# process); for throng, its load threads' CPU a response less the time
# they spun (`client_cpu_s.spun`: the client's work, the rest of that
# CPU a wait by another means than sleep), the connections it held on the
# client, and nginx's CPU a request (its worker's ticks around the run);
# its context switches a response (perf stat, when perf is there).
#
# Usage: bench/spin.sh [rounds] [secs] [spin lengths...]
#   bench/spin.sh 15 2 10us 30us
set -euo pipefail
rounds=${1:-12}; secs=${2:-2}; shift 2 2>/dev/null || shift $#
spins=${*:-10us 30us}
here=$(cd "$(dirname "$0")/.." && pwd)
throng=${THRONG:-$here/target/release/throng}
for t in nginx wrk taskset python3 /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "missing $t: run scripts/setup" >&2; exit 1; }
done
[ -x "$throng" ] || { echo "no $throng: cargo build --release" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }
case $secs in *[!0-9]*|'') echo "secs: whole seconds (wrk takes no fraction)" >&2; exit 2;; esac
[ "$rounds" -ge 6 ] 2>/dev/null || { echo "rounds: 6 at least, for an interval" >&2; exit 2; }

# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
nginx_in_work
worker=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
hz=$(getconf CLK_TCK)
switches() {
  if command -v perf >/dev/null; then
    perf stat -x, -e context-switches -o "$work/cs" -- "$@"
  else
    "$@"; echo ",,context-switches" > "$work/cs"
  fi
}
results=$work/results.txt; : > "$results"
for r in $(seq 1 "$rounds"); do
  for tool in default $spins wrk; do
    t0=$(ticks)
    case $tool in
      wrk) switches /usr/bin/time -f 'CPU %U %S' -o "$work/time" taskset -c 1 \
             wrk -t1 -c100 -d"${secs}s" "$url" > "$work/out"
           n=$(awk '/requests in/ {print $1}' "$work/out"); extra="- - -";;
      *)   spin=(); [ "$tool" = default ] || spin=(--spin "$tool")
           switches /usr/bin/time -f 'CPU %U %S' -o "$work/time" taskset -c 1 \
             "$throng" load "$url" -t 1 -c 100 -d "${secs}s" --json "${spin[@]}" > "$work/out"
           read -r n extra < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); c = d["client_cpu_s"]
print(d["completed"], c["user"] + c["sys"], c["spun"], d.get("client_held_connections") or 0)' "$work/out");;
    esac
    t1=$(ticks)
    cs=$(awk -F, '/context-switches/ {print ($1 == "" ? "-" : $1)}' "$work/cs")
    echo "$r $tool $n $(awk '/^CPU/ {print $2, $3}' "$work/time") $((t1 - t0)) $extra $cs" >> "$results"
  done
done
python3 - "$results" "$secs" "$hz" $spins <<'PY'
import collections, math, statistics as st, sys
path, secs, hz, spins = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rounds = collections.defaultdict(dict)
for line in open(path):
    r, tool, n, user, sys_, srv, engine, spun, held, cs = line.split()
    n = int(n)
    rounds[r][tool] = {
        "rate": n / secs,
        "cpu": (float(user) + float(sys_)) * 1e6 / n,
        "nginx": int(srv) * 1e6 / hz / n,
        "work": (float(engine) - float(spun)) * 1e6 / n if engine != "-" else None,
        "held": float(held) if held != "-" else None,
        "cs": int(cs) / n if cs != "-" else None,
    }
def ci(v):
    v = sorted(v); n = len(v); tail, j = 0.0, 0
    while tail + math.comb(n, j) / 2 ** n <= 0.025:
        tail += math.comb(n, j) / 2 ** n; j += 1
    return f"{v[j - 1]:.3f}–{v[n - j]:.3f}" if j > 0 else "-"
def paired(tool, key, to):
    rs = [x[tool][key] / x[to][key] for x in rounds.values()]
    return f"{st.median(rs):.3f} ({ci(rs)})"
def med(tool, key, fmt):
    v = [x[tool][key] for x in rounds.values() if x[tool][key] is not None]
    return format(st.median(v), fmt) if v else "-"
print(f"\n{len(rounds)} rounds of {secs:.0f} s, -c 100, one client thread on core 1, nginx (1 worker) on core 0.\n")
print("| client | req/s | vs wrk (95%) | CPU µs/response | vs wrk (95%) | its work, µs/response (less spun) | nginx µs/request | vs default (95%) | held on the client | context switches/response |")
print("|---|---:|---|---:|---|---:|---:|---|---:|---:|")
for tool in ["default", *spins, "wrk"]:
    name = "throng" if tool == "default" else ("wrk" if tool == "wrk" else f"throng --spin {tool}")
    print(f"| {name} | {med(tool, 'rate', ',.0f')} | {paired(tool, 'rate', 'wrk')} | {med(tool, 'cpu', '.2f')} | "
          f"{paired(tool, 'cpu', 'wrk')} | {med(tool, 'work', '.2f')} | {med(tool, 'nginx', '.1f')} | "
          f"{paired(tool, 'nginx', 'default')} | {med(tool, 'held', '.2f')} | {med(tool, 'cs', '.3f')} |")
PY
