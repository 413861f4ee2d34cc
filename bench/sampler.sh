#!/usr/bin/env bash
# What `throng load` spends beside its load threads, by concurrency.
#
# Against a local server, `throng load` finds the processes holding the
# port's listening socket and samples them over the run (a thread of its
# own, on a spare CPU of its mask, else on the load's), and its main
# thread reads the machine before and after. On a client given one CPU
# that time is taken from the load. This runs `throng load -c C -d SECS`
# on CPU 1 against nginx (one worker on CPU 0, bench/lib/serve.sh) at
# each C, and reads each of its threads' CPU time (schedstat, polled
# every 2 ms until the process ends, so the last 2 ms may be missed),
# printing the median over the rounds of the main thread, the sampler and
# the load thread. BASE=/path/to/an/older/throng runs that build too, in
# turns with this one.
#
# Usage: [BASE=...] bench/sampler.sh [rounds] [seconds] [C...]
# nginx's worker takes 4,096 connections at most (worker_connections).
set -euo pipefail
rounds=${1:-3}; secs=${2:-3}; shift 2 2>/dev/null || shift $#
levels=${*:-100 1000 4000}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }
# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
nginx_in_work

# Each thread's CPU ms at the last poll, by the name and order the
# process gave them: main, signals, sampler, load-0.
cat > "$work/threads.py" <<'PY'
import os, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
last = {}
# Bounded by the run itself: it ends at its duration.
while p.poll() is None:
    try:
        for t in os.listdir(f"/proc/{p.pid}/task"):
            try:
                name = open(f"/proc/{p.pid}/task/{t}/comm").read().strip()
                ns = int(open(f"/proc/{p.pid}/task/{t}/schedstat").read().split()[0])
                last[int(t)] = (name, ns)
            except OSError:
                pass
    except OSError:
        pass
    time.sleep(0.002)
named = [last[t] for t in sorted(last)]
main = named[0][1] if named else 0
load = sum(ns for n, ns in named if n.startswith("throng-load"))
# The sampler: the process's other unnamed thread, started after main.
other = sum(ns for n, ns in named[1:] if not n.startswith("throng-load") and n != "throng-signals")
print(f"{main / 1e6:.1f} {other / 1e6:.1f} {load / 1e6:.1f}")
PY

tools="throng"; [ -n "${BASE:-}" ] && tools="throng base"
: > "$work/results"
for r in $(seq "$rounds"); do
  for c in $levels; do
    for tool in $tools; do
      bin=$throng; [ "$tool" = base ] && bin=$BASE
      echo "$tool $c $(python3 "$work/threads.py" taskset -c 1 "$bin" load -c "$c" -d "${secs}s" "$url")" >> "$work/results"
    done
  done
  echo "round $r of $rounds" >&2
done

echo "| build | connections | main thread, ms | sampler, ms | load thread, ms | beside the load, share |"
echo "|---|---:|---:|---:|---:|---:|"
python3 - "$work/results" "$levels" "$tools" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
for c in sys.argv[2].split():
    for tool in sys.argv[3].split():
        got = [list(map(float, r[2:])) for r in rows if r[0] == tool and r[1] == c]
        main, samp, load = (st.median(x[i] for x in got) for i in range(3))
        print(f"| {tool} | {c} | {main:.1f} | {samp:.1f} | {load:.0f} | {(main + samp) / load * 100:.2f}% |")
PY
