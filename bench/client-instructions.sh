#!/usr/bin/env bash
# What a keep-alive client's own code executes for each response, counted
# rather than timed: valgrind's cachegrind counts every instruction the
# client runs in user space, so the figure is the same from one run to the
# next however busy the machine is, where CPU time on this shared host
# moves by more than the differences being looked for (docs/performance.md,
# "Instructions a response"). The kernel's work, alike for every client
# that sends and receives the same bytes, is not counted.
#
# nginx (1 worker) pinned to core 0, the client to core 1, one thread,
# -c 100. Each pair of runs is a short run and a long one; the counts of
# the short one are taken from the long one's, so the start (the binary's
# pages, the probe, the first connections) drops out and what is left is
# the cost of the responses between them, divided by their number:
#   instructions a response, all threads of the client;
#   simulated first-level data-cache misses a response (cachegrind's model
#   of this host's caches, user space alone: the kernel's evictions between
#   two responses are not in it, so it understates what the real caches
#   see);
#   and the functions above 1% of the difference, in instructions a
#   response.
# Under valgrind the client runs some 30 times slower, so more answers wait
# at each look than in a real run: the per-look costs weigh less here.
# Compare clients and builds with each other in the same run, not these
# figures with the timed ones.
#
# Usage: bench/client-instructions.sh [clients...]
# Clients: throng (this tree's release build, or THRONG=), base (BASE=, an
# older build), floor1s and floor1 (the engine's floor example with and
# without kernel receive stamps), wrk. SHORT and LONG: throng's request
# counts (20000 and 100000); the others run SECS_SHORT and SECS_LONG
# seconds (1 and 4). PAIRS: the pairs of runs a client makes (3); the
# pair with the median count is shown, beside every pair's count.
set -euo pipefail
clients=${*:-throng floor1s wrk}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
for t in nginx valgrind cg_annotate cg_diff taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t (valgrind: apt-get install valgrind)" >&2; exit 1; }
done
case " $clients " in *" throng "*) throng_build;; esac
case " $clients " in *" floor"*) floor_build;; esac
case " $clients " in *" base "*) [ -x "${BASE:-}" ] || { echo "base needs BASE=/path/to/throng" >&2; exit 1; };; esac
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }
short=${SHORT:-20000}; long=${LONG:-100000}; pairs=${PAIRS:-3}
secs_short=${SECS_SHORT:-1}; secs_long=${SECS_LONG:-4}

work=$(mktemp -d /tmp/throng-instr.XXXXXX); chmod 755 "$work"
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
# shellcheck source=bench/lib/clients.sh
. "$here/bench/lib/clients.sh"
start_nginx "$work"

# The client's command for a run, short or long.
client() {
  local n secs
  if [ "$2" = short ]; then n=$short; secs=$secs_short; else n=$long; secs=$secs_long; fi
  case $1 in
    throng)  echo "$throng load $url -t 1 -c 100 -n $n --json";;
    base)    echo "$BASE load $url -t 1 -c 100 -n $n --json";;
    floor*)  floor_command "$1" "$secs";;
    wrk)     echo "wrk -t1 -c100 -d${secs}s $url";;
    *) echo "unknown client $1" >&2; exit 2;;
  esac
}
# A summary count of cachegrind's from its report: "I   refs", "D1  misses".
count() { awk -v k="$2" 'index($0, k) { v = $0; sub(/.*: */, "", v); sub(/ .*/, "", v); gsub(",", "", v); print v; exit }' "$1"; }

echo "| client | responses between the runs | instructions a response | D1 misses a response (simulated) | each pair's instructions a response |"
echo "|---|---:|---:|---:|---|"
for c in $clients; do
  figs=()
  for k in $(seq "$pairs"); do
    for run in short long; do
      read -ra cmd <<< "$(client "$c" $run)"
      taskset -c 1 timeout 600 valgrind --tool=cachegrind --cache-sim=yes \
        --cachegrind-out-file="$work/cg.$c.$k.$run" "${cmd[@]}" > "$work/out" 2> "$work/vg.$c.$k.$run"
      responses "$c" "$work/out" > "$work/n.$c.$k.$run"
    done
    n=$(( $(cat "$work/n.$c.$k.long") - $(cat "$work/n.$c.$k.short") ))
    [ "$n" -gt 0 ] || { echo "$c: no more responses in the long run than the short one" >&2; exit 1; }
    ir=$(( $(count "$work/vg.$c.$k.long" "I   refs") - $(count "$work/vg.$c.$k.short" "I   refs") ))
    d1=$(( $(count "$work/vg.$c.$k.long" "D1  misses") - $(count "$work/vg.$c.$k.short" "D1  misses") ))
    figs+=("$(awk -v k="$k" -v n="$n" -v ir="$ir" -v d1="$d1" 'BEGIN { printf "%.0f %d %.1f %d", ir / n, n, d1 / n, k }')")
  done
  # The pair with the median count stands for the client: a pair whose
  # answers came late spins longer, and those instructions count too.
  read -r ir n d1 k <<< "$(printf '%s\n' "${figs[@]}" | sort -n | sed -n "$(( (pairs + 1) / 2 ))p")"
  all=$(printf '%s\n' "${figs[@]}" | awk '{printf "%s%s", sep, $1; sep=", "}')
  echo "| $c | $n | $ir | $d1 | $all |"
  echo "$k $n" > "$work/median.$c"
  cg_diff "$work/cg.$c.$k.short" "$work/cg.$c.$k.long" > "$work/cg.$c.diff" 2>/dev/null
done

# Function by function, over the median pair's differences.
for c in $clients; do
  read -r _ n < "$work/median.$c"
  echo
  echo "$c, functions above 1% (instructions a response):"
  echo
  echo "| instructions | D1 misses | function |"
  echo "|---:|---:|---|"
  # cg_annotate's function lines: "Ir (pct) ... file:function".
  cg_annotate --show=Ir,D1mr,D1mw --sort=Ir "$work/cg.$c.diff" 2>/dev/null |
    awk -v n="$n" '
      /file:function/ { on = 1; next }
      on && /^-+$/ && seen { exit }
      on && /^ *-?[0-9,]+ / {
        seen = 1
        line = $0
        ir = $1; gsub(",", "", ir)
        if (ir / n < 0.01 * total / n && total > 0) next
        # the misses columns: the numbers after Ir, each maybe followed by a (pct)
        rest = line; sub(/^ *[-0-9,]+ *(\([^)]*\))? */, "", rest)
        r = rest; sub(/ .*/, "", r); gsub(",", "", r)
        sub(/^[-0-9,]+ *(\([^)]*\))? */, "", rest)
        w = rest; sub(/ .*/, "", w); gsub(",", "", w)
        sub(/^[-0-9,]+ *(\([^)]*\))? */, "", rest)
        name = rest; sub(/^[^:]*:/, "", name)
        printf "| %.0f | %.2f | `%s` |\n", ir / n, (r + w) / n, name
      }
      /PROGRAM TOTALS/ { total = $1; gsub(",", "", total) }' | head -30
done
echo
echo "nginx (1 worker) on core 0, one client thread on core 1 under cachegrind, -c 100; load average $(cut -d' ' -f1-3 /proc/loadavg)."
