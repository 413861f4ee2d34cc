#!/usr/bin/env bash
# Fuzz the HTTP/1 parser and the connection rules (crates/engine/src/fuzz.rs),
# or with --h2 the HTTP/2 connection (crates/engine/src/fuzz_h2.rs), in a
# release build: N generated and mutated inputs, each played whole, byte by
# byte, at every two-way split and at random splits, all of which must
# agree. Stops at the first input that does not, printing it; prints inputs
# per second at the end.
#
# Usage: bench/fuzz.sh [--h2] [N] [SEED] [THREADS]
#   --h2     HTTP/2 server byte streams instead of HTTP/1 responses
#   N        inputs (default 3000000)
#   SEED     default: the current Unix time, printed so a failure can be rerun
#   THREADS  default: one per CPU
set -euo pipefail
h2=()
if [ "${1:-}" = "--h2" ]; then
    h2=(--h2)
    shift
fi
n=${1:-3000000}
seed=${2:-$(date +%s)}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo build --release -p throng-engine --example fuzz >/dev/null 2>&1 ||
    cargo build --release -p throng-engine --example fuzz
echo "fuzzing $n ${h2:+HTTP/2 }inputs with seed $seed"
exec "$here/target/release/examples/fuzz" ${h2[@]+"${h2[@]}"} "$n" "$seed" ${3:+"$3"}
