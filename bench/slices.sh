#!/usr/bin/env bash
# How long should a slice be? For the same measured time per server, runs
# nginx and lighttpd (one core each, the tiny workload, one level) in
# interleaved slices of several lengths, and prints the width of the 95%
# interval of the paired ratio lighttpd/nginx that each length gave, with
# the spread of each server's own per-slice rate for contrast.
#
# Lengths are run in turn, `reps` times over, so drift spreads over all.
# Usage: bench/slices.sh [reps] [seconds of slices per server] [concurrency]
set -euo pipefail
reps=${1:-2}; total=${2:-12}; conc=${3:-50}
lengths=${LENGTHS:-"0.1 0.2 0.3 0.5 1.0"}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
work=$(mktemp -d /tmp/throng-slices.XXXXXX); chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

for rep in $(seq "$reps"); do
  for len in $lengths; do
    blocks=$(python3 -c "print(max(6, round($total / $len)))")
    cat > "$work/s.toml" <<TOML
name = "slices-$len"
servers = ["nginx", "lighttpd"]
workloads = ["tiny"]
cores = [1]
concurrency = [$conc]
warmup_seconds = 1.0
features = false
diagnose = false

[rounds]
seconds = $len
warmup_seconds = 0.02
min = $blocks
max = $blocks
step_seconds = 600
precision = 0.0001
TOML
    start=$(date +%s.%N)
    "$throng" lab "$work/s.toml" --db "$work/r.db" -q >/dev/null
    end=$(date +%s.%N)
    python3 - "$work/r.db" "$len" "$blocks" "$start" "$end" <<'PY'
import json, sqlite3, statistics, sys
db, length, blocks, t0, t1 = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
c = sqlite3.connect(db)
run = c.execute("select max(id) from runs").fetchone()[0]
ratio, lo, hi, pairs = c.execute(
    "select ratio, ci_low, ci_high, pairs from comparisons where run_id=? and concurrency is not null",
    (run,)).fetchone()
spread = []
for (server,) in c.execute("select distinct server from steps where run_id=?", (run,)):
    rps = [r for (r,) in c.execute(
        "select requests_per_sec from rounds join steps on steps.id=rounds.step_id "
        "where steps.run_id=? and steps.server=?", (run, server))]
    spread.append(statistics.stdev(rps) / statistics.mean(rps))
print(f"slice {length:4.1f} s  blocks {blocks:3d}  pairs {pairs:3d}  ratio {ratio:.3f}  "
      f"95% CI {lo:.3f}-{hi:.3f}  half-width {100*(hi-lo)/2/ratio:5.1f}%  "
      f"per-slice spread nginx/lighttpd {100*spread[0]:4.1f}%/{100*spread[1]:4.1f}%  "
      f"wall {t1-t0:5.1f} s")
PY
  done
done
