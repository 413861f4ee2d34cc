#!/usr/bin/env bash
# What a saturated server spends a request under each client, and why it
# differs: nginx (1 worker) pinned to core 0, each client pinned to core
# 1, keep-alive -c 100, one thread, 3 s a run, rounds alternating the
# clients. For each run, `perf stat -C 0` counts what happened on the
# server's core, divided by the responses the client reports:
#
#   task-clock   the core's busy time, µs a request (nginx's, and the
#                kernel's work done in its context: the client sockets'
#                receive path for the answers it sends, over loopback)
#   wakings      tasks woken from that core (sched_waking): the client,
#                woken by an answer when it had gone to sleep waiting
#   IPIs         interrupts sent to the other core to wake it
#                (ipi_send_cpu): its vCPU was idle, halted; on a virtual
#                machine each is an exit to the hypervisor
#   syscalls     nginx's system calls a request
#
# A client that sleeps whenever no answer is ready is woken from the
# server's core once for each answer that finds it asleep, and that work
# is the server's CPU. Whether it is why one client's rate against a
# saturated server is below another's is what these counts are for
# reading beside bench/vs-peers.sh's (docs/performance.md says what they
# showed for wrk, throng and the floor example).
#
# Usage: bench/server-wakes.sh [rounds] [clients...]
# Clients: wrk, throng (its default), throng-dD (--nap-divisor D),
# throng-nc (--no-coalesce), floorN (the engine's floor example waiting
# for N answers a look; floorNs: with kernel receive stamps, as throng
# reads). THRONG= and FLOOR= take other builds (bench/lib/build.sh).
set -euo pipefail
rounds=${1:-3}; shift || true
clients=${*:-wrk throng floor1s}
here=$(cd "$(dirname "$0")/.." && pwd)
for t in nginx wrk perf taskset python3 curl; do
  command -v "$t" >/dev/null || { echo "missing $t: run scripts/setup" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
floor_build
# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
# shellcheck source=bench/lib/clients.sh
. "$here/bench/lib/clients.sh"
nginx_in_work

events=task-clock,sched:sched_waking,ipi:ipi_send_cpu,raw_syscalls:sys_enter
# A tracepoint this kernel lacks would fail perf stat: count the others,
# and print "-" in its column.
counted=task-clock
for e in ${events//,/ }; do
  case $e in *:*) [ -d "/sys/kernel/tracing/events/${e/://}" ] ||
                  [ -d "/sys/kernel/debug/tracing/events/${e/://}" ] || continue
                  counted=$counted,$e;;
  esac
done
results=$work/results.txt; : > "$results"
for r in $(seq "$rounds"); do
  for c in $clients; do
    case $c in
      wrk)       cmd=(wrk -t1 -c100 -d3s "$url");;
      throng)    cmd=("$throng" load "$url" -t 1 -c 100 -d 3s --json);;
      throng-nc) cmd=("$throng" load "$url" -t 1 -c 100 -d 3s --json --no-coalesce);;
      throng-d*) cmd=("$throng" load "$url" -t 1 -c 100 -d 3s --json --nap-divisor "${c#throng-d}");;
      floor*)    read -ra cmd <<< "$(floor_command "$c" 3)";;
      *) echo "unknown client $c" >&2; exit 2;;
    esac
    perf stat -x, -e "$counted" -C 0 -o "$work/stat" -- taskset -c 1 "${cmd[@]}" > "$work/out" 2>/dev/null
    n=$(responses "$c" "$work/out")
    # perf's CSV: value, unit, event, ...; task-clock in ms. An event the
    # kernel lacks reads "<not supported>" and is kept as "-" in its place.
    vals=$(python3 - "$work/stat" "$events" <<'PY'
import sys
got = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) >= 3 and f[2]:
        got[f[2]] = f[0] if f[0].replace(".", "", 1).isdigit() else "-"
print(" ".join(got.get(e, "-") for e in sys.argv[2].split(",")))
PY
)
    echo "$c $r $n $vals" >> "$results"
  done
done

python3 - "$results" "$rounds" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
tools = list(dict.fromkeys(r[0] for r in rows))
print("\nnginx's core (0) a request, under each client (medians of the rounds):\n")
print("| client | req/s | task-clock µs | wakings | IPIs | syscalls | rounds (req/s) |")
print("|---|---:|---:|---:|---:|---:|---|")
for t in tools:
    rs = [r for r in rows if r[0] == t]
    n = [int(r[2]) for r in rs]
    def per(k, digits, scale=1.0):
        xs = [float(r[3 + k]) * scale / int(r[2]) for r in rs if r[3 + k] != "-"]
        return f"{st.median(xs):.{digits}f}" if xs else "-"
    print(f"| {t} | {st.median(n) / 3:,.0f} | {per(0, 2, 1e3)} | {per(1, 3)} | {per(2, 3)} "
          f"| {per(3, 2)} | {', '.join(f'{x / 3:,.0f}' for x in n)} |")
print(f"\n{sys.argv[2]} rounds of 3 s, one client thread on core 1, nginx (1 worker) on core 0.")
PY
