#!/usr/bin/env bash
# Fuzz the HTTP/1 parser and the connection rules (crates/engine/src/fuzz.rs)
# in a release build: N generated and mutated inputs, each played whole,
# byte by byte, at every two-way split and at random splits, all of which
# must agree. Stops at the first input that does not, printing it; prints
# inputs per second at the end.
#
# Usage: bench/fuzz.sh [N] [SEED] [THREADS]
#   N        inputs (default 3000000)
#   SEED     default: the current Unix time, printed so a failure can be rerun
#   THREADS  default: one per CPU
set -euo pipefail
n=${1:-3000000}
seed=${2:-$(date +%s)}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo build --release -p throng-engine --example fuzz >/dev/null 2>&1 ||
    cargo build --release -p throng-engine --example fuzz
echo "fuzzing $n inputs with seed $seed"
exec "$here/target/release/examples/fuzz" "$n" "$seed" ${3:+"$3"}
