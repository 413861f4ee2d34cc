# Sourced by the bench scripts that build a fleet of hosts on this
# machine: each host a network namespace with its own sshd, joined by
# veths to a bridge in a namespace of its own, addressed from
# 198.18.0.0/24 (RFC 2544's benchmark range); nothing is added to the
# machine's own namespace and nothing is routed out. Everything is removed
# when the script exits, however it exits.
#
# The script sets, before sourcing: `prefix` (a short tag of its own for
# what it makes), `work_name` (its work folder's name), `hosts` (the
# hosts' names, in order: addresses 198.18.0.10 on) and `cpu_of` (an
# associative array: the CPUs each host's sshd and what it runs are
# pinned to; a host left out is not pinned). It gets `work`, `tag`,
# `namespaces`, `addr` and `ns_of` (each host's address and namespace),
# `ssh_command` and `keygen`.
# shellcheck shell=bash

# Everything this run makes carries its pid ("thb-<pid>-..."), so a run
# killed with SIGKILL can be recognised and swept by a later one. The
# prefix differs per script, and from the tests' "thr-", so none sweeps
# another's.
tag=$prefix-$$
namespaces=()   # bridge first; recorded before creation so cleanup sees it
work=$(mktemp -d "/tmp/throng-$work_name.XXXXXX")
# nginx's workers run unprivileged and must reach the document root.
chmod 755 "$work"

# SIGKILL everything in a namespace until it is empty (bounded): a namespace
# is only really gone once no process is left in it.
empty_ns() {
  local ns=$1 i pids
  for i in $(seq 50); do
    pids=$(timeout 5 ip netns pids "$ns" 2>/dev/null) || return 0
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
}

cleanup() {
  local rc=$? i
  trap - EXIT INT TERM
  set +e
  # Hosts first (sshd, sessions, agents, nginx), bridge last.
  for ((i = ${#namespaces[@]} - 1; i >= 0; i--)); do
    empty_ns "${namespaces[i]}"
    timeout 10 ip netns del "${namespaces[i]}" 2>/dev/null
  done
  # The homes were bind-mounted only inside the sshds' own mount
  # namespaces, which died with them, so removing them is plain rm.
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
# Ctrl-C and kill go through the same cleanup (exit runs the EXIT trap).
trap 'exit 130' INT
trap 'exit 143' TERM

# Sweep what a killed earlier run left: namespaces of a pid no longer alive.
for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix-[0-9]*-" || true); do
  pid=${ns#"$prefix"-}; pid=${pid%%-*}
  if ! kill -0 "$pid" 2>/dev/null; then
    empty_ns "$ns"; timeout 10 ip netns del "$ns" || true
  fi
done

# sshd refuses to start without its privilege-separation directory, which
# the package only creates when its service first runs.
[ -d /run/sshd ] || install -d -m 755 /run/sshd

keygen() { timeout 10 ssh-keygen -q -t ed25519 -N '' -f "$1"; }

# One client key for every host; host keys are fresh each run, so they are
# not checked, and nothing lands in anyone's known_hosts.
keygen "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
cat > "$work/ssh_config" <<EOF
Host *
  User root
  IdentityFile $work/client_key
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
  ConnectTimeout 5
EOF
ssh_command="ssh -F $work/ssh_config"

bridge=$tag-br
namespaces+=("$bridge")
timeout 10 ip netns add "$bridge"
timeout 10 ip -n "$bridge" link add br0 type bridge
timeout 10 ip -n "$bridge" link set br0 up

declare -A addr ns_of

# Start a host's sshd with an empty home of its own for root: a session runs
# root's shell, whose ~/.bashrc on this machine runs `pyenv init`, which
# rehashes under a lock a killed session can leave held and then stalls
# every later session. The bind mount is made in a private mount namespace
# (`unshare -m` makes its propagation private), so the machine never sees
# it. The agent's cache (~/.cache/throng) then lives in that home too, as on
# a separate machine.
start_sshd() {
  local name=$1 ns=$2 a=$3 home=$work/home-$1 i pin=()
  [ -z "${cpu_of[$name]:-}" ] || pin=(taskset -c "${cpu_of[$name]}")
  mkdir "$home"
  keygen "$work/host_key_$name"
  cat > "$work/sshd_config_$name" <<EOF
ListenAddress $a
Port 22
HostKey $work/host_key_$name
PidFile $work/sshd-$name.pid
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 50
MaxStartups 50
EOF
  # Made first, so polling it below never races the redirection.
  : > "$work/sshd-$name.log"
  # Not under timeout: it is meant to run until cleanup kills it.
  ip netns exec "$ns" "${pin[@]}" unshare -m -- sh -c 'mount --bind "$1" /root && exec "$2" -D -e -f "$3"' \
    sh "$home" "$SSHD" "$work/sshd_config_$name" \
    </dev/null >/dev/null 2>"$work/sshd-$name.log" &
  # Out of the job table, so its SIGKILL at cleanup is not announced.
  disown
  for i in $(seq 100); do
    grep -q "Server listening on" "$work/sshd-$name.log" && return 0
    sleep 0.1
  done
  echo "sshd for $name did not start:" >&2; cat "$work/sshd-$name.log" >&2
  return 1
}

for i in "${!hosts[@]}"; do
  name=${hosts[i]}
  ns=$tag-$name; a=198.18.0.$((10 + i))
  addr[$name]=$a; ns_of[$name]=$ns
  # Interface names live only in this run's namespaces; the pid in them
  # traces one seen in a listing back to its run (15 characters at most).
  outer=t$(($$ % 100000))h${i}a; inner=t$(($$ % 100000))h${i}b
  namespaces+=("$ns")
  timeout 10 ip netns add "$ns"
  timeout 10 ip -n "$bridge" link add "$outer" type veth peer name "$inner" netns "$ns"
  timeout 10 ip -n "$bridge" link set "$outer" master br0 up
  timeout 10 ip -n "$ns" addr add "$a/24" dev "$inner"
  timeout 10 ip -n "$ns" link set "$inner" up
  timeout 10 ip -n "$ns" link set lo up
  start_sshd "$name" "$ns" "$a"
done
