#!/usr/bin/env bash
# Does `throng lab quick` reproduce itself, and does this machine's A/A
# calibration hold? Runs `calibrate` M times, then `quick` N times back to
# back, into one database, and prints a Markdown table for
# docs/methodology.md:
#   - agreement: over every two runs of quick and every pair of servers
#     both compared (`throng compare R1 R2 --format json`, its `agreement`
#     section), the checks where each run's pooled ratio lies where the
#     other said the next run's would (its `next_run` range, else its 95%
#     interval) (goal: 90% or more);
#   - each pair's pooled interval half-width in each run (goal: ±5% or
#     less), the steps each run called noisy, and each run's wall time
#     (goal: under 3 min);
#   - each run's pooled ratios beside the servers' core's prices read
#     before its launches (a drift of the machine shows in both);
#   - over the calibrate runs, the share of levels whose A/A interval (a
#     server against its twin of the same recipe) contains 1.00 (goal:
#     95% or more), and each run's smallest decidable difference.
# The full run takes about half an hour on a 2-CPU machine.
#
# Usage: bench/reproducible.sh
#   N=5 M=5        runs of quick and of calibrate (N=1 M=1 for a smoke test;
#                  agreement needs N of 2 or more)
#   STUDY=quick    the study run N times: a built-in name or a TOML file
#   CAL_STUDY=calibrate
#   THRONG=path    the throng to run (default: target/release/throng)
#   KEEP=1         keep the database (its path is printed)
#   CAL_LAST=1     calibrate after quick's runs, not before
set -euo pipefail
n=${N:-5}; m=${M:-5}
study=${STUDY:-quick}; cal_study=${CAL_STUDY:-calibrate}
case "$n$m" in *[!0-9]*|'') echo "N and M are counts of runs" >&2; exit 2;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/build.sh
. "$here/bench/lib/build.sh"
throng_build
for t in python3; do
  command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
work=$(mktemp -d /tmp/throng-reproducible.XXXXXX); chmod 755 "$work"
if [ -n "${KEEP:-}" ]; then trap 'echo "database kept: $work/runs.db" >&2' EXIT
else trap 'rm -rf "$work"' EXIT; fi
db=$work/runs.db

# One study run; its id on stdout. A run that fails is fatal: the figures
# below would say nothing of it.
lab() {
  local out
  out=$("$throng" lab "$1" --db "$db" --quiet --workdir "$work") || {
    echo "throng lab $1 failed:" >&2; echo "$out" >&2; exit 1; }
  echo "$out" | sed -n 's/^run \([0-9]*\) stored in .*/\1/p' | tail -1
}

# The calibrations first, as a machine is meant to be used: a run after
# them takes each calibrated server's launch spread as the least its
# pairs' can be (docs/methodology.md, "Launches that differ"). CAL_LAST=1
# runs them after, so that quick's runs learn nothing from them.
quick_runs=(); cal_runs=()
calibrations() {
  for i in $(seq "$m"); do
    echo "$cal_study $i of $m" >&2; cal_runs+=("$(lab "$cal_study")")
  done
}
[ -n "${CAL_LAST:-}" ] || calibrations
for i in $(seq "$n"); do
  echo "$study $i of $n" >&2; quick_runs+=("$(lab "$study")")
done
[ -z "${CAL_LAST:-}" ] || calibrations

# Every two runs of quick compared, as JSON lines for the summary.
: > "$work/agreement.jsonl"
for ((i = 0; i < ${#quick_runs[@]}; i++)); do
  for ((j = i + 1; j < ${#quick_runs[@]}; j++)); do
    "$throng" compare "${quick_runs[i]}" "${quick_runs[j]}" --db "$db" --format json \
      | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("agreement")))' \
      >> "$work/agreement.jsonl"
  done
done

python3 - "$db" "$work/agreement.jsonl" "${quick_runs[*]:-}" "${cal_runs[*]:-}" <<'PY'
import json, sqlite3, sys

db, agreement_file, quick, cal = sys.argv[1:5]
quick = [int(x) for x in quick.split()]
cal = [int(x) for x in cal.split()]
con = sqlite3.connect(db)

def share(k, n):
    return f"{k} of {n} ({100.0 * k / n:.0f}%)" if n else "–"

def minutes(s):
    return f"{int(s // 60)}:{int(s % 60):02d}"

checks = agree = 0
for line in open(agreement_file):
    a = json.loads(line)
    for p in (a or {}).get("pairs", []):
        if p["accord"] in ("agree", "disagree"):
            checks += 1
            agree += p["accord"] == "agree"

widths = {}
for r in quick:
    for a, b, lo, hi, ratio in con.execute(
        "SELECT a, b, ci_low, ci_high, ratio FROM comparisons "
        "WHERE run_id = ? AND concurrency IS NULL ORDER BY seq", (r,)):
        widths.setdefault(f"{b}/{a}", {})[r] = (hi - lo) / 2 / ratio * 100 if ratio else float("inf")
noisy = []
walls = []
for r in quick:
    noisy.append(con.execute(
        "SELECT count(*) FROM steps s, json_each(s.verdict, '$.reasons') j "
        "WHERE s.run_id = ? AND json_extract(j.value, '$.code') = 'noisy'", (r,)).fetchone()[0])
    start, end = con.execute(
        "SELECT started_unix_s, finished_unix_s FROM runs WHERE id = ?", (r,)).fetchone()
    walls.append(end - start if end else float("nan"))

# A/A: the levels of pairs of one recipe and profile (the calibration's
# twins; the built-in study speaks one protocol).
contain = levels = 0
reach = []
for r in cal:
    # As the lab takes it: over the twins none of whose steps says
    # launches_differ, over every pair when none is steady.
    unsteady = {name for (name,) in con.execute(
        "SELECT DISTINCT s.server FROM steps s, json_each(s.verdict, '$.reasons') j "
        "WHERE s.run_id = ? AND json_extract(j.value, '$.code') = 'launches_differ'", (r,))}
    worst = steady = None
    for a, b, lo, hi, level in con.execute(
        "SELECT c.a, c.b, c.ci_low, c.ci_high, c.concurrency FROM comparisons c "
        "JOIN servers sa ON sa.run_id = c.run_id AND sa.name = c.a "
        "JOIN servers sb ON sb.run_id = c.run_id AND sb.name = c.b "
        "WHERE c.run_id = ? AND sa.recipe = sb.recipe AND sa.profile = sb.profile "
        "AND (c.interval IS NULL OR c.interval != 'unbounded')", (r,)):
        far = max(abs(lo - 1), abs(hi - 1))
        worst = max(worst or 0.0, far)
        if a not in unsteady and b not in unsteady:
            steady = max(steady or 0.0, far)
        if level is not None:
            levels += 1
            contain += lo <= 1.0 <= hi
    reach.append(steady if steady is not None else worst)

print("| Measure | Goal | Result |")
print("| --- | --- | --- |")
print(f"| Pooled ratios of two runs of quick where each other's next-run range put them | ≥ 90% | {share(agree, checks)} |")
worst_w = max((w for ws in widths.values() for w in ws.values()), default=None)
print(f"| Largest pooled interval half-width | ≤ ±5% | {'–' if worst_w is None else f'±{worst_w:.1f}%'} |")
print(f"| Noisy steps per run | | {', '.join(map(str, noisy)) or '–'} |")
print(f"| Wall time per run | < 3 min | {', '.join(minutes(w) for w in walls) or '–'} |")
print(f"| A/A levels whose interval contains 1.00 | ≥ 95% | {share(contain, levels)} |")
print(f"| Smallest decidable difference per calibration run | | {', '.join('–' if x is None else f'±{x * 100:.1f}%' for x in reach) or '–'} |")
if widths:
    print()
    print("| Pair | " + " | ".join(f"run {r}" for r in quick) + " |")
    print("| --- |" + " --- |" * len(quick))
    for pair, ws in widths.items():
        print(f"| {pair} | " + " | ".join(f"±{ws[r]:.1f}%" if r in ws else "–" for r in quick) + " |")

# Each run's pooled ratios, and the servers' core's prices read before its
# launches (median over the run): a drift of the machine under the runs
# shows in both.
def med(v):
    v = sorted(v)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2 if n else None

if quick:
    print()
    print("| Run | " + " | ".join(widths) + " | context switch | system call | code pass |")
    print("| --- |" + " --- |" * (len(widths) + 3))
    for r in quick:
        ratios = dict(((f"{b}/{a}", ratio) for a, b, ratio in con.execute(
            "SELECT a, b, ratio FROM comparisons WHERE run_id = ? AND concurrency IS NULL", (r,))))
        env = json.loads(con.execute("SELECT environment FROM runs WHERE id = ?", (r,)).fetchone()[0])
        prices = env.get("prices", [])
        cells = [f"{ratios[p]:.3f}" if p in ratios else "–" for p in widths]
        for key, unit, scale in (("switch_ns", "µs", 1000), ("syscall_ns", "µs", 1000), ("loop_ns", "ns", 1)):
            m = med([x[key] for x in prices])
            cells.append("–" if m is None else f"{m / scale:.{2 if scale == 1 else 3}f} {unit}")
        print(f"| {r} | " + " | ".join(cells) + " |")
PY
