#!/usr/bin/env bash
# Where a keep-alive client's CPU goes, throng's beside the engine's
# `floor` example's and wrk's, under the load of bench/vs-peers.sh: nginx
# (1 worker) pinned to core 0, the client to core 1, one thread, -c 100.
#
# For each client, one run under `perf stat`: software events and
# tracepoints only (a virtual machine without a PMU has no cycles or cache
# misses to count), each divided by the responses the client reports, so
# the clients compare per response: system calls, io_uring enters, the
# ring's completions, context switches, the kernel's timers armed
# (hrtimer_start: a wait with a timeout arms one), and the interrupts
# taken while the client ran. Then one run under `perf record -e
# cpu-clock -g` (4 kHz): the share of samples by shared object, the
# symbols above 0.5%, self time, and the client's own functions (user
# space) in ns a response, to set one client's beside another's. A profiling build has the symbols:
#
#   cargo build --profile profiling -p throng --bins
#   cargo build --profile profiling -p throng-engine --examples
#   (one command naming both packages and `--examples` builds the examples
#   alone, and leaves an older throng in place)
#   THRONG=target/profiling/throng FLOOR=target/profiling/examples/floor \
#     bench/client-profile.sh 4
#
# Usage: bench/client-profile.sh [seconds] [clients...]
# Clients: throng (its default), throng-nc (--no-coalesce), floorN (the
# floor example waiting for N answers a look; floorNs: with kernel
# receive stamps, as throng reads), wrk; the open model at R requests a
# second: throng-rR (--rate R) and wrk2-rR (WRK2=/path/to/wrk2, -R R).
set -euo pipefail
secs=${1:-4}; shift || true
clients=${*:-throng floor1 wrk}
here=$(cd "$(dirname "$0")/.." && pwd)
throng=${THRONG:-$here/target/release/throng}
floor=${FLOOR:-$here/target/release/examples/floor}
for t in nginx wrk perf taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t: run scripts/setup" >&2; exit 1; }
done
[ -x "$throng" ] || { echo "no $throng: build it (see the header)" >&2; exit 1; }
[ -x "$floor" ] || { echo "no $floor: build it (see the header)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }

work=$(mktemp -d /tmp/throng-profile.XXXXXX); chmod 755 "$work"
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
# shellcheck source=bench/lib/clients.sh
. "$here/bench/lib/clients.sh"
start_nginx "$work"

events=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter
events=$events,io_uring:io_uring_complete,timer:hrtimer_start,sched:sched_wakeup
events=$events,irq_vectors:local_timer_entry,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry

# The client's command (its responses are read by clients.sh).
client() {
  case $1 in
    throng)    echo "$throng load $url -t 1 -c 100 -d ${secs}s --json";;
    throng-nc) echo "$throng load $url -t 1 -c 100 -d ${secs}s --json --no-coalesce";;
    throng-r*) echo "$throng load $url -t 1 -c 100 -d ${secs}s --json --rate ${1#throng-r}";;
    wrk2-r*)   echo "${WRK2:?WRK2=/path/to/wrk2} -t1 -c100 -d${secs}s -R ${1#wrk2-r} $url";;
    floor*)    floor_command "$1" "$secs";;
    wrk)       echo "wrk -t1 -c100 -d${secs}s $url";;
    *) echo "unknown client $1" >&2; exit 2;;
  esac
}

for c in $clients; do
  read -ra cmd <<< "$(client "$c")"
  perf stat -x, -e "$events" -o "$work/stat" -- taskset -c 1 "${cmd[@]}" > "$work/out" 2>/dev/null
  n=$(responses "$c" "$work/out")
  echo "## $c: $n responses in $secs s under perf stat (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  echo "| event | per response |"
  echo "|---|---:|"
  # perf stat -x, : value,unit,event,...
  awk -F, -v n="$n" '/^[0-9]/ {
    if ($3 == "task-clock") printf "| CPU (task-clock), µs | %.3f |\n", $1 * 1000 / n
    else printf "| %s | %.3f |\n", $3, $1 / n }' "$work/stat"
  echo
  perf record -q -F 4000 -e cpu-clock -g -o "$work/perf.data" -- taskset -c 1 "${cmd[@]}" > "$work/out" 2>/dev/null
  n=$(responses "$c" "$work/out")
  echo "perf record: $n responses"
  echo
  echo '```'
  perf report -i "$work/perf.data" --no-children --sort dso --stdio 2>/dev/null |
    grep -E "^ +[0-9]" | head -8 || true
  echo
  perf report -i "$work/perf.data" --no-children --sort sym --stdio -g none --percent-limit 0.5 2>/dev/null |
    grep -E "^ +[0-9]" | head -40 || true
  echo '```'
  echo
  # What the client's own code costs, function by function: each sample is
  # 1/4000 s of CPU, so its samples over the responses are time a response.
  echo "| the client's own code (user space), top 25 | ns a response |"
  echo "|---|---:|"
  perf report -i "$work/perf.data" --no-children --sort dso,sym --stdio -g none -F sample,dso,sym 2>/dev/null |
    grep -E "^ +[0-9]" | grep -v kernel.kallsyms | sort -rn | head -25 |
    awk -v n="$n" '{ s = $4; for (i = 5; i <= NF; i++) s = s " " $i
      printf "| %s `%s` | %.1f |\n", $2, s, $1 * 1e9 / 4000 / n }' || true
  echo
done
