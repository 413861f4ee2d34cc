#!/usr/bin/env bash
# throng load vs wrk, h2load and ab on the same nginx, same core, same run.
#
# nginx: 1 worker pinned to core 0, access log off, a 7-byte index.html.
# Each client: pinned to core 1, one thread, 5 s; rounds alternate the
# tools so drift on a shared machine spreads over all of them, and each
# round starts one tool further along than the last. throng runs
# on its default backend (io_uring for all of these) and, as throng-epoll,
# on epoll. Modes:
#   keepalive  -c 100 (throng-nc is throng with --no-coalesce: blocking on
#              epoll at once, as wrk does, to show what the naps of
#              docs/methodology.md are worth)
#   pipeline   -c 100, 16 requests a connection in flight (throng
#              --pipeline 16; wrk with a Lua script that sends 16
#              requests in one write; h2load --h1 -m 16)
#   close      -c 50, a new connection per request (throng --close, and
#              with --linger0; wrk -H 'Connection: close'; ab without -k)
#   hold       keep-alive -c 100 again, throng with naps of 1/D of the
#              latency for D = 128 (the default), 32, 16, 8, 4 and without
#              naps, beside wrk and the engine's `floor` example (a client
#              that waits for 25 answers per look, and for 1): client CPU against the
#              connections each throng run held on the client
#              (client_held_connections)
#   wire       keep-alive -c 100 again, each client (wrk, h2load, ab, throng
#              with and without naps, and at D = 32 and 16, the floor
#              example waiting for 1 and for 25 answers) with about a
#              second of a quarter of its connections captured mid-run
#              by tcpdump: the connections it held, read off the wire the
#              same way for every client (bench/wire_hold.py), beside
#              throng's own figure. The capture costs every client some
#              CPU, so compare this mode's CPU column within the mode.
#   open       the open model, -c 100, at RATE requests a second (80% of
#              what wrk reached alone before the rounds, by default):
#              throng --rate against wrk2 -R (WRK2=/path/to/wrk2, or wrk2
#              on the PATH; it is not packaged in Debian and is built from
#              its source), each at the same rate, with how well each kept
#              the schedule: the rate it reached, and throng's late and
#              unsent requests. throng runs twice: each request at its own
#              instant (its default), and as `throng-tick`, its schedule
#              kept in ticks of TICK (1ms by default), wrk2's own
#              precision: wrk2 keeps its timers in milliseconds.
#              Below the table: the rounds where throng kept its schedule
#              (sends late by over 1 ms and unsent within 1% of those
#              asked), and the CPU ratios to wrk2 over those alone: a
#              round where the server fell behind measures its queue.
# Client CPU is measured the same way for every tool: user+sys of the whole
# client process (GNU time), divided by the responses it reports. For
# throng, the load threads' own share of it is shown apart (client_cpu_s
# over the measured phase): the rest is its process's other threads, the
# sampler of a server on this machine above all. Each run's steal (what
# the hypervisor took of core 0 and core 1, /proc/stat) is kept and its
# median shown: a round that lost CPU time so is told from one that did
# not (on this project's host the two gave the same ratios:
# docs/performance.md, "What the host took, run by run").
#
# BASE=/path/to/an/older/throng runs that build too, as the tool `base`,
# with throng's default flags in the keepalive, pipeline, close and open
# modes,
# and in the hold and wire modes when TOOLS names it: a change's before
# and after alternate in the same rounds, so their paired ratios to wrk
# (and to each other) share the machine's drift. FLOOR=/path/to/floor
# runs another build of the floor example (a profiling one, say).
# KEEP=FILE keeps each round's raw figures there (mode, tool, round,
# responses, user and system seconds, ...), to read again later.
#
# throng's CPU per response against the floors and the base (and its
# rate against the floors') is printed with a 95% interval of the median
# paired ratio, from the order statistics of the rounds' ratios (six
# rounds at least; of twenty, the 6th to the 15th in order).
#
# Usage: bench/vs-peers.sh [rounds] [seconds] [modes...]
# TOOLS="wrk floor5 throng-d32 ..." runs only those clients in hold and
# wire modes (floorN: the floor example waiting for N answers; floorNs:
# the same with kernel receive stamps, as throng reads; throng-dD:
# --nap-divisor D; throng-sLENGTH: --spin LENGTH (throng-s30us);
# throng-epoll: --io epoll, throng-epoll-dD with --nap-divisor D; wrk-ua:
# wrk sending throng's User-Agent line, for the rates at equal requests);
# wrk must be among them, since every ratio is to it.
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}; shift 2 2>/dev/null || shift $#
modes=${*:-keepalive pipeline close}
case " ${TOOLS:-wrk} " in *" wrk "*) ;; *) echo "TOOLS must name wrk: every ratio is to it" >&2; exit 2;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
wrk2=${WRK2:-$(command -v wrk2 || true)}
case " ${*:-} " in *" open "*)
  [ -x "$wrk2" ] || { echo "open mode needs wrk2: WRK2=/path/to/wrk2" >&2; exit 1; };;
esac
case " ${*:-} " in *" hold "*|*" wire "*)
  floor_build;;
esac
need="nginx wrk h2load ab /usr/bin/time taskset python3"
case " $modes " in *" wire "*) need="$need tcpdump";; esac
for t in $need; do
  command -v "$t" >/dev/null || { echo "missing $t: run scripts/setup" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on 0, client on 1)" >&2; exit 1; }

# shellcheck source=bench/lib/serve.sh
. "$here/bench/lib/serve.sh"
# shellcheck source=bench/lib/clients.sh
. "$here/bench/lib/clients.sh"
nginx_in_work

# nginx's own CPU per request under each client: its worker's utime+stime
# (clock ticks) around each run. With the server's core saturated, this is
# what decides req/s, and a client can raise it (docs/methodology.md, naps).
worker=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
hz=$(getconf CLK_TCK)
# What the hypervisor took of the server's core (0) and the client's (1),
# in clock ticks (/proc/stat's steal): on a shared host a run can lose a
# tenth of a core so.
steal() { awk '/^cpu0 /{a=$9} /^cpu1 /{b=$9} END{print a, b}' /proc/stat; }
# A client's run, its CPU (GNU time) and the steal over it alone: what a
# tool's figures are read with afterwards (python for throng's JSON)
# would be counted otherwise.
timed() {
  read -r st0 st1 < <(steal)
  /usr/bin/time -f 'CPU %U %S' -o "$work/time" taskset -c 1 "$@"
  read -r sn0 sn1 < <(steal)
}
results=$work/results.txt; : > "$results"
# wrk's pipelining: its documented way, a request() that returns 16
# requests in one string, written in one go.
cat > "$work/pipeline.lua" <<'LUA'
init = function(args)
  local r = {}
  for i = 1, 16 do r[i] = wrk.format(nil, "/index.html") end
  req = table.concat(r)
end
request = function() return req end
LUA
# The open model's rate: 80% of what wrk reaches alone, unless given.
rate=${RATE:-}
case " $modes " in *" open "*)
  if [ -z "$rate" ]; then
    taskset -c 1 wrk -t1 -c100 -d"${secs}s" "$url" > "$work/out"
    rate=$(awk '/^Requests\/sec:/ {printf "%d", $2 * 0.8}' "$work/out")
  fi
  echo "open model at $rate requests a second" >&2;;
esac
# The User-Agent throng's requests carry unless told otherwise.
ua="throng/$("$throng" --version | awk '{print $2}')"
# An open-model run's sends later than 1 ms, and those never sent.
late() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rate"]; print(str(r["late_sends"]) + "/" + str(r["unsent"]))' "$1"; }
# CPU seconds of a throng run's load threads over its measured phase,
# apart from the rest of its process (the sampler of a local server).
engine() { python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["client_cpu_s"]; print(c["user"] + c["sys"])' "$1"; }
# The connections a throng run held on the client, on average.
held() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["client_held_connections"])' "$1"; }
# About a second of the loopback, from the middle of a run: the holds of
# every client on the same terms (bench/wire_hold.py). Only connections
# whose client port is a multiple of 4 are kept: a packet the filter
# drops costs both ends little, one it keeps a copy. tcpdump shares the
# client's core; a larger buffer took most of a second to set up there.
# The wait before it is worked out once, here: a python3 started beside
# each run, on any core, took the client's core for tens of milliseconds
# as the run began, with every connection's answer waiting on it (throng
# counted 2.5-3.2 connections held in those runs, 0.9-1.5 without).
cap_wait=$(python3 -c "print(max(0.5, $secs / 2 - 0.75))")
capture() {
  sleep "$cap_wait"
  timeout -s INT 1.5 taskset -c 1 tcpdump -q -n -Z root -i lo -s 80 -B 8192 \
    --time-stamp-precision nano -w "$work/wire.pcap" \
    "(tcp src port $port and tcp[2:2] & 3 = 0) or (tcp dst port $port and tcp[0:2] & 3 = 0)" \
    2>/dev/null || true
}
for r in $(seq "$rounds"); do
  for mode in $modes; do
    case $mode in
      keepalive) c=100; tools="throng throng-epoll throng-nc wrk h2load ab";;
      pipeline)  c=100; tools="throng throng-epoll wrk h2load";;
      close)     c=50; tools="throng throng-epoll throng-linger0 wrk ab";;
      hold)      c=100; tools="wrk throng-nc throng-d128 throng-d32 throng-d16 throng-d8 throng-d4 floor1 floor25";;
      wire)      c=100; tools="wrk throng throng-nc throng-d32 throng-d16 floor1 floor25 h2load ab";;
      open)      c=100; tools="wrk2 throng throng-tick";;
      *) echo "unknown mode $mode" >&2; exit 1;;
    esac
    case $mode in keepalive|pipeline|close|open) [ -z "${BASE:-}" ] || tools="base $tools";; esac
    # TOOLS="wrk floor5 throng-d32" picks the clients of a hold or wire run.
    case $mode in hold|wire) tools=${TOOLS:-$tools};; esac
    # Each round starts one tool further along the list, so that over as
    # many rounds as tools each has run first, second, ... alike: a tool
    # that always ran after another (after wrk's connections closed, say)
    # would carry whatever that leaves into every pair.
    read -ra list <<< "$tools"
    s=$(( (r - 1) % ${#list[@]} ))
    for tool in "${list[@]:s}" "${list[@]:0:s}"; do
      t0=$(ticks); h=-; e=-
      if [ "$mode" = wire ]; then rm -f "$work/wire.pcap"; capture & cap=$!; fi
      case $mode/$tool in
        # keep-alive: the same commands in the hold and wire modes, which
        # also read throng's own hold.
        keepalive/throng|hold/throng|wire/throng)
                             timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --json > "$work/out"
                             n=$(responses throng "$work/out"); h=$(held "$work/out");;
        keepalive/base|hold/base|wire/base)
                             timed "$BASE" load "$url" -t 1 -c $c -d "${secs}s" --json > "$work/out"
                             n=$(responses throng "$work/out"); h=$(held "$work/out");;
        hold/throng-epoll-d*|wire/throng-epoll-d*)
                             timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --json --io epoll --nap-divisor "${tool#throng-epoll-d}" > "$work/out"
                             n=$(responses throng "$work/out"); h=$(held "$work/out");;
        keepalive/throng-epoll|hold/throng-epoll|wire/throng-epoll)
                             timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --json --io epoll > "$work/out"
                             n=$(responses throng "$work/out"); h=$(held "$work/out");;
        keepalive/throng-nc|hold/throng-nc|wire/throng-nc)
                             timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --json --no-coalesce > "$work/out"
                             n=$(responses throng "$work/out"); h=$(held "$work/out");;
        hold/throng-d*|wire/throng-d*)
                             timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --json --nap-divisor "${tool#throng-d}" > "$work/out"
                             n=$(responses throng "$work/out"); h=$(held "$work/out");;
        # --spin LENGTH: the waits spin before they sleep (throng-s30us).
        hold/throng-s*|wire/throng-s*)
                             timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --json --spin "${tool#throng-s}" > "$work/out"
                             n=$(responses throng "$work/out"); h=$(held "$work/out");;
        keepalive/wrk|hold/wrk|wire/wrk)
                             timed wrk -t1 -c$c -d"${secs}s" "$url" > "$work/out"; n=$(responses wrk "$work/out");;
        # wrk sending the User-Agent line throng sends (wrk sends none):
        # the two clients' rates compared at equal requests.
        hold/wrk-ua|wire/wrk-ua)
                             timed wrk -t1 -c$c -d"${secs}s" -H "User-Agent: $ua" "$url" > "$work/out"; n=$(responses wrk "$work/out");;
        keepalive/h2load|hold/h2load|wire/h2load)
                             timed h2load --h1 -t1 -c$c -D "$secs" "$url" > "$work/out"; n=$(awk '/^requests:/ {print $8}' "$work/out");;
        keepalive/ab|hold/ab|wire/ab)
                             timed ab -q -k -c $c -t "$secs" -n 100000000 "$url" > "$work/out" 2>&1 || true
                             n=$(awk '/^Complete requests:/ {print $3}' "$work/out");;
        hold/floor*|wire/floor*)
                             read -ra fl <<< "$(floor_command "$tool" "$secs" "$c")"
                             timed "${fl[@]}" > "$work/out"; n=$(responses "$tool" "$work/out");;
        open/wrk2)           timed "$wrk2" -t1 -c$c -d"${secs}s" -R "$rate" "$url" > "$work/out"; n=$(responses wrk "$work/out");;
        open/throng)         timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --rate "$rate" --json > "$work/out"
                             n=$(responses throng "$work/out"); h=$(late "$work/out");;
        open/throng-tick)    timed "$throng" load "$url" -t 1 -c $c -d "${secs}s" --rate "$rate" --tick "${TICK:-1ms}" --json > "$work/out"
                             n=$(responses throng "$work/out"); h=$(late "$work/out");;
        open/base)           timed "$BASE" load "$url" -t 1 -c $c -d "${secs}s" --rate "$rate" --json > "$work/out"
                             n=$(responses throng "$work/out"); h=$(late "$work/out");;
        pipeline/base)       timed "$BASE" load "$url" -t 1 -c $c --pipeline 16 -d "${secs}s" --json > "$work/out"; n=$(responses throng "$work/out");;
        pipeline/throng)     timed "$throng" load "$url" -t 1 -c $c --pipeline 16 -d "${secs}s" --json > "$work/out"; n=$(responses throng "$work/out");;
        # wrk counts every response of a batch (its parser completes each).
        pipeline/throng-epoll) timed "$throng" load "$url" -t 1 -c $c --pipeline 16 -d "${secs}s" --json --io epoll > "$work/out"; n=$(responses throng "$work/out");;
        pipeline/wrk)        timed wrk -t1 -c$c -d"${secs}s" -s "$work/pipeline.lua" "$url" > "$work/out"
                             n=$(responses wrk "$work/out");;
        pipeline/h2load)     timed h2load --h1 -t1 -c$c -m16 -D "$secs" "$url" > "$work/out"; n=$(awk '/^requests:/ {print $8}' "$work/out");;
        close/base)          timed "$BASE" load "$url" -t 1 -c $c --close -d "${secs}s" --json > "$work/out"; n=$(responses throng "$work/out");;
        close/throng)        timed "$throng" load "$url" -t 1 -c $c --close -d "${secs}s" --json > "$work/out"; n=$(responses throng "$work/out");;
        close/throng-epoll)  timed "$throng" load "$url" -t 1 -c $c --close -d "${secs}s" --json --io epoll > "$work/out"; n=$(responses throng "$work/out");;
        close/throng-linger0) timed "$throng" load "$url" -t 1 -c $c --close --linger0 -d "${secs}s" --json > "$work/out"; n=$(responses throng "$work/out");;
        close/wrk)           timed wrk -t1 -c$c -d"${secs}s" -H 'Connection: close' "$url" > "$work/out"; n=$(responses wrk "$work/out");;
        close/ab)            timed ab -q -c $c -t "$secs" -n 100000000 "$url" > "$work/out" 2>&1 || true
                             n=$(awk '/^Complete requests:/ {print $3}' "$work/out");;
        *) echo "no tool $tool in $mode mode" >&2; exit 1;;
      esac
      t1=$(ticks)
      read -r _ u s < "$work/time"
      wh=-
      if [ "$mode" = wire ]; then
        wait "$cap"
        wh=$(python3 "$here/bench/wire_hold.py" "$work/wire.pcap" "$port" "$c" | sed -n 's/^held=\([0-9.]*\).*/\1/p')
        [ -n "$wh" ] || wh=-
      fi
      case $tool in throng*|base) e=$(engine "$work/out");; esac
      echo "$mode $tool $r $n $u $s $secs $((t1 - t0)) $hz $h $wh $e $((sn0 - st0)) $((sn1 - st1))" >> "$results"
    done
  done
done

[ -z "${KEEP:-}" ] || cp "$results" "$KEEP"
python3 - "$results" "$secs" "$rounds" "${rate:-0}" <<'PY'
import math, sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
def steal(r, k):
    return int(r[k]) / int(r[8]) / float(r[6])
for mode, conns in [("keepalive", 100), ("pipeline", 100), ("close", 50), ("hold", 100), ("wire", 100), ("open", 100)]:
    tools = list(dict.fromkeys(r[1] for r in rows if r[0] == mode))
    if not tools:
        continue
    med = {}
    for t in tools:
        rs = [r for r in rows if r[0] == mode and r[1] == t]
        rps = [int(r[3]) / float(r[6]) for r in rs]
        cpu = [(float(r[4]) + float(r[5])) * 1e6 / int(r[3]) for r in rs]
        srv = [int(r[7]) * 1e6 / int(r[8]) / int(r[3]) for r in rs]
        if mode == "open":
            # Late and unsent sends of each round, as they were counted.
            held = ", ".join(r[9] for r in rs)
        else:
            held = [float(r[9]) for r in rs if r[9] != "-"]
            held = f"{st.median(held):.1f}" if held else "-"
        wire = [float(r[10]) for r in rs if r[10] != "-"]
        eng = [float(r[11]) * 1e6 / int(r[3]) for r in rs if r[11] != "-"]
        # The host's steal on the server's core and the client's, as a
        # share of the run (kept figures from before it was read have none).
        stolen = [(steal(r, 12), steal(r, 13)) for r in rs if len(r) > 13]
        med[t] = (st.median(rps), st.median(cpu), rps, cpu, st.median(srv), held,
                  f"{st.median(wire):.1f}" if wire else "-",
                  f"{st.median(eng):.2f}" if eng else "-",
                  " / ".join(f"{100 * st.median(x):.1f}" for x in zip(*stolen)) if stolen else "-")
    ref = "wrk2" if mode == "open" else "wrk"
    w = med[ref]
    # Rounds run the tools back to back, so a tool's ratio to wrk within
    # each round cancels the machine's slow drift: the steadier figure.
    def paired(t, k, to=w):
        return st.median(a / b for a, b in zip(med[t][k], to[k]))
    # Where the median paired ratio lies, 95% of the time, from the rounds
    # alone: the order statistics a binomial count of rounds above and
    # below the median allows (no shape assumed). With fewer than six
    # rounds no such pair exists, and none is printed.
    def paired_ci(t, k, to):
        return ci(a / b for a, b in zip(med[t][k], to[k]))
    def ci(ratios):
        rs = sorted(ratios)
        n, tail, j = len(rs), 0.0, 0
        while tail + math.comb(n, j) / 2 ** n <= 0.025:
            tail += math.comb(n, j) / 2 ** n
            j += 1
        return f"{rs[j - 1]:.3f}–{rs[n - j]:.3f}" if j > 0 else "-"
    extra = {"pipeline": ", 16 in flight a connection", "close": ", a connection per request",
             "hold": ", keep-alive, naps of 1/D of the latency",
             "wire": ", keep-alive, about a second of a quarter of the connections captured",
             "open": ", open model, each at the same rate"}.get(mode, "")
    held_head = "sends late / unsent" if mode == "open" else "connections held on the client"
    # The floor example waiting for one answer: the least a client that
    # holds as few connections as wrk spends (docs/performance.md).
    floor = med.get("floor1")
    # The floor that keeps kernel receive stamps, as throng does: the
    # like-for-like one.
    stamped = med.get("floor1s")
    print(f"\n{mode}, -c {conns}{extra}:\n")
    print(f"| tool | median req/s | median client CPU µs/response | req/s vs {ref}, paired | CPU/response vs {ref}, paired |"
          + (" CPU/response vs floor1, paired |" if floor else "")
          + (" CPU/response vs floor1s, paired |" if stamped else "")
          + f" load threads' CPU µs/response | nginx CPU µs/request | {held_head} | held, read off the wire | steal on core 0 / 1, median % | rounds (req/s) |")
    print("|---|---:|---:|---:|---:|" + ("---:|" if floor else "") + ("---:|" if stamped else "")
          + "---:|---:|---:|---:|---:|---|")
    for t in tools:
        rps, cpu, all_rps, _, srv, held, wire, eng, stolen = med[t]
        vs_floor = f" {paired(t, 3, floor):.3f} |" if floor else ""
        vs_floor += f" {paired(t, 3, stamped):.3f} |" if stamped else ""
        print(f"| {t} | {rps:,.0f} | {cpu:.2f} | {paired(t, 2):.2f} | {paired(t, 3):.2f} |{vs_floor} {eng} | {srv:.1f} | {held} | {wire} | {stolen} | {', '.join(f'{x:,.0f}' for x in all_rps)} |")
    if mode == "open" and "throng" in med:
        # A round where the server fell behind queues the sends behind
        # busy connections: it measures the server's queue, not what a
        # client spends to keep a schedule. The bar's figure is from the
        # rounds where throng's default kept its schedule, late (by more
        # than 1 ms) and unsent sends together within 1% of those asked:
        # the server kept up in those rounds, for every client in them.
        asked = float(sys.argv[4]) * float(sys.argv[2])
        def kept(r):
            late, unsent = (int(x) for x in r[9].split("/"))
            return late + unsent <= 0.01 * asked
        ok = [kept(r) for r in rows if r[0] == mode and r[1] == "throng"]
        pick = lambda xs: [x for x, o in zip(xs, ok) if o]
        print(f"\nrounds where throng kept its schedule (sends late by more than 1 ms and "
              f"unsent within 1% of the {asked:,.0f} asked): {sum(ok)} of {len(ok)}")
        if sum(ok):
            print(f"  in them wrk2 reached {st.median(pick(w[2])) / float(sys.argv[4]):.2f} of the rate asked (median)")
            for t in tools:
                if t == ref:
                    continue
                rs = [a / b for a, b in zip(pick(med[t][3]), pick(w[3]))]
                print(f"  {t}: CPU/response vs wrk2, paired {st.median(rs):.3f} (95% interval {ci(rs)})")
    if "base" in med and "throng" in med:
        base = med["base"]
        print(f"\nthrong against base, paired by round: req/s {paired('throng', 2, base):.3f}, "
              f"CPU/response {paired('throng', 3, base):.3f} (95% interval {paired_ci('throng', 3, base)})")
    if "wrk-ua" in med and "throng" in med:
        wu = med["wrk-ua"]
        print(f"\nthrong's rate against wrk sending its User-Agent, paired by round: "
              f"{paired('throng', 2, wu):.3f} (95% interval {paired_ci('throng', 2, wu)}); "
              f"wrk's own against it {paired('wrk', 2, wu):.3f}")
    # The rate beside the CPU: a floor that reaches less than wrk's rate
    # at its own hold says what rate a client that cheap can be held to.
    for ref in ("floor1", "floor1s"):
        if ref in med and "throng" in med:
            print(f"\nthrong's CPU/response against {ref}, paired by round: "
                  f"{paired('throng', 3, med[ref]):.3f}, 95% interval of that median "
                  f"{paired_ci('throng', 3, med[ref])}; its req/s against {ref}'s "
                  f"{paired('throng', 2, med[ref]):.3f} ({paired_ci('throng', 2, med[ref])})")
print(f"\n{sys.argv[3]} rounds of {sys.argv[2]} s, one client thread on core 1, nginx (1 worker) on core 0.")
PY
