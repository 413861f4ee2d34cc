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
# WIDE=1 counts, on both cores, what the kernel did a request event by
# event (the interrupts and IPIs by kind, softirqs, the loopback's packets,
# io_uring's task work, the allocator's frees, page faults, timers, TLB
# flushes, context switches, system calls), to find work one client makes
# the server's core do that another does not. Tracing every event slows
# both sides: compare the counts a request, not the rates.
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
cores=(-C 0); pin=()
if [ "${WIDE:-0}" = 1 ]; then
  events=$events,context-switches,page-faults,sched:sched_switch
  events=$events,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry
  events=$events,irq_vectors:call_function_entry,irq_vectors:local_timer_entry
  events=$events,irq_vectors:irq_work_entry,irq:softirq_entry,timer:hrtimer_expire_entry
  events=$events,tlb:tlb_flush,io_uring:io_uring_task_add,io_uring:io_uring_local_work_run
  events=$events,net:netif_rx,skb:consume_skb,skb:kfree_skb,kmem:kmalloc,kmem:kfree
  events=$events,kmem:mm_page_alloc,mmap_lock:mmap_lock_start_locking
  # Both cores, each apart: perf itself on core 0 beside nginx, where it
  # takes the server's CPU but not the client's.
  cores=(-a -A); pin=(taskset -c 0)
fi
# A tracepoint this kernel lacks would fail perf stat: count the others,
# and print "-" in its column.
counted=task-clock
for e in ${events//,/ }; do
  case $e in *:*) [ -d "/sys/kernel/tracing/events/${e/://}" ] ||
                  [ -d "/sys/kernel/debug/tracing/events/${e/://}" ] || continue
                  counted=$counted,$e;;
    task-clock) ;;
    *) counted=$counted,$e;;
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
    "${pin[@]}" perf stat -x, -e "$counted" "${cores[@]}" -o "$work/stat" -- \
      taskset -c 1 "${cmd[@]}" > "$work/out" 2>/dev/null
    n=$(responses "$c" "$work/out")
    if [ "${WIDE:-0}" = 1 ]; then
      # perf's CSV with -A: core, value, unit, event, ...
      awk -F, -v c="$c" -v r="$r" -v n="$n" \
        '$1 ~ /^CPU[0-9]/ && $2 ~ /^[0-9.]+$/ {print c, r, n, $4, $1, $2}' "$work/stat" >> "$work/wide"
      continue
    fi
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

if [ "${WIDE:-0}" = 1 ]; then
  python3 - "$work/wide" "$rounds" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
tools = list(dict.fromkeys(r[0] for r in rows))
per = {}
for tool, _, n, event, core, v in rows:
    # Counted on whole cores, task-clock is the run's length, not work.
    if event != "task-clock":
        per.setdefault((event, core), {}).setdefault(tool, []).append(float(v) / int(n))
print("\nEach core's events a request, under each client (medians of the rounds):\n")
print("| event | core | " + " | ".join(tools) + " |")
print("|---|---|" + "---:|" * len(tools))
for (event, core), d in sorted(per.items()):
    meds = {t: st.median(xs) for t, xs in d.items()}
    if max(meds.values()) < 0.001:
        continue
    print(f"| {event} | {core[3:]} | " + " | ".join(
        f"{meds[t]:.4f}" if t in meds else "-" for t in tools) + " |")
print(f"\n{sys.argv[2]} rounds of 3 s, one client thread on core 1, nginx (1 worker) on core 0, "
      "every event traced on both cores.")
PY
  exit 0
fi
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
