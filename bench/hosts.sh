#!/usr/bin/env bash
# What does running the load from several hosts cost in coordination?
#
# Builds a small fleet of "hosts" on this machine, each a network namespace
# with its own sshd (a controller `ctl`, a server `srv` running nginx, and
# up to 8 clients `c1`..`c8`), joined by veths to a bridge that lives in a
# namespace of its own, addressed from 198.18.0.0/24 (RFC 2544's benchmark
# range). Nothing is added to the machine's own namespace and nothing is
# routed out. Then, running throng inside `ctl` over real OpenSSH, it times:
#
#   a. `throng hosts check` over k = 1, 2, 4, 8 client hosts, the agent
#      binary already cached on them, and the first contact (cache emptied);
#   b. a short `throng load -n 200` over k client hosts: wall time minus the
#      load's own measured `duration_s` is what coordination costs per round
#      (connect, clock exchanges, synchronised start, merge, teardown), with
#      the start skew and clock uncertainty throng reported;
#   c. the same load from `ctl` with no --hosts (local engine, no agents).
#
# Every "host" shares this machine's CPUs, so these are coordination costs,
# not network figures. Same setup as crates/cli/tests/support/netns.rs.
#
# Usage: bench/hosts.sh [clients (1-8, default 8)] [reps (default 5)]
set -euo pipefail
nclients=${1:-8}; reps=${2:-5}
[[ $nclients =~ ^[1-8]$ ]] || { echo "clients: 1 to 8" >&2; exit 2; }
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "reps: a positive number" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
SSHD=/usr/sbin/sshd   # by absolute path: sshd re-executes itself per connection

for tool in ip ssh ssh-keygen nginx unshare timeout jq "$SSHD"; do
  command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 2; }
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build

prefix=thb
work_name=hosts
hosts=(ctl srv)
for i in $(seq "$nclients"); do hosts+=("c$i"); done
declare -A cpu_of=()
# shellcheck source=bench/lib/fleet.sh
. "$here/bench/lib/fleet.sh"

# nginx on the server host's segment address, a 15-byte file; it daemonises
# only once its socket is bound, so its exit is the readiness signal.
nd=$work/nginx; mkdir -p "$nd/html"; chmod 755 "$nd"
printf 'hello from srv\n' > "$nd/html/index.html"
cat > "$nd/nginx.conf" <<EOF
worker_processes 1;
error_log $nd/error.log;
pid $nd/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $nd; proxy_temp_path $nd; fastcgi_temp_path $nd;
  uwsgi_temp_path $nd; scgi_temp_path $nd;
  server { listen ${addr[srv]}:8080; root $nd/html; }
}
EOF
timeout 10 ip netns exec "${ns_of[srv]}" nginx -c "$nd/nginx.conf"
url=http://${addr[srv]}:8080/index.html
server=ssh://root@${addr[srv]}
clients() { local i out=; for i in $(seq "$1"); do out+=${out:+,}ssh://root@${addr[c$i]}; done; echo "$out"; }

# Run throng in ctl and print "<wall time in µs> <exit code>"; its stdout
# goes to $work/out, its stderr to $work/err. The clock is read inside the namespace, so
# `ip netns exec`'s own cost stays out. Exit codes are the caller's to judge.
timed_throng() {
  ip netns exec "${ns_of[ctl]}" env THRONG_SSH_COMMAND="$ssh_command" bash -c '
    s=$(date +%s%N)
    timeout -k 5 60 "$@" >"'"$work"'/out" 2>"'"$work"'/err"; rc=$?
    e=$(date +%s%N)
    echo "$(( (e - s) / 1000 )) $rc"' _ "$throng" "$@"
}

# -> "ms" (µs precision), failing loudly on an exit code not in $1
# (comma-separated list of accepted codes).
run_ok() {
  local ok=$1; shift
  local us rc
  read -r us rc < <(timed_throng "$@")
  if [[ ,$ok, != *,$rc,* ]]; then
    echo "throng $* exited $rc:" >&2; cat "$work/err" >&2; head -c 2000 "$work/out" >&2
    exit 1
  fi
  awk -v u="$us" 'BEGIN { printf "%.1f\n", u / 1000 }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
maxof() { sort -g | tail -1; }

ks=()
for k in 1 2 4 8; do if ((k <= nclients)); then ks+=("$k"); fi; done
cache_c1=$work/home-c1/.cache/throng

# `hosts check` exits 1 when something is missing (a server package such as
# lighttpd, say), which is a finding, not a failure; 2 means unreachable.
echo "first contact (c1's agent cache emptied) ..." >&2
for r in 1 2 3; do
  rm -rf "$cache_c1"
  run_ok 0,1 hosts check --hosts "$(clients 1)" --server "$server" >> "$work/first.ms"
done
cp "$work/out" "$work/check-k1.txt"

# Warm every client's cache (and the server's) once, off the clock.
run_ok 0,1 hosts check --hosts "$(clients "$nclients")" --server "$server" >/dev/null
cp "$work/out" "$work/check-all.txt"

# Repetitions outermost, so drift on the shared machine spreads over every k.
echo "hosts check and load, $reps reps over k = ${ks[*]} ..." >&2
for r in $(seq "$reps"); do
  for k in "${ks[@]}"; do
    run_ok 0,1 hosts check --hosts "$(clients "$k")" --server "$server" >> "$work/check-$k.ms"

    # -c 2 per client host: throng needs at least one connection per host,
    # and 2 per host keeps each host's share shaped like the local run's.
    ms=$(run_ok 0 load "$url" -n 200 -c $((2 * k)) --hosts "$(clients "$k")" --json)
    j=$work/out
    [ "$(jq .completed "$j")" = 200 ] || { echo "load over $k hosts: $(jq -c '{completed,errors_total}' "$j")" >&2; exit 1; }
    echo "$ms" >> "$work/load-$k.ms"
    jq -r --argjson w "$ms" '$w - .duration_s * 1000' "$j" >> "$work/over-$k.ms"
    jq -r '.duration_s * 1000' "$j" >> "$work/dur-$k.ms"
    jq -r '.start_skew_ms' "$j" >> "$work/skew-$k.ms"
    jq -r '.hosts[].clock_uncertainty_ms' "$j" >> "$work/unc-$k.ms"
  done
  ms=$(run_ok 0 load "$url" -n 200 -c 2 --json)
  [ "$(jq .completed "$work/out")" = 200 ] || { echo "local load: $(jq -c '{completed,errors_total}' "$work/out")" >&2; exit 1; }
  echo "$ms" >> "$work/local.ms"
  jq -r --argjson w "$ms" '$w - .duration_s * 1000' "$work/out" >> "$work/local-over.ms"
  jq -r '.duration_s * 1000' "$work/out" >> "$work/local-dur.ms"
done

# What a bare agent costs before it answers anything: it hashes its own
# binary at start (FNV-1a, to name its build), as the coordinator does too.
# Run in ctl with stdin empty, so it exits right after.
for r in $(seq "$reps"); do
  ip netns exec "${ns_of[ctl]}" bash -c '
    s=$(date +%s%N); timeout 30 "$1" agent </dev/null >/dev/null 2>&1; e=$(date +%s%N)
    echo "$(( (e - s) / 1000 ))"' _ "$throng" | awk '{ printf "%.1f\n", $1 / 1000 }' >> "$work/agent.ms"
done

f2() { awk '{ printf "%.2f", $1 }'; }
f3() { awk '{ printf "%.3f", $1 }'; }
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
bin_mb=$(du -m "$throng" | cut -f1)

echo
echo "## Coordination cost of throng across hosts"
echo
echo "Machine: $(nproc) CPUs, ${cpu:-unknown CPU}, Linux $(uname -r); throng $("$throng" --version 2>/dev/null | awk '{print $2}'), release binary ${bin_mb} MB."
echo "Hosts are network namespaces on one bridge (veth, MTU 1500), each with its own sshd;"
echo "all of them share this machine's $(nproc) CPUs, so these are coordination costs, not network figures."
echo "Medians of $reps repetitions; wall times measured inside ctl around the throng process."
echo
echo "| client hosts k | hosts check, cached (ms) | load -n 200, wall (ms) | load's own duration_s (ms) | coordination overhead (ms) | start_skew_ms (median / max) | clock_uncertainty_ms (max) |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for k in "${ks[@]}"; do
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$k" \
    "$(median < "$work/check-$k.ms" | f2)" "$(median < "$work/load-$k.ms" | f2)" \
    "$(median < "$work/dur-$k.ms" | f2)" "$(median < "$work/over-$k.ms" | f2)" \
    "$(median < "$work/skew-$k.ms" | f3) / $(maxof < "$work/skew-$k.ms" | f3)" "$(maxof < "$work/unc-$k.ms" | f3)"
done
printf '| local (no --hosts) | - | %s | %s | %s | - | - |\n' \
  "$(median < "$work/local.ms" | f2)" "$(median < "$work/local-dur.ms" | f2)" \
  "$(median < "$work/local-over.ms" | f2)"
echo
echo "First contact, k = 1, agent cache emptied (binary copied over ssh): median $(median < "$work/first.ms" | f2) ms of 3 ($(paste -sd' ' "$work/first.ms") ms)."
echo "A bare \`throng agent\` that exits at once (it hashes its own ${bin_mb} MB binary at start): median $(median < "$work/agent.ms" | f2) ms."
echo "Load: -n 200 split over the k hosts, -c 2 per host (2k in all; throng needs at least one connection per host), -t = each host's CPUs."
echo "Coordination overhead = wall time − duration_s reported in the JSON."
