#!/usr/bin/env bash
# `quick` at home and apart: pairs, intervals and wall time.
#
# Runs the lab's `quick` study twice with one release build: on this
# machine (servers pinned to core 0, the load on core 1), then apart, on
# hosts that are network namespaces of this machine, each with its own
# sshd (same setup as bench/hosts.sh and crates/cli/tests/support/
# netns.rs, 198.18.0.0/24, nothing added to the machine's own namespace
# and everything deleted at the end): the server host's sshd on CPUs 0
# and 1, the client host's pinned to CPU 1, the study's servers on `srv`
# (pinned by the lab to CPU 0) and its load
# from `c1`, coordinated from `ctl`. Then prints, for each comparison, the
# pairs each run formed and the interval's half-width, each run's wall
# time, and apart the coordination per slice (`summary.coordination_ms`:
# from the slice's instant in its level's plan to its figures back at the
# coordinator, less the slice's own time), and what a launch cost each
# way: its slices, and the restarts between launches.
#
# Usage: [KEEP=DIR] [SRV_CPUS=0] bench/apart-quick.sh
# The server host has a CPU beside the server's (the lab pins the server
# to the first of its CPUs), so its agent and sampler need not share the
# server's, as at home they do not and as a real server host would allow;
# SRV_CPUS=0 gives it the server's CPU alone, which the doctor names
# (`plan.cpus`).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SSHD=/usr/sbin/sshd   # by absolute path: sshd re-executes itself per connection

for tool in ip ssh ssh-keygen unshare timeout taskset jq "$SSHD"; do
  command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 2; }
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build

# The servers on CPU 0 (the lab pins them there), the client host's
# sessions on CPU 1: the same split as a study on one machine, which pins
# servers to core 0 and its load to core 1.
prefix=thq
work_name=apart
hosts=(ctl srv c1)
declare -A cpu_of=([ctl]=0-1 [srv]=${SRV_CPUS:-0-1} [c1]=1)
# shellcheck source=bench/lib/fleet.sh
. "$here/bench/lib/fleet.sh"


study=$work/quick-apart.toml
# The same study, its servers on srv and its load from c1.
awk -v s="ssh://root@${addr[srv]}" -v c="ssh://root@${addr[c1]}" '
  /^\[/ && !done { print "server_host = \"" s "\""; print "client_hosts = [\"" c "\"]"; done = 1 }
  { print }' "$here/crates/lab/studies/quick.toml" > "$study"
chmod 644 "$study"

# Wall time of `throng lab`, seconds, measured around the process.
lab() {
  local db=$1; shift
  local s e
  s=$(date +%s%N)
  local rc=0
  "$@" lab "$study_arg" --quiet --db "$db" >"$work/lab.out" 2>"$work/lab.err" || rc=$?
  e=$(date +%s%N)
  # A verdict that is not clean is still a run; only a run that stored
  # nothing is a failure here.
  if [ "$rc" != 0 ]; then
    echo "throng lab exited $rc:" >&2; tail -5 "$work/lab.err" >&2
    [ -s "$db" ] || exit 1
  fi
  awk -v n=$((e - s)) 'BEGIN { printf "%.1f", n / 1e9 }'
}

echo "quick at home ..." >&2
study_arg=quick
home_s=$(lab "$work/home.db" "$throng")
echo "quick apart (srv, c1) ..." >&2
study_arg=$study
apart_s=$(lab "$work/apart.db" ip netns exec "${ns_of[ctl]}" env THRONG_SSH_COMMAND="$ssh_command" "$throng")

"$throng" report --db "$work/home.db" --format json > "$work/home.json"
"$throng" report --db "$work/apart.db" --format json > "$work/apart.json"
# KEEP=DIR keeps both runs' databases there, to read them again later.
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP" && cp "$work/home.db" "$work/apart.db" "$KEEP/"
fi

# One row per comparison at a level: a b c pairs half-width(%) ratio.
rows() {
  jq -r '.comparisons[] | select(.concurrency != null)
    | [.a, .b, .concurrency, .pairs, ((.ci_high - .ci_low) / 2 / .ratio * 100), .ratio] | @tsv' "$1" | sort
}
rows "$work/home.json" > "$work/home.tsv"
rows "$work/apart.json" > "$work/apart.tsv"

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo
echo "## quick at home and apart"
echo
echo "Machine: $(nproc) CPUs, ${cpu:-unknown CPU}, Linux $(uname -r); throng $("$throng" --version 2>/dev/null | awk '{print $2}'), release build."
echo "Apart: server host and client host are network namespaces of this machine (veth, bridge), the server host's sshd on CPUs ${cpu_of[srv]} (its servers pinned to CPU 0), the client host's on CPU 1."
echo
echo "| a | b | c | pairs at home | pairs apart | apart/home | ±% at home | ±% apart |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
join -t $'\t' <(awk -F'\t' '{ print $1 "|" $2 "|" $3 "\t" $4 "\t" $5 }' "$work/home.tsv") \
               <(awk -F'\t' '{ print $1 "|" $2 "|" $3 "\t" $4 "\t" $5 }' "$work/apart.tsv") |
  awk -F'\t' '{ split($1, k, "|"); printf "| %s | %s | %s | %d | %d | %.2f | %.1f | %.1f |\n", k[1], k[2], k[3], $2, $4, $4 / $2, $3, $5 }'
echo
awk -F'\t' 'NR == FNR { h += $4; hw = ($5 > hw ? $5 : hw); next } { a += $4; aw = ($5 > aw ? $5 : aw) }
  END { printf "Pairs in all: %d at home, %d apart (%.2f×); widest interval ±%.1f%% at home, ±%.1f%% apart.\n", h, a, a / h, hw, aw }' \
  "$work/home.tsv" "$work/apart.tsv"
echo "Wall time: ${home_s} s at home, ${apart_s} s apart ($(awk -v a="$apart_s" -v h="$home_s" 'BEGIN { printf "%.2f", a / h }')×)."
jq -r '[.run.steps[].rounds[].summary.coordination_ms | select(. != null)] | sort
  | "Coordination per slice apart (plan instant to figures back, less the slice): \(length) rounds, median \(.[length / 2 | floor] * 100 | round / 100) ms, 90th percentile \(.[length * 9 / 10 | floor] * 100 | round / 100) ms, largest \(.[-1] * 100 | round / 100) ms."' \
  "$work/apart.json"
# Where it went, part by part (the parts of one slice add up to its
# coordination): the agent finishing after the plan's end, reading its
# ports, the figures' way here, and the coordinator's wait to read them.
for part in drain_ms finish_ms ports_ms travel_ms read_ms; do
  jq -r --arg p "$part" '[.run.steps[].rounds[].summary.coordination_parts[$p] | select(. != null)] | sort
    | "  \($p): median \(.[length / 2 | floor] * 100 | round / 100) ms, 90th percentile \(.[length * 9 / 10 | floor] * 100 | round / 100) ms (\(length) slices)"' \
    "$work/apart.json"
done
# What a launch costs each way, so that a time ratio can be read apart
# from how many launches each way ran (each adds launches while one of
# its comparisons is wider than its threshold, by its own spread): a
# slice within a launch (the median, over launches, of the launch's first
# start to its last end over its slices), and the gap between launches
# (the servers' restarts and warmups).
launches() {
  jq -r '[.run.steps[].rounds[] | {l: .launch, a: .summary.started_unix_s, b: (.summary.started_unix_s + .summary.duration_s)}]
    | group_by(.l) | map({n: length, a: (map(.a) | min), b: (map(.b) | max)}) | sort_by(.a)
    | (map((.b - .a) / .n * 1000) | sort) as $slice
    | [range(1; length) as $i | .[$i].a - .[$i - 1].b] as $gaps
    | "\(length) launches, a slice \($slice[length / 2 | floor] * 10 | round / 10) ms, between launches \(($gaps | sort)[($gaps | length) / 2 | floor] * 100 | round / 100) s (medians)"' "$1"
}
echo "Per launch at home: $(launches "$work/home.json")."
echo "Per launch apart:   $(launches "$work/apart.json")."
